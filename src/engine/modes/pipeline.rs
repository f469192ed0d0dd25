//! Pipeline (issue 12): a conversation that moves through stages. The group keeps its state
//! (phase, active member, handoff count, phase history) between messages and restarts. A
//! message goes to the active member (affinity), else the first matching routing rule, else
//! the stage that parked the conversation, else the first stage. The member answers, or hands
//! the conversation on with `handoff_conversation` (or an `@handoff_conversation:` block) to a
//! member its stage's `next` / `can_return_to` allow, who runs at once on the same request with
//! the summary before it; `human` parks the conversation for the user. The supervisor is given
//! every exchange (kept with the state until its next look) and, at each handoff or every turn,
//! may redirect. Handoffs per message are bounded.
//!
//! Resume point: the state goes back to where it was when the message came (kept with the open
//! run) and the message is taken again; each turn on disk comes back with the handoff it made,
//! so it continues at its phase, with the member that held it.

use std::sync::Arc;

use chrono::Utc;

use crate::model::pipeline::{Routed, route};
use crate::model::{ConversationState, CycleOutcome, PipelineSpec, Supervise};

use super::super::events::{EventKind, Phase};
use super::super::lent_tools::{Choice, HandoffTool, TurnHooks, TurnTools};
use super::super::protocol::StepPrompt;
use super::super::protocol::pipeline::{
    HUMAN, HandoffRequest, call_target, check_target, context_line, conversation_handoff_tool, member_brief,
    member_prompt, parse_conversation_call, parse_text_handoff, supervisor_brief, supervisor_prompt,
    without_text_handoff,
};
use super::super::run::Run;
use super::super::session::{TurnOptions, TurnResult};
use super::super::team::{Member, Team};
use super::super::{EngineError, RunReport};
use super::one_pass::{finish_with, phase, start, with_pending};

/// Handoffs one user message may cause: a backstop against members passing it around forever.
pub const MAX_HANDOFFS_PER_MESSAGE: u32 = 8;
/// The exchanges kept for the supervisor's next look (the oldest go first).
const SUPERVISOR_BACKLOG_MAX: usize = 20;

pub(super) async fn run(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    check(&run.team)?;
    let (prompt, pending) = with_pending(run, prompt);
    start(run);
    phase(run, Phase::Dispatch);
    let Some(spec) = run.team.settings.pipeline.clone() else {
        run.restore_pending(pending);
        return Ok(finish_with(
            run,
            CycleOutcome::Completed,
            String::new(),
            None,
            Some("the team has no pipeline stages"),
        ));
    };
    let group_id = run.team.group_id.clone();
    let state = run
        .shared
        .org
        .read(|o| o.group(&group_id).and_then(|g| g.state.pipeline.clone()))
        .unwrap_or_default();
    let mut pipe = Pipe {
        spec,
        state,
        told: None,
    };
    let outcome = pipe.converse(run, &prompt).await;
    let cancelled = run.cancelled();
    if cancelled || outcome.is_err() {
        run.restore_pending(pending);
    }
    let (text, failure) = match outcome {
        Ok(text) => (text, None),
        Err(e) => (String::new(), (!cancelled).then_some(e)),
    };
    if let Some(error) = &failure {
        run.emit(EventKind::Error {
            iteration: 1,
            message: error.clone(),
        });
    }
    let outcome = if cancelled {
        CycleOutcome::Cancelled
    } else {
        CycleOutcome::Completed
    };
    Ok(finish_with(run, outcome, text, None, failure.as_deref()))
}

struct Pipe {
    spec: PipelineSpec,
    state: ConversationState,
    /// The user's message the supervisor was last told of (in this run).
    told: Option<String>,
}

/// A handoff checked against the pipeline: the stage it goes to (`None`: parked for the user).
struct Accepted {
    request: HandoffRequest,
    to: Option<usize>,
    by_supervisor: bool,
}

impl Pipe {
    fn member(&self, run: &Run<'_>, stage: usize) -> Option<Arc<Member>> {
        let id = &self.spec.stages.get(stage)?.member;
        run.team.participant(id).cloned()
    }

    fn handle(&self, member: &Member) -> String {
        member.handle.clone()
    }

    fn handle_of(&self, run: &Run<'_>, id: Option<&str>) -> Option<String> {
        id.and_then(|id| run.team.participant(id)).map(|m| self.handle(m))
    }

    /// Where a member of `stage` may hand off: the members of the stages its edges reach, and
    /// `human`.
    fn targets(&self, run: &Run<'_>, stages: &[usize]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for &i in stages {
            if let Some(m) = self.member(run, i) {
                let handle = self.handle(&m);
                if !out.contains(&handle) {
                    out.push(handle);
                }
            }
        }
        out.push(HUMAN.to_string());
        out
    }

    /// Checks a handoff from a member allowed to reach `stages`: its target names one of their
    /// members (and `next_phase`, when given, one of that member's phases), or `human`.
    fn accept(&self, run: &Run<'_>, request: HandoffRequest, stages: &[usize]) -> Result<Accepted, String> {
        let targets = self.targets(run, stages);
        let target = check_target(&request.target, &targets)?;
        if target == HUMAN {
            return Ok(Accepted {
                request,
                to: None,
                by_supervisor: false,
            });
        }
        let candidates: Vec<usize> = stages
            .iter()
            .copied()
            .filter(|&i| self.member(run, i).is_some_and(|m| self.handle(&m) == target))
            .collect();
        let to = match request.next_phase.as_deref() {
            Some(phase) => candidates
                .iter()
                .copied()
                .find(|&i| self.spec.stages[i].phase.eq_ignore_ascii_case(phase.trim()))
                .ok_or_else(|| format!("`{target}` does not work in phase `{phase}` reachable from here"))?,
            None => candidates
                .first()
                .copied()
                .ok_or_else(|| format!("`{target}` is not reachable from here"))?,
        };
        Ok(Accepted {
            request: HandoffRequest { target, ..request },
            to: Some(to),
            by_supervisor: false,
        })
    }

    /// Moves the conversation to `to` (`None`: parks it where it is), records, persists and
    /// announces it.
    fn transition(&mut self, run: &Run<'_>, to: Option<usize>, reason: &str) {
        let from_phase = self.state.phase.clone();
        let from_member = self.handle_of(run, self.state.active.as_deref());
        let to_phase = match to {
            Some(i) => self.spec.stages[i].phase.clone(),
            None => from_phase
                .clone()
                .unwrap_or_else(|| self.spec.stages[0].phase.clone()),
        };
        let to_member = to.and_then(|i| self.member(run, i));
        let back = self.spec.is_return(from_phase.as_deref(), &to_phase);
        self.state.transition(
            &to_phase,
            to_member.as_ref().map(|m| m.id.as_str()),
            reason,
            Utc::now(),
        );
        self.state.active_name = to_member.as_ref().map(|m| self.handle(m));
        self.persist(run);
        run.emit(EventKind::PhaseTransition {
            from_phase,
            to_phase,
            from_member,
            to_member: to_member.as_ref().map(|m| self.handle(m)),
            to_member_id: to_member.map(|m| m.id.clone()),
            reason: reason.to_string(),
            handoff_count: self.state.handoff_count,
            back,
        });
    }

    fn persist(&self, run: &Run<'_>) {
        let state = self.state.clone();
        let group_id = run.team.group_id.clone();
        run.shared.org.update(|o| {
            if let Some(g) = o.group_mut(&group_id) {
                g.state.pipeline = Some(state);
            }
        });
    }

    /// Keeps an exchange for the supervisor's next look (persisted, the last ones only).
    fn tell_supervisor(&mut self, run: &Run<'_>, supervisor: Option<&Member>, text: String) {
        if supervisor.is_none() {
            return;
        }
        let backlog = &mut self.state.supervisor_backlog;
        backlog.push(text);
        let excess = backlog.len().saturating_sub(SUPERVISOR_BACKLOG_MAX);
        backlog.drain(..excess);
        self.persist(run);
    }

    /// A member's (or the supervisor's) turn, lent `handoff_conversation` to `targets`, with
    /// how to use it in its system prompt (`brief`): its end and what its calls of the tool came
    /// to.
    async fn turn(
        &self,
        run: &mut Run<'_>,
        member: &Member,
        prompt: StepPrompt,
        brief: String,
        targets: Vec<String>,
    ) -> (TurnResult, Choice<HandoffRequest>) {
        let tool = Arc::new(handoff_conversation(targets));
        let (text, options) = TurnOptions {
            hooks: Some(TurnHooks(Arc::clone(&tool) as Arc<dyn TurnTools>)),
            // The conversation goes on across messages: members keep their history.
            history_from_run_start: false,
            ..run.turn_options(Some(1), None)
        }
        .with_step(prompt, Some(brief));
        let result = run.shared.turn(&member.id, text, options).await;
        run.account(&result);
        if let Some(u) = result.usage {
            run.control().count_tokens(u, run.emitter());
        }
        (result, tool.take())
    }

    /// The handoff a turn asked for (tool call, else text form) checked against `stages`; a
    /// refused one (and every refused tool call) is reported as `handoff_rejected`.
    fn handoff_of(
        &self,
        run: &Run<'_>,
        member: &Member,
        turn: &TurnResult,
        calls: Choice<HandoffRequest>,
        stages: &[usize],
    ) -> Option<Accepted> {
        for (arguments, error) in calls.rejected {
            self.rejected(run, member, call_target(&arguments), error);
        }
        // The tool call, else the text form (a CLI agent's `@handoff_conversation:` block).
        let request = calls.chosen.or_else(|| parse_text_handoff(&turn.text))?;
        let target = request.target.clone();
        match self.accept(run, request, stages) {
            Ok(accepted) => Some(accepted),
            Err(error) => {
                self.rejected(run, member, target, error);
                None
            }
        }
    }

    fn rejected(&self, run: &Run<'_>, member: &Member, target: String, error: String) {
        run.emit(EventKind::HandoffRejected {
            from: self.handle(member),
            from_id: member.id.clone(),
            target,
            error,
        });
    }

    /// The supervisor's look after `event`: a redirect it asked for (to any stage), or `None`.
    async fn supervise(&mut self, run: &mut Run<'_>, supervisor: &Member, event: String) -> Option<Accepted> {
        let all: Vec<usize> = (0..self.spec.stages.len()).collect();
        let targets = self.targets(run, &all);
        // Every exchange since its last look goes into its history with this prompt.
        let exchanges = std::mem::take(&mut self.state.supervisor_backlog);
        self.persist(run);
        let prompt = supervisor_prompt(&exchanges, &event, &targets);
        let (turn, calls) = self
            .turn(run, supervisor, prompt, supervisor_brief(), targets)
            .await;
        if !turn.success {
            run.emit(EventKind::Warning {
                message: format!("supervisor {}: {}", self.handle(supervisor), turn.text_or_error()),
            });
            return None;
        }
        let mut accepted = self.handoff_of(run, supervisor, &turn, calls, &all)?;
        accepted.by_supervisor = true;
        Some(accepted)
    }

    /// One user message, to its end: the answer the user gets.
    async fn converse(&mut self, run: &mut Run<'_>, prompt: &str) -> Result<String, String> {
        let (mut stage, routed) = route(&self.spec, &self.state, prompt);
        if routed != Routed::Affinity {
            self.transition(run, Some(stage), &routed.reason());
        }
        let supervisor = self
            .spec
            .supervisor
            .as_deref()
            .and_then(|id| run.team.participant(id))
            .cloned();
        let mut context: Option<String> = None;
        let mut handoffs = 0u32;
        loop {
            let Some(member) = self.member(run, stage) else {
                return Err(format!(
                    "stage `{}`: its member is gone",
                    self.spec.stages[stage].phase
                ));
            };
            let allowed = self.spec.allowed_from(stage);
            let targets = self.targets(run, &allowed);
            let input = member_prompt(
                prompt,
                context.as_deref(),
                &self.spec.stages[stage].phase,
                &targets,
            );
            let (turn, calls) = self.turn(run, &member, input, member_brief(), targets).await;
            if run.cancelled() {
                return Err("cancelled".into());
            }
            if !turn.success {
                return Err(turn.text_or_error());
            }
            let mut handoff = self.handoff_of(run, &member, &turn, calls, &allowed);
            let said = without_text_handoff(&turn.text);
            let name = self.handle(&member);
            let mut exchange = format!("{name} ({}): {}", self.spec.stages[stage].phase, said);
            if let Some(h) = &handoff {
                exchange.push_str(&format!(
                    "\n→ hands off to {}: {}",
                    h.request.target, h.request.reason
                ));
            }
            let supervisor = supervisor.as_deref().filter(|s| s.id != member.id);
            // The user's message opens the first exchange it caused, not every one.
            let told = match &self.told {
                Some(told) if told == prompt.trim() => exchange,
                _ => format!("User: {}\n{exchange}", prompt.trim()),
            };
            if supervisor.is_some() {
                self.told = Some(prompt.trim().to_string());
            }
            self.tell_supervisor(run, supervisor, told);
            let looks = handoff.is_some() || self.spec.supervise == Supervise::EveryTurn;
            if let Some(supervisor) = supervisor.filter(|_| looks) {
                let event = match &handoff {
                    Some(h) => format!("{name} is handing the conversation to {}.", h.request.target),
                    None => format!("{name} answered the user."),
                };
                if let Some(redirect) = self.supervise(run, supervisor, event).await {
                    handoff = Some(redirect);
                }
            }
            let Some(accepted) = handoff else {
                return Ok(said);
            };
            if handoffs >= MAX_HANDOFFS_PER_MESSAGE {
                self.rejected(
                    run,
                    &member,
                    accepted.request.target.clone(),
                    format!(
                        "{MAX_HANDOFFS_PER_MESSAGE} handoffs for one message; the conversation stays here"
                    ),
                );
                return Ok(said);
            }
            handoffs += 1;
            self.state.handoff_count += 1;
            let (from_name, from_id) = match (&accepted.by_supervisor, supervisor) {
                (true, Some(s)) => (self.handle(s), s.id.clone()),
                _ => (name.clone(), member.id.clone()),
            };
            let to_member = accepted.to.and_then(|i| self.member(run, i));
            run.emit(EventKind::Handoff {
                from: from_name.clone(),
                from_id,
                to: accepted.request.target.clone(),
                to_id: to_member.map(|m| m.id.clone()),
                reason: accepted.request.reason.clone(),
                summary: accepted.request.summary.clone(),
                by_supervisor: accepted.by_supervisor,
            });
            let reason = if accepted.request.reason.is_empty() {
                format!("handoff by {from_name}")
            } else {
                accepted.request.reason.clone()
            };
            self.transition(run, accepted.to, &reason);
            let Some(next) = accepted.to else {
                // Parked: the user gets the member's words (or its summary) and answers next.
                return Ok(if said.is_empty() {
                    accepted.request.summary
                } else {
                    said
                });
            };
            context = Some(context_line(&from_name, &accepted.request.summary));
            stage = next;
        }
    }
}

/// The `handoff_conversation` tool lent to a member (or the supervisor): its first call naming
/// one of `targets` is the handoff and ends the turn (the member's words so far are its answer);
/// a call naming another target is a tool error the model can learn from, kept for the
/// `handoff_rejected` events. Whether the pipeline accepts the handoff (its phase) is checked
/// after the turn.
fn handoff_conversation(targets: Vec<String>) -> HandoffTool<HandoffRequest> {
    HandoffTool::new(conversation_handoff_tool(), move |arguments| {
        parse_conversation_call(arguments, &targets)
    })
}

/// Refuses a pipeline that cannot run before anything does: it has stages that follow
/// [`crate::model::check_pipeline`] (members by session id).
fn check(team: &Team) -> Result<(), EngineError> {
    let Some(spec) = &team.settings.pipeline else {
        return Err(team.not_runnable("it has no pipeline stages"));
    };
    let ids: Vec<&str> = team.participants.iter().map(|m| m.id.as_str()).collect();
    crate::model::check_pipeline(spec, &ids).map_err(|e| team.not_runnable(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::lent_tools::HANDED_OFF;

    #[test]
    fn the_handoff_tool_keeps_the_handoff_and_every_refused_call() {
        let tool = handoff_conversation(vec!["reviewer".into(), HUMAN.into()]);
        assert_eq!(
            tool.specs()[0].name,
            crate::engine::protocol::pipeline::CONVERSATION_HANDOFF_TOOL
        );
        let refused = r#"{"target":"resolver","reason":"r","summary":"s"}"#;
        let wrong = tool.answer(refused);
        assert!(wrong.is_error && !wrong.ends_turn);
        assert_eq!(
            wrong.text,
            "`resolver` is not an allowed handoff target from this phase; allowed: reviewer, human"
        );
        let ok = tool.answer(r#"{"target":"Reviewer","reason":"done","summary":"fixed"}"#);
        assert_eq!(
            (ok.text.as_str(), ok.is_error, ok.ends_turn),
            (HANDED_OFF, false, true)
        );
        assert_eq!(ok.answer, None, "the member's words are its answer");
        let calls = tool.take();
        let chosen = calls.chosen.unwrap();
        assert_eq!(
            (chosen.target.as_str(), chosen.summary.as_str()),
            ("reviewer", "fixed")
        );
        assert_eq!(calls.rejected.len(), 1);
        assert_eq!(call_target(&calls.rejected[0].0), "resolver");
    }
}
