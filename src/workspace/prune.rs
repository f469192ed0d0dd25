//! Headless leftovers: the teams and one-shot sessions `huddle run` made, which pile up in the
//! sidebar. `huddle runs prune --older-than 7d` (and the TUI's prune action) removes them
//! through the same deletions as the TUI's delete (worktrees holding work are kept).

use chrono::{DateTime, Utc};

use crate::model::Organization;

use super::edits::{Edits, RemovalReport};

/// A group or session `huddle run` made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub id: String,
    pub name: String,
    pub is_group: bool,
    /// When a headless run made or last used it.
    pub last_used: DateTime<Utc>,
}

/// Every headless leftover last used before `cutoff`, oldest first. A one-shot session inside
/// a leftover group goes with its group.
pub fn headless_leftovers(org: &Organization, cutoff: DateTime<Utc>) -> Vec<Leftover> {
    let mut found: Vec<Leftover> = org
        .groups
        .iter()
        .filter_map(|g| g.headless_at.filter(|at| *at < cutoff).map(|at| (g, at)))
        .map(|(g, at)| Leftover {
            id: g.id.clone(),
            name: g.name.clone(),
            is_group: true,
            last_used: at,
        })
        .collect();
    let groups_going: Vec<&str> = found.iter().map(|l| l.id.as_str()).collect();
    let sessions: Vec<Leftover> = org
        .sessions
        .iter()
        .filter(|s| !groups_going.contains(&s.group_id.as_str()))
        .filter_map(|s| s.headless_at.filter(|at| *at < cutoff).map(|at| (s, at)))
        .map(|(s, at)| Leftover {
            id: s.id.clone(),
            name: s.name.clone(),
            is_group: false,
            last_used: at,
        })
        .collect();
    found.extend(sessions);
    found.sort_by_key(|l| l.last_used);
    found
}

/// What pruning did.
#[derive(Debug, Default)]
pub struct PruneReport {
    pub removed: Vec<Leftover>,
    /// Not removed, with why (running now, gone meanwhile).
    pub skipped: Vec<(Leftover, String)>,
    /// What became of their worktrees (those holding work are kept).
    pub files: RemovalReport,
}

impl PruneReport {
    /// One line per thing done or not done, for a terminal.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for l in &self.removed {
            let what = if l.is_group { "team" } else { "session" };
            lines.push(format!(
                "removed {what} `{}` (last used {})",
                l.name,
                l.last_used.format("%Y-%m-%d %H:%M")
            ));
        }
        for (l, why) in &self.skipped {
            lines.push(format!("kept `{}`: {why}", l.name));
        }
        for (w, what) in &self.files.kept {
            lines.push(format!("kept worktree {} ({what})", w.path.display()));
        }
        for (w, why) in &self.files.failed {
            lines.push(format!("could not remove worktree {}: {why}", w.path.display()));
        }
        lines
    }
}

/// Deletes `leftovers` and their files (transcripts, run files; worktrees only when they hold no
/// work). Blocking (files, git): call it off the UI thread.
pub fn prune(edits: &Edits, leftovers: &[Leftover]) -> PruneReport {
    let mut report = PruneReport::default();
    for leftover in leftovers {
        let removal = if leftover.is_group {
            edits.delete_group(&leftover.id)
        } else {
            edits.delete_session(&leftover.id)
        };
        match removal {
            Ok(removal) => {
                let files = edits.remove_files(&removal);
                report.files.removed.extend(files.removed);
                report.files.kept.extend(files.kept);
                report.files.failed.extend(files.failed);
                report.removed.push(leftover.clone());
            }
            // Running now (busy) or gone meanwhile: kept, with why.
            Err(e) => report.skipped.push((leftover.clone(), e.to_string())),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Group, GroupKind, Session};
    use chrono::Duration;

    #[test]
    fn only_headless_things_older_than_the_cutoff_are_leftovers() {
        let now = Utc::now();
        let mut org = Organization::default();
        let mut old_team = Group::new("Review · run Nov 01 10:00", GroupKind::Team);
        old_team.headless_at = Some(now - Duration::days(10));
        let mut fresh_team = Group::new("Review · run Nov 23 10:00", GroupKind::Team);
        fresh_team.headless_at = Some(now - Duration::hours(2));
        let mine = Group::new("My team", GroupKind::Team);
        let mut member = Session::new("review-lead", &old_team.id, "sim/x");
        member.headless_at = Some(now - Duration::days(10));
        let mut one_shot = Session::new("run-20261101-100000", "default", "sim/x");
        one_shot.headless_at = Some(now - Duration::days(9));
        let chat = Session::new("chat", "default", "sim/x");
        org.groups = vec![old_team.clone(), fresh_team, mine];
        org.sessions = vec![member, one_shot.clone(), chat];

        let found = headless_leftovers(&org, now - Duration::days(7));
        let names: Vec<&str> = found.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [old_team.name.as_str(), one_shot.name.as_str()],
            "oldest first, member with its team"
        );
        assert!(found[0].is_group && !found[1].is_group);
        assert!(headless_leftovers(&org, now - Duration::days(30)).is_empty());
    }
}
