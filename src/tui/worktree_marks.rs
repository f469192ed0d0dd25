//! What the TUI knows of team worktrees' states: each session's worktree as the sidebar marks
//! it (from `worktree_statuses`, computed off the UI thread) and which refreshes are in flight
//! (a burst of reasons to look again makes one more look, never one per reason). The worktrees
//! controller (`features/worktrees.rs`) keeps them.

use std::collections::{HashMap, HashSet};

use crate::model::{GroupId, SessionId};
use crate::worktrees::SessionWorktree;

use super::command::Command;

/// One session's worktree as the sidebar draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    pub group_id: GroupId,
    /// Uncommitted changes (`±`).
    pub changes: usize,
    /// Commits no other branch has (`↑N`).
    pub unmerged: u32,
    /// Its folder is gone.
    pub gone: bool,
    /// It could not be looked at (why).
    pub error: Option<String>,
}

impl Mark {
    fn of(s: &SessionWorktree) -> Mark {
        match &s.status {
            Ok(st) => Mark {
                group_id: s.group_id.clone(),
                changes: st.changes,
                unmerged: st.unmerged,
                gone: !st.exists,
                error: None,
            },
            Err(e) => Mark {
                group_id: s.group_id.clone(),
                changes: 0,
                unmerged: 0,
                gone: false,
                error: Some(e.to_string()),
            },
        }
    }
}

/// Refresh bookkeeping and the marks.
#[derive(Debug, Default)]
pub struct WorktreeMarks {
    marks: HashMap<SessionId, Mark>,
    /// Refreshes asked of the runtime and not answered yet (`None`: every group).
    in_flight: HashSet<Option<GroupId>>,
    /// Asked again while in flight: one more refresh when the answer comes.
    again: HashSet<Option<GroupId>>,
    next_request: u64,
}

impl WorktreeMarks {
    pub fn mark(&self, session_id: &str) -> Option<&Mark> {
        self.marks.get(session_id)
    }

    /// A refresh of `group_id` (or all): a command now, or one more after the one in flight.
    pub fn refresh(&mut self, group_id: Option<GroupId>) -> Option<Command> {
        if self.in_flight.contains(&group_id) || self.in_flight.contains(&None) {
            self.again.insert(group_id);
            return None;
        }
        self.in_flight.insert(group_id.clone());
        Some(Command::RefreshWorktrees { group_id })
    }

    /// True while a refresh of `group_id` (or of all) is in flight.
    pub fn refreshing(&self, group_id: Option<&str>) -> bool {
        self.in_flight.contains(&None) || self.in_flight.contains(&group_id.map(str::to_string))
    }

    /// Statuses arrived: they replace the group's marks (all of them for `None`); a refresh
    /// asked meanwhile goes out now.
    pub fn on_statuses(&mut self, group_id: Option<GroupId>, statuses: &[SessionWorktree]) -> Vec<Command> {
        self.in_flight.remove(&group_id);
        match &group_id {
            Some(g) => self.marks.retain(|_, m| m.group_id != *g),
            None => self.marks.clear(),
        }
        for s in statuses {
            self.marks.insert(s.session_id.clone(), Mark::of(s));
        }
        let pending: Vec<Option<GroupId>> = self
            .again
            .iter()
            .filter(|g| !self.refreshing(g.as_deref()))
            .cloned()
            .collect();
        pending
            .into_iter()
            .filter_map(|g| {
                self.again.remove(&g);
                self.refresh(g)
            })
            .collect()
    }

    /// A fresh id for a diff view's request (an answer for a closed view is dropped).
    pub fn next_request(&mut self) -> u64 {
        self.next_request += 1;
        self.next_request
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshes_coalesce_while_one_is_in_flight() {
        let mut m = WorktreeMarks::default();
        let g = Some("g1".to_string());
        assert!(m.refresh(g.clone()).is_some());
        assert!(m.refresh(g.clone()).is_none(), "one in flight");
        assert!(m.refresh(g.clone()).is_none(), "still one");
        let again = m.on_statuses(g.clone(), &[]);
        assert_eq!(again, vec![Command::RefreshWorktrees { group_id: g.clone() }]);
        assert!(m.on_statuses(g, &[]).is_empty(), "nothing asked meanwhile");
    }
}
