//! Discovering a repo's Squad team and turning it into a repo-tier preset.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::model::modes::{ignored_keys, key_mode};
use crate::model::{ApprovalMode, Mode, Preset, PresetAgent, PresetWorker, Tier};

use super::SquadError;
use super::charter::{charter_prompt, charter_role, front_matter_tools, model_hint, role_prompt};
use super::extras::{EXTRAS_FILE, Extras};
use super::roster::{Member, SQUAD_DEFAULT_MODE, TeamDoc, is_coordinator, is_special, parse_team, squash};
use super::safety::{Refusal, TeamDir, TextFile};
use crate::model::limits::check_max_iterations;
use crate::naming::slug;
use crate::presets::cap_chars;
use crate::presets::models::check_model;
use crate::text::sanitize::display;

/// `routing.md` and `decisions.md` are cut to this many characters (the cut is marked).
pub const CONTEXT_MAX_CHARS: usize = 8_000;

/// Team headings that name no team: `Squad Team`, `Team Roster`, ... (alone, or before ` — X`).
const GENERIC_TITLES: &[&str] = &[
    "squad team",
    "team roster",
    "squad roster",
    "squad",
    "team",
    "roster",
];

/// The repo's team folder: `.squad/` when it has a `team.md`, else `.ai-team/` when it has one,
/// else whichever of the two exists (so its lack of a `team.md` can be reported).
pub fn team_dir(repo: &Path) -> Option<PathBuf> {
    let candidates = [repo.join(".squad"), repo.join(".ai-team")];
    candidates
        .iter()
        .find(|d| d.join("team.md").exists())
        .or_else(|| candidates.iter().find(|d| d.is_dir()))
        .cloned()
}

/// The repo's Squad team as a preset. `Ok(None)`: the repo has no team folder. An error: it has
/// one that cannot be used, and the error says why.
pub fn discover(repo: &Path, config: &Config) -> Result<Option<Preset>, SquadError> {
    let Some(dir) = team_dir(repo) else {
        return Ok(None);
    };
    let unreadable = |path: &Path, r: Refusal| SquadError::Unreadable {
        path: path.to_path_buf(),
        reason: format!("refused: it {r}"),
    };
    let team = TeamDir::open(repo, &dir).map_err(|r| unreadable(&dir, r))?;
    let team_md = dir.join("team.md");
    let file = match team.read(Path::new("team.md")) {
        Ok(f) => f,
        Err(Refusal::Missing) => return Err(SquadError::NoTeamFile { dir }),
        Err(r) => return Err(unreadable(&team_md, r)),
    };
    let mut warnings = Vec::new();
    note_lossy(&file, "team.md", &mut warnings);
    let doc = parse_team(&file.text);
    let name = team_name(doc.title.as_deref(), &repo_name(&team.repo));
    let mode = match doc.mode.as_deref().map(str::parse::<Mode>) {
        None => SQUAD_DEFAULT_MODE,
        Some(Ok(m)) => m,
        Some(Err(e)) => {
            warnings.push(format!("team.md: {e}; using {SQUAD_DEFAULT_MODE}"));
            SQUAD_DEFAULT_MODE
        }
    };

    let members = roster_members(&team, &doc);
    if doc.members.is_empty() && !members.is_empty() {
        warnings.push("team.md lists no workers; members were taken from the agents/ folders".into());
    }
    if members.is_empty() {
        let reason = if doc.excluded.is_empty() {
            "team.md has no roster table (`| Name | Role |`) or `### Name — Role` entries, and agents/ has no member folders".to_string()
        } else {
            format!(
                "the roster has only special members ({}), who are not workers",
                doc.excluded.join(", ")
            )
        };
        return Err(SquadError::NoWorkers { dir, reason });
    }

    let overrides = model_overrides(&team, &mut warnings);
    let folders = AgentFolders::read(&team);
    let mut taken: HashSet<String> = HashSet::new();
    let mut workers: Vec<PresetWorker> = Vec::new();
    let mut no_charter = Vec::new();
    let mut cut_charters = Vec::new();
    let mut nameless = Vec::new();
    for m in members {
        let worker_name = slug(&m.name);
        if worker_name.is_empty() {
            warnings.push(format!(
                "member `{}` has no letters or digits in its name; skipped",
                m.name
            ));
            nameless.push(format!("`{}`", m.name));
            continue;
        }
        if !taken.insert(worker_name.clone()) {
            warnings.push(format!(
                "member `{}` is listed twice; the first entry is used",
                m.name
            ));
            continue;
        }
        let charter = find_charter(&team, &folders, &m, &worker_name, &mut warnings);
        let who = format!("worker `{worker_name}`");
        let (prompt, hint, tools) = match &charter {
            Some(c) => {
                let (prompt, cut) = charter_prompt(&c.text);
                if cut {
                    cut_charters.push(c.label.clone());
                }
                (prompt, model_hint(&c.text), front_matter_tools(&c.text))
            }
            None => {
                no_charter.push(worker_name.clone());
                (role_prompt(&m.name, &m.role, &name), None, Vec::new())
            }
        };
        let tools = crate::presets::tools::checked(tools, config, Tier::Repo, &who, &mut warnings);
        let hint = overrides
            .get(&squash(&worker_name))
            .or_else(|| overrides.get(&squash(&m.name)))
            .cloned()
            .or(hint);
        let model = hint.and_then(|h| check_model(&h, config, Tier::Repo, &who, &mut warnings));
        workers.push(PresetWorker {
            display_name: Some(m.name.clone()).filter(|d| *d != worker_name),
            role: Some(m.role.clone()).filter(|r| !r.is_empty()),
            name: worker_name,
            model,
            system_prompt: Some(prompt).filter(|p| !p.is_empty()),
            tools,
            ..PresetWorker::default()
        });
    }
    if workers.is_empty() {
        let reason = format!(
            "no roster member has a usable name: {} (a worker's name needs letters or digits)",
            nameless.join(", ")
        );
        return Err(SquadError::NoWorkers { dir, reason });
    }
    if !no_charter.is_empty() {
        warnings.push(format!(
            "no charter found for {}; their prompts come from their roles",
            no_charter.join(", ")
        ));
    }
    if !cut_charters.is_empty() {
        warnings.push(format!(
            "charters longer than {} characters were cut for the prompt: {}",
            super::charter::CHARTER_MAX_CHARS,
            cut_charters.join(", ")
        ));
    }
    let orchestrator = mode
        .spec()
        .has_orchestrator
        .then(|| coordinator(&team, &folders, &doc, &overrides, config, &mut warnings));
    let routing_context = context_file(&team, "routing.md", &mut warnings);
    let shared_context = context_file(&team, "decisions.md", &mut warnings);
    let mut preset = Preset {
        name,
        description: doc.description,
        emoji: None,
        mode,
        max_iterations: None,
        worker_timeout_secs: None,
        max_duration_secs: None,
        token_budget: None,
        orchestrator,
        evaluator: None,
        workers,
        shared_context,
        routing_context,
        worktrees: Default::default(),
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
        // A repository's team may make the sandbox stricter (huddle.yaml) and add no hooks.
        sandbox: Default::default(),
        hooks: Default::default(),
        tier: Some(Tier::Repo),
        source: Some(dir.display().to_string()),
        warnings,
    };
    apply_extras(&team, &mut preset, config);
    Ok(Some(preset))
}

/// The orchestrator: the first member the Coordinator section names who has a charter (a `Lead`
/// also listed among the members, say) leads the team, its charter the orchestrator's prompt.
/// Squad's own coordinator (`Squad`, no charter) leaves huddle's built-in orchestrator prompt.
fn coordinator(
    team: &TeamDir,
    folders: &AgentFolders,
    doc: &TeamDoc,
    overrides: &HashMap<String, String>,
    config: &Config,
    warnings: &mut Vec<String>,
) -> PresetAgent {
    let Some((name, charter)) = coordinator_charter(team, folders, doc, warnings) else {
        return PresetAgent::default();
    };
    let (prompt, _) = charter_prompt(&charter.text);
    let hint = overrides
        .get(&squash(&name))
        .cloned()
        .or_else(|| model_hint(&charter.text));
    let model = hint.and_then(|h| check_model(&h, config, Tier::Repo, "orchestrator", warnings));
    PresetAgent {
        display_name: Some(name),
        model,
        prompt: Some(prompt).filter(|p| !p.is_empty()),
        ..PresetAgent::default()
    }
}

/// The first coordinator with a charter, and that charter.
fn coordinator_charter(
    team: &TeamDir,
    folders: &AgentFolders,
    doc: &TeamDoc,
    warnings: &mut Vec<String>,
) -> Option<(String, Charter)> {
    doc.coordinators.iter().find_map(|name| {
        let handle = slug(name);
        let member = Member {
            name: name.clone(),
            role: String::new(),
            charter: None,
        };
        (!handle.is_empty())
            .then(|| find_charter(team, folders, &member, &handle, warnings))
            .flatten()
            .map(|charter| (name.clone(), charter))
    })
}

/// The orchestrator prompt the team folder `dir` of `repo` gives (its coordinator's charter), as
/// [`discover`] reads it; for write-back, which need not repeat it in `huddle.yaml`.
pub fn coordinator_prompt(repo: &Path, dir: &Path) -> Option<String> {
    let team = TeamDir::open(repo, dir).ok()?;
    let file = team.read(Path::new("team.md")).ok()?;
    let doc = parse_team(&file.text);
    let folders = AgentFolders::read(&team);
    let (_, charter) = coordinator_charter(&team, &folders, &doc, &mut Vec::new())?;
    Some(charter_prompt(&charter.text).0).filter(|p| !p.is_empty())
}

/// Applies the team folder's `huddle.yaml` (see [`super::extras`]); a file that cannot be used
/// is reported and ignored.
fn apply_extras(team: &TeamDir, preset: &mut Preset, config: &Config) {
    let warnings = &mut preset.warnings;
    let file = match team.read(Path::new(EXTRAS_FILE)) {
        Ok(f) => f,
        Err(Refusal::Missing) => return,
        Err(r) => {
            warnings.push(format!("{EXTRAS_FILE} refused: it {r}"));
            return;
        }
    };
    let extras = match Extras::parse(&file.text) {
        Ok(e) => e,
        Err(e) => {
            warnings.push(format!("{EXTRAS_FILE} {e}; the file is ignored"));
            return;
        }
    };
    if extras.emoji.is_some() {
        preset.emoji = extras.emoji;
    }
    if let Some(n) = extras.max_iterations {
        match check_max_iterations(n) {
            Ok(n) => preset.max_iterations = Some(n),
            Err(e) => warnings.push(format!("{EXTRAS_FILE}: {e}; using the default")),
        }
    }
    match extras.worker_timeout_secs {
        Some(0) => warnings.push(format!(
            "{EXTRAS_FILE}: worker_timeout_secs must be at least 1; using the default"
        )),
        Some(t) => preset.worker_timeout_secs = Some(t),
        None => {}
    }
    if let (Some(prompt), Some(o)) = (extras.orchestrator_prompt, preset.orchestrator.as_mut()) {
        o.prompt = Some(prompt);
    }
    if let Some(mut e) = extras.evaluator.filter(|_| preset.mode.spec().has_evaluator) {
        e.model = e
            .model
            .and_then(|m| check_model(&m, config, Tier::Repo, "evaluator", warnings));
        preset.evaluator = Some(e);
    }
    // Only a strategy: worktree paths and branches are always made by huddle, in its data dir.
    if let Some(w) = extras.worktrees {
        preset.worktrees = w;
    }
    // Only stricter than the user's own settings (see `SandboxSettings::from_repository`).
    if let Some(sandbox) = extras.sandbox {
        preset.sandbox = sandbox.from_repository(warnings, &format!("{EXTRAS_FILE}: sandbox"));
    }
    if extras.hooks.is_some() {
        warnings.push(format!(
            "{EXTRAS_FILE}: hooks: ignored: a repository's team cannot add hooks (they run commands on your machine); put hooks in config.yaml or your own preset"
        ));
    }
    // A relay's settings (checked when it runs: its driver and counterpart must be found). A
    // repository's team talks to its own members only (a group's name would let any cloned
    // repository drive one of the user's groups) and never sends unreviewed on its own say.
    if let Some(mut r) = extras.relay {
        if let Some(owner) = key_mode("relay").filter(|owner| *owner != preset.mode) {
            warnings.push(format!(
                "huddle.yaml: {}",
                ignored_keys("relay", owner, preset.mode)
            ));
            return;
        }
        let member = |name: &str| {
            preset
                .workers
                .iter()
                .any(|w| w.name.trim().eq_ignore_ascii_case(name.trim()))
        };
        if !member(&r.counterpart) {
            warnings.push(format!(
                "{EXTRAS_FILE}: relay.counterpart: `{}` is not a member of this team; a repository's team may only relay to its own members, so its relay settings are ignored (a team in your own presets may name one of your groups)",
                r.counterpart
            ));
        } else {
            if r.approval == ApprovalMode::FullAuto {
                r.approval = ApprovalMode::SemiAuto;
                warnings.push(format!(
                    "{EXTRAS_FILE}: relay.approval: a repository's team cannot choose full_auto; semi_auto is used (drafts a review rule catches wait for you; `huddle run --approval full_auto` sends every draft unasked)"
                ));
            }
            preset.relay = Some(r);
        }
    }
}

/// The repository folder's name, for the team name `<repo> squad` when team.md gives none.
pub fn repo_name(repo: &Path) -> String {
    let canonical = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repo".into())
}

/// The team's name from its `# ` heading, or `<repo folder name> squad`.
pub fn team_name(title: Option<&str>, repo_name: &str) -> String {
    let fallback = || format!("{repo_name} squad");
    let Some(title) = title.map(str::trim).filter(|t| !t.is_empty()) else {
        return fallback();
    };
    if GENERIC_TITLES.contains(&title.to_lowercase().as_str()) {
        return fallback();
    }
    for sep in [" — ", " – ", " - "] {
        if let Some((head, rest)) = title.split_once(sep)
            && GENERIC_TITLES.contains(&head.trim().to_lowercase().as_str())
            && !rest.trim().is_empty()
        {
            return rest.trim().to_string();
        }
    }
    title.to_string()
}

fn note_lossy(file: &TextFile, label: &str, warnings: &mut Vec<String>) {
    if file.lossy {
        warnings.push(format!("{label} is not valid UTF-8; invalid bytes were replaced"));
    }
}

/// The roster's members, or when it names nobody, the members from the agents/ folders.
fn roster_members(team: &TeamDir, doc: &TeamDoc) -> Vec<Member> {
    if doc.members.is_empty() {
        agent_folder_members(team, &doc.coordinators)
    } else {
        doc.members.clone()
    }
}

/// Members from `agents/<folder>/` when the roster names nobody (`_alumni`, special members and
/// the coordinator excluded); the role comes from the charter's title when it has one.
fn agent_folder_members(team: &TeamDir, coordinators: &[String]) -> Vec<Member> {
    team.agent_folders()
        .into_iter()
        .filter(|f| {
            !f.starts_with('_')
                && !f.starts_with('.')
                && !is_special(f, "")
                && !is_coordinator(f, coordinators)
        })
        .map(|folder| {
            let charter = format!("agents/{folder}/charter.md");
            // Folder names and charter titles are shown and put in prompts: cleaned like the
            // roster's cells (the charter path keeps the folder's real name).
            let role = team
                .read(Path::new(&charter))
                .ok()
                .and_then(|f| charter_role(&f.text))
                .map(|r| display(&r).into_owned())
                .unwrap_or_default();
            Member {
                name: display(&folder).into_owned(),
                role,
                charter: Some(charter),
            }
        })
        .collect()
}

/// The `agents/` sub-folders by their name ignoring case and punctuation, read once per team:
/// listing the folder again for every member made reading a team quadratic in its size.
struct AgentFolders {
    by_key: HashMap<String, Vec<String>>,
}

impl AgentFolders {
    fn read(team: &TeamDir) -> AgentFolders {
        let mut by_key: HashMap<String, Vec<String>> = HashMap::new();
        // `agent_folders` is sorted, so each list is too.
        for folder in team.agent_folders() {
            by_key.entry(squash(&folder)).or_default().push(folder);
        }
        AgentFolders { by_key }
    }

    /// The folders whose name matches one of `names`, sorted.
    fn matching(&self, names: &[&str]) -> Vec<&str> {
        let mut found: Vec<&str> = names
            .iter()
            .filter_map(|n| self.by_key.get(&squash(n)))
            .flatten()
            .map(String::as_str)
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}

/// A member's charter as found in the team folder.
struct Charter {
    /// The path as the roster or the search named it, for messages.
    label: String,
    text: String,
    /// Where the file is, relative to the team folder.
    location: PathBuf,
}

/// The charter: the roster's charter cell, else `agents/<slug>/charter.md`, else the agents
/// folder whose name matches ignoring case and punctuation.
fn find_charter(
    team: &TeamDir,
    folders: &AgentFolders,
    member: &Member,
    worker: &str,
    warnings: &mut Vec<String>,
) -> Option<Charter> {
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    if let Some(cell) = &member.charter {
        let rel = cell.trim_start_matches("./");
        let path = if rel.starts_with(".squad/") || rel.starts_with(".ai-team/") {
            team.repo.join(rel)
        } else {
            PathBuf::from(rel)
        };
        candidates.push((cell.clone(), path));
    }
    candidates.push((
        format!("agents/{worker}/charter.md"),
        PathBuf::from(format!("agents/{worker}/charter.md")),
    ));
    for folder in folders.matching(&[&member.name, worker]) {
        let p = format!("agents/{folder}/charter.md");
        candidates.push((p.clone(), PathBuf::from(p)));
    }
    let mut tried: Vec<PathBuf> = Vec::new();
    for (label, path) in candidates {
        if tried.contains(&path) {
            continue;
        }
        tried.push(path.clone());
        match team.read(&path) {
            Ok(file) => {
                note_lossy(&file, &label, warnings);
                // `read` succeeded, so the path resolves inside the team folder.
                let location = team
                    .resolve(&path)
                    .ok()
                    .and_then(|c| c.strip_prefix(&team.root).ok().map(Path::to_path_buf))
                    .unwrap_or_else(|| PathBuf::from(format!("agents/{worker}/charter.md")));
                return Some(Charter {
                    label,
                    text: file.text,
                    location,
                });
            }
            Err(Refusal::Missing) => {}
            Err(r) => {
                let w = format!("charter {label} of `{}` refused: it {r}", member.name);
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
        }
    }
    None
}

/// A worker of the team as discovery reads it, for write-back.
#[derive(Debug, Clone, PartialEq)]
pub struct RosterEntry {
    /// The worker name (slug of the member name).
    pub worker: String,
    pub role: String,
    /// Where its charter is, relative to the team folder, when it has one.
    pub charter: Option<PathBuf>,
}

/// The workers of the team in the team folder `dir` of `repo` (empty when it has no usable
/// `team.md`), found the way [`discover`] finds them, with the charter each one was read from.
pub fn current_roster(repo: &Path, dir: &Path) -> Vec<RosterEntry> {
    let Ok(team) = TeamDir::open(repo, dir) else {
        return Vec::new();
    };
    let Ok(file) = team.read(Path::new("team.md")) else {
        return Vec::new();
    };
    let doc = parse_team(&file.text);
    let folders = AgentFolders::read(&team);
    let mut taken: HashSet<String> = HashSet::new();
    let mut entries: Vec<RosterEntry> = Vec::new();
    let mut ignored = Vec::new();
    for m in roster_members(&team, &doc) {
        let worker = slug(&m.name);
        if worker.is_empty() || !taken.insert(worker.clone()) {
            continue;
        }
        let charter = find_charter(&team, &folders, &m, &worker, &mut ignored).map(|c| c.location);
        entries.push(RosterEntry {
            worker,
            role: m.role,
            charter,
        });
    }
    entries
}

/// `agentModelOverrides` of `config.json`: agent name (ignoring case and punctuation) to model
/// (a string, or `{"model": ...}`); the first entry of a name wins.
fn model_overrides(team: &TeamDir, warnings: &mut Vec<String>) -> HashMap<String, String> {
    let file = match team.read(Path::new("config.json")) {
        Ok(f) => f,
        Err(Refusal::Missing) => return HashMap::new(),
        Err(r) => {
            warnings.push(format!("config.json refused: it {r}"));
            return HashMap::new();
        }
    };
    let value: serde_json::Value = match serde_json::from_str(&file.text) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!(
                "config.json is not valid JSON ({e}); its model overrides are ignored"
            ));
            return HashMap::new();
        }
    };
    let Some(map) = value.get("agentModelOverrides").and_then(|v| v.as_object()) else {
        return HashMap::new();
    };
    let mut overrides = HashMap::new();
    for (k, v) in map {
        if let Some(model) = v.as_str().or_else(|| v.get("model").and_then(|m| m.as_str())) {
            overrides.entry(squash(k)).or_insert_with(|| model.to_string());
        }
    }
    overrides
}

/// `routing.md` / `decisions.md` as context: capped with the cut marked; empty means absent.
fn context_file(team: &TeamDir, name: &str, warnings: &mut Vec<String>) -> Option<String> {
    let file = match team.read(Path::new(name)) {
        Ok(f) => f,
        Err(Refusal::Missing) => return None,
        Err(r) => {
            warnings.push(format!("{name} refused: it {r}"));
            return None;
        }
    };
    note_lossy(&file, name, warnings);
    capped_context(&file.text, name)
}

/// The context text for a file's contents (also used by write-back to compare).
pub fn capped_context(text: &str, name: &str) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let total = text.chars().count();
    if total <= CONTEXT_MAX_CHARS || already_capped(text) {
        return Some(text.to_string());
    }
    // The marker counts toward the cap; its length depends on the count it reports, which only
    // shrinks as more is kept, so start from the longest marker and keep what still fits.
    let fits = |keep: usize| keep + cut_marker(name, total - keep).chars().count() <= CONTEXT_MAX_CHARS;
    let mut keep = CONTEXT_MAX_CHARS.saturating_sub(cut_marker(name, total).chars().count());
    while keep < total && fits(keep + 1) {
        keep += 1;
    }
    let (kept, _) = cap_chars(text, keep);
    Some(format!("{kept}{}", cut_marker(name, total - keep)))
}

/// What ends a cut context: `\n\n[... <file> continues: <n> more characters not included]`.
fn cut_marker(name: &str, rest: usize) -> String {
    format!("\n\n[... {name} continues: {rest} more characters not included]")
}

/// True when `text` ends with the cut marker: it is a shortened copy of a longer file, which
/// write-back must never write over the file it came from.
pub fn carries_cap_marker(text: &str) -> bool {
    text.trim_end()
        .rsplit_once("\n\n[... ")
        .is_some_and(|(_, marker)| {
            marker.ends_with(" more characters not included]") && !marker.contains('\n')
        })
}

/// True for text this function already cut (a saved team's shortened ledger): cutting it again
/// would only move the marker, so a team saved and read back keeps the same context.
fn already_capped(text: &str) -> bool {
    carries_cap_marker(text) && text.chars().count() <= CONTEXT_MAX_CHARS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_are_the_resolved_folder_name() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("kids-app");
        std::fs::create_dir(&repo).unwrap();
        assert_eq!(repo_name(&repo.join(".")), "kids-app");
        // A path that does not resolve is named as written.
        assert_eq!(repo_name(&dir.path().join("gone")), "gone");
    }

    #[test]
    fn team_names() {
        assert_eq!(team_name(Some("Squad Team — Demo"), "r"), "Demo");
        assert_eq!(team_name(Some("Squad Team"), "repo"), "repo squad");
        assert_eq!(team_name(Some("Team Roster"), "repo"), "repo squad");
        assert_eq!(team_name(None, "repo"), "repo squad");
        assert_eq!(team_name(Some("Squad Roster — Mr. Pumpkin"), "r"), "Mr. Pumpkin");
        assert_eq!(
            team_name(Some("Mission Control — squad-sdk"), "r"),
            "Mission Control — squad-sdk"
        );
    }

    #[test]
    fn contexts_are_capped_with_a_marker() {
        assert_eq!(capped_context(" \n", "d.md"), None);
        let long = "x".repeat(CONTEXT_MAX_CHARS + 10);
        let c = capped_context(&long, "decisions.md").unwrap();
        assert!(
            c.ends_with("x\n\n[... decisions.md continues: 73 more characters not included]"),
            "{c}"
        );
        assert_eq!(capped_context(&c, "decisions.md").as_deref(), Some(c.as_str()));
    }

    #[test]
    fn the_cap_counts_the_marker_and_cuts_on_a_char_boundary() {
        for long in ["x".repeat(CONTEXT_MAX_CHARS + 10), "é€".repeat(30_000)] {
            let c = capped_context(&long, "decisions.md").unwrap();
            assert_eq!(c.chars().count(), CONTEXT_MAX_CHARS, "{}", &c[c.len() - 80..]);
            let (body, marker) = c.rsplit_once("\n\n[... ").unwrap();
            assert!(long.starts_with(body));
            let rest = long.chars().count() - body.chars().count();
            assert_eq!(
                marker,
                format!("decisions.md continues: {rest} more characters not included]")
            );
            assert!(carries_cap_marker(&c));
            assert_eq!(capped_context(&c, "decisions.md").as_deref(), Some(c.as_str()));
        }
        let exact = "y".repeat(CONTEXT_MAX_CHARS);
        assert_eq!(
            capped_context(&exact, "routing.md").as_deref(),
            Some(exact.as_str())
        );
        assert!(!carries_cap_marker(&exact));
    }
}
