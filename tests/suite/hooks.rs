//! Hooks around real tool calls (the reference `mcp-server-time`, run sandboxed as configured
//! servers are) of a session on the fake LLM server: a `pre_tool_use` hook that exits 2 blocks
//! the call and the model receives its reason; one that asks puts the call to the approval
//! broker (denied by `huddle run`'s rule); a `post_tool_use` hook sees the call and its result;
//! a hanging hook is stopped at its time limit and blocks nothing; a `turn_finished` hook's
//! objection lands in the transcript.

use std::time::Duration;

use huddle::config::Config;
use huddle::engine::events::{EngineEvent, EventKind};
use huddle::engine::{Engine, EngineOptions, EventSink};
use huddle::hooks::Hooks;
use huddle::model::{Group, GroupKind, Organization, Session, reconcile};
use huddle::sandbox::Baseline;
use huddle::store::{OrgHandle, Transcripts};
use huddle::tools::mcp::McpServerConfig;
use huddle::tools::{Approval, ApprovalPolicy};
use tokio::sync::mpsc::UnboundedReceiver;

use super::engine_fixture::{config_for, fast_providers};
use super::fake_llm_server::{FakeLlm, Reply};
use super::mcp_servers::reference_server;

const MODEL: &str = "hooked";

struct Hooked {
    server: FakeLlm,
    engine: Engine,
    events: UnboundedReceiver<EngineEvent>,
    session_id: String,
    /// The session's working directory (hooks run and may write there).
    work: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// A session on `openai/hooked` working in a temp dir, with the time server (sandboxed, calls
/// run without asking) and `hooks` (YAML) from config.yaml.
async fn hooked(hooks_yaml: &str, approval: ApprovalPolicy) -> Option<Hooked> {
    let time = reference_server("HUDDLE_MCP_TIME", "mcp-server-time")?;
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().canonicalize().expect("canonical").join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let hooks_yaml = hooks_yaml.replace("{work}", &work.display().to_string());
    let hooks: Hooks = serde_yaml::from_str(&hooks_yaml).expect("hooks yaml");
    hooks.validate("hooks").expect("valid hooks");
    let server = FakeLlm::start().await;
    let config: Config = config_for(&server);
    let mut time_server = McpServerConfig::stdio([time.display().to_string()]);
    time_server.approval = Approval::Auto;
    let servers = [("time".to_string(), time_server)].into_iter().collect();
    let baseline = Baseline::default();
    let toolbox = huddle::tools::mcp::toolbox(&servers, &work, &baseline);

    let mut session = Session::new("timer", "", format!("openai/{MODEL}"));
    session.tools = vec!["time".into()];
    let (engine, events, session_id) = one_session(
        &config,
        session,
        &work,
        dir.path(),
        EngineOptions {
            tools: toolbox,
            approval,
            sandbox: baseline,
            hooks,
            ..EngineOptions::default()
        },
    );
    Some(Hooked {
        server,
        engine,
        events,
        session_id,
        work,
        _dir: dir,
    })
}

/// An engine with one `session`, in a repository group, working in `work` (transcripts under
/// `root`): the engine, its events and the session's id.
pub(super) fn one_session(
    config: &Config,
    mut session: Session,
    work: &std::path::Path,
    root: &std::path::Path,
    options: EngineOptions,
) -> (Engine, UnboundedReceiver<EngineEvent>, String) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let group = Group::new("tools", GroupKind::Repo);
    session.group_id = group.id.clone();
    session.repo = Some(work.to_path_buf());
    let session_id = session.id.clone();
    org.groups.push(group);
    org.sessions.push(session);
    let (sink, events) = EventSink::channel();
    let engine = Engine::new(
        fast_providers(config),
        OrgHandle::in_memory(org),
        Transcripts::new(root.join("sessions")),
        sink,
        options,
    );
    (engine, events, session_id)
}

/// The `hook_blocked` events: (hook event, tool, reason).
pub(super) fn blocked(events: &[EventKind]) -> Vec<(String, Option<String>, String)> {
    events
        .iter()
        .filter_map(|k| match k {
            EventKind::HookBlocked {
                hook_event,
                tool,
                reason,
                ..
            } => Some((hook_event.clone(), tool.clone(), reason.clone())),
            _ => None,
        })
        .collect()
}

impl Hooked {
    /// One turn: the model asks the time in UTC, then says `done`.
    async fn ask_the_time(&mut self) -> Vec<EventKind> {
        self.server.script(
            MODEL,
            vec![
                Reply::tool_call("call_time", "time__get_current_time", r#"{"timezone": "UTC"}"#),
                Reply::text("done"),
            ],
        );
        let turn = self.engine.ask(&self.session_id, "What time is it?".into(), None);
        let result = tokio::time::timeout(Duration::from_secs(120), turn)
            .await
            .expect("the turn hung")
            .expect("the turn runs");
        assert!(result.success, "{result:?}");
        self.engine.shutdown_tools().await;
        let mut kinds = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            kinds.push(e.kind);
        }
        kinds
    }

    /// What the model got back for the call, as the fake server recorded the second request.
    fn result_the_model_saw(&self) -> String {
        let requests = self.server.requests_for(MODEL);
        assert_eq!(requests.len(), 2, "a call, then the answer");
        let results = requests[1].tool_results();
        assert_eq!(results.len(), 1, "{results:?}");
        assert_eq!(results[0].call_id, "call_time");
        results[0].content.clone()
    }
}

#[tokio::test]
async fn a_pre_tool_use_hook_that_exits_2_blocks_a_real_call_and_the_model_gets_the_reason() {
    let Some(mut h) = hooked(
        "pre_tool_use:\n  - matcher: \"time__.*\"\n    command: [sh, -c, \"cat > {work}/pre.json; echo 'no clocks on Sundays' >&2; exit 2\"]\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    let events = h.ask_the_time().await;
    let seen = h.result_the_model_saw();
    assert!(
        seen.starts_with("blocked by hook `sh -c cat > ") && seen.ends_with(": no clocks on Sundays"),
        "{seen}"
    );
    assert!(!seen.contains("datetime"), "the tool did not run: {seen}");
    assert_eq!(
        blocked(&events),
        [(
            "pre_tool_use".to_string(),
            Some("time__get_current_time".to_string()),
            "no clocks on Sundays".to_string()
        )]
    );
    // The hook saw the call as Claude Code's hooks do.
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.work.join("pre.json")).expect("input"))
            .expect("json");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "time__get_current_time");
    assert_eq!(input["tool_input"]["timezone"], "UTC");
    assert_eq!(input["tool_use_id"], "call_time");
    assert_eq!(input["session"], "timer");
}

/// Review 26-2, finding 4: a hook's deny whose reason reads like the sandbox's words is the
/// hook's, not the (sandboxed) server's: no `sandbox_denied` for a call that never ran.
#[tokio::test]
async fn a_hook_deny_quoting_a_read_only_file_system_is_no_sandbox_denial() {
    let Some(mut h) = hooked(
        "pre_tool_use:\n  - matcher: \"time__.*\"\n    command: [sh, -c, \"echo 'cannot log: Read-only file system' >&2; exit 2\"]\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    let events = h.ask_the_time().await;
    assert!(
        h.engine
            .sandbox_label(&h.session_id)
            .is_some_and(|l| l.starts_with("sandbox: workspace-write")),
        "the time server runs sandboxed: {:?}",
        h.engine.sandbox_label(&h.session_id)
    );
    assert!(
        h.result_the_model_saw()
            .ends_with(": cannot log: Read-only file system")
    );
    assert!(
        events.iter().any(|k| matches!(k, EventKind::HookBlocked { .. })),
        "{events:?}"
    );
    let denied: Vec<&EventKind> = events
        .iter()
        .filter(|k| matches!(k, EventKind::SandboxDenied { .. }))
        .collect();
    assert!(denied.is_empty(), "{denied:?}");
}

/// Review 26-2, finding 16: a guard hook that cannot run lets the call through (reported), unless
/// it says `on_error: deny`: then the call is refused, and the model is told why.
#[tokio::test]
async fn a_guard_that_cannot_run_denies_the_call_with_on_error_deny() {
    let Some(mut h) = hooked(
        "pre_tool_use:\n  - command: [huddle-no-such-guard-xyz]\n    on_error: deny\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    let events = h.ask_the_time().await;
    let seen = h.result_the_model_saw();
    assert!(
        seen.starts_with("blocked by hook `huddle-no-such-guard-xyz`: the guard hook could not run, and it denies what it cannot check (on_error: deny): hook `huddle-no-such-guard-xyz` failed: "),
        "{seen}"
    );
    assert!(events.iter().any(|k| matches!(k, EventKind::HookFailed { .. })));
    assert!(events.iter().any(|k| matches!(k, EventKind::HookBlocked { .. })));
}

#[tokio::test]
async fn a_hook_that_asks_goes_to_the_approval_broker_which_never_defaults_to_allow() {
    let Some(mut h) = hooked(
        "pre_tool_use:\n  - command: [sh, -c, \"echo '{\\\"hookSpecificOutput\\\": {\\\"permissionDecision\\\": \\\"ask\\\", \\\"permissionDecisionReason\\\": \\\"which zone?\\\"}}'\"]\n",
        ApprovalPolicy::DenyAll,
    )
    .await
    else {
        return;
    };
    let events = h.ask_the_time().await;
    // The server's rule is `auto`, yet the hook's ask is put to the front end, which (as
    // `huddle run` without --approve-tools) denies.
    let seen = h.result_the_model_saw();
    assert_eq!(seen, huddle::tools::approval::DENIED_HEADLESS);
    assert!(events.iter().any(|k| matches!(
        k,
        EventKind::ToolApprovalDecided {
            decision: huddle::tools::Decision::Deny,
            ..
        }
    )));
}

#[tokio::test]
async fn a_post_tool_use_hook_receives_the_call_and_its_result() {
    let Some(mut h) = hooked(
        "post_tool_use:\n  - matcher: time__get_current_time\n    command: [sh, -c, \"cat > {work}/post.json\"]\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    h.ask_the_time().await;
    let seen = h.result_the_model_saw();
    assert!(seen.contains("\"timezone\": \"UTC\""), "the tool ran: {seen}");
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.work.join("post.json")).expect("input"))
            .expect("json");
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_name"], "time__get_current_time");
    assert_eq!(input["tool_input"]["timezone"], "UTC");
    assert_eq!(input["tool_response"]["is_error"], false);
    let said = input["tool_response"]["text"].as_str().unwrap_or_default();
    assert_eq!(said, seen, "the hook saw what the model got");
}

#[tokio::test]
async fn a_hanging_hook_is_stopped_at_its_time_limit_and_blocks_nothing() {
    let Some(mut h) = hooked(
        "pre_tool_use:\n  - command: [sleep, \"300\"]\n    timeout_secs: 1\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    let events = h.ask_the_time().await;
    let seen = h.result_the_model_saw();
    assert!(seen.contains("\"timezone\": \"UTC\""), "the call went on: {seen}");
    let failed: Vec<String> = events
        .iter()
        .filter_map(|k| match k {
            EventKind::HookFailed { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(failed, ["hook `sleep 300` timed out after 1s and was stopped"]);
}

#[tokio::test]
async fn a_turn_finished_hook_sees_the_answer_and_its_objection_is_in_the_transcript() {
    let Some(mut h) = hooked(
        "turn_finished:\n  - command: [sh, -c, \"cat > {work}/turn.json; echo 'tests fail: 2 of 40' >&2; exit 2\"]\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    let events = h.ask_the_time().await;
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.work.join("turn.json")).expect("input"))
            .expect("json");
    assert_eq!(input["hook_event_name"], "TurnFinished");
    assert_eq!(input["last_assistant_message"], "done");
    let notices: Vec<String> = events
        .iter()
        .filter_map(|k| match k {
            EventKind::Notice { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with("turn_finished hook `sh -c cat > ")
            && notices[0].ends_with("` objected: tests fail: 2 of 40"),
        "{notices:?}"
    );
    let transcript = h.engine.load_transcript(&h.session_id).expect("transcript");
    assert!(
        transcript
            .messages
            .iter()
            .any(|m| m.text.contains("objected: tests fail: 2 of 40")),
        "the reason is in the transcript"
    );
}

/// The team's tests as an iteration_finished hook: what they print (here a failing run, exit
/// 1) goes into the evaluator's request beside the synthesis of the workers' results; the hook
/// saw those results.
#[tokio::test]
async fn an_iteration_finished_hooks_output_reaches_the_evaluators_request() {
    use super::engine_fixture::{EVAL, ORCH, team};
    let f = team(huddle::model::Mode::OrchestratorReflect, &["alpha"], true, 1).await;
    let repo = f.dir.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    let hooks: Hooks = serde_yaml::from_str(
        "iteration_finished:\n  - command: [sh, -c, \"cat > results.json; echo 'TESTS: 41 passed, 1 failed (test_login)'; exit 1\"]\n",
    )
    .expect("hooks");
    f.org.update(|o| {
        let g = o.group_mut(&f.group_id).expect("group");
        g.repo = Some(repo.clone());
        g.hooks = hooks;
    });
    f.server.script(
        ORCH,
        vec![
            Reply::text("Plan.\n@worker:alpha\nFix the login.\n@end\n"),
            Reply::text("Synthesis: the login is fixed."),
        ],
    );
    f.server
        .script("w-alpha", vec![Reply::text("I fixed the login form validation.")]);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.4\nRATIONALE: a test fails")]);
    let report = f.run("Fix the login").await;
    assert!(report.failed.is_none(), "{:?}", report.failed);
    let asked = f.prompts(EVAL);
    assert_eq!(asked.len(), 1);
    let request = &asked[0];
    for said in [
        "## Checks run after this iteration",
        "(it exited with status 1)",
        "TESTS: 41 passed, 1 failed (test_login)",
        "Synthesis: the login is fixed.",
    ] {
        assert!(
            request.contains(said),
            "`{said}` in the evaluator's request:\n{request}"
        );
    }
    let seen: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("results.json")).expect("input"))
            .expect("json");
    assert_eq!(seen["hook_event_name"], "IterationFinished");
    assert_eq!(seen["iteration"], 1);
    assert_eq!(seen["results"][0]["text"], "I fixed the login form validation.");
    assert!(
        seen["results"][0]["member"]
            .as_str()
            .unwrap_or_default()
            .ends_with("alpha")
    );
}

/// Review 26-2 finding 10: in a team whose workers have worktrees the checks run where the
/// work is: once in each worktree of a worker of the iteration (not in the unchanged
/// repository), each one's output labelled with the member for the evaluator, its input
/// naming the worktree.
#[tokio::test]
async fn iteration_finished_hooks_run_in_each_workers_worktree() {
    use super::engine_fixture::{EVAL, ORCH, team};
    let f = team(
        huddle::model::Mode::OrchestratorReflect,
        &["alpha", "beta"],
        true,
        1,
    )
    .await;
    let root = f.dir.path().canonicalize().expect("canonical");
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    let hooks: Hooks = serde_yaml::from_str(
        "iteration_finished:\n  - command: [sh, -c, \"cat > input.json; pwd > where.txt; echo CHECKED-$(basename \\\"$PWD\\\")\"]\n",
    )
    .expect("hooks");
    let trees: Vec<std::path::PathBuf> = ["alpha", "beta"]
        .iter()
        .map(|w| {
            let path = root.join(format!("wt-{w}"));
            std::fs::create_dir_all(&path).expect("worktree dir");
            path
        })
        .collect();
    f.org.update(|o| {
        let g = o.group_mut(&f.group_id).expect("group");
        g.repo = Some(repo.clone());
        g.hooks = hooks;
        for s in o
            .sessions
            .iter_mut()
            .filter(|s| s.name.ends_with("alpha") || s.name.ends_with("beta"))
        {
            let which = if s.name.ends_with("alpha") { 0 } else { 1 };
            s.worktree = Some(huddle::model::Worktree {
                path: trees[which].clone(),
                branch: format!("huddle/t-{}", if which == 0 { "alpha" } else { "beta" }),
                base_commit: "0".repeat(40),
                repo: repo.clone(),
                subdir: None,
            });
        }
    });
    f.server.script(
        ORCH,
        vec![
            Reply::text("Plan.\n@worker:alpha\nFix the login.\n@end\n@worker:beta\nFix the logout.\n@end\n"),
            Reply::text("Synthesis: both fixed."),
        ],
    );
    f.server.script("w-alpha", vec![Reply::text("Login fixed.")]);
    f.server.script("w-beta", vec![Reply::text("Logout fixed.")]);
    f.server
        .script(EVAL, vec![Reply::text("SCORE: 0.9\nRATIONALE: fine")]);
    let report = f.run("Fix the session code").await;
    assert!(report.failed.is_none(), "{:?}", report.failed);
    assert!(
        !repo.join("where.txt").exists(),
        "the checks ran in the repository"
    );
    for (tree, member) in trees.iter().zip(["alpha", "beta"]) {
        let ran_in = std::fs::read_to_string(tree.join("where.txt")).expect("the hook ran in the worktree");
        assert_eq!(ran_in.trim(), tree.display().to_string());
        let input: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(tree.join("input.json")).expect("input"))
                .expect("json");
        assert_eq!(input["worktree"]["path"], tree.display().to_string(), "{input}");
        assert_eq!(input["results"].as_array().map(Vec::len), Some(2), "{input}");
        let request = &f.prompts(EVAL)[0];
        assert!(
            request.contains(&format!(
                "In the worktree of `{member}` (branch `huddle/t-{member}`)"
            )),
            "{request}"
        );
        assert!(request.contains(&format!("CHECKED-wt-{member}")), "{request}");
    }
}

/// Review of issue 26, finding 9: a hook can read the transcript its input names, though the
/// sandbox hides huddle's data directory (here: a private /tmp hides it).
#[tokio::test]
async fn a_hook_can_read_its_sessions_transcript() {
    let Some(mut h) = hooked(
        "turn_finished:\n  - command: [python3, -c, \"import json,sys; d=json.load(sys.stdin); open('{work}/seen.txt','w').write(open(d['transcript_path']).read())\"]\n",
        ApprovalPolicy::ApproveAll,
    )
    .await
    else {
        return;
    };
    let events = h.ask_the_time().await;
    let failed: Vec<&EventKind> = events
        .iter()
        .filter(|k| matches!(k, EventKind::HookFailed { .. }))
        .collect();
    assert!(failed.is_empty(), "{failed:?}");
    let seen = std::fs::read_to_string(h.work.join("seen.txt")).expect("the hook wrote what it read");
    assert!(seen.contains("What time is it?"), "{seen}");
}

/// `huddle run --preset` of a team whose members get worktrees: a `worktree_created` hook runs
/// once in each new worktree (sandboxed as its member, which may write there), before the
/// team runs, and is told the worktree's path, branch, base commit and repository.
/// A data dir (`home`) whose config.yaml is `config` and which has the preset `Hooked Team`
/// (broadcast, two workers, each in its own worktree), and a repository with one commit; the
/// commit's hash.
struct WorktreeTeam {
    _tmp: tempfile::TempDir,
    home: std::path::PathBuf,
    repo: std::path::PathBuf,
    head: String,
}

impl WorktreeTeam {
    fn new(config: &str) -> WorktreeTeam {
        let tmp = tempfile::tempdir().expect("temp dir");
        let (home, repo) = (tmp.path().join("home"), tmp.path().join("repo"));
        std::fs::create_dir_all(home.join("presets")).expect("home");
        std::fs::create_dir_all(&repo).expect("repo");
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
                .arg(&repo)
                .args(args)
                .output()
                .expect("git");
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "hello\n").expect("readme");
        git(&["add", "-A"]);
        git(&["commit", "-qm", "first"]);
        let head = git(&["rev-parse", "HEAD"]);
        std::fs::write(home.join("config.yaml"), config).expect("config");
        std::fs::write(
            home.join("presets/hooked.yaml"),
            "name: Hooked Team\nmode: broadcast\nworktrees: fully_isolated\nworkers:\n  - { name: alpha }\n  - { name: beta }\n",
        )
        .expect("preset");
        WorktreeTeam {
            _tmp: tmp,
            home,
            repo,
            head,
        }
    }

    /// `huddle ARGS` in the repository (its host gone when this returns).
    fn huddle(&self, args: &[&str]) -> std::process::Output {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_huddle"))
            .args(args)
            .env("HUDDLE_HOME", &self.home)
            .env(super::headless::HOST_IDLE_VAR, "0")
            .current_dir(&self.repo)
            .output()
            .expect("run huddle");
        super::headless::wait_for_host_exit(&self.home);
        out
    }
}

#[test]
fn a_worktree_created_hook_runs_in_each_new_worktree_and_is_told_which() {
    let team = WorktreeTeam::new(
        "default_model: sim/demo\nhooks:\n  worktree_created:\n    - command: [sh, -c, \"cat > worktree-created.json\"]\n",
    );
    let (home, repo, head) = (&team.home, &team.repo, &team.head);
    let out = team.huddle(&["run", "--preset", "Hooked Team", "--events", "hello"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events = String::from_utf8_lossy(&out.stdout);
    assert!(!events.contains("\"hook_failed\""), "{events}");

    // Every worktree the team got (under the data dir), each with what its hook was told.
    let mut seen = Vec::new();
    let mut dirs = vec![home.join("worktrees")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.join(".git").is_file() {
                seen.push(path);
            } else if path.is_dir() {
                dirs.push(path);
            }
        }
    }
    assert_eq!(seen.len(), 2, "a worktree per member: {seen:?}");
    for worktree in &seen {
        let said = std::fs::read_to_string(worktree.join("worktree-created.json"))
            .unwrap_or_else(|e| panic!("no hook ran in {}: {e}", worktree.display()));
        let input: serde_json::Value = serde_json::from_str(&said).expect("json");
        assert_eq!(input["hook_event_name"], "WorktreeCreated", "{input}");
        let told = &input["worktree"];
        assert_eq!(
            std::fs::canonicalize(told["path"].as_str().unwrap_or_default()).ok(),
            std::fs::canonicalize(worktree).ok(),
            "{input}"
        );
        assert!(
            told["branch"].as_str().is_some_and(|b| b.starts_with("huddle/")),
            "{input}"
        );
        assert_eq!(told["base_commit"], head.as_str(), "{input}");
        assert_eq!(
            std::fs::canonicalize(told["repo"].as_str().unwrap_or_default()).ok(),
            std::fs::canonicalize(repo).ok(),
            "{input}"
        );
    }
}

/// Review 26-2, finding 3: `worktree_created` hooks that fail (before the run starts) are shown
/// by `huddle run` (served by the host): an event each with `--events`, a `!` line each on
/// stderr without; and they are kept in the run's file, so `huddle trace` shows them too.
#[test]
fn failing_worktree_created_hooks_are_shown_by_huddle_run_and_kept_with_its_run() {
    let team = WorktreeTeam::new(
        "default_model: sim/demo\nhooks:\n  worktree_created:\n    - command: [sh, -c, \"echo wtc-fails >&2; exit 7\"]\n",
    );
    let out = team.huddle(&["run", "--preset", "Hooked Team", "--events", "hello"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let failed = |text: &str| -> usize {
        text.lines()
            .filter(|l| {
                l.contains("\"hook_failed\"") && l.contains("worktree_created") && l.contains("wtc-fails")
            })
            .count()
    };
    let events = String::from_utf8_lossy(&out.stdout);
    assert_eq!(failed(&events), 2, "a hook_failed per worktree: {events}");

    let out = team.huddle(&["run", "--preset", "Hooked Team", "hello"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("worktree_created") && l.contains("wtc-fails"))
        .collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(lines.iter().all(|l| l.trim_start().starts_with("! ")), "{stderr}");

    // Each run's file has them (two runs, two worktrees each).
    let mut files = vec![team.home.join("runs")];
    let mut kept = 0;
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(
                std::fs::read_dir(&path)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path()),
            );
        } else {
            kept += failed(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    assert_eq!(kept, 4, "hook_failed lines in the run files");
    let name = super::headless::team_made_by_run(&team.home, "Hooked Team");
    let trace = team.huddle(&["trace", "--group", &name]);
    let shown = String::from_utf8_lossy(&trace.stdout);
    assert_eq!(
        shown
            .lines()
            .filter(|l| l.contains("worktree_created") && l.contains("wtc-fails"))
            .count(),
        2,
        "{shown}{}",
        String::from_utf8_lossy(&trace.stderr)
    );
}
