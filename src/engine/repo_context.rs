//! What a turn gets of its session's repository: the `AGENTS.md` / `CLAUDE.md` files in its
//! system prompt (unless the agent reads them itself), the skills' names and descriptions, and
//! the `load_skill` tool (lent like a mode's tools) that returns a skill's body when the model
//! asks. Read on a blocking thread at the start of each turn: edits to the files reach the
//! next turn.

use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::model::{RepoContextSettings, ToolCall, ToolSpec};
use crate::providers::Capabilities;
use crate::repo_context::{Skill, find_skills, load_skill, read_instructions};

use super::lent_tools::{LentAnswer, TurnTools};
use super::protocol::repo_context::{instructions_block, load_skill_tool, skills_block, unknown_skill};

/// What a turn adds for its repository.
#[derive(Default)]
pub(crate) struct RepoTurn {
    /// Appended to the system prompt.
    pub system: Option<String>,
    /// The skills offered through `load_skill` (none: no tool).
    pub skills: Option<Arc<SkillTool>>,
}

/// Reads what the turn gets, by the settings and what the provider does itself: instruction
/// files unless the agent reads them, skills only where tools are declared natively (a CLI agent
/// has its own skills).
pub(crate) async fn gather(
    working_dir: Option<PathBuf>,
    user_skills: Option<PathBuf>,
    settings: RepoContextSettings,
    capabilities: Capabilities,
) -> RepoTurn {
    let instructions = settings.instructions_on() && !capabilities.reads_repo_instructions;
    let skills = settings.skills_on() && !capabilities.text_tools;
    if !instructions && !skills || (working_dir.is_none() && (!skills || user_skills.is_none())) {
        return RepoTurn::default();
    }
    let read = tokio::task::spawn_blocking(move || {
        let files = match (&working_dir, instructions) {
            (Some(dir), true) => {
                let found = read_instructions(dir);
                for (file, why) in &found.skipped {
                    tracing::info!(file = %file, %why, "a repository instruction file was left out");
                }
                found.files
            }
            _ => Vec::new(),
        };
        let skills = if skills {
            find_skills(working_dir.as_deref(), user_skills.as_deref())
        } else {
            Vec::new()
        };
        (files, skills)
    })
    .await;
    let (files, skills) = match read {
        Ok(read) => read,
        Err(e) => {
            tracing::warn!(error = %e, "reading the repository's instructions did not finish");
            return RepoTurn::default();
        }
    };
    let blocks: Vec<String> = [instructions_block(&files), skills_block(&skills)]
        .into_iter()
        .flatten()
        .collect();
    RepoTurn {
        system: (!blocks.is_empty()).then(|| blocks.join("\n\n")),
        skills: (!skills.is_empty()).then(|| Arc::new(SkillTool { skills })),
    }
}

/// The `load_skill` tool: returns a listed skill's body.
pub(crate) struct SkillTool {
    skills: Vec<Skill>,
}

impl TurnTools for SkillTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![load_skill_tool(&self.skills)]
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, LentAnswer> {
        Box::pin(async move {
            let name = serde_json::from_str::<serde_json::Value>(&call.arguments)
                .ok()
                .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string))
                .unwrap_or_default();
            let Some(skill) = self.skills.iter().find(|s| s.name == name.trim()).cloned() else {
                return LentAnswer::error(unknown_skill(&name, &self.skills));
            };
            match tokio::task::spawn_blocking(move || load_skill(&skill)).await {
                Ok(Ok(body)) => LentAnswer {
                    text: body,
                    ..LentAnswer::default()
                },
                Ok(Err(why)) => LentAnswer::error(format!("skill `{name}`: {why}")),
                Err(e) => LentAnswer::error(format!("skill `{name}`: the read did not finish: {e}")),
            }
        })
    }
}
