//! Handing a `huddle run` to the huddle that is already open on the same data dir.
//!
//! Only one process owns a data dir (its lock). When the TUI owns it, it listens on a Unix
//! socket in the data dir (owner-only, peers of another user refused); `huddle run` connects,
//! sends its request, and the TUI runs it on its own engine (so the run shows there live) while
//! streaming back exactly what `huddle run` would have printed, then the exit code. With no
//! instance listening, `huddle run` runs in its own process as before.

pub mod client;
pub mod protocol;
pub mod server;
