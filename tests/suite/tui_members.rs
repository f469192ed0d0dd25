//! `N` always makes a plain session; `A` adds a member to a team (name, model, system prompt);
//! the mode and max iterations do not change under a run in progress (issue 15 item 8).

use crossterm::event::KeyCode;
use huddle::engine::events::{EventKind, RunKey};
use huddle::model::{GroupKind, Mode, Role};

use super::tui_support::{
    app_with_team, ch, ctrl, default_group, engine_event, key, render, run_ended, screen_text, start_cycle,
    type_text,
};

fn clear_field(app: &mut huddle::tui::App) {
    for _ in 0..30 {
        app.handle_key(key(KeyCode::Backspace));
    }
}

fn flash(app: &huddle::tui::App) -> String {
    app.flash.as_ref().map(|(t, _)| t.clone()).unwrap_or_default()
}

#[test]
fn n_on_a_team_makes_a_plain_session_outside_it() {
    let (mut app, team) = app_with_team("Research Panel");
    let members_before = app.org.read(|o| o.sessions_in(&team).len());
    app.handle_key(ch('N'));
    clear_field(&mut app);
    type_text(&mut app, "notes");
    app.handle_key(key(KeyCode::Enter));
    let (group, is_team, role) = app
        .org
        .read(|o| {
            o.session_by_name("notes")
                .map(|s| (s.group_id.clone(), s.team, s.role))
        })
        .expect("created");
    assert_eq!(group, default_group(&app));
    assert!(!is_team && role == Role::Worker);
    assert_eq!(app.org.read(|o| o.sessions_in(&team).len()), members_before);
    assert_eq!(
        app.org.read(|o| o.group(&group).map(|g| g.kind)),
        Some(GroupKind::Default)
    );
}

#[test]
fn a_adds_a_member_with_its_name_model_and_system_prompt() {
    let (mut app, team) = app_with_team("Research Panel");
    app.handle_key(ch('A'));
    let text = screen_text(&render(&mut app, 80, 24));
    assert!(text.contains("Add a team member: name"), "{text}");
    clear_field(&mut app);
    type_text(&mut app, "economist");
    app.handle_key(key(KeyCode::Enter));
    // The model picker: a typed slug.
    type_text(&mut app, "sim/slow-200ms");
    app.handle_key(key(KeyCode::Enter));
    let text = screen_text(&render(&mut app, 80, 24));
    assert!(text.contains("System prompt of economist"), "{text}");
    type_text(&mut app, "You weigh costs.");
    app.handle_key(ctrl('s'));
    let member = app
        .org
        .read(|o| o.session_by_name("research-panel-economist").cloned())
        .expect("the member was added");
    assert_eq!(member.group_id, team);
    assert!(member.team && member.role == Role::Worker);
    assert_eq!(member.model, "sim/slow-200ms");
    assert_eq!(member.system_prompt.as_deref(), Some("You weigh costs."));
    assert_eq!(app.selected_session_id(), Some(member.id));
    assert!(app.dialogs.is_empty());
}

#[test]
fn a_refuses_an_unknown_model_and_a_outside_a_team_says_so() {
    let (mut app, _) = app_with_team("Research Panel");
    app.handle_key(ch('A'));
    clear_field(&mut app);
    type_text(&mut app, "x");
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "nowhere/model");
    app.handle_key(key(KeyCode::Enter));
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(text.contains("names no configured provider"), "{text}");
    assert!(app.org.read(|o| o.session_by_name("research-panel-x").is_none()));

    let mut plain = super::tui_support::empty_app();
    plain.handle_key(ch('A'));
    assert!(plain.dialogs.is_empty());
    assert!(flash(&plain).contains("select a team first"));
}

#[test]
fn mode_and_max_iterations_are_refused_while_the_team_runs() {
    let (mut app, team) = app_with_team("Research Panel");
    let run = start_cycle(&mut app, &team, Mode::Broadcast);
    app.handle_key(ch('M'));
    assert!(app.dialogs.is_empty(), "no mode picker during a run");
    assert!(flash(&app).contains("the team is running"), "{}", flash(&app));
    app.handle_key(ch('I'));
    assert!(app.dialogs.is_empty());
    assert!(flash(&app).contains("max iterations"));
    engine_event(
        &mut app,
        &team,
        Some(&run),
        EventKind::CycleFinished {
            outcome: huddle::model::CycleOutcome::Completed,
            iterations: 1,
            max_iterations: 1,
            mode: Some(Mode::Broadcast),
            summary: String::new(),
        },
    );
    run_ended(&mut app, &run, RunKey::team(&team), None);
    app.handle_key(ch('M'));
    assert!(!app.dialogs.is_empty(), "allowed once the run has ended");
}

/// Review 28 item 13: a team switched to dispatch in the TUI kept the group default of 5
/// iterations (the built-in dispatch preset has 12; each act of the orchestrator counts).
#[test]
fn a_team_switched_to_dispatch_gets_dispatchs_max_iterations_unless_it_chose_its_own() {
    let (mut app, team) = app_with_team("Research Panel");
    let pick = |app: &mut huddle::tui::App, mode: &str| {
        app.handle_key(ch('M'));
        type_text(app, mode);
        app.handle_key(key(KeyCode::Enter));
        app.org
            .read(|o| o.group(&team).map(|g| (g.mode, g.max_iterations)))
    };
    assert_eq!(
        app.org.read(|o| o.group(&team).map(|g| g.max_iterations)),
        Some(huddle::model::DEFAULT_MAX_ITERATIONS)
    );
    assert_eq!(pick(&mut app, "sub-agents"), Some((Mode::Dispatch, 12)));
    // Back to a mode that iterates: its default again.
    assert_eq!(
        pick(&mut app, "repeat until"),
        Some((Mode::OrchestratorReflect, huddle::model::DEFAULT_MAX_ITERATIONS))
    );
    // A limit the user set stays whatever the mode.
    app.handle_key(ch('I'));
    clear_field(&mut app);
    type_text(&mut app, "7");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(pick(&mut app, "sub-agents"), Some((Mode::Dispatch, 7)));
}

#[test]
fn a_mode_picked_just_before_a_run_started_is_refused() {
    let (mut app, team) = app_with_team("Research Panel");
    app.handle_key(ch('M'));
    assert!(!app.dialogs.is_empty());
    start_cycle(&mut app, &team, Mode::Broadcast);
    // The picker is still open: choosing now changes nothing under the run.
    type_text(&mut app, "sequential");
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        app.org.read(|o| o.group(&team).map(|g| g.mode)),
        Some(Mode::Broadcast)
    );
    let text = screen_text(&render(&mut app, 100, 30));
    assert!(text.contains("the team is running"), "{text}");
}

#[test]
fn the_header_shows_the_mode_the_run_is_in() {
    let (mut app, team) = app_with_team("Research Panel");
    // A run started with another mode (`huddle run --mode`, say).
    start_cycle(&mut app, &team, Mode::Sequential);
    let text = screen_text(&render(&mut app, 120, 30));
    assert!(text.contains("Research Panel · sequential · timeline"), "{text}");
}

/// A second team from one preset: its members' sessions are made unique (`…-analyst-2`), but
/// the sidebar, the cycle panel and the timeline show them by handle, as the first team's
/// (issue 28 item 3).
#[test]
fn a_second_team_from_a_preset_shows_its_members_by_handle() {
    use huddle::model::{Organization, reconcile};
    use huddle::presets::create_team_group;
    use huddle::tui::command::AppEvent;
    let config = super::tui_support::config();
    let catalog = super::tui_support::builtin_catalog();
    let preset = catalog.find("Research Panel").expect("preset").clone();
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    // As `huddle run` makes them: a team named after the preset, renamed once made.
    let first = create_team_group(&mut org, &preset, &config, Some(&super::tui_support::repo()));
    if let Some(g) = org.group_mut(&first) {
        g.name = "Research Panel · run Nov 27 17:39".into();
    }
    let second = create_team_group(&mut org, &preset, &config, Some(&super::tui_support::repo()));
    let analyst = org
        .sessions_in(&second)
        .iter()
        .find(|s| s.handle.as_deref() == Some("analyst"))
        .map(|s| (s.id.clone(), s.name.clone()))
        .expect("an analyst");
    assert!(analyst.1.ends_with("-2"), "made unique: {}", analyst.1);
    org.ui.selected_group = Some(second.clone());
    let (mut app, _) = super::tui_support::new_app(org, config);
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(catalog)));
    let run = start_cycle(&mut app, &second, Mode::Broadcast);
    engine_event(
        &mut app,
        &second,
        Some(&run),
        EventKind::WorkerFinished {
            iteration: 1,
            worker: analyst.1.clone(),
            session_id: analyst.0.clone(),
            success: true,
            duration_ms: 300,
        },
    );
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(!screen.contains("analyst-2"), "{screen}");
    assert!(screen.contains("· analyst "), "the sidebar row: {screen}");
    assert!(screen.contains("✓ analyst "), "the cycle panel's row: {screen}");
}

/// Mode `team`'s chair goes by the name its preset gives it (`Chair`), not `orchestrator`
/// (issue 28 item 3).
#[test]
fn the_chair_of_a_deliberation_is_shown_by_its_display_name() {
    let (mut app, _) = app_with_team("Deliberation Panel");
    let screen = screen_text(&render(&mut app, 120, 40));
    assert!(screen.contains("· Chair orch "), "{screen}");
    assert!(
        screen.contains("Chair (orchestrator)"),
        "the team's header: {screen}"
    );
}

/// `M` opens the mode picker on the team's current mode: Enter keeps it (issue 28 item 18).
#[test]
fn the_mode_picker_starts_on_the_current_mode() {
    let (mut app, team) = app_with_team("Incident Investigation");
    app.handle_key(ch('M'));
    assert!(!app.dialogs.is_empty());
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(
        app.org.read(|o| o.group(&team).map(|g| g.mode)),
        Some(Mode::Dispatch)
    );
}

/// A member's header and its direct-chat box name it by its handle (`analyst`), not by its
/// session's name (`research-panel-analyst`); neither it nor a session of its own is labelled
/// `worker` (issue 28 items 3 and 18).
#[test]
fn a_member_is_headed_by_its_handle_and_a_plain_session_has_no_role() {
    let (mut app, team) = app_with_team("Research Panel");
    let analyst = app
        .org
        .read(|o| o.session_by_name("research-panel-analyst").map(|s| s.id.clone()))
        .expect("the analyst");
    for _ in 0..10 {
        if app.selected_session_id().as_deref() == Some(analyst.as_str()) {
            break;
        }
        app.handle_key(ch('j'));
    }
    assert_eq!(app.selected_session_id().as_deref(), Some(analyst.as_str()));
    assert_eq!(app.selected_group_id().as_deref(), Some(team.as_str()));
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(
        text.contains(" analyst · sim/demo "),
        "the member's header:\n{text}"
    );
    assert!(
        text.contains("Direct chat with analyst "),
        "the composer's title:\n{text}"
    );
    assert!(!text.contains("research-panel-analyst"), "{text}");

    app.handle_key(ch('N'));
    clear_field(&mut app);
    type_text(&mut app, "notes");
    app.handle_key(key(KeyCode::Enter));
    let text = screen_text(&render(&mut app, 160, 40));
    let header = text
        .lines()
        .find(|l| l.contains(" notes · "))
        .unwrap_or_else(|| panic!("the session's header:\n{text}"));
    assert!(!header.contains("worker"), "{header}");
}
