//! Opening files that come from a repository or the data dir: only regular files are read.
//!
//! A named pipe (FIFO) at a path huddle reads would block `open` until some other process writes
//! to it: forever, for a FIFO planted in a repository's `.squad/`. So files are opened with
//! `O_NONBLOCK` (which makes opening a FIFO return at once and does nothing to a regular file),
//! and the open file itself is checked with `fstat`, so nothing can be swapped in between a check
//! and the open.

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (after following links); anything else is
/// an `InvalidInput` error saying what it is.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    regular_only(file)
}

/// `file` if it is a regular file (checked on the open file, `fstat`); anything else is an
/// `InvalidInput` error saying what it is. Open it with `O_NONBLOCK` first, so that opening a
/// FIFO returns at once.
pub fn regular_only(file: File) -> io::Result<File> {
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        Ok(file)
    } else {
        Err(not_regular(kind))
    }
}

/// The whole content of a regular file.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A regular file as text (invalid UTF-8 is an error, as with `fs::read_to_string`).
pub fn read_regular_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read_regular(path)?).map_err(|e| io::Error::new(ErrorKind::InvalidData, e.utf8_error()))
}

/// True for the error [`open_regular`] gives for something that is not a regular file.
pub fn is_not_regular(e: &io::Error) -> bool {
    e.kind() == ErrorKind::InvalidInput && e.to_string().starts_with("not a regular file")
}

fn not_regular(kind: FileType) -> io::Error {
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    io::Error::new(
        ErrorKind::InvalidInput,
        format!("not a regular file: it is {what}"),
    )
}

#[cfg(test)]
pub(crate) fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_instead_of_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("charter.md");
        mkfifo(&fifo);
        let err = read_regular(&fifo).unwrap_err();
        assert!(is_not_regular(&err), "{err}");
        assert!(err.to_string().contains("named pipe (FIFO)"), "{err}");
        let err = read_regular(dir.path()).unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
        assert_eq!(
            read_regular(Path::new("/dev/null")).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }

    #[test]
    fn regular_files_and_links_to_them_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "héllo").unwrap();
        std::os::unix::fs::symlink(&file, dir.path().join("link")).unwrap();
        assert_eq!(read_regular_to_string(&dir.path().join("link")).unwrap(), "héllo");
        let missing = read_regular(&dir.path().join("nope")).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
    }
}
