//! Preset YAML: strict parsing (unknown keys and bad values are errors naming file, line and key)
//! and the rules a preset must follow.

use std::path::Path;

use crate::config::{Config, ConfigError, split_slug, yaml_error};
use crate::model::limits::check_max_iterations;
use crate::model::modes::ignored_keys;
use crate::model::{Mode, Preset, Tier};

use super::PresetError;
use super::models::check_preset_models;

/// Parses and validates one preset file's text. `path` names the file in messages; `tier` and
/// `source` are recorded on the preset. Models not served by `config` become the default, with a
/// warning on the preset.
pub fn parse_preset(text: &str, path: &Path, tier: Tier, config: &Config) -> Result<Preset, PresetError> {
    let de = serde_yaml::Deserializer::from_str(text);
    let mut preset: Preset = serde_path_to_error::deserialize(de).map_err(|e| match yaml_error(path, e) {
        ConfigError::Invalid {
            path,
            location,
            message,
        } => PresetError::Invalid {
            path: path.display().to_string(),
            location,
            message,
        },
        other => invalid(path, "", other.to_string()),
    })?;
    validate(&mut preset, text, path)?;
    preset.tier = Some(tier);
    preset.source = Some(path.display().to_string());
    check_preset_models(&mut preset, config, tier);
    super::tools::check_preset_tools(&mut preset, config, tier);
    Ok(preset)
}

/// The YAML text of a preset (loader-set fields are not written).
pub fn preset_to_yaml(preset: &Preset) -> Result<String, serde_yaml::Error> {
    serde_yaml::to_string(preset)
}

fn invalid(path: &Path, location: &str, message: String) -> PresetError {
    PresetError::Invalid {
        path: path.display().to_string(),
        location: location.to_string(),
        message,
    }
}

/// Where a level's settings are written: after each of `anchors` in turn (the team's own at
/// the start of a line).
struct Level {
    anchors: Vec<String>,
    prefix: String,
}

/// The `sandbox:` and `hooks:` of the team and of each member; on a problem, its message and
/// ` line L` of the key it is under (the member's own, not the first such key of the file).
fn check_sandbox_and_hooks(preset: &Preset, text: &str) -> Result<(), (String, String)> {
    let mut levels: Vec<(Level, &crate::sandbox::SandboxSettings, &crate::hooks::Hooks)> = vec![(
        Level {
            anchors: Vec::new(),
            prefix: String::new(),
        },
        &preset.sandbox,
        &preset.hooks,
    )];
    for (who, agent) in [
        ("orchestrator", &preset.orchestrator),
        ("evaluator", &preset.evaluator),
    ] {
        if let Some(a) = agent {
            let level = Level {
                anchors: vec![format!("{who}:")],
                prefix: format!("{who}."),
            };
            levels.push((level, &a.sandbox, &a.hooks));
        }
    }
    for (i, w) in preset.workers.iter().enumerate() {
        let level = Level {
            anchors: vec!["workers:".into(), format!("name: {}", w.name)],
            prefix: format!("workers[{i}]."),
        };
        levels.push((level, &w.sandbox, &w.hooks));
    }
    for (level, sandbox, hooks) in levels {
        let problem = match sandbox.validate(&format!("{}sandbox", level.prefix)) {
            Err(e) => Some(("sandbox:", e)),
            Ok(()) => hooks
                .validate(&format!("{}hooks", level.prefix))
                .err()
                .map(|e| ("hooks:", e)),
        };
        if let Some((key, message)) = problem {
            return Err((line_under(text, &level.anchors, key), message));
        }
    }
    Ok(())
}

/// ` line L` of the first line holding `key` after each of `anchors` in turn (on an anchor's
/// line too: `{ name: a, hooks: … }`); without anchors, of the first line that starts with
/// it. Nothing when not found.
fn line_under(text: &str, anchors: &[String], key: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0;
    for anchor in anchors {
        match lines[at..].iter().position(|l| l.contains(anchor.as_str())) {
            Some(i) => at += i,
            None => return String::new(),
        }
    }
    lines[at..]
        .iter()
        .position(|l| match anchors.is_empty() {
            true => l.starts_with(key),
            false => l.contains(key),
        })
        .map(|i| format!(" line {}", at + i + 1))
        .unwrap_or_default()
}

/// ` line L` of the `nth` (0-based) line containing `needle`, or nothing when not found.
/// Validation happens after deserialising, where serde has no positions left; the offending
/// value's own line is what a reader needs.
fn line_of(text: &str, needle: &str, nth: usize) -> String {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(nth)
        .map(|(i, _)| format!(" line {}", i + 1))
        .unwrap_or_default()
}

fn validate(preset: &mut Preset, text: &str, path: &Path) -> Result<(), PresetError> {
    let err = |needle: &str, nth: usize, message: String| invalid(path, &line_of(text, needle, nth), message);
    preset.name = preset.name.trim().to_string();
    if preset.name.is_empty() {
        return Err(err("name:", 0, "name: must not be empty".into()));
    }
    if preset.workers.is_empty() {
        return Err(err(
            "workers",
            0,
            "workers: a preset needs at least one worker".into(),
        ));
    }
    for (i, w) in preset.workers.iter().enumerate() {
        let name = w.name.trim();
        if name.is_empty() {
            return Err(err(
                "name:",
                i + 1,
                format!("workers[{i}].name: must not be empty"),
            ));
        }
        let lower = name.to_lowercase();
        if let Some(j) = preset.workers[..i]
            .iter()
            .position(|o| o.name.trim().to_lowercase() == lower)
        {
            // The later spelling is the offending one.
            let location = text
                .lines()
                .enumerate()
                .filter(|(_, l)| l.to_lowercase().contains(&lower))
                .last()
                .map(|(n, _)| format!(" line {}", n + 1))
                .unwrap_or_default();
            return Err(invalid(
                path,
                &location,
                format!(
                    "workers[{i}].name: `{name}` is already the name of workers[{j}] (names are unique ignoring case)"
                ),
            ));
        }
    }
    for w in &mut preset.workers {
        w.name = w.name.trim().to_string();
    }
    if preset.mode.spec().has_orchestrator && preset.orchestrator.is_none() {
        return Err(err(
            "mode:",
            0,
            format!(
                "orchestrator: mode {} needs an `orchestrator:` entry",
                preset.mode
            ),
        ));
    }
    check_mode_keys(preset, text, path)?;
    check_mode_settings(preset, text, path)?;
    if let Some(Err(e)) = preset.max_iterations.map(check_max_iterations) {
        return Err(err("max_iterations", 0, format!("max_iterations: {e}")));
    }
    if preset.worker_timeout_secs == Some(0) {
        return Err(err(
            "worker_timeout_secs",
            0,
            "worker_timeout_secs: must be at least 1".into(),
        ));
    }
    if let Err(e) = preset.budget().validate() {
        return Err(err(e.key, 0, e.to_string()));
    }
    check_limits(preset, text, path)?;
    check_sandbox_and_hooks(preset, text).map_err(|(line, message)| invalid(path, &line, message))?;
    let mut rounds: Vec<(String, u32)> = Vec::new();
    for (who, agent) in [
        ("orchestrator", &preset.orchestrator),
        ("evaluator", &preset.evaluator),
    ] {
        if let Some(n) = agent.as_ref().and_then(|a| a.max_tool_rounds) {
            rounds.push((format!("{who}.max_tool_rounds"), n));
        }
    }
    for (i, w) in preset.workers.iter().enumerate() {
        if let Some(n) = w.max_tool_rounds {
            rounds.push((format!("workers[{i}].max_tool_rounds"), n));
        }
    }
    let allowed = crate::tools::limits::MAX_TOOL_ROUNDS;
    for (nth, (key, n)) in rounds.iter().enumerate() {
        if !allowed.contains(n) {
            return Err(err(
                "max_tool_rounds",
                nth,
                format!(
                    "{key}: {n} is out of range; use {} to {}",
                    allowed.start(),
                    allowed.end()
                ),
            ));
        }
    }
    let mut slugs: Vec<(String, &str)> = Vec::new();
    if let Some(m) = preset.orchestrator.as_ref().and_then(|o| o.model.as_deref()) {
        slugs.push(("orchestrator.model".into(), m));
    }
    if let Some(m) = preset.evaluator.as_ref().and_then(|o| o.model.as_deref()) {
        slugs.push(("evaluator.model".into(), m));
    }
    for (i, w) in preset.workers.iter().enumerate() {
        if let Some(m) = w.model.as_deref() {
            slugs.push((format!("workers[{i}].model"), m));
        }
    }
    for (key, slug) in slugs {
        if split_slug(slug).is_err() {
            return Err(err(
                slug,
                0,
                format!("{key}: `{slug}` is not of the form <provider>/<model>"),
            ));
        }
    }
    Ok(())
}

/// The keys of one mode set on a preset of another (its row's `preset_keys` and `worker_keys`
/// in [`crate::model::ModeSpec`]) are ignored, with a warning; a key the preset's mode refuses
/// (`refused_keys`) is an error. A key counts as set when it would be written (a value other
/// than its default).
fn check_mode_keys(preset: &mut Preset, text: &str, path: &Path) -> Result<(), PresetError> {
    let Ok(serde_json::Value::Object(keys)) = serde_json::to_value(&*preset) else {
        return Ok(());
    };
    for (key, why) in preset.mode.spec().refused_keys {
        if keys.contains_key(*key) {
            let location = line_of(text, &format!("{key}:"), 0);
            return Err(invalid(path, &location, format!("{key}: {why}")));
        }
    }
    let workers: Vec<&serde_json::Map<String, serde_json::Value>> = keys
        .get("workers")
        .and_then(serde_json::Value::as_array)
        .map(|list| list.iter().filter_map(serde_json::Value::as_object).collect())
        .unwrap_or_default();
    for owner in Mode::ALL.iter().copied().filter(|m| *m != preset.mode) {
        let row = owner.spec();
        let worker_keys: Vec<&str> = row
            .worker_keys
            .iter()
            .copied()
            .filter(|k| workers.iter().any(|w| w.contains_key(*k)))
            .collect();
        if !worker_keys.is_empty() {
            let linked: Vec<&str> = preset
                .workers
                .iter()
                .zip(&workers)
                .filter(|(_, w)| worker_keys.iter().any(|k| w.contains_key(*k)))
                .map(|(p, _)| p.name.as_str())
                .collect();
            preset.warnings.push(format!(
                "{} of {} are only used in mode {owner}; ignored in mode {}",
                worker_keys.join("/"),
                linked.join(", "),
                preset.mode
            ));
        }
        let set: Vec<&str> = row
            .preset_keys
            .iter()
            .copied()
            .filter(|k| keys.contains_key(*k))
            .collect();
        if !set.is_empty() {
            let warning = ignored_keys(&set.join("/"), owner, preset.mode);
            preset.warnings.push(warning);
        }
    }
    Ok(())
}

/// The preset's mode's own settings, checked by its model file (its row's `check_preset`);
/// the error is on the line the check points at, else on the `mode:` line. In a mode where only
/// workers take part, an orchestrator or evaluator is a warning.
fn check_mode_settings(preset: &mut Preset, text: &str, path: &Path) -> Result<(), PresetError> {
    let row = preset.mode.spec();
    (row.check_preset)(preset).map_err(|problem| {
        let location = problem
            .at
            .iter()
            .map(|(needle, nth)| line_of(text, needle, *nth))
            .find(|l| !l.is_empty())
            .unwrap_or_else(|| line_of(text, "mode:", 0));
        invalid(path, &location, problem.message)
    })?;
    // A relay's length is its own `relay.max_turns`.
    if preset.mode == Mode::Relay
        && let Some(n) = preset.max_iterations
    {
        let turns = preset.relay.as_ref().map_or(0, |r| r.max_turns);
        preset.warnings.push(format!(
            "max_iterations: {n} is ignored in mode relay; it ends after relay.max_turns ({turns}) turns"
        ));
    }
    if let Some(who) = row.only_workers
        && (preset.orchestrator.is_some() || preset.evaluator.is_some())
    {
        preset.warnings.push(format!(
            "orchestrator/evaluator: mode {} runs only {who}; they take no part",
            preset.mode
        ));
    }
    Ok(())
}

/// Mode `dispatch`'s guardrails and mode `team`'s turn limits are in range in any preset (in
/// another mode they are ignored, see [`check_mode_keys`]); the allow-list names workers.
fn check_limits(preset: &Preset, text: &str, path: &Path) -> Result<(), PresetError> {
    let err = |needle: &str, message: String| invalid(path, &line_of(text, needle, 0), message);
    let dispatch = preset.dispatch_limits();
    if let Err(e) = dispatch.validate() {
        return Err(err(e.key, e.to_string()));
    }
    if let Err(e) = preset.team_limits().validate() {
        return Err(err(e.key, e.to_string()));
    }
    for (i, name) in dispatch.sub_agents.iter().enumerate() {
        if !preset
            .workers
            .iter()
            .any(|w| w.name.eq_ignore_ascii_case(name.trim()))
        {
            let names: Vec<&str> = preset.workers.iter().map(|w| w.name.as_str()).collect();
            return Err(err(
                "sub_agents",
                format!(
                    "sub_agents[{i}]: `{name}` is not a worker of this preset (workers: {})",
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::parse("default_model: sim/default\n", Path::new("c.yaml")).unwrap()
    }

    fn parse(text: &str) -> Result<Preset, PresetError> {
        parse_preset(text, Path::new("/p/team.yaml"), Tier::User, &config())
    }

    #[test]
    fn a_preset_sets_its_limit_wait_and_fallback_models() {
        let text = "name: Night\nmode: orchestrator\nrate_limit_wait_secs: 3600\norchestrator: { fallback_model: sim/small }\nworkers:\n  - { name: a, fallback_model: sim/other }\n  - { name: b }\n";
        let p = parse(text).unwrap();
        assert_eq!(p.rate_limit_wait_secs, Some(3600));
        assert_eq!(
            p.orchestrator.as_ref().and_then(|o| o.fallback_model.as_deref()),
            Some("sim/small")
        );
        assert_eq!(p.workers[0].fallback_model.as_deref(), Some("sim/other"));
        assert_eq!(p.workers[1].fallback_model, None);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    }

    #[test]
    fn workers_and_the_orchestrator_name_tool_servers_and_round_limits() {
        let text = "name: Fixers\nmode: orchestrator\norchestrator: { tools: [git] }\nworkers:\n  - { name: a, tools: [git, time, git], max_tool_rounds: 10 }\n  - { name: b }\n";
        let p = parse(text).unwrap();
        assert_eq!(p.orchestrator.as_ref().unwrap().tools, vec!["git"]);
        assert_eq!(p.workers[0].tools, vec!["git", "time"], "duplicates dropped");
        assert_eq!(p.workers[0].max_tool_rounds, Some(10));
        assert!(p.workers[1].tools.is_empty());
        assert!(
            p.warnings.iter().any(|w| w.contains("git, time not configured")),
            "{:?}",
            p.warnings
        );
        let bad =
            "name: X\nmode: broadcast\nworkers:\n  - { name: a }\n  - { name: b, max_tool_rounds: 0 }\n";
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("line 5") && err.contains("workers[1].max_tool_rounds: 0 is out of range"),
            "{err}"
        );
    }

    #[test]
    fn the_team_and_each_member_may_set_a_sandbox_and_hooks() {
        let text = "name: Safe\nmode: broadcast\nsandbox: { mode: workspace-write, network: off }\nhooks:\n  iteration_finished: [{ command: [cargo, test] }]\nworkers:\n  - name: a\n    sandbox: { mode: read-only }\n    hooks: { pre_tool_use: [{ matcher: \"git__.*\", command: [/bin/guard] }] }\n  - { name: b }\n";
        let p = parse(text).unwrap();
        assert_eq!(p.sandbox.network, Some(crate::sandbox::Network::Off));
        assert_eq!(p.hooks.iteration_finished.len(), 1);
        assert_eq!(
            p.workers[0].sandbox.mode,
            Some(crate::sandbox::SandboxMode::ReadOnly)
        );
        assert_eq!(p.workers[0].hooks.pre_tool_use[0].command, ["/bin/guard"]);
        let bad = "name: X\nmode: broadcast\nworkers:\n  - name: a\n    hooks: { pre_tool_use: [{ matcher: \"(\", command: [x] }] }\n";
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("line 5") && err.contains("workers[0].hooks.pre_tool_use[0].matcher"),
            "{err}"
        );
        let bad = "name: X\nmode: broadcast\nsandbox: { mode: off, network: off }\nworkers: [{ name: a }]\n";
        assert!(parse(bad).unwrap_err().to_string().contains("line 3"));
        // A member's problem is on its own key's line, not on the first `hooks:` of the file
        // (the team's) or the first `sandbox:` (a member before it).
        let bad = "name: X\nmode: orchestrator\nhooks:\n  iteration_finished: [{ command: [make] }]\norchestrator:\n  sandbox: { mode: read-only }\n  hooks: { pre_tool_use: [{ matcher: \"(\", command: [x] }] }\nworkers:\n  - name: a\n    sandbox: { mode: read-only }\n  - name: b\n    hooks: { pre_tool_use: [{ matcher: \"[\", command: [x] }] }\n";
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("line 7") && err.contains("orchestrator.hooks"),
            "{err}"
        );
        let bad = bad.replace("matcher: \"(\"", "matcher: \"x\"");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(
            err.contains("line 12") && err.contains("workers[1].hooks"),
            "{err}"
        );
        let bad = "name: X\nmode: broadcast\nworkers:\n  - { name: a, sandbox: { mode: read-only } }\n  - { name: b, sandbox: { mode: off, network: off } }\n";
        let err = parse(bad).unwrap_err().to_string();
        assert!(
            err.contains("line 5") && err.contains("workers[1].sandbox"),
            "{err}"
        );
    }

    #[test]
    fn spec_example_loads_with_fallbacks_for_unconfigured_providers() {
        let p = parse(
            r#"
name: Code Review Team
description: Reviews a change from three angles
emoji: "🔍"
mode: orchestrator_reflect
max_iterations: 5
orchestrator: { model: anthropic/claude-sonnet-4-5, prompt: "optional orchestrator system prompt" }
evaluator: { model: openai/gpt-4.1 }
workers:
  - { name: security, model: openai/gpt-4.1-mini, system_prompt: "You are a security auditor ..." }
  - { name: tests, model: ollama/qwen3:8b, system_prompt: "You write and check tests ..." }
  - { name: style, model: sim/fast }
shared_context: "optional: prepended to every worker prompt"
routing_context: "optional: given to the orchestrator when planning"
"#,
        )
        .unwrap();
        assert_eq!(p.workers.len(), 3);
        assert_eq!(p.tier, Some(Tier::User));
        assert_eq!(p.orchestrator.as_ref().unwrap().model, None);
        assert_eq!(p.workers[0].model, None);
        assert_eq!(p.workers[2].model.as_deref(), Some("sim/fast"));
        assert_eq!(p.warnings.len(), 4, "{:?}", p.warnings);
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("worker `tests`") && w.contains("ollama/qwen3:8b"))
        );
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let err = parse("name: X\nmode: broadcast\nworkers:\n  - name: a\n    prompt: hi\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/p/team.yaml line 5"), "{err}");
        assert!(err.contains("workers[0]") && err.contains("prompt"), "{err}");
    }

    #[test]
    fn bad_mode_is_an_error_with_the_accepted_values() {
        let err = parse("name: X\nmode: round_robin\nworkers: [{name: a}]\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2") && err.contains("orchestrator_reflect"),
            "{err}"
        );
    }

    #[test]
    fn duplicate_worker_names_ignoring_case_are_an_error() {
        let err = parse("name: X\nmode: broadcast\nworkers:\n  - name: Alpha\n  - name: alpha\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 5") && err.contains("workers[1].name"), "{err}");
    }

    #[test]
    fn orchestrator_modes_need_an_orchestrator() {
        let err = parse("name: X\nmode: orchestrator\nworkers: [{name: a}]\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("orchestrator:"), "{err}");
        assert!(parse("name: X\nmode: orchestrator\norchestrator: {}\nworkers: [{name: a}]\n").is_ok());
    }

    #[test]
    fn evaluator_outside_reflect_is_a_warning() {
        let p = parse("name: X\nmode: broadcast\nevaluator: {}\nworkers: [{name: a}]\n").unwrap();
        assert!(p.warnings[0].contains("evaluator"), "{:?}", p.warnings);
    }

    #[test]
    fn malformed_values_are_errors() {
        let e = parse("name: X\nmode: broadcast\nworkers: [{name: a, model: gpt4}]\n").unwrap_err();
        assert!(
            e.to_string().contains("workers[0].model") && e.to_string().contains("line 3"),
            "{e}"
        );
        assert!(parse("name: X\nmode: broadcast\nworkers: []\n").is_err());
        assert!(parse("name: X\nmode: broadcast\nmax_iterations: 0\nworkers: [{name: a}]\n").is_err());
        assert!(parse("name: X\nmode: broadcast\nmax_iterations: -3\nworkers: [{name: a}]\n").is_err());
        assert!(parse("name: ' '\nmode: broadcast\nworkers: [{name: a}]\n").is_err());
        assert!(parse("- just a list\n").is_err());
    }

    #[test]
    fn max_iterations_out_of_range_is_an_error_naming_file_line_and_key() {
        for (value, line) in [("0", 3), ("101", 3), ("500", 3)] {
            let text = format!("name: X\nmode: broadcast\nmax_iterations: {value}\nworkers: [{{name: a}}]\n");
            let e = parse(&text).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "/p/team.yaml line {line}: max_iterations: max iterations must be a whole number from 1 to 100, got {value}"
                )
            );
        }
        let p = parse("name: X\nmode: broadcast\nmax_iterations: 100\nworkers: [{name: a}]\n").unwrap();
        assert_eq!(p.max_iterations, Some(100));
    }

    const FLOW: &str = "name: Desk\nmode: flow\nentry: triage\nworkers:\n  - name: triage\n    router: { destinations: [billing, tech] }\n  - name: billing\n  - name: tech\n    advisors: [security]\n    handoff: approver\n  - name: security\n  - name: approver\n";

    #[test]
    fn a_flow_preset_loads_with_its_links() {
        let p = parse(FLOW).unwrap();
        assert_eq!(p.mode, Mode::Flow);
        assert_eq!(p.entry.as_deref(), Some("triage"));
        let tech = &p.workers[2];
        assert_eq!(tech.handoff.as_deref(), Some("approver"));
        assert_eq!(tech.advisors, vec!["security"]);
        assert_eq!(
            p.workers[0].router.as_ref().unwrap().destinations,
            vec!["billing", "tech"]
        );
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(parse(&preset_to_yaml(&p).unwrap()).unwrap(), p);
    }

    #[test]
    fn flow_errors_name_the_file_line_and_member() {
        let cycle = FLOW.replace("  - name: approver\n", "  - name: approver\n    handoff: tech\n");
        let err = parse(&cycle).unwrap_err().to_string();
        assert!(err.starts_with("/p/team.yaml line"), "{err}");
        assert!(err.contains("tech → approver → tech is a cycle"), "{err}");
        let unknown = FLOW.replace("advisors: [security]", "advisors: [legal]");
        let err = parse(&unknown).unwrap_err().to_string();
        assert!(
            err.starts_with("/p/team.yaml line 8:") && err.contains("member `tech`: advisors names `legal`"),
            "{err}"
        );
        let no_dest = FLOW.replace("[billing, tech]", "[]");
        let err = parse(&no_dest).unwrap_err().to_string();
        assert!(
            err.contains("line 5") && err.contains("router has no destinations"),
            "{err}"
        );
        let no_entry = FLOW.replace("entry: triage\n", "");
        let err = parse(&no_entry).unwrap_err().to_string();
        assert!(err.contains("needs an `entry:`"), "{err}");
        let bad_entry = FLOW.replace("entry: triage", "entry: nobody");
        let err = parse(&bad_entry).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("`nobody`"), "{err}");
    }

    const PIPELINE: &str = "name: Desk\nmode: pipeline\nworkers:\n  - name: triage\n  - name: handler\n  - name: reviewer\n  - name: boss\nstages:\n  - phase: intake\n    member: triage\n    next: handling\n  - phase: handling\n    member: handler\n    next: review\n  - phase: review\n    member: reviewer\n    can_return_to: [handling]\nsupervisor: boss\nsupervise: every_turn\nrules:\n  - to: handling\n    intent: \"refund|invoice\"\n    priority: 2\n";

    #[test]
    fn a_pipeline_preset_loads_and_round_trips() {
        let p = parse(PIPELINE).unwrap();
        assert_eq!(p.mode, Mode::Pipeline);
        assert_eq!(p.stages.len(), 3);
        assert_eq!(p.stages[2].can_return_to, vec!["handling"]);
        assert_eq!(p.supervisor.as_deref(), Some("boss"));
        assert_eq!(p.supervise, crate::model::Supervise::EveryTurn);
        assert_eq!(p.rules[0].priority, 2);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(parse(&preset_to_yaml(&p).unwrap()).unwrap(), p);
    }

    #[test]
    fn pipeline_errors_name_the_file_line_and_stage() {
        let ghost = PIPELINE.replace("member: handler", "member: ghost");
        let err = parse(&ghost).unwrap_err().to_string();
        assert!(
            err.starts_with("/p/team.yaml line 13:") && err.contains("stage `handling`: member `ghost`"),
            "{err}"
        );
        let limbo = PIPELINE.replace("can_return_to: [handling]", "can_return_to: [limbo]");
        let err = parse(&limbo).unwrap_err().to_string();
        assert!(
            err.contains("line 15") && err.contains("stage `review`: can_return_to names phase `limbo`"),
            "{err}"
        );
        let twice = PIPELINE.replace("phase: review", "phase: intake");
        let err = parse(&twice).unwrap_err().to_string();
        assert!(
            err.contains("line 15") && err.contains("`intake`: the phase is declared twice"),
            "{err}"
        );
        let regex = PIPELINE.replace("refund|invoice", "refund(");
        let err = parse(&regex).unwrap_err().to_string();
        assert!(
            err.contains("line 22") && err.contains("rule 1 has a bad intent regex"),
            "{err}"
        );
        let boss = PIPELINE.replace("supervisor: boss", "supervisor: nobody");
        assert!(
            parse(&boss)
                .unwrap_err()
                .to_string()
                .contains("supervisor: `nobody`")
        );
        let none = "name: D\nmode: pipeline\nworkers:\n  - name: a\n";
        assert!(
            parse(none)
                .unwrap_err()
                .to_string()
                .contains("at least one stage")
        );
    }

    #[test]
    fn flow_links_outside_flow_mode_are_a_warning() {
        let p = parse(&FLOW.replace("mode: flow", "mode: sequential")).unwrap();
        assert_eq!(p.warnings.len(), 2, "{:?}", p.warnings);
        assert!(p.warnings[0].contains("triage, tech"), "{:?}", p.warnings);
    }

    #[test]
    fn budget_keys_must_be_positive_whole_numbers_naming_file_line_and_key() {
        for key in ["max_duration_secs", "token_budget"] {
            let text = format!("name: X\nmode: broadcast\n{key}: 0\nworkers: [{{name: a}}]\n");
            let e = parse(&text).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "/p/team.yaml line 3: {key}: must be a positive whole number"
                )),
                "{e}"
            );
            let text = format!("name: X\nmode: broadcast\n{key}: -5\nworkers: [{{name: a}}]\n");
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
        let p = parse(
            "name: X\nmode: broadcast\nmax_duration_secs: 600\ntoken_budget: 50000\nworkers: [{name: a}]\n",
        )
        .unwrap();
        assert_eq!(p.budget().max_duration_secs, Some(600));
        assert_eq!(p.budget().token_budget, Some(50000));
        let again = parse(&preset_to_yaml(&p).unwrap()).unwrap();
        assert_eq!(again.budget(), p.budget());
        let p = parse("name: X\nmode: broadcast\nmax_cost_usd: 2.5\nworkers: [{name: a}]\n").unwrap();
        assert_eq!(p.budget().max_cost_usd, Some(2.5));
        assert_eq!(parse(&preset_to_yaml(&p).unwrap()).unwrap().budget(), p.budget());
        let e = parse("name: X\nmode: broadcast\nmax_cost_usd: 0\nworkers: [{name: a}]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/p/team.yaml line 3: max_cost_usd: must be a positive amount (US dollars)"),
            "{e}"
        );
    }

    #[test]
    fn repo_context_is_read_and_written_back() {
        let p =
            parse("name: X\nmode: broadcast\nrepo_context: { instructions: false }\nworkers: [{name: a}]\n")
                .unwrap();
        assert_eq!(p.repo_context.instructions, Some(false));
        assert!(
            preset_to_yaml(&p)
                .unwrap()
                .contains("repo_context:\n  instructions: false")
        );
    }

    #[test]
    fn memory_defaults_to_run_and_names_a_bad_value() {
        let p = parse("name: X\nmode: broadcast\nworkers: [{name: a}]\n").unwrap();
        assert_eq!(p.memory, crate::model::Memory::Run);
        let p = parse("name: X\nmode: broadcast\nmemory: conversation\nworkers: [{name: a}]\n").unwrap();
        assert_eq!(p.memory, crate::model::Memory::Conversation);
        assert!(preset_to_yaml(&p).unwrap().contains("memory: conversation"));
        let e = parse("name: X\nmode: broadcast\nmemory: forever\nworkers: [{name: a}]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("forever"), "{e}");
    }

    #[test]
    fn yaml_round_trip_keeps_every_field() {
        let text = "name: T\ndescription: d\nmode: sequential\nworkers:\n  - { name: a, display_name: A, role: Lead, system_prompt: p }\nshared_context: s\n";
        let p = parse(text).unwrap();
        let again = parse(&preset_to_yaml(&p).unwrap()).unwrap();
        assert_eq!(p, again);
    }

    #[test]
    fn relay_settings_are_checked_naming_file_line_and_key() {
        let base = "name: R\nmode: relay\nworkers: [{name: me}, {name: them}]\n";
        let p = parse(&format!(
            "{base}relay: {{ driver: me, counterpart: them, approval: full_auto }}\n"
        ))
        .unwrap();
        let relay = p.relay.clone().unwrap();
        assert_eq!(relay.approval, crate::model::ApprovalMode::FullAuto);
        assert_eq!(relay.max_turns, 8);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        // `max_iterations` does not bound a relay: said, not silently ignored (review 27-F).
        let p6 = parse(&format!(
            "{base}max_iterations: 6\nrelay: {{ driver: me, counterpart: them }}\n"
        ))
        .unwrap();
        assert_eq!(
            p6.warnings,
            ["max_iterations: 6 is ignored in mode relay; it ends after relay.max_turns (8) turns"]
        );
        let again = parse(&preset_to_yaml(&p).unwrap()).unwrap();
        assert_eq!(again.relay, p.relay);
        for (relay, expected) in [
            ("", "mode relay needs a `relay:` entry"),
            (
                "relay: { driver: me, counterpart: ME }\n",
                "cannot talk to itself",
            ),
            (
                "relay: { driver: ghost, counterpart: them }\n",
                "relay.driver: `ghost` is not a member",
            ),
            (
                "relay: { driver: me, counterpart: them, max_turns: 0 }\n",
                "relay.max_turns: 0 is out of range",
            ),
            (
                "relay:\n  driver: me\n  counterpart: them\n  review:\n    patterns: ['(oops']\n",
                "relay.review.patterns[0]",
            ),
            (
                "relay: { driver: me, counterpart: them, approval: sometimes }\n",
                "approval",
            ),
        ] {
            let e = parse(&format!("{base}{relay}")).unwrap_err().to_string();
            assert!(e.contains(expected), "{relay}: {e}");
            assert!(e.contains("/p/team.yaml"), "{e}");
        }
        let e = parse(&format!(
            "{base}relay:\n  driver: me\n  counterpart: them\n  review:\n    patterns: ['(oops']\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 8"), "the pattern's line: {e}");
        // A relay in another mode is a warning.
        let p = parse("name: B\nmode: broadcast\nworkers: [{name: a}, {name: b}]\nrelay: { driver: a, counterpart: b }\n").unwrap();
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("relay: only used in mode relay; ignored in mode broadcast"))
        );
    }
    /// A YAML value for each mode's own keys, to set them on a preset of another mode.
    fn sample(key: &str) -> Option<&'static str> {
        Some(match key {
            "evaluator" => "{}",
            "relay" => "{ driver: a, counterpart: b }",
            "entry" => "a",
            "stages" => "[{ phase: p, member: a }]",
            "supervisor" => "a",
            "supervise" => "every_turn",
            "rules" => "[{ to: p, intent: x }]",
            "max_concurrent_agents" | "agent_timeout_secs" | "max_budget_secs" => "5",
            "sub_agents" => "[a]",
            "member_max_turns" | "supervisor_max_turns" => "2",
            "handoff" => "b",
            "router" => "{ destinations: [b] }",
            "advisors" => "[b]",
            _ => return None,
        })
    }

    #[test]
    fn a_preset_key_of_one_mode_on_another_is_reported() {
        for owner in Mode::ALL {
            let row = owner.spec();
            let other = if *owner == Mode::Broadcast {
                Mode::Sequential
            } else {
                Mode::Broadcast
            };
            for key in row.preset_keys {
                let value = sample(key).unwrap_or_else(|| panic!("no sample value for `{key}`"));
                let text =
                    format!("name: X\nmode: {other}\n{key}: {value}\nworkers: [{{name: a}}, {{name: b}}]\n");
                let p = parse(&text).unwrap_or_else(|e| panic!("{key}: {e}"));
                let warning = format!("{key}: only used in mode {owner}; ignored in mode {other}");
                assert_eq!(p.warnings, [warning], "{text}");
            }
            for key in row.worker_keys {
                let value = sample(key).unwrap_or_else(|| panic!("no sample value for `{key}`"));
                let text =
                    format!("name: X\nmode: {other}\nworkers: [{{name: a, {key}: {value}}}, {{name: b}}]\n");
                let p = parse(&text).unwrap_or_else(|e| panic!("{key}: {e}"));
                let warning = format!("{key} of a are only used in mode {owner}; ignored in mode {other}");
                assert_eq!(p.warnings, [warning], "{text}");
            }
        }
    }

    #[test]
    fn a_key_the_mode_refuses_is_an_error_on_its_line() {
        for mode in Mode::ALL {
            for (key, why) in mode.spec().refused_keys {
                let value = sample(key).unwrap_or_else(|| panic!("no sample value for `{key}`"));
                let text = format!(
                    "name: X\nmode: {mode}\norchestrator: {{}}\n{key}: {value}\nworkers: [{{name: a}}]\n"
                );
                let e = parse(&text).unwrap_err().to_string();
                assert_eq!(e, format!("/p/team.yaml line 4: {key}: {why}"));
            }
        }
    }

    #[test]
    fn several_keys_of_one_mode_make_one_warning() {
        let p = parse("name: X\nmode: team\norchestrator: {}\nmax_budget_secs: 9\nsub_agents: [a]\nworkers: [{name: a}]\n")
            .unwrap();
        assert_eq!(
            p.warnings,
            ["max_budget_secs/sub_agents: only used in mode dispatch; ignored in mode team"]
        );
    }
}
