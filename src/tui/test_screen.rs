//! For the widgets' own snapshot tests (beside each widget): a widget drawn into ratatui's
//! `TestBackend` at the widths a terminal commonly has and read back as text, the events of
//! real runs (recorded with `huddle run --events` on the offline sim, one file per mode in
//! `tests/fixtures/runs/`, ids and durations made stable), and the keys as the default keymap
//! names them.

use std::path::Path;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::action::Action;
use super::cycle_view::CycleView;
use super::keymap::Keymap;
use super::team_panel::{PanelKeys, TeamPanel};
use super::transcript_pane;
use crate::config::Config;
use crate::engine::events::EngineEvent;
use crate::model::{GroupId, Organization, Role};
use crate::presets::builtin::load_builtins;
use crate::presets::create_team_group;

/// The widths every widget is drawn at.
pub const WIDTHS: [u16; 2] = [80, 120];

/// What `draw` draws into: a frame of the test terminal.
pub type Frame<'a> = ratatui::Frame<'a>;

/// The screen `draw` leaves in a `width` × `height` terminal, one line per row (trailing
/// blanks cut).
pub fn draw(width: u16, height: u16, draw: impl FnOnce(&mut Frame<'_>)) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("a test terminal");
    terminal.draw(draw).expect("drawn");
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        let row: String = (0..buffer.area.width).map(|x| buffer[(x, y)].symbol()).collect();
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// The events of a run file of `tests/fixtures/runs/`.
pub fn events(ndjson: &str) -> Vec<EngineEvent> {
    ndjson
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a recorded event"))
        .collect()
}

/// A team panel that followed `events` of `org`'s groups (a run `ago` in the past, so what
/// still runs shows a time that does not move while a test draws it); their members named as
/// the app names them (`Names::for_group`).
pub fn panel_after(events: &[EngineEvent], org: &Organization, ago: Duration) -> TeamPanel {
    let mut panel = TeamPanel::default();
    let then = Instant::now().checked_sub(ago).unwrap_or_else(Instant::now);
    for e in events {
        panel.follow(
            e,
            then,
            || None,
            || crate::describe::Names::for_group(org, &e.group_id, &e.group),
        );
    }
    panel
}

pub fn keymap() -> Keymap {
    Keymap::default()
}

/// The keys the cycle panel names, as the default keymap has them.
pub fn panel_keys() -> PanelKeys {
    let k = keymap();
    PanelKeys {
        pause: k.key_label(Action::TogglePauseCycle),
        stop: k.key_label(Action::StopCycle),
        older: k.key_label(Action::OlderRun),
        newer: k.key_label(Action::NewerRun),
        relay_review: k.key_label(Action::RelayDraft),
    }
}

/// An organization with one team made from the built-in preset `preset` (no repository, the
/// sim's model), its max iterations `max_iterations`; the team's id.
pub fn team_org(preset: &str, max_iterations: u32) -> (Organization, GroupId) {
    let config = Config::parse("default_model: sim/demo\n", Path::new("config.yaml")).expect("a config");
    let presets = load_builtins(&config).0;
    let p = presets
        .iter()
        .find(|p| p.name == preset)
        .expect("a built-in preset");
    let mut org = Organization::default();
    let id = create_team_group(&mut org, p, &config, None);
    if let Some(g) = org.groups.iter_mut().find(|g| g.id == id) {
        g.max_iterations = max_iterations;
    }
    (org, id)
}

/// What the centre pane shows of team `group_id` with `cycle` as its run (as `render.rs`
/// fills it).
pub fn timeline_props<'a>(
    org: &Organization,
    group_id: &str,
    cycle: Option<&'a CycleView>,
) -> transcript_pane::Props<'a> {
    let g = org.group(group_id).expect("the team");
    let members: Vec<(String, Role)> = org
        .sessions_in(group_id)
        .iter()
        .map(|s| (s.name.clone(), s.role))
        .collect();
    let k = keymap();
    let key = |a| k.key_label(a);
    transcript_pane::Props {
        subject: transcript_pane::Subject::Group {
            id: group_id.to_string(),
            group: Box::new(transcript_pane::GroupInfo {
                name: g.name.clone(),
                members_slug: g.members_slug(),
                team: g.is_team(),
                mode: g.mode,
                max_iterations: g.max_iterations,
                repo: g.repo.clone(),
                memory: g.memory,
                contexts: vec![None; members.len()],
                member_costs: org.sessions_in(group_id).iter().map(|s| s.cost).collect(),
                spent: g.cost,
                forecast: None,
                members,
            }),
            cycle,
            run: None,
        },
        focused: false,
        keys: transcript_pane::Keys {
            new_team: key(Action::NewGroupFromPreset),
            new_session: key(Action::NewSession),
            help: key(Action::Help),
            send: key(Action::Send),
            new_conversation: key(Action::NewConversation),
            older: key(Action::OlderRun),
            newer: key(Action::NewerRun),
            set_tools: key(Action::SetTools),
        },
        default_model: "sim/demo".into(),
        tools_configured: false,
    }
}

/// The events of a recorded run re-addressed to team `group_id` (its id in a test's
/// organization).
pub fn events_of(ndjson: &str, group_id: &str) -> Vec<EngineEvent> {
    let mut all = events(ndjson);
    let recorded = all.first().map(|e| e.group_id.clone()).unwrap_or_default();
    for e in &mut all {
        e.group_id = group_id.into();
        if let crate::engine::events::EventKind::RunStarted {
            key: crate::engine::events::RunKey::Team { group_id: g },
        } = &mut e.kind
            && g.as_str() == &*recorded
        {
            *g = group_id.to_string();
        }
    }
    all
}
