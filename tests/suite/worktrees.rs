//! Team worktrees with real git in temporary repositories: each strategy's worktrees and
//! branches, a worker's `command` agent writing in its own worktree only (and told where it is),
//! `cwd: session` MCP servers running in each session's worktree, diff, merge and cherry-pick
//! (clean, and conflicting: aborted, the repository exactly as before), deleting a team with
//! dirty / unmerged / clean worktrees, an orphan left by a crash and a worktree removed by hand
//! reported after a restart, and `huddle worktrees list|diff|merge|remove` through the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use huddle::config::{Config, Paths};
use huddle::engine::RunOverrides;
use huddle::model::{Organization, Preset, Role, Tier, Worktree, WorktreeStrategy, reconcile};
use huddle::store::{OrgHandle, OrganizationFile, StoreNotice};
use huddle::tools::ApprovalPolicy;
use huddle::workspace::{Edits, Workspace, WorktreeChoice};
use huddle::worktrees::{self, ChangeKind, MergeMethod, WorktreeError};

use super::headless::text;

/// A temporary home (data and config) and a git repository with one commit.
struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    paths: Paths,
}

/// Runs git in `dir` (commits with a fixed identity); panics with its stderr on failure.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-C"])
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        text(&out.stderr)
    );
    text(&out.stdout).trim().to_string()
}

fn commit_all(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("temp dir");
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&repo).expect("repo");
    git(&repo, &["init", "-q", "-b", "main"]);
    // huddle's own merge commits need an identity; the repository has one, as a user's would.
    git(&repo, &["config", "user.name", "Repo Owner"]);
    git(&repo, &["config", "user.email", "owner@example.com"]);
    std::fs::write(repo.join("README.md"), "hello\nsecond line\n").expect("readme");
    commit_all(&repo, "first");
    Env {
        paths: Paths::single(home.clone()),
        home,
        repo,
        _tmp: tmp,
    }
}

fn config(extra: &str) -> Config {
    Config::parse(
        &format!("default_model: sim/demo\n{extra}"),
        Path::new("config.yaml"),
    )
    .expect("config")
}

fn preset(text: &str, config: &Config) -> Preset {
    huddle::presets::parse_preset(text, Path::new("team.yaml"), Tier::User, config).expect("preset")
}

const TEAM: &str = "name: Crew\nmode: orchestrator_reflect\norchestrator: {}\nevaluator: {}\nworkers:\n  - { name: implementer }\n  - { name: tester }\n";

/// Edits of an in-memory organization (nothing runs), making worktrees under the home.
fn edits(e: &Env, config: &Config) -> Edits {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    Edits::detached(OrgHandle::in_memory(org), config.clone(), e.repo.clone())
        .with_worktrees_root(e.paths.worktrees_dir())
}

/// A home, a repository, and the `TEAM` crew made there with `strategy`.
fn crew(strategy: WorktreeStrategy) -> (Env, Config, Edits, String) {
    let e = env();
    let config = config("");
    let ed = edits(&e, &config);
    let gid = ed
        .create_team_with(&preset(TEAM, &config), strategy)
        .expect("team made");
    (e, config, ed, gid)
}

fn session_worktree(edits: &Edits, name: &str) -> Worktree {
    edits
        .view()
        .read(|o| {
            o.sessions
                .iter()
                .find(|s| s.name == name)
                .and_then(|s| s.worktree.clone())
        })
        .unwrap_or_else(|| panic!("{name} has no worktree"))
}

fn branches(repo: &Path) -> Vec<String> {
    let mut list: Vec<String> = git(
        repo,
        &["for-each-ref", "--format=%(refname:short)", "refs/heads/huddle/"],
    )
    .lines()
    .map(str::to_string)
    .collect();
    list.sort();
    list
}

fn registered(repo: &Path) -> Vec<PathBuf> {
    git(repo, &["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .map(PathBuf::from)
        .collect()
}

fn status(dir: &Path) -> String {
    git(dir, &["status", "--porcelain"])
}

#[test]
fn each_strategy_makes_its_worktrees_on_new_branches_from_head() {
    let e = env();
    let config = config("");
    let head = git(&e.repo, &["rev-parse", "HEAD"]);
    let cases = [
        (WorktreeStrategy::Shared, 0),
        (WorktreeStrategy::GroupShared, 1),
        (WorktreeStrategy::OrchestratorIsolated, 2),
        (WorktreeStrategy::FullyIsolated, 3),
    ];
    let ed = edits(&e, &config);
    let mut made = 0;
    for (strategy, expected) in cases {
        let gid = ed
            .create_team_with(&preset(TEAM, &config), strategy)
            .expect("team made");
        let org = ed.view().read(Organization::clone);
        let group = org.group(&gid).unwrap();
        assert_eq!(group.worktrees, strategy);
        let members = org.sessions_in(&gid);
        let trees = worktrees::distinct(members.iter().filter_map(|s| s.worktree.as_ref()));
        assert_eq!(trees.len(), expected, "{strategy}");
        made += expected;
        let slug = huddle::naming::team_slug(&group.name);
        for w in &trees {
            assert!(w.path.is_dir(), "{}", w.path.display());
            assert!(
                w.path.starts_with(e.paths.worktrees_dir()),
                "under the data dir: {}",
                w.path.display()
            );
            assert!(
                w.branch.starts_with(&format!("huddle/{slug}-")),
                "{} for team {slug}",
                w.branch
            );
            assert_eq!(w.path.file_name().unwrap().to_str(), Some(w.label()));
            assert_eq!(w.base_commit, head);
            assert_eq!(git(&w.path, &["rev-parse", "HEAD"]), head);
            assert_eq!(git(&w.path, &["symbolic-ref", "--short", "HEAD"]), w.branch);
            assert!(registered(&e.repo).iter().any(|p| p == &w.path));
        }
        // Who shares what.
        let tree_of = |role: Role, name: &str| {
            members
                .iter()
                .find(|s| s.role == role && s.name.ends_with(name))
                .and_then(|s| s.worktree.clone())
                .map(|w| w.path)
        };
        let orchestrator = tree_of(Role::Orchestrator, "orchestrator");
        let evaluator = tree_of(Role::Evaluator, "evaluator");
        let implementer = tree_of(Role::Worker, "implementer");
        let tester = tree_of(Role::Worker, "tester");
        match strategy {
            WorktreeStrategy::Shared => {
                assert!(members.iter().all(|s| s.worktree.is_none()));
                let working = members[0].working_dir(Some(group));
                assert_eq!(working.as_deref(), Some(e.repo.as_path()));
            }
            WorktreeStrategy::GroupShared => {
                assert!(orchestrator.is_some() && orchestrator == implementer && implementer == tester);
                assert_eq!(evaluator, orchestrator);
                assert!(trees[0].branch.contains("-team-"), "{}", trees[0].branch);
            }
            WorktreeStrategy::OrchestratorIsolated => {
                assert_eq!(
                    evaluator, orchestrator,
                    "the evaluator judges with the orchestrator"
                );
                assert!(implementer == tester && implementer != orchestrator);
            }
            WorktreeStrategy::FullyIsolated => {
                assert_eq!(evaluator, orchestrator);
                assert!(implementer != tester && implementer != orchestrator && tester != orchestrator);
                assert!(trees.iter().any(|w| w.branch.contains("-implementer-")));
            }
        }
        for s in &members {
            if let Some(w) = &s.worktree {
                assert_eq!(s.working_dir(Some(group)), Some(w.path.clone()));
            }
        }
    }
    assert_eq!(branches(&e.repo).len(), made);
    assert_eq!(status(&e.repo), "", "the repository itself is untouched");
}

#[test]
fn making_worktrees_outside_a_repository_or_without_a_commit_says_why_and_makes_nothing() {
    let e = env();
    let config = config("");
    let plain = e.home.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let org = OrgHandle::in_memory(Organization::default());
    let ed = Edits::detached(org.clone(), config.clone(), plain.clone())
        .with_worktrees_root(e.paths.worktrees_dir());
    let err = ed
        .create_team_with(&preset(TEAM, &config), WorktreeStrategy::FullyIsolated)
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not inside a git repository"), "{err}");
    assert!(org.read(|o| o.groups.is_empty()), "no team recorded");

    let empty = e.home.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    git(&empty, &["init", "-q"]);
    let ed = Edits::detached(org.clone(), config.clone(), empty).with_worktrees_root(e.paths.worktrees_dir());
    let err = ed
        .create_team_with(&preset(TEAM, &config), WorktreeStrategy::GroupShared)
        .unwrap_err()
        .to_string();
    assert!(err.contains("has no commit yet"), "{err}");
    assert!(
        !e.paths.worktrees_dir().exists() || std::fs::read_dir(e.paths.worktrees_dir()).unwrap().count() == 0
    );

    // A detached HEAD is fine: the worktrees start at its commit.
    let head = git(&e.repo, &["rev-parse", "HEAD"]);
    git(&e.repo, &["checkout", "-q", "--detach"]);
    let ed = edits(&e, &config);
    ed.create_team_with(&preset(TEAM, &config), WorktreeStrategy::GroupShared)
        .expect("made from a detached HEAD");
    let w = session_worktree(&ed, "crew-implementer");
    assert_eq!(w.base_commit, head);
}

/// A `command` agent: saves the prompt it was given into the directory it runs in and says where.
const AGENT: &str = "cat > agent-prompt.txt\nprintf 'wrote in %s\\n' \"$PWD\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn each_workers_command_agent_writes_in_its_own_worktree_and_is_told_where_it_is() {
    let e = env();
    let script = e.home.join("agent.sh");
    std::fs::write(&script, AGENT).unwrap();
    let config = config(&format!(
        "providers:\n  - {{ name: agent, kind: command, command: [sh, \"{}\"] }}\n",
        script.display()
    ));
    let team = preset(
        "name: Builders\nmode: orchestrator\nworktrees: fully_isolated\norchestrator: {}\nworkers:\n  - { name: implementer, model: agent/x }\n  - { name: tester, model: agent/x }\n",
        &config,
    );
    let mut ws =
        Workspace::open(&e.paths, &config, e.repo.clone(), ApprovalPolicy::DenyAll).expect("workspace");
    let gid = ws.edits.create_team_with(&team, team.worktrees).expect("team");
    let report = ws
        .engine
        .run_group(&gid, "Add a greeting".into(), RunOverrides::default())
        .await
        .expect("run");
    assert!(report.failed.is_none(), "{:?}", report.failed);
    while ws.events.try_recv().is_ok() {}
    let implementer = session_worktree(&ws.edits, "builders-implementer");
    let tester = session_worktree(&ws.edits, "builders-tester");
    let orchestrator = session_worktree(&ws.edits, "builders-orchestrator");
    for (mine, other) in [(&implementer, &tester), (&tester, &implementer)] {
        let written =
            std::fs::read_to_string(mine.path.join("agent-prompt.txt")).expect("the agent wrote here");
        assert!(
            written.contains(&format!(
                "You are in your own git worktree at {}",
                mine.path.display()
            )),
            "{written}"
        );
        assert!(
            written.contains(&format!("on branch `{}`", mine.branch)),
            "{written}"
        );
        assert!(
            written.contains("other members have their own worktrees"),
            "{written}"
        );
        assert!(
            !written.contains(&other.branch),
            "a worker is not told the others' branches"
        );
        assert_eq!(status(&mine.path), "?? agent-prompt.txt");
    }
    assert!(
        !e.repo.join("agent-prompt.txt").exists(),
        "nothing in the repository"
    );
    assert!(!orchestrator.path.join("agent-prompt.txt").exists());
    assert_eq!(status(&e.repo), "");
    // The lead hears of the workers' branches.
    let org = ws.org.read(Organization::clone);
    let lead = org.session_by_name("builders-orchestrator").unwrap();
    let note = huddle::engine::protocol::system_prompt_with_note(&org, lead).unwrap();
    assert!(
        note.contains(&implementer.branch) && note.contains(&tester.branch),
        "{note}"
    );
}

/// A stdio MCP server (no SDK) whose one tool, `where`, answers with its working directory; it
/// appends `start <cwd>` to `$STATE/log` when it starts.
const WHERE_SERVER: &str = r#"
import json, os, sys
state = sys.argv[1]
with open(os.path.join(state, "log"), "a") as f:
    f.write("start " + os.getcwd() + "\n")
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": m["params"]["protocolVersion"],
              "capabilities": {"tools": {}}, "serverInfo": {"name": "where", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [{"name": "where",
              "description": "Says where the server runs", "inputSchema": {"type": "object", "properties": {}}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "cwd=" + os.getcwd()}]}})
    elif rid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no method"}})
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn cwd_session_servers_run_once_per_worktree_and_sessions_reach_their_own() {
    let e = env();
    let script = e.home.join("where.py");
    std::fs::write(&script, WHERE_SERVER).unwrap();
    let state = e.home.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let config = config(&format!(
        "mcp_servers:\n  here: {{ command: [python3, \"{}\", \"{}\"], cwd: session, approval: auto, timeout_secs: 30, sandbox: {{ allow_write: [\"{}\"] }} }}\n",
        script.display(),
        state.display(),
        state.display()
    ));
    let team = preset(
        "name: Movers\nmode: orchestrator\nworktrees: fully_isolated\norchestrator: {}\nworkers:\n  - { name: implementer, tools: [here] }\n  - { name: tester, tools: [here] }\n",
        &config,
    );
    let ws = Workspace::open(&e.paths, &config, e.repo.clone(), ApprovalPolicy::DenyAll).expect("workspace");
    let gid = ws.edits.create_team_with(&team, team.worktrees).expect("team");
    let org = ws.org.read(Organization::clone);
    let mut seen = Vec::new();
    for name in ["movers-implementer", "movers-tester", "movers-implementer"] {
        let s = org.session_by_name(name).unwrap();
        let answer = ws
            .engine
            .ask(&s.id, "Where do you work? Use your tools.".into(), None)
            .await
            .expect("turn");
        let dir = s.working_dir(org.group(&gid)).unwrap();
        let canonical = std::fs::canonicalize(&dir).unwrap();
        assert!(
            answer.text.contains(&format!("cwd={}", canonical.display())),
            "{name}: {}",
            answer.text
        );
        seen.push(canonical);
    }
    assert_ne!(seen[0], seen[1]);
    ws.engine.shutdown_tools().await;
    let log = std::fs::read_to_string(state.join("log")).unwrap();
    let starts: Vec<&str> = log.lines().collect();
    assert_eq!(starts.len(), 2, "one server per worktree, reused: {log}");

    // Without a session (doctor) it runs in the repository; a `cwd: repo` server is shared.
    let source = huddle::tools::mcp::McpSource::new("shared", config.mcp_servers["here"].clone(), &e.repo);
    use huddle::tools::ToolSource;
    assert!(source.per_session());
    let listed = source.list(None).await.expect("listed");
    assert_eq!(listed[0].name, "where");
    let mut repo_cfg = config.mcp_servers["here"].clone();
    repo_cfg.cwd = Some("repo".into());
    let shared = huddle::tools::mcp::McpSource::new("shared", repo_cfg, &e.repo);
    for dir in [&seen[0], &seen[1]] {
        let out = shared
            .call("where", serde_json::Map::new(), Some(dir), Default::default())
            .await
            .expect("called");
        assert!(
            out.text
                .ends_with(&*e.repo.canonicalize().unwrap().to_string_lossy()),
            "{}",
            out.text
        );
    }
    source.shutdown().await;
    shared.shutdown().await;
    let log = std::fs::read_to_string(state.join("log")).unwrap();
    assert_eq!(log.lines().count(), 4, "{log}");
}

#[test]
fn a_diff_shows_committed_uncommitted_and_new_files_and_a_merge_brings_the_commits_back() {
    let (e, _config, ed, _gid) = crew(WorktreeStrategy::FullyIsolated);
    let w = session_worktree(&ed, "crew-implementer");
    std::fs::write(w.path.join("feature.rs"), "pub fn greet() {}\n").unwrap();
    commit_all(&w.path, "Add greet");
    std::fs::write(w.path.join("README.md"), "hello\nsecond line\nthird line\n").unwrap();
    std::fs::write(w.path.join("notes.txt"), "not added yet\n").unwrap();

    let d = worktrees::diff(&w).unwrap();
    let files: Vec<(char, &str)> = d
        .files
        .iter()
        .map(|f| (f.kind.letter(), f.path.as_str()))
        .collect();
    assert_eq!(
        files,
        [('M', "README.md"), ('A', "feature.rs"), ('?', "notes.txt")]
    );
    assert!(d.patch.contains("+pub fn greet() {}"), "{}", d.patch);
    assert!(d.patch.contains("+third line"), "{}", d.patch);
    assert!(d.patch.contains("+not added yet"), "{}", d.patch);
    assert!(!d.truncated);
    assert_eq!(d.files[2].kind, ChangeKind::Untracked);

    let st = worktrees::status(&w).unwrap();
    assert_eq!((st.changes, st.ahead, st.unmerged), (2, 1, 1));
    assert!(st.has_work());
    assert!(
        st.describe()
            .contains("2 uncommitted changes, 1 commit ahead, unmerged"),
        "{}",
        st.describe()
    );

    let plan = worktrees::merge_plan(&w).unwrap();
    assert_eq!(plan.into.as_deref(), Some("main"));
    assert_eq!(plan.commits.len(), 1);
    assert_eq!(plan.commits[0].summary, "Add greet");
    assert_eq!(plan.uncommitted, 2);
    assert_eq!(plan.blocked, None);
    assert!(plan.describe().contains("Add greet"), "{}", plan.describe());
    let before = git(&e.repo, &["rev-parse", "HEAD"]);
    let done = worktrees::merge(&plan, MergeMethod::Merge).unwrap();
    assert_eq!(done.old_head, before);
    assert_eq!(git(&e.repo, &["rev-parse", "HEAD"]), done.new_head);
    assert_eq!(git(&e.repo, &["rev-list", "--count", "--merges", "HEAD"]), "1");
    assert!(e.repo.join("feature.rs").exists());
    assert_eq!(
        std::fs::read_to_string(e.repo.join("README.md")).unwrap(),
        "hello\nsecond line\n",
        "uncommitted changes stay in the worktree"
    );
    assert_eq!(status(&e.repo), "");
    let st = worktrees::status(&w).unwrap();
    assert_eq!((st.ahead, st.unmerged), (1, 0), "merged now");
    assert!(
        worktrees::merge(&worktrees::merge_plan(&w).unwrap(), MergeMethod::Merge)
            .unwrap_err()
            .to_string()
            .contains("nothing to merge")
    );

    // Cherry-pick: the tester's two commits, copied in order, no merge commit.
    let t = session_worktree(&ed, "crew-tester");
    std::fs::write(t.path.join("test_a.rs"), "a\n").unwrap();
    commit_all(&t.path, "Test a");
    std::fs::write(t.path.join("test_b.rs"), "b\n").unwrap();
    commit_all(&t.path, "Test b");
    let before = git(&e.repo, &["rev-parse", "HEAD"]);
    let plan = worktrees::merge_plan(&t).unwrap();
    assert_eq!(
        plan.commits
            .iter()
            .map(|c| c.summary.as_str())
            .collect::<Vec<_>>(),
        ["Test b", "Test a"],
        "newest first, as git log"
    );
    let done = worktrees::merge(&plan, MergeMethod::CherryPick).unwrap();
    assert_eq!(done.commits, 2);
    assert_eq!(git(&e.repo, &["rev-parse", "HEAD~2"]), before);
    assert_eq!(git(&e.repo, &["log", "-1", "--format=%s"]), "Test b");
    assert!(git(&e.repo, &["log", "-1", "--format=%b"]).contains("cherry picked from commit"));
    assert_eq!(
        worktrees::status(&t).unwrap().unmerged,
        0,
        "its changes are on main"
    );
}

#[test]
fn a_conflict_is_aborted_and_the_repository_is_exactly_as_before() {
    let (e, _config, ed, _gid) = crew(WorktreeStrategy::FullyIsolated);
    let w = session_worktree(&ed, "crew-implementer");
    std::fs::write(w.path.join("README.md"), "hello from the worker\nsecond line\n").unwrap();
    commit_all(&w.path, "Worker greeting");
    std::fs::write(e.repo.join("README.md"), "hello from main\nsecond line\n").unwrap();
    let head = commit_all(&e.repo, "Main greeting");
    std::fs::write(e.repo.join("untracked.txt"), "mine\n").unwrap();

    for method in [MergeMethod::Merge, MergeMethod::CherryPick] {
        let plan = worktrees::merge_plan(&w).unwrap();
        let err = worktrees::merge(&plan, method).unwrap_err();
        let WorktreeError::Conflict { files, into, .. } = &err else {
            panic!("{method:?}: expected a conflict, got {err}");
        };
        assert_eq!(files, &["README.md"]);
        assert_eq!(into, "main");
        assert!(
            err.to_string()
                .contains("aborted and the repository is exactly as before")
        );
        assert_eq!(git(&e.repo, &["rev-parse", "HEAD"]), head, "{method:?}");
        assert_eq!(status(&e.repo), "?? untracked.txt", "{method:?}");
        assert_eq!(
            std::fs::read_to_string(e.repo.join("README.md")).unwrap(),
            "hello from main\nsecond line\n"
        );
        let git_dir = e.repo.join(".git");
        for leftover in ["MERGE_HEAD", "CHERRY_PICK_HEAD", "sequencer"] {
            assert!(!git_dir.join(leftover).exists(), "{method:?}: {leftover}");
        }
    }

    // Refused before anything happens: the repository has changes, or moved since the plan.
    std::fs::write(e.repo.join("README.md"), "edited\n").unwrap();
    let plan = worktrees::merge_plan(&w).unwrap();
    assert!(
        plan.blocked.as_deref().unwrap().contains("uncommitted changes"),
        "{:?}",
        plan.blocked
    );
    let err = worktrees::merge(&plan, MergeMethod::Merge)
        .unwrap_err()
        .to_string();
    assert!(err.contains("commit or stash them first"), "{err}");
    git(&e.repo, &["checkout", "-q", "--", "README.md"]);
    let stale = worktrees::merge_plan(&w).unwrap();
    std::fs::write(e.repo.join("other.txt"), "x\n").unwrap();
    commit_all(&e.repo, "Main moves on");
    let err = worktrees::merge(&stale, MergeMethod::Merge)
        .unwrap_err()
        .to_string();
    assert!(err.contains("changed since the commits were listed"), "{err}");
    git(&e.repo, &["checkout", "-q", "--detach"]);
    let plan = worktrees::merge_plan(&w).unwrap();
    assert!(plan.blocked.as_deref().unwrap().contains("detached HEAD"));
}

#[test]
fn deleting_a_team_removes_clean_worktrees_and_keeps_those_with_work_unless_told() {
    let e = env();
    let config = config("");
    let team = preset(
        "name: Crew\nmode: orchestrator\norchestrator: {}\nworkers:\n  - { name: implementer }\n  - { name: tester }\n  - { name: reviewer }\n",
        &config,
    );
    let ed = edits(&e, &config);
    let gid = ed
        .create_team_with(&team, WorktreeStrategy::FullyIsolated)
        .unwrap();
    let dirty = session_worktree(&ed, "crew-implementer");
    let unmerged = session_worktree(&ed, "crew-tester");
    let clean = [
        session_worktree(&ed, "crew-reviewer"),
        session_worktree(&ed, "crew-orchestrator"),
    ];
    std::fs::write(dirty.path.join("wip.rs"), "half done\n").unwrap();
    std::fs::write(unmerged.path.join("t.rs"), "test\n").unwrap();
    commit_all(&unmerged.path, "A test");
    // A merged commit is not work at risk.
    std::fs::write(clean[0].path.join("r.md"), "review\n").unwrap();
    commit_all(&clean[0].path, "Review notes");
    git(&e.repo, &["merge", "-q", "--no-edit", &clean[0].branch]);

    let mut risky = ed.worktrees_at_risk(&gid);
    risky.sort_by(|a, b| a.worktree.branch.cmp(&b.worktree.branch));
    let described: Vec<(String, String)> = risky
        .iter()
        .map(|r| (r.sessions.join(","), r.why.clone()))
        .collect();
    assert_eq!(
        described,
        [
            ("crew-implementer".to_string(), "1 uncommitted change".to_string()),
            ("crew-tester".to_string(), "1 unmerged commit".to_string())
        ]
    );

    let asked = ed.describe_delete_group(&gid).unwrap();
    assert!(asked.contains("and its 4 git worktree(s)"), "{asked}");
    let shown = ed.worktree_statuses(Some(&gid));
    assert_eq!(shown.len(), 4);
    let implementer = shown.iter().find(|s| s.session == "crew-implementer").unwrap();
    assert_eq!(implementer.status.as_ref().unwrap().changes, 1);
    let removal = ed.delete_group(&gid).unwrap();
    assert_eq!(removal.worktrees.len(), 4);
    assert_eq!(
        removal.worktrees_with_work,
        WorktreeChoice::Keep,
        "keeping is the default"
    );
    let report = ed.remove_files(&removal);
    assert!(report.failed.is_empty(), "{:?}", report.failed);
    let mut removed: Vec<&str> = report
        .removed
        .iter()
        .map(|r| r.worktree.branch.as_str())
        .collect();
    removed.sort();
    let mut expected: Vec<&str> = clean.iter().map(|w| w.branch.as_str()).collect();
    expected.sort();
    assert_eq!(removed, expected, "only the clean ones without a choice");
    for w in &clean {
        assert!(!w.path.exists());
    }
    assert_eq!(branches(&e.repo), {
        let mut b = vec![dirty.branch.clone(), unmerged.branch.clone()];
        b.sort();
        b
    });
    assert!(dirty.path.join("wip.rs").exists() && unmerged.path.join("t.rs").exists());
    let kept: Vec<&str> = report.kept.iter().map(|(_, why)| why.as_str()).collect();
    assert!(
        kept.contains(&"1 uncommitted change") && kept.contains(&"1 unmerged commit"),
        "{kept:?}"
    );

    // Kept worktrees are reported (not recorded any more) until removed.
    let org = ed.view().read(Organization::clone);
    let found = worktrees::reconcile(&e.paths.worktrees_dir(), &org, std::slice::from_ref(&e.repo));
    assert_eq!(found.findings.len(), 2, "{:?}", found.lines());

    // The same with the explicit choice to remove: everything goes.
    let gid = ed
        .create_team_with(&team, WorktreeStrategy::FullyIsolated)
        .unwrap();
    let w = session_worktree(&ed, "crew-implementer");
    std::fs::write(w.path.join("wip.rs"), "x\n").unwrap();
    let mut removal = ed.delete_group(&gid).unwrap();
    removal.worktrees_with_work = WorktreeChoice::Remove;
    let report = ed.remove_files(&removal);
    assert_eq!(report.removed.len(), 4);
    assert!(report.kept.is_empty() && report.failed.is_empty());
    assert_eq!(
        report.removed.iter().filter(|r| r.discarded.is_some()).count(),
        1,
        "the one with work says what was thrown away"
    );
    assert!(!w.path.exists());
}

#[test]
fn removing_one_worktree_refuses_work_unless_forced_and_never_touches_what_huddle_did_not_make() {
    let (e, _config, ed, gid) = crew(WorktreeStrategy::OrchestratorIsolated);
    let workers = session_worktree(&ed, "crew-tester");
    std::fs::write(workers.path.join("wip.rs"), "x\n").unwrap();
    let id = ed
        .view()
        .read(|o| o.session_by_name("crew-tester").unwrap().id.clone());
    let err = ed.remove_worktree(&id, false).unwrap_err().to_string();
    assert!(
        err.contains("nothing was removed") && err.contains("1 uncommitted change"),
        "{err}"
    );
    assert!(workers.path.exists());
    let removed = ed.remove_worktree(&id, true).unwrap();
    assert_eq!(removed.discarded.as_deref(), Some("1 uncommitted change"));
    assert!(!workers.path.exists());
    // Both workers shared it: both work in the repository now.
    for name in ["crew-tester", "crew-implementer"] {
        let s = ed.view().read(|o| o.session_by_name(name).unwrap().clone());
        assert_eq!(s.worktree, None, "{name}");
        assert_eq!(s.working_dir(None), Some(e.repo.clone()));
    }

    // A record pointing outside the worktrees folder, or at a branch huddle did not make, is
    // refused before git is asked anything.
    let root = e.paths.worktrees_dir();
    let mut forged = session_worktree(&ed, "crew-orchestrator");
    forged.path = e.repo.clone();
    let err = worktrees::remove(&root, &forged, true).unwrap_err().to_string();
    assert!(err.contains("not inside huddle's worktrees folder"), "{err}");
    let mut forged = session_worktree(&ed, "crew-orchestrator");
    forged.branch = "main".into();
    let err = worktrees::remove(&root, &forged, true).unwrap_err().to_string();
    assert!(err.contains("not a branch huddle made"), "{err}");
    let mut forged = session_worktree(&ed, "crew-orchestrator");
    forged.path = root.join("../repo");
    assert!(worktrees::remove(&root, &forged, true).is_err());
    assert!(e.repo.join("README.md").exists());
    assert!(git(&e.repo, &["branch", "--list", "main"]).contains("main"));

    let removed = ed.remove_group_worktrees(&gid, false).unwrap();
    assert_eq!(removed.len(), 1);
    assert!(ed.view().read(|o| o.group(&gid).unwrap().worktrees.is_shared()));
    assert!(branches(&e.repo).is_empty());
}

#[test]
fn after_a_restart_an_orphan_from_a_crash_and_a_worktree_removed_by_hand_are_reported_not_deleted() {
    let e = env();
    let config = config("");
    let ws = Workspace::open(&e.paths, &config, e.repo.clone(), ApprovalPolicy::DenyAll).unwrap();
    assert!(ws.notices.is_empty(), "{:?}", ws.notices);
    let gid = ws
        .edits
        .create_team_with(&preset(TEAM, &config), WorktreeStrategy::FullyIsolated)
        .unwrap();
    let gone = session_worktree(&ws.edits, "crew-tester");

    // What a crash between `git worktree add` and the save leaves: a worktree no record names.
    let head = worktrees::repo_head(&e.repo).unwrap();
    let org = ws.org.read(Organization::clone);
    let plan = worktrees::plan_team(
        &org,
        &gid,
        WorktreeStrategy::GroupShared,
        &worktrees::repo_dir(&e.paths.worktrees_dir(), &head.toplevel),
        || "dead".to_string(),
    );
    let orphan = worktrees::create_worktrees(&head, &plan).unwrap().remove(0);
    // And a branch whose folder is gone too.
    git(&e.repo, &["branch", "huddle/lost-team-workers-beef"]);
    ws.engine.flush().unwrap();
    drop(ws);

    // Removed by hand.
    std::fs::remove_dir_all(&gone.path).unwrap();

    let ws = Workspace::open(&e.paths, &config, e.repo.clone(), ApprovalPolicy::DenyAll).unwrap();
    let notices: Vec<String> = ws
        .notices
        .iter()
        .filter(|n| matches!(n, StoreNotice::Worktree(_)))
        .map(ToString::to_string)
        .collect();
    assert_eq!(notices.len(), 3, "{notices:#?}");
    assert!(ws.notices.iter().all(StoreNotice::is_serious));
    let joined = notices.join("\n");
    assert!(
        joined.contains(&format!(
            "the worktree of crew-tester is gone: {}",
            gone.path.display()
        )),
        "{joined}"
    );
    assert!(
        joined.contains(&format!(
            "a worktree no session records: {}, branch {}",
            orphan.path.display(),
            orphan.branch
        )),
        "{joined}"
    );
    assert!(
        joined.contains("a branch no session records: huddle/lost-team-workers-beef"),
        "{joined}"
    );
    // Nothing was deleted.
    assert!(orphan.path.is_dir());
    assert!(branches(&e.repo).contains(&orphan.branch));
    assert!(branches(&e.repo).contains(&gone.branch));
    drop(ws);

    // `huddle doctor` says the same and counts them as problems.
    let report = huddle::doctor::report(&e.paths, &e.repo, false);
    assert!(!report.ok, "{}", report.text);
    assert!(
        report.problems.contains(&"3 worktrees need a look".to_string()),
        "{:?}",
        report.problems
    );
    assert!(
        report.text.contains(&orphan.path.display().to_string()),
        "{}",
        report.text
    );
}

// ---- the binary ------------------------------------------------------------------------------

fn huddle(e: &Env, args: &[&str]) -> Output {
    huddle_in(e, args, Stdio::null())
}

fn huddle_in(e: &Env, args: &[&str], stdin: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(args)
        .env("HUDDLE_HOME", &e.home)
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(&e.repo)
        .stdin(stdin)
        .output()
        .expect("run huddle")
}

fn saved(e: &Env) -> Organization {
    OrganizationFile::new(e.paths.organization_file())
        .inspect()
        .unwrap()
        .unwrap()
}

fn saved_worktree(e: &Env, name: &str) -> Worktree {
    saved(e)
        .session_by_name(name)
        .and_then(|s| s.worktree.clone())
        .unwrap_or_else(|| panic!("{name} has no worktree"))
}

/// `huddle run --preset PRESET --model sim/x [extra] Go`, which must succeed.
fn run_on_sim(e: &Env, preset: &str, extra: &[&str]) {
    let mut args = vec!["run", "--preset", preset, "--model", "sim/x"];
    args.extend_from_slice(extra);
    args.push("Go");
    let out = huddle(e, &args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
}

#[test]
fn the_coding_team_runs_on_the_sim_in_worktrees_and_the_cli_lists_diffs_merges_and_removes_them() {
    let e = env();
    let out = huddle(
        &e,
        &[
            "run",
            "--preset",
            "Coding Team",
            "--model",
            "sim/x",
            "Add a --verbose flag",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("making the team's git worktrees (fully_isolated)"));
    let org = saved(&e);
    let team = super::headless::team_made_by_run(&e.home, "Coding Team");
    let group = org.group_by_name(&team).unwrap();
    assert_eq!(group.worktrees, WorktreeStrategy::FullyIsolated);
    let trees = worktrees::distinct(org.sessions.iter().filter_map(|s| s.worktree.as_ref()));
    assert_eq!(
        trees.len(),
        4,
        "orchestrator (with the evaluator), implementer, tester, reviewer"
    );

    let list = huddle(&e, &["worktrees", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", text(&list.stderr));
    let listed = text(&list.stdout);
    assert!(
        listed.starts_with(&format!("{team} · fully_isolated\n")),
        "{listed}"
    );
    assert_eq!(listed.matches("  clean\n").count(), 4, "{listed}");
    assert!(
        listed.contains("coding-team-orchestrator, coding-team-evaluator"),
        "{listed}"
    );

    let implementer = saved_worktree(&e, "coding-team-implementer");
    std::fs::write(
        implementer.path.join("verbose.rs"),
        "pub const VERBOSE: bool = true;\n",
    )
    .unwrap();
    commit_all(&implementer.path, "Add the verbose flag");

    let diff = huddle(&e, &["worktrees", "diff", "--session", "coding-team-implementer"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stderr));
    let shown = text(&diff.stdout);
    assert!(shown.contains("#  A verbose.rs"), "{shown}");
    assert!(shown.contains("+pub const VERBOSE: bool = true;"), "{shown}");
    let stat = text(&huddle(&e, &["worktrees", "diff", "--group", &team, "--stat"]).stdout);
    assert_eq!(stat.matches("# huddle/").count(), 4, "{stat}");
    assert!(!stat.contains("+pub const"), "{stat}");

    // Nobody at the terminal: the commits are listed, and merging needs --yes.
    let before = git(&e.repo, &["rev-parse", "HEAD"]);
    let asked = huddle(
        &e,
        &["worktrees", "merge", "--session", "coding-team-implementer"],
    );
    assert_eq!(asked.status.code(), Some(2), "{}", text(&asked.stderr));
    assert!(
        text(&asked.stdout).contains("Add the verbose flag"),
        "{}",
        text(&asked.stdout)
    );
    assert!(
        text(&asked.stderr).contains("needs --yes"),
        "{}",
        text(&asked.stderr)
    );
    assert_eq!(git(&e.repo, &["rev-parse", "HEAD"]), before, "nothing merged");
    let merged = huddle(&e, &["worktrees", "merge", "--group", &team, "--yes"]);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged.stderr));
    assert!(text(&merged.stdout).contains("merged 1 commit(s) of huddle/coding-team-implementer-"));
    assert!(e.repo.join("verbose.rs").exists());
    let again = huddle(
        &e,
        &[
            "worktrees",
            "merge",
            "--session",
            "coding-team-implementer",
            "--yes",
        ],
    );
    assert_eq!(again.status.code(), Some(0));
    assert!(
        text(&again.stdout).contains("nothing to merge"),
        "{}",
        text(&again.stdout)
    );

    // Remove: refused while the tester's worktree holds work (nothing removed), then forced.
    let tester = saved_worktree(&e, "coding-team-tester");
    std::fs::write(tester.path.join("wip_test.rs"), "#[test] fn t() {}\n").unwrap();
    let refused = huddle(&e, &["worktrees", "remove", "--group", &team]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("1 uncommitted change"),
        "{}",
        text(&refused.stderr)
    );
    assert!(
        text(&refused.stderr).contains("--force"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(
        worktrees::distinct(saved(&e).sessions.iter().filter_map(|s| s.worktree.as_ref())).len(),
        4
    );
    assert!(tester.path.join("wip_test.rs").exists());
    let forced = huddle(
        &e,
        &[
            "worktrees",
            "remove",
            "--session",
            "coding-team-tester",
            "--force",
        ],
    );
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced.stderr));
    assert!(
        text(&forced.stdout).contains("thrown away: 1 uncommitted change"),
        "{}",
        text(&forced.stdout)
    );
    assert!(!tester.path.exists());
    let rest = huddle(&e, &["worktrees", "remove", "--group", &team]);
    assert_eq!(rest.status.code(), Some(0), "{}", text(&rest.stderr));
    assert_eq!(
        text(&rest.stdout).matches("removed ").count(),
        3,
        "{}",
        text(&rest.stdout)
    );
    assert!(branches(&e.repo).is_empty());
    let list = text(&huddle(&e, &["worktrees", "list"]).stdout);
    assert_eq!(list, "no team worktrees\n");

    // Usage errors.
    let missing = huddle(&e, &["worktrees", "diff", "--session", "nobody"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("no session named `nobody`"));
    let none = huddle(&e, &["worktrees", "diff", "--session", "coding-team-tester"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        text(&none.stderr).contains("has no worktree"),
        "{}",
        text(&none.stderr)
    );
    assert_eq!(huddle(&e, &["worktrees", "merge"]).status.code(), Some(2));
}

#[test]
fn a_team_with_worktrees_needs_a_git_repository_and_a_conflicting_cli_merge_changes_nothing() {
    let e = env();
    let plain = e.home.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let plain_arg = plain.display().to_string();
    let out = huddle(
        &e,
        &[
            "run",
            "--preset",
            "Coding Team",
            "--repo",
            &plain_arg,
            "--model",
            "sim/x",
            "Go",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("is not inside a git repository") && err.contains("--worktrees shared"),
        "{err}"
    );
    assert!(
        OrganizationFile::new(e.paths.organization_file())
            .inspect()
            .unwrap()
            .is_none_or(|o| o.groups.iter().all(|g| !g.name.starts_with("Coding Team"))),
        "no team recorded"
    );
    // Without git at all.
    let no_git = Command::new(env!("CARGO_BIN_EXE_huddle"))
        .args(["run", "--preset", "Coding Team", "--model", "sim/x", "Go"])
        .env("HUDDLE_HOME", &e.home)
        .env("HUDDLE_HOST_IDLE_MS", "0")
        .env("PATH", &plain)
        .current_dir(&e.repo)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(no_git.status.code(), Some(2), "{}", text(&no_git.stderr));
    assert!(
        text(&no_git.stderr).contains("git is not installed or not on PATH"),
        "{}",
        text(&no_git.stderr)
    );
    run_on_sim(
        &e,
        "Coding Team",
        &["--repo", &plain_arg, "--worktrees", "shared"],
    );

    run_on_sim(&e, "Research Panel", &["--worktrees", "group_shared"]);
    let w = saved_worktree(&e, "research-panel-analyst");
    std::fs::write(w.path.join("README.md"), "hello from the panel\nsecond line\n").unwrap();
    commit_all(&w.path, "Panel greeting");
    std::fs::write(e.repo.join("README.md"), "hello from main\nsecond line\n").unwrap();
    let head = commit_all(&e.repo, "Main greeting");
    let panel = super::headless::team_made_by_run(&e.home, "Research Panel");
    let out = huddle(&e, &["worktrees", "merge", "--group", &panel, "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("conflict in README.md"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("exactly as before"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(git(&e.repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(status(&e.repo), "");
    let out = huddle(
        &e,
        &["worktrees", "merge", "--group", &panel, "--cherry-pick", "--yes"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(git(&e.repo, &["rev-parse", "HEAD"]), head);
    assert_eq!(status(&e.repo), "");
}

/// `huddle worktrees merge` on a terminal (a pseudo-terminal): it lists the commits, asks
/// `[y/N]`, and merges only on `y`.
fn merge_on_a_terminal(e: &Env, session: &str, answer: &str) -> (u32, String) {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("open a pty");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_huddle"));
    cmd.args(["worktrees", "merge", "--session", session]);
    cmd.cwd(&e.repo);
    cmd.env("HUDDLE_HOME", &e.home);
    cmd.env("HUDDLE_HOST_IDLE_MS", "0");
    let mut child = pty.slave.spawn_command(cmd).expect("start huddle");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().expect("pty reader");
    let mut writer = pty.master.take_writer().expect("pty writer");
    let seen = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&seen);
    let reading = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    // However long a busy machine takes; the limit only ends a hang.
    let hang_guard = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !seen.lock().unwrap().contains("[y/N]") {
        assert!(
            std::time::Instant::now() < hang_guard,
            "never asked: {}",
            seen.lock().unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    writer.write_all(answer.as_bytes()).unwrap();
    writer.flush().unwrap();
    let status = child.wait().expect("huddle ends");
    // Everything it wrote: the reader ends when the terminal closes with the process.
    drop(writer);
    drop(pty.master);
    reading.join().expect("reader");
    let text = seen.lock().unwrap().clone();
    (status.exit_code(), text)
}

#[test]
fn on_a_terminal_merge_asks_and_only_y_merges() {
    let e = env();
    run_on_sim(&e, "Research Panel", &["--worktrees", "fully_isolated"]);
    let w = saved_worktree(&e, "research-panel-skeptic");
    std::fs::write(w.path.join("doubts.md"), "- is it needed?\n").unwrap();
    commit_all(&w.path, "Write down the doubts");
    let head = git(&e.repo, &["rev-parse", "HEAD"]);
    for no in ["n\n", "\n", "maybe\n"] {
        let (code, shown) = merge_on_a_terminal(&e, "research-panel-skeptic", no);
        assert!(shown.contains("Write down the doubts"), "{shown}");
        assert!(
            shown.contains("Merge these 1 commit(s) into main? [y/N]"),
            "{shown}"
        );
        assert_eq!(code, 1, "{no:?}: {shown}");
        assert!(shown.contains("not merged"), "{shown}");
        assert_eq!(git(&e.repo, &["rev-parse", "HEAD"]), head, "{no:?}");
    }
    let (code, shown) = merge_on_a_terminal(&e, "research-panel-skeptic", "y\n");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("merged 1 commit(s)"), "{shown}");
    assert!(e.repo.join("doubts.md").exists());
}

/// huddle's own git never follows what a member could have planted in its worktree or git
/// directory (review of issue 26, finding 1, the defence in depth): a `commondir` sent to a
/// copy with an fsmonitor, a `.git` file naming a directory in the worktree, a planted
/// `commondir` in the main checkout, a nested repository's fsmonitor and filters.
#[test]
fn huddles_git_ignores_planted_git_settings() {
    use super::sandbox_support::{Machine, outside_tmp};
    let dir = outside_tmp();
    let m = Machine::new(dir.path());
    let marker = m.root.join("PWNED");
    let evil_config = format!(
        "[core]\n\tfsmonitor = \"touch {}; false\"\n[filter \"x\"]\n\tclean = \"touch {}; cat\"\n",
        marker.display(),
        marker.display()
    );
    let base = git(&m.repo, &["rev-parse", "HEAD"]).trim().to_string();
    let wt = |path: &Path, branch: &str| Worktree {
        path: path.to_path_buf(),
        branch: branch.into(),
        base_commit: base.clone(),
        repo: m.repo.clone(),
        subdir: None,
    };
    let common = m.repo.join(".git");
    let alice_admin = common.join("worktrees/t-alice-0a1b");
    // 1. commondir redirected to a copy of the repository with an fsmonitor: ignored.
    let evil = m.alice.join("evil2");
    std::fs::create_dir_all(&evil).expect("evil");
    for part in ["objects", "refs", "HEAD"] {
        let out = Command::new("cp")
            .args([
                "-r",
                &common.join(part).display().to_string(),
                &evil.display().to_string(),
            ])
            .output()
            .expect("cp");
        assert!(out.status.success());
    }
    std::fs::write(evil.join("config"), &evil_config).expect("config");
    std::fs::write(alice_admin.join("commondir"), format!("{}\n", evil.display())).expect("commondir");
    std::fs::write(m.alice.join("new.txt"), "x").expect("file");
    let state = worktrees::status(&wt(&m.alice, "huddle/t-alice-0a1b")).expect("status");
    assert!(state.changes >= 2, "evil2/ and new.txt: {}", state.changes);
    assert!(!marker.exists(), "the planted commondir's fsmonitor ran");
    std::fs::write(alice_admin.join("commondir"), "../..\n").expect("restore");
    // 2. bob's `.git` file names a git directory inside the worktree: refused, named.
    let bob_git = m.bob.join("evilgit");
    let out = Command::new("cp")
        .args([
            "-r",
            &common.display().to_string(),
            &bob_git.display().to_string(),
        ])
        .output()
        .expect("cp");
    assert!(out.status.success());
    std::fs::write(bob_git.join("config"), &evil_config).expect("config");
    std::fs::write(m.bob.join(".git"), format!("gitdir: {}\n", bob_git.display())).expect(".git");
    let err = worktrees::status(&wt(&m.bob, "huddle/t-bob-2c3d")).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains(&m.bob.join(".git").display().to_string())
            && text.contains("inside the checkout itself"),
        "{text}"
    );
    assert!(!marker.exists(), "the planted .git file was followed");
    // 3. a main checkout with a planted commondir: refused, named.
    std::fs::write(common.join("commondir"), format!("{}\n", evil.display())).expect("commondir");
    let err = worktrees::repo_head(&m.repo).expect_err("refused");
    assert!(err.to_string().contains("commondir"), "{err}");
    std::fs::remove_file(common.join("commondir")).expect("remove");
    // 4. a nested repository (a gitlink) with an fsmonitor and a clean filter of its own.
    let nested = m.alice.join("sub");
    std::fs::create_dir_all(&nested).expect("nested");
    git(&nested, &["init", "-q", "-b", "main"]);
    std::fs::write(nested.join(".gitattributes"), "* filter=x\n").expect("attributes");
    std::fs::write(nested.join("f"), "a\n").expect("f");
    git(&nested, &["add", "."]);
    git(
        &nested,
        &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "s"],
    );
    let mut config = std::fs::read_to_string(nested.join(".git/config")).expect("config");
    config.push_str(&evil_config);
    std::fs::write(nested.join(".git/config"), config).expect("config");
    git(&m.alice, &["add", "sub"]);
    git(
        &m.alice,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "sub",
        ],
    );
    std::fs::write(nested.join("f"), "b\n").expect("dirty");
    worktrees::status(&wt(&m.alice, "huddle/t-alice-0a1b")).expect("status");
    worktrees::diff(&wt(&m.alice, "huddle/t-alice-0a1b")).expect("diff");
    assert!(!marker.exists(), "a nested repository's settings ran");
}

/// A worktree kept when its team was pruned (it held unmerged work) is still huddle's to
/// review and merge: `huddle worktrees diff|merge --path DIR`. A merge refused because the
/// repository is not ready says why once (on stderr), not on both outputs.
#[test]
fn a_worktree_kept_after_its_team_was_pruned_can_be_diffed_and_merged_by_path() {
    let e = env();
    run_on_sim(&e, "Coding Team", &[]);
    let implementer = saved_worktree(&e, "coding-team-implementer");
    std::fs::write(implementer.path.join("kept.rs"), "pub const KEPT: bool = true;\n").unwrap();
    commit_all(&implementer.path, "Work that outlived its team");
    std::fs::write(e.repo.join("README.md"), "edited, not committed\n").unwrap();
    let refused = huddle(
        &e,
        &[
            "worktrees",
            "merge",
            "--session",
            "coding-team-implementer",
            "--yes",
        ],
    );
    assert_refused_once(&refused);
    git(&e.repo, &["checkout", "--", "README.md"]);

    // The team goes; the worktree holding unmerged work stays, recorded by nobody.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let pruned = huddle(&e, &["runs", "prune", "--older-than", "1s"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", text(&pruned.stderr));
    assert!(saved(&e).session_by_name("coding-team-implementer").is_none());
    assert!(implementer.path.is_dir(), "kept: it holds work");
    let listed = text(&huddle(&e, &["worktrees", "list"]).stdout);
    let dir = implementer.path.display().to_string();
    assert!(listed.contains("to look at") && listed.contains(&dir), "{listed}");

    let diff = huddle(&e, &["worktrees", "diff", "--path", &dir]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stderr));
    let shown = text(&diff.stdout);
    assert!(shown.contains("+pub const KEPT: bool = true;"), "{shown}");
    // Its header names no session and its base, with no field left empty.
    let header = shown.lines().next().unwrap_or_default();
    assert!(
        header.contains("(no session records it) against ")
            && header.contains(", where it forked from the repository's current branch · 1 file")
            && !header.contains("()")
            && !header.contains("against  "),
        "{header}"
    );

    // Not now: the repository has uncommitted changes. Said once.
    std::fs::write(e.repo.join("README.md"), "edited, not committed\n").unwrap();
    let refused = huddle(&e, &["worktrees", "merge", "--path", &dir, "--yes"]);
    assert_refused_once(&refused);
    git(&e.repo, &["checkout", "--", "README.md"]);

    let merged = huddle(&e, &["worktrees", "merge", "--path", &dir, "--yes"]);
    assert_eq!(merged.status.code(), Some(0), "{}", text(&merged.stderr));
    assert!(
        text(&merged.stdout).contains("merged 1 commit(s)"),
        "{}",
        text(&merged.stdout)
    );
    assert!(e.repo.join("kept.rs").exists());
    let again = huddle(&e, &["worktrees", "merge", "--path", &dir, "--yes"]);
    assert!(
        text(&again.stdout).contains("nothing to merge"),
        "{}",
        text(&again.stdout)
    );

    // A recorded worktree is named by its session; a folder outside huddle's is not huddle's.
    run_on_sim(&e, "Coding Team", &[]);
    let recorded = saved_worktree(&e, "coding-team-implementer")
        .path
        .display()
        .to_string();
    let named = huddle(&e, &["worktrees", "merge", "--path", &recorded, "--yes"]);
    assert_eq!(named.status.code(), Some(2));
    assert!(
        text(&named.stderr).contains("use --session"),
        "{}",
        text(&named.stderr)
    );
    let outside = e.repo.display().to_string();
    let foreign = huddle(&e, &["worktrees", "merge", "--path", &outside, "--yes"]);
    assert_eq!(foreign.status.code(), Some(1), "{}", text(&foreign.stderr));
    assert!(text(&foreign.stderr).contains("not inside huddle's worktrees folder"));
}

/// A merge refused because the repository has uncommitted changes: the commits are listed on
/// stdout, the refusal said once, on stderr.
fn assert_refused_once(refused: &Output) {
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    let (out, err) = (text(&refused.stdout), text(&refused.stderr));
    assert!(
        out.contains("Work that outlived its team"),
        "the commits listed: {out}"
    );
    assert!(
        err.contains("not merged: the repository has uncommitted changes"),
        "{err}"
    );
    assert_eq!(
        out.matches("uncommitted changes (").count() + err.matches("uncommitted changes (").count(),
        1,
        "the refusal once: stdout {out:?}, stderr {err:?}"
    );
}
