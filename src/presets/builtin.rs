//! The built-in presets: `presets/*.yaml` of the repository, compiled into the binary. They name
//! no model, so they run on whatever default the user has (the `sim` provider included).

use std::path::Path;

use crate::config::Config;
use crate::model::{Preset, Tier};

use super::{PresetError, parse_preset};

/// File name and text of every built-in preset.
pub const BUILTIN_FILES: &[(&str, &str)] = &[
    ("code-review.yaml", include_str!("../../presets/code-review.yaml")),
    (
        "implement-and-challenge.yaml",
        include_str!("../../presets/implement-and-challenge.yaml"),
    ),
    (
        "research-panel.yaml",
        include_str!("../../presets/research-panel.yaml"),
    ),
    (
        "draft-critique-edit.yaml",
        include_str!("../../presets/draft-critique-edit.yaml"),
    ),
    (
        "planning-team.yaml",
        include_str!("../../presets/planning-team.yaml"),
    ),
    ("coding-team.yaml", include_str!("../../presets/coding-team.yaml")),
    ("negotiator.yaml", include_str!("../../presets/negotiator.yaml")),
    (
        "help-desk-flow.yaml",
        include_str!("../../presets/help-desk-flow.yaml"),
    ),
    (
        "support-desk-pipeline.yaml",
        include_str!("../../presets/support-desk-pipeline.yaml"),
    ),
    (
        "deliberation-panel.yaml",
        include_str!("../../presets/deliberation-panel.yaml"),
    ),
    (
        "incident-investigation.yaml",
        include_str!("../../presets/incident-investigation.yaml"),
    ),
];

/// Every built-in preset. A broken one is a bug in huddle itself (a unit test loads them all),
/// but it is still reported rather than panicking.
pub fn load_builtins(config: &Config) -> (Vec<Preset>, Vec<PresetError>) {
    let mut presets = Vec::new();
    let mut errors = Vec::new();
    for (file, text) in BUILTIN_FILES {
        let source = format!("builtin:{file}");
        match parse_preset(text, Path::new(&source), Tier::Builtin, config) {
            Ok(p) => presets.push(p),
            Err(e) => errors.push(e),
        }
    }
    (presets, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    #[test]
    fn every_builtin_loads_without_warnings_and_names_no_model() {
        let config = Config::from_env(|_| None);
        let (presets, errors) = load_builtins(&config);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(presets.len(), BUILTIN_FILES.len());
        for p in &presets {
            assert!(p.warnings.is_empty(), "{}: {:?}", p.name, p.warnings);
            assert!(p.workers.iter().all(|w| w.model.is_none()), "{}", p.name);
            assert!(
                p.orchestrator.as_ref().is_none_or(|o| o.model.is_none()),
                "{}",
                p.name
            );
            assert!(
                p.evaluator.as_ref().is_none_or(|o| o.model.is_none()),
                "{}",
                p.name
            );
            for w in &p.workers {
                let prompt = w.system_prompt.as_deref().unwrap_or("");
                assert!(prompt.len() > 200, "{}/{}: prompt too thin", p.name, w.name);
                assert!(w.role.is_some(), "{}/{}", p.name, w.name);
            }
        }
        for mode in Mode::ALL {
            assert!(presets.iter().any(|p| p.mode == *mode), "no built-in for {mode}");
        }
        let ic = presets
            .iter()
            .find(|p| p.name == "Implement & Challenge")
            .unwrap();
        assert_eq!(ic.max_iterations, Some(10));
        let names: Vec<&str> = ic.workers.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["implementer", "challenger"]);
        let review = presets.iter().find(|p| p.name == "Code Review Team").unwrap();
        assert!(review.evaluator.is_some() && review.mode == Mode::OrchestratorReflect);
        let coding = presets.iter().find(|p| p.name == "Coding Team").unwrap();
        assert_eq!(coding.worktrees, crate::model::WorktreeStrategy::FullyIsolated);
        assert_eq!(coding.mode, Mode::OrchestratorReflect);
        let names: Vec<&str> = coding.workers.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["implementer", "tester", "reviewer"]);
        assert!(
            presets
                .iter()
                .filter(|p| p.name != "Coding Team")
                .all(|p| p.worktrees.is_shared()),
            "only the Coding Team asks for worktrees"
        );
    }

    #[test]
    fn the_flow_builtin_routes_to_specialists_with_advisors_and_an_approver() {
        let (presets, _) = load_builtins(&Config::from_env(|_| None));
        let flow = presets.iter().find(|p| p.name == "Help Desk Flow").unwrap();
        assert_eq!(flow.mode, Mode::Flow);
        assert_eq!(flow.entry.as_deref(), Some("dispatcher"));
        let dispatcher = &flow.workers[0];
        assert_eq!(
            dispatcher.router.as_ref().unwrap().destinations,
            ["billing", "engineer"]
        );
        let engineer = flow.workers.iter().find(|w| w.name == "engineer").unwrap();
        assert_eq!(engineer.advisors, ["security", "operations"]);
        assert_eq!(engineer.handoff.as_deref(), Some("approver"));
    }

    #[test]
    fn the_pipeline_builtin_is_a_support_desk_with_a_return_and_a_supervisor() {
        let (presets, _) = load_builtins(&Config::from_env(|_| None));
        let desk = presets.iter().find(|p| p.name == "Support Desk").unwrap();
        assert_eq!(desk.mode, Mode::Pipeline);
        let phases: Vec<&str> = desk.stages.iter().map(|s| s.phase.as_str()).collect();
        assert_eq!(phases, ["intake", "handling", "review", "resolution"]);
        assert_eq!(desk.stages[2].can_return_to, ["handling"]);
        assert_eq!(desk.supervisor.as_deref(), Some("supervisor"));
    }

    #[test]
    fn the_team_builtin_is_a_panel_of_three_perspectives_with_a_chair() {
        let (presets, _) = load_builtins(&Config::from_env(|_| None));
        let panel = presets.iter().find(|p| p.name == "Deliberation Panel").unwrap();
        assert_eq!(panel.mode, Mode::Team);
        let names: Vec<&str> = panel.workers.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["advocate", "skeptic", "pragmatist"]);
        assert!(panel.orchestrator.as_ref().is_some_and(|o| o.prompt.is_some()));
        let limits = panel.team_limits();
        assert_eq!((limits.member_turns(), limits.supervisor_turns()), (4, 3));
    }

    #[test]
    fn worker_prompts_are_distinct() {
        let (presets, _) = load_builtins(&Config::from_env(|_| None));
        let mut prompts: Vec<&str> = presets
            .iter()
            .flat_map(|p| p.workers.iter().filter_map(|w| w.system_prompt.as_deref()))
            .collect();
        let n = prompts.len();
        prompts.sort();
        prompts.dedup();
        assert_eq!(prompts.len(), n);
    }
}
