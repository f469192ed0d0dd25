//! A team run that started and has not ended ([`OpenRun`]): what is needed to continue it after
//! its process ended (a crash, a signal, a quit). It is written on its group before the run is
//! reported started and removed when the run ends; one that is still there while no run of its
//! group is going was interrupted and can be resumed.
//!
//! The turns the run finished are not kept here: every turn's prompt and answer carry their run
//! id in the members' transcripts, and a resumed run is answered from there for each turn that
//! was finished (see `engine/resume.rs`). What each mode continues from is its row's
//! [`super::ModeSpec::resume`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{ApprovalMode, ConversationState, Mode, RunBudget};

/// A team run in progress, or interrupted.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenRun {
    /// Its runs, oldest first: the run as started, then each resumption of it. The last one is
    /// the run going now, or the one that was interrupted.
    pub runs: Vec<String>,
    pub mode: Mode,
    /// The request the run was started with.
    pub prompt: String,
    /// Messages the group had waiting, which the run took at its start (a resumed run is given
    /// the same ones).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
    /// The options of the run (`huddle run` flags), given again to a resumed run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay_approval: Option<ApprovalMode>,
    #[serde(skip_serializing_if = "RunBudget::is_empty")]
    pub budget: RunBudget,
    /// Limit waits of this run (`--max-limit-wait`), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_wait_secs: Option<u64>,
    pub started_at: Option<DateTime<Utc>>,
    /// When it was last left (a signal, a limit it could not wait out); `None` after a crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_at: Option<DateTime<Utc>>,
    /// Why it was left, in words (`SIGTERM`, `the usage limit of m resets at 14:05`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Mode `pipeline`: where the conversation was when the run began (a resumed run takes the
    /// message from there again; the turns it finished are answered from disk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pipeline_at_start: Option<ConversationState>,
    /// Mode `team`: the deliberation as it stood after the last turn that ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliberation: Option<super::DeliberationState>,
}

impl OpenRun {
    /// The run going now (or interrupted last).
    pub fn current(&self) -> Option<&str> {
        self.runs.last().map(String::as_str)
    }

    /// The runs before the current one (whose finished turns a resumed run takes from disk).
    pub fn earlier(&self) -> &[String] {
        &self.runs[..self.runs.len().saturating_sub(1)]
    }

    /// The first run (the chain's id: a relay's trace id, the run the trace links from).
    pub fn first(&self) -> Option<&str> {
        self.runs.first().map(String::as_str)
    }
}

/// A session's reflection in progress, or interrupted, kept on its session: a resumed one goes
/// on after its last completed iteration (the turns of the interrupted one that had finished
/// come from disk).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenReflection {
    /// Its runs, oldest first (the last: going now, or interrupted).
    pub runs: Vec<String>,
    pub cycle: super::ReflectionCycle,
    /// The model it uses instead of the session's own, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The evaluator's feedback on the last answer, for the next prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The last answer (the run's answer so far).
    pub last_answer: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl OpenReflection {
    /// What resuming it would continue.
    pub fn interrupted(&self) -> Interrupted {
        Interrupted {
            mode: Mode::OrchestratorReflect,
            goal: self.cycle.goal.clone(),
            progress: Some(format!(
                "after iteration {}/{}",
                self.cycle.completed_iterations, self.cycle.max_iterations
            )),
            at: self.interrupted_at,
            reason: self.reason.clone(),
        }
    }
}

/// What an interrupted run of a group (or a session's reflection) would continue, for people:
/// the resume offer, `huddle run`'s refusal to start over, the quit dialog.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupted {
    pub mode: Mode,
    /// The request it works on (its first line is shown).
    pub goal: String,
    /// Where it stands, when the mode keeps count (`after iteration 2/5`).
    pub progress: Option<String>,
    pub at: Option<DateTime<Utc>>,
    pub reason: Option<String>,
}

impl Interrupted {
    /// `the reflect cycle (after iteration 2/5)`, `the dispatch run`.
    pub fn what(&self) -> String {
        let kind = if self.mode.spec().iterates {
            format!("{} cycle", self.mode.spec().label)
        } else {
            format!("{} run", self.mode.spec().label)
        };
        match &self.progress {
            Some(p) => format!("the {kind} ({p})"),
            None => format!("the {kind}"),
        }
    }

    /// What resuming continues, in words (the mode's row).
    pub fn resumes(&self) -> &'static str {
        self.mode.spec().resume
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_run_reads_from_an_empty_object_and_names_its_runs() {
        let open: OpenRun = serde_json::from_str("{}").unwrap();
        assert_eq!(open.current(), None);
        assert!(open.earlier().is_empty());
        let open = OpenRun {
            runs: vec!["a".into(), "b".into(), "c".into()],
            ..OpenRun::default()
        };
        assert_eq!(open.current(), Some("c"));
        assert_eq!(open.earlier(), ["a", "b"]);
        assert_eq!(open.first(), Some("a"));
        let line = serde_json::to_string(&open).unwrap();
        assert!(!line.contains("pending") && !line.contains("budget"), "{line}");
        assert_eq!(serde_json::from_str::<OpenRun>(&line).unwrap(), open);
    }
}
