//! The interactive terminal UI (SPEC section 10).
//!
//! Data flows one way: keys and mouse become [`action::Action`]s; the [`app::App`] (owned by one
//! task) changes its state and emits [`command::Command`]s; the runtime executes them against the
//! engine and feeds engine events and results back as [`command::AppEvent`]s. Frames are drawn
//! on demand ([`frame::FrameRequester`]), never on a busy timer.

pub mod action;
pub mod app;
mod app_dialogs;
mod app_events;
mod app_team;
mod app_tools;
pub mod cells;
pub mod command;
pub mod composer;
pub mod cycle_view;
pub mod dialogs;
pub mod frame;
pub mod history;
pub mod keymap;
pub mod layout;
pub mod markdown;
mod mouse;
pub mod render;
pub mod runs;
mod runtime;
pub mod search;
pub mod sidebar;
pub mod team_panel;
pub mod terminal;
pub mod transcript_pane;
pub mod transcript_view;
pub mod widgets;

pub use app::App;
pub use runtime::run;
