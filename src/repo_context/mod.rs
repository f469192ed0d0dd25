//! A repository's own words for the agents working in it: its `AGENTS.md` (and `CLAUDE.md`)
//! files, from the session's working directory up to the repository's root, and Agent Skills
//! (`SKILL.md` folders under `.agents/skills/` and `.claude/skills/`, and the user's own under
//! the config directory's `skills/`).
//!
//! A repository's files are read as data, never run: regular files only (a FIFO or a device
//! is skipped, never opened for long), each capped in size, their text made safe to show
//! (escape sequences and control characters removed). Nothing here knows a prompt: the engine
//! puts what is found into words.

pub mod skills;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use crate::model::RepoContextSettings;
pub use skills::{Skill, SkillSource, find_skills, load_skill};

/// The instruction files read in each directory, in this order.
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// Bytes of one instruction file kept; the rest is cut (and the cut said).
pub const FILE_MAX_BYTES: usize = 32 * 1024;
/// Bytes of all instruction files together; files past it are left out (and said).
pub const TOTAL_MAX_BYTES: usize = 64 * 1024;
/// Directories climbed from the working directory looking for the repository's root.
const MAX_LEVELS: usize = 32;

/// One instruction file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    pub path: PathBuf,
    /// The path as shown: relative to the repository's root (`AGENTS.md`, `app/AGENTS.md`).
    pub shown: String,
    /// Its text, made safe and capped.
    pub text: String,
    /// Cut at [`FILE_MAX_BYTES`].
    pub truncated: bool,
}

/// What was read of a working directory's instruction files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// Nearest to the working directory first.
    pub files: Vec<InstructionFile>,
    /// Files found but left out (past [`TOTAL_MAX_BYTES`], unreadable, not regular files), with
    /// why; said in the log.
    pub skipped: Vec<(String, String)>,
}

/// The directories searched for a working directory, nearest first: the directory itself and
/// its parents up to the repository's root (the nearest holding `.git`). Outside a repository,
/// only the directory itself.
pub fn search_dirs(working_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut here = Some(working_dir);
    while let Some(dir) = here {
        if dirs.len() >= MAX_LEVELS {
            break;
        }
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return dirs;
        }
        here = dir.parent();
    }
    vec![working_dir.to_path_buf()]
}

/// The instruction files of a working directory, nearest first, without reading them (what a
/// session's header shows). Only regular files (links to them included, when they stay inside
/// the repository).
pub fn find_instructions(working_dir: &Path) -> Vec<PathBuf> {
    let dirs = search_dirs(working_dir);
    let root = dirs.last().cloned().unwrap_or_else(|| working_dir.to_path_buf());
    dirs.iter()
        .flat_map(|dir| INSTRUCTION_FILES.iter().map(move |name| dir.join(name)))
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.is_file()) && inside(path, &root).is_ok())
        .collect()
}

/// What a session's header says of its working directory: the instruction files' names
/// (nearest first) and how many skills the repository offers. Reads the disk: the UI asks for
/// it off its thread ([`found`]) and draws what came back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub instructions: Vec<String>,
    pub skills: usize,
}

/// The instruction files and repository skills of `working_dir` (see [`Found`]).
pub fn found(working_dir: &Path) -> Found {
    Found {
        instructions: find_instructions(working_dir)
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect(),
        skills: find_skills(Some(working_dir), None).len(),
    }
}

/// `path` with its links followed, when that stays inside `root`: a repository's file that
/// links out of it (to `~/.aws/credentials`, say) is never read into a prompt.
pub(crate) fn inside(path: &Path, root: &Path) -> std::io::Result<PathBuf> {
    let resolved = path.canonicalize()?;
    if resolved.starts_with(root.canonicalize()?) {
        Ok(resolved)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "it links to a place outside the repository; not read",
        ))
    }
}

/// Reads the instruction files of a working directory, nearest first, within the caps.
pub fn read_instructions(working_dir: &Path) -> Instructions {
    let dirs = search_dirs(working_dir);
    let root = dirs.last().cloned().unwrap_or_else(|| working_dir.to_path_buf());
    let mut out = Instructions::default();
    let mut total = 0usize;
    for path in dirs
        .iter()
        .flat_map(|dir| INSTRUCTION_FILES.iter().map(move |name| dir.join(name)))
    {
        let shown = shown_path(&path, &root);
        let (text, truncated) = match inside(&path, &root).and_then(|p| read_capped(&p, FILE_MAX_BYTES)) {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                out.skipped.push((shown, e.to_string()));
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        if total + text.len() > TOTAL_MAX_BYTES {
            out.skipped.push((
                shown,
                format!(
                    "over the {} KiB of instructions kept per session",
                    TOTAL_MAX_BYTES / 1024
                ),
            ));
            continue;
        }
        total += text.len();
        out.files.push(InstructionFile {
            path,
            shown,
            text,
            truncated,
        });
    }
    out
}

/// `path` relative to `root` when under it, else the file's name.
fn shown_path(path: &Path, root: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// A regular file's text, at most `max` bytes of it (cut on a character boundary), made safe:
/// escape sequences and control characters but newlines and tabs removed. Also whether it was
/// cut. Invalid UTF-8 is read lossily.
pub(crate) fn read_capped(path: &Path, max: usize) -> std::io::Result<(String, bool)> {
    let file = crate::store::open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(max as u64 + 1).read_to_end(&mut bytes)?;
    let truncated = bytes.len() > max;
    bytes.truncate(max);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if truncated {
        // A character cut in half reads as one replacement character at the end: dropped.
        while text.ends_with(char::REPLACEMENT_CHARACTER) {
            text.pop();
        }
    }
    Ok((crate::text::sanitize::editable(&text), truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("app/src")).unwrap();
        dir
    }

    #[test]
    fn files_are_read_nearest_first_up_to_the_repository_root() {
        let dir = repo();
        let root = dir.path();
        std::fs::write(root.join("AGENTS.md"), "root rules").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "claude rules").unwrap();
        std::fs::write(root.join("app/AGENTS.md"), "app rules\x1b[31m red\x07").unwrap();
        let found = read_instructions(&root.join("app/src"));
        let shown: Vec<&str> = found.files.iter().map(|f| f.shown.as_str()).collect();
        assert_eq!(shown, ["app/AGENTS.md", "AGENTS.md", "CLAUDE.md"]);
        assert_eq!(found.files[0].text, "app rules red", "escape sequences removed");
        assert_eq!(find_instructions(&root.join("app/src")).len(), 3);
        // A parent above the repository's root is not read.
        let outer = tempfile::tempdir().unwrap();
        std::fs::write(outer.path().join("AGENTS.md"), "outside").unwrap();
        std::fs::create_dir_all(outer.path().join("r/.git")).unwrap();
        assert!(read_instructions(&outer.path().join("r")).files.is_empty());
    }

    #[test]
    fn a_file_that_links_out_of_the_repository_is_not_read() {
        let dir = repo();
        let root = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("credentials"),
            "aws_secret_access_key = s3cr3t",
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path().join("credentials"), root.join("AGENTS.md")).unwrap();
        std::fs::write(root.join("rules.md"), "inside").unwrap();
        std::os::unix::fs::symlink(root.join("rules.md"), root.join("CLAUDE.md")).unwrap();
        let found = read_instructions(root);
        let texts: Vec<&str> = found.files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(
            texts,
            ["inside"],
            "a link inside the repository is read, one out of it is not"
        );
        assert_eq!(found.skipped.len(), 1, "{:?}", found.skipped);
        assert!(
            found.skipped[0].1.contains("outside the repository"),
            "{:?}",
            found.skipped
        );
        assert!(find_instructions(root).iter().all(|p| p.ends_with("CLAUDE.md")));
    }

    #[test]
    fn a_fifo_is_skipped_and_big_files_are_capped() {
        let dir = repo();
        let root = dir.path();
        crate::store::mkfifo(&root.join("AGENTS.md"));
        std::fs::write(root.join("CLAUDE.md"), "é".repeat(FILE_MAX_BYTES)).unwrap();
        let found = read_instructions(root);
        assert_eq!(found.skipped.len(), 1, "{:?}", found.skipped);
        assert!(found.skipped[0].1.contains("named pipe"), "{:?}", found.skipped);
        assert_eq!(found.files.len(), 1);
        let claude = &found.files[0];
        assert!(claude.truncated);
        assert_eq!(claude.text.len(), FILE_MAX_BYTES, "cut on a character boundary");
        assert!(find_instructions(root).iter().all(|p| p.ends_with("CLAUDE.md")));
    }

    #[test]
    fn the_total_is_capped_and_settings_layer() {
        let dir = repo();
        let root = dir.path();
        for sub in ["", "app", "app/src"] {
            std::fs::write(root.join(sub).join("AGENTS.md"), "x".repeat(FILE_MAX_BYTES)).unwrap();
        }
        let found = read_instructions(&root.join("app/src"));
        assert_eq!(found.files.len(), 2);
        assert_eq!(found.skipped[0].0, "AGENTS.md");
        let off = RepoContextSettings {
            instructions: Some(false),
            skills: None,
        };
        let on = RepoContextSettings {
            instructions: Some(true),
            skills: Some(false),
        };
        assert!(!off.over(on).instructions_on());
        assert!(!off.over(on).skills_on());
        assert!(RepoContextSettings::default().instructions_on());
        let read: RepoContextSettings = serde_yaml::from_str("instructions: false\n").unwrap();
        assert_eq!(read, off);
        assert!(serde_yaml::from_str::<RepoContextSettings>("agents: false\n").is_err());
    }
}
