//! The three tiers merged: built-in < user < repo, by name ignoring case. A higher tier shadows a
//! lower one (noted on the winner); broken files are reported, never silently dropped.

use std::fmt;
use std::path::Path;

use crate::config::{Config, Paths};
use crate::model::{Preset, Tier};

use super::PresetError;
use super::builtin::load_builtins;
use super::squad::discover;
use super::user::load_user_presets;

/// Every usable preset plus what could not be loaded.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The presets in effect, highest tier first (repo, user, built-in), each tier in load order.
    pub presets: Vec<Preset>,
    /// Presets hidden by a higher tier's preset of the same name.
    pub shadowed: Vec<Preset>,
    /// Files or folders that could not be used, with the reason.
    pub errors: Vec<CatalogError>,
}

/// A preset source that could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogError {
    pub tier: Tier,
    /// The file or folder.
    pub source: String,
    /// Why: the full message, which names the file (and line and key where that applies).
    pub message: String,
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} preset: {}", self.tier, self.message)
    }
}

impl CatalogError {
    fn from_preset_error(tier: Tier, e: PresetError) -> CatalogError {
        let source = match &e {
            PresetError::Invalid { path, .. } => path.clone(),
            PresetError::Read { path, .. } => path.display().to_string(),
        };
        CatalogError {
            tier,
            source,
            message: e.to_string(),
        }
    }
}

impl Catalog {
    /// Loads the built-ins, `<config>/presets/*.yaml` and, when `repo` is given, its Squad team.
    pub fn load(paths: &Paths, config: &Config, repo: Option<&Path>) -> Catalog {
        let mut errors = Vec::new();
        let (builtin, errs) = load_builtins(config);
        errors.extend(
            errs.into_iter()
                .map(|e| CatalogError::from_preset_error(Tier::Builtin, e)),
        );
        let (user, errs) = load_user_presets(&paths.presets_dir(), config);
        errors.extend(
            errs.into_iter()
                .map(|e| CatalogError::from_preset_error(Tier::User, e)),
        );
        let mut repo_presets = Vec::new();
        if let Some(repo) = repo {
            match discover(repo, config) {
                Ok(Some(p)) => repo_presets.push(p),
                Ok(None) => {}
                Err(e) => errors.push(CatalogError {
                    tier: Tier::Repo,
                    source: super::squad::team_dir(repo)
                        .unwrap_or_else(|| repo.to_path_buf())
                        .display()
                        .to_string(),
                    message: e.to_string(),
                }),
            }
        }
        let mut catalog = Catalog::from_tiers(builtin, user, repo_presets);
        errors.append(&mut catalog.errors);
        catalog.errors = errors;
        catalog
    }

    /// Merges already-loaded tiers. Within a tier the first of two same-named presets wins and
    /// the second is an error.
    pub fn from_tiers(builtin: Vec<Preset>, user: Vec<Preset>, repo: Vec<Preset>) -> Catalog {
        let mut catalog = Catalog::default();
        let mut winners: Vec<Preset> = Vec::new();
        for (tier, presets) in [(Tier::Builtin, builtin), (Tier::User, user), (Tier::Repo, repo)] {
            let mut this_tier: Vec<Preset> = Vec::new();
            for mut p in presets {
                p.tier = Some(tier);
                if tier == Tier::Repo {
                    limit_repository_preset(&mut p);
                }
                if let Some(first) = this_tier.iter().find(|q| same_name(q, &p)) {
                    catalog.errors.push(CatalogError {
                        tier,
                        source: p.source.clone().unwrap_or_default(),
                        message: format!(
                            "{}: a {tier} preset named `{}` is already defined by {}; this one is skipped",
                            p.source.as_deref().unwrap_or("?"),
                            p.name,
                            first.source.as_deref().unwrap_or("another file")
                        ),
                    });
                    continue;
                }
                if let Some(i) = winners.iter().position(|q| same_name(q, &p)) {
                    // A repository may neither add nor drop hooks, nor loosen the sandbox: a
                    // team of its own that takes the name of one of yours that sets them does
                    // not replace it (it would drop them).
                    if tier == Tier::Repo && sets_guards(&winners[i]) {
                        let name = winners[i].name.clone();
                        winners[i].warnings.push(format!(
                            "your preset `{name}` keeps its place over the repository's team of the same name{}: it sets hooks or a sandbox, which a repository's team may not drop (rename one of them to use both)",
                            p.source
                                .as_deref()
                                .map(|s| format!(" ({s})"))
                                .unwrap_or_default()
                        ));
                        catalog.shadowed.push(p);
                        continue;
                    }
                    let lower = winners.remove(i);
                    p.warnings.push(format!(
                        "shadows the {} preset `{}`{}",
                        lower.tier.map_or("lower-tier", |t| t.as_str()),
                        lower.name,
                        lower
                            .source
                            .as_deref()
                            .map(|s| format!(" ({s})"))
                            .unwrap_or_default()
                    ));
                    catalog.shadowed.push(lower);
                }
                this_tier.push(p);
            }
            winners.extend(this_tier);
        }
        winners.sort_by_key(|p| std::cmp::Reverse(tier_rank(p.tier)));
        catalog.presets = winners;
        catalog
    }

    /// The preset in effect with this name (ignoring case).
    pub fn find(&self, name: &str) -> Option<&Preset> {
        let name = name.trim().to_lowercase();
        self.presets.iter().find(|p| p.name.trim().to_lowercase() == name)
    }
}

/// What a repository's team may not do, whichever way it was read: add hooks (they run
/// commands on the user's machine) or loosen the sandbox (its settings only tighten).
pub fn limit_repository_preset(p: &mut Preset) {
    let mut warnings = Vec::new();
    let mut hooks_dropped = !p.hooks.is_empty();
    p.hooks = Default::default();
    if !p.sandbox.is_empty() && !p.sandbox.only_tighten {
        p.sandbox = std::mem::take(&mut p.sandbox).from_repository(&mut warnings, "sandbox");
    }
    let members = p
        .orchestrator
        .iter_mut()
        .chain(p.evaluator.iter_mut())
        .map(|a| (&mut a.hooks, &mut a.sandbox))
        .chain(p.workers.iter_mut().map(|w| (&mut w.hooks, &mut w.sandbox)));
    for (hooks, sandbox) in members {
        hooks_dropped |= !hooks.is_empty();
        *hooks = Default::default();
        if !sandbox.is_empty() && !sandbox.only_tighten {
            *sandbox = std::mem::take(sandbox).from_repository(&mut warnings, "sandbox");
        }
    }
    if hooks_dropped {
        warnings.push(
            "hooks: ignored: a repository's team cannot add hooks; put them in config.yaml or your own preset"
                .into(),
        );
    }
    p.warnings.extend(warnings);
}

/// Whether a preset sets hooks or a sandbox, for the team or any member.
fn sets_guards(p: &Preset) -> bool {
    let agents = p
        .orchestrator
        .iter()
        .chain(p.evaluator.iter())
        .map(|a| (&a.hooks, &a.sandbox))
        .chain(p.workers.iter().map(|w| (&w.hooks, &w.sandbox)));
    !p.hooks.is_empty()
        || !p.sandbox.is_empty()
        || agents
            .into_iter()
            .any(|(hooks, sandbox)| !hooks.is_empty() || !sandbox.is_empty())
}

fn same_name(a: &Preset, b: &Preset) -> bool {
    a.name.trim().to_lowercase() == b.name.trim().to_lowercase()
}

fn tier_rank(tier: Option<Tier>) -> u8 {
    match tier {
        Some(Tier::Builtin) | None => 0,
        Some(Tier::User) => 1,
        Some(Tier::Repo) => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_preset_loses_its_hooks_and_cannot_loosen_the_sandbox() {
        let config = Config::default();
        let text = "name: Repo Team\nmode: broadcast\nsandbox: { mode: off, allow_write: [/] }\nhooks: { run_finished: [{ command: [/bin/evil] }] }\nworkers:\n  - name: a\n    sandbox: { network: off }\n    hooks: { pre_tool_use: [{ command: [/bin/evil] }] }\n";
        let repo = crate::presets::parse_preset(text, Path::new("r.yaml"), Tier::User, &config).unwrap();
        let user = crate::presets::parse_preset(
            &text.replace("Repo Team", "Mine"),
            Path::new("u.yaml"),
            Tier::User,
            &config,
        )
        .unwrap();
        let catalog = Catalog::from_tiers(Vec::new(), vec![user], vec![repo]);
        let repo = catalog.find("Repo Team").unwrap();
        assert!(repo.hooks.is_empty() && repo.workers[0].hooks.is_empty());
        assert!(
            repo.sandbox.only_tighten && repo.sandbox.mode.is_none() && repo.sandbox.allow_write.is_empty()
        );
        assert_eq!(
            repo.workers[0].sandbox.network,
            Some(crate::sandbox::Network::Off)
        );
        assert!(
            repo.warnings.iter().any(|w| w.contains("cannot add hooks")),
            "{:?}",
            repo.warnings
        );
        // The user's own preset keeps what it says.
        let mine = catalog.find("Mine").unwrap();
        assert_eq!(mine.hooks.run_finished.len(), 1);
        assert_eq!(mine.sandbox.mode, Some(crate::sandbox::SandboxMode::Off));
    }

    /// Review 26-2 finding 9: a repository's team named like one of your presets that sets
    /// hooks or a sandbox does not replace it (that would drop them); one that sets neither does.
    #[test]
    fn a_repository_team_cannot_shadow_a_preset_that_sets_hooks_or_a_sandbox() {
        let config = Config::default();
        let parse = |text: &str, tier| {
            crate::presets::parse_preset(text, Path::new("p.yaml"), tier, &config).unwrap()
        };
        let guarded = parse(
            "name: Guarded\nmode: broadcast\nsandbox: { mode: read-only, network: off }\nworkers: [{name: a}]\n",
            Tier::User,
        );
        let hooked = parse(
            "name: Hooked\nmode: broadcast\nworkers:\n  - name: a\n    hooks: { turn_finished: [{ command: [/bin/check] }] }\n",
            Tier::User,
        );
        let plain = parse("name: Plain\nmode: broadcast\nworkers: [{name: a}]\n", Tier::User);
        let repo: Vec<Preset> = ["guarded", "HOOKED", "Plain"]
            .iter()
            .map(|n| {
                parse(
                    &format!("name: {n}\nmode: broadcast\nworkers: [{{name: evil}}]\n"),
                    Tier::Repo,
                )
            })
            .collect();
        let catalog = Catalog::from_tiers(Vec::new(), vec![guarded, hooked, plain], repo);
        for name in ["Guarded", "Hooked"] {
            let kept = catalog.find(name).unwrap();
            assert_eq!(kept.tier, Some(Tier::User), "{name}");
            assert_eq!(kept.workers[0].name, "a", "{name}");
            assert!(
                kept.warnings
                    .iter()
                    .any(|w| w.contains("keeps its place over the repository's team")),
                "{name}: {:?}",
                kept.warnings
            );
        }
        assert_eq!(
            catalog.find("Guarded").unwrap().sandbox.network,
            Some(crate::sandbox::Network::Off)
        );
        assert_eq!(catalog.find("Plain").unwrap().tier, Some(Tier::Repo));
        assert_eq!(
            catalog.shadowed.len(),
            3,
            "{:?}",
            catalog.shadowed.iter().map(|p| &p.name).collect::<Vec<_>>()
        );
    }
}
