//! Snapshots of a team's run as its view draws it, one real run per mode (recorded on the
//! offline sim, `tests/fixtures/runs/`), at 80 and 120 columns: the team's timeline (its lines
//! are `describe`'s words; `cycle_view.rs` keeps them), from its top, above the cycle panel
//! (`team_panel.rs`). Each is the finished run; a dispatch run is also drawn while it goes.

use std::time::Duration;

use super::team_panel::Props;
use super::test_screen::{WIDTHS, draw, events_of, panel_after, panel_keys, team_org, timeline_props};
use super::transcript_pane::{Edge, TranscriptPane};
use crate::model::RunBudget;

/// A run of `preset` recorded in `fixture`, drawn at `width`: the timeline (`timeline` rows)
/// above the panel (`panel` rows). `cut`: the run's first events only, while it goes.
fn screen(preset: &str, fixture: &str, width: u16, cut: Option<usize>) -> String {
    let (timeline, panel_rows) = (30u16, 14u16);
    let max = fixture
        .lines()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["event"] == "cycle_started").then(|| v["max_iterations"].as_u64())?
        })
        .unwrap_or(1) as u32;
    let (org, group_id) = team_org(preset, max);
    let mut events = events_of(fixture, &group_id);
    if let Some(n) = cut {
        events.truncate(n);
    }
    // Two minutes ago: what still runs shows 2m05s.
    let panel = panel_after(&events, &org, Duration::from_secs(125));
    let running = cut.is_some();
    // From its top (once laid out): the team, then the run's lines; the panel shows how it
    // ends.
    let props = timeline_props(&org, &group_id, panel.shown_cycle(&group_id));
    let mut pane = TranscriptPane::default();
    draw(width, timeline, |f| pane.render(f, f.area(), &props));
    pane.to_edge(Edge::Timeline(&group_id), true);
    draw(width, timeline + panel_rows, |f| {
        let area = f.area();
        let top = ratatui::layout::Rect {
            height: timeline,
            ..area
        };
        let bottom = ratatui::layout::Rect {
            y: area.y + timeline,
            height: panel_rows,
            ..area
        };
        pane.render(f, top, &props);
        panel.render(
            f,
            bottom,
            &Props {
                group_id: group_id.clone(),
                running,
                pause_requested: false,
                kept: 0,
                tick: 0,
                keys: panel_keys(),
                budget: RunBudget::default(),
                now: std::time::Instant::now(),
            },
        );
    })
}

macro_rules! mode_snapshots {
    ($($test:ident: $preset:literal, $file:literal;)+) => {$(
        #[test]
        fn $test() {
            let fixture = include_str!(concat!("../../tests/fixtures/runs/", $file, ".ndjson"));
            for width in WIDTHS {
                insta::assert_snapshot!(
                    format!("{}_{width}", stringify!($test)),
                    screen($preset, fixture, width, None)
                );
            }
        }
    )+};
}

mode_snapshots! {
    broadcast: "Research Panel", "broadcast";
    sequential: "Draft, Critique, Edit", "sequential";
    orchestrator: "Planning Team", "orchestrator";
    orchestrator_reflect: "Code Review Team", "orchestrator_reflect";
    relay: "Negotiator", "relay";
    flow: "Help Desk Flow", "flow";
    pipeline: "Support Desk", "pipeline";
    dispatch: "Incident Investigation", "dispatch";
    team: "Deliberation Panel", "team";
}

#[test]
fn dispatch_while_it_runs() {
    let fixture = include_str!("../../tests/fixtures/runs/dispatch.ndjson");
    for width in WIDTHS {
        insta::assert_snapshot!(
            format!("dispatch_running_{width}"),
            screen("Incident Investigation", fixture, width, Some(20))
        );
    }
}
