//! `organization.json`: load with recovery, save atomically with a backup.
//!
//! Nothing is ever discarded: a file that cannot be read is renamed
//! `organization.json.corrupt-<unix-ts>` before anything else happens, and the user is told. A
//! file written by a newer huddle is not read at all (and so never written over), and a backup is
//! never replaced by an empty organization without being kept aside first.

use std::fmt;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::model::{GroupKind, Organization, reconcile};

use super::atomic::write_atomic_private;
use super::org_json::{ParsedOrganization, Unreadable, parse};
use super::private::create_private_dir;
use super::{StoreError, read_regular};

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
    /// A value that did not fit its field was clamped; the rest of the file was read as is.
    Repaired { path: PathBuf, what: String },
    /// Reconciliation changed something (sessions re-homed, duplicates renamed, ...).
    Reconciled(String),
    /// A team worktree vanished, or one no session records was found (reported, never
    /// deleted): the text says which and what to do.
    Worktree(String),
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
            StoreNotice::Repaired { path, what } => write!(f, "{}: {what}", path.display()),
            StoreNotice::Reconciled(what) => write!(f, "organization repaired: {what}"),
            StoreNotice::Worktree(what) => f.write_str(what),
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
    Parsed(ParsedOrganization),
    Unusable(Unreadable),
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
    pub fn inspect(&self) -> Result<Option<Organization>, Unreadable> {
        match read(&self.path) {
            ReadOutcome::Missing => Ok(None),
            ReadOutcome::Parsed(parsed) => Ok(Some(parsed.org)),
            ReadOutcome::Unusable(reason) => Err(reason),
        }
    }

    /// Loads and reconciles the organization, recovering from a corrupt file via the backup.
    ///
    /// A file (or, the file being unusable, a backup) written by a newer huddle is an error,
    /// [`StoreError::NewerFormat`]: nothing is loaded, so nothing can be saved over it. That is
    /// what "read-only" means at the store level; a front end shows the error and stops.
    pub fn load(&self) -> Result<LoadedOrganization, StoreError> {
        let mut notices = Vec::new();
        let mut org = match read(&self.path) {
            ReadOutcome::Parsed(parsed) => Some(self.take(parsed, &self.path, &mut notices)),
            ReadOutcome::Missing => None,
            ReadOutcome::Unusable(Unreadable::TooNew { found }) => {
                return Err(self.too_new(&self.path, found));
            }
            ReadOutcome::Unusable(Unreadable::Corrupt(reason)) => {
                notices.push(move_aside(&self.path, reason)?);
                None
            }
        };
        if org.is_none() {
            let backup = self.backup_path();
            match read(&backup) {
                ReadOutcome::Parsed(from_backup) => {
                    notices.push(StoreNotice::RestoredFromBackup {
                        backup: backup.clone(),
                    });
                    org = Some(self.take(from_backup, &backup, &mut notices));
                }
                ReadOutcome::Missing => {}
                ReadOutcome::Unusable(Unreadable::TooNew { found }) => {
                    return Err(self.too_new(&backup, found));
                }
                ReadOutcome::Unusable(Unreadable::Corrupt(reason)) => {
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

    /// The organization read from `path`, its repairs turned into notices.
    fn take(&self, parsed: ParsedOrganization, path: &Path, notices: &mut Vec<StoreNotice>) -> Organization {
        notices.extend(parsed.repairs.into_iter().map(|what| StoreNotice::Repaired {
            path: path.to_path_buf(),
            what,
        }));
        parsed.org
    }

    fn too_new(&self, path: &Path, found: u64) -> StoreError {
        tracing::error!(path = %path.display(), found, "organization written by a newer huddle; not loaded");
        StoreError::NewerFormat {
            path: path.to_path_buf(),
            reason: Unreadable::TooNew { found }.to_string(),
        }
    }

    /// Writes the organization atomically, keeping the previous version as `.bak`.
    pub fn save(&self, org: &Organization) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(org).map_err(|e| StoreError::Serialize(e.to_string()))?;
        self.save_bytes(&bytes)
    }

    pub(crate) fn save_bytes(&self, bytes: &[u8]) -> Result<(), StoreError> {
        if let Some(dir) = self.path.parent() {
            create_private_dir(dir).map_err(|e| StoreError::io("cannot create", dir, e))?;
        }
        self.backup_current()?;
        write_atomic_private(&self.path, bytes)
    }

    /// Points `.bak` at the current file (a hard link, so no copy and no moment without a file).
    /// When the current file holds nothing and the backup holds something (everything was
    /// deleted, or something went wrong), the backup is first kept as `.bak-<unix-ts>`.
    fn backup_current(&self) -> Result<(), StoreError> {
        if !self.path.is_file() {
            return Ok(());
        }
        let backup = self.backup_path();
        if contents(&self.path) == Contents::Nothing && contents(&backup) == Contents::Something {
            let kept = free_name(&backup, &format!("-{}", chrono::Utc::now().timestamp()));
            fs::rename(&backup, &kept).map_err(|e| StoreError::io("cannot keep the backup", &backup, e))?;
            tracing::warn!(kept = %kept.display(), "an empty organization replaces a backup that was not empty; the backup was kept");
        }
        let staging = with_suffix(&self.path, ".bak.tmp");
        let _ = fs::remove_file(&staging);
        if fs::hard_link(&self.path, &staging).is_err() {
            fs::copy(&self.path, &staging).map_err(|e| StoreError::io("cannot back up", &self.path, e))?;
        }
        fs::rename(&staging, &backup).map_err(|e| StoreError::io("cannot back up to", &backup, e))
    }
}

fn read(path: &Path) -> ReadOutcome {
    match read_regular(path) {
        Ok(bytes) => match parse(&bytes) {
            Ok(parsed) => ReadOutcome::Parsed(parsed),
            Err(reason) => ReadOutcome::Unusable(reason),
        },
        Err(e) if e.kind() == ErrorKind::NotFound => ReadOutcome::Missing,
        Err(e) => ReadOutcome::Unusable(Unreadable::Corrupt(e.to_string())),
    }
}

/// An organization file at most this long may hold nothing; longer ones are never parsed just
/// to find out (a save must stay cheap).
const SMALL_FILE_BYTES: u64 = 4096;

#[derive(Debug, PartialEq, Eq)]
enum Contents {
    Missing,
    /// A readable organization with no sessions and no groups but the default one.
    Nothing,
    /// Anything else, unreadable files included: worth keeping.
    Something,
}

fn contents(path: &Path) -> Contents {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => Contents::Missing,
        Ok(meta) if meta.is_file() && meta.len() <= SMALL_FILE_BYTES => match read(path) {
            ReadOutcome::Parsed(p)
                if p.org.sessions.is_empty() && p.org.groups.iter().all(|g| g.kind == GroupKind::Default) =>
            {
                Contents::Nothing
            }
            _ => Contents::Something,
        },
        _ => Contents::Something,
    }
}

/// `path` + `suffix`, or with `-1`, `-2`, ... added when that name is taken.
fn free_name(path: &Path, suffix: &str) -> PathBuf {
    let mut name = with_suffix(path, suffix);
    let mut k = 1;
    while fs::symlink_metadata(&name).is_ok() {
        name = with_suffix(path, &format!("{suffix}-{k}"));
        k += 1;
    }
    name
}

fn move_aside(path: &Path, reason: String) -> Result<StoreNotice, StoreError> {
    let moved_to = free_name(path, &format!(".corrupt-{}", chrono::Utc::now().timestamp()));
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
        let backup = parse(&fs::read(f.backup_path()).unwrap()).unwrap().org;
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
        let text = br#"{"version":1,"groups":[{"id":"g","name":"G","kind":"galaxy"}],"sessions":[]}"#;
        let err = parse(text).unwrap_err().to_string();
        assert!(err.contains("groups[0].kind"), "{err}");
        assert!(err.contains("galaxy"), "{err}");
        assert_recovers_from(text);
    }

    #[test]
    fn enum_values_are_read_ignoring_case() {
        let org = parse(br#"{"version":1,"groups":[{"id":"g","name":"G","kind":"TEAM","mode":"Orchestrator_Reflect"}],"sessions":[]}"#)
            .unwrap()
            .org;
        assert_eq!(org.groups[0].kind, GroupKind::Team);
    }

    #[test]
    fn json_that_is_not_an_organization_is_moved_aside_and_the_backup_used() {
        assert_recovers_from(b"{}");
        assert_recovers_from(b"[]");
        assert_recovers_from(br#"{"groups":[],"sessions":[]}"#);
        assert_recovers_from(b"\"organization\"");
    }

    #[test]
    fn a_bom_and_an_out_of_range_number_do_not_discard_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        let mut org = org_with_session("kept");
        org.groups[0].max_iterations = 3;
        f.save(&org).unwrap();
        // The file as a person might have edited it (pretty-printed, whatever huddle writes).
        let saved: serde_json::Value = serde_json::from_slice(&fs::read(f.path()).unwrap()).unwrap();
        let text = serde_json::to_string_pretty(&saved)
            .unwrap()
            .replace("\"max_iterations\": 3", "\"max_iterations\": 1099511627776")
            .replace("\"input_tokens\": 0", "\"input_tokens\": -12");
        fs::write(f.path(), format!("\u{feff}{text}")).unwrap();
        let loaded = f.load().unwrap();
        assert!(corrupt_files(dir.path()).is_empty(), "nothing moved aside");
        assert_eq!(loaded.org.sessions[0].name, "kept");
        assert_eq!(
            loaded.org.groups[0].max_iterations, 100,
            "clamped, then brought into range"
        );
        assert_eq!(loaded.org.sessions[0].usage.input_tokens, 0);
        let said: Vec<String> = loaded.notices.iter().map(ToString::to_string).collect();
        assert!(
            said.iter()
                .any(|n| n.contains("groups[0].max_iterations: 1099511627776 does not fit")),
            "{said:?}"
        );
        assert!(
            said.iter()
                .any(|n| n.contains("usage.input_tokens: -12 does not fit")),
            "{said:?}"
        );
    }

    #[test]
    fn a_file_from_a_newer_huddle_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        let newer = br#"{"version":7,"groups":[],"sessions":[],"galaxies":[1]}"#;
        fs::write(f.path(), newer).unwrap();
        let err = f.load().unwrap_err();
        assert!(matches!(err, StoreError::NewerFormat { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("organization.json"), "{text}");
        assert!(text.contains("newer huddle (format version 7"), "{text}");
        assert_eq!(fs::read(f.path()).unwrap(), newer, "not rewritten");
        assert!(corrupt_files(dir.path()).is_empty(), "not moved aside");
        assert!(matches!(f.inspect(), Err(Unreadable::TooNew { found: 7 })));
        // Nor is an older backup used in its place.
        fs::write(
            f.backup_path(),
            serde_json::to_vec(&org_with_session("old")).unwrap(),
        )
        .unwrap();
        assert!(f.load().is_err());
    }

    #[test]
    fn an_empty_organization_never_replaces_a_backup_that_was_not_empty() {
        let dir = tempfile::tempdir().unwrap();
        let f = file_in(dir.path());
        let good = org_with_session("precious");
        f.save(&good).unwrap();
        f.save(&good).unwrap();
        let mut empty = Organization::default();
        reconcile::reconcile(&mut empty);
        f.save(&empty).unwrap(); // .bak: the good file
        f.save(&empty).unwrap(); // .bak would become empty: the good one is kept aside
        f.save(&empty).unwrap(); // and only once
        let kept: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("organization.json.bak-"))
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        let kept_org = parse(&fs::read(dir.path().join(&kept[0])).unwrap()).unwrap().org;
        assert_eq!(kept_org, good);
        assert_eq!(f.inspect().unwrap().unwrap(), empty);
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
        let org = parse(br#"{"version":1,"future":1,"groups":[{"id":"g","name":"G","extra":true}],"sessions":[{"id":"s","name":"n"}]}"#)
            .unwrap()
            .org;
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
