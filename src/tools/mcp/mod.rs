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

use crate::tools::{ToolError, ToolSource, Toolbox};

/// config.yaml's `mcp_servers:`, by name.
pub type McpServers = BTreeMap<String, McpServerConfig>;

/// The configured MCP servers as tool sources (none started yet: each starts on first use).
pub fn toolbox(servers: &McpServers, repo: &Path) -> Toolbox {
    toolbox_in(servers, repo, &crate::env::Env::process())
}

/// As [`toolbox`], for a front end: its servers run in `env` (and read `headers_env:` there).
pub fn toolbox_in(servers: &McpServers, repo: &Path, env: &crate::env::Env) -> Toolbox {
    Toolbox::new(servers.iter().map(|(name, server)| {
        Arc::new(McpSource::new(name, server.clone(), repo).with_env(env.clone())) as Arc<dyn ToolSource>
    }))
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
pub async fn check_all(servers: &McpServers, repo: &Path) -> Vec<ServerCheck> {
    futures::future::join_all(servers.iter().map(|(name, server)| async move {
        let source = McpSource::new(name, server.clone(), repo);
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
