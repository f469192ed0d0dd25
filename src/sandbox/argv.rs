//! A [`Profile`] as `bwrap` arguments: pure, so every rule is a unit test.
//!
//! Mount order matters (a later mount covers an earlier one): the whole file system
//! read-only, a fresh `/dev` and `/proc`, a private `/tmp`, the hidden directories and files,
//! then what is revealed again read-only, then what is writable, then what stays read-only
//! inside the writable paths; then the hidden directories' empty tmpfs are made read-only.
//! Namespaces and the environment come last, then the command.

use std::ffi::OsString;
use std::path::Path;

use super::profile::{PRIVATE_TMP, Profile};
use super::settings::Network;

/// How this machine's bwrap must be called (found by [`super::probe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flavor {
    /// Namespaces need a user namespace first (root without `CAP_SYS_ADMIN`, e.g. a container).
    pub unshare_user: bool,
    /// A fresh `/proc` cannot be mounted: the host's is bound read-only instead (weaker: other
    /// processes are visible).
    pub host_proc: bool,
}

/// The arguments of `bwrap` that run `program args` confined by `profile`.
pub fn bwrap_args(profile: &Profile, flavor: Flavor, program: &str, args: &[String]) -> Vec<OsString> {
    let mut out = Args::default();
    out.flags(&["--new-session", "--die-with-parent"]);
    if flavor.unshare_user {
        out.flags(&["--unshare-user"]);
    }
    out.pair("--ro-bind", "/", "/");
    out.one("--dev", "/dev");
    if flavor.host_proc {
        out.pair("--ro-bind", "/proc", "/proc");
    } else {
        out.one("--proc", "/proc");
    }
    out.one("--tmpfs", PRIVATE_TMP);
    let layers = layers(profile);
    for (path, layer) in &layers {
        let path = *path;
        match layer {
            Layer::HiddenDir => out.one("--tmpfs", path),
            Layer::HiddenFile => out.pair("--ro-bind", "/dev/null", path),
            Layer::Reveal | Layer::Protected => out.same("--ro-bind-try", path),
            // The working directory must be there; an extra path may not exist (yet).
            Layer::Writable if path == profile.workdir.as_path() => out.same("--bind", path),
            Layer::Writable => out.same("--bind-try", path),
        }
    }
    // The hidden directories' tmpfs read-only, once everything inside them is mounted (bwrap
    // makes the mount points there first): a write fails as everywhere else read-only,
    // instead of landing in scratch space and seeming to work. Not one something else is
    // mounted on exactly (an `allow_write` of it: `--remount-ro` would take that mount).
    for (path, layer) in &layers {
        if *layer == Layer::HiddenDir && layers.iter().filter(|(p, _)| p == path).count() == 1 {
            out.one("--remount-ro", path);
        }
    }
    out.flags(&["--unshare-pid", "--unshare-ipc", "--unshare-uts"]);
    if profile.network == Network::Off {
        out.flags(&["--unshare-net"]);
    }
    out.env("TMPDIR", PRIVATE_TMP);
    if profile.git_env {
        // Auto-gc would pack refs and objects, which a sandboxed member may not write.
        out.env("GIT_CONFIG_COUNT", "1");
        out.env("GIT_CONFIG_KEY_0", "gc.auto");
        out.env("GIT_CONFIG_VALUE_0", "0");
    }
    out.one("--chdir", &profile.workdir);
    out.flags(&["--"]);
    out.0.push(program.into());
    out.0.extend(args.iter().map(OsString::from));
    out.0
}

/// What a mount does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    HiddenDir,
    HiddenFile,
    Reveal,
    Writable,
    Protected,
}

/// Every mount after the private /tmp, the most specific last: a mount covers what was
/// mounted below it before, so parents go first and the deepest rule wins (a hidden `.ssh`
/// inside a revealed home, a writable worktree inside the hidden data dir, read-only hooks
/// inside a writable checkout). At one path the later layer wins.
fn layers(profile: &Profile) -> Vec<(&Path, Layer)> {
    let under_tmp = |p: &Path| p.starts_with(PRIVATE_TMP);
    let opened: Vec<&Path> = profile
        .reveal
        .iter()
        .chain(&profile.writable)
        .map(|p| p.as_path())
        .collect();
    // Under /tmp a hidden path is gone already, unless something around it is opened again.
    let visible = |p: &Path| !under_tmp(p) || opened.iter().any(|o| p.starts_with(o) && p != *o);
    let mut all: Vec<(&Path, Layer)> = Vec::new();
    all.extend(
        profile
            .hidden_dirs
            .iter()
            .filter(|p| visible(p))
            .map(|p| (p.as_path(), Layer::HiddenDir)),
    );
    all.extend(
        profile
            .hidden_files
            .iter()
            .filter(|p| visible(p))
            .map(|p| (p.as_path(), Layer::HiddenFile)),
    );
    all.extend(profile.reveal.iter().map(|p| (p.as_path(), Layer::Reveal)));
    all.extend(profile.writable.iter().map(|p| (p.as_path(), Layer::Writable)));
    all.extend(profile.protected.iter().map(|p| (p.as_path(), Layer::Protected)));
    all.sort_by_key(|(p, layer)| (p.components().count(), *layer));
    all
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }
    fn one(&mut self, flag: &str, value: impl AsRef<std::ffi::OsStr>) {
        self.0.push(flag.into());
        self.0.push(value.as_ref().to_os_string());
    }
    fn pair(&mut self, flag: &str, a: impl AsRef<std::ffi::OsStr>, b: impl AsRef<std::ffi::OsStr>) {
        self.one(flag, a);
        self.0.push(b.as_ref().to_os_string());
    }
    fn same(&mut self, flag: &str, p: &Path) {
        self.pair(flag, p, p);
    }
    fn env(&mut self, key: &str, value: &str) {
        self.pair("--setenv", key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::settings::SandboxMode;
    use std::path::PathBuf;

    fn profile() -> Profile {
        Profile {
            mode: SandboxMode::WorkspaceWrite,
            network: Network::On,
            workdir: PathBuf::from("/data/huddle/worktrees/r/t-dev"),
            hidden_dirs: vec![
                PathBuf::from("/data/huddle"),
                PathBuf::from("/home/u/.ssh"),
                PathBuf::from("/tmp/h"),
            ],
            hidden_files: vec![PathBuf::from("/home/u/.netrc")],
            reveal: vec![PathBuf::from("/tmp/t/agent.sh")],
            writable: vec![
                PathBuf::from("/data/huddle/worktrees/r/t-dev"),
                PathBuf::from("/repo/.git/worktrees/t-dev"),
                PathBuf::from("/repo/.git/objects"),
            ],
            protected: vec![PathBuf::from("/repo/.git/worktrees/t-dev/config.worktree")],
            ensure_dirs: vec![],
            ensure_files: vec![],
            git_env: true,
            workdir_read_only: None,
        }
    }

    fn text(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn workspace_write_mounts_in_order() {
        let args = text(&bwrap_args(
            &profile(),
            Flavor::default(),
            "sh",
            &["agent.sh".into()],
        ));
        let expected = [
            "--new-session --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp",
            "--tmpfs /data/huddle --tmpfs /home/u/.ssh --ro-bind /dev/null /home/u/.netrc",
            "--ro-bind-try /tmp/t/agent.sh /tmp/t/agent.sh",
            "--bind-try /repo/.git/objects /repo/.git/objects",
            "--bind-try /repo/.git/worktrees/t-dev /repo/.git/worktrees/t-dev",
            "--bind /data/huddle/worktrees/r/t-dev /data/huddle/worktrees/r/t-dev",
            "--ro-bind-try /repo/.git/worktrees/t-dev/config.worktree /repo/.git/worktrees/t-dev/config.worktree",
            "--remount-ro /data/huddle --remount-ro /home/u/.ssh",
            "--unshare-pid --unshare-ipc --unshare-uts --setenv TMPDIR /tmp",
            "--setenv GIT_CONFIG_COUNT 1 --setenv GIT_CONFIG_KEY_0 gc.auto --setenv GIT_CONFIG_VALUE_0 0",
            "--chdir /data/huddle/worktrees/r/t-dev -- sh agent.sh",
        ]
        .join(" ");
        assert_eq!(args, expected);
        assert!(!args.contains("--tmpfs /tmp/h"), "under /tmp: hidden already");
        assert!(!args.contains("--remount-ro /tmp"), "{args}");
    }

    /// Review 26-2 finding 7: a hidden directory is an empty tmpfs made read-only after what
    /// is mounted inside it; one that `allow_write` opens itself is not made read-only.
    #[test]
    fn hidden_directories_are_read_only_unless_opened_themselves() {
        let mut p = profile();
        p.writable.push(PathBuf::from("/home/u/.ssh"));
        let args = text(&bwrap_args(&p, Flavor::default(), "x", &[]));
        assert!(args.contains("--tmpfs /home/u/.ssh"), "{args}");
        assert!(args.contains("--remount-ro /data/huddle --unshare-pid"), "{args}");
        assert!(!args.contains("--remount-ro /home/u/.ssh"), "{args}");
        // After every mount inside it.
        let bind = args.find("--bind /data/huddle/worktrees").unwrap_or(usize::MAX);
        let remount = args.find("--remount-ro /data/huddle").unwrap_or(0);
        assert!(bind < remount, "{args}");
    }

    #[test]
    fn the_deepest_rule_wins_whatever_its_kind() {
        let mut p = profile();
        // A home in /tmp revealed (a script's argument names it): its .ssh stays hidden.
        p.hidden_dirs = vec![PathBuf::from("/tmp/x/home/.ssh"), PathBuf::from("/tmp/y/.ssh")];
        p.reveal = vec![PathBuf::from("/tmp/x/home")];
        p.writable = vec![PathBuf::from("/tmp/x/home/.ssh/sockets")];
        p.protected.clear();
        p.hidden_files.clear();
        p.workdir = PathBuf::from("/tmp/x/home/.ssh/sockets");
        let args = text(&bwrap_args(&p, Flavor::default(), "x", &[]));
        assert!(
            args.contains("--tmpfs /tmp --ro-bind-try /tmp/x/home /tmp/x/home --tmpfs /tmp/x/home/.ssh --bind /tmp/x/home/.ssh/sockets"),
            "{args}"
        );
        assert!(!args.contains("/tmp/y"), "{args}");
    }

    #[test]
    fn network_off_and_the_fallback_flavors() {
        let mut p = profile();
        p.network = Network::Off;
        p.git_env = false;
        let flavor = Flavor {
            unshare_user: true,
            host_proc: true,
        };
        let args = text(&bwrap_args(&p, flavor, "true", &[]));
        assert!(
            args.starts_with("--new-session --die-with-parent --unshare-user --ro-bind / /"),
            "{args}"
        );
        assert!(
            args.contains("--ro-bind /proc /proc") && !args.contains("--proc"),
            "{args}"
        );
        assert!(
            args.contains("--unshare-uts --unshare-net --setenv TMPDIR /tmp --chdir"),
            "{args}"
        );
        assert!(!args.contains("GIT_CONFIG"), "{args}");
        assert!(args.ends_with("-- true"), "{args}");
    }

    #[test]
    fn read_only_binds_nothing_writable() {
        let mut p = profile();
        p.mode = SandboxMode::ReadOnly;
        p.writable.clear();
        p.protected.clear();
        let args = text(&bwrap_args(&p, Flavor::default(), "x", &[]));
        assert!(!args.contains("--bind "), "{args}");
        assert!(!args.contains("--bind-try"), "{args}");
    }
}
