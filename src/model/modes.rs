//! The modes ([`Mode`]) and their table: everything the rest of the program asks of a mode, one
//! row per mode ([`spec`]), and the group's per-mode settings and run state ([`ModeSettings`],
//! [`ModeState`]), one field per mode that has any, named after it.
//!
//! A question about a mode that is not a genuine behaviour of that mode's own files (its engine
//! file, its protocol, its view) is a field here: no `match` over modes elsewhere falls back with
//! `_ =>`. The true list of what a new mode touches is in `engine/modes/mod.rs`.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::enums::{UnknownVariant, string_enum};
use super::flow::FlowSettings;
use super::{
    ConversationState, DispatchLimits, PipelineSpec, Preset, ReflectionCycle, RelayRecord, RelaySettings,
    TeamLimits,
};

string_enum!(
    /// How a team group runs one user prompt (SPEC section 2).
    #[derive(Default)]
    Mode, "mode" {
        #[default]
        Broadcast => "broadcast",
        Sequential => "sequential",
        Orchestrator => "orchestrator",
        OrchestratorReflect => "orchestrator_reflect",
        /// A driver session talks to a counterpart on the user's behalf (see `model::relay`).
        Relay => "relay",
        /// The prompt enters at the `entry:` member and follows handoffs, routes and advisors.
        Flow => "flow",
        /// Stages with phases; the conversation moves along them by handoffs (`model::pipeline`).
        Pipeline => "pipeline",
        /// A tool-using orchestrator dispatches members as sub-agents; results come back by
        /// themselves (`model::dispatch`).
        Dispatch => "dispatch",
        /// Members deliberate through broadcasts; the supervisor (the orchestrator) decides.
        Team => "team",
    }
);

/// What a run's `max_iterations` (its `cycle_started` event) counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counts {
    Iterations,
    Turns,
}

impl Counts {
    /// The plural word (`at most 8 turns`).
    pub fn word(self) -> &'static str {
        match self {
            Counts::Iterations => "iterations",
            Counts::Turns => "turns",
        }
    }
}

/// What is wrong with a preset's mode settings, and where in its file: the first of `at` (a
/// text to find and which occurrence of it, 0-based) found there, else its `mode:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresetProblem {
    pub message: String,
    pub at: Vec<(String, usize)>,
}

/// One mode's row.
#[derive(Debug)]
pub struct ModeSpec {
    pub mode: Mode,
    /// The short form the sidebar shows after a team's name (`orch`, `reflect`).
    pub label: &'static str,
    /// The mode picker's line.
    pub description: &'static str,
    /// What a message sent to the team while it runs reaches (`queued for …`).
    pub queued_target: &'static str,
    /// Led by an orchestrator session (in `team` it is the supervisor): a preset needs an
    /// `orchestrator:` entry, a team its orchestrator and workers, and the orchestrator's prompt
    /// is the team's planning prompt; it does not answer alongside the workers. In the other
    /// modes an orchestrator is an ordinary participant.
    pub has_orchestrator: bool,
    /// An evaluator scores its cycles (a preset's `evaluator:`, the evaluator switch).
    pub has_evaluator: bool,
    /// What a run's `max_iterations` counts, in words.
    pub counts: Counts,
    /// The run repeats iterations up to the team's `max_iterations` (the team header shows the
    /// limit, `presets show` its default).
    pub iterates: bool,
    /// The cycle panel's worker rows come from turns, not assignments.
    pub rows_from_turns: bool,
    /// No worker results come: a member's row is done when its turn ends.
    pub row_done_with_turn: bool,
    /// The result is every member's answer under its heading, shown side by side in columns.
    pub answers_side_by_side: bool,
    /// The `memory:` setting applies (a pipeline's members always keep their conversation).
    pub uses_memory: bool,
    /// A run's time limit when neither the run, the team nor config.yaml sets one.
    pub default_max_duration_secs: Option<u64>,
    /// A team's `max_iterations` when neither its preset nor the user set one (a team made in
    /// this mode, or switched to it while it still had the mode it left's default).
    pub default_max_iterations: u32,
    /// Only workers take part (`its workers`): a preset's orchestrator and evaluator are
    /// ignored, with a warning saying who runs.
    pub only_workers: Option<&'static str>,
    /// The top-level preset keys only this mode reads (in another mode: a warning).
    pub preset_keys: &'static [&'static str],
    /// The keys of a preset's worker only this mode reads.
    pub worker_keys: &'static [&'static str],
    /// Preset keys that are an error in this mode, with the reason.
    pub refused_keys: &'static [(&'static str, &'static str)],
    /// Checks the preset's settings of this mode (its model file's rules).
    pub check_preset: fn(&Preset) -> Result<(), PresetProblem>,
    /// This mode's settings in one line (`presets show`), when it has any.
    pub settings_line: fn(&ModeSettings) -> Option<String>,
    /// What an interrupted run continues from when it is resumed, in words (the resume offer,
    /// the quit dialog, `huddle run`'s hint). Turns it finished are never asked again.
    pub resume: &'static str,
}

impl ModeSpec {
    /// True when `key` is a top-level preset key this mode reads (and no other does).
    pub fn reads_key(&self, key: &str) -> bool {
        self.preset_keys.contains(&key)
    }
}

fn no_check(_: &Preset) -> Result<(), PresetProblem> {
    Ok(())
}

fn no_settings(_: &ModeSettings) -> Option<String> {
    None
}

/// Defaults for a mode that asks nothing special: fields a row sets override these.
const BASE: ModeSpec = ModeSpec {
    mode: Mode::Broadcast,
    label: "",
    description: "",
    queued_target: "the team's next run",
    has_orchestrator: false,
    has_evaluator: false,
    counts: Counts::Iterations,
    iterates: false,
    rows_from_turns: false,
    row_done_with_turn: false,
    answers_side_by_side: false,
    uses_memory: true,
    default_max_duration_secs: None,
    default_max_iterations: super::DEFAULT_MAX_ITERATIONS,
    only_workers: None,
    preset_keys: &[],
    worker_keys: &[],
    refused_keys: &[],
    check_preset: no_check,
    settings_line: no_settings,
    resume: "with the members that had not answered",
};

const ORCHESTRATOR_PLAN: &str = "the orchestrator's next plan";

static BROADCAST: ModeSpec = ModeSpec {
    mode: Mode::Broadcast,
    label: "broadcast",
    description: "every session gets the prompt at once",
    rows_from_turns: true,
    answers_side_by_side: true,
    ..BASE
};

static SEQUENTIAL: ModeSpec = ModeSpec {
    mode: Mode::Sequential,
    label: "sequential",
    description: "sessions in order, each sees the earlier answers",
    rows_from_turns: true,
    resume: "at the member whose turn it was",
    ..BASE
};

static ORCHESTRATOR: ModeSpec = ModeSpec {
    mode: Mode::Orchestrator,
    label: "orch",
    description: "plan, dispatch to workers, synthesize (one pass)",
    queued_target: ORCHESTRATOR_PLAN,
    has_orchestrator: true,
    resume: "with the workers that had not answered, then the synthesis",
    ..BASE
};

static ORCHESTRATOR_REFLECT: ModeSpec = ModeSpec {
    mode: Mode::OrchestratorReflect,
    label: "reflect",
    description: "plan, dispatch, synthesize, evaluate; repeat until the goal is met",
    queued_target: ORCHESTRATOR_PLAN,
    has_orchestrator: true,
    has_evaluator: true,
    iterates: true,
    preset_keys: &["evaluator"],
    resume: "after its last completed iteration",
    ..BASE
};

static RELAY: ModeSpec = ModeSpec {
    mode: Mode::Relay,
    label: "relay",
    description: "a driver talks to a counterpart for you, each draft approved (needs relay: settings)",
    counts: Counts::Turns,
    // A relay talks to someone else's agent: it never runs unbounded.
    default_max_duration_secs: Some(super::relay::DEFAULT_MAX_DURATION_SECS),
    preset_keys: &["relay"],
    check_preset: super::relay::check_preset,
    resume: "at its state (a draft waiting for approval still waits)",
    settings_line: |s| s.relay.as_ref().map(RelaySettings::summary),
    ..BASE
};

static FLOW: ModeSpec = ModeSpec {
    mode: Mode::Flow,
    label: "flow",
    description: "enters at the entry member; handoffs, routers, advisors",
    rows_from_turns: true,
    only_workers: Some("its workers"),
    preset_keys: &["entry"],
    worker_keys: &["handoff", "router", "advisors"],
    check_preset: super::flow::check_preset,
    resume: "at the member that held it",
    ..BASE
};

static PIPELINE: ModeSpec = ModeSpec {
    mode: Mode::Pipeline,
    label: "pipeline",
    description: "stages with phases; members hand the conversation on",
    rows_from_turns: true,
    row_done_with_turn: true,
    uses_memory: false,
    only_workers: Some("its stages' workers"),
    preset_keys: &["stages", "supervisor", "supervise", "rules"],
    check_preset: super::pipeline::check_preset,
    resume: "at its phase",
    ..BASE
};

static DISPATCH: ModeSpec = ModeSpec {
    mode: Mode::Dispatch,
    label: "dispatch",
    description: "the orchestrator dispatches members as sub-agents with tools; results come back by themselves",
    queued_target: "the orchestrator, with the next sub-agent result",
    has_orchestrator: true,
    preset_keys: &[
        "max_concurrent_agents",
        "agent_timeout_secs",
        "max_budget_secs",
        "sub_agents",
    ],
    settings_line: |s| Some(s.dispatch.summary()),
    resume: "with the finished sub-agents' results; unfinished ones are dispatched again",
    // Only the orchestrator's calls that act count (a wait is given back), but an
    // investigation dispatches, follows up and concludes in more of them than a reflect cycle
    // iterates (review 28 item 13: a TUI-made dispatch team was cut off at 5); the built-in
    // Incident Investigation's.
    default_max_iterations: 12,
    ..BASE
};

static TEAM: ModeSpec = ModeSpec {
    mode: Mode::Team,
    label: "team",
    description: "members deliberate by broadcasts; the supervisor (orchestrator) decides",
    queued_target: "the supervisor's next turn",
    has_orchestrator: true,
    preset_keys: &["member_max_turns", "supervisor_max_turns"],
    refused_keys: &[(
        "supervisor",
        "in mode team the supervisor is the `orchestrator:` entry",
    )],
    settings_line: |s| Some(s.team.summary()),
    resume: "with its broadcast log; members whose turn was cut off take it again",
    ..BASE
};

/// The row of `mode`.
pub fn spec(mode: Mode) -> &'static ModeSpec {
    match mode {
        Mode::Broadcast => &BROADCAST,
        Mode::Sequential => &SEQUENTIAL,
        Mode::Orchestrator => &ORCHESTRATOR,
        Mode::OrchestratorReflect => &ORCHESTRATOR_REFLECT,
        Mode::Relay => &RELAY,
        Mode::Flow => &FLOW,
        Mode::Pipeline => &PIPELINE,
        Mode::Dispatch => &DISPATCH,
        Mode::Team => &TEAM,
    }
}

impl Mode {
    /// This mode's row of the table.
    pub fn spec(self) -> &'static ModeSpec {
        spec(self)
    }
}

/// The mode that reads the top-level preset key `key`, when it is one mode's own.
pub fn key_mode(key: &str) -> Option<Mode> {
    Mode::ALL.iter().copied().find(|m| spec(*m).reads_key(key))
}

/// The warning for `keys` (`a/b`) of mode `owner` set on a preset of `mode`.
pub fn ignored_keys(keys: &str, owner: Mode, mode: Mode) -> String {
    format!("{keys}: only used in mode {owner}; ignored in mode {mode}")
}

/// The modes with an evaluator, as words (`orchestrator_reflect`).
pub fn evaluator_modes() -> String {
    let names: Vec<&str> = Mode::ALL
        .iter()
        .filter(|m| spec(**m).has_evaluator)
        .map(|m| m.as_str())
        .collect();
    names.join(", ")
}

/// A team's per-mode settings, one field per mode that has any. Flattened into its group, so
/// `organization.json` keeps the field names it always had (`relay`, `flow_entry`, `pipeline`,
/// `dispatch`, `team_limits`). Members are named by session id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeSettings {
    /// Mode `relay`: who drafts, who answers, how drafts are approved, the limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<RelaySettings>,
    /// Mode `flow`: the session the prompt goes to first.
    #[serde(flatten)]
    pub flow: FlowSettings,
    /// Mode `pipeline`: the stages, supervisor and rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<PipelineSpec>,
    /// Mode `dispatch`: the team's guardrails (unset ones come from config.yaml, then defaults).
    #[serde(default, skip_serializing_if = "DispatchLimits::is_empty")]
    pub dispatch: DispatchLimits,
    /// Mode `team`: the members' and the supervisor's turn limits.
    #[serde(rename = "team_limits", default, skip_serializing_if = "TeamLimits::is_empty")]
    pub team: TeamLimits,
}

impl ModeSettings {
    /// A preset's settings as a group keeps them: its member names mapped to session ids by
    /// `id_of` (a name no member has: a flow's entry is left out, a pipeline's names stay).
    pub fn from_preset(preset: &Preset, id_of: impl Fn(&str) -> Option<String>) -> ModeSettings {
        let pipeline = preset.pipeline_spec();
        let declared = pipeline != PipelineSpec::default();
        ModeSettings {
            relay: preset.relay.clone(),
            flow: FlowSettings {
                entry: preset.entry.as_deref().and_then(&id_of),
            },
            pipeline: declared.then(|| pipeline.map_members(|n| id_of(n).unwrap_or_else(|| n.to_string()))),
            dispatch: preset.dispatch_limits(),
            team: preset.team_limits(),
        }
    }

    /// Writes the settings into `preset`'s keys, session ids mapped to member names by
    /// `name_of` (an id no member has: a flow's entry is left out, a pipeline's ids stay).
    pub fn to_preset(&self, preset: &mut Preset, name_of: impl Fn(&str) -> Option<String>) {
        preset.relay = self.relay.clone();
        preset.entry = self.flow.entry.as_deref().and_then(&name_of);
        let pipeline = self
            .pipeline
            .as_ref()
            .map(|p| p.map_members(|id| name_of(id).unwrap_or_else(|| id.to_string())))
            .unwrap_or_default();
        preset.set_pipeline(pipeline);
        preset.set_limits(&self.dispatch, self.team);
    }
}

/// A team's per-mode run state (where its current or last run is), one field per mode that
/// keeps any, flattened into its group like [`ModeSettings`] (`reflection`, `relay_state`,
/// `pipeline_state`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModeState {
    /// Mode `orchestrator_reflect`: the current or last cycle (an interrupted one resumes).
    #[serde(rename = "reflection", default, skip_serializing_if = "Option::is_none")]
    pub orchestrator_reflect: Option<ReflectionCycle>,
    /// Mode `relay`: the current or last relay run.
    #[serde(rename = "relay_state", default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<RelayRecord>,
    /// Mode `pipeline`: where the conversation is (phase, active member, history).
    #[serde(rename = "pipeline_state", default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<ConversationState>,
    /// Every mode: the run going now, or interrupted (see [`super::OpenRun`]).
    #[serde(rename = "open_run", default, skip_serializing_if = "Option::is_none")]
    pub run: Option<super::OpenRun>,
}

impl ModeState {
    /// The group's interrupted run (or reflect cycle), when no run of it is going: what
    /// resuming would continue. Also true of a run going now (the caller knows whether one is).
    pub fn interrupted(&self, mode: Mode) -> Option<super::Interrupted> {
        let cycle = self.orchestrator_reflect.as_ref().filter(|r| r.is_interrupted());
        match (&self.run, cycle) {
            (Some(open), cycle) => Some(super::Interrupted {
                mode: open.mode,
                goal: open.prompt.clone(),
                progress: cycle
                    .filter(|_| open.mode == Mode::OrchestratorReflect)
                    .map(|r| format!("after iteration {}/{}", r.completed_iterations, r.max_iterations)),
                at: open.interrupted_at,
                reason: open.reason.clone(),
            }),
            // A cycle saved before runs were kept open.
            (None, Some(r)) => Some(super::Interrupted {
                mode,
                goal: r.goal.clone(),
                progress: Some(format!(
                    "after iteration {}/{}",
                    r.completed_iterations, r.max_iterations
                )),
                at: None,
                reason: None,
            }),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_its_own_row() {
        for mode in Mode::ALL {
            let row = spec(*mode);
            assert_eq!(row.mode, *mode, "the row of {mode} says it is {}", row.mode);
            assert!(!row.label.is_empty() && !row.description.is_empty(), "{mode}");
            assert!(!row.queued_target.is_empty(), "{mode}");
            assert_eq!(mode.spec().label, row.label);
        }
        let mut labels: Vec<&str> = Mode::ALL.iter().map(|m| spec(*m).label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), Mode::ALL.len(), "labels are distinct");
    }

    #[test]
    fn a_preset_key_belongs_to_one_mode_only() {
        let mut seen: Vec<(&str, Mode)> = Vec::new();
        for mode in Mode::ALL {
            let row = spec(*mode);
            for key in row.preset_keys.iter().chain(row.worker_keys) {
                if let Some((_, other)) = seen.iter().find(|(k, _)| k == key) {
                    panic!("`{key}` is a key of {other} and of {mode}");
                }
                seen.push((key, *mode));
            }
        }
    }

    #[test]
    fn a_queued_message_goes_where_the_mode_reads_it() {
        let plan = "the orchestrator's next plan";
        assert_eq!(spec(Mode::OrchestratorReflect).queued_target, plan);
        assert_eq!(spec(Mode::Orchestrator).queued_target, plan);
        for mode in [
            Mode::Broadcast,
            Mode::Sequential,
            Mode::Flow,
            Mode::Pipeline,
            Mode::Relay,
        ] {
            assert_eq!(spec(mode).queued_target, "the team's next run", "{mode}");
        }
        assert_eq!(
            spec(Mode::Dispatch).queued_target,
            "the orchestrator, with the next sub-agent result"
        );
        assert_eq!(spec(Mode::Team).queued_target, "the supervisor's next turn");
    }

    #[test]
    fn the_orchestrator_modes_are_those_an_orchestrator_leads() {
        let led: Vec<Mode> = Mode::ALL
            .iter()
            .copied()
            .filter(|m| spec(*m).has_orchestrator)
            .collect();
        assert_eq!(
            led,
            [
                Mode::Orchestrator,
                Mode::OrchestratorReflect,
                Mode::Dispatch,
                Mode::Team
            ]
        );
        assert_eq!(evaluator_modes(), "orchestrator_reflect");
    }
}
