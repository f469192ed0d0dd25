//! What a session gets of its repository's own files for agents (`AGENTS.md`, skills): the
//! settings only; reading them is `crate::repo_context`'s.

use serde::{Deserialize, Serialize};

/// What a session gets of its repository (config.yaml `repo_context:`, a preset's
/// `repo_context:`): each part on unless turned off. A preset's setting wins over the
/// config's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoContextSettings {
    /// The repository's `AGENTS.md` / `CLAUDE.md` in the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<bool>,
    /// The skills' names and descriptions in the system prompt, and the `load_skill` tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<bool>,
}

impl RepoContextSettings {
    pub fn is_empty(&self) -> bool {
        *self == RepoContextSettings::default()
    }

    /// `self`'s settings where given, else `under`'s.
    pub fn over(self, under: RepoContextSettings) -> RepoContextSettings {
        RepoContextSettings {
            instructions: self.instructions.or(under.instructions),
            skills: self.skills.or(under.skills),
        }
    }

    pub fn instructions_on(&self) -> bool {
        self.instructions.unwrap_or(true)
    }

    pub fn skills_on(&self) -> bool {
        self.skills.unwrap_or(true)
    }
}
