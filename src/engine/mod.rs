//! The engine: sessions, the four modes and the reflect loop. No terminal code here; it takes
//! commands and emits [`events::EngineEvent`]s.

pub mod events;
pub mod protocol;
