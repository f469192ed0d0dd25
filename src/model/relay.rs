//! A relay: a driver session ("my agent") talks to a counterpart (another session or group) on
//! the user's behalf, one turn at a time, each outbound draft approved as the relay's approval
//! mode says. The settings come from a preset's `relay:` and live on the group; the state of
//! the current or last relay run is persisted with the group.

use serde::{Deserialize, Serialize};

pub const DEFAULT_MAX_TURNS: u32 = 8;
pub const DEFAULT_MAX_FAILURES: u32 = 3;
pub const DEFAULT_MAX_HISTORY_TURNS: usize = 6;
pub const DEFAULT_MAX_HISTORY_CHARS: usize = 24_000;
pub const DEFAULT_MAX_HOPS: u32 = 2;
/// A relay's run budget when its group sets none.
pub const DEFAULT_MAX_DURATION_SECS: u64 = 600;
/// `max_turns` and `max_failures` accept 1 to this.
pub const MAX_TURNS_LIMIT: u32 = 100;

/// How drafts reach the counterpart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Every draft waits for the user.
    #[default]
    Manual,
    /// Sent unless a review rule fires (a pattern, the length, a secret).
    SemiAuto,
    /// Every draft is sent.
    FullAuto,
}

impl ApprovalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Manual => "manual",
            ApprovalMode::SemiAuto => "semi_auto",
            ApprovalMode::FullAuto => "full_auto",
        }
    }
}

impl std::fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// When a `semi_auto` draft waits for the user (a secret always makes it wait).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRules {
    /// Regular expressions; a draft matching any waits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// A draft longer than this many characters waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
}

/// A relay's settings (preset `relay:`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelaySettings {
    /// The member that drafts the outbound messages.
    pub driver: String,
    /// A member of the team, or else the name of another group, that gets them.
    pub counterpart: String,
    #[serde(default)]
    pub approval: ApprovalMode,
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    /// Consecutive failed turns that end the relay.
    #[serde(default = "default_max_failures")]
    pub max_failures: u32,
    #[serde(default = "default_max_history_turns")]
    pub max_history_turns: usize,
    #[serde(default = "default_max_history_chars")]
    pub max_history_chars: usize,
    /// Relays chained through counterparts that are relays themselves, at most.
    #[serde(default = "default_max_hops")]
    pub max_hops: u32,
    #[serde(default, skip_serializing_if = "is_default_review")]
    pub review: ReviewRules,
}

fn is_default_review(r: &ReviewRules) -> bool {
    *r == ReviewRules::default()
}

fn default_max_turns() -> u32 {
    DEFAULT_MAX_TURNS
}
fn default_max_failures() -> u32 {
    DEFAULT_MAX_FAILURES
}
fn default_max_history_turns() -> usize {
    DEFAULT_MAX_HISTORY_TURNS
}
fn default_max_history_chars() -> usize {
    DEFAULT_MAX_HISTORY_CHARS
}
fn default_max_hops() -> u32 {
    DEFAULT_MAX_HOPS
}

impl RelaySettings {
    pub fn new(driver: impl Into<String>, counterpart: impl Into<String>) -> RelaySettings {
        RelaySettings {
            driver: driver.into(),
            counterpart: counterpart.into(),
            approval: ApprovalMode::default(),
            max_turns: DEFAULT_MAX_TURNS,
            max_failures: DEFAULT_MAX_FAILURES,
            max_history_turns: DEFAULT_MAX_HISTORY_TURNS,
            max_history_chars: DEFAULT_MAX_HISTORY_CHARS,
            max_hops: DEFAULT_MAX_HOPS,
            review: ReviewRules::default(),
        }
    }

    /// What is wrong with the settings, as `relay.<key>: why` (the first problem found).
    /// `members` are the team's member names; patterns must compile.
    pub fn problem(&self, members: &[&str]) -> Option<String> {
        let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
        if self.driver.trim().is_empty() {
            return Some("relay.driver: must name a member".into());
        }
        if !members.iter().any(|m| same(m, &self.driver)) {
            return Some(format!(
                "relay.driver: `{}` is not a member of the team (members: {})",
                self.driver,
                members.join(", ")
            ));
        }
        if self.counterpart.trim().is_empty() {
            return Some("relay.counterpart: must name a member or a group".into());
        }
        if same(&self.driver, &self.counterpart) {
            return Some(format!(
                "relay.counterpart: `{}` is the driver; a relay cannot talk to itself",
                self.counterpart
            ));
        }
        for (key, n) in [("max_turns", self.max_turns), ("max_failures", self.max_failures)] {
            if !(1..=MAX_TURNS_LIMIT).contains(&n) {
                return Some(format!(
                    "relay.{key}: {n} is out of range; use 1 to {MAX_TURNS_LIMIT}"
                ));
            }
        }
        if self.max_history_turns == 0 {
            return Some("relay.max_history_turns: must be at least 1".into());
        }
        if self.max_history_chars < 200 {
            return Some("relay.max_history_chars: must be at least 200".into());
        }
        if !(1..=16).contains(&self.max_hops) {
            return Some(format!(
                "relay.max_hops: {} is out of range; use 1 to 16",
                self.max_hops
            ));
        }
        if self.review.max_length == Some(0) {
            return Some("relay.review.max_length: must be at least 1".into());
        }
        for (i, p) in self.review.patterns.iter().enumerate() {
            if let Err(e) = regex::Regex::new(p) {
                let why = e
                    .to_string()
                    .lines()
                    .last()
                    .unwrap_or("invalid")
                    .trim()
                    .to_string();
                return Some(format!(
                    "relay.review.patterns[{i}]: `{p}` is not a valid regular expression: {why}"
                ));
            }
        }
        None
    }
}

/// Where a relay run is (the state machine of issue 14).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelayPhase {
    #[default]
    Idle,
    /// Preparing the driver's turn (folding the history).
    Planning,
    /// The driver is drafting.
    WaitingLocal,
    /// A draft waits to be sent (for the user, in manual and reviewed drafts).
    ReadyToSend,
    /// The counterpart is answering.
    WaitingRemote,
    /// The counterpart's answer is being handed back to the driver.
    ProcessingRemote,
    Completed,
    Paused,
    Error,
    Stopped,
}

impl RelayPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            RelayPhase::Idle => "idle",
            RelayPhase::Planning => "planning",
            RelayPhase::WaitingLocal => "waiting_local",
            RelayPhase::ReadyToSend => "ready_to_send",
            RelayPhase::WaitingRemote => "waiting_remote",
            RelayPhase::ProcessingRemote => "processing_remote",
            RelayPhase::Completed => "completed",
            RelayPhase::Paused => "paused",
            RelayPhase::Error => "error",
            RelayPhase::Stopped => "stopped",
        }
    }

    /// True for the states a run ends in.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            RelayPhase::Completed | RelayPhase::Error | RelayPhase::Stopped
        )
    }
}

impl std::fmt::Display for RelayPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a turn reached the counterpart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SentAs {
    /// Sent without asking (full_auto, or semi_auto with no rule firing).
    AutoSent,
    /// The user approved the draft as it was.
    Approved,
    /// The user edited the draft, then sent it.
    Edited,
    /// The user wrote it (take-over).
    Yours,
}

impl SentAs {
    pub fn as_str(self) -> &'static str {
        match self {
            SentAs::AutoSent => "auto-sent",
            SentAs::Approved => "approved",
            SentAs::Edited => "edited",
            SentAs::Yours => "yours",
        }
    }
}

/// The user's answer to a relay waiting on them (a front end sends it to the host).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", content = "text", rename_all = "snake_case")]
pub enum DraftAnswer {
    /// Send the draft as it is.
    Approve,
    /// Send this text instead of the draft.
    Edit(String),
    /// Do not send; the driver drafts again, told this note.
    Reject(String),
    /// The user writes the outbound messages from now on.
    TakeOver,
    /// The user's own outbound message (during a take-over).
    Yours(String),
    /// The driver drafts again (ends a take-over).
    HandBack,
}

/// The metadata a relayed message carries (on the stored message and its events, never in
/// its text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayMeta {
    pub trace_id: String,
    pub hop: u32,
    pub turn: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_as: Option<SentAs>,
}

/// The current or last relay run of a group, persisted so it is shown after a restart.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RelayRecord {
    pub objective: String,
    pub state: RelayPhase,
    /// Turns sent so far.
    pub turn: u32,
    pub max_turns: u32,
    pub approval: ApprovalMode,
    pub trace_id: String,
    pub consecutive_failures: u32,
    /// The user writes the outbound messages.
    pub taken_over: bool,
    /// Why it ended (a limit, an error, the driver completing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The user's answers to its drafts so far, in order: a resumed relay gets them again
    /// without asking (the draft the run was waiting on still waits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<DraftAnswer>,
}

impl RelaySettings {
    /// The settings in one line (`presets show`).
    pub fn summary(&self) -> String {
        format!(
            "relay: {} → {} · approval {} · max turns {} · max failures {} · max hops {}",
            self.driver, self.counterpart, self.approval, self.max_turns, self.max_failures, self.max_hops
        )
    }
}

/// A relay preset needs its `relay:` entry, held to [`RelaySettings::problem`]; the problem
/// points at the line of the key at fault.
pub fn check_preset(preset: &super::Preset) -> Result<(), super::PresetProblem> {
    let Some(relay) = &preset.relay else {
        return Err(super::PresetProblem {
            message: "relay: mode relay needs a `relay:` entry (driver, counterpart)".into(),
            at: vec![("mode:".into(), 0)],
        });
    };
    let members: Vec<&str> = preset.workers.iter().map(|w| w.name.as_str()).collect();
    match relay.problem(&members) {
        None => Ok(()),
        Some(problem) => {
            // `relay.review.patterns[0]: …` is on the line of `patterns`.
            let key = problem.split(':').next().unwrap_or("relay");
            let needle = key
                .rsplit('.')
                .next()
                .unwrap_or("relay")
                .split('[')
                .next()
                .unwrap_or("relay")
                .to_string();
            Err(super::PresetProblem {
                message: problem,
                at: vec![(needle, 0)],
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_problems_name_the_key() {
        let ok = RelaySettings::new("me", "them");
        assert_eq!(ok.problem(&["me", "them"]), None);
        let mut s = ok.clone();
        s.counterpart = "ME".into();
        assert!(s.problem(&["me"]).unwrap().contains("cannot talk to itself"));
        let mut s = ok.clone();
        s.driver = "nobody".into();
        assert!(s.problem(&["me"]).unwrap().starts_with("relay.driver"));
        let mut s = ok.clone();
        s.max_turns = 0;
        assert!(s.problem(&["me"]).unwrap().starts_with("relay.max_turns"));
        let mut s = ok.clone();
        s.review.patterns = vec!["(unclosed".into()];
        assert!(
            s.problem(&["me"])
                .unwrap()
                .starts_with("relay.review.patterns[0]")
        );
    }

    #[test]
    fn yaml_defaults_and_unknown_keys() {
        let s: RelaySettings = serde_yaml::from_str("driver: a\ncounterpart: b\n").unwrap();
        assert_eq!(s, RelaySettings::new("a", "b"));
        assert!(serde_yaml::from_str::<RelaySettings>("driver: a\ncounterpart: b\nmax_turn: 3\n").is_err());
        let s: RelaySettings =
            serde_yaml::from_str("driver: a\ncounterpart: b\napproval: semi_auto\n").unwrap();
        assert_eq!(s.approval, ApprovalMode::SemiAuto);
    }
}
