//! What a `sandbox:` block says (config.yaml, a preset's team or member, an MCP server, a hook)
//! and how the levels combine into one [`Policy`] for one process.
//!
//! Levels are applied lowest first: config.yaml, then the team, then the member (or the MCP
//! server, or the hook), then `huddle run --sandbox`. A level's `mode`, `network` and `bwrap`
//! replace the lower ones'; its `allow_write` and `allow_read` are added to theirs. A level read
//! from a repository (`.squad/huddle.yaml`) only tightens: it may ask for a stricter mode or
//! network off, never the opposite, and its path lists are refused.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How much a sandboxed process may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox: the process runs as the user, like any program.
    Off,
    /// Everything readable except the hidden paths; nothing writable but a private /tmp.
    #[serde(alias = "read_only", alias = "readonly")]
    ReadOnly,
    /// As read-only, plus the working directory (and what git needs for it) writable.
    #[serde(alias = "workspace_write")]
    WorkspaceWrite,
}

impl SandboxMode {
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::Off,
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }

    /// How strict: off < workspace-write < read-only.
    fn strictness(self) -> u8 {
        match self {
            SandboxMode::Off => 0,
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::ReadOnly => 2,
        }
    }

    /// Reads the command line's word (`off`, `read-only`, `workspace-write`).
    pub fn parse(word: &str) -> Result<SandboxMode, String> {
        let word = word.trim().to_ascii_lowercase().replace('_', "-");
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.as_str() == word || (word == "readonly" && *m == SandboxMode::ReadOnly))
            .ok_or_else(|| format!("`{word}` is not a sandbox mode; use off, read-only or workspace-write"))
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a sandboxed process reaches the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Network {
    #[default]
    On,
    /// Its own network namespace: only its own loopback, nothing of the host's.
    Off,
}

impl Network {
    pub fn as_str(self) -> &'static str {
        match self {
            Network::On => "on",
            Network::Off => "off",
        }
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Network {
    /// `on`/`off`, and `true`/`false` (YAML 1.1 readers turn `on` into a boolean).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Network, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Word {
            Bool(bool),
            Text(String),
        }
        match Word::deserialize(d)? {
            Word::Bool(true) => Ok(Network::On),
            Word::Bool(false) => Ok(Network::Off),
            Word::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" => Ok(Network::On),
                "off" | "false" | "no" => Ok(Network::Off),
                other => Err(serde::de::Error::custom(format!(
                    "`{other}` is not a network setting; use on or off"
                ))),
            },
        }
    }
}

/// One level's `sandbox:` block. Every field is optional: an absent one leaves the lower
/// level's value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// `off`, `read-only` or `workspace-write`. Unset everywhere: workspace-write when a
    /// sandbox is available, else none (shown, never silent). Set to read-only or
    /// workspace-write: required (a process that cannot be confined does not start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// `on` (default) or `off`. Off requires a sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// Extra writable paths (absolute or `~/…`); they may lie in a hidden directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_write: Vec<String>,
    /// Extra readable paths (absolute or `~/…`): for what is hidden (`~/.ssh/known_hosts`) or
    /// to make a part of a writable directory read-only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_read: Vec<String>,
    /// The `bwrap` program (default: `HUDDLE_BWRAP`, else `bwrap` on PATH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwrap: Option<PathBuf>,
    /// Environment variables passed to the sandboxed process from huddle's environment besides
    /// the usual ones (`PATH`, `HOME`, `LANG`, …): names, or a prefix ending in `*`
    /// (`NPM_CONFIG_*`). Everything else (API keys, tokens, sockets) is not passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_env: Vec<String>,
    /// Accept a sandbox that can only bind the host's `/proc` (where a fresh one cannot be
    /// mounted). Weak: a process reaches the host's files through `/proc/<pid>/root`, around
    /// every hidden or read-only path. Default false: such a sandbox counts as unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_host_proc: Option<bool>,
    /// Set on a level read from a repository: it may only make the sandbox stricter.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only_tighten: bool,
}

impl SandboxSettings {
    pub fn is_empty(&self) -> bool {
        *self == SandboxSettings::default()
    }

    /// The settings of a mode alone.
    pub fn mode(mode: SandboxMode) -> SandboxSettings {
        SandboxSettings {
            mode: Some(mode),
            ..SandboxSettings::default()
        }
    }

    /// Checks the values; the message names the key under `key` (`sandbox`,
    /// `mcp_servers.git.sandbox`).
    pub fn validate(&self, key: &str) -> Result<(), String> {
        if self.mode == Some(SandboxMode::Off) && self.network == Some(Network::Off) {
            return Err(format!(
                "{key}.network: off needs a sandbox, but {key}.mode is off; use mode: read-only or workspace-write"
            ));
        }
        for (list, paths) in [
            ("allow_write", &self.allow_write),
            ("allow_read", &self.allow_read),
        ] {
            for p in paths {
                let p = p.trim();
                if !(p.starts_with('/') || p == "~" || p.starts_with("~/")) {
                    return Err(format!(
                        "{key}.{list}: `{p}` must be an absolute path or start with ~/"
                    ));
                }
                if Path::new(p)
                    .components()
                    .any(|c| c == std::path::Component::ParentDir)
                {
                    return Err(format!("{key}.{list}: `{p}` must not contain `..`"));
                }
            }
        }
        for name in &self.allow_env {
            let bare = name.trim().strip_suffix('*').unwrap_or(name.trim());
            if bare.is_empty() || bare.contains(['=', '*']) || bare.contains(char::is_whitespace) {
                return Err(format!(
                    "{key}.allow_env: `{name}` is not a variable name (or a prefix ending in *)"
                ));
            }
        }
        if self.bwrap.as_ref().is_some_and(|b| b.as_os_str().is_empty()) {
            return Err(format!(
                "{key}.bwrap: is empty; name the bwrap program or leave it out"
            ));
        }
        Ok(())
    }

    /// These settings as read from a repository: stricter-only, without path lists or a
    /// program of the repository's choosing. What had to be dropped is said in `warnings`.
    pub fn from_repository(mut self, warnings: &mut Vec<String>, key: &str) -> SandboxSettings {
        if self.mode == Some(SandboxMode::Off) {
            warnings.push(format!(
                "{key}.mode: off ignored: a repository's team can only make the sandbox stricter"
            ));
            self.mode = None;
        }
        if self.network == Some(Network::On) {
            self.network = None;
        }
        let dropped: Vec<&str> = [
            ("allow_write", !self.allow_write.is_empty()),
            ("allow_read", !self.allow_read.is_empty()),
            ("bwrap", self.bwrap.is_some()),
            ("allow_host_proc", self.allow_host_proc.is_some()),
            ("allow_env", !self.allow_env.is_empty()),
        ]
        .into_iter()
        .filter_map(|(k, set)| set.then_some(k))
        .collect();
        if !dropped.is_empty() {
            warnings.push(format!(
                "{key}: {} ignored: a repository's team can only make the sandbox stricter",
                dropped.join(", ")
            ));
        }
        SandboxSettings {
            mode: self.mode,
            network: self.network,
            only_tighten: true,
            ..SandboxSettings::default()
        }
    }
}

/// The settings for one process, all levels combined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// What is asked for (an unset mode means workspace-write where available).
    pub mode: SandboxMode,
    /// A level set the mode (not off) or network off: the process never runs unconfined.
    pub required: bool,
    pub network: Network,
    /// Expanded (`~/` → the home directory).
    pub allow_write: Vec<PathBuf>,
    pub allow_read: Vec<PathBuf>,
    /// Set by huddle, not by a `sandbox:` block: paths that stay read-only inside the writable
    /// ones, made (empty) when missing so that they cannot be created either (a ready-made
    /// agent's settings and hooks inside its writable state). A path ending in `/` is a
    /// directory.
    pub keep_read_only: Vec<PathBuf>,
    /// The `bwrap` program named by a level, if any.
    pub bwrap: Option<PathBuf>,
    /// A sandbox that binds the host's `/proc` is accepted (`allow_host_proc: true`).
    pub allow_host_proc: bool,
    /// Variables passed from huddle's environment besides [`super::PASSED_ENV`]: names, or
    /// prefixes ending in `*` (`allow_env:` of every level, a provider's own key).
    pub allow_env: Vec<String>,
    /// Which level decided the mode, for messages (`config.yaml`, `team`, `--sandbox`, …).
    pub decided_by: Option<String>,
    /// The mode a level set (`None`: unset, workspace-write where available).
    asked: Option<SandboxMode>,
}

impl Default for Policy {
    fn default() -> Self {
        let mut p = Policy {
            mode: SandboxMode::WorkspaceWrite,
            required: false,
            network: Network::On,
            allow_write: Vec::new(),
            allow_read: Vec::new(),
            keep_read_only: Vec::new(),
            bwrap: None,
            allow_host_proc: false,
            allow_env: Vec::new(),
            decided_by: None,
            asked: None,
        };
        p.settle();
        p
    }
}

impl Policy {
    /// Combines `levels` (lowest first, each with the name it is reported by) and the command
    /// line's mode, which wins over every level. `home` expands `~/`.
    pub fn resolve(
        levels: &[(&str, &SandboxSettings)],
        cli: Option<SandboxMode>,
        home: Option<&Path>,
    ) -> Policy {
        let policy = levels
            .iter()
            .fold(Policy::default(), |p, (name, level)| p.with(name, level, home));
        match cli {
            Some(m) => policy.with("--sandbox", &SandboxSettings::mode(m), home),
            None => policy,
        }
    }

    /// This policy with one more level on top (`name` says which, in messages).
    pub fn with(mut self, name: &str, level: &SandboxSettings, home: Option<&Path>) -> Policy {
        if level.only_tighten {
            if let Some(asked) = level.mode.filter(|m| *m != SandboxMode::Off) {
                // Unset counts as workspace-write; asking for it makes it required.
                let current = self.asked.unwrap_or(SandboxMode::WorkspaceWrite);
                let stricter = if asked.strictness() >= current.strictness() {
                    asked
                } else {
                    current
                };
                if self.asked != Some(stricter) {
                    self.asked = Some(stricter);
                    self.decided_by = Some(name.to_string());
                }
            }
            if level.network == Some(Network::Off) {
                self.network = Network::Off;
            }
        } else {
            if let Some(m) = level.mode {
                self.asked = Some(m);
                self.decided_by = Some(name.to_string());
                // `off` is no sandbox: a lower level's `network: off` (which needs one) does not
                // turn it into a stricter one (review 26-2 finding 2); the level's own wins.
                if m == SandboxMode::Off {
                    self.network = Network::On;
                }
            }
            if let Some(n) = level.network {
                self.network = n;
            }
            if let Some(b) = &level.bwrap {
                self.bwrap = Some(b.clone());
            }
            if let Some(allow) = level.allow_host_proc {
                self.allow_host_proc = allow;
            }
            for name in &level.allow_env {
                let name = name.trim();
                if !name.is_empty() && !self.allow_env.iter().any(|n| n == name) {
                    self.allow_env.push(name.to_string());
                }
            }
            self.allow_write
                .extend(level.allow_write.iter().filter_map(|p| expand(p, home)));
            self.allow_read
                .extend(level.allow_read.iter().filter_map(|p| expand(p, home)));
            dedup(&mut self.allow_write);
            dedup(&mut self.allow_read);
        }
        self.settle();
        self
    }

    /// The effective mode and whether it is required, from what the levels asked.
    fn settle(&mut self) {
        self.required =
            matches!(self.asked, Some(m) if m != SandboxMode::Off) || self.network == Network::Off;
        self.mode = match self.asked {
            // Network off asks for a sandbox even where the mode says off.
            Some(SandboxMode::Off) if self.network == Network::Off => SandboxMode::ReadOnly,
            Some(m) => m,
            None => SandboxMode::WorkspaceWrite,
        };
    }

    /// True when no sandbox is wanted.
    pub fn is_off(&self) -> bool {
        self.mode == SandboxMode::Off
    }

    /// `workspace-write, network on`, for headers and messages.
    pub fn summary(&self) -> String {
        if self.is_off() {
            return "off".into();
        }
        let mut s = format!("{}, network {}", self.mode, self.network.as_str());
        if !self.allow_write.is_empty() {
            s.push_str(&format!(", +{} writable", self.allow_write.len()));
        }
        if !self.allow_read.is_empty() {
            s.push_str(&format!(", +{} readable", self.allow_read.len()));
        }
        s
    }
}

/// `~/x` → `<home>/x`; an absolute path as it is; anything else (or `~` without a home) is
/// dropped (validation refuses those before).
pub fn expand(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    let path = path.trim();
    if path == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return home.map(|h| h.join(rest));
    }
    path.starts_with('/').then(|| PathBuf::from(path))
}

/// As [`expand`], keeping a trailing `/` (a directory in [`Policy::keep_read_only`]).
pub fn expand_keeping_slash(path: &str, home: Option<&Path>) -> Option<PathBuf> {
    let expanded = expand(path, home)?;
    Some(if path.ends_with('/') {
        let mut s = expanded.into_os_string();
        if !s.to_string_lossy().ends_with('/') {
            s.push("/");
        }
        PathBuf::from(s)
    } else {
        expanded
    })
}

/// `paths` without repeats, in their first order.
pub(super) fn dedup(paths: &mut Vec<std::path::PathBuf>) {
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(p.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> SandboxSettings {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn modes_and_network_read_from_config_words() {
        let s = parse("mode: workspace-write\nnetwork: off\nallow_write: [~/.cache/x]\n");
        assert_eq!(s.mode, Some(SandboxMode::WorkspaceWrite));
        assert_eq!(s.network, Some(Network::Off));
        assert_eq!(parse("mode: read_only").mode, Some(SandboxMode::ReadOnly));
        assert_eq!(parse("network: false").network, Some(Network::Off));
        assert_eq!(parse("network: on").network, Some(Network::On));
        assert!(serde_yaml::from_str::<SandboxSettings>("mode: strict").is_err());
        assert!(serde_yaml::from_str::<SandboxSettings>("network: maybe").is_err());
        assert!(serde_yaml::from_str::<SandboxSettings>("writable: [/x]").is_err());
        assert_eq!(
            SandboxMode::parse("Workspace_Write"),
            Ok(SandboxMode::WorkspaceWrite)
        );
        assert!(SandboxMode::parse("all").is_err());
    }

    #[test]
    fn validation_names_the_key() {
        let err = parse("allow_write: [relative/dir]")
            .validate("sandbox")
            .unwrap_err();
        assert!(err.starts_with("sandbox.allow_write: `relative/dir`"), "{err}");
        let err = parse("mode: off\nnetwork: off")
            .validate("team.sandbox")
            .unwrap_err();
        assert!(err.contains("team.sandbox.network: off needs a sandbox"), "{err}");
        assert!(parse("allow_read: [/a/../b]").validate("s").is_err());
        assert!(
            parse("allow_read: [~/.ssh/known_hosts, /opt/x]")
                .validate("s")
                .is_ok()
        );
    }

    #[test]
    fn unset_means_workspace_write_where_available_and_not_required() {
        let p = Policy::resolve(&[], None, None);
        assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
        assert!(!p.required);
        assert_eq!(p.summary(), "workspace-write, network on");
    }

    #[test]
    fn higher_levels_replace_the_mode_and_add_paths() {
        let config = parse("mode: read-only\nallow_write: [~/.cache]\n");
        let team = parse("mode: workspace-write\nallow_write: [/opt/shared]\n");
        let member = parse("network: off\n");
        let home = Path::new("/home/u");
        let p = Policy::resolve(
            &[("config.yaml", &config), ("team", &team), ("member", &member)],
            None,
            Some(home),
        );
        assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(p.decided_by.as_deref(), Some("team"));
        assert!(p.required);
        assert_eq!(p.network, Network::Off);
        assert_eq!(
            p.allow_write,
            vec![PathBuf::from("/home/u/.cache"), PathBuf::from("/opt/shared")]
        );
        let off = Policy::resolve(&[("config.yaml", &config)], Some(SandboxMode::Off), None);
        assert!(off.is_off() && !off.required);
        assert_eq!(off.decided_by.as_deref(), Some("--sandbox"));
    }

    #[test]
    fn a_repository_level_only_tightens() {
        let mut warnings = Vec::new();
        let loose = parse("mode: off\nnetwork: on\nallow_write: [/]\nbwrap: /tmp/evil\n")
            .from_repository(&mut warnings, "huddle.yaml: sandbox");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(loose.allow_write.is_empty() && loose.bwrap.is_none() && loose.mode.is_none());
        let config = parse("mode: read-only\n");
        let p = Policy::resolve(&[("config.yaml", &config), ("repository", &loose)], None, None);
        assert_eq!(p.mode, SandboxMode::ReadOnly);

        let strict = parse("mode: workspace-write\nnetwork: off\n").from_repository(&mut warnings, "x");
        // Over read-only, workspace-write would loosen: read-only stays.
        let p = Policy::resolve(&[("config.yaml", &config), ("repository", &strict)], None, None);
        assert_eq!(p.mode, SandboxMode::ReadOnly);
        assert_eq!(p.network, Network::Off);
        // Over an unset mode it makes the sandbox required.
        let p = Policy::resolve(&[("repository", &strict)], None, None);
        assert_eq!((p.mode, p.required), (SandboxMode::WorkspaceWrite, true));
        // Over an explicit off it is stricter.
        let off = SandboxSettings::mode(SandboxMode::Off);
        let p = Policy::resolve(&[("config.yaml", &off), ("repository", &strict)], None, None);
        assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(p.decided_by.as_deref(), Some("repository"));
    }

    #[test]
    fn network_off_with_mode_off_still_confines() {
        let off = SandboxSettings::mode(SandboxMode::Off);
        let net = parse("network: off");
        let p = Policy::resolve(&[("config.yaml", &off), ("member", &net)], None, None);
        assert!(p.required && !p.is_off());
        assert_eq!(p.mode, SandboxMode::ReadOnly);
    }

    /// Review 26-2 finding 2: `--sandbox off` (or a higher level's `mode: off`) over a lower
    /// level's `network: off` is no sandbox, not a read-only one.
    #[test]
    fn mode_off_over_a_lower_network_off_is_no_sandbox() {
        let net = parse("network: off");
        let p = Policy::resolve(&[("config.yaml", &net)], Some(SandboxMode::Off), None);
        assert!(p.is_off() && !p.required, "{p:?}");
        assert_eq!(p.network, Network::On);
        let off = SandboxSettings::mode(SandboxMode::Off);
        let p = Policy::resolve(&[("team", &net), ("member", &off)], None, None);
        assert!(p.is_off(), "{p:?}");
        // Without `off` above it, network off still confines.
        let p = Policy::resolve(&[("team", &net)], None, None);
        assert!(p.required && p.network == Network::Off);
    }

    #[test]
    fn home_expansion() {
        let home = Path::new("/h");
        assert_eq!(expand("~/.x", Some(home)), Some(PathBuf::from("/h/.x")));
        assert_eq!(expand("~", Some(home)), Some(PathBuf::from("/h")));
        assert_eq!(expand("~/.x", None), None);
        assert_eq!(expand("/abs", None), Some(PathBuf::from("/abs")));
        assert_eq!(expand("rel", Some(home)), None);
    }
}
