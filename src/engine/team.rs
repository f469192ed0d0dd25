//! The team as a run sees it: read once from the organization when the run starts, so a
//! rename or an edit during the run changes nothing under it (events carry ids).

use std::time::Duration;

use crate::model::{FlowLinks, GroupKind, Memory, Mode, Role, RouterSpec, RunBudget, Session, check_flow};

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
    /// Mode `flow`: the session the prompt goes to first.
    pub flow_entry: Option<String>,
    /// Mode `pipeline`: the stages, supervisor and rules (members by session id).
    pub pipeline: Option<crate::model::PipelineSpec>,
    /// Files attached to this run's prompt: every member's turn carries them.
    pub attachments: Vec<crate::attachments::Attachment>,
    /// This run's limits: the run's own, else the group's, else config.yaml's.
    pub budget: RunBudget,
    /// What members remember between runs (a plain group run as a team keeps its
    /// conversations).
    pub memory: Memory,
    /// Mode `dispatch`: the group's guardrails over config.yaml's.
    pub dispatch: crate::model::DispatchLimits,
    /// Mode `team`: the turn limits.
    #[allow(dead_code)] // read by mode `team` (being written on its own branch)
    pub team_limits: crate::model::TeamLimits,
}

impl Team {
    pub fn read(
        shared: &EngineShared,
        group_id: &str,
        overrides: &RunOverrides,
    ) -> Result<Team, EngineError> {
        shared.org.read(|org| {
            let group = org
                .group(group_id)
                .ok_or_else(|| EngineError::NoSuchGroup(group_id.to_string()))?;
            let sessions = org.sessions_in(group_id);
            let slug = group.members_slug();
            let handles = crate::model::member_handles(&sessions, &slug);
            let member = |s: &Session| Member {
                handle: handles
                    .iter()
                    .find(|(id, _)| *id == s.id)
                    .map_or_else(|| worker_handle(&s.name, &slug), |(_, h)| h.clone()),
                id: s.id.clone(),
                name: s.name.clone(),
                model: overrides.model.clone().unwrap_or_else(|| s.model.clone()),
                system_prompt: s.system_prompt.clone(),
                flow: s.flow.clone(),
                role: s.member_role.clone(),
                tools: s.tools.clone(),
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
                    .filter(|s| !(s.role == Role::Orchestrator && group.mode.has_orchestrator()))
                    .map(|s| member(s))
                    .collect(),
                orchestrator_prompt: group.orchestrator_prompt.clone(),
                shared_context: group.shared_context.clone(),
                routing_context: group.routing_context.clone(),
                max_iterations: overrides.max_iterations.unwrap_or(group.max_iterations).max(1),
                // Clamped so that deadlines stay representable (a week is "no limit" here).
                worker_timeout: Duration::from_secs(group.worker_timeout_secs.clamp(1, 7 * 24 * 3600)),
                model_override: overrides.model.clone(),
                flow_entry: group.flow_entry.clone(),
                pipeline: group.pipeline.clone(),
                attachments: overrides.attachments.clone(),
                budget: overrides
                    .budget
                    .or(group.budget)
                    .or(shared.options.default_budget),
                memory: if group.kind == GroupKind::Team {
                    group.memory
                } else {
                    Memory::Conversation
                },
                dispatch: group.dispatch.or(&shared.options.default_dispatch),
                team_limits: group.team_limits,
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

    /// Why the team cannot run in its mode, if it cannot.
    pub fn check_runnable(&self) -> Result<(), EngineError> {
        let not_runnable = |reason: &str| EngineError::NotRunnable {
            group: self.name.clone(),
            mode: self.mode,
            reason: reason.to_string(),
        };
        if self.participants.is_empty() && !self.mode.has_orchestrator() {
            return Err(not_runnable(
                "it has no sessions that answer in this mode (an orchestrator or evaluator only plans and judges)",
            ));
        }
        if self.mode == Mode::Flow {
            // Links name sessions by id; the check and its message use names (a link to a
            // session removed since the team was made is named as such).
            let name_of = |id: &str| {
                self.participant(id)
                    .map_or_else(|| format!("(removed session {id})"), |m| m.name.clone())
            };
            let named: Vec<(String, FlowLinks)> = self
                .participants
                .iter()
                .map(|m| {
                    let links = FlowLinks {
                        handoff: m.flow.handoff.as_deref().map(name_of),
                        router: m.flow.router.as_ref().map(|r| RouterSpec {
                            destinations: r.destinations.iter().map(|d| name_of(d)).collect(),
                        }),
                        advisors: m.flow.advisors.iter().map(|a| name_of(a)).collect(),
                    };
                    (m.name.clone(), links)
                })
                .collect();
            let members: Vec<(&str, &FlowLinks)> = named.iter().map(|(n, l)| (n.as_str(), l)).collect();
            let entry = self.flow_entry.as_deref().map(name_of);
            if let Err(e) = check_flow(entry.as_deref(), &members) {
                return Err(not_runnable(&e.to_string()));
            }
        }
        if self.mode == Mode::Pipeline {
            let Some(spec) = &self.pipeline else {
                return Err(not_runnable("it has no pipeline stages"));
            };
            let ids: Vec<&str> = self.participants.iter().map(|m| m.id.as_str()).collect();
            if let Err(e) = crate::model::check_pipeline(spec, &ids) {
                return Err(not_runnable(&e.to_string()));
            }
        }
        if self.mode.has_orchestrator() {
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
