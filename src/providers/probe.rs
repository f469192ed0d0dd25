//! Discovery for `huddle doctor` and the model picker: is each configured provider usable?
//! HTTP providers get a short `GET {base}/models`; `command` providers a PATH lookup; `sim` is
//! always there. Keys are sent but never shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use super::http::error_chain;
use super::{anthropic, openai};
use crate::config::{Config, ProviderConfig, ProviderKind};

const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeStatus {
    /// The built-in simulator.
    Local,
    /// A `command` provider's program, found (with its path) or not; for a ready-made agent,
    /// the first line of its `--version` when it answered quickly.
    Program {
        found: Option<PathBuf>,
        version: Option<String>,
    },
    /// The server answered the models request; `models` when it listed them.
    Reachable { models: Option<usize> },
    /// The server answered with an error status (401: key refused, 404: wrong base_url...).
    HttpError { status: u16 },
    /// No answer: connection refused, DNS, timeout.
    Unreachable { reason: String },
    /// `api_key_env` names a variable that is not set.
    MissingKey { var: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    pub provider: String,
    pub kind: ProviderKind,
    /// The URL probed or the program looked up.
    pub target: String,
    pub status: ProbeStatus,
}

impl ProbeResult {
    /// The provider looks usable.
    pub fn ok(&self) -> bool {
        match &self.status {
            ProbeStatus::Local | ProbeStatus::Reachable { .. } => true,
            ProbeStatus::Program { found, .. } => found.is_some(),
            _ => false,
        }
    }

    /// One line for `huddle doctor`.
    pub fn describe(&self) -> String {
        let what = match &self.status {
            ProbeStatus::Local => "built in, offline (simulated answers)".to_string(),
            ProbeStatus::Program {
                found: Some(path),
                version,
            } => match version {
                Some(v) => format!("program found at {} ({v})", path.display()),
                None => format!("program found at {}", path.display()),
            },
            ProbeStatus::Program { found: None, .. } => match agent_install_hint(&self.target) {
                Some(hint) => format!("`{}` is not installed or not on PATH; {hint}", self.target),
                None => format!("program `{}` not found on PATH", self.target),
            },
            ProbeStatus::Reachable { models: Some(n) } => {
                format!("reachable at {} ({n} models)", self.target)
            }
            ProbeStatus::Reachable { models: None } => format!("reachable at {}", self.target),
            ProbeStatus::HttpError { status: 401 } | ProbeStatus::HttpError { status: 403 } => {
                format!("{} refused the API key", self.target)
            }
            ProbeStatus::HttpError { status } => format!("{} answered HTTP {status}", self.target),
            ProbeStatus::Unreachable { reason } => format!("unreachable: {reason}"),
            ProbeStatus::MissingKey { var } => format!("environment variable {var} is not set"),
        };
        format!("{} ({}): {what}", self.provider, self.kind.as_str())
    }
}

/// Probes every configured provider concurrently.
pub async fn probe(config: &Config) -> Vec<ProbeResult> {
    futures::future::join_all(config.providers.iter().map(probe_one)).await
}

async fn probe_one(p: &ProviderConfig) -> ProbeResult {
    let result = |target: String, status| ProbeResult {
        provider: p.name.clone(),
        kind: p.kind,
        target,
        status,
    };
    match p.kind {
        ProviderKind::Sim => result("sim".into(), ProbeStatus::Local),
        ProviderKind::Command | ProviderKind::Acp => {
            let program = p.command.first().cloned().unwrap_or_default();
            let found = find_program(&program);
            let version = match (&found, p.agent) {
                (Some(path), Some(_)) => program_version(path).await,
                _ => None,
            };
            result(program, ProbeStatus::Program { found, version })
        }
        ProviderKind::Openai | ProviderKind::Anthropic => {
            let url = match p.kind {
                ProviderKind::Anthropic => anthropic::models_url(p.base_url.as_deref()),
                _ => openai::models_url(p.base_url.as_deref()),
            };
            let status = probe_http(p, &url).await;
            result(url, status)
        }
    }
}

async fn probe_http(p: &ProviderConfig, url: &str) -> ProbeStatus {
    let mut headers = HeaderMap::new();
    if let Some(var) = &p.api_key_env {
        let Some(key) = p.api_key() else {
            return ProbeStatus::MissingKey { var: var.clone() };
        };
        let value = match p.kind {
            ProviderKind::Anthropic => HeaderValue::from_str(&key),
            _ => HeaderValue::from_str(&format!("Bearer {key}")),
        };
        let Ok(value) = value else {
            return ProbeStatus::Unreachable {
                reason: format!("the key in {var} is not a valid header value"),
            };
        };
        match p.kind {
            ProviderKind::Anthropic => headers.insert(HeaderName::from_static("x-api-key"), value),
            _ => headers.insert(AUTHORIZATION, value),
        };
    }
    if p.kind == ProviderKind::Anthropic {
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(anthropic::API_VERSION),
        );
    }
    for (name, value) in &p.headers {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(n, v);
        }
    }
    let client = match reqwest::Client::builder()
        .connect_timeout(PROBE_TIMEOUT)
        .timeout(PROBE_TIMEOUT)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            return ProbeStatus::Unreachable {
                reason: error_chain(&e),
            };
        }
    };
    match client.get(url).headers(headers).send().await {
        Err(e) => ProbeStatus::Unreachable {
            reason: error_chain(&e),
        },
        Ok(resp) if !resp.status().is_success() => ProbeStatus::HttpError {
            status: resp.status().as_u16(),
        },
        Ok(resp) => {
            let models = resp
                .json::<serde_json::Value>()
                .await
                .ok()
                .and_then(|v| v.get("data").and_then(|d| d.as_array()).map(Vec::len));
            ProbeStatus::Reachable { models }
        }
    }
}

/// How long `<agent> --version` may take before doctor moves on without it.
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

/// The first line `<program> --version` prints, if it answers quickly and successfully.
async fn program_version(path: &Path) -> Option<String> {
    let mut cmd = tokio::process::Command::new(path);
    cmd.arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(VERSION_TIMEOUT, cmd.output())
        .await
        .ok()?
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let line: String = text.lines().next()?.trim().chars().take(80).collect();
    (!line.is_empty()).then_some(line)
}

/// How to get a ready-made agent's program, by its name.
fn agent_install_hint(program: &str) -> Option<&'static str> {
    match program {
        "claude" => Some("install Claude Code (npm install -g @anthropic-ai/claude-code)"),
        "codex" => Some("install Codex (npm install -g @openai/codex)"),
        "gemini" => Some("install Gemini CLI (npm install -g @google/gemini-cli)"),
        _ => None,
    }
}

/// The program's path: as given when it contains `/`, else the first match on PATH.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_or_by_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("/bin/sh").is_some());
        assert_eq!(find_program("huddle-no-such-program-xyz"), None);
        assert_eq!(find_program(""), None);
    }

    #[tokio::test]
    async fn an_agents_version_is_shown_and_a_missing_agent_says_how_to_get_it() {
        let mut config = Config::default();
        let mut c = ProviderConfig::new("c", ProviderKind::Command);
        c.agent = Some(crate::model::AgentKind::Claude);
        // `sh --version` fails on dash and answers on bash: either way the probe ends.
        c.command = vec!["sh".into()];
        config.providers.push(c);
        let mut missing = ProviderConfig::new("m", ProviderKind::Command);
        missing.agent = Some(crate::model::AgentKind::Codex);
        missing.command = vec!["codex-huddle-missing".into()];
        config.providers.push(missing);
        let results = probe(&config).await;
        assert!(results[0].ok(), "{results:?}");
        assert!(!results[1].ok());
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("claude");
        std::fs::write(&fake, "#!/bin/sh\necho '2.1.7 (Claude Code)'\n").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert_eq!(
            program_version(&fake).await.as_deref(),
            Some("2.1.7 (Claude Code)")
        );
        let line = ProbeResult {
            provider: "claude".into(),
            kind: ProviderKind::Command,
            target: "claude".into(),
            status: ProbeStatus::Program {
                found: None,
                version: None,
            },
        }
        .describe();
        assert!(
            line.contains("`claude` is not installed or not on PATH"),
            "{line}"
        );
    }

    #[tokio::test]
    async fn local_kinds_need_no_network() {
        let mut config = Config::default();
        let mut c = ProviderConfig::new("c", ProviderKind::Command);
        c.command = vec!["sh".into()];
        config.providers.push(c);
        config
            .providers
            .push(ProviderConfig::new("sim", ProviderKind::Sim));
        let results = probe(&config).await;
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(ProbeResult::ok), "{results:?}");
        assert!(results[1].describe().contains("offline"));
    }
}
