//! The live organization shared by the engine's tasks and the UI.
//!
//! Critical sections are short and never do I/O: an update flips a dirty flag and the background
//! saver takes its own snapshot later, so no caller ever waits on the disk.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::model::Organization;

use super::saver::SnapshotSource;
use super::{OrganizationFile, Saver, StoreError};

#[derive(Clone)]
pub struct OrgHandle {
    inner: Arc<Inner>,
}

struct Inner {
    org: Arc<Mutex<Organization>>,
    saver: Option<Saver>,
    /// Counts updates; a host waits on it to send front ends the organization again.
    changes: tokio::sync::watch::Sender<u64>,
}

fn lock(org: &Mutex<Organization>) -> MutexGuard<'_, Organization> {
    org.lock().unwrap_or_else(PoisonError::into_inner)
}

impl OrgHandle {
    /// An organization persisted to `file` by a background saver.
    pub fn persistent(org: Organization, file: OrganizationFile) -> OrgHandle {
        OrgHandle::persistent_with_debounce(org, file, Saver::DEFAULT_DEBOUNCE)
    }

    pub fn persistent_with_debounce(
        org: Organization,
        file: OrganizationFile,
        debounce: Duration,
    ) -> OrgHandle {
        OrgHandle::persistent_with(org, |source| Saver::with_source(file, debounce, source))
    }

    /// An organization saved by the saver `start` makes from a snapshot source.
    fn persistent_with(org: Organization, start: impl FnOnce(SnapshotSource) -> Saver) -> OrgHandle {
        let org = Arc::new(Mutex::new(org));
        let source = Arc::clone(&org);
        let saver = start(Box::new(move || lock(&source).clone()));
        OrgHandle {
            inner: Arc::new(Inner {
                org,
                saver: Some(saver),
                changes: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    /// An organization kept in memory only (tests, read-only viewers).
    pub fn in_memory(org: Organization) -> OrgHandle {
        OrgHandle {
            inner: Arc::new(Inner {
                org: Arc::new(Mutex::new(org)),
                saver: None,
                changes: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    pub fn read<R>(&self, f: impl FnOnce(&Organization) -> R) -> R {
        f(&lock(&self.inner.org))
    }

    /// Changes the organization and schedules a save.
    pub fn update<R>(&self, f: impl FnOnce(&mut Organization) -> R) -> R {
        let result = f(&mut lock(&self.inner.org));
        if let Some(saver) = &self.inner.saver {
            saver.mark_dirty();
        }
        // No receiver (no host) costs an atomic read.
        if self.inner.changes.receiver_count() > 0 {
            self.inner.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
        result
    }

    /// Wakes on every update from now on (the value counts them; several updates may wake it
    /// once).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    pub fn snapshot(&self) -> Organization {
        self.read(Organization::clone)
    }

    /// The organization with the count of its changes so far (see [`OrgHandle::changes`]; a
    /// change under way may be in the copy and not yet counted, never the other way round).
    pub fn versioned(&self) -> (Organization, u64) {
        let version = *self.inner.changes.borrow();
        (self.snapshot(), version)
    }

    /// True while a change is not on disk yet (always false in memory).
    pub fn unsaved(&self) -> bool {
        self.inner.saver.as_ref().is_some_and(Saver::unsaved)
    }

    /// Waits until every change so far is on disk.
    pub fn flush(&self) -> Result<(), StoreError> {
        match &self.inner.saver {
            Some(saver) => saver.flush(),
            None => Ok(()),
        }
    }

    /// A read-only view of the same organization (what front ends hold).
    pub fn view(&self) -> OrgView {
        OrgView(self.clone())
    }

    /// How many times the organization was written (diagnostics, tests).
    pub fn writes(&self) -> u64 {
        self.inner.saver.as_ref().map_or(0, Saver::writes)
    }
}

/// The organization, readable but not writable: a front end holds this, and changes it only
/// through the application layer (`workspace::Edits`).
#[derive(Clone)]
pub struct OrgView(OrgHandle);

impl OrgView {
    pub fn read<R>(&self, f: impl FnOnce(&Organization) -> R) -> R {
        self.0.read(f)
    }

    pub fn snapshot(&self) -> Organization {
        self.0.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Group, GroupKind};

    #[test]
    fn updates_are_saved_by_the_background_saver() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let debounce = Duration::from_millis(20);
        let handle = OrgHandle::persistent_with(Organization::default(), |source| {
            Saver::with_manual_clock(file.clone(), debounce, Some(source))
        });
        let saver = handle.inner.saver.as_ref().unwrap();
        for k in 0..500 {
            handle.update(|o| o.groups.push(Group::new(format!("g{k}"), GroupKind::Repo)));
        }
        saver.advance(debounce - Duration::from_millis(1));
        assert_eq!(handle.writes(), 0, "nothing is written during the debounce");
        // No flush: the background saver writes once the debounce is over, all 500 at once.
        saver.advance(Duration::from_millis(1));
        assert_eq!(handle.writes(), 1);
        assert_eq!(file.inspect().unwrap().unwrap().groups.len(), 500);
        assert_eq!(handle.read(|o| o.groups.len()), 500);
        handle.update(|o| o.groups.clear());
        handle.flush().unwrap();
        assert_eq!(handle.writes(), 2);
        assert!(file.inspect().unwrap().unwrap().groups.is_empty());
    }

    #[test]
    fn reads_change_nothing_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let file = OrganizationFile::new(dir.path().join("organization.json"));
        let handle = OrgHandle::persistent_with(Organization::default(), |source| {
            Saver::with_manual_clock(file.clone(), Duration::ZERO, Some(source))
        });
        let saver = handle.inner.saver.as_ref().unwrap();
        for _ in 0..100 {
            handle.read(|o| o.groups.len());
            handle.snapshot();
        }
        saver.advance(Duration::from_secs(60));
        assert_eq!(handle.writes(), 0);
        assert!(!file.path().exists());
    }
}
