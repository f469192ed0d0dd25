//! A background thread that writes the organization, coalescing bursts of changes.
//!
//! `save` hands over a snapshot and returns at once; the thread waits a short debounce, then
//! writes only the newest snapshot. A burst of a thousand changes becomes a handful of writes and
//! the caller (the UI) never waits on the disk.
//!
//! The debounce runs on a [`Clock`]: the wall clock, or in unit tests a clock that moves only
//! when the test moves it, so that what the tests count does not depend on how busy the
//! machine is.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::Organization;

use super::{OrganizationFile, StoreError};

/// Produces the snapshot to write when the saver was only told "something changed".
pub type SnapshotSource = Box<dyn Fn() -> Organization + Send>;

enum Pending {
    Snapshot(Organization),
    /// Changed; take a snapshot from the source when it is time to write.
    Dirty,
}

/// Where the saver reads the time, as the time since it started.
#[derive(Clone, Copy)]
enum Clock {
    Wall(Instant),
    /// Moved only by [`Saver::advance`].
    #[cfg(test)]
    Manual,
}

impl Clock {
    #[cfg_attr(not(test), allow(unused_variables))]
    fn now(self, state: &State) -> Duration {
        match self {
            Clock::Wall(start) => start.elapsed(),
            #[cfg(test)]
            Clock::Manual => state.manual_now,
        }
    }
}

#[derive(Default)]
struct State {
    pending: Option<Pending>,
    /// When the pending change (or the failed write) happened: the debounce runs from there,
    /// so a steady stream of changes is still written once per debounce.
    since: Duration,
    /// Number of snapshots handed over so far.
    requested: u64,
    /// Number of the newest snapshot that is on disk (or failed).
    finished: u64,
    writes: u64,
    last_error: Option<String>,
    shutdown: bool,
    /// A flush is waiting: skip the debounce.
    urgent: bool,
    #[cfg(test)]
    manual_now: Duration,
    /// The manual time at which the thread last went idle (waiting for a change or for time).
    #[cfg(test)]
    parked_at: Option<Duration>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    clock: Clock,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Something is pending from now on (unless it already was).
    fn set_pending(&self, state: &mut State, pending: Pending) {
        if state.pending.is_none() {
            state.since = self.clock.now(state);
        }
        state.pending = Some(pending);
    }

    /// Waits for a notification, or until `timeout` has passed on the wall clock.
    fn park<'a>(&self, state: MutexGuard<'a, State>, timeout: Option<Duration>) -> MutexGuard<'a, State> {
        match (self.clock, timeout) {
            (Clock::Wall(_), Some(timeout)) => {
                self.changed
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            }
            (Clock::Wall(_), None) => self.changed.wait(state).unwrap_or_else(PoisonError::into_inner),
            #[cfg(test)]
            (Clock::Manual, _) => {
                let mut state = state;
                // Tells `advance` that the thread has seen the time and has nothing to do.
                state.parked_at = Some(state.manual_now);
                self.changed.notify_all();
                let mut state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
                state.parked_at = None;
                state
            }
        }
    }
}

pub struct Saver {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Saver {
    pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

    pub fn new(file: OrganizationFile) -> Saver {
        Saver::with_debounce(file, Saver::DEFAULT_DEBOUNCE)
    }

    pub fn with_debounce(file: OrganizationFile, debounce: Duration) -> Saver {
        Saver::start(file, debounce, None, Clock::Wall(Instant::now()))
    }

    /// A saver that snapshots `source` itself: [`Saver::mark_dirty`] then costs the caller
    /// nothing but a lock, however large the organization.
    pub fn with_source(file: OrganizationFile, debounce: Duration, source: SnapshotSource) -> Saver {
        Saver::start(file, debounce, Some(source), Clock::Wall(Instant::now()))
    }

    fn start(
        file: OrganizationFile,
        debounce: Duration,
        source: Option<SnapshotSource>,
        clock: Clock,
    ) -> Saver {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            clock,
        });
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("huddle-saver".into())
            .spawn(move || run(&worker, &file, debounce, source))
            .map_err(|e| tracing::error!(error = %e, "cannot start the saver thread"))
            .ok();
        Saver { shared, thread }
    }

    /// Queues a snapshot to be written; never blocks on I/O.
    pub fn save(&self, org: Organization) {
        let mut state = self.shared.lock();
        self.shared.set_pending(&mut state, Pending::Snapshot(org));
        state.requested += 1;
        self.shared.changed.notify_all();
    }

    /// Says the organization changed; the saver takes the snapshot from its source. Without a
    /// source this does nothing.
    pub fn mark_dirty(&self) {
        let mut state = self.shared.lock();
        if !matches!(state.pending, Some(Pending::Snapshot(_))) {
            self.shared.set_pending(&mut state, Pending::Dirty);
        }
        state.requested += 1;
        self.shared.changed.notify_all();
    }

    /// Waits until every snapshot queued so far is written; returns the last write error.
    pub fn flush(&self) -> Result<(), StoreError> {
        if self.thread.is_none() {
            return Err(StoreError::SaveFailed("the saver thread is not running".into()));
        }
        let mut state = self.shared.lock();
        let target = state.requested;
        state.urgent = true;
        self.shared.changed.notify_all();
        while state.finished < target {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.urgent = false;
        match state.last_error.take() {
            Some(e) => Err(StoreError::SaveFailed(e)),
            None => Ok(()),
        }
    }

    /// True while a change is not on disk yet (or the last write failed).
    pub fn unsaved(&self) -> bool {
        let state = self.shared.lock();
        state.finished < state.requested || state.last_error.is_some()
    }

    /// How many times the file was written (for tests and diagnostics).
    pub fn writes(&self) -> u64 {
        self.shared.lock().writes
    }

    /// The last write error, if any, cleared by reading it.
    pub fn take_error(&self) -> Option<String> {
        self.shared.lock().last_error.take()
    }
}

#[cfg(test)]
impl Saver {
    /// A saver whose debounce runs on a clock that only [`Saver::advance`] moves.
    pub(crate) fn with_manual_clock(
        file: OrganizationFile,
        debounce: Duration,
        source: Option<SnapshotSource>,
    ) -> Saver {
        Saver::start(file, debounce, source, Clock::Manual)
    }

    /// Moves the manual clock on by `by`, then waits until the saver has done what was due by
    /// then (written, or gone back to waiting).
    pub(crate) fn advance(&self, by: Duration) {
        let mut state = self.shared.lock();
        state.manual_now += by;
        let now = state.manual_now;
        self.shared.changed.notify_all();
        while state.parked_at != Some(now) {
            if self.thread.as_ref().is_none_or(JoinHandle::is_finished) {
                return;
            }
            // The timeout only notices a thread that died; it decides nothing.
            state = self
                .shared
                .changed
                .wait_timeout(state, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl Drop for Saver {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.shutdown = true;
            self.shared.changed.notify_all();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The wait before writing again after a failed write (the disk may be full for a while).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

fn run(shared: &Shared, file: &OrganizationFile, debounce: Duration, source: Option<SnapshotSource>) {
    let mut last_failed = false;
    loop {
        {
            let mut state = shared.lock();
            while state.pending.is_none() && !state.shutdown {
                state = shared.park(state, None);
            }
            if state.pending.is_none() && state.shutdown {
                return;
            }
            // Let a burst settle; a flush or shutdown skips the wait.
            let wait = if last_failed {
                debounce.max(RETRY_AFTER_FAILURE)
            } else {
                debounce
            };
            while !state.shutdown && !state.urgent {
                let due = state.since + wait;
                match due.checked_sub(shared.clock.now(&state)) {
                    Some(left) if !left.is_zero() => state = shared.park(state, Some(left)),
                    _ => break,
                }
            }
        }
        let (snapshot, number) = {
            let mut state = shared.lock();
            state.urgent = false;
            (state.pending.take(), state.requested)
        };
        let org = match (snapshot, &source) {
            (Some(Pending::Snapshot(org)), _) => org,
            // Taken outside the saver's lock: the source locks the organization itself.
            (Some(Pending::Dirty), Some(source)) => source(),
            (Some(Pending::Dirty), None) | (None, _) => {
                let mut state = shared.lock();
                state.finished = state.finished.max(number);
                shared.changed.notify_all();
                continue;
            }
        };
        let result = file.save(&org);
        let mut state = shared.lock();
        state.writes += 1;
        last_failed = result.is_err();
        if let Err(e) = result {
            tracing::error!(error = %e, "saving the organization failed; will retry");
            state.last_error = Some(e.to_string());
            // Nothing is dropped: the unsaved state is written again later (by the next retry,
            // save or flush), unless huddle is shutting down and there is no later.
            if state.pending.is_none() && !state.shutdown {
                let again = match source {
                    Some(_) => Pending::Dirty,
                    None => Pending::Snapshot(org),
                };
                shared.set_pending(&mut state, again);
            }
        } else {
            state.last_error = None;
        }
        state.finished = state.finished.max(number);
        shared.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Group, GroupKind};

    fn org_with_groups(n: usize) -> Organization {
        let mut org = Organization::default();
        for k in 0..n {
            org.groups.push(Group::new(format!("g{k}"), GroupKind::Repo));
        }
        org
    }

    fn groups_on_disk(file: &OrganizationFile) -> usize {
        file.inspect().unwrap().map_or(0, |o| o.groups.len())
    }

    #[test]
    fn a_burst_of_changes_becomes_one_write_when_the_debounce_is_over() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_manual_clock(file.clone(), Duration::from_millis(50), None);
        for k in 1..=1000 {
            saver.save(org_with_groups(k % 7 + 1));
        }
        saver.save(org_with_groups(1000));
        saver.advance(Duration::from_millis(49));
        assert_eq!(saver.writes(), 0, "nothing is written during the debounce");
        saver.advance(Duration::from_millis(1));
        assert_eq!(saver.writes(), 1);
        assert_eq!(
            groups_on_disk(&file),
            1000,
            "the newest snapshot is the one on disk"
        );
        // Quiet again: time passing writes nothing more.
        saver.advance(Duration::from_secs(10));
        assert_eq!(saver.writes(), 1);
    }

    #[test]
    fn a_steady_stream_of_changes_is_written_once_per_debounce() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_manual_clock(file.clone(), Duration::from_millis(100), None);
        // A change every 10 ms for a second: the debounce runs from the first change of each
        // burst, so changes that never stop are still saved, ten times.
        for k in 1..=100 {
            saver.save(org_with_groups(k));
            saver.advance(Duration::from_millis(10));
        }
        assert_eq!(saver.writes(), 10);
        assert_eq!(groups_on_disk(&file), 100);
    }

    #[test]
    fn dirty_marks_are_coalesced_into_one_snapshot_from_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let snapshots = Arc::new(Mutex::new(0));
        let taken = Arc::clone(&snapshots);
        let source: SnapshotSource = Box::new(move || {
            *taken.lock().unwrap() += 1;
            org_with_groups(3)
        });
        let saver = Saver::with_manual_clock(file.clone(), Duration::from_millis(20), Some(source));
        for _ in 0..500 {
            saver.mark_dirty();
        }
        saver.advance(Duration::from_millis(20));
        assert_eq!(saver.writes(), 1);
        assert_eq!(*snapshots.lock().unwrap(), 1, "one snapshot for the whole burst");
        assert_eq!(groups_on_disk(&file), 3);
    }

    #[test]
    fn flush_does_not_wait_for_the_debounce() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_manual_clock(file.clone(), Duration::from_secs(3600), None);
        saver.save(Organization::default());
        saver.flush().unwrap();
        assert!(file.path().is_file());
        assert_eq!(saver.writes(), 1);
    }

    #[test]
    fn a_failed_write_is_retried_until_it_succeeds() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("data");
        std::fs::write(&blocker, b"not a directory").unwrap();
        let file = OrganizationFile::new(blocker.join("organization.json"));
        let saver = Saver::with_manual_clock(file.clone(), Duration::ZERO, None);
        let mut org = Organization::default();
        org.groups.push(Group::new("kept", GroupKind::Repo));
        saver.save(org);
        assert!(saver.flush().is_err(), "the first write fails");
        // The disk problem goes away; the unsaved snapshot is written without another save(),
        // after the wait that follows a failure.
        std::fs::remove_file(&blocker).unwrap();
        saver.advance(RETRY_AFTER_FAILURE - Duration::from_millis(1));
        assert!(!file.path().exists(), "not retried before the wait is over");
        saver.advance(Duration::from_millis(1));
        assert_eq!(saver.writes(), 2);
        assert_eq!(file.inspect().unwrap().unwrap().groups[0].name, "kept");
        assert_eq!(saver.take_error(), None, "the success cleared the error");
    }

    #[test]
    fn drop_flushes_the_pending_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_manual_clock(file.clone(), Duration::from_secs(60), None);
        let mut org = Organization::default();
        org.groups.push(Group::new("last", GroupKind::Repo));
        saver.save(org);
        drop(saver);
        let on_disk = super::super::parse_organization(&std::fs::read(file.path()).unwrap())
            .unwrap()
            .org;
        assert_eq!(on_disk.groups[0].name, "last");
    }

    #[test]
    fn write_errors_are_reported_by_flush() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"x").unwrap();
        let saver = Saver::with_debounce(OrganizationFile::new(blocker.join("o.json")), Duration::ZERO);
        saver.save(Organization::default());
        let err = saver.flush().unwrap_err().to_string();
        assert!(err.contains("cannot create"), "{err}");
    }

    #[test]
    fn the_wall_clock_saver_writes_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_debounce(file.clone(), Duration::ZERO);
        saver.save(org_with_groups(2));
        // No bound on how long: the test waits for the write, however busy the machine is.
        let mut state = saver.shared.lock();
        while state.finished < 1 {
            state = saver.shared.changed.wait(state).unwrap();
        }
        drop(state);
        assert_eq!(groups_on_disk(&file), 2);
    }
}
