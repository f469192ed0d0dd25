//! `huddle.yaml` in a team folder: what a huddle team has and Squad's files have no place for
//! (the emoji, max iterations, the worker timeout, the orchestrator's prompt, the evaluator).
//! Export writes it only when there is something to say; discovery reads it back, so a team
//! exported and read again is the same team. It is huddle's own file: Squad ignores it.

use serde::{Deserialize, Serialize};

use crate::model::{Preset, PresetAgent, WorktreeStrategy, default_worker_timeout_secs};

/// The file's name in the team folder.
pub const EXTRAS_FILE: &str = "huddle.yaml";

const HEADER: &str = "# huddle's settings for this team that team.md and the charters have no place for.\n# Written by `huddle squad export`; Squad ignores this file.\n";

/// The fields of `huddle.yaml`; every one optional, unknown keys refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extras {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emoji: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_timeout_secs: Option<u64>,
    /// Replaces the prompt discovery would otherwise give the orchestrator (a coordinator's
    /// charter, or huddle's built-in one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orchestrator_prompt: Option<String>,
    /// The team has an evaluator (`orchestrator_reflect` only), with this prompt and model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator: Option<PresetAgent>,
    /// How the team shares git worktrees (a strategy only: huddle makes every path itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktrees: Option<WorktreeStrategy>,
    /// A relay team's settings (mode `relay`). From a repository, its counterpart must be one
    /// of the team's members and `full_auto` is read as `semi_auto` (see `read::apply_extras`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<crate::model::RelaySettings>,
    /// A stricter sandbox for the team (never looser than the user's: see
    /// `SandboxSettings::from_repository`). Never written by export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxSettings>,
    /// Read only to say it is refused: a repository's team cannot add hooks. Never written.
    #[serde(default, skip_serializing)]
    pub hooks: Option<serde_yaml::Value>,
}

impl Extras {
    /// What `preset` has beyond the Squad files. `coordinator_prompt` is the orchestrator prompt
    /// the team folder already gives (its coordinator's charter), which needs no repeating.
    pub fn of(preset: &Preset, coordinator_prompt: Option<&str>) -> Extras {
        let orchestrator_prompt = preset
            .orchestrator
            .as_ref()
            .and_then(|o| o.prompt.as_deref())
            .map(str::trim)
            .filter(|p| !p.is_empty() && Some(*p) != coordinator_prompt.map(str::trim))
            .filter(|_| preset.mode.spec().has_orchestrator)
            .map(str::to_string);
        let evaluator = preset
            .evaluator
            .as_ref()
            .filter(|_| preset.mode.spec().has_evaluator)
            .map(|e| PresetAgent {
                // Models are the user's choice of provider; a repo team names none.
                display_name: e.display_name.clone(),
                model: None,
                prompt: e.prompt.as_deref().map(str::trim).map(str::to_string),
                ..PresetAgent::default()
            });
        Extras {
            emoji: preset.emoji.clone(),
            max_iterations: preset
                .max_iterations
                .filter(|&n| n != preset.mode.spec().default_max_iterations),
            worker_timeout_secs: preset
                .worker_timeout_secs
                .filter(|&t| t != default_worker_timeout_secs()),
            orchestrator_prompt,
            evaluator,
            worktrees: Some(preset.worktrees).filter(|w| !w.is_shared()),
            relay: preset
                .relay
                .clone()
                .filter(|_| preset.mode.spec().reads_key("relay")),
            sandbox: None,
            hooks: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Extras::default()
    }

    /// The file's text: a comment saying what it is, then the fields.
    pub fn to_yaml(&self) -> Result<String, String> {
        if self.is_empty() {
            return Ok(HEADER.to_string());
        }
        let body = serde_yaml::to_string(self).map_err(|e| e.to_string())?;
        Ok(format!("{HEADER}{body}"))
    }

    /// Parses the file's text; the error names the line and the key.
    pub fn parse(text: &str) -> Result<Extras, String> {
        if text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        {
            return Ok(Extras::default());
        }
        let de = serde_yaml::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let at = e.path().to_string();
            let inner = e.into_inner();
            let line = inner
                .location()
                .map(|l| format!("line {}: ", l.line()))
                .unwrap_or_default();
            let mut message = inner.to_string();
            if let Some(cut) = message.find(" at line ") {
                message.truncate(cut);
            }
            if at.is_empty() || at == "." || message.starts_with(&at) {
                format!("{line}{message}")
            } else {
                format!("{line}{at}: {message}")
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    #[test]
    fn only_what_differs_from_the_defaults_is_written_and_read_back() {
        let mut preset = Preset {
            name: "T".into(),
            description: None,
            emoji: Some("🔍".into()),
            mode: Mode::OrchestratorReflect,
            max_iterations: Some(4),
            worker_timeout_secs: Some(600),
            max_duration_secs: None,
            token_budget: None,
            max_cost_usd: None,
            orchestrator: Some(PresetAgent {
                prompt: Some("Lead well.\n".into()),
                ..PresetAgent::default()
            }),
            evaluator: Some(PresetAgent {
                model: Some("sim/x".into()),
                prompt: Some("Judge.".into()),
                ..PresetAgent::default()
            }),
            workers: Vec::new(),
            shared_context: None,
            routing_context: None,
            worktrees: WorktreeStrategy::OrchestratorIsolated,
            relay: None,
            memory: Default::default(),
            repo_context: Default::default(),
            entry: None,
            stages: Vec::new(),
            supervisor: None,
            supervise: Default::default(),
            rules: Vec::new(),
            max_concurrent_agents: None,
            agent_timeout_secs: None,
            max_budget_secs: None,
            sub_agents: Vec::new(),
            member_max_turns: None,
            supervisor_max_turns: None,
            rate_limit_wait_secs: None,
            sandbox: Default::default(),
            hooks: Default::default(),
            tier: None,
            source: None,
            warnings: Vec::new(),
        };
        let extras = Extras::of(&preset, None);
        assert_eq!(extras.max_iterations, Some(4));
        assert_eq!(extras.worker_timeout_secs, None, "the default is not repeated");
        assert_eq!(extras.orchestrator_prompt.as_deref(), Some("Lead well."));
        assert_eq!(
            extras.evaluator.as_ref().unwrap().model,
            None,
            "no model in a repo"
        );
        assert_eq!(extras.worktrees, Some(WorktreeStrategy::OrchestratorIsolated));
        let text = extras.to_yaml().unwrap();
        assert!(text.starts_with("# huddle's settings"), "{text}");
        assert!(text.contains("worktrees: orchestrator_isolated"), "{text}");
        assert_eq!(Extras::parse(&text).unwrap(), extras);

        // What the folder already says is not repeated; a mode without an evaluator has none.
        assert_eq!(Extras::of(&preset, Some("Lead well.")).orchestrator_prompt, None);
        preset.mode = Mode::Broadcast;
        preset.emoji = None;
        preset.max_iterations = None;
        preset.worktrees = WorktreeStrategy::Shared;
        let none = Extras::of(&preset, None);
        assert!(none.is_empty(), "{none:?}");
        assert_eq!(Extras::parse(&none.to_yaml().unwrap()).unwrap(), none);
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let err = Extras::parse("max_iterations: 4\nflavour: mint\n").unwrap_err();
        assert!(err.starts_with("line 2: "), "{err}");
        assert!(err.contains("flavour"), "{err}");
        let err = Extras::parse("evaluator: { prompt: 5, colour: red }\n").unwrap_err();
        assert!(err.contains("evaluator"), "{err}");
    }

    #[test]
    fn a_relays_settings_are_written_and_read_back() {
        let config = crate::config::Config::from_env(|_| None);
        let (builtins, _) = crate::presets::builtin::load_builtins(&config);
        let negotiator = builtins.iter().find(|p| p.name == "Negotiator").unwrap();
        let extras = Extras::of(negotiator, None);
        assert_eq!(extras.relay, negotiator.relay);
        let back = Extras::parse(&extras.to_yaml().unwrap()).unwrap();
        assert_eq!(back.relay, negotiator.relay);
        assert!(back.relay.unwrap().review.patterns[0].contains("we accept"));
    }
}
