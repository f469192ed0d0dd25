//! What a team's members remember between runs (`memory: run | conversation`) and a new
//! conversation, measured by what the scripted model server receives.

use huddle::model::{Memory, Message, Mode};

use super::engine_fixture::{Fixture, ORCH, team};
use super::fake_llm_server::Reply;

const LONG: usize = 6_000;

async fn two_broadcast_runs(memory: Memory) -> Fixture {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    let gid = f.group_id.clone();
    f.org.update(|o| o.group_mut(&gid).unwrap().memory = memory);
    f.server.script(
        "w-a",
        vec![
            Reply::text(&"first answer ".repeat(LONG / 13)),
            Reply::text("second answer"),
        ],
    );
    f.run("first question").await;
    f.run("second question").await;
    f
}

#[tokio::test]
async fn memory_run_sends_a_second_run_only_its_own_prompt() {
    let run = two_broadcast_runs(Memory::Run).await;
    let conversation = two_broadcast_runs(Memory::Conversation).await;
    let (run_requests, conversation_requests) = (
        run.server.requests_for("w-a"),
        conversation.server.requests_for("w-a"),
    );
    assert_eq!((run_requests.len(), conversation_requests.len()), (2, 2));
    let (small, large) = (&run_requests[1], &conversation_requests[1]);
    // OpenAI's shape: the system prompt is the first message.
    assert_eq!(small.messages().len(), 2, "{:?}", small.prompt_texts());
    assert_eq!(large.messages().len(), 4, "{:?}", large.prompt_texts());
    assert!(
        small.body.len() + LONG / 2 < large.body.len(),
        "run: {} bytes, conversation: {} bytes",
        small.body.len(),
        large.body.len()
    );
    // The system prompt (the member's own and its shared context) is sent either way.
    assert_eq!(small.json()["messages"][1]["content"], "second question");
    assert!(small.prompt_texts()[0].contains("You are the a specialist."));
}

#[tokio::test]
async fn memory_run_keeps_what_the_run_itself_said() {
    let f = team(Mode::Orchestrator, &["a"], false, 1).await;
    let plan = "@worker:a\nDo part A.\n@end\n";
    f.server.script(
        ORCH,
        vec![
            Reply::text(plan),
            Reply::text("SYNTHESIS ONE"),
            Reply::text(plan),
            Reply::text("SYNTHESIS TWO"),
        ],
    );
    f.server
        .script("w-a", vec![Reply::text("part a"), Reply::text("part a again")]);
    f.run("one").await;
    f.run("two").await;
    let sizes: Vec<usize> = f
        .server
        .requests_for(ORCH)
        .iter()
        .map(|r| r.messages().len())
        .collect();
    // The run's brief as the system prompt, then the plan; the synthesis with the plan's
    // exchange before it; the next run starts over.
    assert_eq!(sizes, [2, 4, 2, 4]);
}

#[tokio::test]
async fn a_new_conversation_sends_nothing_from_before_and_keeps_the_transcript() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    let gid = f.group_id.clone();
    f.org
        .update(|o| o.group_mut(&gid).unwrap().memory = Memory::Conversation);
    f.server.script(
        "w-a",
        vec![
            Reply::text("answer one"),
            Reply::text("answer two"),
            Reply::text("answer three"),
        ],
    );
    f.run("one").await;
    f.engine
        .new_conversation(&[f.session_id("t-a")])
        .expect("idle: allowed");
    f.run("two").await;
    f.run("three").await;
    let sizes: Vec<usize> = f
        .server
        .requests_for("w-a")
        .iter()
        .map(|r| r.messages().len())
        .collect();
    // The system prompt, then the conversation.
    assert_eq!(sizes, [2, 2, 4]);
    f.engine.flush().unwrap();
    let texts: Vec<String> = f
        .transcripts
        .load(&f.session_id("t-a"))
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text.clone())
        .collect();
    assert_eq!(texts[..2], ["one", "answer one"], "the old conversation is kept");
    assert_eq!(texts.len(), 7);
}

#[tokio::test]
async fn a_transcript_read_back_starts_at_its_last_conversation_mark() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    let gid = f.group_id.clone();
    f.org
        .update(|o| o.group_mut(&gid).unwrap().memory = Memory::Conversation);
    let id = f.session_id("t-a");
    let stored = [
        Message::user("old question"),
        Message::assistant("old answer"),
        Message::conversation_start(),
        Message::user("new question"),
        Message::assistant("new answer"),
    ];
    f.transcripts.append_all(&id, &stored).unwrap();
    f.server.script("w-a", vec![Reply::text("ok")]);
    f.run("next").await;
    let sent = &f.server.requests_for("w-a")[0];
    let texts: Vec<String> = sent
        .messages()
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(texts, ["new question", "new answer", "next"]);
}

#[tokio::test]
async fn a_new_conversation_is_refused_while_the_session_runs() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    f.server.script(
        "w-a",
        vec![Reply::chunks(["slow ", "answer"]).chunk_delay(std::time::Duration::from_millis(300))],
    );
    let run = f.spawn_run("q");
    f.wait_for_requests("w-a", 1).await;
    let refused = f.engine.new_conversation(&[f.session_id("t-a")]);
    assert!(refused.is_err(), "{refused:?}");
    run.await.unwrap();
    f.engine.flush().unwrap();
    let stored = f.transcripts.load(&f.session_id("t-a")).unwrap().messages;
    assert!(stored.iter().all(|m| !m.conversation_start));
}

#[tokio::test]
async fn a_note_goes_with_the_members_next_turn_only_and_the_timeline_hears_of_it() {
    let mut f = team(Mode::Broadcast, &["a", "b"], false, 1).await;
    let a = f.session_id("t-a");
    f.engine
        .note_member(&a, "mind the edge cases".into())
        .expect("a member");
    assert!(f.engine.note_member("nobody", "x".into()).is_err());
    f.run("q1").await;
    f.run("q2").await;
    let a_prompts = f.prompts("w-a");
    assert!(
        a_prompts[0].contains("mind the edge cases") && a_prompts[0].ends_with("q1"),
        "{a_prompts:?}"
    );
    assert_eq!(a_prompts[1], "q2", "given once");
    assert!(f.prompts("w-b").iter().all(|p| !p.contains("edge cases")));
    let notes: Vec<bool> = f
        .drain()
        .iter()
        .filter_map(|e| match &e.kind {
            huddle::engine::events::EventKind::MemberNote {
                session_id,
                delivered,
                ..
            } if *session_id == a => Some(*delivered),
            _ => None,
        })
        .collect();
    assert_eq!(notes, [false, true]);
    assert!(f.org.read(|o| o.session(&a).unwrap().pending_notes.is_empty()));
}

#[tokio::test]
async fn a_chat_with_a_team_member_is_marked_direct_and_a_team_run_is_not() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    let a = f.session_id("t-a");
    f.run("team question").await;
    let chat = f.engine.start_chat(&a, "just you".into(), None).expect("chat");
    chat.await;
    f.engine.flush().unwrap();
    let stored = f.transcripts.load(&a).unwrap().messages;
    let direct: Vec<(String, bool)> = stored
        .iter()
        .filter(|m| m.role == huddle::model::MessageRole::User)
        .map(|m| (m.text.clone(), m.direct))
        .collect();
    assert_eq!(
        direct,
        [
            ("team question".to_string(), false),
            ("just you".to_string(), true)
        ]
    );
}

/// The texts of the messages a request to `model` sent (the system prompt left out).
fn sent_texts(f: &Fixture, model: &str, request: usize) -> Vec<String> {
    f.server.requests_for(model)[request]
        .messages()
        .iter()
        .skip(1)
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect()
}

#[tokio::test]
async fn a_superseded_exchange_is_kept_in_the_file_and_never_sent_again() {
    let f = team(Mode::Broadcast, &["a"], false, 1).await;
    let a = f.session_id("t-a");
    f.server.script(
        "w-a",
        vec![
            Reply::text("answer one"),
            Reply::text("answer again"),
            Reply::text("answer three"),
        ],
    );
    let chat = |text: &str| f.engine.start_chat(&a, text.into(), None).expect("chat");
    chat("one").await;
    f.engine.flush().unwrap();
    let first = f.transcripts.load(&a).unwrap().messages[0].id.clone().unwrap();
    f.engine.supersede(&a, &first, "regenerated").expect("idle");
    chat("one, better").await;
    chat("three").await;
    assert_eq!(sent_texts(&f, "w-a", 1), ["one, better"]);
    assert_eq!(sent_texts(&f, "w-a", 2), ["one, better", "answer again", "three"]);
    f.engine.flush().unwrap();
    let stored: Vec<String> = f
        .transcripts
        .load(&a)
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text.clone())
        .collect();
    assert_eq!(stored[..3], ["one", "answer one", "regenerated"], "never lost");
}
