//! The three tiers (built-in < user < repo), their listing, and broken sources being reported.

use std::fs;
use std::path::{Path, PathBuf};

use huddle::config::{Config, Paths};
use huddle::model::{Mode, Tier};
use huddle::presets::builtin::BUILTIN_FILES;
use huddle::presets::catalog::Catalog;
use huddle::presets::cli::{presets_list, presets_show};

struct Env {
    _tmp: tempfile::TempDir,
    paths: Paths,
    repo: PathBuf,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let paths = Paths::single(tmp.path().join("home"));
    let repo = tmp.path().join("proj");
    fs::create_dir_all(paths.presets_dir()).unwrap();
    fs::create_dir_all(&repo).unwrap();
    Env {
        _tmp: tmp,
        paths,
        repo,
    }
}

fn write(dir: &Path, name: &str, text: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join(name), text).unwrap();
}

fn config() -> Config {
    Config::from_env(|_| None)
}

#[test]
fn builtins_alone() {
    let e = env();
    let c = Catalog::load(&e.paths, &config(), None);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    assert_eq!(c.presets.len(), BUILTIN_FILES.len());
    assert!(c.presets.iter().all(|p| p.tier == Some(Tier::Builtin)));
    assert_eq!(
        c.find("implement & challenge").unwrap().name,
        "Implement & Challenge"
    );
}

#[test]
fn user_shadows_builtin_and_repo_shadows_both() {
    let e = env();
    write(
        &e.paths.presets_dir(),
        "mine.yaml",
        "name: code review team\nmode: broadcast\nworkers: [{name: solo}]\n",
    );
    write(
        &e.paths.presets_dir(),
        "planning.yaml",
        "name: Planning Team\nmode: sequential\nworkers: [{name: a}, {name: b}]\n",
    );
    write(
        &e.repo.join(".squad"),
        "team.md",
        "# Squad Team — Planning Team\n\n| Name | Role |\n|---|---|\n| Ann | Planner |\n",
    );
    let c = Catalog::load(&e.paths, &config(), Some(&e.repo));
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    assert_eq!(c.presets.len(), BUILTIN_FILES.len(), "two shadowed, none added");

    let review = c.find("Code Review Team").unwrap();
    assert_eq!(review.tier, Some(Tier::User));
    assert_eq!(review.mode, Mode::Broadcast);
    assert!(
        review
            .warnings
            .iter()
            .any(|w| w.contains("shadows the builtin preset")),
        "{:?}",
        review.warnings
    );

    let planning = c.find("planning team").unwrap();
    assert_eq!(planning.tier, Some(Tier::Repo));
    assert_eq!(planning.workers[0].name, "ann");
    assert!(
        planning
            .warnings
            .iter()
            .any(|w| w.contains("shadows the user preset")),
        "{:?}",
        planning.warnings
    );

    let shadowed: Vec<(Option<Tier>, &str)> = c.shadowed.iter().map(|p| (p.tier, p.name.as_str())).collect();
    assert!(shadowed.contains(&(Some(Tier::Builtin), "Code Review Team")));
    assert!(shadowed.contains(&(Some(Tier::Builtin), "Planning Team")));
    assert!(shadowed.contains(&(Some(Tier::User), "Planning Team")));

    // Repo first, then user, then built-in.
    let tiers: Vec<Tier> = c.presets.iter().filter_map(|p| p.tier).collect();
    let mut sorted = tiers.clone();
    sorted.sort_by_key(|t| std::cmp::Reverse(*t as u8));
    assert_eq!(tiers, sorted);

    let text = presets_list(&c, &config(), false);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("TIER") && lines[0].contains("WORKERS"));
    assert!(
        lines[1].starts_with("Planning Team") && lines[1].contains("repo"),
        "{text}"
    );
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        row,
        ["code", "review", "team", "user", "broadcast", "1", "1"],
        "{text}"
    );
    assert!(text.contains("warnings:") && text.contains("shadows"), "{text}");
}

#[test]
fn broken_user_file_is_reported_and_the_rest_load() {
    let e = env();
    write(
        &e.paths.presets_dir(),
        "a-broken.yaml",
        "name: Broken\nmode: broadcast\nwrokers: []\n",
    );
    write(
        &e.paths.presets_dir(),
        "b-good.yaml",
        "name: Good\nmode: broadcast\nworkers: [{name: x}]\n",
    );
    write(
        &e.paths.presets_dir(),
        "c-dup.yaml",
        "name: GOOD\nmode: broadcast\nworkers: [{name: y}]\n",
    );
    write(&e.paths.presets_dir(), "notes.txt", "not a preset");
    let c = Catalog::load(&e.paths, &config(), None);
    assert!(c.find("Good").is_some());
    assert!(c.find("Broken").is_none());
    assert_eq!(c.errors.len(), 2, "{:?}", c.errors);
    let broken = c.errors[0].to_string();
    assert!(
        broken.contains("a-broken.yaml line 3") && broken.contains("wrokers"),
        "{broken}"
    );
    assert!(
        c.errors[1].to_string().contains("already defined"),
        "{}",
        c.errors[1]
    );
    let text = presets_list(&c, &config(), false);
    assert!(
        text.contains("error: user preset") && text.contains("wrokers"),
        "{text}"
    );
}

#[test]
fn unusable_repo_team_is_listed_as_an_error() {
    let e = env();
    write(&e.repo.join(".squad"), "routing.md", "# Routing\n");
    let c = Catalog::load(&e.paths, &config(), Some(&e.repo));
    assert_eq!(c.errors.len(), 1);
    assert_eq!(c.errors[0].tier, Tier::Repo);
    let text = presets_list(&c, &config(), false);
    assert!(text.contains("no team.md"), "{text}");
}

#[test]
fn json_list_and_show() {
    let e = env();
    write(
        &e.paths.presets_dir(),
        "t.yaml",
        "name: T\nmode: orchestrator_reflect\norchestrator: {model: nowhere/x}\nevaluator: {}\nworkers:\n  - {name: a, role: Lead, system_prompt: \"Line one\\nline two\", model: sim/fast}\nshared_context: ctx\n",
    );
    let c = Catalog::load(&e.paths, &config(), None);
    let list: serde_json::Value = serde_json::from_str(&presets_list(&c, &config(), true)).unwrap();
    let arr = list.as_array().unwrap();
    assert_eq!(arr.len(), BUILTIN_FILES.len() + 1);
    let t = &arr[0];
    assert_eq!(t["name"], "T");
    assert_eq!(t["tier"], "user");
    assert_eq!(t["mode"], "orchestrator_reflect");
    assert_eq!(
        t["orchestrator"]["model"], "sim/default",
        "resolved after fallback"
    );
    assert_eq!(t["evaluator"]["model"], "sim/default");
    assert_eq!(t["workers"][0]["name"], "a");
    assert_eq!(t["workers"][0]["display_name"], "a");
    assert_eq!(t["workers"][0]["role"], "Lead");
    assert_eq!(t["workers"][0]["model"], "sim/fast");
    assert_eq!(t["max_iterations"], 5);
    assert!(t["warnings"][0].as_str().unwrap().contains("nowhere/x"));
    assert!(t["source"].as_str().unwrap().ends_with("t.yaml"));

    let show: serde_json::Value =
        serde_json::from_str(&presets_show(&c, &config(), "t", true).unwrap()).unwrap();
    assert_eq!(show["workers"][0]["system_prompt"], "Line one\nline two");
    assert_eq!(show["shared_context"], "ctx");
    assert_eq!(show["routing_context"], serde_json::Value::Null);

    let text = presets_show(&c, &config(), "T", false).unwrap();
    assert!(text.contains("@worker:a  Lead  [sim/fast]"), "{text}");
    assert!(text.contains("Line one") && !text.contains("line two"), "{text}");
    assert!(text.contains("shared context: 3 characters"), "{text}");

    let err = presets_show(&c, &config(), "nope", false).unwrap_err();
    assert!(err.to_string().contains("Planning Team"), "{err}");
}

#[test]
fn this_repository_team_loads() {
    let e = env();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let c = Catalog::load(&e.paths, &config(), Some(repo));
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let team = c.presets.iter().find(|p| p.tier == Some(Tier::Repo)).unwrap();
    assert_eq!(team.name, "huddle core team");
    assert!(team.warnings.is_empty(), "{:?}", team.warnings);
    let names: Vec<&str> = team.workers.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["engine", "tui", "providers", "reviewer"]);
    for w in &team.workers {
        let prompt = w.system_prompt.as_deref().unwrap();
        assert!(
            prompt.starts_with("# "),
            "{}: a charter, not a role prompt",
            w.name
        );
    }
    assert!(team.routing_context.as_deref().unwrap().contains("@worker:"));
    assert!(team.shared_context.as_deref().unwrap().contains("unwrap"));
}

/// Review 26-2 finding 15: `presets show` says a preset's sandbox and hooks (team and member,
/// a hook's own sandbox), in text and JSON.
#[test]
fn presets_show_says_the_sandbox_and_the_hooks() {
    let e = env();
    let text = "name: Guarded\nmode: broadcast\nsandbox: { mode: read-only, network: off }\nhooks:\n  turn_finished: [{ command: [/bin/sh, check.sh], timeout_secs: 5 }]\nworkers:\n  - name: w\n    sandbox: { allow_write: [/var/tmp/cache] }\n    hooks:\n      pre_tool_use: [{ matcher: \"git__.*\", command: [guard], sandbox: { mode: off }, on_error: deny }]\n";
    write(&e.paths.presets_dir(), "guarded.yaml", text);
    let c = Catalog::load(&e.paths, &config(), None);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let shown = presets_show(&c, &config(), "guarded", false).unwrap();
    for line in [
        "\nsandbox: read-only, network off\n",
        "\nhook turn_finished: sh check.sh, 5 s\n",
        "\n      sandbox: allow_write /var/tmp/cache\n",
        "\n      hook pre_tool_use: guard (tools git__.*), 60 s, sandbox: off, on error: deny\n",
    ] {
        assert!(shown.contains(line), "{line:?} in:\n{shown}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&presets_show(&c, &config(), "guarded", true).unwrap()).unwrap();
    assert_eq!(json["sandbox"]["network"], "off");
    assert_eq!(json["hooks"]["turn_finished"][0]["command"][1], "check.sh");
    assert_eq!(
        json["workers"][0]["hooks"]["pre_tool_use"][0]["sandbox"]["mode"],
        "off"
    );
}

#[test]
fn dispatch_guardrails_are_read_shown_checked_and_kept_through_a_team() {
    let e = env();
    let text = "name: Probe\nmode: dispatch\nmax_concurrent_agents: 3\nagent_timeout_secs: 90\nsub_agents: [Logs]\norchestrator: { prompt: lead }\nworkers: [{name: logs}, {name: metrics}]\n";
    write(&e.paths.presets_dir(), "probe.yaml", text);
    let c = Catalog::load(&e.paths, &config(), None);
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    let shown = presets_show(&c, &config(), "probe", false).unwrap();
    assert!(
        shown.contains("dispatch: 3 sub-agents at once · 90s each · 600s to conclude · may dispatch Logs"),
        "{shown}"
    );
    let preset = c.find("probe").unwrap();
    assert!(preset.warnings.is_empty(), "{:?}", preset.warnings);
    let mut org = huddle::model::Organization::default();
    let id = huddle::presets::create_team_group(&mut org, preset, &config(), None);
    let group = org.group(&id).unwrap();
    assert_eq!(group.settings.dispatch.max_concurrent_agents, Some(3));
    let back = huddle::presets::preset_from_group(&org, &id).unwrap();
    assert_eq!(back.dispatch_limits(), preset.dispatch_limits());

    // An allow-list naming no worker, a zero limit: errors naming the file, line and key.
    for (bad, expected) in [
        ("sub_agents: [ghost]\n", "sub_agents[0]: `ghost` is not a worker"),
        ("max_budget_secs: 0\n", "max_budget_secs: 0 is out of range"),
    ] {
        write(
            &e.paths.presets_dir(),
            "bad.yaml",
            &format!("name: Bad\nmode: dispatch\norchestrator: {{}}\nworkers: [{{name: logs}}]\n{bad}"),
        );
        let c = Catalog::load(&e.paths, &config(), None);
        let err = c
            .errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(err.contains("bad.yaml line 5") && err.contains(expected), "{err}");
    }
}
