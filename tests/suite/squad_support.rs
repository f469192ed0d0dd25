//! What the Squad tests share: the corpus of real team folders and writable copies of them.

use std::fs;
use std::path::{Path, PathBuf};

/// `shared/corpus/squad` beside the repository (as CI has it), or beside a worktree folder.
pub fn corpus() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let candidates = [
        root.join("../shared/corpus/squad"),
        root.join("../../shared/corpus/squad"),
    ];
    match candidates.iter().find(|p| p.join("SOURCES.md").is_file()) {
        Some(p) => p.clone(),
        None => panic!(
            "the Squad corpus is missing: expected shared/corpus/squad at {} (or one level up)",
            candidates[0].display()
        ),
    }
}

/// One team folder of the corpus.
pub fn corpus_folder(name: &str) -> PathBuf {
    corpus().join(name)
}

/// A writable copy of `from` at `to` (the corpus files may be read-only, so bytes are copied,
/// not permissions).
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::write(&target, fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}
