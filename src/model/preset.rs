//! A team definition (SPEC section 7). The YAML shape is strict: unknown keys are errors.

use serde::{Deserialize, Serialize};

use super::{Memory, Mode, RouterSpec, RunBudget, Tier, WorktreeStrategy};
use crate::hooks::Hooks;
use crate::sandbox::SandboxSettings;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_timeout_secs: Option<u64>,
    /// A run's time limit in seconds (the group's `budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_secs: Option<u64>,
    /// The tokens a run may use (the group's `budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orchestrator: Option<PresetAgent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator: Option<PresetAgent>,
    #[serde(default)]
    pub workers: Vec<PresetWorker>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_context: Option<String>,
    /// How the team's members share git worktrees (default `shared`: all in the repository).
    #[serde(default, skip_serializing_if = "WorktreeStrategy::is_shared")]
    pub worktrees: WorktreeStrategy,
    /// Mode `relay`: who drafts, who answers, how drafts are approved, the limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<super::RelaySettings>,
    /// What members remember between runs (default `run`: each run starts fresh).
    #[serde(default, skip_serializing_if = "Memory::is_run")]
    pub memory: Memory,
    /// What members get of their repository: `instructions` (its `AGENTS.md` / `CLAUDE.md`)
    /// and `skills`, each on unless set false here or in config.yaml.
    #[serde(default, skip_serializing_if = "super::RepoContextSettings::is_empty")]
    pub repo_context: super::RepoContextSettings,
    /// Mode `flow`: the worker the prompt goes to first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// Mode `pipeline`: the stages (phase, member, next, can_return_to), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<super::PipelineStage>,
    /// Mode `pipeline`: the worker that watches every exchange and may redirect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<String>,
    /// Mode `pipeline`: when the supervisor looks (`at_handoff`, default, or `every_turn`).
    #[serde(default, skip_serializing_if = "super::Supervise::is_default")]
    pub supervise: super::Supervise,
    /// Mode `pipeline`: routing rules for a message no member holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<super::RoutingRule>,
    /// Mode `dispatch`: sub-agents running at once (more wait in a queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_agents: Option<u32>,
    /// Mode `dispatch`: each sub-agent's time limit in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_timeout_secs: Option<u64>,
    /// Mode `dispatch`: the orchestrator's time in seconds before it must conclude.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_budget_secs: Option<u64>,
    /// Mode `dispatch`: the workers the orchestrator may dispatch (default: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_agents: Vec<String>,
    /// Mode `team`: turns each member may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_max_turns: Option<u32>,
    /// Mode `team`: turns the supervisor may take (bounds the whole team).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_max_turns: Option<u32>,
    /// The longest a run waits for a rate or usage limit to reset (seconds; 0: never), over
    /// config.yaml's `rate_limit_wait_secs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_wait_secs: Option<u64>,
    /// The sandbox of the team's processes (CLI agents, hooks), over config.yaml's.
    #[serde(default, skip_serializing_if = "SandboxSettings::is_empty")]
    pub sandbox: SandboxSettings,
    /// The team's hooks, added to config.yaml's (never from a repository's team folder).
    #[serde(default, skip_serializing_if = "Hooks::is_empty")]
    pub hooks: Hooks,

    /// Where the preset was found; set by the loader, never read from YAML.
    #[serde(skip)]
    pub tier: Option<Tier>,
    /// The file or folder it was read from.
    #[serde(skip)]
    pub source: Option<String>,
    /// Problems found while loading (model fallbacks, capped files, ...), shown with it.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Preset {
    /// The `dispatch` guardrail keys as a group's.
    pub fn dispatch_limits(&self) -> super::DispatchLimits {
        super::DispatchLimits {
            max_concurrent_agents: self.max_concurrent_agents,
            agent_timeout_secs: self.agent_timeout_secs,
            max_budget_secs: self.max_budget_secs,
            sub_agents: self.sub_agents.clone(),
        }
    }

    /// The `team` turn limits as a group's.
    pub fn team_limits(&self) -> super::TeamLimits {
        super::TeamLimits {
            member_max_turns: self.member_max_turns,
            supervisor_max_turns: self.supervisor_max_turns,
        }
    }

    /// Sets the `dispatch` and `team` keys from a group's limits (saving a team as a preset).
    pub fn set_limits(&mut self, dispatch: &super::DispatchLimits, team: super::TeamLimits) {
        self.max_concurrent_agents = dispatch.max_concurrent_agents;
        self.agent_timeout_secs = dispatch.agent_timeout_secs;
        self.max_budget_secs = dispatch.max_budget_secs;
        self.sub_agents = dispatch.sub_agents.clone();
        self.member_max_turns = team.member_max_turns;
        self.supervisor_max_turns = team.supervisor_max_turns;
    }

    /// The `pipeline` keys as a spec (members by preset name).
    pub fn pipeline_spec(&self) -> super::PipelineSpec {
        super::PipelineSpec {
            stages: self.stages.clone(),
            supervisor: self.supervisor.clone(),
            supervise: self.supervise,
            rules: self.rules.clone(),
        }
    }

    /// Sets the `pipeline` keys from a spec.
    pub fn set_pipeline(&mut self, spec: super::PipelineSpec) {
        self.stages = spec.stages;
        self.supervisor = spec.supervisor;
        self.supervise = spec.supervise;
        self.rules = spec.rules;
    }

    /// The team-level budget keys as a group's budget.
    pub fn budget(&self) -> RunBudget {
        RunBudget {
            max_duration_secs: self.max_duration_secs,
            token_budget: self.token_budget,
        }
    }
}

/// The orchestrator or evaluator of a preset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetAgent {
    /// Who leads, when the team names someone (a Squad team's coordinator, `Lead`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// System prompt for this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The MCP servers (config.yaml `mcp_servers:` names) this agent may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Tool rounds per turn (default: config.yaml's `max_tool_rounds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_rounds: Option<u32>,
    /// A model that takes a turn over when this agent's meets a rate or usage limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_model: Option<String>,
    /// This member's sandbox, over the team's.
    #[serde(default, skip_serializing_if = "SandboxSettings::is_empty")]
    pub sandbox: SandboxSettings,
    /// This member's hooks, added to the team's.
    #[serde(default, skip_serializing_if = "Hooks::is_empty")]
    pub hooks: Hooks,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PresetWorker {
    /// The slug used in `@worker:<name>` lines.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The MCP servers (config.yaml `mcp_servers:` names) this agent may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Tool rounds per turn (default: config.yaml's `max_tool_rounds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_rounds: Option<u32>,
    /// This member's sandbox, over the team's.
    #[serde(default, skip_serializing_if = "SandboxSettings::is_empty")]
    pub sandbox: SandboxSettings,
    /// This member's hooks, added to the team's.
    #[serde(default, skip_serializing_if = "Hooks::is_empty")]
    pub hooks: Hooks,
    /// Mode `flow`: the worker this one's answer goes to (its answer alone is that one's input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<String>,
    /// Mode `flow`: this worker ends by passing the request to one of these with `handoff_to`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<RouterSpec>,
    /// Mode `flow`: workers run in parallel on the same input before this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advisors: Vec<String>,
    /// A model that takes a turn over when this worker's meets a rate or usage limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_model: Option<String>,
}
