//! The words of a repository's context in a session's system prompt: its `AGENTS.md` /
//! `CLAUDE.md` files, the list of its skills, and the `load_skill` tool that reads one.

use serde_json::json;

use crate::model::ToolSpec;
use crate::repo_context::{InstructionFile, Skill};

/// The heading of the repository's instruction files.
pub const INSTRUCTIONS_HEADING: &str = "# Repository instructions";
/// The heading of the skills list.
pub const SKILLS_HEADING: &str = "# Skills";
/// The tool that returns a skill's instructions.
pub const LOAD_SKILL_TOOL: &str = "load_skill";

/// The instruction files as one block, nearest to the working directory first; `None` for
/// none.
pub fn instructions_block(files: &[InstructionFile]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut out = format!(
        "{INSTRUCTIONS_HEADING}\n\nThe repository you work in gives these instructions to agents working in it \
         (the file nearest to your working directory first; where two disagree, the nearer one wins)."
    );
    for file in files {
        out.push_str(&format!("\n\n## {}\n\n{}", file.shown, file.text.trim()));
        if file.truncated {
            out.push_str("\n\n[the rest of this file was cut]");
        }
    }
    Some(out)
}

/// The skills by name and description, and how to load one; `None` for none.
pub fn skills_block(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut out = format!(
        "{SKILLS_HEADING}\n\nSkills hold instructions for particular tasks. When your task matches a skill's \
         description, call `{LOAD_SKILL_TOOL}` with its name and follow what it says.\n"
    );
    for skill in skills {
        out.push_str(&format!("\n- {}: {}", skill.name, skill.description));
    }
    Some(out)
}

/// The `load_skill` tool, its `name` an enum of the skills offered.
pub fn load_skill_tool(skills: &[Skill]) -> ToolSpec {
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    ToolSpec {
        name: LOAD_SKILL_TOOL.to_string(),
        description: "Read the instructions of one of the skills listed in your system prompt.".to_string(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "enum": names, "description": "The skill's name" }
            },
            "required": ["name"]
        }),
    }
}

/// What a call naming no offered skill gets back.
pub fn unknown_skill(name: &str, skills: &[Skill]) -> String {
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    format!(
        "no skill named `{name}`; the skills are: {}",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo_context::SkillSource;

    #[test]
    fn blocks_name_files_and_skills_and_nothing_gives_none() {
        assert_eq!(instructions_block(&[]), None);
        assert_eq!(skills_block(&[]), None);
        let files = vec![InstructionFile {
            path: "/r/app/AGENTS.md".into(),
            shown: "app/AGENTS.md".into(),
            text: "Use tabs.\n".into(),
            truncated: true,
        }];
        let block = instructions_block(&files).unwrap();
        assert!(block.starts_with(INSTRUCTIONS_HEADING), "{block}");
        assert!(
            block.contains("## app/AGENTS.md\n\nUse tabs.\n\n[the rest"),
            "{block}"
        );
        let skills = vec![Skill {
            name: "deploy".into(),
            description: "Ship it.".into(),
            dir: "/r/.agents/skills/deploy".into(),
            source: SkillSource::Repository,
        }];
        assert!(skills_block(&skills).unwrap().ends_with("- deploy: Ship it."));
        let spec = load_skill_tool(&skills);
        assert_eq!(spec.input_schema["properties"]["name"]["enum"][0], "deploy");
        assert!(unknown_skill("x", &skills).ends_with("are: deploy"));
    }
}
