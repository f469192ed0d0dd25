//! Asking the user before a tool runs: per server `approval: ask | auto`, and per front end
//! what happens to an `ask` call (the TUI asks; `huddle run` denies unless `--approve-tools`).
//!
//! [`Approvals`] is the broker between a waiting turn and the front end's answer: the turn
//! registers a request and waits on it; the front end answers by id.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

/// A server's rule (config.yaml `approval:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Every call waits for the user (the default: tools act on the user's machine).
    #[default]
    Ask,
    /// Calls run without asking.
    Auto,
}

/// What a front end does with calls that ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalPolicy {
    /// Show each call to the user and wait (the TUI).
    Ask,
    /// Approve every call (`huddle run --approve-tools`).
    ApproveAll,
    /// Deny every call that asks, with a note saying how to allow them (`huddle run`).
    #[default]
    DenyAll,
    /// Deny every call that asks, with a note saying what an MCP client can do (`huddle mcp`
    /// when its client cannot be asked, or for a detached run).
    DenyOverMcp,
}

/// The user's answer to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    ApproveOnce,
    /// Approve, and do not ask again for this tool in this session (until huddle exits).
    ApproveForSession,
    /// The model is told the user denied it.
    Deny,
    /// Deny, and stop the run the call belongs to.
    DenyAndStop,
}

impl Decision {
    pub fn approves(self) -> bool {
        matches!(self, Decision::ApproveOnce | Decision::ApproveForSession)
    }

    pub fn label(self) -> &'static str {
        match self {
            Decision::ApproveOnce => "approved once",
            Decision::ApproveForSession => "approved for this session",
            Decision::Deny => "denied",
            Decision::DenyAndStop => "denied, run stopped",
        }
    }
}

/// One answer an agent that runs its own tools offers when it asks before a call (an ACP
/// agent's permission option): its id, its name as the agent words it, and its kind
/// (`allow_once`, `allow_always`, `reject_once`, `reject_always`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentOption {
    pub id: String,
    pub name: String,
    pub kind: String,
}

impl AgentOption {
    /// The option answering `decision`: by kind, never by position or name. Approving for the
    /// session picks `allow_always` (else `allow_once`); a denial `reject_once` (else
    /// `reject_always`). `None` when the agent offers none of those kinds: the answer is then
    /// `cancelled`, which allows nothing.
    pub fn answering(decision: Decision, options: &[AgentOption]) -> Option<&AgentOption> {
        let wanted: &[&str] = match decision {
            Decision::ApproveOnce => &["allow_once"],
            Decision::ApproveForSession => &["allow_always", "allow_once"],
            Decision::Deny | Decision::DenyAndStop => &["reject_once", "reject_always"],
        };
        wanted
            .iter()
            .find_map(|kind| options.iter().find(|o| o.kind == *kind))
    }
}

/// What a denied call returns to the model.
pub const DENIED_BY_USER: &str = "denied by the user: this tool call was not run";
/// What a call denied by `huddle run` returns to the model.
pub const DENIED_HEADLESS: &str =
    "denied: huddle run does not run tools that need approval unless --approve-tools is given";
/// What a call denied in a run started over MCP (`huddle mcp`) returns to the model and the
/// client: nobody could be asked, and what would have it asked or run.
pub const DENIED_OVER_MCP: &str = "denied: huddle mcp could not ask anyone about this tool call (the MCP client that started the run takes no elicitation, or the run was detached); a client that supports elicitation or MCP Tasks is asked, and a tool server with `approval: auto` in huddle's config.yaml runs its tools unasked";

/// Pending requests and per-session grants. One per engine.
#[derive(Debug, Default)]
pub struct Approvals {
    next: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Decision>>>,
    /// (session id, tool name as the model sees it) approved for the session.
    granted: Mutex<HashSet<(String, String)>>,
    /// Policies that replace the engine's for one group's or session's runs (by id): a run
    /// handed over by `huddle run` keeps that command's rule (deny, or `--approve-tools`).
    scoped: Mutex<HashMap<String, ApprovalPolicy>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Approvals {
    /// True when the user approved `tool` for `session_id` earlier.
    pub fn granted(&self, session_id: &str, tool: &str) -> bool {
        lock(&self.granted).contains(&(session_id.to_string(), tool.to_string()))
    }

    pub fn grant(&self, session_id: &str, tool: &str) {
        lock(&self.granted).insert((session_id.to_string(), tool.to_string()));
    }

    /// A new request: its id (for the front end) and where the answer arrives.
    pub fn request(&self) -> (u64, oneshot::Receiver<Decision>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id, tx);
        (id, rx)
    }

    /// Answers request `id`; false when nobody waits on it any more (stopped, answered).
    pub fn answer(&self, id: u64, decision: Decision) -> bool {
        match lock(&self.pending).remove(&id) {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// Forgets request `id` (its turn stopped waiting).
    pub fn withdraw(&self, id: u64) {
        lock(&self.pending).remove(&id);
    }

    pub fn pending(&self) -> usize {
        lock(&self.pending).len()
    }

    /// Sets (or with `None` clears) the policy for the runs of one group or session.
    pub fn set_scoped(&self, scope_id: &str, policy: Option<ApprovalPolicy>) {
        let mut scoped = lock(&self.scoped);
        match policy {
            Some(p) => scoped.insert(scope_id.to_string(), p),
            None => scoped.remove(scope_id),
        };
    }

    /// The policy for a call of `session_id` in `group_id`: the session's own, else the
    /// group's, else `default`.
    pub fn policy_for(&self, group_id: &str, session_id: &str, default: ApprovalPolicy) -> ApprovalPolicy {
        let scoped = lock(&self.scoped);
        if scoped.is_empty() {
            return default;
        }
        scoped
            .get(session_id)
            .or_else(|| scoped.get(group_id))
            .copied()
            .unwrap_or(default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scoped_policy_wins_for_its_group_or_session_only() {
        let approvals = Approvals::default();
        let ask = ApprovalPolicy::Ask;
        assert_eq!(approvals.policy_for("g", "s", ask), ask);
        approvals.set_scoped("g", Some(ApprovalPolicy::DenyAll));
        approvals.set_scoped("s2", Some(ApprovalPolicy::ApproveAll));
        assert_eq!(approvals.policy_for("g", "s", ask), ApprovalPolicy::DenyAll);
        assert_eq!(approvals.policy_for("g", "s2", ask), ApprovalPolicy::ApproveAll);
        assert_eq!(approvals.policy_for("other", "s", ask), ask);
        approvals.set_scoped("g", None);
        assert_eq!(approvals.policy_for("g", "s", ask), ask);
    }

    #[tokio::test]
    async fn an_answer_reaches_the_waiting_request_once() {
        let approvals = Approvals::default();
        let (id, rx) = approvals.request();
        let (other, _rx2) = approvals.request();
        assert_ne!(id, other);
        assert!(approvals.answer(id, Decision::Deny));
        assert!(!approvals.answer(id, Decision::ApproveOnce), "answered twice");
        assert_eq!(rx.await.unwrap(), Decision::Deny);
        approvals.withdraw(other);
        assert_eq!(approvals.pending(), 0);
    }

    #[test]
    fn grants_are_per_session_and_tool() {
        let approvals = Approvals::default();
        approvals.grant("s1", "git__git_status");
        assert!(approvals.granted("s1", "git__git_status"));
        assert!(!approvals.granted("s2", "git__git_status"));
        assert!(!approvals.granted("s1", "git__git_log"));
    }

    #[test]
    fn approval_rules_read_from_config_words() {
        let a: Approval = serde_yaml::from_str("auto").unwrap();
        assert_eq!(a, Approval::Auto);
        assert!(serde_yaml::from_str::<Approval>("sometimes").is_err());
        assert!(Decision::ApproveForSession.approves() && !Decision::DenyAndStop.approves());
    }
}
