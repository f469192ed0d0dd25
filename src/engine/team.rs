//! The team as a run sees it: read once from the organization when the run starts, so a
//! rename or an edit during the run changes nothing under it (events carry ids).

use std::time::Duration;

use crate::model::{FlowLinks, GroupKind, Memory, Mode, ModeSettings, Role, RunBudget, Session};

use crate::naming::worker_handle;

use super::protocol::WorkerInfo;
use super::{EngineError, EngineShared, RunOverrides};

/// A member of the team.
#[derive(Debug, Clone)]
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
    pub orchestrator: Option<Member>,
    pub workers: Vec<Member>,
    pub evaluator: Option<Member>,
    /// Who answers in broadcast and sequential: every session in order, except the evaluator
    /// and, in a team built around an orchestrator, the orchestrator (they plan and judge, they
    /// do not answer alongside the workers).
    pub participants: Vec<Member>,
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
            let handles = crate::model::member_handles(&sessions, &slug);
            let is_team = group.kind == GroupKind::Team;
            let member = |s: &Session| {
                let handle = handles
                    .iter()
                    .find(|(id, _)| *id == s.id)
                    .map_or_else(|| worker_handle(&s.name, &slug), |(_, h)| h.clone());
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
                member_of(s, handle, shown, overrides)
            };
            let orchestrator = sessions
                .iter()
                .find(|s| s.role == Role::Orchestrator)
                .map(|s| member(s));
            let evaluator_session = org.evaluator_of(group_id);
            let evaluator_id = evaluator_session.map(|s| s.id.as_str());
            let workers: Vec<Member> = sessions
                .iter()
                .filter(|s| s.role == Role::Worker && Some(s.id.as_str()) != evaluator_id)
                .map(|s| member(s))
                .collect();
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
                evaluator: evaluator_session.map(member),
                participants: sessions
                    .iter()
                    .filter(|s| Some(s.id.as_str()) != evaluator_id)
                    .filter(|s| !(s.role == Role::Orchestrator && group.mode.spec().has_orchestrator))
                    .map(|s| member(s))
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

    /// A participant by session id.
    pub fn participant(&self, id: &str) -> Option<&Member> {
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
