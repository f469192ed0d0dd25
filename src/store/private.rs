//! The data directory is private: transcripts, the organization and the logs are nobody else's
//! business on a shared machine. Directories huddle creates in it are 0700 and files 0600,
//! whatever the umask says; at start the folder and huddle's own files in it are tightened if an
//! older huddle (or a copy) left them readable by others, and temporary files that a process
//! killed mid-save left behind are removed.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::StoreError;

pub(crate) const DIR_MODE: u32 = 0o700;
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates `dir` and any missing parents as 0700 (the umask can only make that stricter).
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Options that create a file as 0600.
pub(crate) fn private_file() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// What [`prepare_data_dir`] changed, for the log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Prepared {
    /// Files and folders whose permissions were tightened.
    pub tightened: usize,
    /// Stale temporary files removed.
    pub removed: Vec<String>,
}

/// Makes the data dir private and clears what crashed saves left behind. Called with the data
/// dir's lock held (no other huddle is writing in it), before the organization is loaded.
pub fn prepare_data_dir(dir: &Path) -> Result<Prepared, StoreError> {
    create_private_dir(dir).map_err(|e| StoreError::io("cannot create", dir, e))?;
    let mut done = Prepared::default();
    tighten(dir, DIR_MODE, &mut done);
    let entries = fs::read_dir(dir).map_err(|e| StoreError::io("cannot list", dir, e))?;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        // Never follow a link: only what is really in the data dir is touched.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_file() && is_stale_temp(&name) {
            match fs::remove_file(&path) {
                Ok(()) => done.removed.push(name),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot remove a stale temporary file")
                }
            }
        } else if meta.is_file() && is_own_file(&name) {
            tighten(&path, FILE_MODE, &mut done);
        } else if meta.is_dir() && ["sessions", "runs", "logs"].contains(&name.as_str()) {
            tighten_tree(&path, 2, &mut done);
        }
    }
    if done.tightened > 0 {
        tracing::info!(count = done.tightened, dir = %dir.display(), "made files in the data dir private");
    }
    if !done.removed.is_empty() {
        tracing::info!(files = ?done.removed, "removed temporary files left by an interrupted save");
    }
    Ok(done)
}

/// `organization.json` and its backups, copies kept aside and the lock: the top-level files
/// huddle writes. Anything else in the folder (a `config.yaml` when `HUDDLE_HOME` holds both)
/// is the user's.
fn is_own_file(name: &str) -> bool {
    name.starts_with("organization.json") || ["huddle.lock", "drafts.json", "history.jsonl"].contains(&name)
}

/// A temporary file of an organization save: `.organization.json.tmp-<pid>` (the atomic write)
/// or `organization.json.bak.tmp` (the backup link). With the lock held, none belongs to a
/// live writer, except this process's own.
fn is_stale_temp(name: &str) -> bool {
    if name == "organization.json.bak.tmp" {
        return true;
    }
    [
        ".organization.json.tmp-",
        ".drafts.json.tmp-",
        ".history.jsonl.tmp-",
    ]
    .iter()
    .find_map(|prefix| name.strip_prefix(prefix))
    .and_then(|pid| pid.parse::<u32>().ok())
    .is_some_and(|pid| pid != std::process::id())
}

/// Tightens a folder's files and sub-folders, `depth` levels down (`runs/<group>/<run>.jsonl`).
fn tighten_tree(dir: &Path, depth: usize, done: &mut Prepared) {
    tighten(dir, DIR_MODE, done);
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => tighten(&path, FILE_MODE, done),
            Ok(meta) if meta.is_dir() && depth > 0 => tighten_tree(&path, depth - 1, done),
            _ => {}
        }
    }
}

/// Removes the group and other bits of `path`'s mode beyond `mode` (never adds any).
fn tighten(path: &Path, mode: u32, done: &mut Prepared) {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    let current = meta.permissions().mode() & 0o7777;
    let wanted = current & mode;
    if current == wanted {
        return;
    }
    match fs::set_permissions(path, fs::Permissions::from_mode(wanted)) {
        Ok(()) => done.tightened += 1,
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot make a file private"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn stale_temporary_files_of_other_processes_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let own = format!(".organization.json.tmp-{}", std::process::id());
        for name in [
            ".organization.json.tmp-999999999",
            "organization.json.bak.tmp",
            own.as_str(),
            "organization.json",
            "organization.json.bak",
            ".organization.json.tmp-notapid",
            "config.yaml",
        ] {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        let done = prepare_data_dir(dir.path()).unwrap();
        let mut removed = done.removed.clone();
        removed.sort();
        assert_eq!(
            removed,
            [".organization.json.tmp-999999999", "organization.json.bak.tmp"]
        );
        let mut left: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                own.as_str(),
                ".organization.json.tmp-notapid",
                "config.yaml",
                "organization.json",
                "organization.json.bak"
            ]
        );
    }

    #[test]
    fn loose_permissions_are_tightened_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        fs::create_dir_all(data.join("runs/g")).unwrap();
        fs::create_dir_all(data.join("sessions")).unwrap();
        let outside = dir.path().join("outside.txt");
        fs::write(&outside, b"not huddle's").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, data.join("sessions/link.jsonl")).unwrap();
        for (file, m) in [
            ("organization.json", 0o644),
            ("sessions/s.jsonl", 0o664),
            ("runs/g/r.jsonl", 0o604),
            ("config.yaml", 0o644),
        ] {
            fs::write(data.join(file), b"{}").unwrap();
            fs::set_permissions(data.join(file), fs::Permissions::from_mode(m)).unwrap();
        }
        for d in ["", "runs", "runs/g", "sessions"] {
            fs::set_permissions(data.join(d), fs::Permissions::from_mode(0o755)).unwrap();
        }
        prepare_data_dir(&data).unwrap();
        for d in ["", "runs", "runs/g", "sessions"] {
            assert_eq!(mode(&data.join(d)), 0o700, "{d}");
        }
        for f in ["organization.json", "sessions/s.jsonl", "runs/g/r.jsonl"] {
            assert_eq!(mode(&data.join(f)), 0o600, "{f}");
        }
        assert_eq!(mode(&data.join("config.yaml")), 0o644, "not huddle's file");
        assert_eq!(mode(&outside), 0o644, "a link is not followed");
    }
}
