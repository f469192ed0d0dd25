//! Text helpers shared by the TUI and the headless CLI.

pub mod sanitize;
