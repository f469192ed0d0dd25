//! Tools sessions can call: where they come from (a [`ToolSource`], e.g. an MCP server), how
//! the engine finds the one a model named, checks its arguments, caps its result and asks the
//! user first.
//!
//! A model sees a tool as `<server>__<tool>`; a session lists the servers it may use.

pub mod approval;
pub mod limits;
pub mod mcp;
pub mod schema;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::model::ToolSpec;

pub use approval::{Approval, ApprovalPolicy, Approvals, Decision};

/// What a call a stop cut short returns to the model (and how front ends recognise it).
pub const CANCELLED_RESULT: &str = "cancelled: the run was stopped before this tool finished";

/// Between a server's name and its tool's in the name a model sees.
pub const NAME_SEPARATOR: &str = "__";

/// What a tool returned: text for the model, and whether the tool itself reported failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    pub is_error: bool,
}

/// Why a tool could not be called or listed. Goes back to the model as a tool error (calls)
/// or to the user (listing, doctor).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("tool server `{server}` could not start: {message}")]
    Start { server: String, message: String },
    #[error("tool server `{server}` failed: {message}")]
    Failed { server: String, message: String },
    #[error("tool server `{server}` did not answer within {}s", .after.as_secs())]
    Timeout { server: String, after: Duration },
    #[error("cancelled")]
    Cancelled,
}

/// A named set of tools: one MCP server, or an in-process source (tests, benchmarks).
pub trait ToolSource: Send + Sync {
    /// The server name (`git`), the prefix of its tools' names.
    fn name(&self) -> &str;
    /// Whether calls need the user's approval first.
    fn approval(&self) -> Approval;
    /// The tools it offers now (names without the server prefix) to a session working in
    /// `workdir` (its worktree or repo; `None` when unknown). May start the server (one per
    /// working directory for MCP servers with `cwd: session`).
    fn list<'a>(&'a self, workdir: Option<&'a Path>) -> BoxFuture<'a, Result<Vec<ToolSpec>, ToolError>>;
    /// Calls `tool` with an arguments object for a session working in `workdir`; cancelling
    /// `cancel` abandons the call at once.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: serde_json::Map<String, serde_json::Value>,
        workdir: Option<&'a Path>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
    /// Stops it (a server process); called on exit.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Every configured tool source, by server name. Cheap to clone; clones share the sources.
#[derive(Clone, Default)]
pub struct Toolbox {
    sources: Arc<BTreeMap<String, Arc<dyn ToolSource>>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("servers", &self.sources.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Toolbox {
    pub fn new(sources: impl IntoIterator<Item = Arc<dyn ToolSource>>) -> Toolbox {
        Toolbox {
            sources: Arc::new(sources.into_iter().map(|s| (s.name().to_string(), s)).collect()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.sources.keys().map(String::as_str)
    }

    pub fn get(&self, server: &str) -> Option<&Arc<dyn ToolSource>> {
        self.sources.get(server)
    }

    /// The tools of `servers` as a model sees them, for a session working in `workdir`. A
    /// server that cannot list its tools (or is not configured) is left out and reported in
    /// `problems`, so one broken server does not silence a session.
    pub async fn offer(&self, servers: &[String], workdir: Option<&Path>) -> Offer {
        let mut offer = Offer::default();
        let listed = futures::future::join_all(servers.iter().map(|name| async move {
            match self.sources.get(name) {
                Some(source) => (name, Some(source.list(workdir).await)),
                None => (name, None),
            }
        }))
        .await;
        for (server, result) in listed {
            match result {
                None => offer.problems.push(format!(
                    "tool server `{server}` is not configured (add it under mcp_servers: in config.yaml)"
                )),
                Some(Err(e)) => offer.problems.push(e.to_string()),
                Some(Ok(tools)) => {
                    for tool in tools {
                        offer.specs.push(ToolSpec {
                            name: qualified_name(server, &tool.name),
                            ..tool
                        });
                    }
                }
            }
        }
        offer
    }

    /// Stops every source (server processes end).
    pub async fn shutdown(&self) {
        futures::future::join_all(self.sources.values().map(|s| s.shutdown())).await;
    }
}

/// The tools offered to one turn, and why some server's are missing.
#[derive(Debug, Clone, Default)]
pub struct Offer {
    pub specs: Vec<ToolSpec>,
    pub problems: Vec<String>,
}

impl Offer {
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.specs.iter().find(|s| s.name == name)
    }
}

/// `git` + `git_status` → `git__git_status`.
pub fn qualified_name(server: &str, tool: &str) -> String {
    format!("{server}{NAME_SEPARATOR}{tool}")
}

/// `git__git_status` → (`git`, `git_status`); the server is the part before the first `__`.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let (server, tool) = name.split_once(NAME_SEPARATOR)?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_and_split_at_the_first_separator() {
        assert_eq!(qualified_name("git", "git_status"), "git__git_status");
        assert_eq!(split_name("git__git_status"), Some(("git", "git_status")));
        assert_eq!(split_name("a__b__c"), Some(("a", "b__c")));
        assert_eq!(split_name("plain"), None);
        assert_eq!(split_name("__x"), None);
        assert_eq!(split_name("x__"), None);
    }
}
