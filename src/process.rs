//! What every program huddle starts needs (a CLI or ACP agent, a hook): its process group
//! killed when the caller lets go of it, and its end put into words.

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
