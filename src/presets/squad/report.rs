//! What an export did or would do, file by file, and why a file was left alone.

use std::fmt;
use std::path::{Path, PathBuf};

use super::charter::CHARTER_MAX_CHARS;

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportReport {
    /// The team folder written to: the one discovery reads (`.squad`, or a legacy `.ai-team`).
    pub team_dir: PathBuf,
    /// Files created or replaced.
    pub written: Vec<PathBuf>,
    /// Files that already said the same thing and were left alone.
    pub unchanged: Vec<PathBuf>,
    /// Files deliberately not written, each with the reason.
    pub kept: Vec<KeptFile>,
    /// The YAML preset in the user presets folder.
    pub preset_file: PathBuf,
}

/// What an export would do, without writing anything (the TUI shows it for confirmation).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportPlan {
    /// Files that do not exist yet.
    pub create: Vec<PathBuf>,
    /// Existing files whose content would change (needs `force`, or confirmation).
    pub change: Vec<PathBuf>,
    /// Existing files that already say the same thing.
    pub unchanged: Vec<PathBuf>,
    /// Files deliberately not written, each with the reason.
    pub kept: Vec<KeptFile>,
}

/// A file an export leaves alone although the group says something else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptFile {
    pub path: PathBuf,
    pub reason: KeptReason,
    /// False when the file does not exist (it was skipped rather than kept).
    pub exists: bool,
}

/// Why a file is not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptReason {
    /// The group holds only the capped copy of this ledger, which must never be written.
    ShortenedLedger,
    /// The ledger on disk says something else; ledgers grow on their own (the Scribe appends).
    LedgerChangedOnDisk,
    /// The charter is longer than the prompt cap: the group holds only its start.
    CharterLongerThanCap,
    /// Not valid UTF-8: editing it would replace the bytes huddle cannot read.
    NotUtf8,
    /// It contains NUL bytes.
    Binary,
    /// A FIFO, a device or a folder where a file belongs: never opened, never replaced.
    NotARegularFile,
}

impl fmt::Display for KeptReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeptReason::ShortenedLedger => write!(f, "the team holds only a shortened copy of it"),
            KeptReason::LedgerChangedOnDisk => write!(f, "changed on disk; huddle never overwrites a ledger"),
            KeptReason::CharterLongerThanCap => write!(
                f,
                "longer than the {CHARTER_MAX_CHARS}-character prompt cap, so the team holds only its start; edit the file itself"
            ),
            KeptReason::NotUtf8 => write!(f, "not valid UTF-8; edit the file itself"),
            KeptReason::Binary => write!(f, "looks binary (it contains NUL bytes)"),
            KeptReason::NotARegularFile => write!(
                f,
                "not a regular file (a named pipe, device or folder); huddle neither reads nor replaces it"
            ),
        }
    }
}

impl ExportReport {
    /// True when `path` was left alone on purpose.
    pub fn is_kept(&self, path: &Path) -> bool {
        self.kept.iter().any(|k| k.path == path)
    }

    /// One line per file, for the CLI and the TUI: `wrote`, `unchanged`, `kept` or `skipped`
    /// (with why).
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .written
            .iter()
            .map(|f| format!("wrote {}", f.display()))
            .collect();
        lines.extend(
            self.unchanged
                .iter()
                .map(|f| format!("unchanged {}", f.display())),
        );
        lines.extend(self.kept.iter().map(KeptFile::line));
        lines
    }
}

impl KeptFile {
    /// `kept <file> (<reason>)`, or `skipped` for a file that does not exist.
    pub fn line(&self) -> String {
        let verb = if self.exists { "kept" } else { "skipped" };
        format!("{verb} {} ({})", self.path.display(), self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_what_happened_and_why() {
        let report = ExportReport {
            written: vec!["a".into()],
            unchanged: vec!["b".into()],
            kept: vec![
                KeptFile {
                    path: "d.md".into(),
                    reason: KeptReason::LedgerChangedOnDisk,
                    exists: true,
                },
                KeptFile {
                    path: "e.md".into(),
                    reason: KeptReason::ShortenedLedger,
                    exists: false,
                },
            ],
            ..ExportReport::default()
        };
        assert_eq!(
            report.lines(),
            [
                "wrote a",
                "unchanged b",
                "kept d.md (changed on disk; huddle never overwrites a ledger)",
                "skipped e.md (the team holds only a shortened copy of it)",
            ]
        );
        assert!(report.is_kept(Path::new("d.md")));
        assert!(!report.is_kept(Path::new("a")));
    }
}
