//! Is a sandbox available here? Finding `bwrap` is not enough (containers and some kernels
//! refuse namespaces), so the exact flag set huddle uses is run once with `true`, and the
//! answer is kept for the life of the process. Where the plain set fails, the known fallbacks
//! are tried: a user namespace first (root without `CAP_SYS_ADMIN`), the host's `/proc` bound
//! read-only (where a fresh one cannot be mounted; weaker, and said so).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::argv::{Flavor, bwrap_args};
use super::profile::Profile;
use super::settings::{Network, SandboxMode};
use crate::env::Env;
use crate::process::find_program_in;

/// The environment variable naming the `bwrap` program (when config.yaml names none).
pub const BWRAP_ENV: &str = "HUDDLE_BWRAP";
/// Longest wait for the probe (a healthy one takes milliseconds).
const PROBE_LIMIT: Duration = Duration::from_secs(10);

/// What [`Availability::describe`] adds for a sandbox that only works with the host's `/proc`.
pub const HOST_PROC_WORDS: &str = ", only with the host's /proc (weak: a process reaches the host's files through /proc/<pid>/root); not used unless sandbox.allow_host_proc: true";

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    Usable {
        program: PathBuf,
        flavor: Flavor,
        /// `bubblewrap 0.8.0`.
        version: String,
    },
    Unusable {
        /// The program tried, when one was found.
        program: Option<PathBuf>,
        /// Why, with bwrap's own words when it ran.
        reason: String,
    },
}

impl Availability {
    pub fn is_usable(&self) -> bool {
        matches!(self, Availability::Usable { .. })
    }

    /// What this availability comes to when a sandbox that binds the host's `/proc` is
    /// accepted only if `allow_host_proc` (fail closed: otherwise it is unavailable, said why).
    pub fn accepting_host_proc(self, allow_host_proc: bool) -> Availability {
        match self {
            Availability::Usable { program, flavor, .. } if flavor.host_proc && !allow_host_proc => {
                Availability::Unusable {
                    reason: format!(
                        "{} works here only with the host's /proc, through which a process reaches the host's files (/proc/<pid>/root); set sandbox.allow_host_proc: true in config.yaml to accept that weaker sandbox",
                        program.display()
                    ),
                    program: Some(program),
                }
            }
            other => other,
        }
    }

    /// One line for people: `bubblewrap 0.8.0 (/usr/bin/bwrap)`, or why not.
    pub fn describe(&self) -> String {
        match self {
            Availability::Usable {
                program,
                flavor,
                version,
            } => {
                let mut s = format!("{version} ({})", program.display());
                if flavor.unshare_user {
                    s.push_str(", through a user namespace");
                }
                if flavor.host_proc {
                    s.push_str(HOST_PROC_WORDS);
                }
                s
            }
            Availability::Unusable { reason, .. } => reason.clone(),
        }
    }
}

/// The `bwrap` to use: `configured` (a `sandbox.bwrap:`), else `HUDDLE_BWRAP`, else `bwrap` on
/// `PATH`, in this process's environment.
pub fn bwrap_program(configured: Option<&Path>) -> Result<PathBuf, String> {
    bwrap_program_in(configured, &Env::process())
}

/// [`bwrap_program`] in `env`: the environment of the front end whose run it is (a host
/// serves front ends started with other variables: its own `HUDDLE_BWRAP` and `PATH` decide
/// nothing for them).
pub fn bwrap_program_in(configured: Option<&Path>, env: &Env) -> Result<PathBuf, String> {
    let named = configured
        .map(Path::to_path_buf)
        .or_else(|| env.var_os(BWRAP_ENV).filter(|v| !v.is_empty()).map(PathBuf::from));
    let path = env.var_os("PATH");
    match named {
        Some(p) => {
            let found = if p.components().count() > 1 {
                p.exists().then(|| p.clone())
            } else {
                find_program_in(&p.to_string_lossy(), path.as_deref())
            };
            found.ok_or_else(|| format!("bwrap not found at {}", p.display()))
        }
        None => find_program_in("bwrap", path.as_deref()).ok_or_else(|| {
            "bwrap (bubblewrap) is not installed; on Debian or Ubuntu: apt-get install bubblewrap".into()
        }),
    }
}

static CACHE: Mutex<Vec<(PathBuf, Availability)>> = Mutex::new(Vec::new());

/// Whether the sandbox works with `configured` (or the default) `bwrap`; probed once per
/// program, then remembered. Blocks for the probe the first time (milliseconds).
pub fn availability(configured: Option<&Path>) -> Availability {
    availability_in(configured, &Env::process())
}

/// [`availability`] with the program found in `env` ([`bwrap_program_in`]).
pub fn availability_in(configured: Option<&Path>, env: &Env) -> Availability {
    let program = match bwrap_program_in(configured, env) {
        Ok(p) => p,
        Err(reason) => {
            return Availability::Unusable {
                program: None,
                reason,
            };
        }
    };
    if let Some(known) = cached(&program) {
        return known;
    }
    let found = probe(&program);
    if !found.is_usable() {
        tracing::warn!(program = %program.display(), "the sandbox is not usable: {}", found.describe());
    }
    CACHE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((program, found.clone()));
    found
}

/// As [`availability`], off the async runtime's threads the first time.
pub async fn availability_async(configured: Option<&Path>) -> Availability {
    availability_async_in(configured, &Env::process()).await
}

/// [`availability_async`] with the program found in `env` ([`bwrap_program_in`]).
pub async fn availability_async_in(configured: Option<&Path>, env: &Env) -> Availability {
    if let Ok(program) = bwrap_program_in(configured, env)
        && let Some(known) = cached(&program)
    {
        return known;
    }
    let configured = configured.map(Path::to_path_buf);
    let env = env.clone();
    tokio::task::spawn_blocking(move || availability_in(configured.as_deref(), &env))
        .await
        .unwrap_or_else(|e| Availability::Unusable {
            program: None,
            reason: format!("the sandbox probe failed: {e}"),
        })
}

/// What the probe found for `configured` (or the default) bwrap, if it ran already; never
/// probes (a missing program is known at once).
pub fn known(configured: Option<&Path>) -> Option<Availability> {
    match bwrap_program(configured) {
        Ok(program) => cached(&program),
        Err(reason) => Some(Availability::Unusable {
            program: None,
            reason,
        }),
    }
}

fn cached(program: &Path) -> Option<Availability> {
    CACHE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .find(|(p, _)| p == program)
        .map(|(_, a)| a.clone())
}

/// Runs the probe (uncached): the plain flag set, then the fallbacks.
pub fn probe(program: &Path) -> Availability {
    let version = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "bwrap".to_string());
    let mut first_failure: Option<String> = None;
    for flavor in [
        Flavor::default(),
        Flavor {
            unshare_user: true,
            host_proc: false,
        },
        Flavor {
            unshare_user: false,
            host_proc: true,
        },
        Flavor {
            unshare_user: true,
            host_proc: true,
        },
    ] {
        match run_probe(program, flavor) {
            Ok(()) => {
                return Availability::Usable {
                    program: program.to_path_buf(),
                    flavor,
                    version,
                };
            }
            Err(why) => {
                first_failure.get_or_insert(why);
            }
        }
    }
    Availability::Unusable {
        program: Some(program.to_path_buf()),
        reason: format!(
            "{} cannot make a sandbox here: {}",
            program.display(),
            first_failure.unwrap_or_default()
        ),
    }
}

/// The flag set a real launch uses (network off: the strictest), running `true`.
fn run_probe(program: &Path, flavor: Flavor) -> Result<(), String> {
    let profile = Profile {
        mode: SandboxMode::ReadOnly,
        network: Network::Off,
        workdir: PathBuf::from("/"),
        hidden_dirs: Vec::new(),
        hidden_files: Vec::new(),
        reveal: Vec::new(),
        writable: Vec::new(),
        protected: Vec::new(),
        ensure_dirs: Vec::new(),
        ensure_files: Vec::new(),
        git_env: false,
        workdir_read_only: None,
    };
    let mut child = Command::new(program)
        .args(bwrap_args(&profile, flavor, "true", &[]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let deadline = Instant::now() + PROBE_LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it did not finish within {}s", PROBE_LIMIT.as_secs()));
            }
            Err(e) => return Err(format!("waiting for it failed: {e}")),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    let stderr = last_lines(&stderr, 3);
    Err(if stderr.is_empty() {
        format!("it exited with {status}")
    } else {
        stderr
    })
}

/// The last `n` non-empty lines, joined with `; `.
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::find_program;

    #[test]
    fn a_missing_program_is_unusable_and_says_where_it_looked() {
        let a = availability(Some(Path::new("/nonexistent/bwrap")));
        assert!(!a.is_usable());
        assert_eq!(a.describe(), "bwrap not found at /nonexistent/bwrap");
    }

    /// Review 26-2 finding 20: a host serving a front end looks for bwrap with the front end's
    /// `HUDDLE_BWRAP` and `PATH`, never its own (a host started with `HUDDLE_BWRAP` pointing
    /// nowhere ran another front end's agents unconfined).
    #[test]
    fn bwrap_is_found_in_the_front_ends_environment_not_this_process() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("bwrap");
        std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let env = |vars: &[(&str, &str)]| {
            Env::of(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
        };
        let on_path = env(&[("PATH", &dir.path().display().to_string())]);
        assert_eq!(bwrap_program_in(None, &on_path), Ok(fake.clone()));
        let nowhere = env(&[
            ("PATH", "/nonexistent-dir"),
            ("HUDDLE_BWRAP", "/nonexistent/bwrap"),
        ]);
        assert_eq!(
            bwrap_program_in(None, &nowhere),
            Err("bwrap not found at /nonexistent/bwrap".to_string())
        );
        let no_path = env(&[]);
        assert!(
            bwrap_program_in(None, &no_path).is_err_and(|e| e.contains("not installed")),
            "{:?}",
            bwrap_program_in(None, &no_path)
        );
        // config.yaml's `bwrap:` still comes first.
        assert_eq!(bwrap_program_in(Some(&fake), &nowhere), Ok(fake.clone()));
    }

    #[test]
    fn a_program_that_is_not_bwrap_is_unusable_with_its_words() {
        // `false` takes any arguments and fails: a broken sandbox.
        let Some(f) = find_program("false") else { return };
        let a = probe(&f);
        assert!(!a.is_usable());
        assert!(
            a.describe().contains("cannot make a sandbox here"),
            "{}",
            a.describe()
        );
    }
}
