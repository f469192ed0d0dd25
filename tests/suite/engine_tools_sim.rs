//! Tools in every mode, offline: sim teams whose members have an in-process tool server, calls
//! approved (or denied) through the engine's approval broker the way a front end answers them,
//! and transcripts that give back exactly the history each model saw.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::session::chat_history;
use huddle::engine::{Engine, EngineOptions, EventSink, RunOverrides};
use huddle::model::{
    CycleOutcome, Group, GroupKind, MessageRole, Mode, Organization, Role, Session, ToolSpec, reconcile,
};
use huddle::store::{OrgHandle, Transcripts};
use huddle::tools::{
    Approval, ApprovalPolicy, Decision, ToolError, ToolOutput, ToolSource, Toolbox, approval::DENIED_BY_USER,
    approval::DENIED_HEADLESS,
};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::engine_fixture::HANG_GUARD;

/// A `notes` server with one `lookup` tool that echoes its topic; counts calls.
struct Notes {
    approval: Approval,
    calls: AtomicUsize,
    lists: AtomicUsize,
    /// Bytes of filler after the note (a large result).
    padding: usize,
}

impl ToolSource for Notes {
    fn name(&self) -> &str {
        "notes"
    }
    fn approval(&self) -> Approval {
        self.approval
    }
    fn list<'a>(
        &'a self,
        _workdir: Option<&'a std::path::Path>,
    ) -> BoxFuture<'a, Result<Vec<ToolSpec>, ToolError>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            Ok(vec![ToolSpec {
                name: "lookup".into(),
                description: "Looks a topic up in the team's notes.".into(),
                input_schema: json!({"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}),
            }])
        })
    }
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Map<String, Value>,
        _workdir: Option<&'a std::path::Path>,
        _cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            Ok(ToolOutput {
                text: format!(
                    "NOTE on {}: {tool} found it{}",
                    arguments["topic"].as_str().unwrap_or("?"),
                    "x".repeat(self.padding)
                ),
                is_error: false,
            })
        })
    }
}

struct Team {
    engine: Engine,
    org: OrgHandle,
    group_id: String,
    events: UnboundedReceiver<EngineEvent>,
    notes: Arc<Notes>,
    _dir: tempfile::TempDir,
}

fn team(mode: Mode, approval: Approval, policy: ApprovalPolicy) -> Team {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mut group = Group::new("crew", GroupKind::Team);
    group.mode = mode;
    group.max_iterations = 2;
    let gid = group.id.clone();
    let add = |org: &mut Organization, name: &str, role: Role| {
        let mut s = Session::new(name, &gid, "sim/default");
        s.role = role;
        s.team = true;
        s.tools = vec!["notes".into()];
        org.sessions.push(s);
    };
    if mode.spec().has_orchestrator {
        add(&mut org, "crew-orchestrator", Role::Orchestrator);
    }
    add(&mut org, "crew-alpha", Role::Worker);
    add(&mut org, "crew-beta", Role::Worker);
    if mode == Mode::OrchestratorReflect {
        add(&mut org, "crew-evaluator", Role::Evaluator);
        group.evaluator_id = org.session_by_name("crew-evaluator").map(|s| s.id.clone());
    }
    org.groups.push(group);
    let org = OrgHandle::in_memory(org);
    let notes = Arc::new(Notes {
        approval,
        calls: AtomicUsize::new(0),
        lists: AtomicUsize::new(0),
        padding: 0,
    });
    let (sink, events) = EventSink::channel();
    let engine = Engine::new(
        huddle::sim::providers(&huddle::config::Config::default()).expect("providers"),
        org.clone(),
        Transcripts::new(dir.path().join("sessions")),
        sink,
        EngineOptions {
            error_backoff: Duration::from_millis(1),
            tools: Toolbox::new([notes.clone() as Arc<dyn ToolSource>]),
            approval: policy,
            ..EngineOptions::default()
        },
    );
    Team {
        engine,
        org,
        group_id: gid,
        events,
        notes,
        _dir: dir,
    }
}

impl Team {
    fn spawn_run(&self, prompt: &str) -> tokio::task::JoinHandle<huddle::engine::RunReport> {
        let (engine, gid, prompt) = (self.engine.clone(), self.group_id.clone(), prompt.to_string());
        tokio::spawn(async move {
            engine
                .run_group(&gid, prompt, RunOverrides::default())
                .await
                .expect("the run starts")
        })
    }

    /// Runs the team, answering every approval request with `decision` as a front end would;
    /// returns the report and every event.
    async fn run_answering(&mut self, decision: Decision) -> (huddle::engine::RunReport, Vec<EngineEvent>) {
        let run = self.spawn_run("Compare the two designs");
        let mut seen = Vec::new();
        let collect = async {
            while let Some(e) = self.events.recv().await {
                if let EventKind::ToolApprovalRequested { approval_id, .. } = &e.kind {
                    assert!(self.engine.answer_approval(*approval_id, decision));
                }
                let end = matches!(e.kind, EventKind::RunEnded { .. });
                seen.push(e);
                if end {
                    break;
                }
            }
        };
        tokio::time::timeout(HANG_GUARD, collect)
            .await
            .expect("the run ended");
        let report = run.await.expect("run task");
        (report, seen)
    }

    /// The first tool result each member's transcript holds (what its model was sent).
    fn tool_results_sent(&self) -> Vec<huddle::model::Message> {
        self.engine.flush().expect("flush");
        self.session_ids()
            .into_iter()
            .map(|(id, _)| {
                let messages = self.engine.load_transcript(&id).expect("transcript").messages;
                messages
                    .into_iter()
                    .find(|m| m.role == MessageRole::Tool)
                    .expect("a tool result")
            })
            .collect()
    }

    /// Replaces the engine with one of `providers` and `options` (the same organization and
    /// transcripts).
    fn new_engine(&mut self, providers: huddle::providers::Providers, options: EngineOptions) {
        let (sink, events) = EventSink::channel();
        self.engine = Engine::new(
            providers,
            self.org.clone(),
            Transcripts::new(self._dir.path().join("sessions")),
            sink,
            options,
        );
        self.events = events;
    }

    fn session_ids(&self) -> Vec<(String, String)> {
        self.org.read(|o| {
            o.sessions_in(&self.group_id)
                .iter()
                .map(|s| (s.id.clone(), s.name.clone()))
                .collect()
        })
    }
}

fn count(events: &[EngineEvent], name: &str) -> usize {
    events.iter().filter(|e| e.kind.name() == name).count()
}

#[tokio::test]
async fn every_mode_plays_tools_with_approval_and_keeps_them_in_the_transcripts() {
    for mode in [
        Mode::Broadcast,
        Mode::Sequential,
        Mode::Orchestrator,
        Mode::OrchestratorReflect,
    ] {
        let mut t = team(mode, Approval::Ask, ApprovalPolicy::Ask);
        let (report, events) = t.run_answering(Decision::ApproveOnce).await;
        assert!(report.failed.is_none(), "{mode}: {:?}", report.failed);
        assert_ne!(report.outcome, CycleOutcome::Cancelled, "{mode}");
        let calls = count(&events, "tool_call");
        assert!(calls >= 2, "{mode}: both workers call at least once, got {calls}");
        assert_eq!(
            count(&events, "tool_approval_requested"),
            calls,
            "{mode}: every call asked"
        );
        assert_eq!(count(&events, "tool_approval_decided"), calls, "{mode}");
        assert_eq!(count(&events, "tool_result"), calls, "{mode}");
        assert_eq!(
            t.notes.calls.load(Ordering::SeqCst),
            calls,
            "{mode}: approved calls ran"
        );
        for e in &events {
            if let EventKind::ToolResult { ok, first_line, .. } = &e.kind {
                assert!(*ok && first_line.starts_with("NOTE on "), "{mode}: {first_line}");
            }
        }
        // The answers used the results, and each transcript reads back as what the model saw.
        t.engine.flush().expect("flush");
        for (id, name) in t.session_ids() {
            let messages = t.engine.load_transcript(&id).expect("transcript").messages;
            let Some(tool_message) = messages.iter().find(|m| m.role == MessageRole::Tool) else {
                continue;
            };
            let info = tool_message
                .tool_result
                .as_ref()
                .expect("tool message has its call");
            let step = messages
                .iter()
                .find(|m| m.tool_calls.iter().any(|c| c.id == info.call_id))
                .expect("the call is stored before its result");
            assert_eq!(step.role, MessageRole::Assistant, "{mode} {name}");
            let answer = messages
                .iter()
                .rev()
                .find(|m| m.role == MessageRole::Assistant && m.tool_calls.is_empty())
                .expect("a final answer");
            assert!(
                answer
                    .text
                    .contains("From my tools: `notes__lookup` said: NOTE on"),
                "{mode} {name}: {}",
                answer.text
            );
            let history = chat_history(&messages);
            assert!(
                history
                    .iter()
                    .any(|m| m.result_of.as_ref().is_some_and(|r| r.call_id == info.call_id))
            );
        }
    }
}

#[tokio::test]
async fn denied_calls_reach_the_model_as_denied_and_never_run() {
    let mut t = team(Mode::Broadcast, Approval::Ask, ApprovalPolicy::Ask);
    let (report, events) = t.run_answering(Decision::Deny).await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(t.notes.calls.load(Ordering::SeqCst), 0);
    let results: Vec<(bool, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { ok, first_line, .. } => Some((*ok, first_line.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results.iter().all(|(ok, line)| !ok && line == DENIED_BY_USER),
        "{results:?}"
    );
}

#[tokio::test]
async fn deny_and_stop_ends_the_run_as_cancelled() {
    let mut t = team(Mode::Sequential, Approval::Ask, ApprovalPolicy::Ask);
    let (report, events) = t.run_answering(Decision::DenyAndStop).await;
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert_eq!(t.notes.calls.load(Ordering::SeqCst), 0);
    assert_eq!(
        count(&events, "tool_approval_requested"),
        1,
        "the run stopped at the first call"
    );
}

#[tokio::test]
async fn approve_for_session_asks_once_per_session_and_tool() {
    let mut t = team(Mode::Broadcast, Approval::Ask, ApprovalPolicy::Ask);
    let (_, first) = t.run_answering(Decision::ApproveForSession).await;
    assert_eq!(count(&first, "tool_approval_requested"), 2);
    let (_, second) = t.run_answering(Decision::Deny).await;
    assert_eq!(
        count(&second, "tool_approval_requested"),
        0,
        "granted for the session"
    );
    assert_eq!(count(&second, "tool_result"), 2);
    assert_eq!(t.notes.calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn headless_policy_denies_asking_servers_and_says_how_to_allow_them() {
    let mut t = team(Mode::Broadcast, Approval::Ask, ApprovalPolicy::DenyAll);
    let (report, events) = t.run_answering(Decision::ApproveOnce).await;
    assert_eq!(report.outcome, CycleOutcome::Completed);
    assert_eq!(t.notes.calls.load(Ordering::SeqCst), 0);
    assert_eq!(count(&events, "tool_approval_requested"), 0);
    let reasons: Vec<Option<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolApprovalDecided { decision, reason, .. } => {
                assert_eq!(*decision, Decision::Deny);
                Some(reason.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec![Some(DENIED_HEADLESS.to_string()); 2]);

    // `auto` servers run without asking, whatever the policy.
    let mut t = team(Mode::Broadcast, Approval::Auto, ApprovalPolicy::DenyAll);
    let (_, events) = t.run_answering(Decision::Deny).await;
    assert_eq!(count(&events, "tool_approval_decided"), 0);
    assert_eq!(t.notes.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_stop_while_a_call_waits_for_approval_ends_the_run_and_records_the_call() {
    let mut t = team(Mode::Broadcast, Approval::Ask, ApprovalPolicy::Ask);
    let run = t.spawn_run("go");
    let wait = async {
        while let Some(e) = t.events.recv().await {
            if matches!(e.kind, EventKind::ToolApprovalRequested { .. }) {
                return;
            }
        }
    };
    tokio::time::timeout(HANG_GUARD, wait).await.expect("a request");
    assert!(t.engine.stop(&huddle::engine::events::RunKey::team(&t.group_id)));
    let report = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("ends")
        .expect("task");
    assert_eq!(report.outcome, CycleOutcome::Cancelled);
    assert_eq!(t.notes.calls.load(Ordering::SeqCst), 0);
    t.engine.flush().expect("flush");
    for (id, _) in t.session_ids() {
        let messages = t.engine.load_transcript(&id).expect("transcript").messages;
        let calls: usize = messages.iter().map(|m| m.tool_calls.len()).sum();
        let results = messages.iter().filter(|m| m.role == MessageRole::Tool).count();
        assert_eq!(calls, results, "every stored call has its stored result");
    }
}

#[tokio::test]
async fn a_command_session_is_offered_no_tools() {
    let mut t = team(Mode::Broadcast, Approval::Auto, ApprovalPolicy::ApproveAll);
    let config = huddle::config::Config::parse(
        "providers:\n  - { name: cat, kind: command, command: [cat] }\n",
        std::path::Path::new("c.yaml"),
    )
    .expect("config");
    let providers = huddle::sim::providers(&config).expect("providers");
    t.org.update(|o| {
        for s in o.sessions.iter_mut() {
            s.model = "cat/any".into();
        }
    });
    t.new_engine(
        providers,
        EngineOptions {
            tools: Toolbox::new([t.notes.clone() as Arc<dyn ToolSource>]),
            ..EngineOptions::default()
        },
    );
    let (report, events) = t.run_answering(Decision::ApproveOnce).await;
    assert!(report.failed.is_none(), "{:?}", report.failed);
    assert_eq!(count(&events, "tool_call"), 0);
    assert!(
        report.final_text.contains("Compare the two designs"),
        "cat echoes the prompt: {}",
        report.final_text
    );
    assert_eq!(
        t.notes.lists.load(Ordering::SeqCst),
        0,
        "tools were never even listed for it"
    );
}

#[tokio::test]
async fn a_large_result_is_capped_before_the_model_sees_it_and_its_full_size_reported() {
    let mut t = team(Mode::Broadcast, Approval::Auto, ApprovalPolicy::ApproveAll);
    let notes = Arc::new(Notes {
        approval: Approval::Auto,
        calls: AtomicUsize::new(0),
        lists: AtomicUsize::new(0),
        padding: 10_000,
    });
    t.new_engine(
        huddle::sim::providers(&huddle::config::Config::default()).expect("providers"),
        EngineOptions {
            tools: Toolbox::new([notes.clone() as Arc<dyn ToolSource>]),
            tool_result_max_bytes: 1024,
            ..EngineOptions::default()
        },
    );
    let (report, events) = t.run_answering(Decision::ApproveOnce).await;
    assert!(report.failed.is_none(), "{:?}", report.failed);
    let sizes: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { size, .. } => Some(*size),
            _ => None,
        })
        .collect();
    assert_eq!(sizes.len(), 2);
    assert!(
        sizes.iter().all(|&n| n > 10_000),
        "the size before the cap: {sizes:?}"
    );
    for sent in t.tool_results_sent() {
        assert!(sent.text.len() < 1024 + 100, "capped: {} bytes", sent.text.len());
        assert!(sent.text.contains("[… cut:"), "the cut is marked");
        assert_eq!(sent.tool_result.as_ref().map(|r| r.size), Some(sizes[0]));
    }
}

/// A run scoped to a front end's profile (as the host scopes the runs of `huddle run` and of a
/// TUI) uses that profile's tool servers, result cap, approval default and config.yaml hooks,
/// not the engine's own (the configuration the host started with); with the scope cleared, the
/// engine's own apply again.
#[tokio::test]
async fn a_scoped_profile_gives_its_runs_its_tools_cap_approvals_and_hooks() {
    let mut t = team(Mode::Broadcast, Approval::Ask, ApprovalPolicy::DenyAll);
    // The engine's own: no tool server, no hooks, calls that ask denied.
    t.new_engine(
        huddle::sim::providers(&huddle::config::Config::default()).expect("providers"),
        EngineOptions {
            error_backoff: Duration::from_millis(1),
            approval: ApprovalPolicy::DenyAll,
            ..EngineOptions::default()
        },
    );
    let notes = Arc::new(Notes {
        approval: Approval::Ask,
        calls: AtomicUsize::new(0),
        lists: AtomicUsize::new(0),
        padding: 10_000,
    });
    let hooks: huddle::hooks::Hooks = serde_yaml::from_str(
        "turn_finished:\n  - command: [sh, -c, \"echo the front end objects >&2; exit 2\"]\n",
    )
    .expect("hooks");
    let profile = huddle::engine::Profile {
        providers: huddle::sim::providers(&huddle::config::Config::default()).expect("providers"),
        options: EngineOptions {
            tools: Toolbox::new([notes.clone() as Arc<dyn ToolSource>]),
            tool_result_max_bytes: 1024,
            approval: ApprovalPolicy::ApproveAll,
            hooks,
            ..EngineOptions::default()
        },
    };
    t.engine.set_scoped_profile(&t.group_id, Some(Arc::new(profile)));
    let objections = |events: &[EngineEvent]| {
        events
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::Notice { text, .. } if text.ends_with("objected: the front end objects")))
            .count()
    };

    let (report, events) = t.run_answering(Decision::Deny).await;
    assert!(report.failed.is_none(), "{:?}", report.failed);
    assert_eq!(
        count(&events, "tool_approval_requested"),
        0,
        "approved by the profile's rule"
    );
    assert_eq!(
        notes.calls.load(Ordering::SeqCst),
        2,
        "the profile's server answered"
    );
    for sent in t.tool_results_sent() {
        assert!(
            !sent.tool_result.as_ref().is_some_and(|r| r.is_error),
            "{}",
            sent.text
        );
        assert!(
            sent.text.len() < 1024 + 100,
            "the profile's cap: {} bytes",
            sent.text.len()
        );
    }
    assert_eq!(
        objections(&events),
        2,
        "the profile's turn_finished hook ran for each member"
    );

    // The scope cleared: the engine's own configuration again (no such server, no hook).
    t.engine.set_scoped_profile(&t.group_id, None);
    let (report, events) = t.run_answering(Decision::Deny).await;
    assert!(report.failed.is_none(), "{:?}", report.failed);
    assert_eq!(notes.calls.load(Ordering::SeqCst), 2, "not called again");
    assert_eq!(objections(&events), 0, "no hook of the engine's own");
}
