//! Team worktrees in the TUI: the strategy step of the new-team dialog, the sidebar's branch and
//! change marks, the diff view (files, colours, scrolling, sanitising), bringing work back
//! (commits listed, only `y` confirms, a conflict said to be aborted), deleting a team whose
//! worktrees hold work (asked, keep by default); and the whole path once with real git, each
//! command carried out by the runtime's own blocking function.

use std::path::{Path, PathBuf};

use crossterm::event::KeyCode;
use huddle::model::{Organization, Worktree, WorktreeStrategy, reconcile};
use huddle::presets::create_team_group;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::tui::dialogs::Dialog;
use huddle::workspace::{AtRisk, WorktreeChoice};
use huddle::worktrees::{
    ChangeKind, Commit, FileChange, MergeMethod, MergePlan, SessionWorktree, WorktreeDiff, WorktreeError,
    WorktreeStatus,
};
use ratatui::style::Color;

use super::tui_support::{
    builtin_catalog, ch, config, empty_app, key, new_app, notice_title, render, repo, screen_text,
    session_id, type_text,
};

const CODING: &str = "Coding Team";

fn worktree(label: &str) -> Worktree {
    Worktree {
        path: PathBuf::from(format!("/data/worktrees/demo/{label}")),
        branch: format!("huddle/{label}"),
        base_commit: "0123456789abcdef".into(),
        repo: repo(),
        subdir: None,
    }
}

/// An app with a fully isolated Coding Team whose members have (made-up) worktree records,
/// the team selected; its first commands.
fn app_with_worktree_team() -> (App, String, Vec<Command>) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let catalog = builtin_catalog();
    let p = catalog.find(CODING).expect("preset").clone();
    let id = create_team_group(&mut org, &p, &config(), Some(&repo()));
    let team_slug = huddle::naming::team_slug("Coding Team");
    for s in org.sessions.iter_mut().filter(|s| s.group_id == id) {
        let role = huddle::naming::strip_team_prefix(&s.name, &team_slug).to_string();
        s.worktree = Some(worktree(&format!("{team_slug}-{role}-0a1b")));
    }
    if let Some(g) = org.group_mut(&id) {
        g.worktrees = WorktreeStrategy::FullyIsolated;
    }
    org.ui.selected_group = Some(id.clone());
    let (mut app, commands) = new_app(org, config());
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(catalog)));
    (app, id, commands)
}

/// Selects the session `name` (full name) in the sidebar.
fn select_session(app: &mut App, name: &str) -> Vec<Command> {
    let id = session_id(app, name);
    for _ in 0..30 {
        if app.selected_session_id().as_deref() == Some(id.as_str()) {
            return Vec::new();
        }
        let commands = app.move_cursor(1);
        if app.selected_session_id().as_deref() == Some(id.as_str()) {
            return commands;
        }
    }
    panic!("session {name} not reached");
}

fn implementer(app: &App) -> String {
    app.org
        .read(|o| {
            o.sessions
                .iter()
                .find(|s| s.name.ends_with("implementer"))
                .map(|s| s.name.clone())
        })
        .expect("an implementer")
}

fn status_of(app: &App, name: &str, changes: usize, unmerged: u32) -> SessionWorktree {
    let id = session_id(app, name);
    let (wt, group) = app
        .org
        .read(|o| o.session(&id).map(|s| (s.worktree.clone(), s.group_id.clone())))
        .expect("session");
    let wt = wt.expect("a worktree");
    SessionWorktree {
        session_id: id,
        session: name.to_string(),
        group_id: group,
        worktree: wt.clone(),
        status: Ok(WorktreeStatus {
            worktree: wt,
            exists: true,
            branch_exists: true,
            checked_out: None,
            changes,
            ahead: unmerged,
            unmerged,
        }),
    }
}

#[test]
fn the_new_team_dialog_asks_the_strategy_in_a_git_repository() {
    let mut app = empty_app();
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(builtin_catalog())));
    app.handle_app_event(AppEvent::GitChecked(Ok(())));
    app.handle_key(ch('n'));
    type_text(&mut app, "coding team");
    assert!(
        app.handle_key(key(KeyCode::Enter)).is_empty(),
        "nothing is made yet"
    );
    let Some(Dialog::Picker(p)) = app.dialogs.last() else {
        panic!("the strategy step")
    };
    let offered: Vec<&str> = p.items.iter().map(|i| i.value.as_str()).collect();
    assert_eq!(
        offered,
        [
            "shared",
            "group_shared",
            "orchestrator_isolated",
            "fully_isolated"
        ]
    );
    assert_eq!(
        p.items[p.cursor].value, "fully_isolated",
        "the preset's choice first"
    );
    // One up: orchestrator_isolated.
    app.handle_key(key(KeyCode::Up));
    let commands = app.handle_key(key(KeyCode::Enter));
    let [Command::CreateTeam { preset, strategy }] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(preset.name, CODING);
    assert_eq!(*strategy, WorktreeStrategy::OrchestratorIsolated);
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("making worktrees"), "{text}");
    // git fails: the reason in a notice, nothing made.
    let groups = app.org.read(|o| o.groups.len());
    app.handle_app_event(AppEvent::TeamCreated {
        preset: CODING.into(),
        warnings: Vec::new(),
        result: Err("git is not installed or not on PATH; huddle needs it for team worktrees".into()),
    });
    assert_eq!(notice_title(&app).as_deref(), Some("Team not created"));
    assert_eq!(app.org.read(|o| o.groups.len()), groups);
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("git is not installed"), "{text}");
    assert!(!text.contains("making worktrees"), "{text}");
}

#[test]
fn outside_a_git_repository_only_shared_can_be_chosen_and_shared_presets_are_not_asked() {
    let mut app = empty_app();
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(builtin_catalog())));
    app.handle_app_event(AppEvent::GitChecked(Err(
        "/work/demo-repo is not inside a git repository".into(),
    )));
    // A preset without worktrees: made at once, as before.
    app.handle_key(ch('n'));
    type_text(&mut app, "code review");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.dialogs.is_empty(), "no strategy question");
    assert!(app.selected_group_id().is_some_and(|g| app.is_team(&g)));
    // The Coding Team asks for worktrees: the step says why it cannot, shared is the default.
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('n'));
    type_text(&mut app, "coding team");
    app.handle_key(key(KeyCode::Enter));
    let Some(Dialog::Picker(p)) = app.dialogs.last() else {
        panic!("the strategy step")
    };
    assert_eq!(p.items[p.cursor].value, "shared");
    assert!(p.items[1..].iter().all(|i| i.disabled));
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("shared"), "{text}");
    let commands = app.handle_key(key(KeyCode::Enter));
    assert!(
        !commands.iter().any(|c| matches!(c, Command::CreateTeam { .. })),
        "shared needs no git: {commands:?}"
    );
    assert!(app.dialogs.is_empty());
}

#[test]
fn the_sidebar_shows_branches_and_marks_from_a_status_event() {
    let (mut app, id, first) = app_with_worktree_team();
    assert!(first.contains(&Command::CheckGit), "{first:?}");
    assert!(
        first.contains(&Command::RefreshWorktrees { group_id: None }),
        "statuses of every worktree at start: {first:?}"
    );
    let name = implementer(&app);
    let statuses = vec![status_of(&app, &name, 2, 3)];
    let selected = Command::RefreshWorktrees {
        group_id: Some(id.clone()),
    };
    // The selected team's refresh waited for the one of every worktree.
    assert_eq!(
        app.handle_app_event(AppEvent::WorktreeStatuses {
            group_id: None,
            statuses: statuses.clone(),
        }),
        vec![selected]
    );
    app.handle_app_event(AppEvent::WorktreeStatuses {
        group_id: Some(id.clone()),
        statuses,
    });
    let terminal = render(&mut app, 130, 30);
    let text = screen_text(&terminal);
    // The marks first; the branch where it fits, else only its mark.
    assert!(text.contains("· implementer ± ↑3 ⎇"), "{text}");
    let tester = text
        .lines()
        .find(|l| l.contains("· tester ⎇tester-0a1b"))
        .unwrap_or_else(|| panic!("the tester's branch: {text}"));
    assert!(
        !tester.contains('±') && !tester.contains('↑'),
        "not looked at: {tester}"
    );
    // A worktree session's finished turn asks again (once while one is in flight).
    let sid = session_id(&app, &name);
    let finished = |app: &mut App| {
        super::tui_support::engine_event(
            app,
            &id,
            Some("r1"),
            huddle::engine::events::EventKind::TurnFinished {
                session_id: sid.as_str().into(),
                session: name.as_str().into(),
                generation: 1,
                success: true,
                interrupted: false,
                duration_ms: 1,
                usage: None,
                error: None,
                message: None,
                cost_usd: None,
            },
        )
    };
    let refresh = Command::RefreshWorktrees {
        group_id: Some(id.clone()),
    };
    assert_eq!(finished(&mut app), vec![refresh.clone()]);
    assert!(finished(&mut app).is_empty(), "one in flight already");
    let again = app.handle_app_event(AppEvent::WorktreeStatuses {
        group_id: Some(id.clone()),
        statuses: Vec::new(),
    });
    assert_eq!(again, vec![refresh.clone()], "one more for the turn meanwhile");
    // The periodic tick refreshes the selected team (not while one is in flight).
    assert!(app.handle_app_event(AppEvent::WorktreeTick).is_empty());
    app.handle_app_event(AppEvent::WorktreeStatuses {
        group_id: Some(id.clone()),
        statuses: Vec::new(),
    });
    assert_eq!(app.handle_app_event(AppEvent::WorktreeTick), vec![refresh]);
}

fn diff_of(wt: Worktree, patch: &str) -> WorktreeDiff {
    WorktreeDiff {
        base: wt.base_commit.clone(),
        worktree: wt,
        files: vec![
            FileChange {
                path: "src/a.rs".into(),
                kind: ChangeKind::Modified,
            },
            FileChange {
                path: "notes.txt".into(),
                kind: ChangeKind::Untracked,
            },
        ],
        patch: patch.into(),
        truncated: false,
        skipped: Vec::new(),
    }
}

/// The screen line holding `needle`, and the colour of its first cell of `needle`.
fn colour_of(terminal: &ratatui::Terminal<ratatui::backend::TestBackend>, needle: &str) -> Option<Color> {
    let buffer = terminal.backend().buffer();
    let text = screen_text(terminal);
    let (y, line) = text.lines().enumerate().find(|(_, l)| l.contains(needle))?;
    let col = line[..line.find(needle)?].chars().count();
    Some(buffer[(col as u16, y as u16)].fg)
}

#[test]
fn the_diff_view_lists_files_colours_lines_scrolls_and_sanitises() {
    let (mut app, _, _) = app_with_worktree_team();
    let name = implementer(&app);
    select_session(&mut app, &name);
    let commands = app.handle_key(ch('D'));
    let [Command::LoadDiff { request, worktrees }] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(worktrees.len(), 1, "the session's own worktree");
    let mut patch = String::from(
        "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n-fn old() {}\n+fn fresh() {} \u{1b}]0;pwned\u{7}// \u{1b}[31mred\n context\n",
    );
    patch.push_str("diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,200 @@\n");
    for i in 0..200 {
        patch.push_str(&format!("+note {i}\n"));
    }
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(text.contains("loading the diff"), "{text}");
    app.handle_app_event(AppEvent::DiffLoaded {
        request: *request,
        diffs: vec![Ok(diff_of(worktrees[0].clone(), &patch))],
    });
    let terminal = render(&mut app, 120, 40);
    let text = screen_text(&terminal);
    assert!(text.contains(" M src/a.rs  +1 -1"), "{text}");
    assert!(text.contains(" ? notes.txt  +200 -0"), "{text}");
    assert!(text.contains("2 files +201 -1"), "{text}");
    assert_eq!(colour_of(&terminal, "+fn fresh"), Some(Color::Green));
    assert_eq!(colour_of(&terminal, "-fn old"), Some(Color::Red));
    assert_eq!(colour_of(&terminal, "@@ -1,2"), Some(Color::Cyan));
    assert!(
        text.contains("+fn fresh() {} // red"),
        "escapes removed whole: {text}"
    );
    assert!(!text.contains("pwned") && !text.contains('\u{1b}'), "{text}");
    // Scrolling: the end, the top, one line, the next file.
    app.handle_key(ch('G'));
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(text.contains("+note 199"), "{text}");
    assert!(!text.contains("+fn fresh"), "{text}");
    app.handle_key(ch('g'));
    app.handle_key(ch('j'));
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(!text.contains("diff --git a/src/a.rs"), "one line down: {text}");
    assert!(text.contains("--- a/src/a.rs"), "{text}");
    app.handle_key(key(KeyCode::Right));
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(text.contains("line 8/"), "the second file's part: {text}");
    app.handle_key(key(KeyCode::PageDown));
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(!text.contains("line 8/"), "a page down: {text}");
    assert!(app.handle_key(key(KeyCode::Esc)).is_empty());
    assert!(app.dialogs.is_empty());
}

#[test]
fn a_team_diff_has_a_tab_per_worktree() {
    let (mut app, _, _) = app_with_worktree_team();
    let commands = app.handle_key(ch('D'));
    let [Command::LoadDiff { request, worktrees }] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert!(worktrees.len() >= 3, "{worktrees:?}");
    let diffs = worktrees
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i == 1 {
                Err("the worktree is gone".to_string())
            } else {
                Ok(diff_of(
                    w.clone(),
                    "diff --git a/src/a.rs b/src/a.rs\n@@ -1 +1 @@\n-a\n+b\n",
                ))
            }
        })
        .collect();
    app.handle_app_event(AppEvent::DiffLoaded {
        request: *request,
        diffs,
    });
    app.handle_key(key(KeyCode::Tab));
    let text = screen_text(&render(&mut app, 140, 40));
    assert!(
        text.contains("cannot show this diff: the worktree is gone"),
        "{text}"
    );
}

fn plan(wt: Worktree, uncommitted: usize) -> MergePlan {
    MergePlan {
        worktree: wt,
        into: Some("main".into()),
        head: "1111111111".into(),
        tip: "2222222222".into(),
        commits: vec![
            Commit {
                id: "abcdef0123456789".into(),
                summary: "Add the parser".into(),
            },
            Commit {
                id: "9876543210fedcba".into(),
                summary: "Test the parser".into(),
            },
        ],
        has_merges: false,
        uncommitted,
        blocked: None,
    }
}

#[test]
fn bringing_work_back_lists_the_commits_and_only_y_confirms() {
    let (mut app, _, _) = app_with_worktree_team();
    let name = implementer(&app);
    select_session(&mut app, &name);
    let commands = app.handle_key(ch('B'));
    let [Command::PlanMerge { worktree }] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    let wt = worktree.clone();
    for cancel in [key(KeyCode::Enter), key(KeyCode::Esc), ch('n')] {
        app.handle_app_event(AppEvent::MergePlanned {
            result: Ok(plan(wt.clone(), 2)),
        });
        let text = screen_text(&render(&mut app, 120, 40));
        assert!(
            text.contains("abcdef0123 Add the parser") && text.contains("9876543210 Test the parser"),
            "{text}"
        );
        assert!(text.contains("NOT merged"), "{text}");
        assert!(
            text.contains("2 uncommitted changes that will not be merged"),
            "{text}"
        );
        assert!(app.handle_key(cancel).is_empty(), "{cancel:?} cancels");
        assert!(app.dialogs.is_empty());
    }
    app.handle_app_event(AppEvent::MergePlanned {
        result: Ok(plan(wt.clone(), 0)),
    });
    assert!(app.handle_key(ch('c')).is_empty(), "choosing is not confirming");
    let commands = app.handle_key(ch('y'));
    let [Command::Merge { plan: p, method }] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(*method, MergeMethod::CherryPick);
    assert_eq!(p.worktree, wt);
    // A team with several worktrees: the merge key asks for one.
    let mut team_app = app_with_worktree_team().0;
    assert!(team_app.handle_key(ch('B')).is_empty());
    assert!(
        team_app
            .flash
            .as_ref()
            .is_some_and(|(t, _)| t.contains("worktrees"))
    );
}

#[test]
fn the_merge_key_in_the_diff_view_plans_the_worktree_shown() {
    let (mut app, _, _) = app_with_worktree_team();
    let commands = app.handle_key(ch('D'));
    let [Command::LoadDiff { worktrees, .. }] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    let second = worktrees[1].clone();
    app.handle_key(key(KeyCode::Tab));
    assert_eq!(
        app.handle_key(ch('B')),
        vec![Command::PlanMerge { worktree: second }]
    );
    assert!(
        matches!(app.dialogs.last(), Some(Dialog::Diff(_))),
        "the view stays"
    );
}

#[test]
fn a_conflict_is_said_to_be_aborted_with_nothing_changed() {
    let (mut app, _, _) = app_with_worktree_team();
    // The statuses asked at start arrive.
    app.handle_app_event(AppEvent::WorktreeStatuses {
        group_id: None,
        statuses: Vec::new(),
    });
    let commands = app.handle_app_event(AppEvent::Merged {
        branch: "huddle/coding-team-implementer-0a1b".into(),
        result: Err(WorktreeError::Conflict {
            method: "merge",
            branch: "huddle/coding-team-implementer-0a1b".into(),
            into: "main".into(),
            files: vec!["README.md".into()],
        }),
    });
    assert_eq!(
        notice_title(&app).as_deref(),
        Some("Conflict: aborted, nothing changed")
    );
    assert!(
        commands.contains(&Command::RefreshWorktrees { group_id: None }),
        "statuses refresh: {commands:?}"
    );
    let text = screen_text(&render(&mut app, 120, 40));
    assert!(text.contains("README.md") && text.contains("aborted"), "{text}");
    app.handle_key(key(KeyCode::Enter));
    app.handle_app_event(AppEvent::Merged {
        branch: "b".into(),
        result: Err(WorktreeError::Refused(
            "nothing to merge: main already has every commit of b".into(),
        )),
    });
    assert_eq!(notice_title(&app).as_deref(), Some("Nothing to merge"));
}

#[test]
fn deleting_a_team_whose_worktrees_hold_work_asks_and_keeps_by_default() {
    let (mut app, id, _) = app_with_worktree_team();
    let commands = app.handle_key(ch('d'));
    assert_eq!(commands, vec![Command::CheckDeleteRisk { group_id: id.clone() }]);
    assert!(app.dialogs.is_empty(), "nothing asked before git answered");
    let name = implementer(&app);
    let at_risk = || {
        vec![AtRisk {
            worktree: worktree("coding-team-implementer-0a1b"),
            sessions: vec![name.clone()],
            why: "2 uncommitted changes and 1 unmerged commit".into(),
        }]
    };
    app.handle_app_event(AppEvent::DeleteRiskChecked {
        group_id: id.clone(),
        at_risk: at_risk(),
    });
    let text = screen_text(&render(&mut app, 120, 50));
    assert!(
        text.contains("huddle/coding-team-implementer-0a1b") && text.contains("unmerged commit"),
        "{text}"
    );
    assert!(text.contains("(•) k keep"), "keep is the default: {text}");
    // Enter cancels: nothing deleted.
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert!(app.is_team(&id));
    // y with the default: deleted, worktrees holding work kept.
    app.handle_app_event(AppEvent::DeleteRiskChecked {
        group_id: id.clone(),
        at_risk: at_risk(),
    });
    let commands = app.handle_key(ch('y'));
    let removal = commands
        .iter()
        .find_map(|c| match c {
            Command::RemoveFiles(r) => Some(r.clone()),
            _ => None,
        })
        .expect("the files go");
    assert_eq!(removal.worktrees_with_work, WorktreeChoice::Keep);
    assert!(!removal.worktrees.is_empty());
    assert!(!app.is_team(&id));
}

#[test]
fn removing_worktrees_with_work_takes_choosing_remove_then_y() {
    let (mut app, id, _) = app_with_worktree_team();
    app.handle_key(ch('d'));
    app.handle_app_event(AppEvent::DeleteRiskChecked {
        group_id: id.clone(),
        at_risk: vec![AtRisk {
            worktree: worktree("coding-team-tester-0a1b"),
            sessions: vec!["tester".into()],
            why: "1 unmerged commit".into(),
        }],
    });
    app.handle_key(ch('r'));
    let commands = app.handle_key(ch('y'));
    assert!(
        commands
            .iter()
            .any(|c| matches!(c, Command::RemoveFiles(r) if r.worktrees_with_work == WorktreeChoice::Remove)),
        "{commands:?}"
    );
    // Clean worktrees: the plain confirmation, Enter means no.
    let (mut app, id, _) = app_with_worktree_team();
    app.handle_key(ch('d'));
    app.handle_app_event(AppEvent::DeleteRiskChecked {
        group_id: id.clone(),
        at_risk: Vec::new(),
    });
    assert!(matches!(app.dialogs.last(), Some(Dialog::Confirm(_))));
    assert!(app.handle_key(key(KeyCode::Enter)).is_empty());
    assert!(app.is_team(&id));
}

#[test]
fn help_and_hints_name_the_worktree_keys_and_they_can_be_rebound() {
    let (mut app, _, _) = app_with_worktree_team();
    app.handle_key(ch('?'));
    let text = screen_text(&render(&mut app, 120, 80));
    assert!(text.contains("diff of the session's worktree"), "{text}");
    assert!(text.contains("bring a worktree's commits back"), "{text}");
    app.handle_key(key(KeyCode::Esc));
    let text = screen_text(&render(&mut app, 160, 30));
    assert!(text.contains("D diff") && text.contains("B bring back"), "{text}");
    let mut config = config();
    config
        .keys
        .insert("view_diff".into(), huddle::config::KeyList::One("f6".into()));
    let (mut app, _) = new_app(
        {
            let mut org = Organization::default();
            reconcile::reconcile(&mut org);
            org
        },
        config,
    );
    assert!(app.handle_key(ch('D')).is_empty());
    assert!(app.flash.is_none());
    app.handle_key(key(KeyCode::F(6)));
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|(t, _)| t.contains("no worktree here")),
        "{:?}",
        app.flash
    );
}

// ---- with real git ----

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-C"])
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Carries out every command as the runtime would (its own blocking function), feeding the
/// answers back, until none is left.
fn run_all(app: &mut App, edits: &huddle::workspace::Edits, repo: &Path, commands: Vec<Command>) {
    let mut queue = commands;
    while !queue.is_empty() {
        let next: Vec<Command> = queue
            .drain(..)
            .filter_map(|c| huddle::tui::run_blocking(edits, repo, c))
            .flat_map(|event| app.handle_app_event(event))
            .collect();
        queue = next;
    }
}

#[test]
fn with_real_git_a_team_is_made_reviewed_brought_back_and_deleted_keeping_work() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("git is not installed: skipped");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).expect("repo");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Repo Owner"]);
    git(&repo, &["config", "user.email", "owner@example.com"]);
    std::fs::write(repo.join("README.md"), "hello\n").expect("readme");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let config = config();
    let edits = huddle::workspace::Edits::detached(
        huddle::store::OrgHandle::in_memory(org),
        config.clone(),
        repo.clone(),
    )
    .with_worktrees_root(tmp.path().join("worktrees"));
    let (mut app, first) = App::new(edits.clone(), config, repo.clone(), Vec::new());
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(builtin_catalog())));
    run_all(&mut app, &edits, &repo, first);
    assert_eq!(app.worktrees.git, Some(Ok(())));
    // n, the Coding Team, fully_isolated (its own choice): made by git.
    app.handle_key(ch('n'));
    type_text(&mut app, "coding team");
    app.handle_key(key(KeyCode::Enter));
    let commands = app.handle_key(key(KeyCode::Enter));
    assert!(
        matches!(
            commands.as_slice(),
            [Command::CreateTeam {
                strategy: WorktreeStrategy::FullyIsolated,
                ..
            }]
        ),
        "{commands:?}"
    );
    run_all(&mut app, &edits, &repo, commands);
    let group = app.selected_group_id().expect("the new team is selected");
    assert!(app.is_team(&group));
    // A worker commits in its worktree and leaves a change uncommitted.
    let name = implementer(&app);
    let sid = session_id(&app, &name);
    let wt = app
        .org
        .read(|o| o.session(&sid).and_then(|s| s.worktree.clone()))
        .expect("the implementer's worktree");
    std::fs::write(wt.path.join("parser.rs"), "fn parse() {}\n").expect("write");
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["commit", "-q", "-m", "Add the parser"]);
    std::fs::write(wt.path.join("README.md"), "hello\nmore\n").expect("write");
    app.handle_key(key(KeyCode::Esc));
    let commands = select_session(&mut app, &name);
    let mut commands = commands;
    commands.extend(app.handle_app_event(AppEvent::WorktreeTick));
    run_all(&mut app, &edits, &repo, commands);
    let text = screen_text(&render(&mut app, 140, 40));
    let row = text
        .lines()
        .find(|l| l.contains("· implementer"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains('±') && row.contains("↑1"), "{row}");
    // The diff: the new file and the change to the README.
    let commands = app.handle_key(ch('D'));
    run_all(&mut app, &edits, &repo, commands);
    let text = screen_text(&render(&mut app, 140, 40));
    assert!(text.contains(" A parser.rs  +1 -0"), "{text}");
    assert!(text.contains(" M README.md  +1 -0"), "{text}");
    // Bring it back from the diff view: merge, y.
    let commands = app.handle_key(ch('B'));
    run_all(&mut app, &edits, &repo, commands);
    let text = screen_text(&render(&mut app, 140, 40));
    assert!(
        text.contains("Add the parser") && text.contains("NOT merged"),
        "{text}"
    );
    let commands = app.handle_key(ch('y'));
    run_all(&mut app, &edits, &repo, commands);
    assert_eq!(notice_title(&app).as_deref(), Some("Brought back"));
    // The merge is over: the status line no longer says it goes on (issue 28 item 16).
    assert!(app.flash.is_none(), "{:?}", app.flash);
    assert!(repo.join("parser.rs").is_file(), "merged into main");
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).expect("readme"),
        "hello\n",
        "uncommitted changes are not merged"
    );
    app.handle_key(key(KeyCode::Enter));
    app.handle_key(key(KeyCode::Esc));
    let text = screen_text(&render(&mut app, 140, 40));
    let row = text
        .lines()
        .find(|l| l.contains("· implementer"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains('±') && !row.contains('↑'), "merged now: {row}");
    // Delete the team: asked about the dirty worktree, kept by default; the rest removed.
    while app.selected_session_id().is_some() {
        app.move_cursor(-1);
    }
    let commands = app.handle_key(ch('d'));
    run_all(&mut app, &edits, &repo, commands);
    let text = screen_text(&render(&mut app, 140, 40));
    assert!(text.contains("These worktrees hold work"), "{text}");
    let commands = app.handle_key(ch('y'));
    run_all(&mut app, &edits, &repo, commands);
    assert!(wt.path.is_dir(), "the worktree holding work is kept");
    assert_eq!(notice_title(&app).as_deref(), Some("Worktrees kept"));
    let branches = git(&repo, &["branch", "--list", "huddle/*"]);
    assert_eq!(
        branches.lines().count(),
        1,
        "only the kept one's branch: {branches}"
    );
}
