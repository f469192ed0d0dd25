//! The files "save as preset" would create or change, listed for the confirmation the user sees
//! before anything is written. It mirrors the plan of `presets::squad::export_group` (which has
//! no dry run): `<repo>/.squad/team.md`, one `agents/<name>/charter.md` per worker,
//! `decisions.md` and `routing.md` when the team has that context, and the user preset YAML.

use std::path::{Path, PathBuf};

use crate::config::Paths;
use crate::model::Organization;
use crate::presets::preset_from_group;
use crate::presets::squad::write::agent_name;

/// The paths an export of `group_id` writes, in the order it writes them. The Squad folder goes
/// to the group's repo, else `default_repo`.
pub fn planned_files(
    org: &Organization,
    group_id: &str,
    default_repo: &Path,
    paths: &Paths,
) -> Result<Vec<PathBuf>, String> {
    let group = org.group(group_id).ok_or("the team is gone")?;
    let preset = preset_from_group(org, group_id).ok_or("the team is gone")?;
    if preset.workers.is_empty() {
        return Err(format!("team `{}` has no workers to save", preset.name));
    }
    let repo = group.repo.clone().unwrap_or_else(|| default_repo.to_path_buf());
    let team_dir = repo.join(".squad");
    let mut files = vec![team_dir.join("team.md")];
    for w in &preset.workers {
        files.push(
            team_dir
                .join("agents")
                .join(agent_name(&w.name))
                .join("charter.md"),
        );
    }
    for (file, text) in [
        ("decisions.md", &preset.shared_context),
        ("routing.md", &preset.routing_context),
    ] {
        if text.as_deref().is_some_and(|t| !t.trim().is_empty()) {
            files.push(team_dir.join(file));
        }
    }
    let stem = crate::presets::slug(&preset.name);
    let stem = if stem.is_empty() { "team".to_string() } else { stem };
    files.push(paths.presets_dir().join(format!("{stem}.yaml")));
    Ok(files)
}
