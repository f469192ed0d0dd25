//! The `tools:` a preset gives its agents: names of MCP servers from config.yaml. A preset can
//! only name servers, never define one; a repository's team (`.squad/`) can only get servers
//! the user configured, so unknown names from a repo are dropped, while a user's own preset
//! keeps them (the server may be added later) with a warning.

use crate::config::Config;
use crate::model::{Preset, Tier};

/// Checks and tidies every agent's `tools:` (duplicates removed), adding warnings.
pub fn check_preset_tools(preset: &mut Preset, config: &Config, tier: Tier) {
    let mut warnings = Vec::new();
    let mut agents: Vec<(String, &mut Vec<String>)> = Vec::new();
    if let Some(o) = preset.orchestrator.as_mut() {
        agents.push(("orchestrator".into(), &mut o.tools));
    }
    if let Some(e) = preset.evaluator.as_mut() {
        agents.push(("evaluator".into(), &mut e.tools));
    }
    for w in &mut preset.workers {
        agents.push((format!("worker `{}`", w.name), &mut w.tools));
    }
    for (who, tools) in agents {
        *tools = checked(std::mem::take(tools), config, tier, &who, &mut warnings);
    }
    preset.warnings.extend(warnings);
}

/// `names` without duplicates and, from a repository, without servers the user has not
/// configured.
pub fn checked(
    names: Vec<String>,
    config: &Config,
    tier: Tier,
    who: &str,
    warnings: &mut Vec<String>,
) -> Vec<String> {
    let mut kept: Vec<String> = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        let name = name.trim().to_string();
        if name.is_empty() || kept.contains(&name) {
            continue;
        }
        if config.mcp_servers.contains_key(&name) {
            kept.push(name);
        } else {
            if tier != Tier::Repo {
                kept.push(name.clone());
            }
            unknown.push(name);
        }
    }
    // A repository's charters list tools of other runtimes (`read`, `edit`): with no servers
    // configured there is nothing to match, and a warning per member would be noise.
    if !unknown.is_empty() && (tier != Tier::Repo || !config.mcp_servers.is_empty()) {
        let configured: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
        let configured = if configured.is_empty() {
            "none".to_string()
        } else {
            configured.join(", ")
        };
        let what = if tier == Tier::Repo {
            "ignored (a repository's team can only use servers configured in config.yaml)"
        } else {
            "kept, but it has no tools until it is added under mcp_servers: in config.yaml"
        };
        warnings.push(format!(
            "{who}: tools: {} not configured (configured: {configured}); {what}",
            unknown.join(", ")
        ));
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config() -> Config {
        Config::parse(
            "mcp_servers:\n  git: { command: [mcp-server-git] }\n  time: { url: \"http://127.0.0.1:9/mcp\", approval: auto }\n",
            Path::new("c.yaml"),
        )
        .unwrap()
    }

    #[test]
    fn a_repo_team_keeps_only_configured_servers() {
        let mut warnings = Vec::new();
        let names = vec![
            "git".into(),
            "read".into(),
            "git".into(),
            " time ".into(),
            "shell".into(),
        ];
        let kept = checked(names.clone(), &config(), Tier::Repo, "worker `a`", &mut warnings);
        assert_eq!(kept, vec!["git", "time"]);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("read, shell not configured (configured: git, time); ignored"),
            "{warnings:?}"
        );
        let mut warnings = Vec::new();
        let kept = checked(names, &config(), Tier::User, "worker `a`", &mut warnings);
        assert_eq!(kept, vec!["git", "read", "time", "shell"]);
        assert!(warnings[0].contains("kept, but"), "{warnings:?}");
    }
}
