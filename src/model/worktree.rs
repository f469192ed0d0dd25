//! A git worktree a session works in (issue 11). Plain data: making, inspecting, merging and
//! removing worktrees is `crate::worktrees`.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Group, Session};

/// One worktree huddle made with `git worktree add` for a team. Sessions that share a
/// worktree (`group_shared`, the workers of `orchestrator_isolated`) carry equal records.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Worktree {
    /// The worktree's top directory, under the data dir's `worktrees/<repo-slug>/`.
    pub path: PathBuf,
    /// The branch made for it: `huddle/<team-slug>-<role>-<4 hex>`.
    pub branch: String,
    /// The commit it started from (the repository's HEAD when the team was made).
    pub base_commit: String,
    /// The repository's top directory (its main worktree), where merges land.
    pub repo: PathBuf,
    /// Where in the worktree the session works when the team's directory is a folder inside the
    /// repository (relative, never `..`); `None` for the top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdir: Option<PathBuf>,
}

impl Worktree {
    /// The directory a session of this worktree works in: the top, or its `subdir` when that is
    /// a plain relative path (anything else is ignored rather than followed out of the tree).
    pub fn working_dir(&self) -> PathBuf {
        match self.subdir.as_deref().filter(|s| is_plain_relative(s)) {
            Some(sub) => self.path.join(sub),
            None => self.path.clone(),
        }
    }

    /// The part of the branch name after `huddle/` (also the worktree folder's name).
    pub fn label(&self) -> &str {
        self.branch.strip_prefix("huddle/").unwrap_or(&self.branch)
    }
}

/// True for a relative path of plain names only (no `..`, no root, no `.` tricks).
pub fn is_plain_relative(path: &Path) -> bool {
    !path.as_os_str().is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)))
}

impl Session {
    /// Where the session's turns run (a `command` agent's directory, `cwd: session` MCP
    /// servers): its worktree when it has one, else its own repo, else its group's.
    pub fn working_dir(&self, group: Option<&Group>) -> Option<PathBuf> {
        self.worktree
            .as_ref()
            .map(Worktree::working_dir)
            .or_else(|| self.repo.clone())
            .or_else(|| group.and_then(|g| g.repo.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(subdir: Option<&str>) -> Worktree {
        Worktree {
            path: PathBuf::from("/data/worktrees/r-1/t-implementer-0a1b"),
            branch: "huddle/t-implementer-0a1b".into(),
            base_commit: "abc".into(),
            repo: PathBuf::from("/r"),
            subdir: subdir.map(PathBuf::from),
        }
    }

    #[test]
    fn a_session_works_in_its_worktree_then_its_repo_then_its_groups() {
        let mut group = Group::new("T", crate::model::GroupKind::Team);
        group.repo = Some(PathBuf::from("/g"));
        let mut s = Session::new("a", &group.id, "sim/x");
        assert_eq!(s.working_dir(Some(&group)), Some(PathBuf::from("/g")));
        s.repo = Some(PathBuf::from("/s"));
        assert_eq!(s.working_dir(Some(&group)), Some(PathBuf::from("/s")));
        s.worktree = Some(tree(None));
        assert_eq!(
            s.working_dir(Some(&group)),
            Some(PathBuf::from("/data/worktrees/r-1/t-implementer-0a1b"))
        );
        s.worktree = Some(tree(Some("crates/core")));
        assert_eq!(
            s.working_dir(None),
            Some(PathBuf::from(
                "/data/worktrees/r-1/t-implementer-0a1b/crates/core"
            ))
        );
        assert_eq!(tree(None).label(), "t-implementer-0a1b");
    }

    #[test]
    fn a_subdir_never_leads_out_of_the_worktree() {
        for bad in ["../../etc", "/etc", "a/../../b", ""] {
            assert_eq!(
                tree(Some(bad)).working_dir(),
                PathBuf::from("/data/worktrees/r-1/t-implementer-0a1b"),
                "{bad}"
            );
        }
    }

    #[test]
    fn records_round_trip_and_old_files_have_none() {
        let json = serde_json::to_string(&tree(None)).unwrap();
        assert!(!json.contains("subdir"), "{json}");
        assert_eq!(serde_json::from_str::<Worktree>(&json).unwrap(), tree(None));
        let old: Session = serde_json::from_str(r#"{"id":"1","name":"a"}"#).unwrap();
        assert_eq!(old.worktree, None);
        let g: Group = serde_json::from_str(r#"{"id":"1","name":"g"}"#).unwrap();
        assert!(g.worktrees.is_shared());
        assert!(!serde_json::to_string(&g).unwrap().contains("worktrees"));
    }
}
