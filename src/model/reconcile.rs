//! Pure repairs of an organization (SPEC section 6): run after every load, idempotent.
//!
//! The rule that matters most: team sessions are never scattered into repo or default groups.
//! A team whose group is gone is kept together in a recovered team group.

use std::collections::HashSet;

use super::limits;
use super::organization::new_id;
use super::{Group, GroupKind, Mode, Organization, Role, SessionId};

/// Repairs `org` in place and describes each change (empty when nothing changed).
pub fn reconcile(org: &mut Organization) -> Vec<String> {
    let mut changes = Vec::new();
    fix_group_ids(org, &mut changes);
    ensure_one_default_group(org, &mut changes);
    fix_session_ids(org, &mut changes);
    clamp_max_iterations(org, &mut changes);
    rehome_orphans(org, &mut changes);
    resolve_evaluators(org, &mut changes);
    rename_duplicate_sessions(org, &mut changes);
    prune_empty_repo_groups(org, &mut changes);
    clear_stale_selection(org);
    changes
}

fn fix_group_ids(org: &mut Organization, changes: &mut Vec<String>) {
    let mut seen = HashSet::new();
    for group in &mut org.groups {
        if group.id.trim().is_empty() || !seen.insert(group.id.clone()) {
            let old = std::mem::replace(&mut group.id, new_id());
            seen.insert(group.id.clone());
            changes.push(format!(
                "group `{}` had a missing or duplicate id `{old}`; gave it a new one",
                group.name
            ));
        }
    }
}

fn ensure_one_default_group(org: &mut Organization, changes: &mut Vec<String>) {
    let defaults: Vec<String> = org
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Default)
        .map(|g| g.id.clone())
        .collect();
    match defaults.split_first() {
        None => {
            let mut group = Group::new("Sessions", GroupKind::Default);
            group.sort_order = org
                .groups
                .iter()
                .map(|g| g.sort_order)
                .min()
                .map_or(0, |m| m.saturating_sub(1));
            org.groups.insert(0, group);
            // Creating the default group of a new organization is not worth a notice.
            if !org.sessions.is_empty() || org.groups.len() > 1 {
                changes.push("added the missing default group".into());
            }
        }
        Some((keep, extra)) => {
            for id in extra {
                for s in org.sessions.iter_mut().filter(|s| &s.group_id == id) {
                    s.group_id = keep.clone();
                }
                changes.push(format!("merged a second default group ({id}) into the first"));
            }
            org.groups
                .retain(|g| g.kind != GroupKind::Default || &g.id == keep);
        }
    }
}

/// A stored `max_iterations` outside the valid range (hand-edited, or from an older huddle)
/// becomes the nearest valid value.
fn clamp_max_iterations(org: &mut Organization, changes: &mut Vec<String>) {
    for group in &mut org.groups {
        let clamped = limits::clamp_max_iterations(group.max_iterations);
        if clamped != group.max_iterations {
            changes.push(format!(
                "group `{}` had max iterations {}; set to {clamped}",
                group.name, group.max_iterations
            ));
            group.max_iterations = clamped;
        }
    }
}

fn fix_session_ids(org: &mut Organization, changes: &mut Vec<String>) {
    let mut seen = HashSet::new();
    for s in &mut org.sessions {
        if s.id.trim().is_empty() || !seen.insert(s.id.clone()) {
            let old = std::mem::replace(&mut s.id, new_id());
            seen.insert(s.id.clone());
            changes.push(format!(
                "session `{}` had a missing or duplicate id `{old}`; gave it a new one (its transcript stays with the first)",
                s.name
            ));
        }
    }
}

fn rehome_orphans(org: &mut Organization, changes: &mut Vec<String>) {
    let group_ids: HashSet<String> = org.groups.iter().map(|g| g.id.clone()).collect();
    let Some(default_id) = org.default_group().map(|g| g.id.clone()) else {
        return;
    };
    let mut recovered: Vec<String> = Vec::new();
    for i in 0..org.sessions.len() {
        if group_ids.contains(&org.sessions[i].group_id) {
            continue;
        }
        let session = &org.sessions[i];
        if session.is_team_member() {
            // Keep the team together under its old group id (a fresh one when it has none, or
            // when that id is taken by another group).
            let gid = if session.group_id.trim().is_empty() {
                match recovered.iter().find(|g| g.starts_with("recovered-")) {
                    Some(g) => g.clone(),
                    None => format!("recovered-{}", new_id()),
                }
            } else {
                session.group_id.clone()
            };
            if !recovered.contains(&gid) {
                recovered.push(gid.clone());
            }
            org.sessions[i].group_id = gid;
        } else {
            changes.push(format!(
                "session `{}` pointed at a missing group; moved it to `{}`",
                session.name,
                org.group(&default_id).map_or("default", |g| g.name.as_str())
            ));
            org.sessions[i].group_id = default_id.clone();
        }
    }
    for gid in recovered {
        let members: Vec<_> = org.sessions.iter().filter(|s| s.group_id == gid).collect();
        let has_orchestrator = members.iter().any(|s| s.role == Role::Orchestrator);
        let evaluator = members
            .iter()
            .find(|s| s.role == Role::Evaluator)
            .map(|s| s.id.clone());
        let count = members.len();
        let name = org.unique_group_name("Recovered team");
        let mut group = Group::new(name.clone(), GroupKind::Team);
        group.id = gid;
        group.mode = if has_orchestrator {
            Mode::OrchestratorReflect
        } else {
            Mode::Broadcast
        };
        group.evaluator_id = evaluator;
        group.sort_order = org.next_group_sort_order();
        org.groups.push(group);
        changes.push(format!(
            "kept {count} team session(s) of a missing group together in `{name}`"
        ));
    }
}

/// Groups name their evaluator by session id. A file from before ids names it by session name:
/// that name is looked up in the group once, here. An id that names no session of the group is
/// dropped (the evaluator role then decides, as for a group that never named one).
fn resolve_evaluators(org: &mut Organization, changes: &mut Vec<String>) {
    for i in 0..org.groups.len() {
        let gid = org.groups[i].id.clone();
        if let Some(name) = org.groups[i].legacy_evaluator_name.take()
            && org.groups[i].evaluator_id.is_none()
        {
            org.groups[i].evaluator_id = org
                .sessions
                .iter()
                .find(|s| s.group_id == gid && s.name == name)
                .map(|s| s.id.clone());
        }
        let dangling = org.groups[i]
            .evaluator_id
            .as_ref()
            .is_some_and(|id| !org.sessions.iter().any(|s| &s.id == id && s.group_id == gid));
        if dangling {
            org.groups[i].evaluator_id = None;
            changes.push(format!(
                "group `{}` named an evaluator that is not one of its sessions; forgot it",
                org.groups[i].name
            ));
        }
    }
}

fn rename_duplicate_sessions(org: &mut Organization, changes: &mut Vec<String>) {
    let mut seen: HashSet<String> = HashSet::new();
    for i in 0..org.sessions.len() {
        let name = org.sessions[i].name.clone();
        if seen.insert(name.clone()) {
            continue;
        }
        let mut k = 2;
        let renamed = loop {
            let candidate = format!("{name}-{k}");
            if !seen.contains(&candidate) && !org.sessions.iter().any(|s| s.name == candidate) {
                break candidate;
            }
            k += 1;
        };
        seen.insert(renamed.clone());
        org.sessions[i].name = renamed.clone();
        changes.push(format!(
            "two sessions were named `{name}`; renamed the second `{renamed}`"
        ));
    }
}

fn prune_empty_repo_groups(org: &mut Organization, changes: &mut Vec<String>) {
    let used: HashSet<&str> = org.sessions.iter().map(|s| s.group_id.as_str()).collect();
    let before = org.groups.len();
    let mut pruned = Vec::new();
    org.groups.retain(|g| {
        let keep = g.kind != GroupKind::Repo || used.contains(g.id.as_str());
        if !keep {
            pruned.push(g.name.clone());
        }
        keep
    });
    if org.groups.len() != before {
        changes.push(format!("removed empty repo group(s): {}", pruned.join(", ")));
    }
}

fn clear_stale_selection(org: &mut Organization) {
    if let Some(g) = &org.ui.selected_group
        && org.group(g).is_none()
    {
        org.ui.selected_group = None;
    }
    if let Some(s) = &org.ui.selected_session
        && org.session(s).is_none()
    {
        org.ui.selected_session = None;
    }
    let groups: HashSet<String> = org.groups.iter().map(|g| g.id.clone()).collect();
    org.ui.collapsed_groups.retain(|g| groups.contains(g));
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeleteError {
    #[error("no group with id `{0}`")]
    NoSuchGroup(String),
    #[error("the default group cannot be deleted")]
    DefaultGroup,
}

/// What deleting a group did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// Sessions removed with a team (their transcripts should be deleted too).
    pub removed_sessions: Vec<SessionId>,
    /// Sessions moved to the default group.
    pub moved_sessions: Vec<SessionId>,
}

/// What [`delete_group`] would do, for a confirmation prompt.
pub fn describe_delete(org: &Organization, group_id: &str) -> Result<String, DeleteError> {
    let group = org
        .group(group_id)
        .ok_or_else(|| DeleteError::NoSuchGroup(group_id.into()))?;
    if group.kind == GroupKind::Default {
        return Err(DeleteError::DefaultGroup);
    }
    let names: Vec<&str> = org
        .sessions_in(group_id)
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    Ok(if group.is_team() {
        format!(
            "Delete team `{}` and its {} session(s) with their transcripts: {}",
            group.name,
            names.len(),
            names.join(", ")
        )
    } else {
        format!(
            "Delete group `{}`; its {} session(s) move to the default group",
            group.name,
            names.len()
        )
    })
}

/// Deletes a group: a team takes its sessions with it; any other group's sessions move to the
/// default group.
pub fn delete_group(org: &mut Organization, group_id: &str) -> Result<Deleted, DeleteError> {
    let group = org
        .group(group_id)
        .ok_or_else(|| DeleteError::NoSuchGroup(group_id.into()))?;
    if group.kind == GroupKind::Default {
        return Err(DeleteError::DefaultGroup);
    }
    let is_team = group.is_team();
    let mut deleted = Deleted {
        removed_sessions: Vec::new(),
        moved_sessions: Vec::new(),
    };
    if is_team {
        org.sessions.retain(|s| {
            let member = s.group_id == group_id;
            if member {
                deleted.removed_sessions.push(s.id.clone());
            }
            !member
        });
    } else {
        let default_id = org.default_group().map(|g| g.id.clone()).unwrap_or_default();
        let first = org.next_session_order(&default_id);
        let members = org.sessions.iter_mut().filter(|s| s.group_id == group_id);
        for (order, s) in (first..).zip(members) {
            s.group_id = default_id.clone();
            s.order = order;
            deleted.moved_sessions.push(s.id.clone());
        }
    }
    org.groups.retain(|g| g.id != group_id);
    clear_stale_selection(org);
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Session;

    fn base() -> (Organization, String) {
        let mut org = Organization::default();
        assert!(
            reconcile(&mut org).is_empty(),
            "a new organization needs no notice"
        );
        let default = org.default_group().unwrap().id.clone();
        (org, default)
    }

    fn team_session(name: &str, group: &str, role: Role) -> Session {
        let mut s = Session::new(name, group, "sim/x");
        s.role = role;
        s.team = true;
        s
    }

    fn assert_idempotent(org: &mut Organization) {
        let snapshot = org.clone();
        assert_eq!(reconcile(org), Vec::<String>::new(), "second run reports nothing");
        assert_eq!(*org, snapshot, "second run changes nothing");
    }

    #[test]
    fn default_group_is_created_once() {
        let (mut org, _) = base();
        assert_eq!(org.groups.len(), 1);
        assert_idempotent(&mut org);
    }

    #[test]
    fn team_sessions_of_a_missing_group_stay_together_in_a_recovered_team() {
        let (mut org, default) = base();
        let mut repo = Group::new("repo", GroupKind::Repo);
        repo.id = "repo-1".into();
        org.groups.push(repo);
        org.sessions.push(Session::new("plain", "repo-1", "sim/x"));
        org.sessions
            .push(team_session("t-orch", "gone", Role::Orchestrator));
        org.sessions.push(team_session("t-w1", "gone", Role::Worker));
        org.sessions.push(team_session("t-eval", "gone", Role::Evaluator));
        // A worker without the marker but with an orchestrator role elsewhere: plain orphan.
        org.sessions.push(Session::new("lost", "also-gone", "sim/x"));

        let changes = reconcile(&mut org);
        assert!(!changes.is_empty());
        let recovered = org.group("gone").expect("recovered group keeps the old id");
        assert_eq!(recovered.kind, GroupKind::Team);
        assert_eq!(recovered.mode, Mode::OrchestratorReflect);
        let evaluator = org.session_by_name("t-eval").unwrap().id.clone();
        assert_eq!(recovered.evaluator_id.as_deref(), Some(evaluator.as_str()));
        for name in ["t-orch", "t-w1", "t-eval"] {
            let s = org.session_by_name(name).unwrap();
            assert_eq!(s.group_id, "gone", "{name} must not be scattered");
            assert_ne!(s.group_id, default);
            assert_ne!(s.group_id, "repo-1");
        }
        assert_eq!(org.session_by_name("lost").unwrap().group_id, default);
        assert_eq!(org.session_by_name("plain").unwrap().group_id, "repo-1");
        assert_idempotent(&mut org);
    }

    #[test]
    fn orchestrator_without_marker_is_still_a_team_member() {
        let (mut org, default) = base();
        let mut s = Session::new("o", "vanished", "sim/x");
        s.role = Role::Orchestrator;
        org.sessions.push(s);
        reconcile(&mut org);
        let gid = &org.session_by_name("o").unwrap().group_id;
        assert_ne!(gid, &default);
        assert!(org.group(gid).unwrap().is_team());
        assert_idempotent(&mut org);
    }

    #[test]
    fn duplicate_session_names_are_renamed_and_empty_repo_groups_pruned() {
        let (mut org, default) = base();
        org.sessions.push(Session::new("dup", &default, "sim/x"));
        org.sessions.push(Session::new("dup", &default, "sim/x"));
        org.sessions.push(Session::new("dup-2", &default, "sim/x"));
        org.groups.push(Group::new("empty repo", GroupKind::Repo));
        org.groups.push(Group::new("empty team", GroupKind::Team));
        let changes = reconcile(&mut org);
        let names: Vec<_> = org.sessions.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["dup", "dup-3", "dup-2"]);
        assert!(org.groups.iter().all(|g| g.name != "empty repo"));
        assert!(
            org.groups.iter().any(|g| g.name == "empty team"),
            "teams are not pruned"
        );
        assert!(changes.iter().any(|c| c.contains("renamed")), "{changes:?}");
        assert_idempotent(&mut org);
    }

    #[test]
    fn several_default_groups_are_merged() {
        let (mut org, default) = base();
        let mut second = Group::new("Other default", GroupKind::Default);
        second.id = "d2".into();
        org.groups.push(second);
        org.sessions.push(Session::new("s", "d2", "sim/x"));
        reconcile(&mut org);
        assert_eq!(
            org.groups.iter().filter(|g| g.kind == GroupKind::Default).count(),
            1
        );
        assert_eq!(org.session_by_name("s").unwrap().group_id, default);
        assert_idempotent(&mut org);
    }

    #[test]
    fn extreme_orders_and_a_taken_recovery_id_do_not_break_reconciliation() {
        let mut org = Organization::default();
        let mut team = Group::new("low", GroupKind::Team);
        team.sort_order = i64::MIN;
        team.id = "recovered-team".into();
        let mut high = Group::new("high", GroupKind::Team);
        high.sort_order = i64::MAX;
        org.groups.extend([team, high]);
        let mut lost = team_session("lost-orch", "", Role::Orchestrator);
        lost.group_id = String::new();
        org.sessions.push(lost);
        reconcile(&mut org);
        let gid = org.session_by_name("lost-orch").unwrap().group_id.clone();
        assert_ne!(gid, "recovered-team", "not merged into an unrelated team");
        assert!(org.group(&gid).unwrap().is_team());
        let ids: std::collections::HashSet<_> = org.groups.iter().map(|g| g.id.clone()).collect();
        assert_eq!(ids.len(), org.groups.len(), "ids stay unique");
        assert_idempotent(&mut org);
    }

    #[test]
    fn an_evaluator_named_by_an_old_file_is_resolved_to_its_id_and_survives_a_rename() {
        let (mut org, _) = base();
        let mut team = Group::new("t", GroupKind::Team);
        team.id = "t1".into();
        team.legacy_evaluator_name = Some("t-judge".into());
        org.groups.push(team);
        org.sessions
            .push(team_session("t-lead", "t1", Role::Orchestrator));
        // The evaluator by name is a worker-role session: only the name says it judges.
        org.sessions.push(team_session("t-judge", "t1", Role::Worker));
        reconcile(&mut org);
        let judge = org.session_by_name("t-judge").unwrap().id.clone();
        assert_eq!(
            org.group("t1").unwrap().evaluator_id.as_deref(),
            Some(judge.as_str())
        );
        assert!(org.group("t1").unwrap().legacy_evaluator_name.is_none());
        org.session_mut(&judge).unwrap().name = "renamed".into();
        assert_eq!(org.evaluator_of("t1").map(|s| s.id.clone()), Some(judge));
        // Written without the old name field, read back the same.
        let json = serde_json::to_string(&org).unwrap();
        assert!(!json.contains("\"evaluator\":"), "{json}");
        let mut back: Organization = serde_json::from_str(&json).unwrap();
        assert_idempotent(&mut back);
        assert_eq!(
            back.group("t1").unwrap().evaluator_id,
            org.group("t1").unwrap().evaluator_id
        );
    }

    #[test]
    fn an_evaluator_id_of_another_group_is_forgotten() {
        let (mut org, _) = base();
        let mut team = Group::new("t", GroupKind::Team);
        team.id = "t1".into();
        team.evaluator_id = Some("nobody".into());
        org.groups.push(team);
        let changes = reconcile(&mut org);
        assert!(org.group("t1").unwrap().evaluator_id.is_none());
        assert!(changes.iter().any(|c| c.contains("evaluator")), "{changes:?}");
        assert_idempotent(&mut org);
    }

    #[test]
    fn max_iterations_out_of_range_are_clamped() {
        let (mut org, _) = base();
        for (name, n) in [("none", 0), ("many", 500), ("fine", 7)] {
            let mut g = Group::new(name, GroupKind::Team);
            g.max_iterations = n;
            org.groups.push(g);
        }
        let changes = reconcile(&mut org);
        let got: Vec<u32> = org.groups[1..].iter().map(|g| g.max_iterations).collect();
        assert_eq!(got, [1, 100, 7]);
        assert_eq!(
            changes,
            [
                "group `none` had max iterations 0; set to 1",
                "group `many` had max iterations 500; set to 100"
            ]
        );
        assert_idempotent(&mut org);
    }

    #[test]
    fn duplicate_ids_get_new_ones() {
        let (mut org, default) = base();
        let mut a = Session::new("a", &default, "sim/x");
        a.id = "same".into();
        let mut b = Session::new("b", &default, "sim/x");
        b.id = "same".into();
        org.sessions.extend([a, b]);
        reconcile(&mut org);
        assert_eq!(org.session_by_name("a").unwrap().id, "same");
        assert_ne!(org.session_by_name("b").unwrap().id, "same");
        assert_idempotent(&mut org);
    }

    #[test]
    fn deleting_a_team_removes_its_sessions() {
        let (mut org, default) = base();
        let team = Group::new("team", GroupKind::Team);
        let tid = team.id.clone();
        org.groups.push(team);
        org.sessions.push(team_session("o", &tid, Role::Orchestrator));
        org.sessions.push(team_session("w", &tid, Role::Worker));
        org.sessions.push(Session::new("keep", &default, "sim/x"));
        assert!(describe_delete(&org, &tid).unwrap().contains("o, w"));
        let deleted = delete_group(&mut org, &tid).unwrap();
        assert_eq!(deleted.removed_sessions.len(), 2);
        assert!(
            org.sessions.iter().all(|s| s.group_id != tid),
            "no session keeps the deleted id"
        );
        assert_eq!(org.sessions.len(), 1);
        assert!(org.group(&tid).is_none());
    }

    #[test]
    fn deleting_another_group_moves_its_sessions_to_default() {
        let (mut org, default) = base();
        let repo = Group::new("repo", GroupKind::Repo);
        let rid = repo.id.clone();
        org.groups.push(repo);
        org.sessions.push(Session::new("a", &rid, "sim/x"));
        let deleted = delete_group(&mut org, &rid).unwrap();
        assert_eq!(deleted.moved_sessions.len(), 1);
        assert_eq!(org.session_by_name("a").unwrap().group_id, default);
        assert_eq!(delete_group(&mut org, &default), Err(DeleteError::DefaultGroup));
        assert!(matches!(
            delete_group(&mut org, "nope"),
            Err(DeleteError::NoSuchGroup(_))
        ));
    }
}
