//! The async runtime every `huddle` process runs on (the host, the TUI, `huddle run` and the
//! other commands; the benchmarks build theirs here too, so that they measure it).
//!
//! One worker thread. huddle waits on models, tools and front ends far more than it computes:
//! a message costs the engine microseconds, a 64-member team streaming at once a few percent
//! of one core. A second worker bought no speed and cost a great deal of it: each time work
//! was queued while the other worker slept, it was woken (a write to the I/O driver's eventfd
//! or a futex, an interrupt to another CPU), looked for work, mostly found none and slept
//! again; when it did find some, two threads allocated and freed on the allocator's one arena
//! (see [`crate::allocator`]) and waited for each other. One worker is a quarter to a third
//! less CPU per engine message (docs/benchmarks.md, session 16) and one thread's stack and
//! cache less.
//!
//! What must not hold the engine up runs elsewhere: blocking calls on the runtime's blocking
//! pool (`spawn_blocking`: git, files, process waits; a `huddle run`'s team made from a preset
//! and its last flush moved there with this change), transcript syncing,
//! the organization's saver and the run log on threads of their own, and a front end's own
//! loop (the TUI's input and drawing) on the thread that calls `block_on`, never on the worker.

/// The runtime's worker threads (see the module's doc).
pub const WORKER_THREADS: usize = 1;

/// How many items a task that drains a queue takes per receive (`recv_many`), at most. Each
/// receive spends a unit of the task's turn on the runtime (tokio's budget of 128), and a task
/// that spent it runs again only when the worker next parks or every 61 tasks: on the one
/// worker, a task that takes one item per receive falls behind a busy engine and its queue
/// grows. The host's dispatcher of engine events, a `huddle run`'s printer and output lines and
/// the benchmarks' consumers take what waits, this much at a time.
pub const RECEIVE_BATCH: usize = 256;

/// Builds the runtime: [`WORKER_THREADS`] workers, I/O and timers enabled.
pub fn build() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_and_the_caller_of_block_on_apart_from_it() {
        let runtime = build().unwrap();
        assert_eq!(runtime.metrics().num_workers(), WORKER_THREADS);
        let caller = std::thread::current().id();
        let (on_caller, on_worker) = runtime.block_on(async move {
            let worker = tokio::spawn(async { std::thread::current().id() }).await.unwrap();
            (std::thread::current().id(), worker)
        });
        // A front end's loop (the future given to `block_on`) keeps its own thread: a busy
        // engine task on the worker never holds up its input or drawing.
        assert_eq!(on_caller, caller);
        assert_ne!(on_worker, caller);
    }
}
