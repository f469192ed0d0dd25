//! A session on a CLI agent, end to end through the engine: the agent's own tool steps stored
//! and announced as tool cells are (marked as the agent's, never sent to a model as calls), its
//! session id kept on the session, the next turn resumed with only the new prompt, a session
//! the agent no longer knows replaced by a fresh run (with a notice), and a turn on another
//! model forgetting the agent's session.

use std::path::{Path, PathBuf};
use std::time::Duration;

use huddle::config::Config;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::session::{TurnResult, chat_history};
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::model::{AgentSession, Message, MessageRole, Organization, Session, reconcile};
use huddle::providers::ChatRole;
use huddle::store::{OrgHandle, OrganizationFile, Transcripts};
use tokio::sync::mpsc::UnboundedReceiver;

use super::engine_fixture::HANG_GUARD;
use super::providers_agents::{fixture, replay_command, runs};

const TOOL_USE_SESSION: &str = "40e7b02d-c0f9-4876-9010-f514d4eb0603";
const PARTIAL_SESSION: &str = "7c1f0a52-5d0e-4b8e-9a51-2f0b7c3e9d11";

struct Agent {
    engine: Engine,
    org: OrgHandle,
    session_id: String,
    events: UnboundedReceiver<EngineEvent>,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

/// A session on `claude/sonnet`, the `claude` preset's format with the stand-in agent playing
/// `fresh` (and `resume_options` when resumed).
fn setup(fresh: &str, resume_options: &[&str], stored: Option<AgentSession>) -> Agent {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = dir.path().join("runs.jsonl");
    let mut options = vec![
        "--log".to_string(),
        log.display().to_string(),
        "--fixture".to_string(),
        fixture(fresh),
    ];
    options.extend(resume_options.iter().map(|o| o.to_string()));
    let command: Vec<String> = replay_command(&options.iter().map(String::as_str).collect::<Vec<_>>());
    let yaml = format!(
        "providers:\n  - {{ name: claude, kind: command, agent: claude, command: {} }}\n",
        serde_json::to_string(&command).expect("json")
    );
    let config = Config::parse(&yaml, Path::new("test-config.yaml")).expect("config");
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group_id = org.default_group().expect("default group").id.clone();
    let mut session = Session::new("coder", &group_id, "claude/sonnet");
    session.system_prompt = Some("You fix bugs.".into());
    session.agent_session = stored;
    let session_id = session.id.clone();
    org.sessions.push(session);
    let org = OrgHandle::persistent_with_debounce(
        org,
        OrganizationFile::new(dir.path().join("organization.json")),
        Duration::from_millis(5),
    );
    let (sink, events) = EventSink::channel();
    // The stand-in agent runs in its sandbox (the default) and logs its runs to the temp dir,
    // which is let in.
    let sandbox = huddle::sandbox::Baseline {
        config: huddle::sandbox::SandboxSettings {
            allow_write: vec![dir.path().display().to_string()],
            ..Default::default()
        },
        ..Default::default()
    };
    let engine = Engine::new(
        huddle::sim::providers(&config).expect("providers"),
        org.clone(),
        Transcripts::new(dir.path().join("sessions")),
        sink,
        EngineOptions {
            sandbox,
            ..EngineOptions::default()
        },
    );
    Agent {
        engine,
        org,
        session_id,
        events,
        log,
        _dir: dir,
    }
}

impl Agent {
    async fn ask(&self, prompt: &str, model: Option<&str>) -> TurnResult {
        let turn = self
            .engine
            .ask(&self.session_id, prompt.into(), model.map(str::to_string));
        tokio::time::timeout(HANG_GUARD, turn)
            .await
            .expect("the turn ends")
            .expect("the turn starts")
    }

    fn transcript(&self) -> Vec<Message> {
        self.engine
            .load_transcript(&self.session_id)
            .expect("transcript")
            .messages
    }

    fn stored(&self) -> Option<AgentSession> {
        self.org
            .read(|o| o.session(&self.session_id).and_then(|s| s.agent_session.clone()))
    }

    fn drain(&mut self) -> Vec<EngineEvent> {
        let mut out = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            out.push(e);
        }
        out
    }

    /// Every run of the stand-in agent: its arguments and stdin.
    fn runs(&self) -> Vec<(Vec<String>, String)> {
        runs(&self.log)
    }
}

fn claude(id: &str) -> Option<AgentSession> {
    Some(AgentSession {
        provider: "claude".into(),
        id: id.into(),
    })
}

#[tokio::test]
async fn agent_steps_are_recorded_as_tool_cells_and_the_next_turn_resumes() {
    let resume = ["--resume-fixture".to_string(), fixture("claude-partial.jsonl")];
    let resume: Vec<&str> = resume.iter().map(String::as_str).collect();
    let mut agent = setup("claude-tool-use.jsonl", &resume, None);

    let first = agent.ask("List the files", None).await;
    assert!(first.success, "{:?}", first.error);
    assert_eq!(first.text, "Here are the files in the current directory.");
    assert_eq!(first.cost_usd, Some(0.24722425));

    // Stored: the prompt, the agent's step and its result (marked as the agent's), the answer.
    let transcript = agent.transcript();
    let roles: Vec<(MessageRole, bool)> = transcript.iter().map(|m| (m.role, m.by_agent)).collect();
    assert_eq!(
        roles,
        [
            (MessageRole::User, false),
            (MessageRole::Assistant, true),
            (MessageRole::Tool, true),
            (MessageRole::Assistant, false),
        ]
    );
    assert_eq!(transcript[1].tool_calls[0].name, "Bash");
    assert_eq!(transcript[1].model.as_deref(), Some("claude/sonnet"));
    let result = transcript[2].tool_result.as_ref().expect("result info");
    assert_eq!(result.call_id, transcript[1].tool_calls[0].id);
    assert!(!result.is_error);
    assert!(transcript[2].text.starts_with("total 1976"));
    assert_eq!(transcript[3].cost_usd, Some(0.24722425));

    // Announced as the engine's own tool rounds are: the call with its step, then the result.
    let events = agent.drain();
    let tools: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCall { name, step, .. } => Some(format!(
                "call {name} step={}",
                step.as_ref().is_some_and(|s| s.by_agent)
            )),
            EventKind::ToolResult {
                name, ok, first_line, ..
            } => Some(format!("result {name} ok={ok} {first_line}")),
            _ => None,
        })
        .collect();
    assert_eq!(tools.len(), 2, "{tools:?}");
    assert_eq!(tools[0], "call Bash step=true");
    assert!(
        tools[1].starts_with("result Bash ok=true total 1976"),
        "{tools:?}"
    );

    // The agent's session is kept for the next turn.
    assert_eq!(agent.stored(), claude(TOOL_USE_SESSION));

    let second = agent.ask("And the README?", None).await;
    assert!(second.success, "{:?}", second.error);
    assert_eq!(second.text, "It is a tiny demo project.");
    let runs = agent.runs();
    assert_eq!(runs.len(), 2);
    assert!(!runs[0].0.contains(&"--resume".to_string()), "{:?}", runs[0].0);
    assert_eq!(
        runs[0].1, "[system]\nYou fix bugs.\n\n[user]\nList the files\n\n",
        "a fresh run gets the transcript"
    );
    assert_eq!(
        &runs[1].0[runs[1].0.len() - 2..],
        ["--resume", TOOL_USE_SESSION],
        "{:?}",
        runs[1].0
    );
    assert_eq!(runs[1].1, "And the README?", "only the new prompt");
    assert_eq!(agent.stored(), claude(PARTIAL_SESSION));

    // The agent's steps never reach a model as tool calls: they are text before the answer.
    let history = chat_history(&agent.transcript());
    assert!(
        history
            .iter()
            .all(|m| m.role != ChatRole::Tool && m.tool_calls.is_empty())
    );
    let roles: Vec<ChatRole> = history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            ChatRole::User,
            ChatRole::Assistant,
            ChatRole::User,
            ChatRole::Assistant
        ]
    );
    assert!(
        history[1].content.starts_with("[ran Bash {"),
        "{}",
        history[1].content
    );
    assert!(
        history[1].content.contains("[→ total 1976]"),
        "{}",
        history[1].content
    );
    assert!(
        history[1]
            .content
            .ends_with("\nHere are the files in the current directory.")
    );
    assert!(
        history[3]
            .content
            .starts_with("Let me read the README.\n[ran Read")
    );

    // A turn on another model: the agent never saw it, so its session is forgotten and the
    // next agent turn sends the transcript again.
    let other = agent.ask("Quick question", Some("sim/x")).await;
    assert!(other.success, "{:?}", other.error);
    assert_eq!(agent.stored(), None);
    let third = agent.ask("Back to you", None).await;
    assert!(third.success, "{:?}", third.error);
    let runs = agent.runs();
    assert!(!runs[2].0.contains(&"--resume".to_string()), "{:?}", runs[2].0);
    assert!(runs[2].1.contains("[user]\nQuick question"), "{}", runs[2].1);
}

#[tokio::test]
async fn a_session_the_agent_no_longer_knows_is_replaced_by_a_fresh_run() {
    let resume = [
        "--resume-fixture".to_string(),
        fixture("claude-resume-unknown.jsonl"),
        "--resume-exit".to_string(),
        "1".to_string(),
    ];
    let resume: Vec<&str> = resume.iter().map(String::as_str).collect();
    let mut agent = setup("claude-text.jsonl", &resume, claude("gone-session"));

    let turn = agent.ask("What is 2+2?", None).await;
    assert!(turn.success, "{:?}", turn.error);
    assert_eq!(turn.text, "4");
    let runs = agent.runs();
    assert_eq!(runs.len(), 2);
    assert_eq!(&runs[0].0[runs[0].0.len() - 2..], ["--resume", "gone-session"]);
    assert_eq!(runs[0].1, "What is 2+2?");
    assert!(!runs[1].0.contains(&"--resume".to_string()));
    assert_eq!(runs[1].1, "[system]\nYou fix bugs.\n\n[user]\nWhat is 2+2?\n\n");
    assert_eq!(agent.stored(), claude("1d1e46f9-35c7-4834-b529-846d5bb82288"));

    // The user is told, in the transcript and by a notice event.
    let notices: Vec<String> = agent
        .transcript()
        .into_iter()
        .filter(|m| m.role == MessageRole::Notice)
        .map(|m| m.text)
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("gone-session could not be resumed"),
        "{notices:?}"
    );
    assert!(
        agent.drain().iter().any(
            |e| matches!(&e.kind, EventKind::Notice { text, .. } if text.contains("could not be resumed"))
        )
    );
}

#[tokio::test]
async fn a_failed_agent_turn_keeps_its_steps_and_every_call_has_a_result() {
    // The stream is cut in the middle of the result line, after the call and its result, and
    // after the final text: the turn fails as truncated, the step is stored, and the answer
    // keeps what arrived.
    let cut = ["--cut".to_string(), "21".to_string()];
    let cut: Vec<&str> = cut.iter().map(String::as_str).collect();
    let agent = setup("claude-tool-use.jsonl", &cut, None);
    let turn = agent.ask("List the files", None).await;
    assert!(!turn.success);
    assert!(
        turn.error.as_deref().unwrap_or("").contains("truncated output"),
        "{:?}",
        turn.error
    );
    assert_eq!(turn.text, "Here are the files in the current directory.");
    let transcript = agent.transcript();
    let calls: usize = transcript.iter().map(|m| m.tool_calls.len()).sum();
    let results = transcript.iter().filter(|m| m.tool_result.is_some()).count();
    assert_eq!((calls, results), (1, 1));
    // The session id arrived before the cut: kept, so the next turn resumes.
    assert_eq!(agent.stored(), claude(TOOL_USE_SESSION));
}

/// A resumed agent is sent only the newest message: instructions it was not sent before (a
/// reflection's rules) go with it once, not with every later turn.
#[tokio::test]
async fn a_resumed_agent_gets_new_instructions_once_with_the_prompt() {
    let resume = ["--resume-fixture".to_string(), fixture("claude-partial.jsonl")];
    let resume: Vec<&str> = resume.iter().map(String::as_str).collect();
    let agent = setup("claude-tool-use.jsonl", &resume, claude(TOOL_USE_SESSION));
    let report = agent
        .engine
        .reflect_session(
            &agent.session_id,
            huddle::engine::ReflectionRequest {
                goal: "Fix the parser".into(),
                max_iterations: 2,
                evaluator_model: None,
                model_override: None,
            },
        )
        .await
        .expect("the reflection runs");
    assert_eq!(report.iterations, 2, "{report:?}");
    let runs = agent.runs();
    assert_eq!(runs.len(), 2);
    assert!(
        runs.iter()
            .all(|(argv, _)| argv.contains(&"--resume".to_string()))
    );
    assert!(
        runs[0].1.starts_with("## Reflection\n")
            && runs[0].1.contains("## Goal\nFix the parser")
            && runs[0].1.contains("Iteration: 1 of 2"),
        "{}",
        runs[0].1
    );
    assert!(
        !runs[1].1.contains("## Reflection")
            && !runs[1].1.contains("Fix the parser")
            && runs[1].1.starts_with("Iteration: 2 of 2"),
        "{}",
        runs[1].1
    );
}

/// A CLI agent runs its own tools: a post_tool_use hook sees each of its calls with the
/// result once its turn is over (before, huddle cannot hold them up), and an objection is
/// reported and written into the transcript.
#[tokio::test]
async fn a_post_tool_use_hook_sees_the_agents_own_calls_after_its_turn() {
    let mut agent = setup("claude-tool-use.jsonl", &[], None);
    let dir = agent.log.parent().expect("dir").to_path_buf();
    let hooks: huddle::hooks::Hooks = serde_yaml::from_str(&format!(
        "post_tool_use:\n  - matcher: Bash\n    command: [sh, -c, \"cat > {}/post.json; echo 'no ls here' >&2; exit 2\"]\n",
        dir.display()
    ))
    .expect("hooks");
    let id = agent.session_id.clone();
    agent
        .org
        .update(|o| o.session_mut(&id).expect("session").hooks = hooks);
    let turn = agent.ask("List the files", None).await;
    assert!(turn.success, "{:?}", turn.error);
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("post.json")).expect("input")).expect("json");
    assert_eq!(seen["hook_event_name"], "PostToolUse");
    assert_eq!(seen["tool_name"], "Bash");
    assert!(
        seen["tool_response"]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("total 1976"),
        "{seen}"
    );
    let events = agent.drain();
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::HookBlocked { hook_event, tool: Some(tool), reason, .. }
            if hook_event == "post_tool_use" && tool == "Bash" && reason == "no ls here"
    )));
    assert!(
        agent
            .transcript()
            .iter()
            .any(|m| m.text.contains("objected to the agent's `Bash`: no ls here"))
    );
}
