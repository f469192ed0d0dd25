//! `mcp_servers:` in config.yaml: how to reach each MCP server and whether its calls ask.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use reqwest::header::{HeaderName, HeaderValue};

use serde::{Deserialize, Serialize};

use crate::sandbox::SandboxSettings;
use crate::tools::Approval;

/// One MCP server: a program on stdio (`command:`) or a streamable-HTTP endpoint (`url:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Program and arguments (no shell), for a stdio server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Extra environment for a stdio server.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Where a stdio server runs: `repo` (the repository huddle was opened in), `session` (each
    /// session's working directory, its worktree: one server per directory) or a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A streamable-HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers whose values are read from environment variables: header name → variable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers_env: BTreeMap<String, String>,
    #[serde(default)]
    pub approval: Approval,
    /// Longest wait for one call (and for the server to start).
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// The most of its tools declared to a model in one request (the first ones listed);
    /// the rest are left out, and a warning says so.
    #[serde(default = "default_max_tools")]
    pub max_tools: usize,
    /// A stdio server's sandbox, over config.yaml's `sandbox:`.
    #[serde(default, skip_serializing_if = "SandboxSettings::is_empty")]
    pub sandbox: SandboxSettings,
}

pub fn default_timeout_secs() -> u64 {
    60
}

pub fn default_max_tools() -> usize {
    crate::tools::DEFAULT_MAX_TOOLS
}

impl McpServerConfig {
    /// A stdio server running `command` (program, then arguments); everything else default.
    pub fn stdio(command: impl IntoIterator<Item = impl Into<String>>) -> McpServerConfig {
        McpServerConfig {
            command: command.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers_env: BTreeMap::new(),
            approval: Approval::default(),
            timeout_secs: default_timeout_secs(),
            max_tools: default_max_tools(),
            sandbox: SandboxSettings::default(),
        }
    }

    /// A streamable-HTTP server at `url`; everything else default.
    pub fn http(url: impl Into<String>) -> McpServerConfig {
        McpServerConfig {
            url: Some(url.into()),
            ..McpServerConfig::stdio(Vec::<String>::new())
        }
    }
}

/// Checks every server entry; the message names the key (`mcp_servers.git.command`).
pub fn validate_all(servers: &BTreeMap<String, McpServerConfig>) -> Result<(), String> {
    servers
        .iter()
        .try_for_each(|(name, server)| validate(name, server))
}

fn validate(name: &str, server: &McpServerConfig) -> Result<(), String> {
    let valid_name = !name.is_empty()
        && !name.contains(crate::tools::NAME_SEPARATOR)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_name {
        return Err(format!(
            "mcp_servers.{name}: a server name is letters, digits, `-` and `_`, without `__` (models see its tools as `<server>__<tool>`)"
        ));
    }
    let key = |key: &str| format!("mcp_servers.{name}.{key}");
    match (server.command.is_empty(), &server.url) {
        (true, None) => {
            return Err(format!(
                "mcp_servers.{name}: needs either command: [program, args...] (stdio) or url: (streamable HTTP)"
            ));
        }
        (false, Some(_)) => {
            return Err(format!(
                "mcp_servers.{name}: has both command: and url:; a server is one or the other"
            ));
        }
        (false, None) => {
            if server.command[0].trim().is_empty() {
                return Err(format!(
                    "{}: the program (its first element) is empty",
                    key("command")
                ));
            }
            if !server.headers_env.is_empty() {
                return Err(format!(
                    "{}: only for a streamable-HTTP server (url:); a stdio server gets env:",
                    key("headers_env")
                ));
            }
        }
        (true, Some(url)) => {
            let scheme_ok = ["http://", "https://"]
                .iter()
                .any(|scheme| url.len() > scheme.len() && url[..scheme.len()].eq_ignore_ascii_case(scheme));
            if !scheme_ok {
                return Err(format!(
                    "{}: `{url}` is not an http:// or https:// address",
                    key("url")
                ));
            }
            if !server.env.is_empty() {
                return Err(format!(
                    "{}: only for a stdio server (command:); an HTTP server gets headers_env:",
                    key("env")
                ));
            }
            if server.cwd.is_some() {
                return Err(format!("{}: only for a stdio server (command:)", key("cwd")));
            }
            if !server.sandbox.is_empty() {
                return Err(format!(
                    "{}: only for a stdio server (command:); huddle starts no process for an HTTP one",
                    key("sandbox")
                ));
            }
        }
    }
    if server.cwd.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err(format!(
            "{}: is empty; use `repo` (the repository huddle was opened in), `session` (each session's worktree) or a directory",
            key("cwd")
        ));
    }
    for var in server.env.keys() {
        if var.is_empty() || var.contains(['=', '\0']) {
            return Err(format!(
                "{}: `{var}` is not a valid environment variable name",
                key("env")
            ));
        }
    }
    for (header, var) in &server.headers_env {
        if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err() {
            return Err(format!(
                "{}: `{header}` is not a valid HTTP header name",
                key("headers_env")
            ));
        }
        if var.is_empty() || var.contains(['=', '\0']) {
            return Err(format!(
                "{}.{header}: `{var}` is not a valid environment variable name",
                key("headers_env")
            ));
        }
    }
    if server.timeout_secs == 0 {
        return Err(format!("{}: must be at least 1", key("timeout_secs")));
    }
    if !(1..=crate::tools::MAX_TOOLS_LIMIT).contains(&server.max_tools) {
        return Err(format!(
            "{}: must be 1 to {} (the most tools a model API takes in one request)",
            key("max_tools"),
            crate::tools::MAX_TOOLS_LIMIT
        ));
    }
    if server.sandbox.only_tighten {
        return Err(format!(
            "{}.only_tighten: is not a config.yaml setting",
            key("sandbox")
        ));
    }
    server.sandbox.validate(&key("sandbox"))
}

/// Where a stdio server runs: `None` (huddle's own working directory) when `cwd:` is not set;
/// the repository for `repo` (and for `session` when no session is known, e.g. `huddle
/// doctor`); a relative directory is taken from the repository.
pub fn resolve_cwd(cwd: Option<&str>, repo: &Path) -> Option<PathBuf> {
    let cwd = cwd?.trim();
    Some(if cwd == "repo" || cwd == "session" {
        repo.to_path_buf()
    } else {
        repo.join(cwd)
    })
}

/// The HTTP headers of `headers_env:`, each value read from its environment variable through
/// `lookup`. The error names the header and the variable, never a value. Values are marked
/// sensitive (left out of `Debug` output).
pub fn resolve_headers(
    server: &str,
    headers_env: &BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    headers_env
        .iter()
        .map(|(header, var)| {
            let name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
                format!("mcp_servers.{server}.headers_env: `{header}` is not a valid HTTP header name")
            })?;
            let value = lookup(var).ok_or_else(|| {
                format!(
                    "the environment variable {var} (for header {header}, mcp_servers.{server}.headers_env) is not set"
                )
            })?;
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                format!(
                    "the environment variable {var} (for header {header}) holds characters an HTTP header cannot carry"
                )
            })?;
            value.set_sensitive(true);
            Ok((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> BTreeMap<String, McpServerConfig> {
        serde_yaml::from_str(yaml).unwrap()
    }

    fn problem(yaml: &str) -> String {
        validate_all(&parse(yaml)).unwrap_err()
    }

    #[test]
    fn valid_entries_pass_and_defaults_apply() {
        let servers = parse(
            "git: { command: [mcp-server-git, --repository, .], cwd: repo, env: { A: b } }\nweb: { url: \"https://example.test/mcp\", headers_env: { Authorization: WEB_TOKEN }, approval: auto, timeout_secs: 5 }\n",
        );
        validate_all(&servers).unwrap();
        assert_eq!(servers["git"].timeout_secs, 60);
        assert_eq!(servers["git"].approval, Approval::Ask);
        assert_eq!(servers["web"].approval, Approval::Auto);
    }

    #[test]
    fn problems_name_the_key() {
        let cases = [
            ("a__b: { command: [x] }", "mcp_servers.a__b:"),
            ("g: {}", "mcp_servers.g: needs either"),
            ("g: { command: [x], url: \"http://h\" }", "has both"),
            ("g: { command: [\"\"] }", "mcp_servers.g.command: the program"),
            ("g: { url: \"ftp://h\" }", "mcp_servers.g.url: `ftp://h` is not"),
            ("g: { url: \"http://\" }", "mcp_servers.g.url"),
            (
                "g: { url: \"http://h\", env: { A: b } }",
                "mcp_servers.g.env: only for a stdio",
            ),
            (
                "g: { url: \"http://h\", cwd: repo }",
                "mcp_servers.g.cwd: only for a stdio",
            ),
            (
                "g: { command: [x], headers_env: { A: B } }",
                "mcp_servers.g.headers_env: only for",
            ),
            ("g: { command: [x], cwd: \" \" }", "mcp_servers.g.cwd: is empty"),
            (
                "g: { command: [x], env: { \"A=B\": c } }",
                "mcp_servers.g.env: `A=B`",
            ),
            (
                "g: { url: \"http://h\", headers_env: { \"bad header\": V } }",
                "`bad header` is not a valid HTTP header",
            ),
            (
                "g: { url: \"http://h\", headers_env: { X-Key: \"\" } }",
                "mcp_servers.g.headers_env.X-Key",
            ),
            (
                "g: { command: [x], timeout_secs: 0 }",
                "mcp_servers.g.timeout_secs: must be at least 1",
            ),
            (
                "g: { command: [x], max_tools: 0 }",
                "mcp_servers.g.max_tools: must be 1 to 128",
            ),
            (
                "g: { command: [x], max_tools: 500 }",
                "mcp_servers.g.max_tools: must be 1 to 128",
            ),
            (
                "g: { url: \"http://h\", sandbox: { mode: off } }",
                "mcp_servers.g.sandbox: only for a stdio server",
            ),
            (
                "g: { command: [x], sandbox: { allow_write: [rel] } }",
                "mcp_servers.g.sandbox.allow_write: `rel`",
            ),
        ];
        for (yaml, expected) in cases {
            let message = problem(yaml);
            assert!(message.contains(expected), "{yaml}: {message}");
        }
        assert!(
            serde_yaml::from_str::<BTreeMap<String, McpServerConfig>>("g: { command: [x], shell: true }")
                .is_err()
        );
    }

    #[test]
    fn cwd_is_the_repo_a_directory_in_it_or_absolute() {
        let repo = Path::new("/work/repo");
        assert_eq!(resolve_cwd(None, repo), None);
        assert_eq!(resolve_cwd(Some("repo"), repo), Some(PathBuf::from("/work/repo")));
        assert_eq!(
            resolve_cwd(Some("tools/x"), repo),
            Some(PathBuf::from("/work/repo/tools/x"))
        );
        assert_eq!(
            resolve_cwd(Some("/opt/srv"), repo),
            Some(PathBuf::from("/opt/srv"))
        );
    }

    #[test]
    fn headers_come_from_the_environment_and_errors_never_show_a_value() {
        let headers: BTreeMap<String, String> =
            [("Authorization".to_string(), "WEB_TOKEN".to_string())].into();
        let found = resolve_headers("web", &headers, |var| {
            (var == "WEB_TOKEN").then(|| "Bearer s3cret-value".to_string())
        })
        .unwrap();
        assert_eq!(found[0].0.as_str(), "authorization");
        assert_eq!(found[0].1.to_str().unwrap(), "Bearer s3cret-value");
        assert!(found[0].1.is_sensitive());
        assert!(!format!("{found:?}").contains("s3cret"));

        let missing = resolve_headers("web", &headers, |_| None).unwrap_err();
        assert!(
            missing.contains("WEB_TOKEN") && missing.contains("is not set"),
            "{missing}"
        );
        let bad = resolve_headers("web", &headers, |_| Some("line\nbreak s3cret".into())).unwrap_err();
        assert!(bad.contains("WEB_TOKEN") && !bad.contains("s3cret"), "{bad}");
    }
}
