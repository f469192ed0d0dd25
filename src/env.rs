//! The environment a piece of work runs in: this process's, or the one a front end sent to the
//! host (its variables, as its terminal had them).
//!
//! One host serves front ends started from different shells: a `huddle run` in one repository
//! may have another `PATH`, another API key or another `direnv` set-up than the TUI in the next
//! terminal. What they start runs in *their* environment, as if huddle ran in their process:
//! provider keys are read from it, and the programs started for their work (CLI agents, MCP
//! servers, git) get exactly its variables.
//!
//! Providers and tool servers hold their [`Env`]; git, run from synchronous code in many places,
//! reads the *ambient* one ([`Env::scope`]) of the thread it runs on.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Variables by name. `None`: this process's own.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env(Option<Arc<BTreeMap<String, String>>>);

impl std::fmt::Debug for Env {
    /// Names only: values are often secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("Env(process)"),
            Some(vars) => write!(f, "Env({} variables)", vars.len()),
        }
    }
}

thread_local! {
    static AMBIENT: RefCell<Option<Env>> = const { RefCell::new(None) };
}

impl Env {
    /// This process's environment.
    pub fn process() -> Env {
        Env(None)
    }

    /// Exactly these variables.
    pub fn of(vars: BTreeMap<String, String>) -> Env {
        Env(Some(Arc::new(vars)))
    }

    /// This process's variables as a map (those whose name and value are UTF-8: the others
    /// cannot travel to a host, and are left out).
    pub fn capture() -> BTreeMap<String, String> {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect()
    }

    /// True for this process's own environment.
    pub fn is_process(&self) -> bool {
        self.0.is_none()
    }

    /// One variable's value.
    pub fn var(&self, name: &str) -> Option<String> {
        match &self.0 {
            None => std::env::var(name).ok(),
            Some(vars) => vars.get(name).cloned(),
        }
    }

    /// One variable's value, not necessarily UTF-8 (this process's).
    pub fn var_os(&self, name: &str) -> Option<std::ffi::OsString> {
        match &self.0 {
            None => std::env::var_os(name),
            Some(vars) => vars.get(name).map(Into::into),
        }
    }

    /// Every variable (this process's: also those that are not UTF-8).
    pub fn vars_os(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        match &self.0 {
            None => std::env::vars_os().collect(),
            Some(vars) => vars.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// Gives a child process these variables instead of this process's (nothing for this
    /// process's own: a child inherits them anyway). What was set or removed on `cmd` already
    /// (a sandbox's `TMPDIR`, git's settings) stays so.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        let Some(vars) = &self.0 else { return };
        let set: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = cmd
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
            .collect();
        cmd.env_clear();
        cmd.envs(vars.iter());
        for (k, v) in set {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
    }

    /// [`Env::apply`] for tokio's command.
    pub fn apply_async(&self, cmd: &mut tokio::process::Command) {
        self.apply(cmd.as_std_mut());
    }

    /// A short fingerprint of the variables (to tell two environments apart without keeping
    /// them side by side).
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        match &self.0 {
            None => 0u8.hash(&mut h),
            Some(vars) => vars.hash(&mut h),
        }
        h.finish()
    }

    /// Runs `f` with this environment as the thread's ambient one ([`Env::ambient`]).
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Env>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                let _ = AMBIENT.try_with(|a| *a.borrow_mut() = previous);
            }
        }
        let previous = AMBIENT.with(|a| a.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }

    /// The environment set by the innermost [`Env::scope`] on this thread, else this process's.
    pub fn ambient() -> Env {
        AMBIENT
            .try_with(|a| a.borrow().clone())
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_sets_the_ambient_environment_and_restores_it() {
        assert!(Env::ambient().is_process());
        let outer = Env::of(BTreeMap::from([("A".to_string(), "1".to_string())]));
        let inner = Env::of(BTreeMap::from([("A".to_string(), "2".to_string())]));
        outer.scope(|| {
            assert_eq!(Env::ambient().var("A").as_deref(), Some("1"));
            inner.scope(|| assert_eq!(Env::ambient().var("A").as_deref(), Some("2")));
            assert_eq!(Env::ambient().var("A").as_deref(), Some("1"));
        });
        assert!(Env::ambient().is_process());
        assert_ne!(outer.fingerprint(), inner.fingerprint());
        assert_eq!(format!("{outer:?}"), "Env(1 variables)");
    }

    #[test]
    fn a_child_gets_exactly_the_variables() {
        let env = Env::of(BTreeMap::from([("ONLY_THIS".to_string(), "yes".to_string())]));
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", "echo ${ONLY_THIS}-${HOME:-none}"]);
        env.apply(&mut cmd);
        let out = cmd.output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "yes-none");
    }
}
