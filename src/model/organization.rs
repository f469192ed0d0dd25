//! The organization: every group and session plus UI preferences, persisted as one JSON
//! document (`organization.json`).

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    AgentSession, DEFAULT_MAX_ITERATIONS, FlowLinks, GroupKind, Memory, Mode, ModeSettings, ModeState, Role,
    RunBudget, Usage, Worktree, WorktreeStrategy, cost::Cost,
};

/// An evaluator's settings kept while it is switched off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptEvaluator {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

/// A group id: a UUID string.
pub type GroupId = String;
/// A session id: a UUID string; also the name of its transcript file.
pub type SessionId = String;

pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// All groups and sessions. Exactly one group has kind `default` after reconciliation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Organization {
    /// Format version, for future migrations.
    pub version: u32,
    pub groups: Vec<Group>,
    pub sessions: Vec<Session>,
    pub ui: UiPrefs,
}

impl Default for Organization {
    fn default() -> Self {
        Organization {
            version: 1,
            groups: Vec::new(),
            sessions: Vec::new(),
            ui: UiPrefs::default(),
        }
    }
}

/// Interface preferences that survive restarts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UiPrefs {
    pub selected_group: Option<GroupId>,
    pub selected_session: Option<SessionId>,
    pub collapsed_groups: Vec<GroupId>,
    pub sidebar_width: Option<u16>,
}

/// A group of sessions. Team fields are meaningful only when `kind` is `team`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub id: GroupId,
    pub name: String,
    /// A team's one-line description (the preset's, or the `> ` line of a Squad team.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The preset's emoji, kept so the team saved as a preset gets it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
    #[serde(default)]
    pub kind: GroupKind,
    #[serde(default)]
    pub sort_order: i64,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orchestrator_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_context: Option<String>,
    /// Working directory of a repo or team group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<PathBuf>,
    /// In [`super::MAX_ITERATIONS`] (a stored value outside it is clamped when loaded).
    #[serde(default = "default_max_iterations")]
    pub max_iterations: u32,
    #[serde(default = "default_worker_timeout_secs")]
    pub worker_timeout_secs: u64,
    /// The evaluator session, by id (a rename keeps it the evaluator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_id: Option<SessionId>,
    /// What the evaluator was set up with when it was switched off, so switching it on again
    /// brings it back as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_kept: Option<KeptEvaluator>,
    /// The evaluator by *name*, as files written before ids had it: resolved into
    /// `evaluator_id` when the organization is loaded, never written.
    #[serde(default, rename = "evaluator", skip_serializing)]
    pub legacy_evaluator_name: Option<String>,
    /// `<tier>:<name>` of the preset the team was created from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_preset: Option<String>,
    /// Tokens used by the group's sessions, rolled up.
    #[serde(default)]
    pub usage: Usage,
    /// What the group's sessions' turns cost, rolled up.
    #[serde(default, skip_serializing_if = "Cost::is_zero")]
    pub cost: Cost,
    /// Messages the user sent while a run was ending, given to the next run (never dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_messages: Vec<String>,
    /// How the team's members share git worktrees (the records are on its sessions).
    #[serde(default, skip_serializing_if = "WorktreeStrategy::is_shared")]
    pub worktrees: WorktreeStrategy,
    /// The slug its members' names were made with (`<slug>-<role>`), kept when the team is
    /// renamed so members are still found and shown by their role; `None` in files written
    /// before it was kept: the name's slug then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_slug: Option<String>,
    /// Set when `huddle run` made the group, and again whenever a headless run uses it: a
    /// headless leftover that `huddle runs prune` removes once it is old enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless_at: Option<DateTime<Utc>>,
    /// Limits of each run of the group (none by default).
    #[serde(default, skip_serializing_if = "RunBudget::is_empty")]
    pub budget: RunBudget,
    /// What members remember between team runs.
    #[serde(default, skip_serializing_if = "Memory::is_run")]
    pub memory: Memory,
    /// The longest its runs wait for a rate or usage limit (its preset's
    /// `rate_limit_wait_secs`), over config.yaml's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_wait_secs: Option<u64>,
    /// What its members get of their repository (`AGENTS.md`, skills) where the config says
    /// otherwise (a preset's `repo_context:`).
    #[serde(default, skip_serializing_if = "super::RepoContextSettings::is_empty")]
    pub repo_context: super::RepoContextSettings,
    /// The settings of the modes that have any (flattened: `relay`, `flow_entry`, `pipeline`,
    /// `dispatch`, `team_limits`).
    #[serde(flatten)]
    pub settings: ModeSettings,
    /// Where the current or last run of its mode is (flattened: `reflection`, `relay_state`,
    /// `pipeline_state`).
    #[serde(flatten)]
    pub state: ModeState,
    /// The team's sandbox (its preset's), over config.yaml's.
    #[serde(default, skip_serializing_if = "crate::sandbox::SandboxSettings::is_empty")]
    pub sandbox: crate::sandbox::SandboxSettings,
    /// The team's hooks (its preset's), added to config.yaml's.
    #[serde(default, skip_serializing_if = "crate::hooks::Hooks::is_empty")]
    pub hooks: crate::hooks::Hooks,
}

pub fn default_max_iterations() -> u32 {
    DEFAULT_MAX_ITERATIONS
}

pub fn default_worker_timeout_secs() -> u64 {
    600
}

impl Group {
    /// A group with defaults for every optional field.
    pub fn new(name: impl Into<String>, kind: GroupKind) -> Self {
        Group {
            id: new_id(),
            name: name.into(),
            description: None,
            emoji: None,
            kind,
            sort_order: 0,
            mode: Mode::default(),
            orchestrator_prompt: None,
            shared_context: None,
            routing_context: None,
            repo: None,
            max_iterations: default_max_iterations(),
            worker_timeout_secs: default_worker_timeout_secs(),
            evaluator_id: None,
            evaluator_kept: None,
            legacy_evaluator_name: None,
            source_preset: None,
            usage: Usage::default(),
            cost: Cost::default(),
            pending_messages: Vec::new(),
            worktrees: WorktreeStrategy::Shared,
            member_slug: None,
            headless_at: None,
            budget: RunBudget::default(),
            memory: Memory::Run,
            rate_limit_wait_secs: None,
            repo_context: super::RepoContextSettings::default(),
            settings: ModeSettings::default(),
            state: ModeState::default(),
            sandbox: Default::default(),
            hooks: Default::default(),
        }
    }

    pub fn is_team(&self) -> bool {
        self.kind == GroupKind::Team
    }

    /// The prefix of its members' names (`<slug>-<role>`): the one they were made with, also
    /// after a rename.
    pub fn members_slug(&self) -> String {
        self.member_slug
            .clone()
            .unwrap_or_else(|| crate::naming::team_slug(&self.name))
    }
}

/// One LLM conversation. Its messages live in `sessions/<id>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: SessionId,
    /// Unique in the organization.
    pub name: String,
    #[serde(default)]
    pub group_id: GroupId,
    #[serde(default)]
    pub role: Role,
    /// A model slug, `<provider>/<model>`.
    #[serde(default)]
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<PathBuf>,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub order: i64,
    #[serde(default = "Utc::now")]
    pub created_at: DateTime<Utc>,
    /// Marks a member of a team: reconciliation keeps such sessions together even when their
    /// group is gone, whatever their role.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub team: bool,
    /// Human-facing name and role from a Squad roster, when it differs from `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The member's role as its team states it (`Lead`, `Tester`), unlike `role`, which is its
    /// part in the run. Kept so a team saved as a preset gets its roster back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_role: Option<String>,
    #[serde(default)]
    pub usage: Usage,
    /// What the session's turns cost, rolled up.
    #[serde(default, skip_serializing_if = "Cost::is_zero")]
    pub cost: Cost,
    /// The MCP servers whose tools this session may call (config.yaml `mcp_servers:` names).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Tool rounds per turn; `None` = config.yaml's `max_tool_rounds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_rounds: Option<u32>,
    /// The CLI agent's own conversation (provider and session/thread id) from the last turn,
    /// resumed by the next turn on that provider instead of re-sending the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session: Option<AgentSession>,
    /// The git worktree the session works in (see [`Session::working_dir`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<Worktree>,
    /// Set when `huddle run` made the session for a one-shot question: a headless leftover
    /// (see [`Group::headless_at`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless_at: Option<DateTime<Utc>>,
    /// Notes the user left for this member's next turn (`@member text`): given to it with its
    /// next prompt, then gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_notes: Vec<String>,
    /// Mode `flow`: where this member passes work (handoff, router, advisors), by session id.
    #[serde(default, skip_serializing_if = "FlowLinks::is_empty")]
    pub flow: FlowLinks,
    /// The name a team member goes by in its team's prompts and tools (its preset name's slug:
    /// `log-analyzer`), kept when its session name had to be made unique (`…-log-analyzer-2`)
    /// or is renamed; `None` for sessions made before it was kept, or added to a team later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
    /// Its reflection in progress, or interrupted (resumable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflection: Option<super::OpenReflection>,
    /// A model slug that takes a turn over when the session's own model meets a rate or usage
    /// limit (instead of waiting for it to reset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_model: Option<String>,
    /// The member's own sandbox (its preset's), over its team's.
    #[serde(default, skip_serializing_if = "crate::sandbox::SandboxSettings::is_empty")]
    pub sandbox: crate::sandbox::SandboxSettings,
    /// The member's own hooks (its preset's), added to its team's.
    #[serde(default, skip_serializing_if = "crate::hooks::Hooks::is_empty")]
    pub hooks: crate::hooks::Hooks,
}

impl Session {
    pub fn new(name: impl Into<String>, group_id: impl Into<String>, model: impl Into<String>) -> Self {
        Session {
            id: new_id(),
            name: name.into(),
            group_id: group_id.into(),
            role: Role::Worker,
            model: model.into(),
            system_prompt: None,
            repo: None,
            pinned: false,
            order: 0,
            created_at: Utc::now(),
            team: false,
            display_name: None,
            member_role: None,
            usage: Usage::default(),
            cost: Cost::default(),
            tools: Vec::new(),
            max_tool_rounds: None,
            agent_session: None,
            worktree: None,
            headless_at: None,
            pending_notes: Vec::new(),
            flow: FlowLinks::default(),
            handle: None,
            reflection: None,
            fallback_model: None,
            sandbox: Default::default(),
            hooks: Default::default(),
        }
    }

    /// True for sessions that only make sense inside their team.
    pub fn is_team_member(&self) -> bool {
        self.team || matches!(self.role, Role::Orchestrator | Role::Evaluator)
    }
}

/// Each member's handle (the name it goes by in its team's prompts, tools and settings), by
/// session id, for a team's sessions whose names carry the prefix `slug`: the one kept on its session when the team was made,
/// else its session name less the team's prefix; a kept handle another member also has (an edited
/// file) gives way to the names.
pub fn member_handles(sessions: &[&Session], slug: &str) -> Vec<(String, String)> {
    sessions
        .iter()
        .map(|s| s.id.clone())
        .zip(handles_in_order(sessions, slug))
        .collect()
}

/// [`member_handles`] without the ids: each session's handle, in the order of `sessions`.
pub fn handles_in_order(sessions: &[&Session], slug: &str) -> Vec<String> {
    let kept: Vec<Option<String>> = sessions
        .iter()
        .map(|s| {
            s.handle
                .as_deref()
                .map(crate::naming::slug)
                .filter(|h| !h.is_empty())
        })
        .collect();
    let mut uses: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for h in kept.iter().flatten() {
        *uses.entry(h.as_str()).or_default() += 1;
    }
    sessions
        .iter()
        .zip(&kept)
        .map(|(s, h)| match h {
            Some(h) if uses.get(h.as_str()) == Some(&1) => h.clone(),
            _ => crate::naming::worker_handle(&s.name, slug),
        })
        .collect()
}

impl Organization {
    pub fn group(&self, id: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.id == id)
    }

    pub fn group_mut(&mut self, id: &str) -> Option<&mut Group> {
        self.groups.iter_mut().find(|g| g.id == id)
    }

    pub fn group_by_name(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name.eq_ignore_ascii_case(name))
    }

    pub fn session(&self, id: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.id == id)
    }

    pub fn session_mut(&mut self, id: &str) -> Option<&mut Session> {
        self.sessions.iter_mut().find(|s| s.id == id)
    }

    pub fn session_by_name(&self, name: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.name == name)
    }

    /// The sessions of a group, in their `order`.
    pub fn sessions_in(&self, group_id: &str) -> Vec<&Session> {
        let mut list: Vec<&Session> = self.sessions.iter().filter(|s| s.group_id == group_id).collect();
        list.sort_by_key(|s| s.order);
        list
    }

    /// A group's evaluator: the session its `evaluator_id` names (if it is in the group), else
    /// its first session with the evaluator role. The one rule the engine, the UI and the
    /// application layer share.
    pub fn evaluator_of(&self, group_id: &str) -> Option<&Session> {
        let group = self.group(group_id)?;
        let named = group
            .evaluator_id
            .as_deref()
            .and_then(|id| self.session(id))
            .filter(|s| s.group_id == group_id);
        named.or_else(|| {
            self.sessions_in(group_id)
                .into_iter()
                .find(|s| s.role == super::Role::Evaluator)
        })
    }

    pub fn default_group(&self) -> Option<&Group> {
        self.groups.iter().find(|g| g.kind == GroupKind::Default)
    }

    /// [`member_handles`] of a group's sessions, by session id.
    pub fn member_handles(&self, group_id: &str) -> Vec<(SessionId, String)> {
        let slug = self.group(group_id).map(Group::members_slug).unwrap_or_default();
        member_handles(&self.sessions_in(group_id), &slug)
    }

    /// `base`, or `base-2`, `base-3`, ... : the first name no session has yet.
    pub fn unique_session_name(&self, base: &str) -> String {
        let taken = |n: &str| self.sessions.iter().any(|s| s.name == n);
        if !taken(base) {
            return base.to_string();
        }
        (2..)
            .map(|k| format!("{base}-{k}"))
            .find(|n| !taken(n))
            .unwrap_or_else(|| format!("{base}-{}", new_id()))
    }

    /// The first group name not yet used, ignoring case.
    pub fn unique_group_name(&self, base: &str) -> String {
        let taken = |n: &str| self.groups.iter().any(|g| g.name.eq_ignore_ascii_case(n));
        if !taken(base) {
            return base.to_string();
        }
        (2..)
            .map(|k| format!("{base} ({k})"))
            .find(|n| !taken(n))
            .unwrap_or_else(|| format!("{base} ({})", new_id()))
    }

    pub fn next_group_sort_order(&self) -> i64 {
        self.groups
            .iter()
            .map(|g| g.sort_order)
            .max()
            .map_or(0, |m| m.saturating_add(1))
    }

    pub fn next_session_order(&self, group_id: &str) -> i64 {
        self.sessions
            .iter()
            .filter(|s| s.group_id == group_id)
            .map(|s| s.order)
            .max()
            .map_or(0, |m| m.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{ApprovalMode, ConversationState, PipelineSpec, RelayRecord, RelaySettings};

    /// A team group as huddle wrote it while its per-mode settings and state were fields of their
    /// own (`relay`, `relay_state`, `flow_entry`, `pipeline`, `pipeline_state`, `dispatch`,
    /// `team_limits`, `reflection`), every one of them set.
    fn old_group() -> serde_json::Value {
        let reflection = crate::model::ReflectionCycle {
            goal: "ship it".into(),
            iteration: 2,
            completed_iterations: 1,
            active: true,
            ..Default::default()
        };
        json!({
            "id": "g1",
            "name": "Desk",
            "kind": "team",
            "sort_order": 3,
            "mode": "pipeline",
            "max_iterations": 7,
            "worker_timeout_secs": 90,
            "reflection": serde_json::to_value(&reflection).unwrap(),
            "usage": { "input_tokens": 10, "output_tokens": 20 },
            "member_slug": "desk",
            "relay": {
                "driver": "a",
                "counterpart": "b",
                "approval": "semi_auto",
                "max_turns": 8,
                "max_failures": 3,
                "max_history_turns": 20,
                "max_history_chars": 20000,
                "max_hops": 4
            },
            "relay_state": {
                "objective": "buy",
                "state": "waiting_local",
                "turn": 2,
                "max_turns": 8,
                "approval": "manual",
                "trace_id": "t1",
                "consecutive_failures": 0,
                "taken_over": false
            },
            "memory": "conversation",
            "flow_entry": "s1",
            "pipeline": {
                "stages": [
                    { "phase": "intake", "member": "s1", "next": "review" },
                    { "phase": "review", "member": "s2", "can_return_to": ["intake"] }
                ],
                "supervisor": "s2",
                "supervise": "every_turn"
            },
            "pipeline_state": {
                "phase": "review",
                "active": "s2",
                "parked": false,
                "handoff_count": 1
            },
            "dispatch": { "max_concurrent_agents": 3, "sub_agents": ["a"] },
            "team_limits": { "member_max_turns": 4 }
        })
    }

    #[test]
    fn a_group_written_before_mode_settings_reads_into_them_and_writes_the_same_keys() {
        let old = old_group();
        let group: Group = serde_json::from_value(old.clone()).unwrap();
        let relay = group.settings.relay.as_ref().expect("relay settings");
        assert_eq!(
            (relay.driver.as_str(), relay.approval),
            ("a", ApprovalMode::SemiAuto)
        );
        assert_eq!(group.settings.flow.entry.as_deref(), Some("s1"));
        let pipeline: &PipelineSpec = group.settings.pipeline.as_ref().expect("pipeline");
        assert_eq!(pipeline.stages[1].can_return_to, ["intake"]);
        assert_eq!(group.settings.dispatch.max_concurrent_agents, Some(3));
        assert_eq!(group.settings.team.member_max_turns, Some(4));
        let record: &RelayRecord = group.state.relay.as_ref().expect("relay state");
        assert_eq!(record.turn, 2);
        let conversation: &ConversationState = group.state.pipeline.as_ref().expect("pipeline state");
        assert_eq!(conversation.active.as_deref(), Some("s2"));
        let cycle = group.state.orchestrator_reflect.as_ref().expect("reflection");
        assert_eq!((cycle.goal.as_str(), cycle.iteration), ("ship it", 2));
        assert_eq!((group.max_iterations, group.memory), (7, Memory::Conversation));

        let again = serde_json::to_value(&group).unwrap();
        let keys =
            |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
        assert_eq!(
            keys(&again),
            keys(&old),
            "the same field names, no more, no fewer"
        );
        assert_eq!(again, old, "every value written back as it was read");
    }

    #[test]
    fn a_group_without_mode_settings_writes_none_of_their_keys() {
        let group = Group::new("Plain", GroupKind::Team);
        let written = serde_json::to_value(&group).unwrap();
        for key in [
            "relay",
            "relay_state",
            "flow_entry",
            "pipeline",
            "pipeline_state",
            "dispatch",
            "team_limits",
            "reflection",
        ] {
            assert!(written.get(key).is_none(), "{key} written: {written}");
        }
        let back: Group = serde_json::from_value(written).unwrap();
        assert_eq!(back, group);
        let relay = RelaySettings::new("a", "b");
        let mut group = group;
        group.settings.relay = Some(relay.clone());
        let written = serde_json::to_value(&group).unwrap();
        assert_eq!(written["relay"], serde_json::to_value(&relay).unwrap());
    }

    fn session(name: &str, handle: Option<&str>) -> Session {
        let mut s = Session::new(name, "g", "sim/x");
        s.handle = handle.map(str::to_string);
        s
    }

    #[test]
    fn members_go_by_their_kept_handles_else_by_their_names_less_the_team_prefix() {
        let kept = session("incident-log-analyzer-2", Some("log-analyzer"));
        let added_later = session("incident-scribe", None);
        let (a, b) = (session("x-one", Some("dup")), session("x-two", Some("DUP")));
        let sessions = [&kept, &added_later, &a, &b];
        let handles: Vec<String> = member_handles(&sessions, "incident")
            .into_iter()
            .map(|(_, h)| h)
            .collect();
        assert_eq!(
            handles,
            ["log-analyzer", "scribe", "x-one", "x-two"],
            "a handle two members claim gives way to their names"
        );
    }
}
