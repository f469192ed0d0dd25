//! The only way Squad files are read. A team folder comes from whatever repository the user
//! opened, so nothing outside it is read (symlinks are resolved first), nothing large, nothing
//! binary; text that is not UTF-8 is decoded lossily and flagged. Nothing is ever executed.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::store::{is_not_regular, open_regular};

/// Larger files are refused: a charter or ledger that big is not meant for a prompt.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// A team folder, resolved.
#[derive(Debug, Clone)]
pub struct TeamDir {
    /// The folder as found (`<repo>/.squad`), for messages.
    pub path: PathBuf,
    /// Its canonical form; every file read must resolve inside it.
    pub root: PathBuf,
    /// The canonical repository directory.
    pub repo: PathBuf,
}

/// Why a file was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("does not exist")]
    Missing,
    #[error("resolves outside the team folder (to {0})")]
    Outside(PathBuf),
    #[error("is not a regular file")]
    NotAFile,
    #[error("is {0} bytes, over the {MAX_FILE_BYTES}-byte limit")]
    TooLarge(u64),
    #[error("looks binary (it contains NUL bytes)")]
    Binary,
    #[error("cannot be read: {0}")]
    Io(String),
}

/// A text file read from the team folder: BOM removed, line endings `\n`.
#[derive(Debug, Clone, PartialEq)]
pub struct TextFile {
    pub text: String,
    /// True when the bytes were not valid UTF-8 and replacement characters were used.
    pub lossy: bool,
}

impl TeamDir {
    /// Resolves `dir` (a team folder inside `repo`). The folder itself must not be a link to
    /// somewhere outside the repository.
    pub fn open(repo: &Path, dir: &Path) -> Result<TeamDir, Refusal> {
        let repo_c = repo.canonicalize().map_err(|e| Refusal::Io(e.to_string()))?;
        let root = dir.canonicalize().map_err(|e| Refusal::Io(e.to_string()))?;
        if !root.starts_with(&repo_c) {
            return Err(Refusal::Outside(root));
        }
        if !root.is_dir() {
            return Err(Refusal::NotAFile);
        }
        Ok(TeamDir {
            path: dir.to_path_buf(),
            root,
            repo: repo_c,
        })
    }

    /// Resolves `path` (absolute, or relative to the team folder) to a canonical path inside the
    /// team folder.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, Refusal> {
        let full = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let canonical = full.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Refusal::Missing,
            _ => Refusal::Io(e.to_string()),
        })?;
        if !canonical.starts_with(&self.root) {
            return Err(Refusal::Outside(canonical));
        }
        Ok(canonical)
    }

    /// Reads a text file inside the team folder.
    pub fn read(&self, path: &Path) -> Result<TextFile, Refusal> {
        let canonical = self.resolve(path)?;
        // Opened without blocking and checked once open: a FIFO planted here must not hang us.
        let file = open_regular(&canonical).map_err(|e| {
            if is_not_regular(&e) {
                Refusal::NotAFile
            } else {
                Refusal::Io(e.to_string())
            }
        })?;
        let len = file.metadata().map_err(|e| Refusal::Io(e.to_string()))?.len();
        if len > MAX_FILE_BYTES {
            return Err(Refusal::TooLarge(len));
        }
        let mut bytes = Vec::new();
        // The file may grow between the size check and the read.
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Refusal::Io(e.to_string()))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(Refusal::TooLarge(bytes.len() as u64));
        }
        decode(&bytes)
    }

    /// The sub-folders of `agents/` (names only), sorted; links leading outside are skipped.
    pub fn agent_folders(&self) -> Vec<String> {
        let Ok(agents) = self.resolve(Path::new("agents")) else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(&agents) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.path()
                    .canonicalize()
                    .is_ok_and(|p| p.starts_with(&self.root) && p.is_dir())
            })
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        names.sort();
        names
    }
}

/// Bytes to text: NUL means binary; a BOM is dropped; CRLF and lone CR become LF.
pub fn decode(bytes: &[u8]) -> Result<TextFile, Refusal> {
    if bytes.contains(&0) {
        return Err(Refusal::Binary);
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let (text, lossy) = match std::str::from_utf8(bytes) {
        Ok(t) => (t.to_string(), false),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), true),
    };
    let text = if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    };
    Ok(TextFile { text, lossy })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_normalises_and_flags() {
        let t = decode(b"\xEF\xBB\xBFa\r\nb\rc").unwrap();
        assert_eq!(
            t,
            TextFile {
                text: "a\nb\nc".into(),
                lossy: false
            }
        );
        let t = decode(b"caf\xE9").unwrap();
        assert!(t.lossy && t.text.starts_with("caf"));
        assert_eq!(decode(b"a\0b"), Err(Refusal::Binary));
    }
}
