//! The TUI as a front end of the host, without a terminal: quitting offers to stop only the
//! runs this TUI started (and defaults to stopping one that waits for you), the host going
//! away interrupts its runs, and a target deleted in another window is not sent to.

use std::sync::Arc;

use huddle::engine::events::RunKey;
use huddle::model::{Organization, ToolCall, reconcile};
use huddle::presets::create_team_group;
use huddle::store::OrgHandle;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use huddle::tui::dialogs::Dialog;
use huddle::workspace::{EditCall, EditTransport, Edits, RemoteEdits};

use super::tui_support::{
    approval_requested, builtin_catalog, ch, config, key, render, repo, run_started, screen_text, type_text,
};

/// A host that answers every edit with nothing (these tests make none that matter).
struct Quiet;

impl EditTransport for Quiet {
    fn call(&mut self, _: EditCall) -> Result<(serde_json::Value, Option<(Organization, u64)>), String> {
        Ok((serde_json::Value::Null, None))
    }
}

/// A TUI of the host over an organization with two teams; the handle of its copy and the
/// link that installs the host's snapshots.
fn front_app() -> (App, Arc<RemoteEdits>, OrgHandle, String, String) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let catalog = builtin_catalog();
    let ours = create_team_group(
        &mut org,
        catalog.find("Research Panel").expect("preset"),
        &config(),
        Some(&repo()),
    );
    let theirs = create_team_group(
        &mut org,
        catalog.find("Code Review Team").expect("preset"),
        &config(),
        Some(&repo()),
    );
    org.ui.selected_group = Some(ours.clone());
    let mirror = OrgHandle::in_memory(org);
    let remote = Arc::new(RemoteEdits::new(Box::new(Quiet), mirror.clone(), 1));
    let edits = Edits::remote(mirror.clone(), config(), repo(), Arc::clone(&remote));
    let (app, _) = App::new(edits, config(), repo(), Vec::new());
    (app, remote, mirror, ours, theirs)
}

fn quit_message(app: &App) -> (String, usize) {
    match app.dialogs.last() {
        Some(Dialog::Choice(c)) => (c.message.clone(), c.chosen),
        _ => panic!("no quit offer"),
    }
}

#[test]
fn quitting_offers_to_stop_only_the_runs_this_tui_started() {
    let (mut app, _, _, _, theirs) = front_app();
    // Another front end's run: quitting asks nothing.
    run_started(&mut app, RunKey::team(&theirs));
    assert_eq!(app.handle_key(ch('q')), vec![Command::Quit]);
    assert!(app.should_quit);

    let (mut app, _, _, ours2, theirs2) = front_app();
    app.note_sent(&[Command::RunGroup {
        group_id: ours2.clone(),
        prompt: "go".into(),
    }]);
    run_started(&mut app, RunKey::team(&ours2));
    run_started(&mut app, RunKey::team(&theirs2));
    assert!(app.handle_key(ch('q')).is_empty());
    let (message, chosen) = quit_message(&app);
    assert!(message.contains("Research Panel"), "{message}");
    assert!(!message.contains("Code Review Team"), "{message}");
    assert!(message.contains("1 other run(s) go on in the host"), "{message}");
    assert_eq!(chosen, 0, "nothing waits: leave them running");
    app.handle_key(ch('s'));
    let commands = app.handle_key(ch('y'));
    assert!(commands.contains(&Command::Stop {
        key: RunKey::team(&ours2)
    }));
    assert!(!commands.contains(&Command::Stop {
        key: RunKey::team(&theirs2)
    }));
}

#[test]
fn a_run_of_this_tui_waiting_for_an_approval_is_named_and_stopping_is_the_default() {
    let (mut app, _, _, ours, _) = front_app();
    app.note_sent(&[Command::RunGroup {
        group_id: ours.clone(),
        prompt: "go".into(),
    }]);
    let run = run_started(&mut app, RunKey::team(&ours));
    let member = member_of(&app, &ours);
    let call = convert_time_call();
    approval_requested(&mut app, &run, &member, 1, &call);
    let offer = app.quit_offer();
    let (message, chosen) = (offer.message, offer.chosen);
    assert!(
        message.contains("waits for you (approval of time/convert_time)"),
        "{message}"
    );
    assert_eq!(chosen, 1, "stop them is the default");
}

#[test]
fn when_the_host_goes_away_the_runs_are_interrupted_and_quitting_asks_nothing() {
    let (mut app, _, _, ours, _) = front_app();
    app.note_sent(&[Command::RunGroup {
        group_id: ours.clone(),
        prompt: "go".into(),
    }]);
    run_started(&mut app, RunKey::team(&ours));
    app.handle_app_event(AppEvent::HostLost {
        why: "the huddle host did not start in time".into(),
    });
    assert!(!app.anything_running());
    assert!(!app.dialogs.is_empty(), "the TUI says the host went away");
    app.dialogs.clear();
    assert_eq!(app.handle_key(ch('q')), vec![Command::Quit]);
}

#[test]
fn a_target_deleted_in_another_window_keeps_the_text_and_sends_it_nowhere() {
    let (mut app, remote, mirror, ours, _) = front_app();
    assert_eq!(app.selected_group_id().as_deref(), Some(ours.as_str()));
    // Another window deletes the team this one shows while text is typed for it.
    app.handle_key(ch('i'));
    type_text(&mut app, "hello?");
    let mut after = mirror.snapshot();
    after.groups.retain(|g| g.id != ours);
    after.sessions.retain(|s| s.group_id != ours);
    assert!(remote.install(after, 2));
    app.handle_app_event(AppEvent::OrgChanged);
    assert_eq!(app.composer.text(), "hello?", "the text is kept");
    let flash = app.flash.clone().map(|(t, _)| t).unwrap_or_default();
    assert!(
        flash.contains("`Research Panel` was deleted in another huddle window"),
        "{flash}"
    );
    assert_eq!(app.focus, huddle::tui::layout::Focus::Sidebar);
    // Enter from the composer sends nothing to what the cursor now rests on.
    app.focus = huddle::tui::layout::Focus::Composer;
    let sent = app.handle_key(key(crossterm::event::KeyCode::Enter));
    assert!(
        !sent
            .iter()
            .any(|c| matches!(c, Command::RunGroup { .. } | Command::Chat { .. })),
        "{sent:?}"
    );
    assert_eq!(app.composer.text(), "hello?");
}

fn reconnected(app: &mut App, reconnected: huddle::tui::command::Reconnected) -> Vec<Command> {
    let (ack, mut acked) = tokio::sync::oneshot::channel();
    let commands = app.handle_app_event(AppEvent::Reconnected(reconnected, ack));
    assert!(acked.try_recv().is_ok(), "the link is told to go on");
    commands
}

fn flash(app: &App) -> String {
    app.flash.clone().map(|(t, _)| t).unwrap_or_default()
}

/// Review 23-2 finding C: the host cut this TUI off (it read too slowly) and the link connected
/// again: no "went away" dialog, a short notice; its runs are set aside until the host's
/// replay brings the ones going again (still this TUI's); its draft and focus stay.
#[test]
fn a_tui_cut_off_and_connected_again_keeps_its_runs_draft_and_focus() {
    let (mut app, _, _, ours, _) = front_app();
    app.note_sent(&[Command::RunGroup {
        group_id: ours.clone(),
        prompt: "go".into(),
    }]);
    let run = run_started(&mut app, RunKey::team(&ours));
    app.handle_key(ch('i'));
    type_text(&mut app, "half a thought");
    let focus = app.focus;
    // A call that waits: the replay asks it again, so the popup's copy goes.
    let member = member_of(&app, &ours);
    let call = convert_time_call();
    approval_requested(&mut app, &run, &member, 1, &call);
    assert!(app.dialogs.approvals().is_some());
    reconnected(
        &mut app,
        huddle::tui::command::Reconnected {
            pid: 4242,
            new_host: false,
            cut_off: Some("more than 16 MiB waited to go to it (it did not read)".into()),
            live: vec![RunKey::team(&ours)],
        },
    );
    assert!(app.dialogs.is_empty(), "no dialog");
    assert!(!app.host_lost);
    assert!(
        flash(&app).contains("cut this window off (more than 16 MiB waited"),
        "{}",
        flash(&app)
    );
    assert_eq!(app.composer.text(), "half a thought");
    assert_eq!(app.focus, focus);
    assert_eq!(app.selected_group_id().as_deref(), Some(ours.as_str()));
    // The replay brings the run again: it is still this TUI's (quitting offers to stop it).
    run_started(&mut app, RunKey::team(&ours));
    app.focus = huddle::tui::layout::Focus::Sidebar;
    app.handle_key(ch('q'));
    let (message, _) = quit_message(&app);
    assert!(message.contains("Runs you started here are going"), "{message}");
}

/// The host died (SIGKILL) and the link started a new one: the runs that were going are
/// interrupted and offered for resumption at once, with a notice; the draft and focus stay.
#[test]
fn a_tui_whose_host_died_reaches_a_new_one_and_offers_the_interrupted_runs() {
    let (mut app, remote, mirror, ours, _) = front_app();
    app.note_sent(&[Command::RunGroup {
        group_id: ours.clone(),
        prompt: "go".into(),
    }]);
    run_started(&mut app, RunKey::team(&ours));
    app.handle_key(ch('i'));
    type_text(&mut app, "half a thought");
    // The new host read the organization from disk: the run is open there, interrupted. Its
    // change count starts again (lower than the copy's): the copy takes it all the same.
    let mut after = mirror.snapshot();
    let mode = after.group(&ours).map(|g| g.mode).expect("the team");
    if let Some(g) = after.group_mut(&ours) {
        g.state.run = Some(huddle::model::OpenRun {
            runs: vec!["20261128T120000000Z-aaaaaaaa".into()],
            mode,
            prompt: "go".into(),
            ..Default::default()
        });
    }
    remote.reconnect(Box::new(Quiet), after, 0);
    assert!(mirror.read(|o| o.group(&ours).is_some_and(|g| g.state.run.is_some())));
    reconnected(
        &mut app,
        huddle::tui::command::Reconnected {
            pid: 77,
            new_host: true,
            cut_off: None,
            live: Vec::new(),
        },
    );
    assert!(!app.anything_running());
    assert!(
        flash(&app).contains(
            "The huddle host stopped; a new one is running (pid 77). 1 run was interrupted: y resumes it."
        ),
        "{}",
        flash(&app)
    );
    match app.dialogs.last() {
        Some(Dialog::Choice(c)) => assert_eq!(c.title, "Interrupted run"),
        _ => panic!("no resume offer"),
    }
    assert_eq!(app.composer.text(), "half a thought");
    assert_eq!(app.selected_group_id().as_deref(), Some(ours.as_str()));
}

/// This TUI runs the team `ours`, loses its host (it says so) and reaches a host again (pid,
/// new or the same) that lists a run of `ours`.
fn lost_then_reached(app: &mut App, ours: &str, pid: u32, new_host: bool) {
    app.note_sent(&[Command::RunGroup {
        group_id: ours.to_string(),
        prompt: "go".into(),
    }]);
    run_started(app, RunKey::team(ours));
    app.handle_app_event(AppEvent::HostLost {
        why: "the huddle host did not answer in time".into(),
    });
    assert!(!app.dialogs.is_empty(), "the loss is said");
    reconnected(
        app,
        huddle::tui::command::Reconnected {
            pid,
            new_host,
            cut_off: None,
            live: vec![RunKey::team(ours)],
        },
    );
}

/// The host could not be reached for a while and then answered again: the same host (its
/// pid), so its runs went on: the notice says so, never that a new host runs, and nothing is
/// offered for resumption.
#[test]
fn the_same_host_reached_again_after_a_while_is_not_called_a_new_one() {
    let (mut app, _, _, ours, _) = front_app();
    lost_then_reached(&mut app, &ours, 4242, false);
    assert!(!app.host_lost);
    let said = flash(&app);
    assert!(
        said.contains("The huddle host (pid 4242) answers again; the runs it had go on."),
        "{said}"
    );
    assert!(!said.contains("new one"), "{said}");
    assert!(
        app.dialogs.is_empty(),
        "the loss's notice is taken down, nothing offered for resumption"
    );
    // The replay brings the run again, still this TUI's (quitting offers to stop it).
    run_started(&mut app, RunKey::team(&ours));
    assert!(app.anything_running());
    assert!(app.started.contains(&RunKey::team(&ours)));
    app.focus = huddle::tui::layout::Focus::Sidebar;
    app.handle_key(ch('q'));
    let (message, _) = quit_message(&app);
    assert!(message.contains("Runs you started here are going"), "{message}");
}

/// A new host runs nothing this TUI started: a run it lists under the same key (another front
/// end started it there) is not this TUI's, so quitting never offers to stop it.
#[test]
fn a_new_hosts_run_under_a_key_this_tui_once_started_is_not_its_own() {
    let (mut app, _, _, ours, _) = front_app();
    lost_then_reached(&mut app, &ours, 99, true);
    run_started(&mut app, RunKey::team(&ours));
    assert!(app.anything_running());
    assert!(!app.started.contains(&RunKey::team(&ours)));
    app.dialogs.clear();
    app.focus = huddle::tui::layout::Focus::Sidebar;
    assert_eq!(
        app.handle_key(ch('q')),
        vec![Command::Quit],
        "nothing of its own: no offer"
    );
}

/// A TUI that started nothing says, once it quit, that other front ends' runs go on.
#[test]
fn a_tui_that_started_nothing_counts_the_runs_that_go_on() {
    let (mut app, _, _, ours, theirs) = front_app();
    app.note_sent(&[Command::RunGroup {
        group_id: ours.clone(),
        prompt: "go".into(),
    }]);
    run_started(&mut app, RunKey::team(&ours));
    run_started(&mut app, RunKey::team(&theirs));
    assert_eq!(app.left_going(), 2, "left running, both go on");
    app.started.clear();
    assert_eq!(
        app.handle_key(ch('q')),
        vec![Command::Quit],
        "nothing of its own: no offer"
    );
    assert_eq!(app.left_going(), 2);
}

/// A call of the time server's tool, as approvals in these tests ask about.
fn convert_time_call() -> ToolCall {
    ToolCall {
        id: "c1".into(),
        name: "time__convert_time".into(),
        arguments: "{}".into(),
    }
}

fn member_of(app: &App, group_id: &str) -> String {
    app.org
        .read(|o| {
            o.sessions
                .iter()
                .find(|s| s.group_id == group_id)
                .map(|s| s.id.clone())
        })
        .expect("a member")
}

/// A run another front end started (an MCP client's, `huddle run`'s) asks there: this TUI
/// puts no popup in front of its user, its `y` answers nothing, and the status line says
/// where it is asked (review 23-3 H). A TUI's run is still asked here.
#[test]
fn an_approval_of_a_run_another_front_end_started_is_not_asked_here() {
    let (mut app, remote, _, ours, theirs) = front_app();
    let run = run_started(&mut app, RunKey::team(&theirs));
    remote.asked_elsewhere(&run, &theirs, "huddle mcp (pid 42)");
    let call = convert_time_call();
    let member = member_of(&app, &theirs);
    approval_requested(&mut app, &run, &member, 1, &call);
    assert!(
        !matches!(app.dialogs.last(), Some(Dialog::Approval(_))),
        "no popup for another front end's run"
    );
    let text = screen_text(&render(&mut app, 160, 30));
    assert!(text.contains("asked in huddle mcp (pid 42)"), "{text}");
    let answered = app.handle_key(ch('y'));
    assert!(
        !answered
            .iter()
            .any(|c| matches!(c, Command::AnswerApproval { .. })),
        "{answered:?}"
    );
    // A run of a TUI: asked here as before.
    let mine = run_started(&mut app, RunKey::team(&ours));
    let member = member_of(&app, &ours);
    approval_requested(&mut app, &mine, &member, 2, &call);
    assert!(matches!(app.dialogs.last(), Some(Dialog::Approval(_))));
    let answered = app.handle_key(ch('y'));
    assert!(
        answered
            .iter()
            .any(|c| matches!(c, Command::AnswerApproval { approval_id: 2, .. })),
        "{answered:?}"
    );
}

/// A host that never answers in time: every edit it is asked for is recorded, then said to be
/// unanswered (as the link does after its wait).
struct Unanswering(Arc<std::sync::Mutex<Vec<String>>>);

impl EditTransport for Unanswering {
    fn call(&mut self, call: EditCall) -> Result<(serde_json::Value, Option<(Organization, u64)>), String> {
        let name = format!("{call:?}");
        let name = name.split([' ', '{', '(']).next().unwrap_or_default().to_string();
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(name);
        Err("the huddle host (pid 4242) did not answer within 10s".into())
    }
}

#[test]
fn a_shared_team_is_asked_of_the_host_off_the_ui_thread_and_an_unanswered_one_may_appear() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let mirror = OrgHandle::in_memory(org);
    let remote = Arc::new(RemoteEdits::new(
        Box::new(Unanswering(Arc::clone(&asked))),
        mirror.clone(),
        1,
    ));
    let edits = Edits::remote(mirror.clone(), config(), repo(), Arc::clone(&remote));
    let (mut app, _) = App::new(edits.clone(), config(), repo(), Vec::new());
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(builtin_catalog())));
    app.handle_app_event(AppEvent::GitChecked(Err("not a git repository".into())));
    // A preset that shares the repository, outside git: made at once, no strategy question.
    app.handle_key(ch('n'));
    type_text(&mut app, "code review");
    let commands = app.handle_key(key(crossterm::event::KeyCode::Enter));
    assert!(
        asked.lock().expect("asked").is_empty(),
        "the key handler asked the host itself: {:?}",
        asked.lock().expect("asked")
    );
    let [Command::CreateTeam { preset, strategy }] = commands.as_slice() else {
        panic!("the team is asked for in the runtime: {commands:?}")
    };
    assert_eq!(*strategy, huddle::model::WorktreeStrategy::Shared);
    // The runtime asks (on a blocking thread); the host does not answer.
    let event = huddle::tui::run_blocking(&edits, &repo(), commands[0].clone()).expect("an answer");
    assert_eq!(*asked.lock().expect("asked"), ["CreateTeamWith"]);
    app.handle_app_event(event);
    let Some(Dialog::Notice(notice)) = app.dialogs.last() else {
        panic!("no notice")
    };
    assert_eq!(notice.title, "Team not confirmed");
    assert!(
        notice.text.contains(&preset.name) && notice.text.contains("may still appear"),
        "{}",
        notice.text
    );
}

#[test]
fn files_the_host_was_asked_to_remove_without_an_answer_are_said_not_confirmed() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (_, _, mirror, ours, _) = front_app();
    let remote = Arc::new(RemoteEdits::new(
        Box::new(Unanswering(Arc::clone(&asked))),
        mirror.clone(),
        1,
    ));
    let edits = Edits::remote(mirror.clone(), config(), repo(), Arc::clone(&remote));
    let (mut app, _) = App::new(edits.clone(), config(), repo(), Vec::new());
    // A deleted group's transcripts and run files (no worktree): before, nothing was said.
    let removal = huddle::workspace::Removal {
        sessions: mirror.read(|o| o.sessions_in(&ours).iter().map(|s| s.id.clone()).collect()),
        group: Some(ours),
        ..Default::default()
    };
    let event = huddle::tui::run_blocking(&edits, &repo(), Command::RemoveFiles(removal))
        .expect("an unanswered removal is told");
    assert_eq!(*asked.lock().expect("asked"), ["RemoveFiles"]);
    app.handle_app_event(event);
    let Some(Dialog::Notice(notice)) = app.dialogs.last() else {
        panic!("no notice")
    };
    assert_eq!(notice.title, "Removal not confirmed");
    assert!(notice.text.contains("did not answer"), "{}", notice.text);
    // A prune of several teams the same host leaves unanswered: one notice, not one each.
    let open = app.dialogs.len();
    let again = huddle::tui::run_blocking(
        &edits,
        &repo(),
        Command::RemoveFiles(huddle::workspace::Removal::default()),
    )
    .expect("told");
    app.handle_app_event(again);
    assert_eq!(app.dialogs.len(), open);
}
