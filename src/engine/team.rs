//! The team as a run sees it: read once from the organization when the run starts, so a
//! rename or an edit during the run changes nothing under it (events carry ids).

use std::sync::Arc;
use std::time::Duration;

use crate::model::{FlowLinks, GroupKind, Memory, Mode, ModeSettings, Role, RunBudget, Session};

use super::protocol::WorkerInfo;
use super::{EngineError, EngineShared, RunOverrides};

/// A member of the team. Shared (`Arc`) by the team's lists and the jobs of its turns: a run
/// hands its members to every step, and a copy of one was a dozen allocations.
#[derive(Debug)]
pub(crate) struct Member {
    pub id: String,
    pub name: String,
    pub model: String,
    pub system_prompt: Option<String>,
    /// Mode `flow`: where this member passes work (session ids).
    pub flow: FlowLinks,
    /// What the member is for (its preset `role:`), for a dispatch catalog.
    pub role: Option<String>,
    /// The MCP servers it may use.
    pub tools: Vec<String>,
    /// The name it goes by in the team's prompts and tools (see [`Team::read`]).
    pub handle: String,
    /// How people and models read it in a run's results: a team member made from a preset by
    /// its handle (`analyst`, also when its session's name had to be made unique:
    /// `…-analyst-2`), else its name without the team's prefix.
    pub shown: String,
}

/// The team, read once when a run starts.
#[derive(Debug, Clone)]
pub(crate) struct Team {
    pub group_id: String,
    pub name: String,
    /// The prefix of its members' names (kept across renames).
    pub members_slug: String,
    pub mode: Mode,
    pub orchestrator: Option<Arc<Member>>,
    /// (As read: never changed after, `workers_by_name` follows its order.)
    pub workers: Vec<Arc<Member>>,
    pub evaluator: Option<Arc<Member>>,
    /// Who answers in broadcast and sequential: every session in order, except the evaluator
    /// and, in a team built around an orchestrator, the orchestrator (they plan and judge, they
    /// do not answer alongside the workers).
    pub participants: Vec<Arc<Member>>,
    /// Indices into `workers` in the order of their session names (see [`Team::worker_named`]).
    workers_by_name: Vec<usize>,
    pub orchestrator_prompt: Option<String>,
    pub shared_context: Option<String>,
    pub routing_context: Option<String>,
    pub max_iterations: u32,
    pub worker_timeout: Duration,
    pub model_override: Option<String>,
    /// Files attached to this run's prompt: every member's turn carries them.
    pub attachments: Vec<crate::attachments::Attachment>,
    /// This run's limits: the run's own, else the group's, else config.yaml's.
    pub budget: RunBudget,
    /// What members remember between runs (a plain group run as a team keeps its
    /// conversations).
    pub memory: Memory,
    /// The settings of its mode (the group's; dispatch's guardrails over config.yaml's).
    pub settings: ModeSettings,
    /// The longest this run waits for a rate or usage limit: the run's, else the group's, else
    /// config.yaml's.
    pub rate_limit_wait: Duration,
}

fn member_of(s: &Session, handle: String, shown: String, overrides: &RunOverrides) -> Member {
    Member {
        id: s.id.clone(),
        name: s.name.clone(),
        model: overrides.model.clone().unwrap_or_else(|| s.model.clone()),
        system_prompt: s.system_prompt.clone(),
        flow: s.flow.clone(),
        role: s.member_role.clone(),
        tools: s.tools.clone(),
        handle,
        shown,
    }
}

impl Team {
    pub fn read(
        shared: &EngineShared,
        group_id: &str,
        overrides: &RunOverrides,
    ) -> Result<Team, EngineError> {
        let profile = shared.profile(group_id, None);
        shared.org.read(|org| {
            let group = org
                .group(group_id)
                .ok_or_else(|| EngineError::NoSuchGroup(group_id.to_string()))?;
            let sessions = org.sessions_in(group_id);
            let slug = group.members_slug();
            let handles = crate::model::handles_in_order(&sessions, &slug);
            let is_team = group.kind == GroupKind::Team;
            // Each session's member is made once: the lists below share them.
            let members: Vec<Arc<Member>> = sessions
                .iter()
                .zip(handles)
                .map(|(s, handle)| {
                    let chair = (is_team && group.mode == Mode::Team && s.role == Role::Orchestrator)
                        .then(|| s.display_name.clone())
                        .flatten()
                        .filter(|d| !d.trim().is_empty());
                    let shown = if let Some(chair) = chair {
                        chair
                    } else if is_team && s.handle.is_some() {
                        handle.clone()
                    } else {
                        crate::naming::strip_team_prefix(&s.name, &slug).to_string()
                    };
                    Arc::new(member_of(s, handle, shown, overrides))
                })
                .collect();
            let with_sessions = || sessions.iter().zip(&members);
            let orchestrator = with_sessions()
                .find(|(s, _)| s.role == Role::Orchestrator)
                .map(|(_, m)| Arc::clone(m));
            let evaluator_session = org.evaluator_of(group_id);
            let evaluator_id = evaluator_session.map(|s| s.id.as_str());
            // (A session of the group: `evaluator_of` reads no other.)
            let evaluator = evaluator_session
                .and_then(|e| with_sessions().find(|(s, _)| s.id == e.id))
                .map(|(_, m)| Arc::clone(m));
            let workers: Vec<Arc<Member>> = with_sessions()
                .filter(|(s, _)| s.role == Role::Worker && Some(s.id.as_str()) != evaluator_id)
                .map(|(_, m)| Arc::clone(m))
                .collect();
            let mut workers_by_name: Vec<usize> = (0..workers.len()).collect();
            // Stable: of two workers with one name (never in a stored organization), the first.
            workers_by_name.sort_by(|&a, &b| workers[a].name.cmp(&workers[b].name));
            // A plain (non-team) group run as a team broadcasts to its sessions.
            let mode = overrides.mode.unwrap_or(if group.kind == GroupKind::Team {
                group.mode
            } else {
                Mode::Broadcast
            });
            Ok(Team {
                group_id: group.id.clone(),
                name: group.name.clone(),
                members_slug: group.members_slug(),
                mode,
                orchestrator,
                workers,
                workers_by_name,
                evaluator,
                participants: with_sessions()
                    .filter(|(s, _)| Some(s.id.as_str()) != evaluator_id)
                    .filter(|(s, _)| !(s.role == Role::Orchestrator && group.mode.spec().has_orchestrator))
                    .map(|(_, m)| Arc::clone(m))
                    .collect(),
                orchestrator_prompt: group.orchestrator_prompt.clone(),
                shared_context: group.shared_context.clone(),
                routing_context: group.routing_context.clone(),
                max_iterations: overrides.max_iterations.unwrap_or(group.max_iterations).max(1),
                // Clamped so that deadlines stay representable (a week is "no limit" here).
                worker_timeout: Duration::from_secs(group.worker_timeout_secs.clamp(1, 7 * 24 * 3600)),
                model_override: overrides.model.clone(),
                attachments: overrides.attachments.clone(),
                budget: overrides
                    .budget
                    .or(group.budget)
                    .or(profile.options.default_budget),
                memory: if group.kind == GroupKind::Team {
                    group.memory
                } else {
                    Memory::Conversation
                },
                settings: ModeSettings {
                    dispatch: group.settings.dispatch.or(&profile.options.default_dispatch),
                    ..group.settings.clone()
                },
                rate_limit_wait: overrides
                    .rate_limit_wait_secs
                    .or(group.rate_limit_wait_secs)
                    .map_or(profile.options.rate_limit_wait, Duration::from_secs),
            })
        })
    }

    /// The workers as an orchestrator's prompt lists them: by handle (what `@worker:` names).
    pub fn worker_infos(&self) -> Vec<WorkerInfo> {
        self.workers
            .iter()
            .map(|w| WorkerInfo::new(w.handle.clone(), w.model.clone(), w.system_prompt.clone()))
            .collect()
    }

    pub fn worker_names(&self) -> Vec<&str> {
        self.workers.iter().map(|w| w.name.as_str()).collect()
    }

    pub fn worker_handles(&self) -> Vec<&str> {
        self.workers.iter().map(|w| w.handle.as_str()).collect()
    }

    /// The worker whose session is named `name` (as an assignment names it): a lookup per
    /// assignment and per result, so not a walk through the whole team each time.
    pub fn worker_named(&self, name: &str) -> Option<&Arc<Member>> {
        let at = self
            .workers_by_name
            .partition_point(|&i| self.workers[i].name.as_str() < name);
        let worker = self.workers.get(*self.workers_by_name.get(at)?)?;
        (worker.name == name).then_some(worker)
    }

    /// A participant by session id.
    pub fn participant(&self, id: &str) -> Option<&Arc<Member>> {
        self.participants.iter().find(|m| m.id == id)
    }

    /// The team name as session names carry it (`<team-slug>-<worker>`), as it was when they
    /// were made.
    pub fn slug(&self) -> String {
        self.members_slug.clone()
    }

    /// The error of a team that cannot run in its mode, for `reason`.
    pub fn not_runnable(&self, reason: &str) -> EngineError {
        EngineError::NotRunnable {
            group: self.name.clone(),
            mode: self.mode,
            reason: reason.to_string(),
        }
    }

    /// Why the team cannot run in its mode, if it cannot (what every mode asks; a mode's own
    /// settings are checked by its file when its run starts).
    /// Every model the run's turns use (the run's `--model` instead of each member's own).
    pub fn models(&self) -> Vec<&str> {
        if let Some(model) = &self.model_override {
            return vec![model.as_str()];
        }
        self.orchestrator
            .iter()
            .chain(&self.workers)
            .chain(&self.evaluator)
            .chain(&self.participants)
            .map(|m| m.model.as_str())
            .collect()
    }

    pub fn check_runnable(&self) -> Result<(), EngineError> {
        let not_runnable = |reason: &str| self.not_runnable(reason);
        if self.participants.is_empty() && !self.mode.spec().has_orchestrator {
            return Err(not_runnable(
                "it has no sessions that answer in this mode (an orchestrator or evaluator only plans and judges)",
            ));
        }
        if self.mode.spec().has_orchestrator {
            if self.orchestrator.is_none() {
                return Err(not_runnable("it has no orchestrator session"));
            }
            if self.workers.is_empty() {
                return Err(not_runnable("it has no worker sessions"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::{Engine, EngineOptions, EventSink};
    use crate::model::{Group, Organization};
    use crate::store::{OrgHandle, Transcripts};

    /// The team of a group whose workers are named `names`, in that order, after an orchestrator.
    fn team_of(names: &[&str]) -> Team {
        let mut org = Organization::default();
        let mut group = Group::new("Crew", GroupKind::Team);
        group.mode = Mode::Orchestrator;
        let gid = group.id.clone();
        org.groups.push(group);
        let mut chair = Session::new("crew-orchestrator", &gid, "sim/zero");
        chair.role = Role::Orchestrator;
        org.sessions.push(chair);
        for (k, name) in names.iter().enumerate() {
            let mut w = Session::new(*name, &gid, "sim/zero");
            w.order = k as i64 + 1;
            org.sessions.push(w);
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let (sink, _events) = EventSink::channel();
        let engine = Engine::new(
            crate::sim::providers(&Config::default()).expect("providers"),
            OrgHandle::in_memory(org),
            Transcripts::new(dir.path().join("sessions")),
            sink,
            EngineOptions::default(),
        );
        Team::read(&engine.shared, &gid, &RunOverrides::default()).expect("team")
    }

    #[test]
    fn of_two_workers_with_one_name_the_first_is_found_as_a_walk_would() {
        // Never in a stored organization (names are made unique), but an in-memory one may.
        let team = team_of(&["crew-b", "crew-twin", "crew-a", "crew-twin"]);
        let found = team.worker_named("crew-twin").expect("found");
        assert!(Arc::ptr_eq(found, &team.workers[1]));
    }

    #[test]
    fn a_team_makes_each_member_once_and_finds_its_workers_by_session_name() {
        // Not in the order of their names: the lookup must not depend on it.
        let team = team_of(&["crew-zed", "crew-alpha", "crew-mid", "crew-alpha-2"]);
        assert_eq!(team.workers.len(), 4);
        for worker in &team.workers {
            let found = team.worker_named(&worker.name).expect("found by its name");
            assert!(
                Arc::ptr_eq(found, worker),
                "{} found as {}",
                worker.name,
                found.name
            );
        }
        assert!(team.worker_named("crew-orchestrator").is_none(), "not a worker");
        assert!(team.worker_named("crew-nobody").is_none());
        assert!(team.worker_named("").is_none());
        // The lists share one member per session.
        for member in &team.participants {
            assert!(
                team.workers.iter().any(|w| Arc::ptr_eq(w, member)),
                "{}",
                member.name
            );
        }
        let handles: Vec<&str> = team.workers.iter().map(|w| w.handle.as_str()).collect();
        assert_eq!(handles, ["zed", "alpha", "mid", "alpha-2"]);
        let chair = team.orchestrator.as_ref().expect("an orchestrator");
        assert_eq!(chair.name, "crew-orchestrator");
        assert!(team.evaluator.is_none());
        // A mode with an orchestrator: it plans, it does not answer with the workers.
        assert!(!team.participants.iter().any(|m| Arc::ptr_eq(m, chair)));
        assert_eq!(team.participants.len(), 4);
    }
}
