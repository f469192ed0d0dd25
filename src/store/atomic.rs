//! Crash-safe file replacement: write a temp file in the same directory, fsync it, rename it
//! over the target, fsync the directory. A reader sees the old file or the new one, never half.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::StoreError;
use super::private::FILE_MODE;

/// Replaces `path` with `bytes`; a new file gets the usual permissions (what the umask allows).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    write_atomic_with_mode(path, bytes, 0o666)
}

/// [`write_atomic`] for the data dir: the file is 0600 whatever the umask.
pub(crate) fn write_atomic_private(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    write_atomic_with_mode(path, bytes, FILE_MODE)
}

fn write_atomic_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new()
            .mode(mode)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(|e| StoreError::io("cannot create", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| StoreError::io("cannot write", &tmp, e))?;
        // The data and the size: what a reader needs (the rename and the folder sync make the
        // name durable).
        f.sync_data()
            .map_err(|e| StoreError::io("cannot sync", &tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| StoreError::io("cannot replace", path, e))?;
        sync_dir(dir);
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes a rename durable. Failure only weakens durability, so it is logged, not returned.
pub(crate) fn sync_dir(dir: &Path) {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Ok(()) => {}
        Err(e) => tracing::debug!(dir = %dir.display(), error = %e, "directory fsync failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn missing_directory_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(&dir.path().join("no/such/dir/a.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("cannot create"), "{err}");
    }
}
