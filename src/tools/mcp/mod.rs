//! MCP servers as tool sources, through the official Rust SDK (`rmcp`).

pub mod config;
mod convert;
mod source;
mod stderr;

pub use config::McpServerConfig;
pub use source::McpSource;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::sandbox::{Baseline, Sandbox};
use crate::tools::{ToolError, ToolSource, Toolbox};

/// config.yaml's `mcp_servers:`, by name.
pub type McpServers = BTreeMap<String, McpServerConfig>;

/// The configured MCP servers as tool sources (none started yet: each starts on first use),
/// each stdio server confined by its sandbox (`baseline` and its own `sandbox:`).
pub fn toolbox(servers: &McpServers, repo: &Path, baseline: &Baseline) -> Toolbox {
    toolbox_in(servers, repo, baseline, &crate::env::Env::process())
}

/// As [`toolbox`], for a front end: its servers run in `env` (and read `headers_env:` there).
pub fn toolbox_in(servers: &McpServers, repo: &Path, baseline: &Baseline, env: &crate::env::Env) -> Toolbox {
    Toolbox::new(servers.iter().map(|(name, server)| {
        Arc::new(
            McpSource::new(name, server.clone(), repo)
                .with_sandbox(sandbox_of(name, server, baseline))
                .with_env(env.clone()),
        ) as Arc<dyn ToolSource>
    }))
}

/// A server's sandbox: config.yaml's, then its own `sandbox:`, then the command line's mode.
pub fn sandbox_of(name: &str, server: &McpServerConfig, baseline: &Baseline) -> Sandbox {
    baseline.sandbox(&[(&format!("mcp_servers.{name}"), &server.sandbox)], None)
}

/// What starting one server found (`huddle doctor`).
#[derive(Debug, Clone)]
pub struct ServerCheck {
    pub name: String,
    /// How it is reached (`stdio mcp-server-git`).
    pub via: String,
    /// Its tools' names, or why it could not be used.
    pub tools: Result<Vec<String>, ToolError>,
}

/// Starts every configured server at once (each within its `timeout_secs`), lists its tools
/// and stops it again.
pub async fn check_all(servers: &McpServers, repo: &Path, baseline: &Baseline) -> Vec<ServerCheck> {
    futures::future::join_all(servers.iter().map(|(name, server)| async move {
        let source =
            McpSource::new(name, server.clone(), repo).with_sandbox(sandbox_of(name, server, baseline));
        let tools = source
            .list(None)
            .await
            .map(|tools| tools.into_iter().map(|t| t.name).collect());
        source.shutdown().await;
        ServerCheck {
            name: name.clone(),
            via: source.describe(),
            tools,
        }
    }))
    .await
}
