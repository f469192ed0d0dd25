//! One process owns a data directory. The lock is advisory (flock) and released by the OS when
//! the process dies, so a crash never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::StoreError;
use super::private::{create_private_dir, prepare_data_dir, private_file};

#[derive(Debug)]
pub struct DataDirLock {
    // Held for its lock; dropped (and so unlocked) with the guard.
    _file: File,
    path: PathBuf,
}

/// A lock just released can still look held for a moment: a process forked by another thread
/// (git, an MCP server) holds copies of every descriptor until it execs. A few short retries
/// tell that moment from another huddle holding the folder.
fn try_lock_briefly(file: &std::fs::File) -> Result<(), std::fs::TryLockError> {
    for _ in 0..4 {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) => {
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            other => return other,
        }
    }
    file.try_lock()
}

impl DataDirLock {
    /// Takes the lock or says which process holds it. Holding it, no other huddle writes in the
    /// folder, so the folder is then made private and cleared of what interrupted saves left
    /// behind ([`prepare_data_dir`]).
    pub fn acquire(path: &Path) -> Result<DataDirLock, StoreError> {
        if let Some(dir) = path.parent() {
            create_private_dir(dir).map_err(|e| StoreError::io("cannot create", dir, e))?;
        }
        let mut file = private_file()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::io("cannot open lock file", path, e))?;
        match try_lock_briefly(&file) {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                return Err(StoreError::AlreadyRunning {
                    pid: if pid.is_empty() {
                        "unknown".into()
                    } else {
                        pid.to_string()
                    },
                    path: path.to_path_buf(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io("cannot lock", path, e)),
        }
        // Record our pid for the next process's message; the lock itself is what counts.
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = write!(file, "{}", std::process::id());
        let _ = file.flush();
        if let Some(dir) = path.parent() {
            prepare_data_dir(dir)?;
        }
        Ok(DataDirLock {
            _file: file,
            path: path.to_path_buf(),
        })
    }

    /// Who holds the lock, without taking it: `None` when free.
    pub fn holder(path: &Path) -> Option<String> {
        let mut file = OpenOptions::new().read(true).write(true).open(path).ok()?;
        match file.try_lock() {
            Ok(()) => {
                let _ = file.unlock();
                None
            }
            Err(_) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                Some(if pid.trim().is_empty() {
                    "unknown".into()
                } else {
                    pid.trim().to_string()
                })
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_with_the_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huddle.lock");
        let first = DataDirLock::acquire(&path).unwrap();
        let err = DataDirLock::acquire(&path).unwrap_err().to_string();
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert_eq!(DataDirLock::holder(&path), Some(std::process::id().to_string()));
        drop(first);
        assert_eq!(DataDirLock::holder(&path), None);
        DataDirLock::acquire(&path).unwrap();
    }

    #[test]
    fn taking_the_lock_clears_temporary_files_of_interrupted_saves() {
        let dir = tempfile::tempdir().unwrap();
        let stale = [".organization.json.tmp-4000000", "organization.json.bak.tmp"];
        for name in stale {
            std::fs::write(dir.path().join(name), b"half a save").unwrap();
        }
        std::fs::write(dir.path().join("organization.json"), b"{}").unwrap();
        let _lock = DataDirLock::acquire(&dir.path().join("huddle.lock")).unwrap();
        for name in stale {
            assert!(!dir.path().join(name).exists(), "{name}");
        }
        assert!(dir.path().join("organization.json").exists());
    }
}
