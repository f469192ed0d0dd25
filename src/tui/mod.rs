//! The interactive terminal UI (SPEC section 10).
//!
//! Data flows one way: keys and mouse become [`action::Action`]s; the [`app::App`] (owned by one
//! task) changes its state and emits [`command::Command`]s; the runtime executes them against the
//! engine and feeds engine events and results back as [`command::AppEvent`]s. Frames are drawn
//! on demand ([`frame::FrameRequester`]), never on a busy timer.
//!
//! The screen is made of components, each owning its state, its logic and its drawing: the
//! [`sidebar::Sidebar`] (selection, folding), the [`transcript_pane::TranscriptPane`]
//! (transcripts, unread marks, search; messages and timelines are drawn as [`cells::Cell`]s), the
//! [`composer::Composer`] (text, prompt history), the [`team_panel::TeamPanel`] (each team's
//! runs, the cycle panel, each member's tool call in flight) and the [`dialogs::DialogStack`]
//! (with the tool approval popup and its queue). A tool call is a [`tool_cell::ToolCell`] of
//! the transcript, made from stored messages alike live and after a restart. The app keeps
//! focus, routes keys, mouse and events to them, and holds what they share: the organization
//! (read-only), the edits, the runs, the keymap and the layout. A feature's work (worktrees,
//! relays, cards, pruning, the everyday tools) is done by its controller in [`features`],
//! lent a narrow context for each call.

pub mod action;
pub mod app;
mod app_dialogs;
mod app_events;
mod app_inputs;
pub mod cells;
pub mod command;
pub mod composer;
pub mod composer_attachments;
#[cfg(test)]
mod cycle_panel_tests;
pub mod cycle_view;
pub mod dialogs;
pub mod editor;
pub mod execution_cards;
pub mod features;
pub mod flash;
pub mod frame;
mod front;
pub mod history;
mod input_saver;
pub mod keymap;
pub mod layout;
pub mod markdown;
mod mouse;
pub mod notify;
pub mod pipeline_view;
pub mod relay_view;
pub mod render;
pub mod result_columns;
pub mod runs;
mod runtime;
pub mod search;
pub mod sidebar;
pub mod team_panel;
pub mod terminal;
#[cfg(test)]
mod test_screen;
mod timeline_kind;
pub mod tool_cell;
pub mod trace_view;
pub mod transcript_pane;
pub mod transcript_view;
pub mod widgets;
pub mod worktree_marks;

pub use app::App;
pub use runtime::{run, run_blocking};
