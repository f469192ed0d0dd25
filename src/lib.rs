//! huddle: a terminal workbench for running teams of LLM sessions.
//!
//! Data flows one way: input -> command -> engine -> events -> state -> render. The engine
//! knows nothing of the terminal; the TUI and `huddle run` are two consumers of its events.

#![deny(clippy::unwrap_used, clippy::expect_used)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod allocator;
pub mod async_runtime;
pub mod attachments;
pub mod cli;
pub mod config;
pub mod describe;
pub mod doctor;
pub mod dry_run;
pub mod engine;
pub mod env;
pub mod headless;
pub mod headless_relay;
pub mod hooks;
pub mod host;
pub mod host_cli;
pub mod logging;
pub mod mcp_front;
pub mod model;
pub mod naming;
pub mod presets;
pub mod process;
pub mod providers;
pub mod repo_context;
pub mod runs_cli;
pub mod sandbox;
pub mod sim;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod tools;
pub mod trace;
pub mod trace_cli;
pub mod tui;
pub mod workspace;
pub mod worktrees;
pub mod worktrees_cli;
