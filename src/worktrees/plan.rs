//! Which worktrees a team gets and what they are called: pure functions, no git.
//!
//! Names are made by huddle only: ASCII slugs of the team's and workers' names (whatever a
//! preset or a repository's `.squad/` calls them), so a branch is always
//! `huddle/<team-slug>-<role>-<4 hex>` and a path always `<root>/<repo-slug>/<same>`.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::model::{Organization, Role, SessionId, WorktreeStrategy};
use crate::naming::worker_handle;

/// Every branch huddle makes starts with this; huddle never deletes any other branch.
pub fn branch_prefix() -> &'static str {
    "huddle/"
}

/// Longest team or role part of a name.
const PART_MAX: usize = 32;

/// One worktree to make for a team.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWorktree {
    /// The role part of its name: `orchestrator`, `workers`, `team` or a worker's handle.
    pub role: String,
    /// `huddle/<team-slug>-<role>-<4 hex>`.
    pub branch: String,
    /// `<repo dir>/<team-slug>-<role>-<4 hex>`.
    pub path: PathBuf,
    /// The sessions that work in it.
    pub sessions: Vec<SessionId>,
}

/// Lower-case ASCII letters and digits, every other run of characters one `-`, at most `max`
/// long, no `-` at either end; `fallback` when nothing is left.
pub fn ascii_slug(text: &str, max: usize, fallback: &str) -> String {
    // `naming::slug` keeps letters of any script; here anything but ASCII is a gap.
    let ascii: String = text.chars().map(|c| if c.is_ascii() { c } else { ' ' }).collect();
    let mut out = crate::naming::slug(&ascii);
    out.truncate(max);
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        fallback.to_string()
    } else {
        trimmed.to_string()
    }
}

/// FNV-1a, 64 bits: a stable hash (the same on every run and build) for folder names.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The folder of a repository's worktrees: its folder name's slug and a hash of its path, so
/// two repositories called `app` never share one (`app-1f2e3d4c`).
pub fn repo_slug(repo_toplevel: &Path) -> String {
    let name = repo_toplevel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let hash = fnv1a(repo_toplevel.as_os_str().as_bytes());
    format!("{}-{:08x}", ascii_slug(&name, 24, "repo"), hash as u32)
}

/// Four random hex digits.
pub fn random_suffix() -> String {
    format!("{:04x}", fastrand::u16(..))
}

/// The worktrees `strategy` gives the team `group_id` of `org`, named with `suffix()` and placed
/// in `repo_dir`. The evaluator works with the orchestrator (it judges what the orchestrator
/// delivers); without an orchestrator it is treated like a worker. Empty for `shared`.
pub fn plan_team(
    org: &Organization,
    group_id: &str,
    strategy: WorktreeStrategy,
    repo_dir: &Path,
    mut suffix: impl FnMut() -> String,
) -> Vec<PlannedWorktree> {
    let Some(group) = org.group(group_id) else {
        return Vec::new();
    };
    let team = ascii_slug(&group.members_slug(), PART_MAX, "team");
    let evaluator = org.evaluator_of(group_id).map(|s| s.id.clone());
    let sessions = org.sessions_in(group_id);
    let orchestrator: Vec<SessionId> = sessions
        .iter()
        .filter(|s| s.role == Role::Orchestrator)
        .map(|s| s.id.clone())
        .take(1)
        .collect();
    let leads: Vec<SessionId> = if orchestrator.is_empty() {
        Vec::new()
    } else {
        orchestrator.iter().cloned().chain(evaluator.clone()).collect()
    };
    let others: Vec<(SessionId, String)> = sessions
        .iter()
        .filter(|s| !leads.contains(&s.id))
        .map(|s| {
            let handle = if Some(&s.id) == evaluator.as_ref() {
                "evaluator".to_string()
            } else {
                worker_handle(&s.name, &group.members_slug())
            };
            (s.id.clone(), handle)
        })
        .collect();
    let mut groups: Vec<(String, Vec<SessionId>)> = Vec::new();
    match strategy {
        WorktreeStrategy::Shared => {}
        WorktreeStrategy::GroupShared => {
            groups.push(("team".into(), sessions.iter().map(|s| s.id.clone()).collect()));
        }
        WorktreeStrategy::OrchestratorIsolated => {
            if !leads.is_empty() {
                groups.push(("orchestrator".into(), leads.clone()));
            }
            if !others.is_empty() {
                groups.push((
                    "workers".into(),
                    others.iter().map(|(id, _)| id.clone()).collect(),
                ));
            }
        }
        WorktreeStrategy::FullyIsolated => {
            if !leads.is_empty() {
                groups.push(("orchestrator".into(), leads.clone()));
            }
            for (id, handle) in &others {
                groups.push((handle.clone(), vec![id.clone()]));
            }
        }
    }
    let mut taken: Vec<String> = Vec::new();
    groups
        .into_iter()
        .map(|(role, sessions)| {
            let role = ascii_slug(&role, PART_MAX, "member");
            let mut label = format!("{team}-{role}-{}", suffix());
            // Two members whose names slug alike still get two worktrees.
            while taken.contains(&label) {
                label = format!("{team}-{role}-{}", suffix());
            }
            taken.push(label.clone());
            PlannedWorktree {
                branch: format!("{}{label}", branch_prefix()),
                path: repo_dir.join(&label),
                role,
                sessions,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::model::{Preset, Tier};

    fn team(mode: &str, evaluator: bool) -> (Organization, String) {
        let text = format!(
            "name: Coding Crew ✨\nmode: {mode}\norchestrator: {{}}\n{}workers:\n  - {{ name: Implementer }}\n  - {{ name: Tester }}\n",
            if evaluator { "evaluator: {}\n" } else { "" }
        );
        let config = Config::from_env(|_| None);
        let preset: Preset =
            crate::presets::parse_preset(&text, Path::new("p.yaml"), Tier::User, &config).unwrap();
        let mut org = Organization::default();
        let id = crate::presets::create_team_group(&mut org, &preset, &config, Some(Path::new("/r")));
        (org, id)
    }

    fn counter() -> impl FnMut() -> String {
        let mut n = 0;
        move || {
            n += 1;
            format!("{n:04x}")
        }
    }

    fn names(org: &Organization, plan: &[PlannedWorktree]) -> Vec<(String, Vec<String>)> {
        plan.iter()
            .map(|p| {
                let members = p
                    .sessions
                    .iter()
                    .map(|id| org.session(id).unwrap().name.clone())
                    .collect();
                (p.branch.clone(), members)
            })
            .collect()
    }

    #[test]
    fn each_strategy_shares_worktrees_as_it_says() {
        let (org, id) = team("orchestrator_reflect", true);
        let dir = Path::new("/data/worktrees/r-00000000");
        assert!(plan_team(&org, &id, WorktreeStrategy::Shared, dir, counter()).is_empty());
        let plan = plan_team(&org, &id, WorktreeStrategy::GroupShared, dir, counter());
        assert_eq!(
            names(&org, &plan),
            [(
                "huddle/coding-crew-team-0001".to_string(),
                vec![
                    "coding-crew-orchestrator".to_string(),
                    "coding-crew-implementer".into(),
                    "coding-crew-tester".into(),
                    "coding-crew-evaluator".into()
                ]
            )]
        );
        assert_eq!(plan[0].path, dir.join("coding-crew-team-0001"));
        let plan = plan_team(&org, &id, WorktreeStrategy::OrchestratorIsolated, dir, counter());
        assert_eq!(
            names(&org, &plan),
            [
                (
                    "huddle/coding-crew-orchestrator-0001".to_string(),
                    vec![
                        "coding-crew-orchestrator".to_string(),
                        "coding-crew-evaluator".into()
                    ]
                ),
                (
                    "huddle/coding-crew-workers-0002".to_string(),
                    vec!["coding-crew-implementer".to_string(), "coding-crew-tester".into()]
                ),
            ]
        );
        let plan = plan_team(&org, &id, WorktreeStrategy::FullyIsolated, dir, counter());
        let branches: Vec<&str> = plan.iter().map(|p| p.branch.as_str()).collect();
        assert_eq!(
            branches,
            [
                "huddle/coding-crew-orchestrator-0001",
                "huddle/coding-crew-implementer-0002",
                "huddle/coding-crew-tester-0003"
            ]
        );
        assert_eq!(plan[1].sessions.len(), 1);
    }

    #[test]
    fn a_team_without_an_orchestrator_isolates_its_members() {
        let (mut org, id) = team("broadcast", false);
        org.sessions.retain(|s| s.role != Role::Orchestrator);
        let plan = plan_team(
            &org,
            &id,
            WorktreeStrategy::FullyIsolated,
            Path::new("/d"),
            counter(),
        );
        assert_eq!(plan.len(), 2);
        let plan = plan_team(
            &org,
            &id,
            WorktreeStrategy::OrchestratorIsolated,
            Path::new("/d"),
            counter(),
        );
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].role, "workers");
    }

    #[test]
    fn names_are_ascii_slugs_that_cannot_leave_the_folder() {
        assert_eq!(ascii_slug("../../etc/passwd", 32, "x"), "etc-passwd");
        assert_eq!(ascii_slug("Lösung Team", 32, "x"), "l-sung-team");
        assert_eq!(ascii_slug("✨", 32, "team"), "team");
        assert_eq!(ascii_slug("a-very-long-name-indeed", 8, "x"), "a-very-l");
        assert_eq!(ascii_slug("abcdefg-hij", 8, "x"), "abcdefg");
        let a = repo_slug(Path::new("/home/u/app"));
        let b = repo_slug(Path::new("/srv/app"));
        assert!(
            a.starts_with("app-") && b.starts_with("app-") && a != b,
            "{a} {b}"
        );
        assert_eq!(a, repo_slug(Path::new("/home/u/app")), "stable");
        assert_eq!(random_suffix().len(), 4);
    }

    #[test]
    fn members_whose_names_slug_alike_get_distinct_worktrees() {
        let (mut org, id) = team("orchestrator", false);
        for s in org.sessions.iter_mut().filter(|s| s.role == Role::Worker) {
            s.name = format!("{}-ü", s.name.split('-').next().unwrap());
        }
        let same = || String::from("0000");
        let mut calls = 0;
        let suffix = || {
            calls += 1;
            if calls < 3 { same() } else { format!("{calls:04x}") }
        };
        let plan = plan_team(
            &org,
            &id,
            WorktreeStrategy::FullyIsolated,
            Path::new("/d"),
            suffix,
        );
        let mut branches: Vec<&str> = plan.iter().map(|p| p.branch.as_str()).collect();
        branches.sort();
        branches.dedup();
        assert_eq!(branches.len(), plan.len());
    }
}
