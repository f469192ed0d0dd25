//! A preset becomes a team group with its sessions, and a team group becomes a preset again.
//!
//! Session names are `<team-slug>-<worker>` (`<team-slug>-orchestrator`, `<team-slug>-evaluator`),
//! made unique in the organization (see [`crate::naming`]). Each member keeps its preset name's
//! slug as its handle (`Session::handle`), what the team's prompts list and `@worker:`, `relay:`
//! and a saved preset name it by, also when its session name had to be made unique.

use std::path::Path;

use crate::config::Config;
use crate::model::limits::clamp_max_iterations;
use crate::model::{
    FlowLinks, Group, GroupId, GroupKind, ModeSettings, Organization, Preset, PresetAgent, PresetWorker,
    Role, RouterSpec, Session,
};
use crate::naming::{member_session_name, worker_handle, worker_slug};

use super::models::resolved;

/// Re-exported for the TUI's call sites until they use [`crate::naming`] directly.
pub use crate::naming::team_slug;

/// Creates a `team` group from `preset` in `org` (with its orchestrator, workers and evaluator)
/// and returns its id. Models left to the default get `config`'s default model.
/// `<tier>:<name>`: how a team records the preset it came from.
pub fn source_preset_of(preset: &Preset) -> String {
    format!("{}:{}", preset.tier.map_or("user", |t| t.as_str()), preset.name)
}

pub fn create_team_group(
    org: &mut Organization,
    preset: &Preset,
    config: &Config,
    repo: Option<&Path>,
) -> GroupId {
    let mut group = Group::new(org.unique_group_name(&preset.name), GroupKind::Team);
    group.sort_order = org.next_group_sort_order();
    group.mode = preset.mode;
    group.description = preset.description.clone();
    group.emoji = preset.emoji.clone();
    // In the orchestrator modes the orchestrator prompt goes into planning (the group field);
    // in the others an orchestrator is an ordinary participant and it is its system prompt.
    let orchestrator_prompt = preset.orchestrator.as_ref().and_then(|o| o.prompt.clone());
    if preset.mode.spec().has_orchestrator {
        group.orchestrator_prompt = orchestrator_prompt.clone();
    }
    group.shared_context = preset.shared_context.clone();
    group.routing_context = preset.routing_context.clone();
    group.repo = repo.map(Path::to_path_buf);
    // Parsed presets are checked already; one built in code is held to the same range. None:
    // its mode's default (a dispatch team's is not a reflect cycle's).
    group.max_iterations = preset
        .max_iterations
        .map_or(preset.mode.spec().default_max_iterations, clamp_max_iterations);
    if let Some(t) = preset.worker_timeout_secs {
        group.worker_timeout_secs = t;
    }
    group.budget = preset.budget();
    group.memory = preset.memory;
    group.rate_limit_wait_secs = preset.rate_limit_wait_secs;
    group.repo_context = preset.repo_context;
    group.sandbox = preset.sandbox.clone();
    group.hooks = preset.hooks.clone();
    group.source_preset = Some(source_preset_of(preset));
    let team = team_slug(&group.name);
    group.member_slug = Some(team.clone());
    let group_id = group.id.clone();

    let mut order = 0;
    let mut add = |org: &mut Organization, base: String, role: Role, model: Option<&str>| {
        let name = org.unique_session_name(&base);
        let mut s = Session::new(name, group_id.clone(), resolved(model, config));
        s.role = role;
        s.repo = repo.map(Path::to_path_buf);
        s.team = true;
        s.order = order;
        order += 1;
        org.sessions.push(s);
        org.sessions.len() - 1
    };

    // The orchestrator leads the session list; in broadcast and sequential modes it only exists
    // when the preset names one, and then takes part like any session.
    if let Some(o) = &preset.orchestrator {
        let i = add(
            org,
            member_session_name(&team, "orchestrator"),
            Role::Orchestrator,
            o.model.as_deref(),
        );
        if !preset.mode.spec().has_orchestrator {
            org.sessions[i].system_prompt = orchestrator_prompt;
        }
        org.sessions[i].display_name = o.display_name.clone();
        org.sessions[i].tools = o.tools.clone();
        org.sessions[i].max_tool_rounds = o.max_tool_rounds;
        org.sessions[i].fallback_model = o.fallback_model.clone();
        org.sessions[i].handle = Some("orchestrator".into());
        org.sessions[i].sandbox = o.sandbox.clone();
        org.sessions[i].hooks = o.hooks.clone();
    }
    let mut worker_ids: Vec<(String, String)> = Vec::new();
    for w in &preset.workers {
        let i = add(
            org,
            member_session_name(&team, &worker_slug(&w.name)),
            Role::Worker,
            w.model.as_deref(),
        );
        let s = &mut org.sessions[i];
        s.system_prompt = w.system_prompt.clone();
        s.display_name = w.display_name.clone();
        s.member_role = w.role.clone();
        s.handle = Some(worker_slug(&w.name));
        s.tools = w.tools.clone();
        s.max_tool_rounds = w.max_tool_rounds;
        s.fallback_model = w.fallback_model.clone();
        s.sandbox = w.sandbox.clone();
        s.hooks = w.hooks.clone();
        worker_ids.push((w.name.clone(), s.id.clone()));
    }
    let id_of = |name: &str| {
        worker_ids
            .iter()
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name.trim()))
            .map(|(_, id)| id.clone())
    };
    group.settings = ModeSettings::from_preset(preset, id_of);
    link_flow(org, preset, &worker_ids);
    if preset.mode.spec().has_evaluator
        && let Some(e) = &preset.evaluator
    {
        let i = add(
            org,
            member_session_name(&team, "evaluator"),
            Role::Evaluator,
            e.model.as_deref(),
        );
        org.sessions[i].system_prompt = e.prompt.clone();
        org.sessions[i].handle = Some("evaluator".into());
        org.sessions[i].tools = e.tools.clone();
        org.sessions[i].max_tool_rounds = e.max_tool_rounds;
        org.sessions[i].fallback_model = e.fallback_model.clone();
        org.sessions[i].sandbox = e.sandbox.clone();
        org.sessions[i].hooks = e.hooks.clone();
        group.evaluator_id = Some(org.sessions[i].id.clone());
    }
    org.groups.push(group);
    group_id
}

/// A flow preset's links (worker names) stored on the new sessions as session ids, so a later
/// rename of a session changes nothing. A name that names no worker (a preset built in code;
/// parsed ones are checked) is left out.
fn link_flow(org: &mut Organization, preset: &Preset, worker_ids: &[(String, String)]) {
    let id_of = |name: &str| {
        worker_ids
            .iter()
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name.trim()))
            .map(|(_, id)| id.clone())
    };
    for (w, (_, id)) in preset.workers.iter().zip(worker_ids) {
        let links = FlowLinks {
            handoff: w.handoff.as_deref().and_then(id_of),
            router: w.router.as_ref().map(|r| RouterSpec {
                destinations: r.destinations.iter().filter_map(|d| id_of(d)).collect(),
            }),
            advisors: w.advisors.iter().filter_map(|a| id_of(a)).collect(),
        };
        if let Some(s) = org.sessions.iter_mut().find(|s| s.id == *id) {
            s.flow = links;
        }
    }
}

/// The team group `group_id` as a preset (user tier, no source). Models are the sessions'
/// concrete models. `None` when there is no such group.
pub fn preset_from_group(org: &Organization, group_id: &str) -> Option<Preset> {
    let group = org.group(group_id)?;
    let team = group.members_slug();
    let sessions = org.sessions_in(group_id);
    let orchestrator = sessions
        .iter()
        .find(|s| s.role == Role::Orchestrator)
        .map(|s| PresetAgent {
            display_name: s.display_name.clone(),
            model: Some(s.model.clone()),
            prompt: group
                .orchestrator_prompt
                .clone()
                .or_else(|| s.system_prompt.clone()),
            tools: s.tools.clone(),
            max_tool_rounds: s.max_tool_rounds,
            fallback_model: s.fallback_model.clone(),
            sandbox: s.sandbox.clone(),
            hooks: s.hooks.clone(),
        })
        .or_else(|| group.mode.spec().has_orchestrator.then(PresetAgent::default));
    let evaluator_session = org.evaluator_of(group_id);
    let evaluator = evaluator_session.map(|s| PresetAgent {
        display_name: s.display_name.clone(),
        model: Some(s.model.clone()),
        prompt: s.system_prompt.clone(),
        tools: s.tools.clone(),
        max_tool_rounds: s.max_tool_rounds,
        fallback_model: s.fallback_model.clone(),
        sandbox: s.sandbox.clone(),
        hooks: s.hooks.clone(),
    });
    let evaluator_id = evaluator_session.map(|s| s.id.as_str());
    // Flow links name sessions by id; a preset names workers by handle (the one kept on the
    // session: a second team from one preset has unique session names but the same handles).
    let handles = org.member_handles(group_id);
    let handle_of = |id: &str| handles.iter().find(|(s, _)| s == id).map(|(_, h)| h.clone());
    let workers = sessions
        .iter()
        .filter(|s| s.role == Role::Worker && Some(s.id.as_str()) != evaluator_id)
        .map(|s| PresetWorker {
            name: handle_of(&s.id).unwrap_or_else(|| worker_handle(&s.name, &team)),
            display_name: s.display_name.clone(),
            role: s.member_role.clone(),
            model: Some(s.model.clone()),
            system_prompt: s.system_prompt.clone(),
            tools: s.tools.clone(),
            max_tool_rounds: s.max_tool_rounds,
            handoff: s.flow.handoff.as_deref().and_then(handle_of),
            router: s.flow.router.as_ref().map(|r| RouterSpec {
                destinations: r.destinations.iter().filter_map(|d| handle_of(d)).collect(),
            }),
            advisors: s.flow.advisors.iter().filter_map(|a| handle_of(a)).collect(),
            fallback_model: s.fallback_model.clone(),
            sandbox: s.sandbox.clone(),
            hooks: s.hooks.clone(),
        })
        .collect();
    let mut preset = Preset {
        name: preset_name_of(group),
        description: group.description.clone(),
        emoji: group.emoji.clone(),
        mode: group.mode,
        // A relay's length is its `relay.max_turns` (a relay preset's `max_iterations` is a
        // warning).
        max_iterations: (group.mode != crate::model::Mode::Relay).then_some(group.max_iterations),
        worker_timeout_secs: Some(group.worker_timeout_secs),
        max_duration_secs: group.budget.max_duration_secs,
        token_budget: group.budget.token_budget,
        max_cost_usd: group.budget.max_cost_usd,
        orchestrator,
        evaluator,
        workers,
        shared_context: group.shared_context.clone(),
        routing_context: group.routing_context.clone(),
        worktrees: group.worktrees,
        memory: group.memory,
        rate_limit_wait_secs: group.rate_limit_wait_secs,
        repo_context: group.repo_context,
        sandbox: group.sandbox.clone(),
        hooks: group.hooks.clone(),
        ..Preset::default()
    };
    group.settings.to_preset(&mut preset, handle_of);
    Some(preset)
}

/// The preset name a group was made from (`source_preset` is `<tier>:<name>`), else its name.
fn preset_name_of(group: &Group) -> String {
    group
        .source_preset
        .as_deref()
        .and_then(|s| s.split_once(':'))
        .map(|(_, n)| n.to_string())
        .filter(|n| !n.trim().is_empty() && group.name.starts_with(n.as_str()))
        .unwrap_or_else(|| group.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Tier;
    use crate::naming::slug;

    fn preset() -> Preset {
        let text = "name: Review Crew\ndescription: Reviews from two angles\nmode: orchestrator_reflect\nmax_iterations: 7\norchestrator: { prompt: lead well }\nevaluator: { prompt: judge }\nworkers:\n  - { name: Sec Ops, display_name: Sec Ops, role: Security, system_prompt: You audit. }\n  - { name: tests, system_prompt: You test., model: sim/fast }\nshared_context: shared\nrouting_context: routing\n";
        crate::presets::parse_preset(
            text,
            Path::new("x.yaml"),
            Tier::Builtin,
            &Config::from_env(|_| None),
        )
        .unwrap()
    }

    #[test]
    fn a_flow_team_stores_its_links_by_session_id_and_gives_them_back_by_name() {
        let config = Config::from_env(|_| None);
        let text = "name: Desk\nmode: flow\nentry: Triage\nworkers:\n  - name: Triage\n    router: { destinations: [tech] }\n  - name: tech\n    advisors: [sec]\n    handoff: ok\n  - name: sec\n  - name: ok\n";
        let preset = crate::presets::parse_preset(text, Path::new("d.yaml"), Tier::User, &config).unwrap();
        let mut org = Organization::default();
        let id = create_team_group(&mut org, &preset, &config, None);
        let id_of = |name: &str| org.session_by_name(name).unwrap().id.clone();
        assert_eq!(
            org.group(&id).unwrap().settings.flow.entry,
            Some(id_of("desk-triage"))
        );
        let tech = org.session_by_name("desk-tech").unwrap();
        assert_eq!(tech.flow.advisors, vec![id_of("desk-sec")]);
        assert_eq!(tech.flow.handoff, Some(id_of("desk-ok")));
        let triage = org.session_by_name("desk-triage").unwrap();
        assert_eq!(
            triage.flow.router.as_ref().unwrap().destinations,
            vec![id_of("desk-tech")]
        );
        let back = preset_from_group(&org, &id).unwrap();
        assert_eq!(back.entry.as_deref(), Some("triage"));
        assert_eq!(back.workers[1].advisors, vec!["sec"]);
        assert_eq!(back.workers[1].handoff.as_deref(), Some("ok"));
        assert_eq!(
            back.workers[0].router.as_ref().unwrap().destinations,
            vec!["tech"]
        );
        let yaml = crate::presets::preset_to_yaml(&back).unwrap();
        assert!(
            crate::presets::parse_preset(&yaml, Path::new("b.yaml"), Tier::User, &config).is_ok(),
            "{yaml}"
        );
    }

    #[test]
    fn group_has_named_sessions_in_order() {
        let mut org = Organization::default();
        let config = Config::from_env(|_| None);
        let id = create_team_group(&mut org, &preset(), &config, Some(Path::new("/r")));
        let g = org.group(&id).unwrap();
        assert_eq!(g.kind, GroupKind::Team);
        assert_eq!(g.max_iterations, 7);
        assert_eq!(g.source_preset.as_deref(), Some("builtin:Review Crew"));
        let evaluator = org.session_by_name("review-crew-evaluator").unwrap();
        assert_eq!(g.evaluator_id.as_deref(), Some(evaluator.id.as_str()));
        assert_eq!(g.orchestrator_prompt.as_deref(), Some("lead well"));
        let names: Vec<(&str, Role, &str)> = org
            .sessions_in(&id)
            .iter()
            .map(|s| (s.name.as_str(), s.role, s.model.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("review-crew-orchestrator", Role::Orchestrator, "sim/default"),
                ("review-crew-sec-ops", Role::Worker, "sim/default"),
                ("review-crew-tests", Role::Worker, "sim/fast"),
                ("review-crew-evaluator", Role::Evaluator, "sim/default"),
            ]
        );
        assert!(
            org.sessions
                .iter()
                .all(|s| s.team && s.repo.as_deref() == Some(Path::new("/r")))
        );
    }

    #[test]
    fn max_iterations_from_a_preset_made_in_code_are_held_to_the_range() {
        let mut org = Organization::default();
        let config = Config::from_env(|_| None);
        let mut p = preset();
        for (given, kept) in [(0, 1), (1000, 100), (7, 7)] {
            p.max_iterations = Some(given);
            let id = create_team_group(&mut org, &p, &config, None);
            assert_eq!(org.group(&id).unwrap().max_iterations, kept);
        }
        p.max_iterations = None;
        let id = create_team_group(&mut org, &p, &config, None);
        assert_eq!(
            org.group(&id).unwrap().max_iterations,
            crate::model::DEFAULT_MAX_ITERATIONS
        );
        // A dispatch preset that says none gets dispatch's default (review 28 item 13).
        p.mode = crate::model::Mode::Dispatch;
        let id = create_team_group(&mut org, &p, &config, None);
        assert_eq!(org.group(&id).unwrap().max_iterations, 12);
    }

    #[test]
    fn second_group_gets_unique_names() {
        let mut org = Organization::default();
        let config = Config::from_env(|_| None);
        create_team_group(&mut org, &preset(), &config, None);
        let id = create_team_group(&mut org, &preset(), &config, None);
        let g = org.group(&id).unwrap();
        assert_eq!(g.name, "Review Crew (2)");
        assert!(
            org.sessions_in(&id)
                .iter()
                .any(|s| s.name == "review-crew-2-tests")
        );
        let mut names: Vec<&str> = org.sessions.iter().map(|s| s.name.as_str()).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
        let back = preset_from_group(&org, &id).unwrap();
        assert_eq!(back.name, "Review Crew");
        assert_eq!(back.workers[1].name, "tests");
    }

    #[test]
    fn a_team_whose_session_names_were_made_unique_gives_back_its_members_by_handle() {
        // `huddle run --preset` renames each team it makes, so the next one is named after the
        // preset again and its sessions get suffixes (`review-crew-tests-2`).
        let mut org = Organization::default();
        let config = Config::from_env(|_| None);
        let first = create_team_group(&mut org, &preset(), &config, None);
        org.group_mut(&first).unwrap().name = "Review Crew · run 1".into();
        let id = create_team_group(&mut org, &preset(), &config, None);
        assert!(
            org.sessions_in(&id)
                .iter()
                .any(|s| s.name == "review-crew-tests-2")
        );
        let back = preset_from_group(&org, &id).unwrap();
        let names: Vec<&str> = back.workers.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["sec-ops", "tests"]);
    }

    #[test]
    fn round_trip_keeps_names_roles_prompts_and_contexts() {
        let mut org = Organization::default();
        let config = Config::from_env(|_| None);
        let p = preset();
        let id = create_team_group(&mut org, &p, &config, None);
        let back = preset_from_group(&org, &id).unwrap();
        assert_eq!(back.name, p.name);
        assert_eq!(back.description, p.description);
        assert_eq!(org.group(&id).unwrap().description, p.description);
        assert_eq!(back.mode, p.mode);
        assert_eq!(back.max_iterations, p.max_iterations);
        type Row = (String, Option<String>, Option<String>, Option<String>);
        let strip = |ws: &[PresetWorker]| -> Vec<Row> {
            ws.iter()
                .map(|w| {
                    (
                        slug(&w.name),
                        w.display_name.clone(),
                        w.role.clone(),
                        w.system_prompt.clone(),
                    )
                })
                .collect()
        };
        assert_eq!(strip(&back.workers), strip(&p.workers));
        assert_eq!(back.shared_context, p.shared_context);
        assert_eq!(back.routing_context, p.routing_context);
        assert_eq!(back.orchestrator.unwrap().prompt, p.orchestrator.unwrap().prompt);
        assert_eq!(back.evaluator.unwrap().prompt, p.evaluator.unwrap().prompt);
    }
}
