//! Agent Skills: a folder holding `SKILL.md`, whose YAML front matter gives the skill's `name`
//! and `description` and whose body holds the instructions, loaded only when a model asks.
//!
//! Found in the repository (`.agents/skills/<name>/SKILL.md` and `.claude/skills/<name>/SKILL.md`
//! in the working directory and its parents up to the repository's root) and in the user's own
//! folder (`<config dir>/skills/<name>/SKILL.md`). A name seen twice is the nearest one's (the
//! repository's before the user's). The files are data: read capped and made safe, never run.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{inside, read_capped, search_dirs};
use crate::text::split_front_matter;

/// The skill folders looked in, in each searched directory.
pub const REPO_SKILL_DIRS: &[&str] = &[".agents/skills", ".claude/skills"];
/// The file a skill folder holds.
pub const SKILL_FILE: &str = "SKILL.md";
/// Skills listed at most (the nearest first).
pub const MAX_SKILLS: usize = 64;
/// Bytes of a `SKILL.md` read for its front matter.
const HEAD_MAX_BYTES: usize = 8 * 1024;
/// Bytes of a skill's body a model gets.
pub const BODY_MAX_BYTES: usize = 64 * 1024;
/// Characters of a description kept (the Agent Skills limit).
const DESCRIPTION_MAX_CHARS: usize = 1024;
/// Characters of a name kept (the Agent Skills limit).
const NAME_MAX_CHARS: usize = 64;
/// Other files of a skill's folder named with its body, at most.
const MAX_FILES_LISTED: usize = 50;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillSource {
    Repository,
    User,
}

/// A skill as listed: its name and description (the body is read by [`load_skill`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its folder.
    pub dir: PathBuf,
    pub source: SkillSource,
}

#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// The skills a session working in `working_dir` can load (the repository's, nearest first),
/// then the user's from `user_dir`; a name once.
pub fn find_skills(working_dir: Option<&Path>, user_dir: Option<&Path>) -> Vec<Skill> {
    // Each folder with the root its skills must stay inside (a repository's: the repository).
    let mut folders: Vec<(PathBuf, SkillSource, Option<PathBuf>)> = Vec::new();
    if let Some(dir) = working_dir {
        let searched = search_dirs(dir);
        let root = searched.last().cloned();
        for dir in &searched {
            for sub in REPO_SKILL_DIRS {
                folders.push((dir.join(sub), SkillSource::Repository, root.clone()));
            }
        }
    }
    if let Some(dir) = user_dir {
        folders.push((dir.to_path_buf(), SkillSource::User, None));
    }
    let mut out: Vec<Skill> = Vec::new();
    for (folder, source, root) in folders {
        for skill in skills_in(&folder, source, root.as_deref()) {
            if out.len() >= MAX_SKILLS {
                return out;
            }
            if !out.iter().any(|s| s.name == skill.name) {
                out.push(skill);
            }
        }
    }
    out
}

/// The skills directly under `folder`, by folder name; with a `root`, only those whose folder
/// and `SKILL.md` stay inside it, links followed.
fn skills_in(folder: &Path, source: SkillSource, root: Option<&Path>) -> Vec<Skill> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_dir()))
        .collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|dir| match read_head(&dir, root) {
            Ok(skill) => Some(Skill { source, ..skill }),
            Err(why) => {
                tracing::debug!(skill = %dir.display(), %why, "not a usable skill; left out");
                None
            }
        })
        .collect()
}

/// A skill's name and description from its front matter (the folder's name when it gives
/// none).
fn read_head(dir: &Path, root: Option<&Path>) -> Result<Skill, String> {
    let file = dir.join(SKILL_FILE);
    let file = match root {
        Some(root) => inside(&file, root).map_err(|e| e.to_string())?,
        None => file,
    };
    let (text, _) = read_capped(&file, HEAD_MAX_BYTES).map_err(|e| e.to_string())?;
    let (front, _) = split_front_matter(&text);
    let meta: FrontMatter = match front {
        Some(yaml) => serde_yaml::from_str(yaml).map_err(|e| format!("front matter: {e}"))?,
        None => FrontMatter::default(),
    };
    let folder_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = clean_name(meta.name.as_deref().unwrap_or(&folder_name));
    if name.is_empty() {
        return Err("no name".into());
    }
    let description = meta.description.unwrap_or_default();
    let description: String = description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(DESCRIPTION_MAX_CHARS)
        .collect();
    if description.is_empty() {
        return Err("no description in its front matter".into());
    }
    Ok(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        source: SkillSource::Repository,
    })
}

/// A name as the Agent Skills spec allows it: lowercase letters, digits and `-`.
fn clean_name(name: &str) -> String {
    name.trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(NAME_MAX_CHARS)
        .collect::<String>()
        .trim_matches('-')
        .to_string()
}

/// The body of a skill (its front matter left out), capped, with the other files of its folder
/// named (a model with file tools may read them; huddle never runs them).
pub fn load_skill(skill: &Skill) -> Result<String, String> {
    let file = skill.dir.join(SKILL_FILE);
    // A repository's skill was checked when listed; its file may have become a link since.
    let file = match skill.source {
        SkillSource::Repository => inside(&file, &skill.dir).map_err(|e| format!("cannot read it: {e}"))?,
        SkillSource::User => file,
    };
    let (text, truncated) = read_capped(&file, BODY_MAX_BYTES).map_err(|e| format!("cannot read it: {e}"))?;
    let (_, body) = split_front_matter(&text);
    let mut out = body.trim().to_string();
    if truncated {
        out.push_str(&format!(
            "\n\n[cut: the rest of SKILL.md is over {} KiB]",
            BODY_MAX_BYTES / 1024
        ));
    }
    let files = other_files(&skill.dir);
    if !files.is_empty() {
        out.push_str(&format!(
            "\n\nOther files in this skill's folder ({}):\n",
            skill.dir.display()
        ));
        for f in files {
            out.push_str(&format!("- {f}\n"));
        }
    }
    Ok(out)
}

/// The files of a skill's folder besides `SKILL.md` (two levels deep), relative, sorted.
fn other_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((here, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&here) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && depth < 1 {
                stack.push((path, depth + 1));
            } else if kind.is_file()
                && path != dir.join(SKILL_FILE)
                && let Ok(rel) = path.strip_prefix(dir)
            {
                out.push(crate::text::sanitize::display(&rel.display().to_string()).into_owned());
            }
            if out.len() >= MAX_FILES_LISTED {
                break;
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_skill(root: &Path, sub: &str, name: &str, head: &str, body: &str) -> PathBuf {
        let dir = root.join(sub).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(SKILL_FILE), format!("---\n{head}\n---\n{body}")).unwrap();
        dir
    }

    #[test]
    fn a_repository_skill_that_links_out_of_the_repository_is_left_out() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        let elsewhere = write_skill(
            outside.path(),
            "x",
            "leak",
            "name: leak\ndescription: Not ours.",
            "secret",
        );
        std::fs::create_dir_all(root.join(".agents/skills")).unwrap();
        // A folder that is a link out, and a folder whose SKILL.md is a link out.
        std::os::unix::fs::symlink(&elsewhere, root.join(".agents/skills/leak")).unwrap();
        let dir = root.join(".agents/skills/file-leak");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(elsewhere.join(SKILL_FILE), dir.join(SKILL_FILE)).unwrap();
        write_skill(
            root,
            ".agents/skills",
            "ours",
            "name: ours\ndescription: Ours.",
            "body",
        );
        let names: Vec<String> = find_skills(Some(root), None)
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["ours"]);
        // A listed skill whose file became a link out since is not loaded either.
        let ours = find_skills(Some(root), None).remove(0);
        std::fs::remove_file(ours.dir.join(SKILL_FILE)).unwrap();
        std::os::unix::fs::symlink(elsewhere.join(SKILL_FILE), ours.dir.join(SKILL_FILE)).unwrap();
        let loaded = load_skill(&ours).unwrap_err();
        assert!(loaded.contains("outside the repository"), "{loaded}");
    }

    #[test]
    fn skills_are_listed_nearest_first_a_name_once_with_the_users_last() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::create_dir(root.join("app")).unwrap();
        write_skill(
            root,
            ".agents/skills",
            "deploy",
            "name: deploy\ndescription: Ship   it.\nlicense: MIT",
            "Run the release.",
        );
        write_skill(
            &root.join("app"),
            ".claude/skills",
            "deploy",
            "name: deploy\ndescription: The app's way.",
            "App release.",
        );
        write_skill(
            root,
            ".claude/skills",
            "Review Code",
            "description: Review a diff.",
            "Read it all.",
        );
        write_skill(root, ".agents/skills", "broken", "name: [", "x");
        write_skill(root, ".agents/skills", "mute", "name: mute", "no description");
        std::fs::create_dir_all(root.join(".agents/skills/empty")).unwrap();
        let user = tempfile::tempdir().unwrap();
        write_skill(user.path(), "", "deploy", "description: mine", "x");
        let dir = write_skill(user.path(), "", "notes", "description: Take notes.", "Be brief.");
        std::fs::write(dir.join("template.txt"), "t").unwrap();

        let skills = find_skills(Some(&root.join("app")), Some(user.path()));
        let listed: Vec<(&str, &str, SkillSource)> = skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str(), s.source))
            .collect();
        assert_eq!(
            listed,
            [
                ("deploy", "The app's way.", SkillSource::Repository),
                ("review-code", "Review a diff.", SkillSource::Repository),
                ("notes", "Take notes.", SkillSource::User),
            ]
        );
        assert_eq!(load_skill(&skills[0]).unwrap(), "App release.");
        let notes = load_skill(&skills[2]).unwrap();
        assert!(notes.starts_with("Be brief.\n\nOther files"), "{notes}");
        assert!(notes.ends_with("- template.txt\n"), "{notes}");
    }

    #[test]
    fn front_matter_is_split_off_and_a_fifo_is_no_skill() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("s");
        std::fs::create_dir(&skill).unwrap();
        crate::store::mkfifo(&skill.join(SKILL_FILE));
        assert!(find_skills(None, Some(dir.path())).is_empty());
    }
}
