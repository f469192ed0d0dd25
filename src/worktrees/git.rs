//! Running git: `std::process::Command` with explicit arguments (never a shell), stdin closed,
//! `GIT_TERMINAL_PROMPT=0` (no credential prompt can hang huddle), the C locale, and none of the
//! `GIT_DIR`-style variables a caller's environment might carry (a hook, a script), so the
//! directory given is the repository git works on.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::WorktreeError;

/// Variables that would point git somewhere else than the directory it is run in.
const REDIRECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
];

/// Lines of stderr quoted in an error.
const QUOTED_LINES: usize = 6;

/// git run in `dir` (`git -C dir …`).
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn command<S: AsRef<OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = Command::new("git");
        // The environment of the front end whose work this is (on the host), else ours.
        crate::env::Env::ambient().apply(&mut cmd);
        // Paths unquoted (`core.quotePath=false`): the patch and the `-z` file list then name a
        // non-ASCII path the same way.
        cmd.arg("-C")
            .arg(&self.dir)
            .args(["-c", "core.quotePath=false"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .env("LC_ALL", "C");
        for var in REDIRECTING_VARS {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs git and returns its output whatever the exit status (the caller decides).
    pub fn output<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, WorktreeError> {
        if !self.dir.is_dir() {
            return Err(WorktreeError::NoSuchDir(self.dir.clone()));
        }
        self.command(args).output().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => WorktreeError::GitMissing,
            _ => WorktreeError::GitUnusable(e.to_string()),
        })
    }

    /// Runs git; a non-zero exit is [`WorktreeError::Git`] quoting the end of stderr.
    pub fn run<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, WorktreeError> {
        let out = self.output(args)?;
        if out.status.success() {
            Ok(out)
        } else {
            Err(self.failure(args, &out))
        }
    }

    /// Standard output as text, trailing newline removed.
    pub fn text<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<String, WorktreeError> {
        let out = self.run(args)?;
        Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
    }

    /// True when git exits 0, false when it exits 1; anything else is an error (`merge-base
    /// --is-ancestor`, `rev-parse --verify --quiet`, `diff --quiet`).
    pub fn check<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<bool, WorktreeError> {
        let out = self.output(args)?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(self.failure(args, &out)),
        }
    }

    /// The error for a failed command: what was run, where, and the end of its stderr.
    pub fn failure<S: AsRef<OsStr>>(&self, args: &[S], out: &Output) -> WorktreeError {
        WorktreeError::Git {
            command: describe(args),
            dir: self.dir.clone(),
            message: stderr_tail(out),
        }
    }
}

/// `git a b c` for messages.
pub fn describe<S: AsRef<OsStr>>(args: &[S]) -> String {
    let mut text = String::from("git");
    for a in args {
        text.push(' ');
        text.push_str(&a.as_ref().to_string_lossy());
    }
    text
}

/// The last lines of stderr (or stdout when stderr is empty), on one line each.
pub fn stderr_tail(out: &Output) -> String {
    let source = if out.stderr.iter().all(u8::is_ascii_whitespace) {
        &out.stdout
    } else {
        &out.stderr
    };
    let text = String::from_utf8_lossy(source);
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let start = lines.len().saturating_sub(QUOTED_LINES);
    let tail = lines[start..].join(" / ");
    if tail.is_empty() {
        match out.status.code() {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_string(),
        }
    } else {
        crate::text::sanitize::display(&tail).into_owned()
    }
}

/// Splits `-z` output into its NUL-terminated fields.
pub fn nul_fields(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_named_and_git_errors_quote_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        assert_eq!(
            Git::new(&gone).run(&["status"]).unwrap_err(),
            WorktreeError::NoSuchDir(gone)
        );
        let err = Git::new(dir.path())
            .run(&["rev-parse", "--verify", "nope"])
            .unwrap_err();
        let WorktreeError::Git { command, message, .. } = err else {
            panic!("expected a git error");
        };
        assert_eq!(command, "git rev-parse --verify nope");
        assert!(message.contains("not a git repository"), "{message}");
    }

    #[test]
    fn nul_fields_split_and_skip_empties() {
        assert_eq!(nul_fields(b"a\0b c\0\0"), ["a", "b c"]);
        assert!(nul_fields(b"").is_empty());
    }
}
