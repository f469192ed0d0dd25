//! A front end that takes the engine's events and drops them, as the host's dispatcher takes
//! them (a batch at a time: see `async_runtime::RECEIVE_BATCH`). Included with `#[path]` by the
//! benchmarks that want it.

use huddle::engine::events::EngineEvent;
use tokio::sync::mpsc::UnboundedReceiver;

/// Spawns the consumer of `events` on the current runtime.
pub fn spawn(mut events: UnboundedReceiver<EngineEvent>) {
    tokio::spawn(async move {
        let mut taken = Vec::new();
        while events
            .recv_many(&mut taken, huddle::async_runtime::RECEIVE_BATCH)
            .await
            > 0
        {
            taken.clear();
        }
    });
}
