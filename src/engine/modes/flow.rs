//! Flow (issue 12): the prompt enters at the team's `entry` member and follows the members'
//! links. Before a member runs, its advisors run in parallel on the same input and their
//! reports (or a failure report in place of one) become its input; a router ends by choosing a
//! destination (`handoff_to` tool, or an `@handoff:` line), which gets the original request and
//! the router's message; a member with `handoff` passes its answer on as the next one's input.
//! The member at the end of the walk owns the answer. Every turn is reported as a `flow_hop`
//! with its time and tokens; all of them roll up into the run's totals.
//!
//! Resume point: the walk again from the entry; every turn on disk comes back at once with the
//! route or handoff it made (a router's `handoff_to` call is heard again), so it continues at
//! the member that held the request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, FutureExt, join_all};
use tokio_util::sync::CancellationToken;

use crate::model::{CycleOutcome, FlowLinks, RouterSpec, Usage, check_flow};

use super::super::events::{EventKind, HopKind, Phase};
use super::super::lent_tools::{HandoffTool, TurnHooks, TurnTools};
use super::super::protocol::StepPrompt;
use super::super::protocol::flow::{
    RouteChoice, TextRoute, advised_prompt, advisor_failure_report, handoff_tool, parse_handoff_call,
    parse_text_route, routed_prompt, router_brief,
};
use super::super::run::Run;
use super::super::session::{TurnOptions, TurnResult};
use super::super::team::{Member, Team};
use super::super::{EngineError, RunReport};
use super::one_pass::{finish_with, phase, start, with_pending};

/// How deep a walk may nest (advisors of advisors, routes, handoffs) and how many turns a run
/// may take: a backstop, since a flow's links are checked for cycles before it runs.
const MAX_DEPTH: u32 = 16;
const MAX_TURNS: u32 = 64;
/// Retries of a router whose `@handoff:` line names no destination.
const ROUTE_RETRIES: u32 = 2;

pub(super) async fn run(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    check(&run.team)?;
    let (prompt, pending) = with_pending(run, prompt);
    start(run);
    phase(run, Phase::Dispatch);
    let entry = run
        .team
        .settings
        .flow
        .entry
        .as_deref()
        .and_then(|id| run.team.participant(id))
        .cloned();
    let Some(entry) = entry else {
        // `check` saw the entry; it can only be gone if the team changed since.
        run.restore_pending(pending);
        return Ok(finish_with(
            run,
            CycleOutcome::Completed,
            String::new(),
            None,
            Some("the flow's entry member is gone"),
        ));
    };
    let walk = Walk {
        run,
        turns: AtomicU32::new(0),
    };
    let cancel = run.control().cancel.child_token();
    let leg = walk
        .member(&entry, StepPrompt::plain(prompt), 0, cancel, None)
        .await;
    run.usage.add(leg.usage);
    run.simulated |= leg.simulated;
    let cancelled = run.cancelled();
    let outcome = if cancelled {
        CycleOutcome::Cancelled
    } else {
        CycleOutcome::Completed
    };
    if cancelled || !leg.success {
        run.restore_pending(pending);
    }
    let failure =
        (!leg.success && !cancelled).then(|| leg.error.clone().unwrap_or_else(|| "the flow failed".into()));
    if let Some(error) = &failure {
        run.emit(EventKind::Error {
            iteration: 1,
            message: error.clone(),
        });
    }
    Ok(finish_with(run, outcome, leg.text, None, failure.as_deref()))
}

/// What a walk from one member came to: the answer of the member that owns it and the totals
/// of every turn on the way.
struct Leg {
    text: String,
    success: bool,
    error: Option<String>,
    usage: Usage,
    simulated: bool,
}

impl Leg {
    fn answered(text: String, usage: Usage, simulated: bool) -> Leg {
        Leg {
            text,
            success: true,
            error: None,
            usage,
            simulated,
        }
    }

    fn failed(error: String, usage: Usage, simulated: bool) -> Leg {
        Leg {
            text: String::new(),
            success: false,
            error: Some(error),
            usage,
            simulated,
        }
    }
}

/// One run's walk through the flow. Shared (not `&mut Run`) so advisors can walk in parallel;
/// their totals come back in their legs.
struct Walk<'r, 'a> {
    run: &'r Run<'a>,
    turns: AtomicU32,
}

impl Walk<'_, '_> {
    /// The handle a member goes by in prompts and in `handoff_to` (its preset name).
    fn handle(&self, member: &Member) -> String {
        member.handle.clone()
    }

    fn hop(
        &self,
        from: &Member,
        to: Option<&Member>,
        kind: HopKind,
        message: Option<String>,
        turn: &TurnResult,
    ) {
        self.run.emit(EventKind::FlowHop {
            from: self.handle(from),
            from_id: from.id.clone(),
            to: to.map(|m| self.handle(m)),
            to_id: to.map(|m| m.id.clone()),
            kind,
            message,
            // A route without a destination is a router naming none of its own: a miss.
            success: turn.success && (kind != HopKind::Route || to.is_some()),
            duration_ms: turn.duration.as_millis() as u64,
            tokens: turn.usage.map_or(0, |u| u.total()),
        });
    }

    /// The last turn of a walk: the answer of the run, or an advisor's report to its member.
    fn end(&self, member: &Member, reports_to: Option<&Member>, turn: &TurnResult) {
        let kind = if reports_to.is_some() {
            HopKind::Advisor
        } else {
            HopKind::Answer
        };
        let message = (!turn.success).then(|| turn.error.clone()).flatten();
        self.hop(member, reports_to, kind, message, turn);
    }

    /// A member's turn; a router's is lent its `handoff_to` tool and told where it may route
    /// (`route`).
    async fn turn(
        &self,
        member: &Member,
        prompt: StepPrompt,
        cancel: &CancellationToken,
        route: Option<(&Arc<RouteTool>, &str)>,
    ) -> TurnResult {
        // The run's options (attachments, the team's memory), under this walk's cancel token.
        let (text, options) = TurnOptions {
            cancel: cancel.child_token(),
            hooks: route.map(|(tool, _)| TurnHooks(Arc::clone(tool) as Arc<dyn TurnTools>)),
            ..self.run.turn_options(Some(1), None)
        }
        .with_step(prompt, route.map(|(_, brief)| brief.to_string()));
        let started = Instant::now();
        let mut result = self.run.shared.turn(&member.id, text, options).await;
        if result.duration.is_zero() {
            result.duration = started.elapsed();
        }
        if let Some(u) = result.usage {
            self.run.control().count_tokens(u, self.run.emitter());
        }
        result
    }

    /// The walk from `member` with `input`: advisors, the member's turn, then its route or
    /// handoff, recursively.
    /// `reports_to`: the member this walk advises, if it is an advisor's.
    fn member<'s>(
        &'s self,
        member: &'s Member,
        input: StepPrompt,
        depth: u32,
        cancel: CancellationToken,
        reports_to: Option<&'s Member>,
    ) -> BoxFuture<'s, Leg> {
        async move {
            if depth > MAX_DEPTH || self.turns.fetch_add(1, Ordering::Relaxed) >= MAX_TURNS {
                return Leg::failed(
                    format!("the flow went too deep at `{}` (a cycle?)", self.handle(member)),
                    Usage::default(),
                    false,
                );
            }
            let mut usage = Usage::default();
            let mut simulated = false;
            let input = if member.flow.advisors.is_empty() {
                input
            } else {
                let reports = self.advisors(member, &input, depth, &cancel).await;
                let mut gathered = Vec::new();
                for (name, leg) in reports {
                    usage.add(leg.usage);
                    simulated |= leg.simulated;
                    let report = if leg.success {
                        leg.text
                    } else {
                        advisor_failure_report(&name, leg.error.as_deref().unwrap_or("unknown error"))
                    };
                    gathered.push((name, report));
                }
                advised_prompt(&input, &gathered)
            };
            if cancel.is_cancelled() {
                return Leg::failed("cancelled".into(), usage, simulated);
            }
            let destinations: Option<Vec<(String, &Member)>> = member.flow.router.as_ref().map(|r| {
                r.destinations
                    .iter()
                    .filter_map(|id| self.run.team.participant(id))
                    .map(|m| (self.handle(m), &**m))
                    .collect()
            });
            let Some(destinations) = destinations else {
                return self
                    .answer_or_handoff(member, input, depth, cancel, reports_to, (usage, simulated))
                    .await;
            };
            let names: Vec<String> = destinations.iter().map(|(n, _)| n.clone()).collect();
            // Where it may route, and how, in its system prompt; its message is the request.
            let brief = router_brief(&names);
            let mut prompt = input.clone();
            let tool = Arc::new(route_tool(&names));
            let mut retries = 0;
            loop {
                let turn = self.turn(member, prompt, &cancel, Some((&tool, &brief))).await;
                let chosen = tool.take().chosen;
                if let Some(u) = turn.usage {
                    usage.add(u);
                }
                simulated |= turn.simulated;
                if !turn.success {
                    self.end(member, reports_to, &turn);
                    return Leg::failed(turn.text_or_error(), usage, simulated);
                }
                // The tool call, else the text form (a CLI agent's `@handoff:` line).
                let route = match chosen {
                    Some(choice) => TextRoute::Route(choice),
                    None => parse_text_route(&turn.text, &names),
                };
                match route {
                    TextRoute::Route(choice) => {
                        let Some((_, to)) = destinations.iter().find(|(n, _)| *n == choice.agent) else {
                            return Leg::failed(
                                format!("no destination `{}`", choice.agent),
                                usage,
                                simulated,
                            );
                        };
                        self.hop(member, Some(to), HopKind::Route, choice.message.clone(), &turn);
                        let routed = routed_prompt(&input, &self.handle(member), choice.message.as_deref());
                        let mut leg = self
                            .member(to, routed, depth + 1, cancel.clone(), reports_to)
                            .await;
                        leg.usage.add(usage);
                        leg.simulated |= simulated;
                        return leg;
                    }
                    TextRoute::Invalid(error) if retries < ROUTE_RETRIES => {
                        retries += 1;
                        self.hop(member, None, HopKind::Route, Some(error.clone()), &turn);
                        prompt = StepPrompt::plain(format!(
                            "{error}. End with a line `@handoff:<agent>` naming one of them."
                        ));
                    }
                    TextRoute::Answer | TextRoute::Invalid(_) => {
                        // A router that answers itself owns the answer.
                        self.end(member, reports_to, &turn);
                        return Leg::answered(turn.text, usage, simulated);
                    }
                }
            }
        }
        .boxed()
    }

    /// A member that is not a router: its answer is the run's, or the next member's input.
    async fn answer_or_handoff(
        &self,
        member: &Member,
        input: StepPrompt,
        depth: u32,
        cancel: CancellationToken,
        reports_to: Option<&Member>,
        (mut usage, mut simulated): (Usage, bool),
    ) -> Leg {
        let turn = self.turn(member, input, &cancel, None).await;
        if let Some(u) = turn.usage {
            usage.add(u);
        }
        simulated |= turn.simulated;
        let next = member
            .flow
            .handoff
            .as_deref()
            .and_then(|id| self.run.team.participant(id));
        if !turn.success {
            self.end(member, reports_to, &turn);
            return Leg::failed(turn.text_or_error(), usage, simulated);
        }
        let Some(next) = next else {
            self.end(member, reports_to, &turn);
            return Leg::answered(turn.text, usage, simulated);
        };
        self.hop(member, Some(next), HopKind::Handoff, None, &turn);
        let mut leg = self
            .member(
                next,
                StepPrompt::plain(turn.text.trim().to_string()),
                depth + 1,
                cancel,
                reports_to,
            )
            .await;
        leg.usage.add(usage);
        leg.simulated |= simulated;
        leg
    }

    /// Every advisor of `member` at once on `input`, each bounded by the worker timeout; a
    /// failed or late one is a failed leg (never retried).
    async fn advisors(
        &self,
        member: &Member,
        input: &StepPrompt,
        depth: u32,
        cancel: &CancellationToken,
    ) -> Vec<(String, Leg)> {
        let timeout = self.run.team.worker_timeout;
        let advisors: Vec<&Member> = member
            .flow
            .advisors
            .iter()
            .filter_map(|id| self.run.team.participant(id))
            .map(|m| &**m)
            .collect();
        let jobs = advisors.iter().map(|advisor| {
            let token = cancel.child_token();
            let name = self.handle(advisor);
            async move {
                let started = Instant::now();
                let walk = self.member(advisor, input.clone(), depth + 1, token.clone(), Some(member));
                let leg = match tokio::time::timeout(timeout, walk).await {
                    Ok(leg) => leg,
                    Err(_) => {
                        // The walk was dropped mid-turn: its hop is reported here.
                        token.cancel();
                        let error = format!("timed out after {}s", timeout.as_secs());
                        self.run.emit(EventKind::FlowHop {
                            from: name.clone(),
                            from_id: advisor.id.clone(),
                            to: Some(self.handle(member)),
                            to_id: Some(member.id.clone()),
                            kind: HopKind::Advisor,
                            message: Some(error.clone()),
                            success: false,
                            duration_ms: duration_ms(started.elapsed()),
                            tokens: 0,
                        });
                        Leg::failed(error, Usage::default(), false)
                    }
                };
                (name, leg)
            }
        });
        join_all(jobs).await
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A router's lent `handoff_to` tool.
type RouteTool = HandoffTool<RouteChoice>;

/// The `handoff_to` tool lent to a router: its first call naming one of `destinations` is the
/// route and ends the turn, whose answer then says where the request went; a call naming none
/// is a tool error the router can retry.
fn route_tool(destinations: &[String]) -> RouteTool {
    let names = destinations.to_vec();
    HandoffTool::new(handoff_tool(destinations), move |arguments| {
        parse_handoff_call(arguments, &names)
    })
    .answering(handed_off_text)
}

/// A router's answer once `handoff_to` ended its turn.
fn handed_off_text(choice: &RouteChoice) -> String {
    match &choice.message {
        Some(message) => format!("[handed off to `{}`: {message}]", choice.agent),
        None => format!("[handed off to `{}`]", choice.agent),
    }
}

/// Refuses a flow that cannot run before anything does: its links follow [`check_flow`]. Links
/// name sessions by id; the check and its message use names (a link to a session removed since
/// the team was made is named as such).
fn check(team: &Team) -> Result<(), EngineError> {
    let name_of = |id: &str| {
        team.participant(id)
            .map_or_else(|| format!("(removed session {id})"), |m| m.name.clone())
    };
    let named: Vec<(String, FlowLinks)> = team
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
    let entry = team.settings.flow.entry.as_deref().map(name_of);
    check_flow(entry.as_deref(), &members).map_err(|e| team.not_runnable(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::lent_tools::{ALREADY_HANDED_OFF, HANDED_OFF};

    #[test]
    fn the_route_tool_takes_the_first_destination_named_and_answers_for_the_router() {
        let tool = route_tool(&["billing".to_string(), "tech".to_string()]);
        let specs = tool.specs();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].name, crate::engine::protocol::flow::HANDOFF_TOOL);
        let wrong = tool.answer(r#"{"agent":"legal"}"#);
        assert!(wrong.is_error && !wrong.ends_turn);
        assert_eq!(
            wrong.text,
            "`legal` is not a destination; choose one of: billing, tech"
        );
        let routed = tool.answer(r#"{"agent":"Tech","message":"disk full"}"#);
        assert_eq!(
            (routed.text.as_str(), routed.is_error, routed.ends_turn),
            (HANDED_OFF, false, true)
        );
        assert_eq!(
            routed.answer.as_deref(),
            Some("[handed off to `tech`: disk full]")
        );
        let again = tool.answer(r#"{"agent":"billing"}"#);
        assert_eq!((again.text.as_str(), again.is_error), (ALREADY_HANDED_OFF, true));
        let choice = tool.take();
        assert_eq!(
            choice.chosen,
            Some(RouteChoice {
                agent: "tech".into(),
                message: Some("disk full".into())
            })
        );
        assert_eq!(choice.rejected.len(), 1);
        assert_eq!(
            handed_off_text(&RouteChoice {
                agent: "billing".into(),
                message: None
            }),
            "[handed off to `billing`]"
        );
    }
}
