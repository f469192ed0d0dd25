//! What every program huddle starts needs (a CLI or ACP agent, a hook): its process group
//! killed when the caller lets go of it, and its end put into words.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

/// Kills a process group when dropped, unless disarmed.
pub struct GroupKiller(pub Option<i32>);

impl GroupKiller {
    /// The group a child started in a group of its own leads (its id is the child's pid).
    pub fn of(child: &tokio::process::Child) -> GroupKiller {
        GroupKiller(child.id().and_then(|id| i32::try_from(id).ok()))
    }

    pub fn kill(&mut self) {
        if let Some(pgid) = self.0.filter(|&p| p > 0) {
            // SAFETY: killpg only sends a signal; the group id is our child's pid, which cannot
            // be reused while the child is not yet waited for.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    pub fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `exited with status 3`, `was killed by signal 9`.
pub fn describe_status(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => "failed".to_string(),
    }
}

/// A program's path: itself (made absolute) when it contains `/` and is an executable file,
/// else the first executable match on `PATH`. What every program huddle starts is looked up
/// with (an agent's, a hook's, bwrap).
pub fn find_program(program: &str) -> Option<PathBuf> {
    find_program_in(program, std::env::var_os("PATH").as_deref())
}

/// [`find_program`] along `path_var` (a `PATH` value: a front end's, on the host).
pub fn find_program_in(program: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then(|| std::path::absolute(&path).unwrap_or(path));
    }
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
