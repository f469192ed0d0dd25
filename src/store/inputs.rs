//! What the user typed and has not lost: the composer's unsent draft of each session and team
//! (`drafts.json`) and the prompts sent, for recall with Up/Down (`history.jsonl`, one JSON
//! string a line, oldest first). Both are replaced atomically and owner-only, by a background
//! saver (the UI never waits on them); both are sanitised (no control sequences) and bounded.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::StoreError;
use super::atomic::write_atomic_private;

/// At most this many prompts are kept in the history file.
pub const HISTORY_LIMIT: usize = 500;
/// A prompt or a draft longer than this (bytes) is not kept on disk: it would make every save
/// slow, and a paste that large is in the transcript anyway.
pub const ENTRY_LIMIT: usize = 256 * 1024;
/// At most this many drafts are kept (the most recently listed win).
pub const DRAFTS_LIMIT: usize = 1000;

/// The drafts (by session or group id) and the prompt history, as loaded.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Inputs {
    pub drafts: BTreeMap<String, String>,
    pub history: Vec<String>,
    /// What could not be read, for the log (a damaged line is skipped, never fatal).
    pub problems: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct InputFiles {
    drafts: PathBuf,
    history: PathBuf,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct DraftsFile {
    version: u32,
    drafts: BTreeMap<String, String>,
}

impl InputFiles {
    pub fn new(data_dir: &Path) -> InputFiles {
        InputFiles {
            drafts: data_dir.join("drafts.json"),
            history: data_dir.join("history.jsonl"),
        }
    }

    /// Reads both files; a missing file is empty, an unreadable one is a problem reported.
    pub fn load(&self) -> Inputs {
        let mut inputs = Inputs::default();
        match read(&self.drafts) {
            Ok(Some(text)) => match parse_drafts(&text) {
                Ok(drafts) => inputs.drafts = drafts,
                Err(e) => {
                    // Kept aside, not written over by the next save.
                    let aside = self.drafts.with_extension("json.damaged");
                    let kept = match std::fs::rename(&self.drafts, &aside) {
                        Ok(()) => format!("moved to {}", aside.display()),
                        Err(e) => format!("cannot move it aside: {e}"),
                    };
                    inputs
                        .problems
                        .push(format!("{}: {e} ({kept})", self.drafts.display()));
                }
            },
            Ok(None) => {}
            Err(e) => inputs.problems.push(e),
        }
        match read(&self.history) {
            Ok(Some(text)) => {
                let (history, skipped) = parse_history(&text);
                inputs.history = history;
                if skipped > 0 {
                    inputs.problems.push(format!(
                        "{}: {skipped} damaged line(s) skipped",
                        self.history.display()
                    ));
                }
            }
            Ok(None) => {}
            Err(e) => inputs.problems.push(e),
        }
        inputs
    }

    pub fn save_drafts(&self, drafts: &BTreeMap<String, String>) -> Result<(), StoreError> {
        write_atomic_private(&self.drafts, drafts_json(drafts).as_bytes())
    }

    pub fn save_history(&self, history: &[String]) -> Result<(), StoreError> {
        write_atomic_private(&self.history, history_jsonl(history).as_bytes())
    }
}

fn read(path: &Path) -> Result<Option<String>, String> {
    match super::read_regular_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// A stored entry: sanitised, and None when empty or too large to keep.
fn keepable(text: &str) -> Option<String> {
    if text.trim().is_empty() || text.len() > ENTRY_LIMIT {
        return None;
    }
    Some(crate::text::sanitize::editable(text))
}

pub fn parse_drafts(text: &str) -> Result<BTreeMap<String, String>, String> {
    let file: DraftsFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(file
        .drafts
        .into_iter()
        .filter_map(|(k, v)| Some((k, keepable(&v)?)))
        .take(DRAFTS_LIMIT)
        .collect())
}

pub fn drafts_json(drafts: &BTreeMap<String, String>) -> String {
    let drafts = drafts
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), keepable(v)?)))
        .take(DRAFTS_LIMIT)
        .collect();
    let file = DraftsFile { version: 1, drafts };
    // A map of strings always serialises.
    serde_json::to_string_pretty(&file).unwrap_or_default()
}

/// The history's entries (the newest [`HISTORY_LIMIT`]) and how many lines were damaged.
pub fn parse_history(text: &str) -> (Vec<String>, usize) {
    let mut skipped = 0;
    let mut entries: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|line| match serde_json::from_str::<String>(line) {
            Ok(entry) => keepable(&entry),
            Err(_) => {
                skipped += 1;
                None
            }
        })
        .collect();
    let excess = entries.len().saturating_sub(HISTORY_LIMIT);
    entries.drain(..excess);
    (entries, skipped)
}

pub fn history_jsonl(history: &[String]) -> String {
    let start = history.len().saturating_sub(HISTORY_LIMIT);
    let mut out = String::new();
    for entry in history[start..].iter().filter_map(|e| keepable(e)) {
        // A string always serialises.
        out.push_str(&serde_json::to_string(&entry).unwrap_or_default());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn drafts_and_history_round_trip_sanitised_bounded_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let files = InputFiles::new(dir.path());
        assert_eq!(files.load(), Inputs::default(), "no files: nothing, no problem");
        let mut drafts = BTreeMap::new();
        drafts.insert("s1".to_string(), "half a thought\n\tindented\x1b[31m".to_string());
        drafts.insert("s2".to_string(), "   ".to_string());
        files.save_drafts(&drafts).unwrap();
        let history: Vec<String> = (0..HISTORY_LIMIT + 3).map(|i| format!("p{i}\nline")).collect();
        files.save_history(&history).unwrap();
        let loaded = files.load();
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert_eq!(loaded.drafts.len(), 1, "an empty draft is not kept");
        assert_eq!(loaded.drafts["s1"], "half a thought\n\tindented");
        assert_eq!(loaded.history.len(), HISTORY_LIMIT);
        assert_eq!(loaded.history[0], "p3\nline", "the oldest go first");
        for name in ["drafts.json", "history.jsonl"] {
            let mode = std::fs::metadata(dir.path().join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name}");
        }
    }

    #[test]
    fn damaged_files_are_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("drafts.json"), "{not json").unwrap();
        std::fs::write(dir.path().join("history.jsonl"), "\"one\"\nbroken\n\"two\"\n").unwrap();
        let loaded = InputFiles::new(dir.path()).load();
        assert_eq!(loaded.history, vec!["one".to_string(), "two".to_string()]);
        assert!(loaded.drafts.is_empty());
        assert!(dir.path().join("drafts.json.damaged").exists(), "kept aside");
        assert_eq!(loaded.problems.len(), 2, "{:?}", loaded.problems);
        assert!(
            loaded.problems[1].contains("1 damaged line"),
            "{:?}",
            loaded.problems
        );
    }

    #[test]
    fn an_oversized_entry_is_not_stored() {
        let big = "x".repeat(ENTRY_LIMIT + 1);
        assert_eq!(history_jsonl(&[big, "ok".into()]), "\"ok\"\n");
    }
}
