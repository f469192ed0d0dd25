//! Mode `dispatch` (a tool-using orchestrator that dispatches sub-agents and gets their results
//! pushed back) and mode `team` (members deliberate through broadcasts, a supervisor decides):
//! their limits as presets, groups and config.yaml spell them, and the executions a run
//! records. Their tool names and the words huddle puts into conversations are the protocol's
//! (`engine::protocol::dispatch`, `engine::protocol::team_talk`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub const DEFAULT_MAX_CONCURRENT_AGENTS: u32 = 5;
pub const DEFAULT_AGENT_TIMEOUT_SECS: u64 = 300;
pub const DEFAULT_MAX_BUDGET_SECS: u64 = 600;
pub const DEFAULT_MEMBER_MAX_TURNS: u32 = 6;
pub const DEFAULT_SUPERVISOR_MAX_TURNS: u32 = 12;
/// The most of anything countable here (sub-agents at once, turns).
pub const LIMIT_MAX: u32 = 1000;

/// Mode `dispatch`'s guardrails as written (preset keys, a group's `dispatch`, config.yaml's
/// `dispatch:`); `None` falls back to the next level, then to the defaults above.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_agents: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_timeout_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_budget_secs: Option<u64>,
    /// The members the orchestrator may dispatch (their preset names); empty is all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_agents: Vec<String>,
}

/// Mode `team`'s bounds as written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamLimits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_max_turns: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_max_turns: Option<u32>,
}

/// A limit that is out of range, named by its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {got} is out of range (1 to {max})")]
pub struct LimitError {
    pub key: &'static str,
    pub got: u64,
    pub max: u64,
}

fn check(key: &'static str, value: Option<u64>, max: u64) -> Result<(), LimitError> {
    match value {
        Some(got) if got == 0 || got > max => Err(LimitError { key, got, max }),
        _ => Ok(()),
    }
}

/// A week: the longest time limit huddle accepts (deadlines stay representable).
const SECS_MAX: u64 = 7 * 24 * 3600;

impl DispatchLimits {
    pub fn is_empty(&self) -> bool {
        *self == DispatchLimits::default()
    }

    /// Each limit of `self`, or `fallback`'s where `self` sets none.
    pub fn or(&self, fallback: &DispatchLimits) -> DispatchLimits {
        DispatchLimits {
            max_concurrent_agents: self.max_concurrent_agents.or(fallback.max_concurrent_agents),
            agent_timeout_secs: self.agent_timeout_secs.or(fallback.agent_timeout_secs),
            max_budget_secs: self.max_budget_secs.or(fallback.max_budget_secs),
            sub_agents: if self.sub_agents.is_empty() {
                fallback.sub_agents.clone()
            } else {
                self.sub_agents.clone()
            },
        }
    }

    pub fn validate(&self) -> Result<(), LimitError> {
        check(
            "max_concurrent_agents",
            self.max_concurrent_agents.map(u64::from),
            u64::from(LIMIT_MAX),
        )?;
        check("agent_timeout_secs", self.agent_timeout_secs, SECS_MAX)?;
        check("max_budget_secs", self.max_budget_secs, SECS_MAX)
    }

    pub fn max_concurrent(&self) -> usize {
        self.max_concurrent_agents
            .unwrap_or(DEFAULT_MAX_CONCURRENT_AGENTS)
            .clamp(1, LIMIT_MAX) as usize
    }

    pub fn agent_timeout(&self) -> Duration {
        Duration::from_secs(
            self.agent_timeout_secs
                .unwrap_or(DEFAULT_AGENT_TIMEOUT_SECS)
                .clamp(1, SECS_MAX),
        )
    }

    pub fn max_budget(&self) -> Duration {
        Duration::from_secs(
            self.max_budget_secs
                .unwrap_or(DEFAULT_MAX_BUDGET_SECS)
                .clamp(1, SECS_MAX),
        )
    }

    /// The guardrails in one line (`presets show`), defaults filled in.
    pub fn summary(&self) -> String {
        let allowed = if self.sub_agents.is_empty() {
            "all workers".to_string()
        } else {
            self.sub_agents.join(", ")
        };
        format!(
            "dispatch: {} sub-agents at once · {}s each · {}s to conclude · may dispatch {allowed}",
            self.max_concurrent(),
            self.agent_timeout().as_secs(),
            self.max_budget().as_secs()
        )
    }

    /// True when the allow-list lets the orchestrator dispatch `name` (ignoring case).
    pub fn allows(&self, name: &str) -> bool {
        self.sub_agents.is_empty() || self.sub_agents.iter().any(|a| a.eq_ignore_ascii_case(name))
    }
}

impl TeamLimits {
    pub fn is_empty(&self) -> bool {
        *self == TeamLimits::default()
    }

    pub fn validate(&self) -> Result<(), LimitError> {
        check(
            "member_max_turns",
            self.member_max_turns.map(u64::from),
            u64::from(LIMIT_MAX),
        )?;
        check(
            "supervisor_max_turns",
            self.supervisor_max_turns.map(u64::from),
            u64::from(LIMIT_MAX),
        )
    }

    /// The limits in one line (`presets show`), defaults filled in.
    pub fn summary(&self) -> String {
        format!(
            "team: the orchestrator supervises · {} turns per member · {} supervisor turns",
            self.member_turns(),
            self.supervisor_turns()
        )
    }

    pub fn member_turns(&self) -> u32 {
        self.member_max_turns
            .unwrap_or(DEFAULT_MEMBER_MAX_TURNS)
            .clamp(1, LIMIT_MAX)
    }

    pub fn supervisor_turns(&self) -> u32 {
        self.supervisor_max_turns
            .unwrap_or(DEFAULT_SUPERVISOR_MAX_TURNS)
            .clamp(1, LIMIT_MAX)
    }
}

/// What an execution is, in the trace tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionKind {
    /// The dispatching orchestrator's whole part of a run (the root of a dispatch run).
    Orchestrator,
    /// A task the orchestrator dispatched.
    SubAgent,
    /// A follow-up question to a finished sub-agent (`ask_agent`).
    Clarification,
    /// A team's supervisor: the root of a team run.
    Supervisor,
    /// One turn of a supervisor (a cycle's decision).
    SupervisorTurn,
    /// One turn of a team member.
    MemberTurn,
}

/// Where an execution is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Waiting for a free place (the concurrency cap) or for its member.
    Queued,
    Running,
    Completed,
    Failed,
    Cancelled,
    TimedOut,
    /// Never finished: the process ended under it (read back from a run file).
    Interrupted,
}

impl ExecutionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::Queued => "queued",
            ExecutionStatus::Running => "running",
            ExecutionStatus::Completed => "completed",
            ExecutionStatus::Failed => "failed",
            ExecutionStatus::Cancelled => "cancelled",
            ExecutionStatus::TimedOut => "timed_out",
            ExecutionStatus::Interrupted => "interrupted",
        }
    }

    pub fn is_finished(self) -> bool {
        !matches!(self, ExecutionStatus::Queued | ExecutionStatus::Running)
    }
}

impl std::fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A broadcast's type (seed 000: the supervisor tells failures from updates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BroadcastKind {
    Update,
    Failure,
}

/// Mode `team`: a deliberation in progress as its open run keeps it, after each turn that
/// ended: a resumed run continues from it (members by session id).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeliberationState {
    /// The broadcasts so far, in order.
    pub log: Vec<LoggedBroadcast>,
    pub members: Vec<SeatRecord>,
    pub supervisor: SeatRecord,
    /// Where the current cycle starts in the log.
    pub cycle_from: usize,
}

/// One broadcast of a deliberation's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedBroadcast {
    pub from: String,
    pub from_id: String,
    pub kind: BroadcastKind,
    pub message: String,
    pub turn: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub supervisor: bool,
    pub at: chrono::DateTime<chrono::Utc>,
}

/// Where a member (or the supervisor) of a deliberation is; a turn that was running is kept as
/// it was before it started (the resumed run starts it again, from disk if it had finished).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeatRecord {
    pub session_id: String,
    pub turns: u32,
    pub seen: usize,
    pub place: SeatPlace,
    pub last_broadcast: Option<usize>,
    /// Tokens its context holds (an estimate).
    pub in_use: u64,
}

/// A seat's place between turns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeatPlace {
    /// Its first turn has not started.
    #[default]
    Ready,
    /// It broadcast and waits for something new.
    Waiting,
    /// Its last turn ended without a broadcast: the next one reminds it.
    Reminder,
    /// It left the team.
    Left,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_fall_back_level_by_level_and_to_the_defaults() {
        let preset = DispatchLimits {
            max_concurrent_agents: Some(2),
            ..DispatchLimits::default()
        };
        let config = DispatchLimits {
            max_concurrent_agents: Some(9),
            agent_timeout_secs: Some(30),
            ..DispatchLimits::default()
        };
        let l = preset.or(&config);
        assert_eq!(l.max_concurrent(), 2);
        assert_eq!(l.agent_timeout(), Duration::from_secs(30));
        assert_eq!(l.max_budget(), Duration::from_secs(DEFAULT_MAX_BUDGET_SECS));
        assert!(l.allows("anyone"));
        let only = DispatchLimits {
            sub_agents: vec!["Logs".into()],
            ..DispatchLimits::default()
        };
        assert!(only.allows("logs"));
        assert!(!only.allows("metrics"));
        assert_eq!(TeamLimits::default().member_turns(), DEFAULT_MEMBER_MAX_TURNS);
    }

    #[test]
    fn zero_and_huge_limits_are_refused_naming_the_key() {
        let zero = DispatchLimits {
            max_concurrent_agents: Some(0),
            ..DispatchLimits::default()
        };
        assert_eq!(
            zero.validate().unwrap_err().to_string(),
            "max_concurrent_agents: 0 is out of range (1 to 1000)"
        );
        let long = DispatchLimits {
            agent_timeout_secs: Some(SECS_MAX + 1),
            ..DispatchLimits::default()
        };
        assert!(
            long.validate()
                .unwrap_err()
                .to_string()
                .starts_with("agent_timeout_secs:")
        );
        let turns = TeamLimits {
            supervisor_max_turns: Some(0),
            ..TeamLimits::default()
        };
        assert!(
            turns
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("supervisor_max_turns:")
        );
        assert!(DispatchLimits::default().validate().is_ok());
    }
}
