//! What one sandboxed process may see and change, worked out from its working directory, the
//! git repository around it, the policy and the machine ([`Host`]). Building a [`Profile`]
//! reads the file system (which paths exist, where a worktree's git directory is); turning it
//! into `bwrap` arguments ([`super::argv`]) does not.

use std::path::{Path, PathBuf};

use super::settings::{Network, Policy, SandboxMode};

/// Directories under the home directory that hold credentials: never readable in a sandbox.
/// huddle's own default data directory is one too (transcripts), also when `HUDDLE_HOME` puts
/// the one in use elsewhere.
pub const HIDDEN_HOME_DIRS: &[&str] = &[
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".gnupg",
    ".docker",
    ".local/share/huddle",
];
/// Files under the home directory that hold credentials: read as empty in a sandbox. huddle's
/// default config.yaml is one (an MCP server's `env:`, a provider's `headers:`), as is the
/// config.yaml of the config directory in use ([`Host::hidden_files`]).
pub const HIDDEN_HOME_FILES: &[&str] = &[".netrc", ".git-credentials", ".config/huddle/config.yaml"];
/// Sockets that would let a process act outside any sandbox (a container engine's).
pub const HIDDEN_SYSTEM_FILES: &[&str] = &["/run/docker.sock", "/var/run/docker.sock"];
/// Directories of sockets that would let a process act outside any sandbox: the users'
/// runtime directories (`$XDG_RUNTIME_DIR`: the session bus, through which `systemd-run
/// --user` starts anything; the ssh and gpg agents; a rootless container engine).
pub const HIDDEN_SYSTEM_DIRS: &[&str] = &["/run/user"];

/// Facts of the machine a profile needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Host {
    /// The user's home directory (`$HOME`).
    pub home: Option<PathBuf>,
    /// huddle's data directory (organization, transcripts, worktrees): hidden.
    pub data_dir: Option<PathBuf>,
    /// huddle's config directory (config.yaml, presets): read-only like the rest, kept visible.
    pub config_dir: Option<PathBuf>,
    /// The environment of the front end whose processes these are: where `bwrap` is found
    /// (its `HUDDLE_BWRAP`, its `PATH`), not the host's. Default: this process's.
    pub env: crate::env::Env,
}

impl Host {
    /// The home directory from `$HOME` and huddle's directories.
    pub fn from_env(data_dir: Option<PathBuf>, config_dir: Option<PathBuf>) -> Host {
        Host::in_env(data_dir, config_dir, crate::env::Env::process())
    }

    /// [`Host::from_env`] for a front end with environment `env` (a host serving it).
    pub fn in_env(data_dir: Option<PathBuf>, config_dir: Option<PathBuf>, env: crate::env::Env) -> Host {
        Host {
            home: env.var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from),
            data_dir,
            config_dir,
            env,
        }
    }

    /// The directories to hide (those that exist).
    fn hidden_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .home
            .iter()
            .flat_map(|h| HIDDEN_HOME_DIRS.iter().map(move |d| h.join(d)))
            .collect();
        dirs.extend(self.data_dir.clone());
        dirs.extend(HIDDEN_SYSTEM_DIRS.iter().map(PathBuf::from));
        dirs.extend(
            std::env::var_os("XDG_RUNTIME_DIR")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .filter(|d| d.is_absolute()),
        );
        let mut dirs: Vec<PathBuf> = dirs.into_iter().filter(|d| d.is_dir()).map(canonical).collect();
        dedup(&mut dirs);
        dirs
    }

    /// True when `dir` (canonical) lies inside the data directory in use where a process may
    /// work: a worktree huddle made under `worktrees/` (`worktrees/<repository>/<name>` and
    /// below), or a directory of your own kept there (a repository inside `HUDDLE_HOME`). Not
    /// the data directory itself, nor what huddle keeps there (`sessions/`, `runs/`, `logs/`,
    /// `worktrees/` and a repository's folder in it, `presets/`).
    fn may_work_in_the_data_dir(&self, dir: &Path) -> bool {
        let Some(data) = self.data_dir.clone().map(canonical) else {
            return false;
        };
        let Ok(rest) = dir.strip_prefix(&data) else {
            return false;
        };
        match rest.components().next().map(|c| c.as_os_str().to_string_lossy()) {
            None => false,
            Some(first) if first == "worktrees" => rest.components().count() >= 3,
            Some(first) => !["sessions", "runs", "logs", "presets"].contains(&first.as_ref()),
        }
    }

    /// Why `dir` must never be a working directory at all, if it must not: it lies in a
    /// hidden directory (huddle's data directory, `~/.ssh`, …; reached through a repository's
    /// symlink or an MCP server's `cwd:`), which working there would show again, read-only
    /// or writable. huddle's worktrees there, and your own directories in it, are fine.
    pub fn hidden_workdir(&self, dir: &Path) -> Option<String> {
        let dir = canonical(dir.to_path_buf());
        if self.may_work_in_the_data_dir(&dir) {
            return None;
        }
        let hidden = self.hidden_dirs().into_iter().find(|h| dir.starts_with(h))?;
        Some(format!(
            "it is inside {}, which the sandbox hides",
            hidden.display()
        ))
    }

    /// Why `dir` must never be a writable working directory, if it must not: the root, the
    /// home directory or a directory above it, huddle's config directory or data directory or
    /// a directory above them, or a directory inside them (the config directory in use or
    /// the default one: presets, hook scripts) but where a process may work in the data
    /// directory (a worktree huddle made). Writing there would change what runs outside any sandbox
    /// (`~/.bashrc`, config.yaml's hooks and MCP servers, a preset). (A directory inside the
    /// data directory is refused altogether: [`Host::hidden_workdir`].)
    pub fn unsafe_workdir(&self, dir: &Path) -> Option<String> {
        let dir = canonical(dir.to_path_buf());
        if dir.parent().is_none() {
            return Some("it is the root directory".into());
        }
        if !self.may_work_in_the_data_dir(&dir) {
            let configs = self
                .config_dir
                .iter()
                .cloned()
                .chain(self.home.iter().map(|h| h.join(".config/huddle")));
            for (what, inside) in configs
                .map(|c| ("config", c))
                .chain(self.data_dir.iter().map(|d| ("data", d.clone())))
            {
                let inside = canonical(inside);
                if dir.starts_with(&inside) && dir != inside {
                    return Some(format!(
                        "it is inside huddle's {what} directory {}",
                        inside.display()
                    ));
                }
            }
        }
        if let Some(home) = self.home.clone().map(canonical)
            && home.starts_with(&dir)
        {
            return Some(if home == dir {
                "it is the home directory".into()
            } else {
                format!("the home directory {} is inside it", home.display())
            });
        }
        if let Some(config) = self.config_dir.clone().map(canonical)
            && config.starts_with(&dir)
        {
            return Some(format!("huddle's config directory {} is there", config.display()));
        }
        if let Some(data) = self.data_dir.clone().map(canonical)
            && data.starts_with(&dir)
        {
            return Some(if data == dir {
                "it is huddle's data directory".into()
            } else {
                format!("huddle's data directory {} is inside it", data.display())
            });
        }
        None
    }

    fn hidden_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .home
            .iter()
            .flat_map(|h| HIDDEN_HOME_FILES.iter().map(move |f| h.join(f)))
            .chain(self.config_dir.iter().map(|c| c.join("config.yaml")))
            .filter(|f| f.is_file())
            .chain(
                HIDDEN_SYSTEM_FILES
                    .iter()
                    .map(PathBuf::from)
                    .filter(|f| f.exists()),
            )
            .map(canonical)
            .collect();
        dedup(&mut files);
        files
    }
}

/// The git repository a working directory belongs to, as git lays it out on disk.
/// The directory every worktree shares, for a linked worktree's own git directory
/// (`<common>/worktrees/<name>`): where git put it, whatever a `commondir` file in it says (a
/// sandboxed process could have written one). None for any other git directory (it is its
/// own). huddle's git runner and the sandbox both find a checkout's git directories so.
pub fn common_dir_of(git_dir: &Path) -> Option<&Path> {
    git_dir
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == "worktrees"))
        .and_then(Path::parent)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLayout {
    /// The git directory every worktree shares (`<repo>/.git`).
    pub common: PathBuf,
    /// A linked worktree's own git directory (`<common>/worktrees/<name>`); `None` in the main
    /// checkout.
    pub admin: Option<PathBuf>,
    /// The checked-out branch (`huddle/team-dev-0a1b`), when HEAD names one.
    pub branch: Option<String>,
    /// A linked worktree's `.git` file (`gitdir: <admin>`); `None` in the main checkout.
    pub link: Option<PathBuf>,
}

impl GitLayout {
    /// The repository around `dir`: the nearest `.git` above it (a directory in a main
    /// checkout, a `gitdir:` file in a linked worktree). `None` outside a repository.
    pub fn discover(dir: &Path) -> Option<GitLayout> {
        let mut at = Some(dir);
        while let Some(d) = at {
            let dot_git = d.join(".git");
            if dot_git.is_dir() {
                return Some(GitLayout {
                    branch: head_branch(&dot_git),
                    common: canonical(dot_git),
                    admin: None,
                    link: None,
                });
            }
            if dot_git.is_file() {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
                let admin = canonical(d.join(gitdir));
                let common = common_dir_of(&admin)
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| admin.clone());
                return Some(GitLayout {
                    branch: head_branch(&admin),
                    link: (admin != common).then(|| canonical(dot_git)),
                    admin: (admin != common).then_some(admin),
                    common,
                });
            }
            at = d.parent();
        }
        None
    }

    /// The directory of the branch's ref under `refs/heads` (`huddle` for `huddle/x`; empty
    /// for a branch at the top).
    fn branch_dir(&self) -> Option<PathBuf> {
        let branch = self.branch.as_deref()?;
        Some(
            Path::new(branch)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        )
    }

    /// What a member working in this checkout writes when it commits (workspace-write): a
    /// linked worktree's own git directory, the object store and its branch's ref directory
    /// (with its reflog); in the main checkout the whole git directory.
    pub fn writable(&self) -> Vec<PathBuf> {
        let Some(admin) = &self.admin else {
            return vec![self.common.clone()];
        };
        let mut paths = vec![admin.clone(), self.common.join("objects")];
        if let Some(dir) = self.branch_dir() {
            paths.push(self.common.join("refs/heads").join(&dir));
            paths.push(self.common.join("logs/refs/heads").join(&dir));
        }
        paths
    }

    /// What stays read-only inside the writable git paths: whatever would make a git run
    /// outside the sandbox (huddle's own, the user's) read another configuration or run a
    /// program. In a main checkout: hooks, config, `config.worktree`, `info`, submodules'
    /// git directories (`modules`), a `commondir` (when there is one) and the other
    /// worktrees' directories. In a linked worktree: its `.git` file and, in its own git
    /// directory, `commondir`, `gitdir`, `config.worktree` and `modules`. Each is a mount of
    /// its own, so it can be neither changed, removed nor renamed.
    pub fn protected(&self) -> Vec<PathBuf> {
        let Some(admin) = &self.admin else {
            return [
                "hooks",
                "config",
                "config.worktree",
                "commondir",
                "worktrees",
                "info",
                "modules",
            ]
            .iter()
            .map(|p| self.common.join(p))
            .collect();
        };
        let mut paths: Vec<PathBuf> = self.link.iter().cloned().collect();
        paths.extend(
            ["commondir", "gitdir", "config.worktree", "modules"]
                .iter()
                .map(|p| admin.join(p)),
        );
        paths
    }

    /// The protected directories that must exist before the launch (a missing one could be
    /// made inside the writable git directory and filled).
    pub fn protected_dirs(&self) -> Vec<PathBuf> {
        match &self.admin {
            None => vec![self.common.join("hooks"), self.common.join("modules")],
            Some(admin) => vec![admin.join("modules")],
        }
    }

    /// The protected files that must exist before the launch: `config.worktree`, made empty
    /// when missing, also where the repository does not read it yet: `git config
    /// extensions.worktreeConfig true` (which `git sparse-checkout init` sets) would make git
    /// read one a process created. Git reads an empty one as no settings, and none at all
    /// without the extension.
    pub fn protected_files(&self) -> Vec<PathBuf> {
        vec![
            self.admin
                .as_ref()
                .unwrap_or(&self.common)
                .join("config.worktree"),
        ]
    }

    /// The main checkout's top directory (the common dir's parent when it is named `.git`).
    pub fn top(&self) -> Option<PathBuf> {
        (self.common.file_name()? == ".git").then(|| self.common.parent().map(Path::to_path_buf))?
    }
}

/// `ref: refs/heads/<branch>` in a HEAD file.
fn head_branch(git_dir: &Path) -> Option<String> {
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(str::to_string)
        .filter(|b| !b.is_empty() && !b.contains(".."))
}

/// The canonical form of an existing path, else the path as it is.
pub fn canonical(p: PathBuf) -> PathBuf {
    p.canonicalize().unwrap_or(p)
}

/// Everything [`super::argv::bwrap_args`] needs for one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Read-only or workspace-write (never off: an unconfined process has no profile).
    pub mode: SandboxMode,
    pub network: Network,
    /// Where the process starts.
    pub workdir: PathBuf,
    /// Directories hidden behind an empty tmpfs.
    pub hidden_dirs: Vec<PathBuf>,
    /// Files hidden behind an empty file.
    pub hidden_files: Vec<PathBuf>,
    /// Read-only again though hidden (under /tmp or a hidden directory): the program, the
    /// files its arguments name, the repository, what `allow_read` lists around writable paths.
    pub reveal: Vec<PathBuf>,
    /// Writable: the working directory and git's parts (workspace-write), `allow_write`.
    pub writable: Vec<PathBuf>,
    /// Read-only inside writable paths (git hooks and config, the rest of `allow_read`).
    pub protected: Vec<PathBuf>,
    /// Directories that must exist before the launch (bind sources git may have removed).
    pub ensure_dirs: Vec<PathBuf>,
    /// Files that must exist before the launch (made empty): protected files a process could
    /// otherwise create.
    pub ensure_files: Vec<PathBuf>,
    /// Set `gc.auto=0` through the environment (git cannot pack refs in a sandbox).
    pub git_env: bool,
    /// Why the working directory is not writable though the mode is workspace-write (it was
    /// not given, or writing it would change what runs outside the sandbox).
    pub workdir_read_only: Option<String>,
}

/// The private temporary directory every sandbox gets.
pub const PRIVATE_TMP: &str = "/tmp";

impl Profile {
    /// The profile of a process started in `workdir` under `policy` (not off). `needs` are the
    /// files it must read even if they are hidden: its program and the paths its configured
    /// arguments name. `workdir` is writable in workspace-write unless
    /// [`Host::unsafe_workdir`] says it must not be.
    pub fn new(policy: &Policy, host: &Host, workdir: &Path, needs: &[PathBuf]) -> Profile {
        let why = host.unsafe_workdir(workdir);
        Self::build(policy, host, workdir, needs, why)
    }

    /// The profile of a process that was given no working directory: it starts in `here`
    /// (huddle's own), read-only; its private `/tmp` and `allow_write` are what it may write.
    pub fn new_without_workdir(policy: &Policy, host: &Host, here: &Path, needs: &[PathBuf]) -> Profile {
        let why =
            "no working directory was given (no repository): huddle's own directory is read-only".to_string();
        Self::build(policy, host, here, needs, Some(why))
    }

    fn build(
        policy: &Policy,
        host: &Host,
        workdir: &Path,
        needs: &[PathBuf],
        read_only: Option<String>,
    ) -> Profile {
        let workdir = canonical(workdir.to_path_buf());
        let git = GitLayout::discover(&workdir);
        let mut writable = Vec::new();
        let mut protected = Vec::new();
        let mut ensure_dirs = Vec::new();
        let mut ensure_files = Vec::new();
        let workdir_read_only = (policy.mode == SandboxMode::WorkspaceWrite)
            .then_some(read_only)
            .flatten();
        if policy.mode == SandboxMode::WorkspaceWrite && workdir_read_only.is_none() {
            writable.push(workdir.clone());
            if let Some(git) = &git {
                for p in git.writable() {
                    if p.starts_with(&git.common) && p != git.common {
                        ensure_dirs.push(p.clone());
                    }
                    // A main checkout's `.git` is a mount of its own even inside the writable
                    // checkout: a mount point cannot be renamed (`mv .git .git-real` and a new
                    // `.git/config` would escape every protected path).
                    if !writable.iter().any(|w| p.starts_with(w)) || p == git.common {
                        writable.push(p);
                    }
                }
                ensure_dirs.extend(git.protected_dirs());
                ensure_files.extend(git.protected_files());
                protected.extend(git.protected());
            }
        }
        writable.extend(policy.allow_write.iter().cloned().map(canonical));
        // What must stay read-only inside the writable paths (an agent's settings and hooks
        // inside its state): a mount of its own, made first when missing (only where its
        // parent exists: elsewhere nothing is writable anyway).
        for p in &policy.keep_read_only {
            let is_dir = p.as_os_str().to_string_lossy().ends_with('/');
            let path: PathBuf = canonical(p.clone()).components().collect();
            if !writable.iter().any(|w| path.starts_with(w)) {
                continue;
            }
            if !path.exists() && path.parent().is_some_and(Path::is_dir) {
                if is_dir {
                    ensure_dirs.push(path.clone());
                } else {
                    ensure_files.push(path.clone());
                }
            }
            protected.push(path);
        }
        // huddle's config directory stays read-only whatever is writable around it (an
        // `allow_write: [~]`): its hooks and MCP servers run outside this sandbox.
        let hidden_dirs = host.hidden_dirs();
        // (Not when it lies in a hidden directory, the data directory with `HUDDLE_HOME`: it
        // is hidden already, and a read-only mount would show it again.)
        if let Some(config) = host.config_dir.clone().map(canonical)
            && writable.iter().any(|w| config.starts_with(w))
            && !hidden_dirs.iter().any(|h| config.starts_with(h))
        {
            protected.push(config);
        }
        let hidden_files = host.hidden_files();
        let is_hidden = |p: &Path| p.starts_with(PRIVATE_TMP) || hidden_dirs.iter().any(|h| p.starts_with(h));
        let is_writable = |p: &Path| writable.iter().any(|w| p.starts_with(w));
        let mut reveal: Vec<PathBuf> = Vec::new();
        let mut wanted: Vec<PathBuf> = needs.iter().cloned().map(canonical).collect();
        wanted.push(workdir.clone());
        if let Some(git) = &git {
            wanted.push(git.top().unwrap_or_else(|| git.common.clone()));
            wanted.push(git.common.clone());
        }
        for p in wanted {
            if is_hidden(&p) && !is_writable(&p) && !reveal.iter().any(|r| p.starts_with(r)) {
                reveal.push(p);
            }
        }
        for p in policy.allow_read.iter().cloned().map(canonical) {
            // Around a writable path it goes first (or it would cover it); inside one, after.
            if writable.iter().any(|w| w.starts_with(&p)) || !is_writable(&p) {
                reveal.push(p);
            } else {
                protected.push(p);
            }
        }
        dedup(&mut writable);
        dedup(&mut reveal);
        dedup(&mut protected);
        dedup(&mut ensure_dirs);
        Profile {
            mode: policy.mode,
            network: policy.network,
            git_env: git.is_some()
                && policy.mode == SandboxMode::WorkspaceWrite
                && std::env::var_os("GIT_CONFIG_COUNT").is_none(),
            workdir,
            hidden_dirs,
            hidden_files,
            reveal,
            writable,
            protected,
            ensure_dirs,
            ensure_files,
            workdir_read_only,
        }
    }

    /// Creates the bind sources that must exist (a branch's ref directory that `git
    /// pack-refs` removed, a missing hooks directory that must stay read-only).
    pub fn prepare(&self) -> Result<(), String> {
        for dir in &self.ensure_dirs {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        }
        for file in &self.ensure_files {
            if file.exists() {
                continue;
            }
            // A JSON settings file that parses: `{}`; anything else empty.
            let content = if file.extension().is_some_and(|e| e == "json") {
                "{}\n"
            } else {
                ""
            };
            std::fs::write(file, content).map_err(|e| format!("cannot make {}: {e}", file.display()))?;
        }
        Ok(())
    }
}

/// The absolute paths among a configured command's program and arguments that exist: what a
/// sandboxed process must be able to read though it may lie in /tmp. The program is looked up
/// on `PATH` when it has no `/`.
pub fn needed_paths(program: &str, args: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(found) = find_program(program) {
        out.push(found);
    }
    for a in args {
        // `--flag=/path` too.
        let candidate = a.split_once('=').map_or(a.as_str(), |(_, v)| v);
        let p = Path::new(candidate);
        if p.is_absolute() && p.exists() {
            out.push(p.to_path_buf());
        }
    }
    out
}

pub(super) use crate::process::find_program;

pub(super) use super::settings::dedup;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::settings::SandboxSettings;

    fn git(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A repository with one commit and a linked worktree on `huddle/t-dev-0a1b`.
    fn repo_with_worktree(root: &Path) -> (PathBuf, PathBuf) {
        let repo = root.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "a").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "one"]);
        let wt = root.join("data/worktrees/repo-1/t-dev-0a1b");
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "huddle/t-dev-0a1b",
                wt.to_str().unwrap(),
            ],
        );
        (canonical(repo), canonical(wt))
    }

    #[test]
    fn a_linked_worktree_knows_its_git_dirs_and_branch() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, wt) = repo_with_worktree(dir.path());
        let layout = GitLayout::discover(&wt.join("sub/dir/not-made")).unwrap();
        assert_eq!(layout.common, repo.join(".git"));
        assert_eq!(layout.admin, Some(repo.join(".git/worktrees/t-dev-0a1b")));
        assert_eq!(layout.branch.as_deref(), Some("huddle/t-dev-0a1b"));
        assert_eq!(layout.top(), Some(repo.clone()));
        assert_eq!(
            layout.writable(),
            vec![
                repo.join(".git/worktrees/t-dev-0a1b"),
                repo.join(".git/objects"),
                repo.join(".git/refs/heads/huddle"),
                repo.join(".git/logs/refs/heads/huddle"),
            ]
        );
        assert_eq!(
            layout.protected(),
            vec![
                wt.join(".git"),
                repo.join(".git/worktrees/t-dev-0a1b/commondir"),
                repo.join(".git/worktrees/t-dev-0a1b/gitdir"),
                repo.join(".git/worktrees/t-dev-0a1b/config.worktree"),
                repo.join(".git/worktrees/t-dev-0a1b/modules"),
            ]
        );
        // A planted `commondir` does not move the shared git directory (mends item 10: as
        // huddle's git runner finds it).
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(
            repo.join(".git/worktrees/t-dev-0a1b/commondir"),
            format!("{}\n", elsewhere.display()),
        )
        .unwrap();
        assert_eq!(GitLayout::discover(&wt).unwrap().common, repo.join(".git"));
        // Review 26-2 finding 13: `config.worktree` is made (empty) without the extension too.
        assert_eq!(
            layout.protected_files(),
            vec![repo.join(".git/worktrees/t-dev-0a1b/config.worktree")]
        );
        let main = GitLayout::discover(&repo).unwrap();
        assert_eq!((main.admin, main.branch.as_deref()), (None, Some("main")));
        assert!(GitLayout::discover(Path::new("/")).is_none());
    }

    #[test]
    fn a_worktree_profile_writes_its_tree_and_reveals_the_repository_in_tmp() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, wt) = repo_with_worktree(dir.path());
        let host = Host {
            home: Some(dir.path().join("home")),
            data_dir: Some(canonical(dir.path().join("data"))),
            config_dir: None,
            env: Default::default(),
        };
        std::fs::create_dir_all(dir.path().join("home/.ssh")).unwrap();
        std::fs::write(dir.path().join("home/.netrc"), "machine x").unwrap();
        let policy = Policy::default();
        let profile = Profile::new(&policy, &host, &wt, &[PathBuf::from("/bin/sh")]);
        assert_eq!(profile.workdir, wt);
        assert_eq!(profile.writable[0], wt);
        assert!(profile.writable.contains(&repo.join(".git/objects")));
        assert!(profile.ensure_dirs.contains(&repo.join(".git/refs/heads/huddle")));
        assert!(
            profile
                .hidden_dirs
                .contains(&canonical(dir.path().join("home/.ssh")))
        );
        assert!(profile.hidden_dirs.contains(&canonical(dir.path().join("data"))));
        assert!(
            profile
                .hidden_files
                .contains(&canonical(dir.path().join("home/.netrc")))
        );
        // The repository lives in /tmp here: it is revealed read-only (git reads it).
        if repo.starts_with("/tmp") {
            assert!(profile.reveal.contains(&repo), "{:?}", profile.reveal);
        }
        assert!(!profile.reveal.contains(&wt), "writable, not merely revealed");
        assert!(profile.git_env || std::env::var_os("GIT_CONFIG_COUNT").is_some());
        profile.prepare().unwrap();
    }

    #[test]
    fn the_main_checkout_keeps_hooks_and_config_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, _) = repo_with_worktree(dir.path());
        let profile = Profile::new(&Policy::default(), &Host::default(), &repo, &[]);
        // `.git` is a mount of its own: it cannot be renamed away from its protected parts.
        assert_eq!(profile.writable, vec![repo.clone(), repo.join(".git")]);
        for p in [
            "hooks",
            "config",
            "worktrees",
            "modules",
            "commondir",
            "config.worktree",
        ] {
            assert!(profile.protected.contains(&repo.join(".git").join(p)), "{p}");
        }
        let read_only = Policy::resolve(
            &[("t", &SandboxSettings::mode(SandboxMode::ReadOnly))],
            None,
            None,
        );
        let profile = Profile::new(&read_only, &Host::default(), &repo, &[]);
        assert!(profile.writable.is_empty() && profile.protected.is_empty());
        assert!(!profile.git_env);
    }

    /// Review 26-2 findings 17 and 21: config.yaml (secrets: MCP `env:`, provider `headers:`)
    /// of the config dir in use and of the default one, and the default data dir (when
    /// `HUDDLE_HOME` puts the one in use elsewhere), are hidden.
    #[test]
    fn config_yaml_and_the_default_data_dir_are_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let elsewhere = dir.path().join("huddle-demo");
        for d in [
            home.join(".config/huddle"),
            home.join(".local/share/huddle"),
            elsewhere.clone(),
        ] {
            std::fs::create_dir_all(&d).unwrap();
        }
        std::fs::write(home.join(".config/huddle/config.yaml"), "providers: []").unwrap();
        std::fs::write(elsewhere.join("config.yaml"), "providers: []").unwrap();
        let host = Host {
            home: Some(home.clone()),
            data_dir: Some(elsewhere.clone()),
            config_dir: Some(elsewhere.clone()),
            env: Default::default(),
        };
        let files = host.hidden_files();
        for f in [
            home.join(".config/huddle/config.yaml"),
            elsewhere.join("config.yaml"),
        ] {
            assert!(files.contains(&canonical(f.clone())), "{f:?} in {files:?}");
        }
        let dirs = host.hidden_dirs();
        assert!(
            dirs.contains(&canonical(home.join(".local/share/huddle"))),
            "{dirs:?}"
        );
    }

    #[test]
    fn home_root_and_the_config_dir_are_never_writable_working_directories() {
        let dir = tempfile::tempdir().unwrap();
        let home = canonical(dir.path().join("home"));
        let config = home.join(".config/huddle");
        let project = home.join("project");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let host = Host {
            home: Some(home.clone()),
            data_dir: Some(home.join(".local/share/huddle")),
            config_dir: Some(config.clone()),
            env: Default::default(),
        };
        for unsafe_dir in [
            Path::new("/"),
            dir.path(),
            &home,
            &config,
            &home.join(".config"),
            &home.join(".local/share/huddle"),
        ] {
            let profile = Profile::new(&Policy::default(), &host, unsafe_dir, &[]);
            assert!(profile.writable.is_empty(), "{}", unsafe_dir.display());
            assert!(profile.workdir_read_only.is_some());
        }
        let profile = Profile::new(&Policy::default(), &host, &project, &[]);
        assert_eq!(profile.writable, vec![project.clone()]);
        let profile = Profile::new_without_workdir(&Policy::default(), &host, &project, &[]);
        assert!(profile.writable.is_empty());
        // The config dir is read-only again inside a writable home.
        let mut policy = Policy::default();
        policy.allow_write = vec![home.clone()];
        let profile = Profile::new(&policy, &host, &project, &[]);
        assert!(profile.protected.contains(&config), "{:?}", profile.protected);
    }

    /// Review 26-2 finding 12: inside the data directory only huddle's worktrees and your own
    /// directories are working directories (what huddle keeps there, or another hidden
    /// directory, starts nothing); inside the config directory (the one in use or the default
    /// one) read-only.
    #[test]
    fn inside_huddles_directories_only_its_worktrees_and_yours_are_working_directories() {
        let dir = tempfile::tempdir().unwrap();
        let home = canonical(dir.path().join("home"));
        let data = home.join("hh");
        let worktree = data.join("worktrees/repo-1/t-dev-0a1b");
        for d in [
            worktree.join("src"),
            data.join("sessions"),
            home.join(".ssh/keys"),
            home.join(".config/huddle/hooks"),
        ] {
            std::fs::create_dir_all(&d).unwrap();
        }
        // HUDDLE_HOME: config and data in one directory.
        let host = Host {
            home: Some(home.clone()),
            data_dir: Some(data.clone()),
            config_dir: Some(data.clone()),
            env: Default::default(),
        };
        for hidden in [
            data.join("sessions"),
            data.join("worktrees"),
            data.join("worktrees/repo-1"),
            home.join(".ssh/keys"),
        ] {
            assert!(host.hidden_workdir(&hidden).is_some(), "{}", hidden.display());
        }
        assert!(host.unsafe_workdir(&data.join("sessions")).is_some());
        // A directory of your own kept in HUDDLE_HOME is a working directory as anywhere else.
        let kept = data.join("projects/app");
        std::fs::create_dir_all(kept.join("src")).unwrap();
        for fine in [
            worktree.clone(),
            worktree.join("src"),
            kept.clone(),
            kept.join("src"),
        ] {
            assert_eq!(host.hidden_workdir(&fine), None);
            assert_eq!(host.unsafe_workdir(&fine), None);
        }
        let hooks = home.join(".config/huddle/hooks");
        assert_eq!(host.hidden_workdir(&hooks), None);
        assert!(
            host.unsafe_workdir(&hooks)
                .is_some_and(|why| why.contains("config directory"))
        );
    }

    #[test]
    fn allow_read_around_a_writable_path_is_revealed_first() {
        let dir = tempfile::tempdir().unwrap();
        let work = canonical(dir.path().join("w"));
        std::fs::create_dir_all(work.join("inner")).unwrap();
        let mut policy = Policy::default();
        policy.allow_read = vec![dir.path().to_path_buf(), work.join("inner")];
        let profile = Profile::new(&policy, &Host::default(), &work, &[]);
        assert!(profile.reveal.contains(&canonical(dir.path().to_path_buf())));
        assert_eq!(profile.protected, vec![work.join("inner")]);
    }

    #[test]
    fn needed_paths_are_the_program_and_existing_absolute_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("agent.sh");
        std::fs::write(&script, "true").unwrap();
        let found = needed_paths(
            "sh",
            &[
                script.display().to_string(),
                "--model".into(),
                "/no/such/file".into(),
                format!("--config={}", script.display()),
            ],
        );
        assert!(found[0].ends_with("sh"), "{found:?}");
        assert_eq!(&found[1..], &[script.clone(), script]);
        assert_eq!(find_program("huddle-no-such-program-xyz"), None);
    }
}
