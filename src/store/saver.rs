//! A background thread that writes the organization, coalescing bursts of changes.
//!
//! `save` hands over a snapshot and returns at once; the thread waits a short debounce, then
//! writes only the newest snapshot. A burst of a thousand changes becomes a handful of writes and
//! the caller (the UI) never waits on the disk.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::model::Organization;

use super::{OrganizationFile, StoreError};

/// Produces the snapshot to write when the saver was only told "something changed".
pub type SnapshotSource = Box<dyn Fn() -> Organization + Send>;

enum Pending {
    Snapshot(Organization),
    /// Changed; take a snapshot from the source when it is time to write.
    Dirty,
}

#[derive(Default)]
struct State {
    pending: Option<Pending>,
    /// Number of snapshots handed over so far.
    requested: u64,
    /// Number of the newest snapshot that is on disk (or failed).
    finished: u64,
    writes: u64,
    last_error: Option<String>,
    shutdown: bool,
    /// A flush is waiting: skip the debounce.
    urgent: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
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
        Saver::start(file, debounce, None)
    }

    /// A saver that snapshots `source` itself: [`Saver::mark_dirty`] then costs the caller
    /// nothing but a lock, however large the organization.
    pub fn with_source(file: OrganizationFile, debounce: Duration, source: SnapshotSource) -> Saver {
        Saver::start(file, debounce, Some(source))
    }

    fn start(file: OrganizationFile, debounce: Duration, source: Option<SnapshotSource>) -> Saver {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
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
        state.pending = Some(Pending::Snapshot(org));
        state.requested += 1;
        self.shared.changed.notify_all();
    }

    /// Says the organization changed; the saver takes the snapshot from its source. Without a
    /// source this does nothing.
    pub fn mark_dirty(&self) {
        let mut state = self.shared.lock();
        if !matches!(state.pending, Some(Pending::Snapshot(_))) {
            state.pending = Some(Pending::Dirty);
        }
        state.requested += 1;
        self.shared.changed.notify_all();
    }

    /// Waits until every snapshot queued so far is written; returns the last write error.
    pub fn flush(&self) -> Result<(), StoreError> {
        if self.thread.is_none() {
            return Err(StoreError::Serialize("the saver thread is not running".into()));
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
            Some(e) => Err(StoreError::Serialize(e)),
            None => Ok(()),
        }
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
                state = shared.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            if state.pending.is_none() && state.shutdown {
                return;
            }
            if !state.shutdown && !state.urgent {
                // Let a burst settle; a flush or shutdown skips the wait.
                let wait = if last_failed {
                    debounce.max(RETRY_AFTER_FAILURE)
                } else {
                    debounce
                };
                let (s, _) = shared
                    .changed
                    .wait_timeout_while(state, wait, |s| !s.shutdown && !s.urgent)
                    .unwrap_or_else(PoisonError::into_inner);
                drop(s);
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
                state.pending = Some(match source {
                    Some(_) => Pending::Dirty,
                    None => Pending::Snapshot(org),
                });
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

    #[test]
    fn a_burst_of_changes_becomes_a_handful_of_writes() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_debounce(file.clone(), Duration::from_millis(50));
        let mut org = Organization::default();
        for k in 0..1000 {
            org.groups.push(Group::new(format!("g{k}"), GroupKind::Repo));
            saver.save(org.clone());
        }
        saver.flush().unwrap();
        assert!(saver.writes() <= 5, "{} writes", saver.writes());
        let on_disk = super::super::organization::parse(&std::fs::read(file.path()).unwrap()).unwrap();
        assert_eq!(
            on_disk.groups.len(),
            1000,
            "the newest snapshot is the one on disk"
        );
    }

    #[test]
    fn flush_does_not_wait_for_the_debounce() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_debounce(file.clone(), Duration::from_secs(3600));
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
        let saver = Saver::with_debounce(file.clone(), Duration::ZERO);
        let mut org = Organization::default();
        org.groups.push(Group::new("kept", GroupKind::Repo));
        saver.save(org);
        assert!(saver.flush().is_err(), "the first write fails");
        // The disk problem goes away; the unsaved snapshot is written without another save().
        std::fs::remove_file(&blocker).unwrap();
        let mut written = false;
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(50));
            if file.path().is_file() {
                written = true;
                break;
            }
        }
        assert!(written, "retried after the failure");
        assert_eq!(file.inspect().unwrap().unwrap().groups[0].name, "kept");
    }

    #[test]
    fn drop_flushes_the_pending_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let saver = Saver::with_debounce(file.clone(), Duration::from_secs(60));
        let mut org = Organization::default();
        org.groups.push(Group::new("last", GroupKind::Repo));
        saver.save(org);
        drop(saver);
        let on_disk = super::super::organization::parse(&std::fs::read(file.path()).unwrap()).unwrap();
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
}
