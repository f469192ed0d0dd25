//! The domain model: plain serde types persisted as JSON (organization, transcripts) and YAML
//! (presets). No I/O lives here.

pub mod agent;
mod budget;
pub mod context;
pub mod cost;
pub mod dispatch;
mod enums;
pub mod flow;
pub mod forecast;
pub mod limits;
mod message;
pub mod modes;
mod organization;
pub mod pipeline;
mod preset;
pub mod reconcile;
mod reflection;
pub mod relay;
mod repo_context;
mod resume;
pub mod timestamp;
mod tool;
mod worktree;

pub use agent::{AgentFormat, AgentKind, AgentSession};
pub use budget::{BudgetError, BudgetExceeded, BudgetLimit, RunBudget, micro_usd, usd_text};
pub use cost::{Cost, MAX_REPORTED_TURN_USD, Price, PriceBook, Rate, ReportedCost};
pub use dispatch::{
    BroadcastKind, DeliberationState, DispatchLimits, ExecutionKind, ExecutionStatus, LoggedBroadcast,
    SeatPlace, SeatRecord, TeamLimits,
};
pub use enums::{GroupKind, Memory, MessageRole, ProviderKind, Role, Tier, WorktreeStrategy};
pub use flow::{FlowLinks, FlowSettings, RouterSpec, check_flow};
pub use limits::{DEFAULT_MAX_ITERATIONS, MAX_ITERATIONS, MaxIterationsError};
pub use message::{Compacted, Message, Usage};
pub use modes::{Counts, Mode, ModeSettings, ModeSpec, ModeState, PresetProblem, spec};
pub use organization::{
    Group, GroupId, KeptEvaluator, Organization, Session, SessionId, UiPrefs, default_max_iterations,
    default_worker_timeout_secs, handles_in_order, member_handles,
};
pub use pipeline::{
    ConversationState, PhaseTransition, PipelineSpec, PipelineStage, RoutingRule, Supervise, check_pipeline,
};
pub use preset::{Preset, PresetAgent, PresetWorker};
pub use reflection::{CycleOutcome, EARLIER_RATIONALE_CHARS, Evaluation, ReflectionCycle, Trend};
pub use relay::{ApprovalMode, DraftAnswer, RelayMeta, RelayPhase, RelayRecord, RelaySettings, SentAs};
pub use repo_context::RepoContextSettings;
pub use resume::{Interrupted, OpenReflection, OpenRun};
pub use tool::{ToolCall, ToolChoice, ToolResultInfo, ToolSpec, empty_object_schema};
pub use worktree::{Worktree, is_plain_relative};
