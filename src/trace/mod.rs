//! The trace tree of a run: who did what, nested by execution (modes `dispatch` and `team`), or
//! one node per member turn (the other modes), with durations, tokens, statuses, tool calls and
//! broadcasts. `tree` builds it from events (live or a run file's records), `render` prints it
//! as text or JSON. `huddle trace` (`trace_cli.rs`) and the TUI's trace view read it.

pub mod render;
pub mod tree;

pub use tree::{
    Execution, NodeId, NodeKind, RunState, RunSummary, Trace, TraceBuilder, TraceItem, TraceNode,
};
