//! Mode `pipeline` end to end over real HTTP: handoffs along the stages (tool and text form), a
//! return edge, a disallowed target, parking for the user and resuming, routing rules by phase
//! and intent, affinity across messages, a supervisor's redirect, and the conversation state
//! on disk.

use huddle::engine::events::{EngineEvent, EventKind};
use huddle::model::{
    ConversationState, CycleOutcome, Mode, PipelineSpec, PipelineStage, RoutingRule, Supervise,
};
use huddle::store::OrganizationFile;

use super::engine_fixture::{Fixture, team};
use super::fake_llm_server::Reply;

const MEMBERS: &[&str] = &["triage", "handler", "reviewer", "resolver", "boss"];

fn stage(phase: &str, member: &str, next: Option<&str>, back: &[&str]) -> PipelineStage {
    PipelineStage {
        phase: phase.into(),
        member: member.into(),
        next: next.map(str::to_string),
        can_return_to: back.iter().map(|s| s.to_string()).collect(),
    }
}

/// The support desk: intake → handling → review (↩ handling) → resolution, members by name.
fn desk() -> PipelineSpec {
    PipelineSpec {
        stages: vec![
            stage("intake", "triage", Some("handling"), &[]),
            stage("handling", "handler", Some("review"), &[]),
            stage("review", "reviewer", Some("resolution"), &["handling"]),
            stage("resolution", "resolver", None, &[]),
        ],
        ..PipelineSpec::default()
    }
}

/// A pipeline team with `spec` (members by name, stored by session id).
async fn pipeline(spec: PipelineSpec) -> Fixture {
    let f = team(Mode::Pipeline, MEMBERS, false, 1).await;
    let id = |name: &str| f.session_id(&format!("t-{name}"));
    let spec = PipelineSpec {
        stages: spec
            .stages
            .iter()
            .map(|s| PipelineStage {
                member: id(&s.member),
                ..s.clone()
            })
            .collect(),
        supervisor: spec.supervisor.as_deref().map(id),
        ..spec
    };
    f.org
        .update(|o| o.group_mut(&f.group_id).unwrap().settings.pipeline = Some(spec));
    f
}

fn handoff(target: &str, summary: &str) -> Reply {
    let args = serde_json::json!({ "target": target, "reason": format!("to {target}"), "summary": summary });
    Reply::tool_call("h1", "handoff_conversation", &args.to_string())
}

fn state(f: &Fixture) -> ConversationState {
    f.org
        .read(|o| o.group(&f.group_id).unwrap().state.pipeline.clone())
        .unwrap_or_default()
}

/// `(from_phase, to_phase)` of every `phase_transition`.
fn transitions(events: &[EngineEvent]) -> Vec<(Option<String>, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseTransition {
                from_phase, to_phase, ..
            } => Some((from_phase.clone(), to_phase.clone())),
            _ => None,
        })
        .collect()
}

fn t(from: Option<&str>, to: &str) -> (Option<String>, String) {
    (from.map(str::to_string), to.to_string())
}

fn rejections(events: &[EngineEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HandoffRejected { target, error, .. } => Some((target.clone(), error.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_straight_run_moves_through_every_stage_with_the_summaries() {
    let mut f = pipeline(desk()).await;
    f.server
        .script("w-triage", vec![handoff("handler", "billing question")]);
    f.server.script(
        "w-handler",
        vec![Reply::text(
            "Refund issued.\n@handoff_conversation: reviewer\nreason: done\nRefund of 10 EUR issued.",
        )],
    );
    f.server
        .script("w-reviewer", vec![handoff("resolver", "looks right")]);
    f.server.script("w-resolver", vec![Reply::text("RESOLVED")]);
    let report = f.run("I was charged twice").await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(report.final_text, "RESOLVED");
    let sent = &f.server.requests_for("w-triage")[0];
    assert!(sent.tool_names().contains(&"handoff_conversation".to_string()));
    assert_eq!(
        f.server.requests_for("w-triage").len(),
        1,
        "the call ends the turn"
    );
    let handler = &f.prompts("w-handler")[0];
    assert!(
        handler
            .starts_with("[Context from previous agent (triage)]: billing question\n\nI was charged twice"),
        "{handler}"
    );
    let reviewer = &f.prompts("w-reviewer")[0];
    assert!(
        reviewer.starts_with("[Context from previous agent (handler)]: Refund of 10 EUR issued."),
        "{reviewer}"
    );
    let events = f.drain();
    assert_eq!(
        transitions(&events),
        [
            t(None, "intake"),
            t(Some("intake"), "handling"),
            t(Some("handling"), "review"),
            t(Some("review"), "resolution"),
        ]
    );
    let handoffs = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Handoff { .. }))
        .count();
    assert_eq!(handoffs, 3);
    let ndjson: Vec<String> = events.iter().map(|e| e.to_ndjson()).collect();
    assert!(
        ndjson
            .iter()
            .any(|l| l.contains("\"event\":\"phase_transition\""))
    );
    assert!(ndjson.iter().any(|l| l.contains("\"event\":\"handoff\"")));
    let s = state(&f);
    assert_eq!(s.phase.as_deref(), Some("resolution"));
    assert_eq!(s.active, Some(f.session_id("t-resolver")));
    assert_eq!(s.handoff_count, 3);
    assert_eq!(s.history.len(), 4);
    assert_eq!(s.history[2].reason, "done");
}

#[tokio::test]
async fn review_may_return_to_handling() {
    let f = pipeline(desk()).await;
    f.server.script("w-triage", vec![handoff("handler", "s1")]);
    f.server.script(
        "w-handler",
        vec![handoff("reviewer", "first try"), Reply::text("FIXED PROPERLY")],
    );
    f.server
        .script("w-reviewer", vec![handoff("handler", "missing a test")]);
    let report = f.run("bug").await;
    assert_eq!(report.final_text, "FIXED PROPERLY");
    assert!(f.prompts("w-resolver").is_empty());
    let s = state(&f);
    let spec = f
        .org
        .read(|o| o.group(&f.group_id).unwrap().settings.pipeline.clone())
        .unwrap();
    assert_eq!(s.strip(&spec), "intake → handling → review ↩ handling");
    assert_eq!(s.phase.as_deref(), Some("handling"));
}

#[tokio::test]
async fn a_disallowed_target_is_a_tool_error_and_handoff_rejected() {
    let mut f = pipeline(desk()).await;
    f.server.script(
        "w-triage",
        vec![
            handoff("resolver", "skip ahead"),
            Reply::text("I will ask around."),
        ],
    );
    let report = f.run("hi").await;
    assert_eq!(report.final_text, "I will ask around.");
    let second = &f.server.requests_for("w-triage")[1];
    let results = second.tool_results();
    assert_eq!(results.len(), 1);
    assert!(
        results[0]
            .content
            .contains("`resolver` is not an allowed handoff target from this phase; allowed: handler, human"),
        "{results:?}"
    );
    assert!(f.prompts("w-resolver").is_empty());
    let events = f.drain();
    let rejected = rejections(&events);
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].0, "resolver");
    assert!(
        events
            .iter()
            .any(|e| e.to_ndjson().contains("\"event\":\"handoff_rejected\""))
    );
    let s = state(&f);
    assert_eq!(s.phase.as_deref(), Some("intake"));
    assert_eq!(s.handoff_count, 0);
}

#[tokio::test]
async fn an_unknown_text_form_target_is_rejected_and_the_answer_stands() {
    let mut f = pipeline(desk()).await;
    f.server.script(
        "w-triage",
        vec![Reply::text(
            "Answer.\n@handoff_conversation: legal\nreason: x\nsum",
        )],
    );
    let report = f.run("hi").await;
    assert_eq!(report.final_text, "Answer.");
    assert_eq!(rejections(&f.drain())[0].0, "legal");
}

#[tokio::test]
async fn human_parks_the_conversation_and_the_next_message_resumes_there() {
    let f = pipeline(desk()).await;
    f.server
        .script("w-triage", vec![handoff("handler", "order issue")]);
    f.server.script(
        "w-handler",
        vec![
            Reply::tool_calls(&[(
                "h2",
                "handoff_conversation",
                r#"{"target":"human","reason":"need the order number","summary":"What is your order number?"}"#,
            )]),
            Reply::text("Thanks, order 12345 is on its way."),
        ],
    );
    let report = f.run("Where is my order?").await;
    assert_eq!(report.final_text, "What is your order number?");
    let s = state(&f);
    assert!(s.parked);
    assert_eq!(s.active, None);
    assert_eq!(s.phase.as_deref(), Some("handling"));
    let report = f.run("12345").await;
    assert_eq!(report.final_text, "Thanks, order 12345 is on its way.");
    assert_eq!(f.server.requests_for("w-triage").len(), 1, "resumed at handling");
    let s = state(&f);
    assert!(!s.parked);
    assert_eq!(s.active, Some(f.session_id("t-handler")));
    assert!(s.history.last().unwrap().reason.contains("resuming"));
}

#[tokio::test]
async fn rules_route_by_intent_with_priority_and_by_phase() {
    let mut spec = desk();
    spec.rules = vec![
        RoutingRule {
            to: "review".into(),
            keywords: vec!["refund".into()],
            ..RoutingRule::default()
        },
        RoutingRule {
            to: "handling".into(),
            intent: Some(r"refund|invoice".into()),
            priority: 3,
            ..RoutingRule::default()
        },
        RoutingRule {
            to: "resolution".into(),
            phase: Some("handling".into()),
            ..RoutingRule::default()
        },
    ];
    let f = pipeline(spec).await;
    f.server
        .script("w-handler", vec![handoff("human", "need details")]);
    f.server.script("w-resolver", vec![Reply::text("CLOSED")]);
    f.run("My INVOICE is wrong").await;
    assert!(f.prompts("w-triage").is_empty(), "the intent rule skipped intake");
    assert!(
        f.prompts("w-reviewer").is_empty(),
        "priority 3 beat the earlier rule"
    );
    assert_eq!(f.prompts("w-handler").len(), 1);
    // Parked in handling: the phase rule sends the next message to resolution.
    let report = f.run("here are the details").await;
    assert_eq!(report.final_text, "CLOSED");
    assert_eq!(f.prompts("w-handler").len(), 1);
    let s = state(&f);
    assert!(s.history.last().unwrap().reason.contains("rule 3"), "{s:?}");
}

#[tokio::test]
async fn the_active_member_keeps_the_conversation_across_messages() {
    let f = pipeline(desk()).await;
    f.server.script("w-triage", vec![handoff("handler", "s")]);
    f.server.script(
        "w-handler",
        vec![Reply::text("First answer"), Reply::text("Second answer")],
    );
    f.run("first").await;
    let report = f.run("second").await;
    assert_eq!(report.final_text, "Second answer");
    assert_eq!(f.server.requests_for("w-triage").len(), 1);
    let second = &f.server.requests_for("w-handler")[1];
    let texts = second.prompt_texts().join("\n");
    assert!(
        texts.contains("First answer") && texts.contains("first"),
        "the handler remembers the conversation: {texts}"
    );
    assert_eq!(state(&f).history.len(), 2, "affinity records no transition");
}

#[tokio::test]
async fn the_supervisor_sees_every_exchange_and_may_redirect() {
    let mut spec = desk();
    spec.supervisor = Some("boss".into());
    let mut f = pipeline(spec).await;
    f.server
        .script("w-triage", vec![handoff("handler", "looks simple")]);
    f.server.script(
        "w-boss",
        vec![handoff("reviewer", "this needs review first"), Reply::text("OK")],
    );
    f.server.script("w-reviewer", vec![Reply::text("REVIEWED")]);
    let report = f.run("complex question").await;
    assert_eq!(report.final_text, "REVIEWED");
    assert!(f.prompts("w-handler").is_empty(), "the supervisor redirected");
    assert!(
        f.prompts("w-reviewer")[0]
            .starts_with("[Context from previous agent (boss)]: this needs review first"),
        "{:?}",
        f.prompts("w-reviewer")
    );
    let boss = &f.prompts("w-boss")[0];
    assert!(
        boss.contains("User: complex question") && boss.contains("triage (intake)"),
        "{boss}"
    );
    let events = f.drain();
    let by_supervisor = events.iter().any(|e| {
        matches!(
            &e.kind,
            EventKind::Handoff { by_supervisor: true, to, .. } if to == "reviewer"
        )
    });
    assert!(by_supervisor);
    // At-handoff supervision: the reviewer's plain answer wakes no supervisor turn.
    assert_eq!(f.server.requests_for("w-boss").len(), 1);
}

#[tokio::test]
async fn every_turn_supervision_looks_after_a_plain_answer() {
    let mut spec = desk();
    spec.supervisor = Some("boss".into());
    spec.supervise = Supervise::EveryTurn;
    let f = pipeline(spec).await;
    f.server.script("w-triage", vec![Reply::text("Hello there")]);
    f.server.script("w-boss", vec![Reply::text("OK")]);
    let report = f.run("hi").await;
    assert_eq!(report.final_text, "Hello there");
    assert_eq!(f.server.requests_for("w-boss").len(), 1);
}

#[tokio::test]
async fn the_conversation_state_survives_a_restart() {
    let f = pipeline(desk()).await;
    f.server.script("w-triage", vec![handoff("handler", "s")]);
    f.server.script("w-handler", vec![handoff("reviewer", "s2")]);
    f.server.script("w-reviewer", vec![Reply::text("Looking")]);
    f.run("go").await;
    let before = state(&f);
    f.org.flush().expect("flush");
    let loaded = OrganizationFile::new(f.dir.path().join("organization.json"))
        .load()
        .expect("load");
    let after = loaded
        .org
        .group(&f.group_id)
        .and_then(|g| g.state.pipeline.clone())
        .expect("state on disk");
    assert_eq!(after, before);
    assert_eq!(after.phase.as_deref(), Some("review"));
    assert_eq!(after.handoff_count, 2);
    assert_eq!(after.history.len(), 3);
    assert!(loaded.org.group(&f.group_id).unwrap().settings.pipeline.is_some());
}

#[tokio::test]
async fn handoffs_per_message_are_bounded() {
    let mut spec = desk();
    spec.stages[1].can_return_to = vec!["handling".into()];
    let mut f = pipeline(spec).await;
    f.server.script("w-triage", vec![handoff("handler", "s")]);
    f.server.set_default(handoff("handler", "again"));
    let report = f.run("loop").await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    let s = state(&f);
    assert_eq!(s.handoff_count, 8);
    assert!(
        rejections(&f.drain())
            .iter()
            .any(|(_, e)| e.contains("8 handoffs for one message"))
    );
}

#[tokio::test]
async fn exchanges_wait_for_the_supervisors_next_look_across_messages() {
    let mut spec = desk();
    spec.supervisor = Some("boss".into());
    let f = pipeline(spec).await;
    f.server.script(
        "w-triage",
        vec![Reply::text("Which product?"), handoff("handler", "product X")],
    );
    f.server.script("w-boss", vec![Reply::text("OK")]);
    f.server.script("w-handler", vec![Reply::text("Handled")]);
    f.run("first message").await;
    assert!(f.prompts("w-boss").is_empty(), "no handoff, no look");
    assert_eq!(state(&f).supervisor_backlog.len(), 1);
    f.run("second message").await;
    let boss = &f.prompts("w-boss")[0];
    assert!(
        boss.contains("User: first message\ntriage (intake): Which product?")
            && boss.contains("User: second message"),
        "{boss}"
    );
    // Shown exchanges are gone; the handler's answer (no handoff) waits for the next look.
    let backlog = state(&f).supervisor_backlog;
    assert_eq!(backlog.len(), 1, "{backlog:?}");
    assert!(backlog[0].contains("handler (handling): Handled"), "{backlog:?}");
}
