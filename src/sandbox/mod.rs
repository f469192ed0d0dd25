//! The OS sandbox for every process huddle starts on behalf of a session: `command` providers
//! (CLI agents), stdio MCP servers and hooks. On Linux it is bubblewrap (`bwrap`): the file
//! system read-only, a private `/tmp`, credentials and huddle's data directory hidden, the
//! working directory (and what git needs for it) writable in `workspace-write`, the network
//! optionally cut off. See docs/sandbox-and-hooks.md.
//!
//! - [`settings`]: the `sandbox:` blocks and how levels combine into a [`Policy`];
//! - [`profile`]: the paths of one process (working directory, git layout, hidden paths);
//! - [`argv`]: a profile as `bwrap` arguments (pure);
//! - [`probe`]: whether bwrap works here (run once, remembered).
//!
//! [`Sandbox::command`] is the one way a caller gets a confined `tokio::process::Command`: it
//! confines, runs unconfined (mode off, or no sandbox available and none required; said in
//! [`Sandbox::status`]) or refuses (a required sandbox is unavailable: fail closed).

pub mod argv;
pub mod probe;
pub mod profile;
pub mod settings;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use argv::Flavor;
pub use probe::Availability;
pub use profile::{Host, Profile, needed_paths};
pub use settings::{Network, Policy, SandboxMode, SandboxSettings};

/// Why a process was not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxError {
    /// The policy requires a sandbox and none works here.
    #[error("the sandbox is required ({required}) but not available: {reason}")]
    Unavailable { required: String, reason: String },
    /// A path the sandbox binds could not be made ready.
    #[error("the sandbox could not be prepared: {0}")]
    Prepare(String),
    /// The program is not there (looked up on PATH as the process would).
    #[error("cannot run `{0}`: it is not installed or not on PATH")]
    NoProgram(String),
}

/// What a launch under a policy comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Confined by bwrap.
    Confined { summary: String },
    /// Not confined: the mode is off, or no sandbox works here and none is required (`why`).
    Unconfined { why: String },
    /// Not started: a sandbox is required and none works here.
    Refused(SandboxError),
}

impl Status {
    /// `sandbox: workspace-write, network on` / `sandbox: off` / `sandbox: none (bwrap not
    /// found)` / `sandbox: REQUIRED but unavailable: …`.
    pub fn label(&self) -> String {
        match self {
            Status::Confined { summary } => format!("sandbox: {summary}"),
            Status::Unconfined { why } => format!("sandbox: {why}"),
            Status::Refused(e) => format!("sandbox: REFUSED, {e}"),
        }
    }

    /// A short form for a header line: `workspace-write`, `off`, `none`, `unavailable`.
    pub fn short(&self) -> &'static str {
        match self {
            Status::Confined { .. } => "on",
            Status::Unconfined { why } if why == "off" => "off",
            Status::Unconfined { .. } => "none",
            Status::Refused(_) => "unavailable",
        }
    }
}

/// What every process's sandbox starts from: config.yaml's `sandbox:`, the command line's mode
/// (`huddle run --sandbox`, over every level) and the machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    pub config: SandboxSettings,
    pub cli: Option<SandboxMode>,
    pub host: Arc<Host>,
}

impl Baseline {
    /// The sandbox of a process whose more specific levels (team, member, MCP server) are
    /// `levels`, lowest first; `cli` replaces the command line's mode when given (a run
    /// handed over with its own `--sandbox`).
    pub fn sandbox(&self, levels: &[(&str, &SandboxSettings)], cli: Option<SandboxMode>) -> Sandbox {
        let mut all: Vec<(&str, &SandboxSettings)> = vec![("config.yaml", &self.config)];
        all.extend_from_slice(levels);
        Sandbox::new(
            Policy::resolve(&all, cli.or(self.cli), self.host.home.as_deref()),
            self.host.clone(),
        )
    }
}

/// The sandbox of one session (or MCP server, or hook): its policy and the machine's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub policy: Policy,
    pub host: Arc<Host>,
}

impl Default for Sandbox {
    /// The default policy (workspace-write where available) on a machine with no known home or
    /// data directory.
    fn default() -> Self {
        Sandbox {
            policy: Policy::default(),
            host: Arc::new(Host::default()),
        }
    }
}

impl Sandbox {
    pub fn new(policy: Policy, host: Arc<Host>) -> Sandbox {
        Sandbox { policy, host }
    }

    /// No sandbox at all.
    pub fn off() -> Sandbox {
        Sandbox::new(
            Policy::resolve(&[], Some(SandboxMode::Off), None),
            Arc::new(Host::default()),
        )
    }

    /// What a launch would come to, from availability already known (`availability`).
    pub fn status_with(&self, availability: &Availability) -> Status {
        if self.policy.is_off() {
            return Status::Unconfined { why: "off".into() };
        }
        match availability {
            Availability::Usable { .. } => Status::Confined {
                summary: self.policy.summary(),
            },
            Availability::Unusable { reason, .. } if self.policy.required => {
                Status::Refused(SandboxError::Unavailable {
                    required: self.required_by(),
                    reason: reason.clone(),
                })
            }
            Availability::Unusable { reason, .. } => Status::Unconfined {
                why: format!("none ({reason})"),
            },
        }
    }

    /// What a launch would come to (probes bwrap the first time; blocks for milliseconds).
    pub fn status(&self) -> Status {
        if self.policy.is_off() {
            return Status::Unconfined { why: "off".into() };
        }
        self.status_with(&probe::availability(self.policy.bwrap.as_deref()))
    }

    /// Who requires the sandbox, for the refusal: `mode workspace-write from team`.
    fn required_by(&self) -> String {
        let what = if self.policy.network == Network::Off {
            format!("{}, network off", self.policy.mode)
        } else {
            self.policy.mode.to_string()
        };
        match &self.policy.decided_by {
            Some(level) => format!("{what}, set in {level}"),
            None => what,
        }
    }

    /// A command running `program args` in `workdir` (huddle's own directory when `None`),
    /// confined by this sandbox. `needs` are files the program must read though they may be
    /// hidden (its own path, the scripts its configured arguments name: see
    /// [`needed_paths`]). Errs when a required sandbox is not available or cannot be
    /// prepared; the caller reports it and does not start the process.
    pub async fn command(
        &self,
        program: &str,
        args: &[String],
        workdir: Option<&Path>,
        needs: &[PathBuf],
    ) -> Result<tokio::process::Command, SandboxError> {
        let plain = || {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args);
            if let Some(dir) = workdir {
                cmd.current_dir(dir);
            }
            cmd
        };
        if self.policy.is_off() {
            return Ok(plain());
        }
        let availability = probe::availability_async(self.policy.bwrap.as_deref()).await;
        let Availability::Usable {
            program: bwrap,
            flavor,
            ..
        } = &availability
        else {
            return match self.status_with(&availability) {
                Status::Refused(e) => Err(e),
                _ => Ok(plain()),
            };
        };
        // Inside, a missing program is only bwrap's exit status: say it as a spawn would.
        if profile::find_program(program).is_none() {
            return Err(SandboxError::NoProgram(program.to_string()));
        }
        let here;
        let workdir = match workdir {
            Some(d) => d,
            None => {
                here = std::env::current_dir().map_err(|e| SandboxError::Prepare(e.to_string()))?;
                &here
            }
        };
        let profile = Profile::new(&self.policy, &self.host, workdir, needs);
        profile
            .prepare()
            .map_err(|e| SandboxError::Prepare(e.to_string()))?;
        let mut cmd = tokio::process::Command::new(bwrap);
        cmd.args(argv::bwrap_args(&profile, *flavor, program, args));
        // bwrap changes into it inside; outside it is where bwrap starts.
        cmd.current_dir(workdir);
        Ok(cmd)
    }
}

/// Words a sandboxed process's errors contain when the sandbox stopped it.
const DENIAL_MARKERS: &[&str] = &[
    "Read-only file system",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "bwrap: ",
];

/// True for an error that says a required sandbox was missing (a process was not started).
pub fn is_refusal(message: &str) -> bool {
    message.contains("the sandbox is required (")
}

/// The first line of `stderr` that says the sandbox stopped something (a write to a
/// read-only place, the network), for the event and the transcript.
pub fn denial_in(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .map(str::trim)
        .find(|l| DENIAL_MARKERS.iter().any(|m| l.contains(m)))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unusable() -> Availability {
        Availability::Unusable {
            program: None,
            reason: "bwrap not found at /nope".into(),
        }
    }

    #[test]
    fn a_required_sandbox_refuses_and_an_unset_one_says_it_is_missing() {
        let required = Sandbox::new(
            Policy::resolve(
                &[("config.yaml", &SandboxSettings::mode(SandboxMode::WorkspaceWrite))],
                None,
                None,
            ),
            Arc::default(),
        );
        let status = required.status_with(&unusable());
        assert_eq!(
            status.label(),
            "sandbox: REFUSED, the sandbox is required (workspace-write, set in config.yaml) but not available: bwrap not found at /nope"
        );
        let unset = Sandbox::default();
        assert_eq!(
            unset.status_with(&unusable()).label(),
            "sandbox: none (bwrap not found at /nope)"
        );
        assert_eq!(Sandbox::off().status_with(&unusable()).short(), "off");
        let usable = Availability::Usable {
            program: "/usr/bin/bwrap".into(),
            flavor: Flavor::default(),
            version: "bubblewrap 0.8.0".into(),
        };
        assert_eq!(
            unset.status_with(&usable).label(),
            "sandbox: workspace-write, network on"
        );
    }

    #[tokio::test]
    async fn a_required_sandbox_that_is_missing_starts_nothing() {
        let mut policy = Policy::resolve(
            &[("team", &SandboxSettings::mode(SandboxMode::ReadOnly))],
            None,
            None,
        );
        policy.bwrap = Some("/nonexistent/bwrap".into());
        let sandbox = Sandbox::new(policy, Arc::default());
        let err = sandbox.command("true", &[], None, &[]).await.unwrap_err();
        assert!(matches!(err, SandboxError::Unavailable { .. }), "{err}");
        assert!(err.to_string().contains("read-only, set in team"), "{err}");
        // Not required: it runs, unconfined.
        let mut loose = Policy::default();
        loose.bwrap = Some("/nonexistent/bwrap".into());
        let cmd = Sandbox::new(loose, Arc::default())
            .command("true", &[], None, &[])
            .await
            .unwrap();
        assert_eq!(cmd.as_std().get_program(), "true");
    }

    #[test]
    fn the_baseline_puts_config_first_and_the_command_line_last() {
        let base = Baseline {
            config: SandboxSettings::mode(SandboxMode::ReadOnly),
            cli: Some(SandboxMode::WorkspaceWrite),
            host: Arc::default(),
        };
        let off = SandboxSettings::mode(SandboxMode::Off);
        let s = base.sandbox(&[("team", &off)], None);
        assert_eq!(
            (s.policy.mode, s.policy.decided_by.as_deref()),
            (SandboxMode::WorkspaceWrite, Some("--sandbox"))
        );
        let s = base.sandbox(&[("team", &off)], Some(SandboxMode::Off));
        assert!(s.policy.is_off());
        let s = Baseline::default().sandbox(&[("team", &off)], None);
        assert!(s.policy.is_off());
    }

    #[test]
    fn denials_are_found_in_stderr() {
        assert_eq!(
            denial_in("ok\ntouch: cannot touch '/home/u/x': Read-only file system\n").as_deref(),
            Some("touch: cannot touch '/home/u/x': Read-only file system")
        );
        assert_eq!(denial_in("fatal: no credits"), None);
    }
}
