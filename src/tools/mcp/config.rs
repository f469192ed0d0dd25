//! `mcp_servers:` in config.yaml: how to reach each MCP server and whether its calls ask.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
    /// Where a stdio server runs: `repo` (the repository huddle was opened in) or a directory.
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
}

pub fn default_timeout_secs() -> u64 {
    60
}

/// Checks every server entry; the message names the key (`mcp_servers.git.command`).
pub fn validate_all(servers: &BTreeMap<String, McpServerConfig>) -> Result<(), String> {
    for (name, server) in servers {
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
            _ => {}
        }
        if server.timeout_secs == 0 {
            return Err(format!("mcp_servers.{name}.timeout_secs: must be at least 1"));
        }
    }
    Ok(())
}
