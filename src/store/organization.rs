//! `organization.json`: load with recovery, save atomically with a backup.
//!
//! Nothing is ever discarded: a file that cannot be read is renamed
//! `organization.json.corrupt-<unix-ts>` before anything else happens, and the user is told.

use std::fmt;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::model::{Organization, reconcile};

use super::{StoreError, write_atomic};

/// Something the user must be told about after loading.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreNotice {
    /// An unreadable file was renamed so that nothing is lost.
    MovedAside {
        path: PathBuf,
        moved_to: PathBuf,
        reason: String,
    },
    /// The organization came from the backup copy.
    RestoredFromBackup { backup: PathBuf },
    /// Neither the file nor its backup could be used; huddle starts with an empty organization.
    StartedEmpty,
    /// Reconciliation changed something (sessions re-homed, duplicates renamed, ...).
    Reconciled(String),
}

impl fmt::Display for StoreNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreNotice::MovedAside {
                path,
                moved_to,
                reason,
            } => write!(
                f,
                "{} could not be read ({reason}); it was kept as {}",
                path.display(),
                moved_to.display()
            ),
            StoreNotice::RestoredFromBackup { backup } => {
                write!(
                    f,
                    "the organization was restored from the backup {}",
                    backup.display()
                )
            }
            StoreNotice::StartedEmpty => write!(
                f,
                "no usable organization or backup was found; starting with an empty one (the unreadable files were kept)"
            ),
            StoreNotice::Reconciled(what) => write!(f, "organization repaired: {what}"),
        }
    }
}

impl StoreNotice {
    /// True for notices about lost access to data (shown as errors, not as info).
    pub fn is_serious(&self) -> bool {
        !matches!(self, StoreNotice::Reconciled(_))
    }
}

#[derive(Debug)]
pub struct LoadedOrganization {
    pub org: Organization,
    pub notices: Vec<StoreNotice>,
}

/// The organization file and its backup.
#[derive(Debug, Clone)]
pub struct OrganizationFile {
    path: PathBuf,
}

enum ReadOutcome {
    Missing,
    Parsed(Organization),
    Unusable(String),
}

impl OrganizationFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        OrganizationFile { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn backup_path(&self) -> PathBuf {
        with_suffix(&self.path, ".bak")
    }

    /// Reads the file without changing anything on disk (for `huddle doctor` and read-only
    /// viewers): `Ok(None)` when it does not exist, `Err` with the reason when unreadable.
    pub fn inspect(&self) -> Result<Option<Organization>, String> {
        match read(&self.path) {
            ReadOutcome::Missing => Ok(None),
            ReadOutcome::Parsed(org) => Ok(Some(org)),
            ReadOutcome::Unusable(reason) => Err(reason),
        }
    }

    /// Loads and reconciles the organization, recovering from a corrupt file via the backup.
    pub fn load(&self) -> Result<LoadedOrganization, StoreError> {
        let mut notices = Vec::new();
        let mut org = match read(&self.path) {
            ReadOutcome::Parsed(org) => Some(org),
            ReadOutcome::Missing => None,
            ReadOutcome::Unusable(reason) => {
                notices.push(move_aside(&self.path, reason)?);
                None
            }
        };
        if org.is_none() {
            let backup = self.backup_path();
            match read(&backup) {
                ReadOutcome::Parsed(from_backup) => {
                    notices.push(StoreNotice::RestoredFromBackup { backup });
                    org = Some(from_backup);
                }
                ReadOutcome::Missing => {}
                ReadOutcome::Unusable(reason) => {
                    // The next save would replace the backup: keep it aside instead.
                    notices.push(move_aside(&backup, reason)?);
                }
            }
            if org.is_none() && !notices.is_empty() {
                notices.push(StoreNotice::StartedEmpty);
            }
        }
        let mut org = org.unwrap_or_default();
        for change in reconcile::reconcile(&mut org) {
            notices.push(StoreNotice::Reconciled(change));
        }
        Ok(LoadedOrganization { org, notices })
    }

    /// Writes the organization atomically, keeping the previous version as `.bak`.
    pub fn save(&self, org: &Organization) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(org).map_err(|e| StoreError::Serialize(e.to_string()))?;
        self.save_bytes(&bytes)
    }

    pub(crate) fn save_bytes(&self, bytes: &[u8]) -> Result<(), StoreError> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(|e| StoreError::io("cannot create", dir, e))?;
        }
        self.backup_current()?;
        write_atomic(&self.path, bytes)
    }

    /// Points `.bak` at the current file (a hard link, so no copy and no moment without a file).
    fn backup_current(&self) -> Result<(), StoreError> {
        if !self.path.is_file() {
            return Ok(());
        }
        let backup = self.backup_path();
        let staging = with_suffix(&self.path, ".bak.tmp");
        let _ = fs::remove_file(&staging);
        if fs::hard_link(&self.path, &staging).is_err() {
            fs::copy(&self.path, &staging).map_err(|e| StoreError::io("cannot back up", &self.path, e))?;
        }
        fs::rename(&staging, &backup).map_err(|e| StoreError::io("cannot back up to", &backup, e))
    }
}

fn read(path: &Path) -> ReadOutcome {
    match fs::read(path) {
        Ok(bytes) => match parse(&bytes) {
            Ok(org) => ReadOutcome::Parsed(org),
            Err(reason) => ReadOutcome::Unusable(reason),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => ReadOutcome::Missing,
        Err(e) => ReadOutcome::Unusable(e.to_string()),
    }
}

/// Parses organization JSON; errors say where and which field.
pub fn parse(bytes: &[u8]) -> Result<Organization, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let org: Organization = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let at = e.path().to_string();
        let inner = e.into_inner();
        if at.is_empty() || at == "." {
            inner.to_string()
        } else {
            format!("{at}: {inner}")
        }
    })?;
    de.end().map_err(|e| format!("trailing data: {e}"))?;
    Ok(org)
}

fn move_aside(path: &Path, reason: String) -> Result<StoreNotice, StoreError> {
    let ts = chrono::Utc::now().timestamp();
    let mut moved_to = with_suffix(path, &format!(".corrupt-{ts}"));
    let mut k = 1;
    while moved_to.exists() {
        moved_to = with_suffix(path, &format!(".corrupt-{ts}-{k}"));
        k += 1;
    }
    fs::rename(path, &moved_to).map_err(|e| StoreError::io("cannot move aside the unreadable", path, e))?;
    tracing::warn!(path = %path.display(), moved_to = %moved_to.display(), %reason, "moved unreadable file aside");
    Ok(StoreNotice::MovedAside {
        path: path.to_path_buf(),
        moved_to,
        reason,
    })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{GroupKind, Session};

    fn file_in(dir: &Path) -> OrganizationFile {
        OrganizationFile::new(dir.join("organization.json"))
    }

    fn corrupt_files(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".corrupt-"))
            .collect();
        v.sort();
        v
    }

    fn org_with_session(name: &str) -> Organization {
        let mut org = Organization::default();
        reconcile::reconcile(&mut org);
        let default = org.default_group().unwrap().id.clone();
        org.sessions.push(Session::new(name, default, "sim/x"));
        org
    }

    #[test]
    fn missing_file_gives_an_organization_with_a_default_group() {
        let dir = tempfile::tempdir().unwrap();
        let loaded = file_in(dir.path()).load().unwrap();
        assert_eq!(loaded.org.groups.len(), 1);
        assert_eq!(loaded.org.groups[0].kind, GroupKind::Default);
        assert!(loaded.notices.iter().all(|n| !n.is_serious()));
    }

    #[test]
    fn save_then_load_round_trips_and_keeps_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        let first = org_with_session("one");
        f.save(&first).unwrap();
        let second = org_with_session("two");
        f.save(&second).unwrap();
        assert_eq!(f.load().unwrap().org, second);
        let backup = parse(&fs::read(f.backup_path()).unwrap()).unwrap();
        assert_eq!(backup, first);
    }

    fn assert_recovers_from(content: &[u8]) {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        let good = org_with_session("kept");
        f.save(&good).unwrap();
        f.save(&good).unwrap(); // .bak now holds `good` too
        fs::write(f.path(), content).unwrap();
        let loaded = f.load().unwrap();
        assert_eq!(loaded.org.sessions[0].name, "kept", "restored from the backup");
        assert!(
            matches!(loaded.notices[0], StoreNotice::MovedAside { .. }),
            "{:?}",
            loaded.notices
        );
        assert!(matches!(
            loaded.notices[1],
            StoreNotice::RestoredFromBackup { .. }
        ));
        let aside = corrupt_files(dir.path());
        assert_eq!(aside.len(), 1, "{aside:?}");
        assert_eq!(
            fs::read(dir.path().join(&aside[0])).unwrap(),
            content,
            "corrupt bytes kept"
        );
    }

    #[test]
    fn corrupt_json_is_moved_aside_and_the_backup_used() {
        assert_recovers_from(b"{\"groups\": [ {\"id\": ");
        assert_recovers_from(b"not json at all");
        assert_recovers_from(b"null");
        assert_recovers_from(b"{\"groups\": []} trailing");
    }

    #[test]
    fn unknown_enum_value_is_an_error_naming_the_field() {
        let err = parse(br#"{"groups":[{"id":"g","name":"G","kind":"galaxy"}]}"#).unwrap_err();
        assert!(err.contains("groups[0].kind"), "{err}");
        assert!(err.contains("galaxy"), "{err}");
        assert_recovers_from(br#"{"groups":[{"id":"g","name":"G","kind":"galaxy"}]}"#);
    }

    #[test]
    fn enum_values_are_read_ignoring_case() {
        let org = parse(br#"{"groups":[{"id":"g","name":"G","kind":"TEAM","mode":"Orchestrator_Reflect"}]}"#)
            .unwrap();
        assert_eq!(org.groups[0].kind, GroupKind::Team);
    }

    #[test]
    fn empty_object_is_a_valid_empty_organization() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        fs::write(f.path(), b"{}").unwrap();
        let loaded = f.load().unwrap();
        assert_eq!(loaded.org.groups.len(), 1, "default group added");
        assert!(corrupt_files(dir.path()).is_empty());
    }

    #[test]
    fn a_directory_in_place_of_the_file_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        fs::create_dir(f.path()).unwrap();
        fs::write(f.path().join("inside.txt"), b"mine").unwrap();
        let loaded = f.load().unwrap();
        assert!(
            loaded.notices.contains(&StoreNotice::StartedEmpty),
            "{:?}",
            loaded.notices
        );
        let aside = corrupt_files(dir.path());
        assert_eq!(aside.len(), 1);
        assert_eq!(
            fs::read(dir.path().join(&aside[0]).join("inside.txt")).unwrap(),
            b"mine"
        );
        f.save(&loaded.org).unwrap();
        assert!(f.path().is_file());
    }

    #[test]
    fn corrupt_file_and_corrupt_backup_are_both_kept() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        fs::write(f.path(), b"{broken").unwrap();
        fs::write(f.backup_path(), b"[also broken").unwrap();
        let loaded = f.load().unwrap();
        assert_eq!(corrupt_files(dir.path()).len(), 2);
        assert!(loaded.notices.contains(&StoreNotice::StartedEmpty));
        assert!(
            loaded
                .notices
                .iter()
                .any(|n| n.to_string().contains("could not be read"))
        );
    }

    #[test]
    fn unknown_fields_are_ignored_and_missing_ones_defaulted() {
        let org = parse(br#"{"future":1,"groups":[{"id":"g","name":"G","extra":true}],"sessions":[{"id":"s","name":"n"}]}"#)
            .unwrap();
        assert_eq!(org.groups[0].max_iterations, 5);
        assert_eq!(org.groups[0].worker_timeout_secs, 600);
        assert_eq!(org.sessions[0].group_id, "");
    }

    #[test]
    fn unwritable_directory_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"x").unwrap();
        let f = OrganizationFile::new(blocker.join("organization.json"));
        let err = f.save(&Organization::default()).unwrap_err().to_string();
        assert!(err.contains("cannot create"), "{err}");
    }
}
