//! Waiting for a transcript line to be written, cheaply: each waiter awaits its own signal on
//! the runtime, and one blocking task at a time watches over all of them.
//!
//! The watcher is there for tokio's paused test clock, which jumps to the next timer as soon
//! as the runtime has nothing to do, unless a blocking task runs. A wait on the writer thread is
//! work under way, so it must not look idle; but a blocking task per wait (a thread woken and
//! put to sleep per message) cost the engine more than the rest of a turn. With one watcher per
//! burst of waits, a wait is a channel message. A process that never pauses the clock (the
//! `huddle` binary, the benchmarks: see [`real_clock_only`]) starts no watcher at all: in a run
//! whose steps each wait for one answer, every wait was a burst of its own, a blocking thread
//! woken per message (10-15 % of the engine's CPU time).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Whether waits made from now on are watched (see the module's doc): until the process says
/// its clock is never paused.
static WATCHED_BY_DEFAULT: AtomicBool = AtomicBool::new(true);

/// Says that this process never pauses tokio's clock (only tests do, with tokio's `test-util`):
/// the writers made after this start no watcher for their waits. Called first thing by the
/// `huddle` binary and the benchmarks; never by tests.
pub fn real_clock_only() {
    WATCHED_BY_DEFAULT.store(false, Ordering::Relaxed);
}

#[derive(Default)]
struct Counts {
    /// Signals not sent yet (each counted until it is sent or dropped).
    pending: usize,
    /// A watcher runs on the blocking pool.
    watched: bool,
}

/// The waits under way for one writer.
pub(crate) struct LineWaits {
    counts: Mutex<Counts>,
    none_left: Condvar,
    /// A watcher runs while waits are pending (a paused test clock is possible).
    watch: bool,
}

impl Default for LineWaits {
    fn default() -> LineWaits {
        LineWaits::watching(WATCHED_BY_DEFAULT.load(Ordering::Relaxed))
    }
}

/// What the writer sends when a line is written: counted as pending from its creation until it
/// is sent or dropped (a writer that stops, or panics, drops it), so the count cannot drift.
pub(crate) struct Written {
    tx: Option<tokio::sync::oneshot::Sender<()>>,
    waits: Arc<LineWaits>,
}

impl Written {
    pub(crate) fn send(mut self) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(());
        }
        // The count goes down in drop, after the waiter is woken: there is never a moment when
        // the waiter looks idle and no watcher runs.
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        self.tx = None;
        self.waits.finished();
    }
}

/// The watcher handed to the blocking pool. A runtime that is shutting down drops it without
/// running it: then it says so, or no watcher would ever start again for these waits.
struct Watcher(Option<Arc<LineWaits>>);

impl Watcher {
    fn run(mut self) {
        if let Some(waits) = self.0.take() {
            waits.watch();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(waits) = self.0.take() {
            waits.unwatched();
        }
    }
}

impl LineWaits {
    fn watching(watch: bool) -> LineWaits {
        LineWaits {
            counts: Mutex::default(),
            none_left: Condvar::new(),
            watch,
        }
    }

    /// A new wait: the signal for the writer and the receiver the waiter awaits.
    pub(crate) fn start(self: &Arc<Self>) -> (Written, tokio::sync::oneshot::Receiver<()>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.lock().pending += 1;
        let written = Written {
            tx: Some(tx),
            waits: Arc::clone(self),
        };
        (written, rx)
    }

    /// Waits for `rx` (from [`LineWaits::start`]), with a watcher on the blocking pool while any
    /// wait is pending; whether the line was written (not: the writer could not write it, or is
    /// gone, and has said why in the log). Call from within a tokio runtime.
    pub(crate) async fn wait(self: Arc<Self>, rx: tokio::sync::oneshot::Receiver<()>) -> bool {
        let start_watcher = {
            let mut counts = self.lock();
            let start = self.watch && counts.pending > 0 && !counts.watched;
            counts.watched |= start;
            start
        };
        if start_watcher {
            let watcher = Watcher(Some(Arc::clone(&self)));
            // Not awaited: it ends by itself once no wait is pending.
            drop(tokio::task::spawn_blocking(move || watcher.run()));
        }
        rx.await.is_ok()
    }

    fn watch(&self) {
        let mut counts = self.lock();
        while counts.pending > 0 {
            counts = self
                .none_left
                .wait(counts)
                .unwrap_or_else(PoisonError::into_inner);
        }
        counts.watched = false;
    }

    /// Not watched any more: the next wait starts a watcher.
    fn unwatched(&self) {
        self.lock().watched = false;
    }

    fn finished(&self) {
        let mut counts = self.lock();
        counts.pending = counts.pending.saturating_sub(1);
        if counts.pending == 0 && counts.watched {
            self.none_left.notify_all();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        // The counts stay consistent whatever panicked while holding them (plain integers).
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    fn pending(&self) -> usize {
        self.lock().pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_signal_counts_until_sent_or_dropped() {
        let waits = Arc::new(LineWaits::default());
        let (a, _ra) = waits.start();
        let (b, _rb) = waits.start();
        assert_eq!(waits.pending(), 2);
        a.send();
        assert_eq!(waits.pending(), 1);
        drop(b);
        assert_eq!(waits.pending(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_wait_ends_when_its_line_is_written_and_the_watcher_goes_with_the_last() {
        let waits = Arc::new(LineWaits::default());
        let (written, rx) = waits.start();
        let waiter = tokio::spawn(Arc::clone(&waits).wait(rx));
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            written.send();
        });
        assert!(waiter.await.unwrap(), "written");
        writer.join().unwrap();
        // The watcher ends by itself: nothing pending, nothing watched.
        for _ in 0..12_000 {
            if !waits.lock().watched {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let counts = waits.lock();
        assert_eq!((counts.pending, counts.watched), (0, false));
    }

    /// Where the clock is never paused, a wait is its signal alone: no watcher starts, and the
    /// wait still ends when the line is written (or says it was not).
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn without_a_paused_clock_a_wait_starts_no_watcher() {
        let waits = Arc::new(LineWaits::watching(false));
        let (written, rx) = waits.start();
        let wait = Arc::clone(&waits).wait(rx);
        tokio::pin!(wait);
        assert!(futures::poll!(&mut wait).is_pending());
        assert!(!waits.lock().watched, "no watcher");
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            written.send();
        });
        assert!(wait.await, "written");
        writer.join().unwrap();
        assert_eq!(waits.pending(), 0);
        let (written, rx) = waits.start();
        drop(written);
        assert!(!Arc::clone(&waits).wait(rx).await, "not written");
        assert!(!waits.lock().watched);
    }

    #[tokio::test]
    async fn a_line_that_was_not_written_is_not_reported_written() {
        let waits = Arc::new(LineWaits::default());
        let (written, rx) = waits.start();
        drop(written);
        assert!(!Arc::clone(&waits).wait(rx).await);
        assert_eq!(waits.pending(), 0);
    }

    #[test]
    fn a_watcher_a_closing_runtime_never_ran_lets_the_next_wait_start_one() {
        let waits = Arc::new(LineWaits::default());
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let handle = runtime.handle().clone();
        drop(runtime);
        let (written, rx) = waits.start();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            written.send();
        });
        // On a runtime that is gone the watcher is dropped unrun.
        assert!(handle.block_on(Arc::clone(&waits).wait(rx)));
        writer.join().unwrap();
        assert!(!waits.lock().watched, "no watcher runs, none is believed to");
    }

    /// The reason for the watcher: with the test clock paused, a runtime waiting on the writer
    /// thread is not idle, so a timer far ahead does not fire meanwhile.
    #[tokio::test(start_paused = true)]
    async fn a_paused_clock_does_not_jump_while_a_line_is_being_written() {
        let waits = Arc::new(LineWaits::default());
        let (written, rx) = waits.start();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            written.send();
        });
        let before = tokio::time::Instant::now();
        tokio::select! {
            _ = Arc::clone(&waits).wait(rx) => {}
            () = tokio::time::sleep(Duration::from_secs(3600)) => panic!("the clock jumped an hour"),
        }
        assert!(tokio::time::Instant::now() - before < Duration::from_secs(3600));
        writer.join().unwrap();
    }
}
