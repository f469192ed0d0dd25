//! Shared by the sandbox tests: is bwrap usable (else the tests fail, saying how to install it,
//! unless `HUDDLE_SKIP_BWRAP=1`), and a machine in a directory: a fake home with a secret key,
//! huddle's data dir, a repository with two members' worktrees.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use huddle::sandbox::{Host, Policy, Sandbox};

const INSTALL: &str = "bwrap (bubblewrap) is needed for the sandbox tests: apt-get install -y bubblewrap \
     (.ci/setup-system-packages.sh does it); set HUDDLE_SKIP_BWRAP=1 to skip these tests";

/// True when the sandbox tests can run; panics with how to install bwrap when they cannot
/// (unless skipping was asked for, which is said).
pub fn bwrap_ready() -> bool {
    if huddle::sandbox::probe::availability(None).is_usable() {
        return true;
    }
    if std::env::var("HUDDLE_SKIP_BWRAP").is_ok_and(|v| v == "1") {
        eprintln!("SKIPPED (HUDDLE_SKIP_BWRAP=1): {INSTALL}");
        return false;
    }
    panic!(
        "{INSTALL}\nfound: {}",
        huddle::sandbox::probe::availability(None).describe()
    );
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A machine under `root`: `home/` (with `.ssh/id_test`), `data/` (huddle's), `repo/` (one
/// commit) and two worktrees in the data dir, as huddle makes them.
pub struct Machine {
    pub root: PathBuf,
    pub home: PathBuf,
    pub data: PathBuf,
    pub repo: PathBuf,
    pub alice: PathBuf,
    pub bob: PathBuf,
}

impl Machine {
    pub fn new(root: &Path) -> Machine {
        let root = root.canonicalize().expect("root");
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".ssh")).expect("home");
        std::fs::write(home.join(".ssh/id_test"), "PRIVATE KEY").expect("key");
        let data = root.join("data");
        let repo = root.join("repo");
        std::fs::create_dir_all(&repo).expect("repo");
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("a.txt"), "a\n").expect("file");
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "one"]);
        let trees = data.join("worktrees/repo-1");
        let alice = trees.join("t-alice-0a1b");
        let bob = trees.join("t-bob-2c3d");
        for (path, branch) in [(&alice, "huddle/t-alice-0a1b"), (&bob, "huddle/t-bob-2c3d")] {
            git(
                &repo,
                &["worktree", "add", "-q", "-b", branch, &path.display().to_string()],
            );
        }
        Machine {
            root,
            home,
            data,
            repo,
            alice,
            bob,
        }
    }

    pub fn host(&self) -> Arc<Host> {
        Arc::new(Host {
            home: Some(self.home.clone()),
            data_dir: Some(self.data.clone()),
            config_dir: None,
            env: Default::default(),
        })
    }

    pub fn sandbox(&self, policy: Policy) -> Sandbox {
        Sandbox::new(policy, self.host())
    }
}

/// A directory for a test's machine outside /tmp (so the sandbox's private /tmp does not
/// hide it: what is tested is the rule, not the tmpfs).
pub fn outside_tmp() -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).expect("target tmp");
    tempfile::tempdir_in(base).expect("tempdir")
}
