//! Mode `team` (a deliberation) end to end over real HTTP: members broadcast with the lent
//! `team_broadcast` tool, the others get the broadcasts in their next turn, the supervisor
//! broadcasts back or answers (cancelling members still running), failures and turn limits
//! leave automatic broadcasts, a broadcast too big for a member's context is replaced, eight
//! members all get their turns, and every turn is an execution under the supervisor's.

use std::collections::HashMap;
use std::time::Duration;

use huddle::engine::events::{EngineEvent, EventKind, RunKey};
use huddle::model::{BroadcastKind, CycleOutcome, ExecutionKind, ExecutionStatus, Mode, TeamLimits};

use super::engine_fixture::{Fixture, HANG_GUARD, ORCH, team};
use super::fake_llm_server::{Reply, StreamEnd};

/// A team of `members` (models `w-<name>`) with the supervisor on `orch` and these limits.
async fn deliberation(members: &[&str], limits: TeamLimits) -> Fixture {
    let f = team(Mode::Team, members, false, 1).await;
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().settings.team = limits);
    f
}

fn limits(member: u32, supervisor: u32) -> TeamLimits {
    TeamLimits {
        member_max_turns: Some(member),
        supervisor_max_turns: Some(supervisor),
    }
}

/// A member's `team_broadcast` call.
fn says(message: &str, last: bool) -> Reply {
    let args = serde_json::json!({ "message": message, "final": last });
    Reply::tool_call("b1", "team_broadcast", &args.to_string())
}

/// The supervisor's broadcast back.
fn guides(message: &str) -> Reply {
    let args = serde_json::json!({ "message": message });
    Reply::tool_call("s1", "team_broadcast", &args.to_string())
}

#[derive(Debug, Clone, PartialEq)]
struct Heard {
    from: String,
    kind: BroadcastKind,
    message: String,
    turn: u32,
    last: bool,
    supervisor: bool,
    execution: Option<String>,
}

fn broadcasts(events: &[EngineEvent]) -> Vec<Heard> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TeamBroadcast {
                from,
                kind,
                message,
                turn,
                last,
                supervisor,
                ..
            } => Some(Heard {
                from: from.clone(),
                kind: *kind,
                message: message.clone(),
                turn: *turn,
                last: *last,
                supervisor: *supervisor,
                execution: e.execution.as_ref().map(|t| t.execution_id.clone()),
            }),
            _ => None,
        })
        .collect()
}

/// Each execution's (kind, member, task, parent) as started, by id.
fn started(events: &[EngineEvent]) -> HashMap<String, (ExecutionKind, String, String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ExecutionStarted {
                kind, member, task, ..
            } => {
                let tag = e.execution.as_ref()?;
                Some((
                    tag.execution_id.clone(),
                    (
                        *kind,
                        member.clone(),
                        task.clone(),
                        tag.parent_execution_id.clone(),
                    ),
                ))
            }
            _ => None,
        })
        .collect()
}

/// Each execution's end status, by id.
fn statuses(events: &[EngineEvent]) -> HashMap<String, ExecutionStatus> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ExecutionFinished { status, .. } => {
                Some((e.execution.as_ref()?.execution_id.clone(), *status))
            }
            _ => None,
        })
        .collect()
}

/// Members `a` and `b` give their views, the supervisor guides them once and then answers.
async fn two_cycles(f: &Fixture) -> huddle::engine::RunReport {
    f.server
        .script("w-a", vec![says("A: cost first", false), says("A: agreed", true)]);
    f.server
        .script("w-b", vec![says("B: risk first", false), says("B: done", true)]);
    f.server.script(
        ORCH,
        vec![guides("Focus on cost"), Reply::text("FINAL: do it in stages")],
    );
    f.run("Should we move the office?").await
}

#[tokio::test]
async fn two_members_and_a_supervisor_deliberate_over_two_cycles() {
    let mut f = deliberation(&["a", "b"], limits(4, 4)).await;
    let report = two_cycles(&f).await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert!(report.failed.is_none(), "{:?}", report.failed);
    assert_eq!(report.final_text, "FINAL: do it in stages");

    // Every member starts with the request, how the team works and the tool.
    let first = &f.server.requests_for("w-a")[0];
    assert!(first.tool_names().contains(&"team_broadcast".to_string()));
    let prompt = &f.prompts("w-a")[0];
    assert!(prompt.starts_with("Should we move the office?"), "{prompt}");
    // How the team works is in the member's system prompt, for every turn.
    let system = &first.prompt_texts()[0];
    assert!(
        system.contains("## How this team works") && system.contains("You are member `a`"),
        "{system}"
    );
    assert!(prompt.contains("Your turn: 1 of 4"), "{prompt}");

    // The next turn has the others' broadcasts, in order, in one block.
    let second = &f.prompts("w-a")[1];
    assert!(second.starts_with("## Team broadcasts\n"), "{second}");
    let b_at = second.find("### b · update · turn 1 · ").expect("b's view");
    let chair_at = second
        .find("### orchestrator · update · supervisor · turn 1 · ")
        .expect("the supervisor's word");
    assert!(b_at < chair_at, "{second}");
    assert!(
        second.contains("> B: risk first") && second.contains("> Focus on cost"),
        "{second}"
    );
    assert!(
        !second.contains("A: cost first"),
        "its own broadcast is not given back"
    );
    assert!(second.contains("Your turn: 2 of 4"), "{second}");

    // The supervisor sees each cycle's broadcasts; its second turn is its conclusion.
    let sup = f.prompts(ORCH);
    assert_eq!(sup.len(), 2);
    assert!(sup[0].starts_with("Should we move the office?"), "{}", sup[0]);
    assert!(
        sup[0].contains("> A: cost first") && sup[0].contains("> B: risk first"),
        "{}",
        sup[0]
    );
    assert!(sup[0].contains("Cycle: 1 of 4"), "{}", sup[0]);
    assert!(
        sup[1].contains("> A: agreed") && sup[1].contains("> B: done"),
        "{}",
        sup[1]
    );
    assert!(
        sup[1].contains("Conclude now: every member has left the team."),
        "{}",
        sup[1]
    );
    assert_eq!(f.server.requests_for(ORCH)[1].tool_choice(), "none");

    let events = f.drain();
    let heard = broadcasts(&events);
    assert_eq!(heard.len(), 5, "{heard:?}");
    let chair: Vec<&Heard> = heard.iter().filter(|h| h.supervisor).collect();
    assert_eq!(chair.len(), 1);
    assert_eq!(chair[0].message, "Focus on cost");
    assert!(heard[2].supervisor, "the views come first: {heard:?}");
    let finals: Vec<(&str, u32)> = heard
        .iter()
        .filter(|h| h.last)
        .map(|h| (h.from.as_str(), h.turn))
        .collect();
    assert_eq!(finals.len(), 2);
    assert!(
        finals.contains(&("a", 2)) && finals.contains(&("b", 2)),
        "{finals:?}"
    );
    assert!(heard.iter().all(|h| h.kind == BroadcastKind::Update));

    // Executions nest: one supervisor root, every turn under it, every broadcast in a turn.
    let execs = started(&events);
    let roots: Vec<&String> = execs
        .iter()
        .filter(|(_, (kind, ..))| *kind == ExecutionKind::Supervisor)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(roots.len(), 1);
    let root = roots[0].clone();
    assert_eq!(execs[&root].3, None);
    let turns: Vec<_> = execs.iter().filter(|(id, _)| **id != root).collect();
    assert_eq!(turns.len(), 6, "4 member turns, 2 supervisor turns");
    assert!(
        turns
            .iter()
            .all(|(_, (.., parent))| parent.as_deref() == Some(root.as_str()))
    );
    let member_turns: Vec<(&str, &str)> = turns
        .iter()
        .filter(|(_, (kind, ..))| *kind == ExecutionKind::MemberTurn)
        .map(|(_, (_, member, task, _))| (member.as_str(), task.as_str()))
        .collect();
    assert_eq!(member_turns.len(), 4);
    assert!(member_turns.contains(&("a", "turn 2")), "{member_turns:?}");
    for h in &heard {
        let id = h
            .execution
            .as_ref()
            .expect("a broadcast carries its turn's execution");
        assert_ne!(*id, root);
        assert!(execs.contains_key(id));
    }
    let ends = statuses(&events);
    assert_eq!(ends.len(), 7, "every execution ends");
    assert!(
        ends.values().all(|s| *s == ExecutionStatus::Completed),
        "{ends:?}"
    );
    // The turn's own events carry its execution.
    assert!(events.iter().any(|e| {
        matches!(&e.kind, EventKind::ToolCall { name, .. } if name == "team_broadcast")
            && e.execution
                .as_ref()
                .is_some_and(|t| t.parent_execution_id.as_deref() == Some(root.as_str()))
    }));
}

#[tokio::test]
async fn a_member_whose_model_fails_leaves_with_an_automatic_failure_broadcast() {
    let mut f = deliberation(&["a", "b"], limits(4, 4)).await;
    f.server.script("w-a", vec![Reply::status(500)]);
    f.server
        .script("w-b", vec![says("B: view", false), says("B: done", true)]);
    f.server.script(ORCH, vec![Reply::text("DONE")]);
    let report = f.run("Decide").await;
    assert_eq!(report.final_text, "DONE");
    assert_eq!(
        f.server.requests_for("w-a").len(),
        1,
        "a failed member takes no more turns"
    );
    let events = f.drain();
    let failure = broadcasts(&events)
        .into_iter()
        .find(|h| h.kind == BroadcastKind::Failure)
        .expect("a failure broadcast");
    assert_eq!(failure.from, "a");
    assert!(failure.last && failure.turn == 1);
    assert!(
        failure
            .message
            .starts_with("member a failed and is no longer in the team. Reason: "),
        "{}",
        failure.message
    );
    let sup = &f.prompts(ORCH)[0];
    assert!(sup.contains("### a · failure · final · turn 1"), "{sup}");
    assert!(sup.contains("> B: view"), "{sup}");
    let execs = started(&events);
    let ends = statuses(&events);
    let failed: Vec<&str> = ends
        .iter()
        .filter(|(_, s)| **s == ExecutionStatus::Failed)
        .map(|(id, _)| execs[id].1.as_str())
        .collect();
    assert_eq!(failed, ["a"]);
}

#[tokio::test]
async fn a_member_that_never_broadcasts_is_reminded_then_leaves_at_its_turn_limit() {
    let mut f = deliberation(&["a", "b"], limits(2, 4)).await;
    f.server.script(
        "w-a",
        vec![Reply::text("I think so."), Reply::text("Still thinking.")],
    );
    f.server
        .script("w-b", vec![says("B: view", false), says("B: done", true)]);
    f.server.script(ORCH, vec![Reply::text("DONE")]);
    let report = f.run("Decide").await;
    assert_eq!(report.final_text, "DONE");
    let a = f.prompts("w-a");
    assert_eq!(a.len(), 2, "the limit ends it");
    assert!(
        a[1].contains("Your last turn ended without a broadcast"),
        "{}",
        a[1]
    );
    assert!(
        a[1].ends_with("Your turn: 2 of 2\nThis is your last turn: make this broadcast your final one."),
        "{}",
        a[1]
    );
    let events = f.drain();
    let heard = broadcasts(&events);
    let limit = heard.iter().find(|h| h.from == "a").expect("a's exit");
    assert_eq!(limit.kind, BroadcastKind::Failure);
    assert_eq!(
        limit.message,
        "member a reached its turn limit (2 turns) and is no longer in the team."
    );
    assert!(limit.last && limit.turn == 2);
    assert!(f.prompts(ORCH)[0].contains("> member a reached its turn limit"));
}

#[tokio::test]
async fn the_supervisors_answer_cancels_members_still_running() {
    let mut f = deliberation(&["a", "b", "c"], limits(4, 4)).await;
    // a and b broadcast at once and react to each other with turns that never end on their
    // own; c's view comes later and completes the cycle.
    let slow = || says("never finished", false).chunk_delay(Duration::from_secs(3600));
    f.server.script("w-a", vec![says("A: view", false), slow()]);
    f.server.script("w-b", vec![says("B: view", false), slow()]);
    f.server.script(
        "w-c",
        vec![says("C: view", false).chunk_delay(Duration::from_millis(400))],
    );
    f.server.script(ORCH, vec![Reply::text("DECIDED")]);
    let run = f.spawn_run("Decide");
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the answer ends the run")
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(report.final_text, "DECIDED");
    assert_eq!(f.server.requests_for("w-a").len(), 2, "a reacted to b");
    assert_eq!(f.server.requests_for("w-b").len(), 2, "b reacted to a");
    let events = f.drain();
    let execs = started(&events);
    let ends = statuses(&events);
    let mut cancelled: Vec<(&str, &str)> = ends
        .iter()
        .filter(|(_, s)| **s == ExecutionStatus::Cancelled)
        .map(|(id, _)| (execs[id].1.as_str(), execs[id].2.as_str()))
        .collect();
    cancelled.sort();
    assert_eq!(cancelled, [("a", "turn 2"), ("b", "turn 2")]);
    assert_eq!(ends.len(), execs.len(), "every execution ended");
    assert!(!broadcasts(&events).iter().any(|h| h.message == "never finished"));
}

#[tokio::test]
async fn the_supervisors_last_turn_must_conclude() {
    let f = deliberation(&["a", "b"], limits(6, 2)).await;
    f.server.script("w-a", vec![says("A1", false), says("A2", false)]);
    f.server.script("w-b", vec![says("B1", false), says("B2", false)]);
    f.server
        .script(ORCH, vec![guides("Keep going"), Reply::text("CONCLUDED")]);
    let report = f.run("Decide").await;
    assert_eq!(report.final_text, "CONCLUDED");
    let sup = f.prompts(ORCH);
    assert_eq!(sup.len(), 2);
    assert!(
        sup[1].contains("Conclude now: this is your last turn."),
        "{}",
        sup[1]
    );
    assert!(sup[1].contains("Cycle: 2 of 2"), "{}", sup[1]);
    assert!(sup[1].contains("> A2") && sup[1].contains("> B2"), "{}", sup[1]);
    assert_eq!(f.server.requests_for(ORCH)[1].tool_choice(), "none");
    assert_eq!(f.server.requests_for("w-a").len(), 2);
}

#[tokio::test]
async fn eight_members_start_together_and_each_takes_its_turns() {
    let names = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"];
    let mut f = deliberation(&names, limits(4, 4)).await;
    for n in names {
        f.server.script(
            &format!("w-{n}"),
            vec![
                says(&format!("{n} view"), false),
                says(&format!("{n} done"), true),
            ],
        );
    }
    f.server.script(ORCH, vec![guides("Go on"), Reply::text("DONE")]);
    let report = f.run("Decide").await;
    assert_eq!(report.final_text, "DONE");
    for n in names {
        let prompts = f.prompts(&format!("w-{n}"));
        assert_eq!(prompts.len(), 2, "{n}");
        assert!(prompts[1].contains("## Team broadcasts"), "{n}: {}", prompts[1]);
    }
    let events = f.drain();
    // All eight first turns start before any broadcast arrives.
    let first_broadcast = events
        .iter()
        .position(|e| matches!(e.kind, EventKind::TeamBroadcast { .. }))
        .unwrap();
    let early_starts = events[..first_broadcast]
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::ExecutionStarted {
                    kind: ExecutionKind::MemberTurn,
                    ..
                }
            )
        })
        .count();
    assert_eq!(early_starts, 8);
    let finals = broadcasts(&events).iter().filter(|h| h.last).count();
    assert_eq!(finals, 8, "every member had its say and left");
}

/// The guard reads a model's window from config.yaml's `context_window:` (as compaction does),
/// not only the table of well-known models: `w-b` is known to nobody else.
#[tokio::test]
async fn the_context_guard_uses_the_configured_window() {
    let options = huddle::engine::EngineOptions {
        context_windows: [("openai/w-b".to_string(), 4096)].into_iter().collect(),
        ..huddle::engine::EngineOptions::default()
    };
    let f = super::engine_fixture::team_with(Mode::Team, &["a", "b"], false, 1, options).await;
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().settings.team = limits(4, 4));
    let huge = "x".repeat(40_000);
    f.server
        .script("w-a", vec![says(&huge, false), says("A: done", true)]);
    f.server
        .script("w-b", vec![says("B: view", false), says("B: done", true)]);
    f.server.script(ORCH, vec![guides("Go on"), Reply::text("DONE")]);
    let report = f.run("Decide").await;
    assert_eq!(report.final_text, "DONE");
    let second = &f.prompts("w-b")[1];
    assert!(second.contains("context window (4096 tokens"), "{second}");
    assert!(!second.contains("xxxxxxxxxx"));
}

#[tokio::test]
async fn a_broadcast_too_big_for_a_members_context_is_replaced_by_a_diagnostic() {
    let mut f = deliberation(&["a", "b"], limits(4, 4)).await;
    // b runs on a model with a known 8192-token window.
    let b = f.session_id("t-b");
    f.org
        .update(|o| o.session_mut(&b).unwrap().model = "openai/gpt-4-b".into());
    let huge = "x".repeat(40_000);
    f.server
        .script("w-a", vec![says(&huge, false), says("A: done", true)]);
    f.server
        .script("gpt-4-b", vec![says("B: view", false), says("B: done", true)]);
    f.server.script(ORCH, vec![guides("Go on"), Reply::text("DONE")]);
    let report = f.run("Decide").await;
    assert_eq!(report.final_text, "DONE");
    let second = &f.prompts("gpt-4-b")[1];
    assert!(second.contains("### a · failure · turn 1"), "{second}");
    assert!(
        second.contains("The broadcast of a (turn 1, about 10"),
        "{second}"
    );
    assert!(second.contains("context window (8192 tokens"), "{second}");
    assert!(!second.contains("xxxxxxxxxx"));
    assert!(second.contains("> Go on"), "what fits still comes");
    assert!(
        f.prompts(ORCH)[0].contains(&huge),
        "a reader with room gets it whole"
    );
    let events = f.drain();
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Warning { message }
        if message.starts_with("a's broadcast (turn 1, about") && message.contains("left out of b's turn")))
    );
}

#[tokio::test]
async fn stop_cancels_every_member_and_keeps_the_partial_answers() {
    let mut f = deliberation(&["a", "b"], limits(4, 4)).await;
    for m in ["w-a", "w-b"] {
        f.server.script(
            m,
            vec![Reply::chunks(["partial ", "view"]).end(StreamEnd::Stall(Duration::from_secs(3600)))],
        );
    }
    let run = f.spawn_run("Decide");
    // Both members have streamed their partial views (the streams then stall).
    let mut streamed: HashMap<String, String> = HashMap::new();
    let mut events = f
        .events_until("both partial views", |e| {
            if let EventKind::Delta { session, text, .. } = &e.kind {
                streamed.entry(session.to_string()).or_default().push_str(text);
            }
            streamed.values().filter(|t| *t == "partial view").count() == 2
        })
        .await;
    assert!(f.engine.stop(&RunKey::team(&f.group_id)));
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("stop ends the run")
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert!(report.failed.is_none());
    assert!(f.prompts(ORCH).is_empty(), "the supervisor never ran");
    f.engine.flush().unwrap();
    for name in ["t-a", "t-b"] {
        let messages = f.transcripts.load(&f.session_id(name)).unwrap().messages;
        let last = messages.last().unwrap();
        assert_eq!(last.text, "partial view", "{name}");
        assert!(last.interrupted, "{name}");
    }
    events.extend(f.drain());
    let ends = statuses(&events);
    let execs = started(&events);
    let members: Vec<ExecutionStatus> = ends
        .iter()
        .filter(|(id, _)| execs[*id].0 == ExecutionKind::MemberTurn)
        .map(|(_, s)| *s)
        .collect();
    assert_eq!(members, [ExecutionStatus::Cancelled; 2]);
    assert!(
        broadcasts(&events).is_empty(),
        "a stop is no failure of the members"
    );
}

#[tokio::test]
async fn cli_agents_deliberate_in_the_text_form() {
    let mut f = deliberation(&["a", "b"], limits(4, 4)).await;
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path().display().to_string();
    f.with_cli_agents(
        dir.path(),
        &[
            (
                "cli-a",
                &format!("cat > {d}/a-prompt.txt\nprintf 'A: costs matter.\\n[final]\\n'"),
            ),
            (
                "cli-chair",
                &format!(
                    "cat > /dev/null\nif [ -e {d}/once ]; then printf 'FINAL from the chair\\n'; else touch {d}/once; printf 'Noted.\\n@broadcast: focus on cost\\n'; fi"
                ),
            ),
        ],
    );
    let (a, chair) = (f.session_id("t-a"), f.session_id("t-orchestrator"));
    f.org.update(|o| {
        o.session_mut(&a).unwrap().model = "cli-a/x".into();
        o.session_mut(&chair).unwrap().model = "cli-chair/x".into();
    });
    f.server
        .script("w-b", vec![says("B: view", false), says("B: done", true)]);
    let report = f.run("Decide").await;
    assert!(report.failed.is_none(), "{:?}", report.failed);
    assert_eq!(report.final_text.trim(), "FINAL from the chair");
    let a_prompt = std::fs::read_to_string(dir.path().join("a-prompt.txt")).unwrap();
    assert!(
        a_prompt.contains("End your answer with a line `[final]`"),
        "{a_prompt}"
    );
    assert!(!a_prompt.contains("Call `team_broadcast`"), "{a_prompt}");
    let heard = broadcasts(&f.drain());
    let from_a = heard.iter().find(|h| h.from == "a").expect("a's broadcast");
    assert_eq!(from_a.message, "A: costs matter.");
    assert!(from_a.last);
    let chair_said = heard
        .iter()
        .find(|h| h.supervisor)
        .expect("the chair's broadcast");
    assert_eq!(chair_said.message, "focus on cost");
    let b_second = &f.prompts("w-b")[1];
    assert!(b_second.contains("### a · update · final · turn 1"), "{b_second}");
    assert!(b_second.contains("> focus on cost"), "{b_second}");
}

#[tokio::test]
async fn a_spent_token_budget_stops_the_deliberation() {
    let mut f = deliberation(&["a", "b"], limits(4, 4)).await;
    f.org.update(|o| {
        o.group_mut(&f.group_id).unwrap().budget = huddle::model::RunBudget {
            token_budget: Some(30),
            max_cost_usd: None,
            max_duration_secs: None,
        }
    });
    // a's view spends the budget while b is still thinking.
    f.server.script("w-a", vec![says("A1", false).usage(40, 5)]);
    f.server.script(
        "w-b",
        vec![says("B1", false).chunk_delay(Duration::from_secs(3600))],
    );
    let run = f.spawn_run("Decide");
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the budget ends the run")
        .unwrap();
    assert_eq!(report.outcome, CycleOutcome::BudgetExhausted);
    assert!(report.failed.is_none());
    let events = f.drain();
    let ends = statuses(&events);
    let execs = started(&events);
    assert_eq!(ends.len(), execs.len(), "every execution ended");
    let b_turn = execs
        .iter()
        .find(|(_, (kind, member, ..))| *kind == ExecutionKind::MemberTurn && member == "b")
        .map(|(id, _)| id)
        .unwrap();
    assert_eq!(ends[b_turn], ExecutionStatus::Cancelled);
    assert!(f.prompts(ORCH).is_empty(), "the supervisor never ran");
}

#[tokio::test]
async fn a_message_sent_to_the_running_team_reaches_the_supervisor() {
    let f = deliberation(&["a"], limits(4, 4)).await;
    f.server.script(
        "w-a",
        vec![says("A: view", true).chunk_delay(Duration::from_millis(200))],
    );
    f.server.script(ORCH, vec![Reply::text("DONE")]);
    let run = f.spawn_run("Decide");
    f.wait_for_requests("w-a", 1).await;
    assert!(f.engine.queue_message(&f.group_id, "Keep it cheap".into()));
    let report = tokio::time::timeout(HANG_GUARD, run).await.unwrap().unwrap();
    assert_eq!(report.final_text, "DONE");
    let sup = &f.prompts(ORCH)[0];
    assert!(
        sup.contains("## From the user (sent while the team was deliberating)\n- Keep it cheap\n"),
        "{sup}"
    );
}

#[tokio::test]
async fn a_failed_supervisor_fails_the_run() {
    let mut f = deliberation(&["a", "b"], limits(4, 4)).await;
    for m in ["a", "b"] {
        f.server
            .script(&format!("w-{m}"), vec![says("view", false), says("done", true)]);
    }
    f.server.script(ORCH, vec![guides("Go on"), Reply::status(500)]);
    let report = tokio::time::timeout(HANG_GUARD, f.spawn_run("Decide"))
        .await
        .unwrap()
        .unwrap();
    let failure = report.failed.expect("the run failed");
    assert!(failure.contains("500"), "{failure}");
    let events = f.drain();
    let execs = started(&events);
    let ends = statuses(&events);
    assert_eq!(ends.len(), execs.len(), "every execution ended");
    let root = execs
        .iter()
        .find(|(_, (kind, ..))| *kind == ExecutionKind::Supervisor)
        .map(|(id, _)| id)
        .unwrap();
    assert_eq!(ends[root], ExecutionStatus::Failed);
}

/// Issue 28 item 16: a team run counts its supervisor's cycles once, the same at the start, at
/// each cycle and at the end (it announced `1/1` and ended `after 2/3`).
#[tokio::test]
async fn a_deliberation_counts_its_supervisor_cycles_the_same_everywhere() {
    let mut f = deliberation(&["a", "b"], limits(4, 3)).await;
    let report = two_cycles(&f).await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    let events = f.drain();
    let counts: Vec<(&str, u32, u32)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CycleStarted { max_iterations, .. } => Some(("start", 0, *max_iterations)),
            EventKind::IterationStarted {
                iteration,
                max_iterations,
            } => Some(("iteration", *iteration, *max_iterations)),
            EventKind::CycleFinished {
                iterations,
                max_iterations,
                ..
            } => Some(("finished", *iterations, *max_iterations)),
            _ => None,
        })
        .collect();
    assert_eq!(
        counts,
        [
            ("start", 0, 3),
            ("iteration", 1, 3),
            ("iteration", 2, 3),
            ("finished", 2, 3)
        ],
        "one iteration a supervisor cycle, of the supervisor's turns"
    );
    assert_eq!(report.iterations, 2);
    assert!(report.summary.contains("Iterations: 2/3"), "{}", report.summary);
}
