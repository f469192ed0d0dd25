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
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::model::ToolSpec;

pub use approval::{AgentOption, Approval, ApprovalPolicy, Approvals, Decision};

/// What a call a stop cut short returns to the model (and how front ends recognise it).
pub const CANCELLED_RESULT: &str = "cancelled: the run was stopped before this tool finished";

/// Between a server's name and its tool's in the name a model sees.
pub const NAME_SEPARATOR: &str = "__";

/// The longest tool name every model API takes (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`; Anthropic
/// allows 128), the `<server>__` prefix included.
pub const WIRE_NAME_MAX: usize = 64;
/// Tools of one server declared to a model unless `mcp_servers.<name>.max_tools` says otherwise.
pub const DEFAULT_MAX_TOOLS: usize = 64;
/// The most tools OpenAI takes in one request: no server may declare more.
pub const MAX_TOOLS_LIMIT: usize = 128;
/// Names quoted per problem; the rest are counted.
const NAMES_QUOTED: usize = 5;

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
    /// True when its process runs in a sandbox (a stdio MCP server not `mode: off`): what it
    /// says about a read-only file system or an unreachable network is the sandbox's doing.
    fn confined(&self) -> bool {
        false
    }
    /// What its sandbox stopped since the last time this was asked (from its stderr).
    fn take_denials(&self) -> Vec<String> {
        Vec::new()
    }
    /// How an agent that runs its own tools can start or reach this server itself (an ACP
    /// agent's `mcpServers`); `Err`: why it cannot.
    fn launch(&self) -> Result<ServerLaunch, String> {
        Err("it is not a server an agent can start".into())
    }
    /// Stops it (a server process); called on exit.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    /// The most of its tools declared to a model at once.
    fn max_tools(&self) -> usize {
        DEFAULT_MAX_TOOLS
    }
}

/// A tool server as an agent starts (stdio) or reaches (HTTP) it itself. Its environment and
/// headers are the user's secrets: never printed (`Debug` shows their names only).
#[derive(Clone, PartialEq)]
pub enum ServerLaunch {
    Stdio {
        name: String,
        /// The program, an absolute path.
        command: PathBuf,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        name: String,
        url: String,
        headers: Vec<(String, String)>,
    },
}

impl ServerLaunch {
    pub fn name(&self) -> &str {
        match self {
            ServerLaunch::Stdio { name, .. } | ServerLaunch::Http { name, .. } => name,
        }
    }
}

impl std::fmt::Debug for ServerLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |pairs: &[(String, String)]| pairs.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        match self {
            ServerLaunch::Stdio {
                name,
                command,
                args,
                env,
            } => f
                .debug_struct("Stdio")
                .field("name", name)
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .finish(),
            ServerLaunch::Http { name, url, headers } => f
                .debug_struct("Http")
                .field("name", name)
                .field("url", url)
                .field("headers", &names(headers))
                .finish(),
        }
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
                    let max = self
                        .sources
                        .get(server)
                        .map_or(DEFAULT_MAX_TOOLS, |s| s.max_tools());
                    let screened = screen(server, tools, |t| &t.name, max);
                    offer.problems.extend(screened.problems);
                    for tool in screened.declared {
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

/// True for a name every model API takes as a tool's: 1 to [`WIRE_NAME_MAX`] ASCII letters,
/// digits, `_` and `-`.
pub fn is_wire_name(name: &str) -> bool {
    (1..=WIRE_NAME_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A server's tools sorted into those declared to a model and why the others are not.
#[derive(Debug, Clone, PartialEq)]
pub struct Screened<T> {
    pub declared: Vec<T>,
    /// One line per kind of tool left out, for the user (a warning, a doctor line).
    pub problems: Vec<String>,
}

/// Which of `server`'s tools a model is told of: those whose `<server>__<tool>` name every
/// model API takes ([`is_wire_name`]: one bad name would make every request fail), each name
/// once, the first `max` of them. Names in the problems are made safe to print.
pub fn screen<T>(server: &str, tools: Vec<T>, name: impl Fn(&T) -> &str, max: usize) -> Screened<T> {
    let mut declared: Vec<T> = Vec::new();
    let (mut invalid, mut twice, mut over) = (Vec::new(), Vec::new(), 0usize);
    for tool in tools {
        let tool_name = name(&tool);
        if tool_name.is_empty() || !is_wire_name(&qualified_name(server, tool_name)) {
            invalid.push(shown_name(tool_name));
        } else if declared.iter().any(|d| name(d) == tool_name) {
            twice.push(shown_name(tool_name));
        } else if declared.len() >= max {
            over += 1;
        } else {
            declared.push(tool);
        }
    }
    let mut problems = Vec::new();
    if !invalid.is_empty() {
        problems.push(format!(
            "tool server `{server}` offers {} tool{} whose name a model cannot take, left out: {} (a tool name is letters, digits, `_` and `-`, at most {WIRE_NAME_MAX} characters with its `{server}{NAME_SEPARATOR}` prefix)",
            invalid.len(),
            if invalid.len() == 1 { "" } else { "s" },
            quoted(&invalid)
        ));
    }
    if !twice.is_empty() {
        problems.push(format!(
            "tool server `{server}` lists {} more than once; declared once",
            quoted(&twice)
        ));
    }
    if over > 0 {
        problems.push(format!(
            "tool server `{server}` offers {} tools; only the first {max} are declared to models (mcp_servers.{server}.max_tools)",
            declared.len() + over
        ));
    }
    Screened { declared, problems }
}

/// A tool name from a server, safe to print in one line: escape sequences and controls
/// removed, cut at [`WIRE_NAME_MAX`] characters.
pub fn shown_name(name: &str) -> String {
    let clean = crate::text::sanitize::display(name).replace('\n', " ");
    crate::text::cap_chars(&clean, WIRE_NAME_MAX)
}

/// `` `a`, `b`, `c` and 4 more ``.
fn quoted(names: &[String]) -> String {
    let mut text = names
        .iter()
        .take(NAMES_QUOTED)
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMES_QUOTED {
        text.push_str(&format!(" and {} more", names.len() - NAMES_QUOTED));
    }
    text
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
    fn only_names_every_model_api_takes_are_declared_once_and_at_most_max() {
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let hostile = "x\u{1b}]52;c;cGF5bG9hZA==\u{7}\u{1b}[2J";
        let long = "t".repeat(62);
        let tools = names(&[
            "ok",
            "with space",
            "dotted.name",
            hostile,
            "ok",
            "fine-1",
            &long,
            "",
        ]);
        let s = screen("srv", tools, String::as_str, 10);
        assert_eq!(s.declared, ["ok", "fine-1"]);
        assert_eq!(s.problems.len(), 2, "{:?}", s.problems);
        assert_eq!(
            s.problems[0],
            format!(
                "tool server `srv` offers 5 tools whose name a model cannot take, left out: `with space`, `dotted.name`, `x`, `{long}`, `` (a tool name is letters, digits, `_` and `-`, at most 64 characters with its `srv__` prefix)"
            )
        );
        for p in &s.problems {
            assert!(
                !p.contains('\u{1b}') && !p.contains("52;c") && !p.contains("[2J"),
                "{p:?}"
            );
        }
        assert_eq!(
            s.problems[1],
            "tool server `srv` lists `ok` more than once; declared once"
        );
        // 62 characters fit alone, not behind the `srv__` prefix.
        assert!(is_wire_name(&long) && !is_wire_name(&qualified_name("srv", &long)));

        let many: Vec<String> = (0..1000).map(|k| format!("tool_{k}")).collect();
        let s = screen("big", many, String::as_str, 64);
        assert_eq!(s.declared.len(), 64);
        assert_eq!(s.declared[63], "tool_63", "the first ones listed");
        assert_eq!(
            s.problems,
            [
                "tool server `big` offers 1000 tools; only the first 64 are declared to models (mcp_servers.big.max_tools)"
            ]
        );
    }

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
