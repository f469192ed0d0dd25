//! Running git: `std::process::Command` with explicit arguments (never a shell), stdin closed,
//! `GIT_TERMINAL_PROMPT=0` (no credential prompt can hang huddle), the C locale, and none of the
//! `GIT_DIR`-style variables a caller's environment might carry (a hook, a script), so the
//! directory given is the repository git works on.
//!
//! A sandboxed member writes its worktree (and parts of the git directory), and huddle runs git
//! there afterwards outside any sandbox: nothing a member could have written may make that git
//! run a program. So git's directories are found here ([`Layout`]) and given explicitly
//! (`GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE`: a planted `commondir` file or a rewritten
//! `.git` file is refused, not followed), and every command runs with `core.fsmonitor`, hooks
//! and submodule recursion off (a submodule's own config would be the member's).

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

/// Settings every git command huddle runs gets (`-c`, over any config file; inherited by the
/// git processes it starts): no fsmonitor program, no hooks, no look into submodules.
const HARDENING: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "diff.ignoreSubmodules=all",
    "submodule.recurse=false",
    // Paths unquoted: the patch and the `-z` file list then name a non-ASCII path the same way.
    "core.quotePath=false",
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

    fn command<S: AsRef<OsStr>>(&self, args: &[S], layout: Option<&Layout>) -> Command {
        let mut cmd = Command::new("git");
        // The environment of the front end whose work this is (on the host), else ours.
        crate::env::Env::ambient().apply(&mut cmd);
        cmd.arg("-C").arg(&self.dir);
        for setting in HARDENING {
            cmd.args(["-c", setting]);
        }
        cmd.args(args)
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
        if let Some(layout) = layout {
            cmd.env("GIT_DIR", &layout.git_dir)
                .env("GIT_COMMON_DIR", &layout.common_dir)
                .env("GIT_WORK_TREE", &layout.work_tree);
        }
        cmd
    }

    /// The hardened command (explicit git directories, no fsmonitor, hooks or submodules) for
    /// a caller that runs git itself (attachments read a diff and the file list this way).
    pub(crate) fn hardened<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Command, WorktreeError> {
        let layout = Layout::find(&self.dir)?;
        Ok(self.command(args, layout.as_ref()))
    }

    /// Runs git and returns its output whatever the exit status (the caller decides).
    pub fn output<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Output, WorktreeError> {
        if !self.dir.is_dir() {
            return Err(WorktreeError::NoSuchDir(self.dir.clone()));
        }
        let layout = Layout::find(&self.dir)?;
        self.command(args, layout.as_ref())
            .output()
            .map_err(|e| match e.kind() {
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

/// Where git's directories are for a directory inside a checkout, found the way git finds them
/// but without following what a sandboxed process could have redirected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// `<top>/.git` in a main checkout, `<common>/worktrees/<name>` in a linked worktree.
    pub git_dir: PathBuf,
    /// The git directory every worktree shares.
    pub common_dir: PathBuf,
    /// The checkout's top directory.
    pub work_tree: PathBuf,
}

impl Layout {
    /// The layout around `dir`: the nearest `.git` above it. `Ok(None)` outside a repository
    /// (git then says so itself); an error for a layout huddle will not run git in:
    ///
    /// - a main checkout's git directory with a `commondir` file (only a linked worktree's has
    ///   one: it would send git to another config);
    /// - a `.git` file naming a directory inside the checkout itself, inside a git directory's
    ///   object store or refs, or a `<x>/worktrees/<name>` whose common directory is not a git
    ///   directory.
    pub fn find(dir: &Path) -> Result<Option<Layout>, WorktreeError> {
        let start = dir
            .canonicalize()
            .map_err(|e| WorktreeError::io("resolve", dir, &e))?;
        let mut at = Some(start.as_path());
        while let Some(top) = at {
            let dot_git = top.join(".git");
            let meta = std::fs::metadata(&dot_git);
            if meta.as_ref().is_ok_and(|m| m.is_dir()) {
                let planted = dot_git.join("commondir");
                if planted.exists() {
                    return Err(untrusted(
                        &planted,
                        "a main checkout's git directory has no commondir file (it would point git at another configuration)",
                    ));
                }
                return Ok(Some(Layout {
                    git_dir: dot_git.clone(),
                    common_dir: dot_git,
                    work_tree: top.to_path_buf(),
                }));
            }
            if meta.as_ref().is_ok_and(|m| m.is_file()) {
                return Self::linked(top, &dot_git).map(Some);
            }
            at = top.parent();
        }
        Ok(None)
    }

    /// The repository a checkout belongs to: the directory its common git directory is in
    /// (the main checkout's top), read from disk by [`Layout::find`]'s rules (what huddle's git
    /// runner tells git), without running git. `Ok(None)` outside a repository.
    pub fn repository_of(dir: &Path) -> Result<Option<PathBuf>, WorktreeError> {
        Ok(Layout::find(dir)?.and_then(|l| l.common_dir.parent().map(Path::to_path_buf)))
    }

    /// A checkout whose `.git` is a file (`gitdir: <dir>`).
    fn linked(top: &Path, dot_git: &Path) -> Result<Layout, WorktreeError> {
        let text = std::fs::read_to_string(dot_git).map_err(|e| WorktreeError::io("read", dot_git, &e))?;
        let Some(named) = text
            .lines()
            .find_map(|l| l.strip_prefix("gitdir:"))
            .map(str::trim)
        else {
            return Err(untrusted(dot_git, "it has no `gitdir:` line"));
        };
        let named = top.join(named);
        let git_dir = named
            .canonicalize()
            .map_err(|e| WorktreeError::io("resolve the gitdir of", dot_git, &e))?;
        if git_dir.starts_with(top) {
            return Err(untrusted(
                dot_git,
                &format!("it names {}, inside the checkout itself", git_dir.display()),
            ));
        }
        if inside_git_store(&git_dir) {
            return Err(untrusted(
                dot_git,
                &format!(
                    "it names {}, inside a git directory's objects, refs or logs",
                    git_dir.display()
                ),
            ));
        }
        let common_dir = match crate::sandbox::profile::common_dir_of(&git_dir) {
            // A linked worktree: its common directory is where git put its directory, whatever
            // a `commondir` file says.
            Some(common) => {
                if !common.join("objects").is_dir() || !common.join("HEAD").is_file() {
                    return Err(untrusted(
                        dot_git,
                        &format!(
                            "it names {}, whose common directory {} is not a git directory",
                            git_dir.display(),
                            common.display()
                        ),
                    ));
                }
                common.to_path_buf()
            }
            // A git directory kept elsewhere (a submodule's): it is its own common directory.
            None => {
                let planted = git_dir.join("commondir");
                if planted.exists() {
                    return Err(untrusted(
                        &planted,
                        "only a linked worktree's git directory (<repo>/.git/worktrees/<name>) has a commondir file",
                    ));
                }
                git_dir.clone()
            }
        };
        Ok(Layout {
            git_dir,
            common_dir,
            work_tree: top.to_path_buf(),
        })
    }
}

/// The refusal for a git layout huddle does not follow.
fn untrusted(path: &Path, why: &str) -> WorktreeError {
    WorktreeError::Refused(format!(
        "huddle does not run git with {}: {why}; a sandboxed process may have written it. Look at it and repair it with git yourself",
        path.display()
    ))
}

/// True for a path inside a `.git` directory's `objects`, `refs` or `logs` (places a sandboxed
/// member may write).
fn inside_git_store(path: &Path) -> bool {
    let parts: Vec<&OsStr> = path.iter().collect();
    parts
        .windows(2)
        .any(|w| w[0] == ".git" && (w[1] == "objects" || w[1] == "refs" || w[1] == "logs"))
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
