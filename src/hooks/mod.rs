//! Hooks: the user's own commands that see each tool call (and can refuse it), and run after a
//! turn, an iteration, a run, or when a member's worktree was made. Shaped like Claude Code's
//! hooks so scripts port with little change (see docs/sandbox-and-hooks.md for where they
//! differ). Hooks come from config.yaml and presets (team and member); a repository's team
//! folder (`.squad/`) can never add one.
//!
//! - [`config`]: the `hooks:` block, events, matchers;
//! - [`input`]: the JSON a hook reads on stdin;
//! - [`run`]: running hooks (sandboxed, with a time limit) and what each came to;
//! - [`decide`]: what an event's hooks decided together.

pub mod config;
pub mod decide;
pub mod input;
pub mod run;

pub use config::{Hook, HookEvent, Hooks};
pub use decide::{Feedback, PreToolUse, Verdict};
pub use input::HookInput;
pub use run::{HookContext, HookRun, Outcome, run_all};
