//! MCP servers as tool sources, through the official Rust SDK (`rmcp`).

pub mod config;

pub use config::McpServerConfig;

use std::path::Path;

use crate::config::Config;
use crate::tools::Toolbox;

/// The configured MCP servers as tool sources (none started yet: each starts on first use).
pub fn toolbox(config: &Config, repo: &Path) -> Toolbox {
    let _ = (config, repo);
    Toolbox::default()
}
