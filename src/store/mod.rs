//! Persistence at the edge: `organization.json` (atomic, backed up, coalesced), transcripts
//! (`sessions/<id>.jsonl`, append-only), run timelines (`runs/<group-id>/<run-id>.jsonl`) and the
//! data-dir lock.

mod atomic;
mod handle;
mod inputs;
mod line_wait;
pub use line_wait::real_clock_only;
mod lock;
mod open_transcripts;
mod org_json;
mod organization;
mod private;
mod regular;
mod runs;
mod saver;
mod transcript;
mod transcript_writer;

use std::path::PathBuf;

pub use atomic::write_atomic;
pub use handle::{OrgHandle, OrgView};
pub use inputs::{HISTORY_LIMIT, InputFiles, Inputs};
pub use lock::DataDirLock;
pub use org_json::{FORMAT_VERSION, ParsedOrganization, Unreadable, parse as parse_organization};
pub use organization::{LoadedOrganization, OrganizationFile, StoreNotice};
pub use private::{Prepared, prepare_data_dir};
pub(crate) use private::{create_private_dir, private_file};
#[cfg(test)]
pub(crate) use regular::mkfifo;
pub use regular::{is_not_regular, open_regular, read_regular, read_regular_to_string};
pub use runs::{DEFAULT_RUNS_KEPT, RunFiles, RunLine, RunLog, RunOwner, WRITTEN_WAIT};
pub use saver::Saver;
pub use transcript::{LoadedTranscript, Transcripts};
pub use transcript_writer::TranscriptWriter;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("huddle is already running with this data directory (pid {pid}); lock file {path}")]
    AlreadyRunning { pid: String, path: PathBuf },
    #[error("cannot serialise the organization: {0}")]
    Serialize(String),
    /// A write of the organization failed (the message names the file and the OS error).
    #[error("could not save the organization: {0}")]
    SaveFailed(String),
    /// The file was written by a newer huddle: it is not loaded, so it is never written over.
    #[error("{path}: {reason}")]
    NewerFormat { path: PathBuf, reason: String },
    #[error("{path} is corrupt ({reason}) and no usable backup exists; it was moved to {moved_to}")]
    CorruptNoBackup {
        path: PathBuf,
        reason: String,
        moved_to: PathBuf,
    },
}

impl StoreError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// The files under `dir` this process holds open (read from `/proc/self/fd`): what tests count
/// to prove a writer does not keep a handle per file it ever wrote.
#[cfg(test)]
pub(crate) fn open_files_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|target| target.starts_with(&dir))
        .collect()
}
