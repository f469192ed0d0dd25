//! What confines and watches a session's work: its sandbox (config.yaml < team < member <
//! `huddle run --sandbox`) and its hooks (config.yaml's, then the team's, then the member's;
//! all run). Read once per turn from the organization; the tool round asks it before and after
//! each call, the turn when it ends, a team run after each iteration and at its end.
//!
//! Every denial is an event ([`EventKind::HookBlocked`], [`EventKind::SandboxRefused`],
//! [`EventKind::SandboxDenied`]); a hook that fails or times out is [`EventKind::HookFailed`]
//! and blocks nothing.

use std::path::PathBuf;
use std::sync::Arc;

use crate::hooks::{Feedback, HookContext, HookEvent, HookInput, HookRun, Hooks, PreToolUse, Verdict};
use crate::model::{Group, Organization, Session};
use crate::sandbox::{Sandbox, SandboxMode};

use super::events::{EventKind, RunKey};
use super::{ActiveRun, EngineShared, Profile};

/// Characters of each iteration_finished hook's output the evaluator gets (the end is kept:
/// a test run's summary is last).
const CHECKS_MAX_CHARS: usize = 8_000;

/// Where a team's iteration checks ran when its workers have worktrees: whose, and which.
struct CheckPlace {
    member: String,
    worktree: crate::model::Worktree,
}

/// A session's (or a team's) sandbox and hooks, and what a hook is told about it.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub sandbox: Sandbox,
    pub hooks: Arc<Hooks>,
    /// Where its processes and hooks run.
    pub workdir: Option<PathBuf>,
    /// The repository (a hook's `HUDDLE_PROJECT_DIR`).
    pub project: Option<PathBuf>,
    /// The session's transcript (a hook's `transcript_path`): readable by its hooks though
    /// the data directory is hidden.
    pub transcript: Option<PathBuf>,
    /// The command line's mode in `sandbox` (`huddle run --sandbox`), kept over a hook's own.
    pub cli: Option<SandboxMode>,
    /// Values redacted from hooks' output.
    pub secrets: crate::text::secrets::Secrets,
    /// The environment its hooks run in (the front end's whose run it is).
    pub env: crate::env::Env,
    /// The session, when the guard is a session's.
    pub session_id: Option<String>,
    pub session: Option<String>,
    /// The fields every hook input of this guard carries.
    base: HookInput,
}

impl Guard {
    /// The guard of `session` (in `group`, if any), under the profile of its runs: the
    /// configuration of the front end whose run this is (config.yaml's hooks and sandbox are
    /// its, as it read them).
    pub fn of_session(shared: &EngineShared, org: &Organization, session: &Session) -> Guard {
        let profile = shared.profile(&session.group_id, Some(&session.id));
        Guard::of_session_in(shared, &profile, org, session)
    }

    /// [`Guard::of_session`] under `profile`.
    pub fn of_session_in(
        shared: &EngineShared,
        profile: &Profile,
        org: &Organization,
        session: &Session,
    ) -> Guard {
        let group = org.group(&session.group_id);
        let empty = Default::default();
        let team_sandbox = group.map_or(&empty, |g| &g.sandbox);
        let cli = shared.sandbox_override(&session.group_id, &session.id);
        let options = &profile.options;
        let sandbox = options
            .sandbox
            .sandbox(&[("team", team_sandbox), ("member", &session.sandbox)], cli);
        let no_hooks = Hooks::default();
        let hooks = Hooks::combined([
            &options.hooks,
            group.map_or(&no_hooks, |g| &g.hooks),
            &session.hooks,
        ]);
        let workdir = session.working_dir(group);
        // What only hooks are told (and may read) is made for a session that has hooks: a guard
        // is made for every turn, and most sessions have none.
        let watched = !hooks.is_empty();
        let transcript = watched
            .then(|| shared.transcripts.path(&session.id).ok())
            .flatten();
        let mut base = HookInput::default();
        if watched {
            base.session_id = Some(session.id.clone());
            base.session = Some(session.name.clone());
            base.cwd = workdir.as_ref().map(|d| d.display().to_string());
            base.transcript_path = transcript.as_ref().map(|p| p.display().to_string());
            base.member.clone_from(&session.handle);
            if let Some(g) = group.filter(|g| g.is_team()) {
                base.team = Some(g.name.clone());
                base.group_id = Some(g.id.clone());
                base.mode = Some(g.mode.to_string());
            }
        }
        Guard {
            sandbox,
            cli: cli.or(options.sandbox.cli),
            secrets: options.secrets.clone(),
            env: options.env.clone(),
            transcript,
            hooks: Arc::new(hooks),
            project: session
                .worktree
                .as_ref()
                .map(|w| w.repo.clone())
                .or_else(|| group.and_then(|g| g.repo.clone()))
                .or_else(|| session.repo.clone()),
            workdir,
            session_id: Some(session.id.clone()),
            session: Some(session.name.clone()),
            base,
        }
    }

    /// The guard of a team as a whole (its iteration and run hooks): the team's sandbox and
    /// hooks, in its repository.
    pub fn of_group(shared: &EngineShared, group: &Group) -> Guard {
        let cli = shared.sandbox_override(&group.id, &group.id);
        let profile = shared.profile(&group.id, None);
        let options = &profile.options;
        let sandbox = options.sandbox.sandbox(&[("team", &group.sandbox)], cli);
        let hooks = Hooks::combined([&options.hooks, &group.hooks]);
        Guard {
            sandbox,
            cli: cli.or(options.sandbox.cli),
            secrets: options.secrets.clone(),
            env: options.env.clone(),
            transcript: None,
            hooks: Arc::new(hooks),
            workdir: group.repo.clone(),
            project: group.repo.clone(),
            session_id: None,
            session: None,
            base: HookInput {
                cwd: group.repo.as_ref().map(|d| d.display().to_string()),
                team: group.is_team().then(|| group.name.clone()),
                group_id: Some(group.id.clone()),
                mode: Some(group.mode.to_string()),
                ..HookInput::default()
            },
        }
    }

    /// True when some hook of `event` applies (to `tool`, for a tool event).
    pub fn watches(&self, event: HookEvent, tool: Option<&str>) -> bool {
        !self.hooks.matching(event, tool).is_empty()
    }

    /// The input of `event`: this guard's fields, the run and iteration.
    pub fn input(&self, event: HookEvent, run_id: Option<&str>, iteration: Option<u32>) -> HookInput {
        let mut input = self.base.clone();
        let fresh = HookInput::new(event);
        input.hook_event_name = fresh.hook_event_name;
        input.permission_mode = fresh.permission_mode;
        input.run_id = run_id.map(str::to_string);
        input.iteration = iteration;
        input
    }

    /// The input of tool event `event` for `call`, when some hook of it applies to the call
    /// (`None`: none does, and nothing is built).
    pub fn call_input(
        &self,
        event: HookEvent,
        call: &crate::model::ToolCall,
        run_id: Option<&str>,
        iteration: Option<u32>,
    ) -> Option<HookInput> {
        self.watches(event, Some(&call.name)).then(|| {
            self.input(event, run_id, iteration)
                .with_call(&call.name, &call.arguments, &call.id)
        })
    }

    fn context(&self) -> HookContext {
        let mut sandbox = self.sandbox.clone();
        sandbox.policy.allow_read.extend(self.transcript.clone());
        HookContext {
            sandbox,
            cli: self.cli,
            workdir: self.workdir.clone(),
            project_dir: self.project.clone(),
            secrets: self.secrets.clone(),
            env: self.env.clone(),
        }
    }

    /// Runs the hooks of `event` that apply (to `input.tool_name` for a tool event), all at
    /// once; reports those that failed and those a sandbox refused.
    pub async fn run(
        &self,
        event: HookEvent,
        input: &HookInput,
        emit: &(dyn Fn(EventKind) + Sync),
    ) -> Vec<HookRun> {
        let hooks = self.hooks.matching(event, input.tool_name.as_deref());
        if hooks.is_empty() {
            return Vec::new();
        }
        let runs = crate::hooks::run_all(&hooks, input, &self.context()).await;
        for run in &runs {
            let Some(message) = run.error() else { continue };
            if crate::sandbox::is_refusal(&message) {
                emit(EventKind::SandboxRefused {
                    session_id: self.session_id.clone(),
                    session: self.session.clone(),
                    what: format!("hook {}", run.label),
                    reason: message.clone(),
                });
            }
            emit(EventKind::HookFailed {
                session_id: self.session_id.clone(),
                session: self.session.clone(),
                hook_event: event.key().to_string(),
                hook: run.label.clone(),
                message,
            });
        }
        runs
    }

    /// The pre_tool_use hooks' verdict on one call; a denial is reported.
    pub async fn before_call(&self, input: &HookInput, emit: &(dyn Fn(EventKind) + Sync)) -> PreToolUse {
        let runs = self.run(HookEvent::PreToolUse, input, emit).await;
        let decided = crate::hooks::decide::pre_tool_use(&runs);
        if let Verdict::Deny { reason, hook } = &decided.verdict {
            emit(EventKind::HookBlocked {
                session_id: self.session_id.clone(),
                session: self.session.clone(),
                hook_event: HookEvent::PreToolUse.key().to_string(),
                hook: hook.clone(),
                tool: input.tool_name.clone(),
                call_id: input.tool_use_id.clone(),
                reason: reason.clone(),
            });
        }
        decided
    }

    /// The hooks of an event after the fact (post_tool_use, turn_finished, run_finished,
    /// worktree_created); each objection is reported.
    pub async fn after(
        &self,
        event: HookEvent,
        input: &HookInput,
        emit: &(dyn Fn(EventKind) + Sync),
    ) -> Feedback {
        let runs = self.run(event, input, emit).await;
        let feedback = crate::hooks::decide::feedback(&runs);
        for (hook, reason) in &feedback.objections {
            emit(EventKind::HookBlocked {
                session_id: self.session_id.clone(),
                session: self.session.clone(),
                hook_event: event.key().to_string(),
                hook: hook.clone(),
                tool: input.tool_name.clone(),
                call_id: input.tool_use_id.clone(),
                reason: reason.clone(),
            });
        }
        feedback
    }
}

impl EngineShared {
    /// The run_finished hooks of a run that ended (`outcome`: `completed`, `failed`, …; the
    /// run's answer when it has one): the team's for a team run, the session's otherwise.
    pub(crate) async fn run_finished_hooks(&self, run: &ActiveRun, outcome: &str, answer: &str) {
        let guard = self.org.read(|org| match &run.key {
            RunKey::Team { group_id } => org.group(group_id).map(|g| Guard::of_group(self, g)),
            RunKey::Chat { session_id } | RunKey::Reflection { session_id } => {
                org.session(session_id).map(|s| Guard::of_session(self, org, s))
            }
        });
        let Some(guard) = guard.filter(|g| g.watches(HookEvent::RunFinished, None)) else {
            return;
        };
        let mut input = guard.input(HookEvent::RunFinished, run.emitter.run_id.as_deref(), None);
        input.outcome = Some(outcome.to_string());
        input.last_assistant_message = Some(answer.to_string()).filter(|a| !a.trim().is_empty());
        guard
            .after(HookEvent::RunFinished, &input, &|kind| run.emitter.emit(kind))
            .await;
    }

    /// The iteration_finished hooks of a team run (its team's and config.yaml's), with the
    /// workers' results; what they said, for the evaluator (empty when nothing).
    ///
    /// In a team whose workers have worktrees the work is there, not in the repository: the
    /// hooks run once in each worktree of a worker of this iteration (as that member, in its
    /// sandbox, its own hooks added), each one's output labelled with the member; otherwise
    /// once, in the team's repository.
    pub(crate) async fn iteration_finished_hooks(
        &self,
        run: &ActiveRun,
        group_id: &str,
        iteration: u32,
        results: &[crate::engine::protocol::WorkerResult],
    ) -> String {
        let places = self.org.read(|org| {
            let Some(group) = org.group(group_id) else {
                return Vec::new();
            };
            let handles = org.member_handles(group_id);
            let mut seen = std::collections::HashSet::new();
            let in_worktrees: Vec<_> = results
                .iter()
                .filter_map(|r| {
                    let (id, _) = handles.iter().find(|(_, handle)| *handle == r.name)?;
                    let session = org.session(id)?;
                    let worktree = session.worktree.as_ref()?;
                    seen.insert(worktree.path.clone()).then(|| {
                        let place = CheckPlace {
                            member: r.name.clone(),
                            worktree: worktree.clone(),
                        };
                        (Guard::of_session(self, org, session), Some(place))
                    })
                })
                .collect();
            if in_worktrees.is_empty() {
                vec![(Guard::of_group(self, group), None)]
            } else {
                in_worktrees
            }
        });
        let results = serde_json::Value::Array(
            results
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "member": r.name,
                        "success": r.success,
                        "text": r.text,
                    })
                })
                .collect(),
        );
        let emit = |kind| run.emitter.emit(kind);
        let mut said = Vec::new();
        // One place after another: a test suite run in several worktrees at once would fight
        // over the machine (and its ports).
        for (guard, place) in places {
            if !guard.watches(HookEvent::IterationFinished, None) {
                continue;
            }
            let mut input = guard.input(
                HookEvent::IterationFinished,
                run.emitter.run_id.as_deref(),
                Some(iteration),
            );
            input.results = Some(results.clone());
            if let Some(place) = &place {
                input.worktree = Some(serde_json::json!({
                    "path": place.worktree.path,
                    "branch": place.worktree.branch,
                    "base_commit": place.worktree.base_commit,
                    "repo": place.worktree.repo,
                }));
            }
            let runs = guard.run(HookEvent::IterationFinished, &input, &emit).await;
            for (hook, reason) in crate::hooks::decide::feedback(&runs).objections {
                emit(EventKind::HookBlocked {
                    session_id: guard.session_id.clone(),
                    session: guard.session.clone(),
                    hook_event: HookEvent::IterationFinished.key().to_string(),
                    hook,
                    tool: None,
                    call_id: None,
                    reason,
                });
            }
            let notes = crate::hooks::decide::evaluator_notes(&runs, CHECKS_MAX_CHARS);
            if notes.is_empty() {
                continue;
            }
            said.push(match &place {
                Some(place) => format!(
                    "In the worktree of `{}` (branch `{}`):\n{notes}",
                    place.member, place.worktree.branch
                ),
                None => notes,
            });
        }
        said.join("\n\n")
    }

    /// The `--sandbox` of a run handed over by `huddle run` for this group or session, if any.
    pub(crate) fn sandbox_override(&self, group_id: &str, session_id: &str) -> Option<SandboxMode> {
        let scoped = self
            .sandbox_scoped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        scoped.get(session_id).or_else(|| scoped.get(group_id)).copied()
    }
}
