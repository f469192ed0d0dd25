//! Shared helpers for the TUI tests: an app over an in-memory organization, key events, and a
//! render into ratatui's TestBackend.

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use huddle::config::Config;
use huddle::model::{Organization, reconcile};
use huddle::presets::builtin::load_builtins;
use huddle::presets::{Catalog, create_team_group};
use huddle::store::OrgHandle;
use huddle::tui::App;
use huddle::tui::command::{AppEvent, Command};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

pub fn config() -> Config {
    Config::parse("default_model: sim/demo\n", Path::new("config.yaml")).expect("config")
}

pub fn repo() -> PathBuf {
    PathBuf::from("/work/demo-repo")
}

/// An app over an organization that has only the default group.
pub fn empty_app() -> App {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    App::new(OrgHandle::in_memory(org), config(), repo(), Vec::new()).0
}

pub fn builtin_catalog() -> Catalog {
    Catalog::from_tiers(load_builtins(&config()).0, Vec::new(), Vec::new())
}

/// An app with a team made from the built-in preset `preset`, selected (its group row).
pub fn app_with_team(preset: &str) -> (App, String) {
    app_with_team_and_config(preset, config())
}

/// [`app_with_team`] with `config` (its `keys:`, say).
pub fn app_with_team_and_config(preset: &str, config: Config) -> (App, String) {
    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let catalog = builtin_catalog();
    let p = catalog.find(preset).expect("preset").clone();
    let id = create_team_group(&mut org, &p, &config, Some(&repo()));
    org.ui.selected_group = Some(id.clone());
    let (mut app, _) = App::new(OrgHandle::in_memory(org), config, repo(), Vec::new());
    app.handle_app_event(AppEvent::CatalogLoaded(Box::new(catalog)));
    (app, id)
}

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn ch(c: char) -> KeyEvent {
    let m = if c.is_ascii_uppercase() {
        KeyModifiers::SHIFT
    } else {
        KeyModifiers::NONE
    };
    KeyEvent::new(KeyCode::Char(c), m)
}

pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub fn alt(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::ALT)
}

/// Types text key by key; returns every command produced.
pub fn type_text(app: &mut App, text: &str) -> Vec<Command> {
    text.chars().flat_map(|c| app.handle_key(ch(c))).collect()
}

/// Draws one frame of `app` on a `width` x `height` screen (which also records its layout).
pub fn render(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    terminal
        .draw(|f| huddle::tui::render::draw(f, app, false))
        .expect("draw");
    terminal
}

pub fn screen_text(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// Snapshots live in `tests/snapshots/`.
#[macro_export]
macro_rules! tui_snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!($name, $value);
        });
    };
}
