//! What the TUI says about money: a session's cost in its title, a plain session's and a team's
//! in the sidebar, a team's spending (in all, per member, this run) and its cost budget with
//! what is left, and the forecast of its next run before it starts.

use huddle::engine::events::{EventKind, RunKey, RunTotals};
use huddle::model::forecast::{Basis, RunSample, forecast};
use huddle::model::{Cost, Mode, Organization, Session, Usage, reconcile};
use huddle::presets::create_team_group;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};

use super::tui_support::{builtin_catalog, config, engine_event, new_app, render, repo, screen_text};
use crate::tui_snapshot;

const TEAM: &str = "Code Review Team";

fn priced(usd: f64, turns: u32) -> Cost {
    Cost {
        usd,
        priced: turns,
        unpriced: 0,
    }
}

/// An app with the Code Review Team (selected) that spent $1.234 in earlier runs, its members
/// their share, with a cost budget of $2 a run; and a plain session that spent $0.042.
fn app_with_spending() -> (App, String, Vec<Command>) {
    app_with_spending_as(|_| {})
}

/// The same, the team changed by `change` first.
fn app_with_spending_as(change: impl FnOnce(&mut huddle::model::Group)) -> (App, String, Vec<Command>) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let catalog = builtin_catalog();
    let preset = catalog.find(TEAM).expect("preset").clone();
    let id = create_team_group(&mut org, &preset, &config(), Some(&repo()));
    let group = org.groups.iter_mut().find(|g| g.id == id).expect("the team");
    group.cost = priced(1.234, 12);
    group.budget.max_cost_usd = Some(2.0);
    change(group);
    for s in org.sessions.iter_mut().filter(|s| s.group_id == id) {
        s.cost = if s.name.ends_with("security") {
            priced(0.9, 4)
        } else {
            priced(0.1, 2)
        };
    }
    let default_group = org
        .groups
        .iter()
        .find(|g| !g.is_team())
        .map(|g| g.id.clone())
        .expect("the default group");
    let mut chat = Session::new("chat", default_group, "anthropic/claude-sonnet-4-5");
    chat.cost = priced(0.042, 3);
    org.sessions.push(chat);
    org.ui.selected_group = Some(id.clone());
    let (mut app, commands) = new_app(org, config());
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(catalog)));
    (app, id, commands)
}

fn sample(cost: f64, tokens: u64, secs: u64) -> RunSample {
    RunSample {
        cost_usd: Some(cost),
        tokens,
        duration_ms: secs * 1000,
    }
}

/// The forecast worked out from four earlier runs of the team.
fn forecast_loaded(app: &mut App, id: &str) {
    let runs = [
        sample(0.10, 20_000, 90),
        sample(0.12, 24_000, 130),
        sample(0.14, 26_000, 150),
        sample(0.30, 51_000, 270),
    ];
    app.handle_app_event(AppEvent::ForecastLoaded {
        group_id: id.to_string(),
        forecast: forecast(&runs),
        basis: Basis { own: 4, preset: None },
    });
}

#[test]
fn a_team_shown_asks_for_its_forecast_once_and_again_after_each_run() {
    let (mut app, id, commands) = app_with_spending();
    let asked = |commands: &[Command]| {
        commands
            .iter()
            .filter(|c| matches!(c, Command::LoadForecast { group_id } if *group_id == id))
            .count()
    };
    assert_eq!(asked(&commands), 1, "{commands:?}");
    // Shown again: already asked.
    let again = app.handle_app_event(AppEvent::CatalogLoaded(Box::new(builtin_catalog())));
    assert_eq!(asked(&again), 0, "{again:?}");
    engine_event(
        &mut app,
        &id,
        Some("run-1"),
        EventKind::RunStarted {
            key: RunKey::team(&id),
        },
    );
    let ended = engine_event(
        &mut app,
        &id,
        Some("run-1"),
        EventKind::RunEnded {
            key: RunKey::team(&id),
            outcome: None,
            iterations: 0,
            failed: None,
            totals: None,
        },
    );
    assert_eq!(asked(&ended), 1, "a run ended: one more to go by: {ended:?}");
}

#[test]
fn before_a_run_the_team_shows_what_it_spent_and_what_the_next_run_will_cost() {
    let (mut app, id, _) = app_with_spending();
    forecast_loaded(&mut app, &id);
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(text.contains("spent $1.23"), "the team's total:\n{text}");
    assert!(text.contains("$0.900,"), "each member's share:\n{text}");
    assert!(
        text.contains("forecast of the next run: ≈ $0.130 (90%: $0.252)"),
        "median and 90th percentile:\n{text}"
    );
    assert!(text.contains("4 earlier runs of this team"), "{text}");
    assert!(text.contains(" $1.23"), "the sidebar's team row:\n{text}");
    tui_snapshot!("team_cost_before_a_run_160x40", text);
}

#[test]
fn during_a_run_the_panel_counts_its_cost_against_the_budget() {
    let (mut app, id, _) = app_with_spending();
    forecast_loaded(&mut app, &id);
    let security = app
        .org
        .read(|o| {
            o.sessions
                .iter()
                .find(|s| s.group_id == id && s.name.ends_with("security"))
                .map(|s| (s.id.clone(), s.name.clone()))
        })
        .expect("the security reviewer");
    let turn = |cost: Option<f64>| EventKind::TurnFinished {
        session_id: security.0.as_str().into(),
        session: security.1.as_str().into(),
        generation: 1,
        success: true,
        interrupted: false,
        duration_ms: 1200,
        usage: Some(Usage::new(3000, 400)),
        error: None,
        message: None,
        cost_usd: cost,
    };
    for kind in [
        EventKind::RunStarted {
            key: RunKey::team(&id),
        },
        EventKind::CycleStarted {
            mode: Mode::OrchestratorReflect,
            max_iterations: 4,
        },
        EventKind::IterationStarted {
            iteration: 1,
            max_iterations: 0,
        },
        turn(Some(0.9)),
        turn(Some(0.75)),
    ] {
        engine_event(&mut app, &id, Some("run-1"), kind);
    }
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(text.contains("$1.65"), "the run's cost so far:\n{text}");
    // The panel is narrow: what is left wraps onto the next line.
    assert!(
        text.contains("budget: $1.65 / $2.00") && text.contains("($0.350 left)"),
        "the budget and what is left:\n{text}"
    );
    assert!(
        !text.contains("forecast of the next run"),
        "a run going is no forecast:\n{text}"
    );
    tui_snapshot!("team_cost_during_a_run_160x40", text);

    // An unpriced turn: the cost is at least what was counted.
    engine_event(&mut app, &id, Some("run-1"), turn(None));
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(text.contains("budget: ≥$1.65 / $2.00"), "{text}");
    // The run's end says its own total (its evaluator's calls included).
    engine_event(
        &mut app,
        &id,
        Some("run-1"),
        EventKind::RunEnded {
            key: RunKey::team(&id),
            outcome: None,
            iterations: 1,
            failed: None,
            totals: Some(RunTotals {
                usage: Usage::new(9000, 1200),
                cost_usd: Some(1.8),
                unpriced_turns: 0,
                duration_ms: 4000,
            }),
        },
    );
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(text.contains("$1.80"), "the run's total:\n{text}");
    // Between runs the forecast comes under the head line, also when that wraps (the panel
    // is narrow): the run's cost ends the head, the forecast follows.
    forecast_loaded(&mut app, &id);
    let text = screen_text(&render(&mut app, 160, 40));
    let panel: Vec<&str> = text
        .lines()
        .filter_map(|l| l.rsplit("││").next())
        .map(|l| l.trim_end_matches('│').trim())
        .collect();
    let head = panel
        .iter()
        .position(|l| l.starts_with("iteration 1/"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(panel[head + 1], "$1.80", "{text}");
    assert!(panel[head + 2].starts_with("next run ≈"), "{text}");
}

#[test]
fn a_session_says_what_it_spent_in_its_title_and_the_sidebar() {
    let (mut app, _, _) = app_with_spending();
    let chat = app
        .org
        .read(|o| o.session_by_name("chat").map(|s| s.id.clone()))
        .expect("the chat");
    for _ in 0..20 {
        if app.selected_session_id().as_deref() == Some(chat.as_str()) {
            break;
        }
        app.handle_key(super::tui_support::ch('k'));
    }
    assert_eq!(app.selected_session_id().as_deref(), Some(chat.as_str()));
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(
        text.contains("chat · anthropic/claude-sonnet-4-5 · $0.042"),
        "the title:\n{text}"
    );
    assert!(text.contains("chat $0.042"), "the sidebar's row:\n{text}");
}

/// A team `huddle run` made has a long row (when it ran, then the preset): the mode goes and
/// the name is cut, so that when it ran and what its runs cost still show.
#[test]
fn a_long_team_row_cuts_its_name_not_its_cost() {
    let (mut app, _, _) = app_with_spending_as(|g| {
        g.name = "Code Review Team · run Nov 27 17:39 (12)".into();
        g.headless_at = Some(chrono::Utc::now());
    });
    let text = screen_text(&render(&mut app, 120, 32));
    let row = text
        .lines()
        .find(|l| l.contains("▾ Nov 27 17:39 (12)"))
        .unwrap_or_else(|| panic!("the team's row:\n{text}"));
    assert!(row.contains("▾ Nov 27 17:39 (12) ·… $1.23"), "{row}");
    // Wider: the whole name, still without the mode.
    let text = screen_text(&render(&mut app, 200, 40));
    assert!(
        text.contains("▾ Nov 27 17:39 (12) · Code Review Team $1.23"),
        "{text}"
    );
}

/// The new-team picker says what runs of teams made from each preset cost (worked out after
/// the catalog is read, off the UI thread), or that there is none yet.
#[test]
fn the_preset_picker_shows_each_presets_forecast() {
    let (mut app, _, _) = app_with_spending();
    app.focus = huddle::tui::layout::Focus::Sidebar;
    app.handle_key(super::tui_support::ch('n'));
    for c in TEAM.chars() {
        app.handle_key(super::tui_support::ch(c));
    }
    let before = screen_text(&render(&mut app, 160, 40));
    assert!(before.contains(TEAM), "{before}");
    assert!(
        !before.contains("forecast"),
        "nothing said before it is worked out: {before}"
    );
    let runs = [sample(0.10, 20_000, 90), sample(0.30, 51_000, 270)];
    let mut forecasts = huddle::tui::command::PresetForecasts::new();
    forecasts.insert(
        format!("builtin:{TEAM}"),
        (
            forecast(&runs),
            Basis {
                own: 0,
                preset: Some((2, TEAM.into())),
            },
        ),
    );
    app.handle_app_event(AppEvent::PresetForecasts(forecasts));
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(
        text.contains("forecast ≈ $0.200/run (90%: $0.280) · 3m00s, from 2 runs of teams made"),
        "{text}"
    );
    // Another preset without runs says so.
    let mut none = huddle::tui::command::PresetForecasts::new();
    none.insert(format!("builtin:{TEAM}"), (None, Basis::default()));
    app.handle_app_event(AppEvent::PresetForecasts(none));
    let text = screen_text(&render(&mut app, 160, 40));
    assert!(text.contains("forecast: none yet"), "{text}");
}
