//! A pipeline team (issue 12): stages of `{ phase, member, next, can_return_to }`, an optional
//! supervisor, routing rules, and the conversation state the group keeps between messages.
//! Members are preset names in YAML and session ids on a group; the pure rules here (checking a
//! pipeline, which stage a message goes to, which handoffs are allowed) work on either.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One stage: its phase, the member that works in it, and where it may hand the conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineStage {
    pub phase: String,
    pub member: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub can_return_to: Vec<String>,
}

/// When the supervisor looks at the conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Supervise {
    /// At each handoff (the default).
    #[default]
    AtHandoff,
    /// After every turn.
    EveryTurn,
}

impl Supervise {
    pub fn is_default(&self) -> bool {
        *self == Supervise::AtHandoff
    }
}

/// A routing rule: a message that matches (its phase, its intent regex, one of its keywords)
/// goes to the stage of phase `to`. Higher `priority` first; the first match wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingRule {
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// A regex the user's message must match (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Words one of which the message must contain (case-insensitive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// A pipeline's shape, stored on its group (members by session id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineSpec {
    pub stages: Vec<PipelineStage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<String>,
    #[serde(default, skip_serializing_if = "Supervise::is_default")]
    pub supervise: Supervise,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RoutingRule>,
}

/// One recorded move of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseTransition {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_phase: Option<String>,
    pub to_phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_member: Option<String>,
    /// `None`: parked for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_member: Option<String>,
    pub reason: String,
    pub at: DateTime<Utc>,
}

/// Where a pipeline's conversation is, kept on its group between messages and restarts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The member (session id) the next message goes to; `None` before the first message and
    /// while parked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<String>,
    /// The active member's name as the team calls it (for display).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_name: Option<String>,
    /// Handed to `human`: waiting for the user.
    #[serde(default)]
    pub parked: bool,
    #[serde(default)]
    pub handoff_count: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<PhaseTransition>,
    /// Exchanges the supervisor has not been shown yet (given with its next look).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supervisor_backlog: Vec<String>,
}

/// The most transitions a state keeps (the oldest go first): the history stays small.
pub const MAX_HISTORY: usize = 200;

impl ConversationState {
    /// Moves the conversation to `to_phase` / `to_member` (`None`: parked) and records it.
    pub fn transition(&mut self, to_phase: &str, to_member: Option<&str>, reason: &str, at: DateTime<Utc>) {
        self.history.push(PhaseTransition {
            from_phase: self.phase.clone(),
            to_phase: to_phase.to_string(),
            from_member: self.active.clone(),
            to_member: to_member.map(str::to_string),
            reason: reason.to_string(),
            at,
        });
        if self.history.len() > MAX_HISTORY {
            self.history.remove(0);
        }
        self.phase = Some(to_phase.to_string());
        self.active = to_member.map(str::to_string);
        self.active_name = None;
        self.parked = to_member.is_none();
    }

    /// `intake → handling → review ↩ handling`: the phases in order, a return marked `↩`.
    pub fn strip(&self, spec: &PipelineSpec) -> String {
        let steps: Vec<StripStep> = self
            .history
            .iter()
            .map(|t| StripStep {
                to: t.to_phase.clone(),
                back: spec.is_return(t.from_phase.as_deref(), &t.to_phase),
                parked: t.to_member.is_none(),
            })
            .collect();
        let first = self.history.first().and_then(|t| t.from_phase.as_deref());
        strip(first, &steps)
    }
}

/// One move of a phase strip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StripStep {
    pub to: String,
    /// A return to an earlier stage.
    pub back: bool,
    pub parked: bool,
}

/// `intake → handling → review ↩ handling → handling (parked)` from where it started and its
/// moves.
pub fn strip(first: Option<&str>, steps: &[StripStep]) -> String {
    let mut out = first.unwrap_or_default().to_string();
    for step in steps {
        if !out.is_empty() {
            out.push_str(if step.back { " ↩ " } else { " → " });
        }
        out.push_str(&step.to);
        if step.parked {
            out.push_str(" (parked)");
        }
    }
    out
}

/// Why a pipeline cannot run; names the stage or member at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    #[error("stages: mode pipeline needs at least one stage")]
    NoStages,
    #[error("stage `{phase}`: member `{member}` is not a member of this team")]
    UnknownMember { phase: String, member: String },
    #[error("stage `{0}`: the phase is declared twice")]
    DuplicatePhase(String),
    #[error("stage `{phase}`: {field} names phase `{target}`, which no stage has")]
    UnknownPhase {
        phase: String,
        field: &'static str,
        target: String,
    },
    #[error("supervisor: `{0}` is not a member of this team")]
    UnknownSupervisor(String),
    #[error("rules: rule {index} goes to phase `{target}`, which no stage has")]
    UnknownRuleTarget { index: usize, target: String },
    #[error("rules: rule {index} is for phase `{target}`, which no stage has")]
    UnknownRulePhase { index: usize, target: String },
    #[error("rules: rule {index} has a bad intent regex: {error}")]
    BadRegex { index: usize, error: String },
}

impl PipelineError {
    /// What the error is about, for finding its line: a phase, a member, or a rule's key.
    pub fn subject(&self) -> Option<String> {
        match self {
            PipelineError::NoStages => None,
            PipelineError::UnknownMember { member, .. } => Some(format!("member: {member}")),
            PipelineError::DuplicatePhase(p) | PipelineError::UnknownPhase { phase: p, .. } => {
                Some(format!("phase: {p}"))
            }
            PipelineError::UnknownSupervisor(s) => Some(format!("supervisor: {s}")),
            PipelineError::UnknownRuleTarget { target, .. } => Some(format!("to: {target}")),
            PipelineError::UnknownRulePhase { target, .. } => Some(format!("phase: {target}")),
            PipelineError::BadRegex { .. } => Some("intent:".into()),
        }
    }
}

fn same(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The case-insensitive regex of a rule's intent.
pub fn intent_regex(intent: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(intent).case_insensitive(true).build()
}

/// Checks a pipeline against its team's `members` (names or ids): stages name members, phases
/// are unique, `next` / `can_return_to` / rules name phases, regexes compile.
pub fn check_pipeline(spec: &PipelineSpec, members: &[&str]) -> Result<(), PipelineError> {
    if spec.stages.is_empty() {
        return Err(PipelineError::NoStages);
    }
    let is_member = |m: &str| members.iter().any(|x| same(x, m));
    let has_phase = |p: &str| spec.stages.iter().any(|s| same(&s.phase, p));
    for (i, stage) in spec.stages.iter().enumerate() {
        if spec.stages[..i].iter().any(|s| same(&s.phase, &stage.phase)) {
            return Err(PipelineError::DuplicatePhase(stage.phase.clone()));
        }
    }
    for stage in &spec.stages {
        if !is_member(&stage.member) {
            return Err(PipelineError::UnknownMember {
                phase: stage.phase.clone(),
                member: stage.member.clone(),
            });
        }
        let targets = stage
            .next
            .iter()
            .map(|t| ("next", t))
            .chain(stage.can_return_to.iter().map(|t| ("can_return_to", t)));
        for (field, target) in targets {
            if !has_phase(target) {
                return Err(PipelineError::UnknownPhase {
                    phase: stage.phase.clone(),
                    field,
                    target: target.clone(),
                });
            }
        }
    }
    if let Some(s) = &spec.supervisor
        && !is_member(s)
    {
        return Err(PipelineError::UnknownSupervisor(s.clone()));
    }
    for (i, rule) in spec.rules.iter().enumerate() {
        let index = i + 1;
        if !has_phase(&rule.to) {
            return Err(PipelineError::UnknownRuleTarget {
                index,
                target: rule.to.clone(),
            });
        }
        if let Some(p) = &rule.phase
            && !has_phase(p)
        {
            return Err(PipelineError::UnknownRulePhase {
                index,
                target: p.clone(),
            });
        }
        if let Some(Err(e)) = rule.intent.as_deref().map(intent_regex) {
            return Err(PipelineError::BadRegex {
                index,
                error: e.to_string(),
            });
        }
    }
    Ok(())
}

impl PipelineSpec {
    /// The spec with every member reference (stage members, the supervisor) mapped.
    pub fn map_members(&self, map: impl Fn(&str) -> String) -> PipelineSpec {
        PipelineSpec {
            stages: self
                .stages
                .iter()
                .map(|s| PipelineStage {
                    member: map(&s.member),
                    ..s.clone()
                })
                .collect(),
            supervisor: self.supervisor.as_deref().map(&map),
            ..self.clone()
        }
    }

    /// Whether a move from `from` to `to` goes back to an earlier stage.
    pub fn is_return(&self, from: Option<&str>, to: &str) -> bool {
        match (from.and_then(|p| self.stage_of(p)), self.stage_of(to)) {
            (Some(a), Some(b)) => b < a,
            _ => false,
        }
    }

    /// The stage of `phase`, by index.
    pub fn stage_of(&self, phase: &str) -> Option<usize> {
        self.stages.iter().position(|s| same(&s.phase, phase))
    }

    /// The stages a member in stage `from` may hand to: its `next` and `can_return_to`
    /// (itself only when declared there), in that order, without repeats.
    pub fn allowed_from(&self, from: usize) -> Vec<usize> {
        let Some(stage) = self.stages.get(from) else {
            return Vec::new();
        };
        let mut out: Vec<usize> = Vec::new();
        for phase in stage.next.iter().chain(stage.can_return_to.iter()) {
            if let Some(i) = self.stage_of(phase)
                && !out.contains(&i)
            {
                out.push(i);
            }
        }
        out
    }
}

/// How a message found its stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routed {
    /// The active member keeps the conversation.
    Affinity,
    /// Rule number n (1-based, in file order) matched.
    Rule(usize),
    /// Parked: back to the stage that parked it.
    Resume,
    /// The first stage.
    Default,
}

impl Routed {
    pub fn reason(&self) -> String {
        match self {
            Routed::Affinity => "affinity: the active member keeps the conversation".into(),
            Routed::Rule(n) => format!("routing rule {n} matched"),
            Routed::Resume => "the user answered; resuming where the conversation was parked".into(),
            Routed::Default => "the first stage".into(),
        }
    }
}

/// The stage a user message goes to: the active member's (affinity), else the first matching
/// rule (by priority, then file order), else the stage that parked the conversation, else the
/// first stage.
pub fn route(spec: &PipelineSpec, state: &ConversationState, message: &str) -> (usize, Routed) {
    let current = state.phase.as_deref().and_then(|p| spec.stage_of(p));
    if let Some(i) = current
        && state.active.is_some()
    {
        return (i, Routed::Affinity);
    }
    let mut order: Vec<usize> = (0..spec.rules.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(spec.rules[i].priority));
    let lower = message.to_lowercase();
    for i in order {
        let rule = &spec.rules[i];
        let phase_ok = rule
            .phase
            .as_deref()
            .is_none_or(|p| state.phase.as_deref().is_some_and(|c| same(c, p)));
        let intent_ok = rule
            .intent
            .as_deref()
            .is_none_or(|r| intent_regex(r).is_ok_and(|re| re.is_match(message)));
        let keywords_ok =
            rule.keywords.is_empty() || rule.keywords.iter().any(|k| lower.contains(&k.to_lowercase()));
        if phase_ok
            && intent_ok
            && keywords_ok
            && let Some(to) = spec.stage_of(&rule.to)
        {
            return (to, Routed::Rule(i + 1));
        }
    }
    match current {
        Some(i) if state.parked => (i, Routed::Resume),
        _ => (0, Routed::Default),
    }
}

/// A pipeline preset's stages, supervisor and rules, held to [`check_pipeline`]; the problem
/// points at the stage or member at fault (a phase declared twice: its second declaration),
/// else at the `stages:` line.
pub fn check_preset(preset: &super::Preset) -> Result<(), super::PresetProblem> {
    let names: Vec<&str> = preset.workers.iter().map(|w| w.name.as_str()).collect();
    check_pipeline(&preset.pipeline_spec(), &names).map_err(|e| {
        let nth = usize::from(matches!(e, PipelineError::DuplicatePhase(_)));
        let mut at: Vec<(String, usize)> = e.subject().map(|s| (s, nth)).into_iter().collect();
        at.push(("stages:".to_string(), 0));
        super::PresetProblem {
            message: e.to_string(),
            at,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(phase: &str, member: &str, next: Option<&str>, back: &[&str]) -> PipelineStage {
        PipelineStage {
            phase: phase.into(),
            member: member.into(),
            next: next.map(str::to_string),
            can_return_to: back.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn desk() -> PipelineSpec {
        PipelineSpec {
            stages: vec![
                stage("intake", "triage", Some("handling"), &[]),
                stage("handling", "handler", Some("review"), &[]),
                stage("review", "reviewer", Some("resolution"), &["handling"]),
                stage("resolution", "resolver", None, &[]),
            ],
            supervisor: Some("boss".into()),
            supervise: Supervise::AtHandoff,
            rules: vec![
                RoutingRule {
                    to: "handling".into(),
                    keywords: vec!["refund".into()],
                    ..RoutingRule::default()
                },
                RoutingRule {
                    to: "review".into(),
                    intent: Some(r"\bcheck (my|the) fix\b".into()),
                    priority: 5,
                    ..RoutingRule::default()
                },
                RoutingRule {
                    to: "resolution".into(),
                    phase: Some("review".into()),
                    ..RoutingRule::default()
                },
            ],
        }
    }

    const MEMBERS: &[&str] = &["triage", "handler", "reviewer", "resolver", "boss"];

    #[test]
    fn the_desk_is_valid_and_errors_name_their_stage() {
        assert_eq!(check_pipeline(&desk(), MEMBERS), Ok(()));
        let mut bad = desk();
        bad.stages[1].member = "ghost".into();
        assert_eq!(
            check_pipeline(&bad, MEMBERS).unwrap_err().to_string(),
            "stage `handling`: member `ghost` is not a member of this team"
        );
        let mut bad = desk();
        bad.stages[2].can_return_to = vec!["limbo".into()];
        let err = check_pipeline(&bad, MEMBERS).unwrap_err();
        assert_eq!(
            err.to_string(),
            "stage `review`: can_return_to names phase `limbo`, which no stage has"
        );
        assert_eq!(err.subject().as_deref(), Some("phase: review"));
        let mut bad = desk();
        bad.stages[3].phase = "Intake".into();
        assert!(matches!(
            check_pipeline(&bad, MEMBERS),
            Err(PipelineError::DuplicatePhase(_))
        ));
        let mut bad = desk();
        bad.rules[1].intent = Some("(".into());
        assert!(matches!(
            check_pipeline(&bad, MEMBERS),
            Err(PipelineError::BadRegex { index: 2, .. })
        ));
        let mut bad = desk();
        bad.supervisor = Some("nobody".into());
        assert!(check_pipeline(&bad, MEMBERS).is_err());
        assert_eq!(
            check_pipeline(&PipelineSpec::default(), MEMBERS),
            Err(PipelineError::NoStages)
        );
    }

    #[test]
    fn edges_are_next_and_returns_and_self_only_when_declared() {
        let spec = desk();
        assert_eq!(spec.allowed_from(0), vec![1]);
        assert_eq!(spec.allowed_from(2), vec![3, 1]);
        assert!(spec.allowed_from(3).is_empty());
        let mut looping = desk();
        looping.stages[1].can_return_to = vec!["handling".into()];
        assert_eq!(looping.allowed_from(1), vec![2, 1]);
    }

    #[test]
    fn routing_is_affinity_then_rules_by_priority_then_park_then_first() {
        let spec = desk();
        let mut state = ConversationState::default();
        assert_eq!(route(&spec, &state, "hello"), (0, Routed::Default));
        assert_eq!(route(&spec, &state, "A REFUND please"), (1, Routed::Rule(1)));
        // Priority 5 beats the earlier keyword rule.
        assert_eq!(route(&spec, &state, "refund? check my fix"), (2, Routed::Rule(2)));
        let at = Utc::now();
        state.transition("review", Some("reviewer"), "test", at);
        assert_eq!(route(&spec, &state, "refund"), (2, Routed::Affinity));
        state.transition("review", None, "ask the user", at);
        assert!(state.parked);
        // Parked in review: the phase rule matches.
        assert_eq!(route(&spec, &state, "ok"), (3, Routed::Rule(3)));
        state.transition("handling", None, "ask", at);
        assert_eq!(route(&spec, &state, "ok"), (1, Routed::Resume));
    }

    #[test]
    fn the_strip_marks_returns_and_parking() {
        let spec = desk();
        let mut state = ConversationState::default();
        let at = Utc::now();
        state.transition("intake", Some("t"), "first", at);
        state.transition("handling", Some("h"), "x", at);
        state.transition("review", Some("r"), "x", at);
        state.transition("handling", Some("h"), "x", at);
        state.transition("handling", None, "x", at);
        assert_eq!(
            state.strip(&spec),
            "intake → handling → review ↩ handling → handling (parked)"
        );
        assert_eq!(state.history.len(), 5);
        let json = serde_json::to_string(&state).unwrap();
        assert_eq!(serde_json::from_str::<ConversationState>(&json).unwrap(), state);
    }
}
