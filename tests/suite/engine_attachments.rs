//! Attachments against a scripted model server: the file's content reaches the model (a
//! session's turn, every member of a team's run), the transcript keeps path, size and hash.

use huddle::attachments::Attachment;
use huddle::engine::RunOverrides;
use huddle::model::Mode;

use super::engine_fixture::team;
use super::fake_llm_server::Reply;

fn attached() -> Attachment {
    Attachment::new("src/lib.rs", "pub fn ATTACHED_MARKER() {}\n".into())
}

#[tokio::test]
async fn a_chat_sends_the_content_and_stores_the_reference() {
    let f = team(Mode::Broadcast, &["solo"], false, 1).await;
    f.server.script("w-solo", vec![Reply::text("read it")]);
    let id = f.session_id("t-solo");
    let turn = f
        .engine
        .start_chat_with(&id, "review @src/lib.rs".into(), None, vec![attached()])
        .expect("started");
    let result = turn.await;
    assert!(result.success, "{result:?}");
    let prompts = f.prompts("w-solo");
    assert!(
        prompts[0].starts_with("review @src/lib.rs") && prompts[0].contains("ATTACHED_MARKER"),
        "{}",
        prompts[0]
    );
    f.engine.flush().ok();
    let stored = f.engine.load_transcript(&id).expect("transcript").messages;
    let user = &stored[0].text;
    assert!(
        user.contains("[attached: src/lib.rs · 28 bytes · sha256 "),
        "{user}"
    );
    assert!(
        !user.contains("ATTACHED_MARKER"),
        "the content is not stored: {user}"
    );
}

#[tokio::test]
async fn every_member_of_a_team_run_gets_the_attachment() {
    let f = team(Mode::Broadcast, &["a", "b"], false, 1).await;
    f.server.script("w-a", vec![Reply::text("from a")]);
    f.server.script("w-b", vec![Reply::text("from b")]);
    let overrides = RunOverrides {
        attachments: vec![attached()],
        ..RunOverrides::default()
    };
    f.engine
        .run_group(&f.group_id, "compare".into(), overrides)
        .await
        .expect("the run");
    for model in ["w-a", "w-b"] {
        let prompts = f.prompts(model);
        assert!(prompts[0].contains("ATTACHED_MARKER"), "{model}: {}", prompts[0]);
    }
}
