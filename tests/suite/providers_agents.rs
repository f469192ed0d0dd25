//! CLI agents through the real `command` provider: recordings of Claude Code, Codex and Gemini
//! CLI (`tests/fixtures/agents/`) replayed by a stand-in script. Text deltas, the agent's tool
//! steps, usage and cost, the session id, errors (auth, reported, a missing binary), a stream
//! cut in the middle of a JSON line, and resuming (the resume flag, only the new prompt, and a
//! fresh run with the transcript when the agent no longer knows the session).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use huddle::config::{Config, ProviderConfig, ProviderKind};
use huddle::model::{AgentFormat, AgentKind, Usage};
use huddle::providers::{
    AgentActivity, AgentActivitySink, ChatMessage, ErrorKind, Provider, ProviderError, TurnOutput,
    TurnRequest,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents")
}

pub fn fixture(name: &str) -> String {
    fixtures().join(name).display().to_string()
}

/// The stand-in agent: `python3 replay.py <options> --model {model}`.
pub fn replay_command(options: &[&str]) -> Vec<String> {
    let mut command = vec!["python3".to_string(), fixture("replay.py")];
    command.extend(options.iter().map(|o| o.to_string()));
    command.extend(["--model".to_string(), "{model}".to_string()]);
    command
}

fn provider(agent: AgentKind, options: &[&str]) -> Arc<dyn Provider> {
    let mut p = ProviderConfig::new("agent", ProviderKind::Command);
    p.agent = Some(agent);
    p.format = Some(agent.format());
    p.command = replay_command(options);
    let mut config = Config::default();
    config.providers.push(p);
    huddle::sim::providers(&config)
        .expect("providers")
        .get("agent")
        .expect("agent")
}

/// Every run the stand-in logged: its arguments and stdin.
pub fn runs(log: &Path) -> Vec<(Vec<String>, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("log line");
            let argv = v["argv"]
                .as_array()
                .expect("argv")
                .iter()
                .map(|a| a.as_str().unwrap_or_default().to_string())
                .collect();
            (argv, v["stdin"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

struct Replay {
    result: Result<TurnOutput, ProviderError>,
    deltas: Vec<String>,
    activity: Vec<AgentActivity>,
}

impl Replay {
    fn out(&self) -> &TurnOutput {
        self.result.as_ref().expect("the turn succeeds")
    }
    fn err(&self) -> &ProviderError {
        self.result.as_ref().expect_err("the turn fails")
    }
}

fn request(resume: Option<&str>) -> TurnRequest {
    let mut req = TurnRequest::new(
        "big-model",
        vec![
            ChatMessage::user("What is 2+2?"),
            ChatMessage::assistant("4"),
            ChatMessage::user("List the files"),
        ],
    );
    req.system = Some("Be brief.".into());
    req.agent_session_id = resume.map(str::to_string);
    req
}

async fn replay(p: &dyn Provider, mut req: TurnRequest) -> Replay {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    req.agent_activity = Some(AgentActivitySink::new(move |a| {
        log.lock().expect("activity").push(a);
    }));
    let mut deltas = Vec::new();
    let result = p
        .stream_turn(
            req,
            &mut |d: &str| deltas.push(d.to_string()),
            CancellationToken::new(),
        )
        .await;
    let activity = seen.lock().expect("activity").clone();
    Replay {
        result,
        deltas,
        activity,
    }
}

async fn play(agent: AgentKind, options: &[&str]) -> Replay {
    replay(provider(agent, options).as_ref(), request(None)).await
}

/// `usage` with `read` tokens read from and `write` written to the prompt cache.
fn cached(usage: Option<Usage>, read: u64, write: u64) -> Option<Usage> {
    usage.map(|u| Usage {
        cache_read_tokens: read,
        cache_write_tokens: write,
        ..u
    })
}

fn usage(input_tokens: u64, output_tokens: u64) -> Option<Usage> {
    Some(Usage::new(input_tokens, output_tokens))
}

#[tokio::test]
async fn claude_text_usage_cost_and_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("runs.jsonl");
    let log_arg = log.display().to_string();
    let r = play(
        AgentKind::Claude,
        &["--log", &log_arg, "--fixture", &fixture("claude-text.jsonl")],
    )
    .await;
    let out = r.out();
    assert_eq!(out.text, "4");
    assert_eq!(r.deltas.concat(), "4");
    // Input counts cache writes and reads too, and says which they were.
    assert_eq!(out.usage, cached(usage(10 + 21570, 25), 0, 21570));
    let agent = out.agent.as_ref().expect("agent report");
    assert_eq!(agent.cost_usd, Some(0.1354875));
    assert_eq!(
        agent.session_id.as_deref(),
        Some("1d1e46f9-35c7-4834-b529-846d5bb82288")
    );
    assert!(agent.steps.is_empty());
    assert!(!agent.resumed);
    assert_eq!(
        r.activity,
        [AgentActivity::Session(
            "1d1e46f9-35c7-4834-b529-846d5bb82288".into()
        )]
    );
    // A fresh run gets the whole conversation, labelled, and the model in its arguments.
    let runs = runs(&log);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].0, ["--model", "big-model"]);
    assert_eq!(
        runs[0].1,
        "[system]\nBe brief.\n\n[user]\nWhat is 2+2?\n\n[assistant]\n4\n\n[user]\nList the files\n\n"
    );
}

/// An agent's own cost is checked before it is counted: a negative figure would lower the run's
/// spending under its `max_cost_usd`, an absurd one would poison every total (review 27-A).
#[tokio::test]
async fn a_claude_cost_that_is_negative_or_absurd_is_dropped_or_clipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(fixture("claude-text.jsonl")).expect("fixture");
    for (figure, counted) in [
        ("-5.0", None),
        ("1e308", Some(huddle::model::MAX_REPORTED_TURN_USD)),
        ("0.25", Some(0.25)),
    ] {
        let recording = dir.path().join(format!("cost{figure}.jsonl"));
        std::fs::write(
            &recording,
            text.replace(
                "\"total_cost_usd\":0.1354875",
                &format!("\"total_cost_usd\":{figure}"),
            ),
        )
        .expect("write");
        let path = recording.display().to_string();
        let r = play(AgentKind::Claude, &["--fixture", &path]).await;
        let out = r.out();
        assert_eq!(out.text, "4", "{figure}");
        assert_eq!(out.agent.as_ref().expect("report").cost_usd, counted, "{figure}");
    }
}

#[tokio::test]
async fn claude_tool_use_becomes_a_step_with_its_result() {
    let r = play(
        AgentKind::Claude,
        &["--fixture", &fixture("claude-tool-use.jsonl")],
    )
    .await;
    let out = r.out();
    assert_eq!(out.text, "Here are the files in the current directory.");
    let agent = out.agent.as_ref().expect("agent report");
    assert_eq!(agent.steps.len(), 1);
    let step = &agent.steps[0];
    assert_eq!(step.call.id, "toolu_01BeipFBP3sUY3EAwVg3qQnE");
    assert_eq!(step.call.name, "Bash");
    let args: Value = serde_json::from_str(&step.call.arguments).expect("arguments JSON");
    assert_eq!(args["command"], "ls -la");
    assert!(step.result.starts_with("total 1976\n"), "{}", step.result);
    assert!(!step.is_error);
    assert_eq!(step.text, "");
    assert_eq!(agent.cost_usd, Some(0.24722425));
    assert_eq!(out.usage, cached(usage(18 + 25067 + 17254, 424), 17254, 25067));
    // Live: the session, then the call, then its result.
    let kinds: Vec<&str> = r
        .activity
        .iter()
        .map(|a| match a {
            AgentActivity::Session(_) => "session",
            AgentActivity::Call { .. } => "call",
            AgentActivity::Result { .. } => "result",
            AgentActivity::ResumeFailed(_) => "resume failed",
        })
        .collect();
    assert_eq!(kinds, ["session", "call", "result"]);
}

#[tokio::test]
async fn claude_partial_messages_stream_deltas_without_repeating_them() {
    let r = play(
        AgentKind::Claude,
        &["--fixture", &fixture("claude-partial.jsonl")],
    )
    .await;
    let out = r.out();
    assert_eq!(out.text, "It is a tiny demo project.");
    assert_eq!(
        r.deltas,
        ["Let me read ", "the README.", "It is a tiny ", "demo project."]
    );
    let agent = out.agent.as_ref().expect("agent report");
    assert_eq!(agent.steps.len(), 1);
    assert_eq!(agent.steps[0].text, "Let me read the README.");
    assert_eq!(agent.steps[0].call.name, "Read");
    assert_eq!(agent.steps[0].call.arguments, r#"{"file_path":"README.md"}"#);
    assert_eq!(agent.steps[0].result, "     1\t# demo\n     2\tA tiny project.");
    assert_eq!(out.usage, cached(usage(8 + 100 + 200, 49), 200, 100));
}

#[tokio::test]
async fn codex_text_usage_and_thread() {
    let r = play(AgentKind::Codex, &["--fixture", &fixture("codex-text.jsonl")]).await;
    let out = r.out();
    assert_eq!(
        out.text,
        r#"{"verdict":"reject","finding":"half(n) divides by zero; return n / 2 to compute half."}"#
    );
    assert_eq!(out.usage, usage(14995, 35));
    let agent = out.agent.as_ref().expect("agent report");
    assert_eq!(
        agent.session_id.as_deref(),
        Some("01a08703-a850-75c2-af27-6e3fd775a0e6")
    );
    assert_eq!(agent.cost_usd, None);
}

#[tokio::test]
async fn codex_commands_and_file_changes_are_steps() {
    let r = play(AgentKind::Codex, &["--fixture", &fixture("codex-tool-use.jsonl")]).await;
    let out = r.out();
    assert_eq!(
        out.text,
        "The command printed `hello_world` and I created newfile.txt."
    );
    let steps = &out.agent.as_ref().expect("agent report").steps;
    let summary: Vec<(&str, &str, &str, bool)> = steps
        .iter()
        .map(|s| {
            (
                s.text.as_str(),
                s.call.name.as_str(),
                s.result.as_str(),
                s.is_error,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "Running `echo hello_world` in the shell.",
                "shell",
                "hello_world\n",
                false
            ),
            ("", "apply_patch", "add /tmp/codex-tool-test/newfile.txt", false),
        ]
    );
    assert_eq!(
        steps[0].call.arguments,
        r#"{"command":"/bin/bash -lc 'echo hello_world'"}"#
    );
    assert_ne!(steps[0].call.id, steps[1].call.id);
    assert!(steps[0].call.id.starts_with("item_1-"), "{}", steps[0].call.id);
    // `cached_input_tokens` is a part of `input_tokens`.
    assert_eq!(out.usage, cached(usage(23839, 145), 16384, 0));
    // The step text streamed before the call, then the answer.
    assert_eq!(
        r.deltas.concat(),
        format!("Running `echo hello_world` in the shell.{}", out.text)
    );
}

#[tokio::test]
async fn gemini_deltas_tool_use_usage_and_session() {
    let r = play(
        AgentKind::Gemini,
        &["--fixture", &fixture("gemini-tool-use.jsonl")],
    )
    .await;
    let out = r.out();
    assert_eq!(out.text, "Here are the files.");
    let agent = out.agent.as_ref().expect("agent report");
    assert_eq!(agent.session_id.as_deref(), Some("test-session-123"));
    assert_eq!(agent.steps.len(), 1);
    assert_eq!(agent.steps[0].text, "I will list the files.");
    assert_eq!(agent.steps[0].call.name, "run_shell_command");
    assert_eq!(agent.steps[0].call.arguments, r#"{"command":"ls"}"#);
    assert_eq!(agent.steps[0].result, "file1.ts\nfile2.ts");
    assert_eq!(out.usage, usage(26928, 87));
}

#[tokio::test]
async fn auth_failures_are_auth_errors_for_every_agent() {
    let cases = [
        (
            AgentKind::Claude,
            vec!["--fixture", "claude-auth.jsonl", "--exit", "1"],
            "Invalid API key",
        ),
        (
            AgentKind::Codex,
            vec!["--fixture", "codex-auth.jsonl", "--exit", "1"],
            "401 Unauthorized",
        ),
        (
            AgentKind::Gemini,
            vec!["--fixture", "gemini-auth.jsonl", "--exit", "144"],
            "API_KEY_INVALID",
        ),
        // Gemini CLI without any credentials prints nothing and exits 41.
        (
            AgentKind::Gemini,
            vec![
                "--exit",
                "41",
                "--stderr",
                "Please set an Auth method in your settings.json",
            ],
            "Auth method",
        ),
    ];
    for (agent, options, said) in cases {
        let options: Vec<String> = options
            .iter()
            .map(|o| {
                if o.ends_with(".jsonl") {
                    fixture(o)
                } else {
                    o.to_string()
                }
            })
            .collect();
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        let r = play(agent, &options).await;
        let err = r.err();
        assert_eq!(err.kind, ErrorKind::Auth, "{agent:?}: {err}");
        assert!(err.message.contains(said), "{agent:?}: {err}");
        assert!(err.message.contains("not logged in"), "{agent:?}: {err}");
        assert!(err.message.starts_with("provider `agent`"), "{err}");
    }
}

#[tokio::test]
async fn an_error_result_and_a_non_zero_exit_fail_with_the_agents_words() {
    // Claude's error result (here: asked to resume a session it does not know, without huddle
    // having asked for a resume).
    let r = play(
        AgentKind::Claude,
        &[
            "--fixture",
            &fixture("claude-resume-unknown.jsonl"),
            "--exit",
            "1",
        ],
    )
    .await;
    let err = r.err();
    assert_eq!(err.kind, ErrorKind::Process);
    assert!(
        err.message
            .contains("`claude` reported an error (it exited with status 1): No conversation found"),
        "{err}"
    );
    // A crash before any JSON: the end of stderr is quoted.
    let r = play(
        AgentKind::Codex,
        &["--exit", "2", "--stderr", "thread 'main' panicked at boom"],
    )
    .await;
    let err = r.err();
    assert_eq!(err.kind, ErrorKind::Process);
    assert!(err.message.contains("exited with status 2"), "{err}");
    assert!(err.message.contains("panicked at boom"), "{err}");
}

#[tokio::test]
async fn a_stream_cut_in_a_json_line_is_truncated_output_for_every_format() {
    for (agent, name) in [
        (AgentKind::Claude, "claude-tool-use.jsonl"),
        (AgentKind::Codex, "codex-tool-use.jsonl"),
        (AgentKind::Gemini, "gemini-tool-use.jsonl"),
    ] {
        // The last line (the result) loses its end: 20 bytes and the newline.
        let r = play(agent, &["--fixture", &fixture(name), "--cut", "21"]).await;
        let err = r.err();
        assert_eq!(err.kind, ErrorKind::Truncated, "{agent:?}: {err}");
        assert!(err.message.contains("truncated output"), "{err}");
        // The whole partial line is dropped, never parsed.
        let text = std::fs::read_to_string(fixture(name)).expect("fixture");
        let last = text.lines().last().expect("a last line").len();
        assert!(
            err.message
                .contains(&format!("middle of a JSON line ({} bytes discarded)", last - 20)),
            "{err}"
        );
        // What arrived before the cut was shown and is kept.
        assert!(
            !err.partial_text.is_empty() || !r.activity.is_empty(),
            "{agent:?}"
        );
    }
    // Exiting 0 without the result line at all is truncated too.
    let r = play(
        AgentKind::Gemini,
        &["--fixture", &fixture("gemini-tool-use.jsonl"), "--cut", "1"],
    )
    .await;
    assert_eq!(
        r.out().text,
        "Here are the files.",
        "a last line without newline is whole"
    );
}

#[tokio::test]
async fn a_cut_line_after_the_result_line_is_harmless_and_stray_lines_are_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recording = dir.path().join("cut-after-result.jsonl");
    let mut bytes = b"Loading...\n".to_vec();
    bytes.extend(std::fs::read(fixture("claude-text.jsonl")).expect("fixture"));
    bytes.extend_from_slice(b"{\"type\":\"rate_limit_ev");
    std::fs::write(&recording, bytes).expect("write");
    let path = recording.display().to_string();
    let r = play(AgentKind::Claude, &["--fixture", &path]).await;
    assert_eq!(r.out().text, "4");
}

#[tokio::test]
async fn exiting_without_a_result_line_is_truncated_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let recording = dir.path().join("no-result.jsonl");
    let text = std::fs::read_to_string(fixture("codex-tool-use.jsonl")).expect("fixture");
    let without: Vec<&str> = text.lines().filter(|l| !l.contains("turn.completed")).collect();
    std::fs::write(&recording, without.join("\n") + "\n").expect("write");
    let path = recording.display().to_string();
    let r = play(AgentKind::Codex, &["--fixture", &path]).await;
    let err = r.err();
    assert_eq!(err.kind, ErrorKind::Truncated, "{err}");
    assert!(err.message.contains("exited without its result line"), "{err}");
}

#[tokio::test]
async fn a_missing_agent_binary_is_named() {
    let mut p = ProviderConfig::new("claude-work", ProviderKind::Command);
    p.agent = Some(AgentKind::Claude);
    p.format = Some(AgentFormat::ClaudeStreamJson);
    p.command = vec!["huddle-no-such-claude".into(), "-p".into()];
    let mut config = Config::default();
    config.providers.push(p);
    let provider = huddle::sim::providers(&config)
        .expect("providers")
        .get("claude-work")
        .expect("provider");
    let r = replay(provider.as_ref(), request(None)).await;
    let err = r.err();
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(
        err.message
            .starts_with("`huddle-no-such-claude` is not installed or not on PATH (provider `claude-work`)"),
        "{err}"
    );
}

#[tokio::test]
async fn resuming_sends_the_flag_and_only_the_new_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (agent, name, expected_tail) in [
        (
            AgentKind::Claude,
            "claude-text.jsonl",
            vec!["--model", "big-model", "--resume", "S-1"],
        ),
        (
            AgentKind::Gemini,
            "gemini-tool-use.jsonl",
            vec!["--model", "big-model", "--resume", "S-1"],
        ),
        (
            AgentKind::Codex,
            "codex-text.jsonl",
            vec!["--model", "big-model", "resume", "S-1", "-"],
        ),
    ] {
        let log = dir.path().join(format!("{name}.log"));
        let log_arg = log.display().to_string();
        let p = provider(agent, &["--log", &log_arg, "--fixture", &fixture(name)]);
        let r = replay(p.as_ref(), request(Some("S-1"))).await;
        assert!(r.out().agent.as_ref().expect("report").resumed);
        let runs = runs(&log);
        assert_eq!(runs.len(), 1, "{agent:?}");
        assert_eq!(runs[0].0, expected_tail, "{agent:?}");
        assert_eq!(runs[0].1, "List the files", "{agent:?}: only the new prompt");
    }
}

#[tokio::test]
async fn an_unknown_session_falls_back_to_a_fresh_run_with_the_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: [(AgentKind, Vec<String>); 3] = [
        (
            AgentKind::Claude,
            vec![
                "--fixture".into(),
                fixture("claude-text.jsonl"),
                "--resume-fixture".into(),
                fixture("claude-resume-unknown.jsonl"),
                "--resume-exit".into(),
                "1".into(),
            ],
        ),
        (
            AgentKind::Codex,
            vec![
                "--fixture".into(),
                fixture("codex-text.jsonl"),
                "--resume-fixture".into(),
                String::new(),
                "--resume-exit".into(),
                "1".into(),
                "--resume-stderr".into(),
                "Error: No saved session found with ID S-1".into(),
            ],
        ),
        (
            AgentKind::Gemini,
            vec![
                "--fixture".into(),
                fixture("gemini-tool-use.jsonl"),
                "--resume-fixture".into(),
                String::new(),
                "--resume-exit".into(),
                "42".into(),
                "--resume-stderr".into(),
                "Error resuming session: Invalid session identifier \"S-1\".".into(),
            ],
        ),
    ];
    for (agent, options) in cases {
        let log = dir.path().join(format!("{agent:?}.log"));
        let mut all = vec!["--log".to_string(), log.display().to_string()];
        all.extend(options);
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let r = replay(provider(agent, &all).as_ref(), request(Some("S-1"))).await;
        let out = r.out();
        let report = out.agent.as_ref().expect("report");
        assert!(report.resume_failed.is_some(), "{agent:?}");
        assert!(
            r.activity
                .iter()
                .any(|a| matches!(a, AgentActivity::ResumeFailed(t) if t.contains("S-1"))),
            "{agent:?}: {:?}",
            r.activity
        );
        let runs = runs(&log);
        assert_eq!(runs.len(), 2, "{agent:?}: the resume, then a fresh run");
        assert!(runs[0].0.contains(&"S-1".to_string()), "{agent:?}");
        assert!(!runs[1].0.contains(&"S-1".to_string()), "{agent:?}");
        assert!(
            runs[1]
                .1
                .starts_with("[system]\nBe brief.\n\n[user]\nWhat is 2+2?"),
            "{agent:?}: the fresh run gets the transcript: {}",
            runs[1].1
        );
        // The session the fresh run reported is the one to keep.
        assert_ne!(report.session_id.as_deref(), Some("S-1"));
    }
}

#[test]
fn agent_presets_fill_command_and_format_from_config() {
    let config = Config::parse(
        "providers:\n  - { name: claude, kind: command, agent: claude }\n  - { name: cx, kind: command, agent: codex, command: [my-codex, exec, --json, \"-\"] }\n  - { name: plain, kind: command, command: [cat], format: gemini-stream-json }\n",
        Path::new("c.yaml"),
    )
    .expect("config");
    let claude = config.provider("claude").expect("claude");
    assert_eq!(claude.command, AgentKind::Claude.command());
    assert_eq!(claude.output_format(), AgentFormat::ClaudeStreamJson);
    assert_eq!(claude.models, ["sonnet", "opus", "haiku"]);
    let cx = config.provider("cx").expect("cx");
    assert_eq!(cx.command[0], "my-codex", "a given command is kept");
    assert_eq!(cx.output_format(), AgentFormat::CodexJson);
    assert_eq!(
        config.provider("plain").expect("plain").output_format(),
        AgentFormat::GeminiStreamJson
    );
}

#[test]
fn agent_keys_are_checked() {
    let parse = |yaml: &str| Config::parse(yaml, Path::new("/cfg/config.yaml")).map(|_| ());
    let err = parse("providers:\n  - { name: c, kind: command, command: [x], format: json }\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("providers[0].format"), "{err}");
    assert!(err.contains("claude-stream-json"), "{err}");
    let err = parse("providers:\n  - { name: c, kind: command, agent: aider }\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("providers[0].agent"), "{err}");
    assert!(err.contains("codex"), "{err}");
    let err = parse("providers:\n  - { name: o, kind: openai, format: codex-json }\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("providers[0].format: only a provider of kind command"),
        "{err}"
    );
    let err = parse("providers:\n  - { name: o, kind: anthropic, agent: claude }\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("providers[0].agent"), "{err}");
}
