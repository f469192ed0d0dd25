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

use crate::env::Env;

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
    /// The working directory lies in a directory the sandbox hides (huddle's data directory
    /// through a symlink, an MCP server's `cwd:`): working there would show it again.
    #[error("not started in {dir}: {why}")]
    HiddenWorkdir { dir: String, why: String },
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
        let resolve = |all: &[(&str, &SandboxSettings)]| {
            Sandbox::new(
                Policy::resolve(all, cli.or(self.cli), self.host.home.as_deref()),
                self.host.clone(),
            )
        };
        // A session's (team, member) on the stack: one is made for every turn.
        let mut few = [("config.yaml", &self.config); 4];
        match few.get_mut(1..=levels.len()) {
            Some(rest) => {
                rest.copy_from_slice(levels);
                resolve(&few[..=levels.len()])
            }
            None => resolve(&[&[("config.yaml", &self.config)], levels].concat()),
        }
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
        let availability = availability
            .clone()
            .accepting_host_proc(self.policy.allow_host_proc);
        match &availability {
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
        self.status_with(&probe::availability_in(
            self.policy.bwrap.as_deref(),
            &self.host.env,
        ))
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
    /// confined by this sandbox, in this process's environment. `needs` are files the program
    /// must read though they may be hidden (its own path, the scripts its configured arguments
    /// name: see [`needed_paths`]). Errs when a required sandbox is not available or cannot be
    /// prepared; the caller reports it and does not start the process.
    pub async fn command(
        &self,
        program: &str,
        args: &[String],
        workdir: Option<&Path>,
        needs: &[PathBuf],
    ) -> Result<tokio::process::Command, SandboxError> {
        self.command_in(&Env::process(), program, args, workdir, needs)
            .await
    }

    /// [`Sandbox::command`] in `env` (a front end's environment): unconfined, the process gets
    /// exactly its variables; confined, only those a sandboxed process gets ([`PASSED_ENV`],
    /// `allow_env`) taken from it. The caller adds its own afterwards (an MCP server's `env:`,
    /// a hook's variables) and never applies `env` over the command again.
    pub async fn command_in(
        &self,
        env: &Env,
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
            env.apply_async(&mut cmd);
            cmd
        };
        if self.policy.is_off() {
            return Ok(plain());
        }
        let availability = probe::availability_async_in(self.policy.bwrap.as_deref(), &self.host.env)
            .await
            .accepting_host_proc(self.policy.allow_host_proc);
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
        // Inside, a missing program is only bwrap's exit status: say it as a spawn would (on
        // the `PATH` it gets).
        if crate::process::find_program_in(program, env.var_os("PATH").as_deref()).is_none() {
            return Err(SandboxError::NoProgram(program.to_string()));
        }
        if let Some(d) = workdir
            && let Some(why) = self.host.hidden_workdir(d)
        {
            return Err(SandboxError::HiddenWorkdir {
                dir: d.display().to_string(),
                why,
            });
        }
        let here;
        let (workdir, profile) = match workdir {
            Some(d) => (d, Profile::new(&self.policy, &self.host, d, needs)),
            None => {
                here = std::env::current_dir()
                    .map_err(|e| SandboxError::Prepare(format!("cannot read huddle's own directory: {e}")))?;
                let profile = Profile::new_without_workdir(&self.policy, &self.host, &here, needs);
                (here.as_path(), profile)
            }
        };
        if let Some(why) = &profile.workdir_read_only {
            tracing::info!(program, dir = %workdir.display(), "the working directory is read-only in the sandbox: {why}");
        }
        profile.prepare().map_err(SandboxError::Prepare)?;
        let mut cmd = tokio::process::Command::new(bwrap);
        cmd.args(argv::bwrap_args(&profile, *flavor, program, args));
        // Only what the process needs of the environment (the caller adds its own: an MCP
        // server's `env:`, a hook's variables).
        cmd.env_clear();
        for (name, value) in env.vars_os() {
            if name
                .to_str()
                .is_some_and(|n| passes_env(n, &self.policy.allow_env))
            {
                cmd.env(name, value);
            }
        }
        // bwrap changes into it inside; outside it is where bwrap starts.
        cmd.current_dir(workdir);
        Ok(cmd)
    }
}

/// Variables a sandboxed process gets from huddle's environment (with those `LC_*`), besides
/// the policy's `allow_env`. Everything else stays out: API keys and tokens, and the sockets
/// that would reach outside the sandbox (`SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`).
pub const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "EDITOR",
    "VISUAL",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "NVM_DIR",
    "PYENV_ROOT",
    "VIRTUAL_ENV",
];

/// True when `name` may be passed: in [`PASSED_ENV`], `LC_*`, or named by `allow` (a name, or
/// a prefix ending in `*`).
pub fn passes_env(name: &str, allow: &[String]) -> bool {
    PASSED_ENV.contains(&name)
        || name.starts_with("LC_")
        || allow.iter().any(|a| match a.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => a == name,
        })
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

    #[test]
    fn a_baseline_resolves_its_levels_over_config_yaml_however_many() {
        let setting = |path: &str| SandboxSettings {
            allow_write: vec![path.to_string()],
            ..SandboxSettings::default()
        };
        let baseline = Baseline {
            config: setting("/config"),
            cli: None,
            host: Arc::new(Host::default()),
        };
        let levels: Vec<SandboxSettings> = (0..6).map(|k| setting(&format!("/level-{k}"))).collect();
        for count in 0..=levels.len() {
            let named: Vec<(&str, &SandboxSettings)> = levels[..count].iter().map(|l| ("level", l)).collect();
            let mut all = vec![("config.yaml", &baseline.config)];
            all.extend_from_slice(&named);
            let expected = Policy::resolve(&all, None, None);
            assert_eq!(baseline.sandbox(&named, None).policy, expected, "{count} levels");
        }
    }

    fn unusable() -> Availability {
        Availability::Unusable {
            program: None,
            reason: "bwrap not found at /nope".into(),
        }
    }

    #[test]
    fn keys_and_sockets_that_reach_outside_are_not_passed() {
        for kept_out in [
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_RUNTIME_DIR",
            "GPG_AGENT_INFO",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
        ] {
            assert!(!passes_env(kept_out, &[]), "{kept_out} passed");
        }
        for passed in ["PATH", "HOME", "LC_ALL", "LANG"] {
            assert!(passes_env(passed, &[]), "{passed} kept out");
        }
        let allow = ["GITHUB_*".to_string(), "MY_KEY".to_string()];
        assert!(passes_env("GITHUB_TOKEN", &allow) && passes_env("MY_KEY", &allow));
        assert!(!passes_env("MY_KEY_2", &allow), "a name is a whole name");
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

    /// Review of issue 26, finding 4: a bwrap that only works with the host's /proc bound in
    /// lets a process read and write the host's files through /proc/<pid>/root; it counts as
    /// unavailable (fail closed) unless config.yaml accepts it.
    #[test]
    fn a_sandbox_with_the_hosts_proc_counts_as_unavailable_unless_accepted() {
        let weak = Availability::Usable {
            program: "/usr/bin/bwrap".into(),
            flavor: Flavor {
                unshare_user: false,
                host_proc: true,
            },
            version: "bubblewrap 0.8.0".into(),
        };
        assert!(
            weak.describe()
                .contains("not used unless sandbox.allow_host_proc: true")
        );
        let required = Sandbox::new(
            Policy::resolve(
                &[("config.yaml", &SandboxSettings::mode(SandboxMode::WorkspaceWrite))],
                None,
                None,
            ),
            Arc::default(),
        );
        let Status::Refused(e) = required.status_with(&weak) else {
            panic!("a required sandbox with the host's /proc must refuse");
        };
        assert!(e.to_string().contains("set sandbox.allow_host_proc: true"), "{e}");
        let Status::Unconfined { why } = Sandbox::default().status_with(&weak) else {
            panic!("an unset sandbox with the host's /proc is none");
        };
        assert!(why.contains("only with the host's /proc"), "{why}");
        let accepted: SandboxSettings = serde_yaml::from_str("allow_host_proc: true").unwrap();
        let loose = Sandbox::new(
            Policy::resolve(&[("config.yaml", &accepted)], None, None),
            Arc::default(),
        );
        assert!(matches!(loose.status_with(&weak), Status::Confined { .. }));
        // A repository's team cannot accept it.
        let mut warnings = Vec::new();
        let from_repo = accepted.from_repository(&mut warnings, "sandbox");
        assert!(from_repo.allow_host_proc.is_none());
        assert!(warnings[0].contains("allow_host_proc"), "{warnings:?}");
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
