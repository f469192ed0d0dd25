//! Mode `team` (issue 13, seed 000's team pattern): members deliberate through broadcasts and a
//! supervisor decides. Every member starts at once on the request; `team_broadcast` (lent to
//! its turns) is its only way to share, and each broadcast ends its turn. A member that
//! broadcast waits until the log holds something new for it (the others' or the supervisor's
//! broadcasts), then takes its next turn with them as one markdown block; while the supervisor
//! is due or deciding, members wait for its word (the cycle is closing). It leaves with a
//! final broadcast, when its turn fails (an automatic failure broadcast tells the others) or
//! at its turn limit. The supervisor takes a turn once every member still in the team has
//! broadcast since its last one (or none is left): it broadcasts back (the next cycle) or
//! answers, and that answer is the run's, which cancels the members still running. Its turn
//! limit bounds the team: at its last turn it must answer. Sessions without native tools (CLI
//! agents) use the text form of `protocol::team_talk`.
//!
//! One task drives everything: turns run concurrently as futures, and the team's state (the
//! log, each member's place) changes only here, as each turn ends.
//!
//! Resume point: the log and every seat are saved with the open run after each turn that
//! ended (a turn that was running is saved as it was before it started). A resumed run starts
//! from them: the turns that were running start again with the same prompts, and those that had
//! finished come back from disk with the broadcast they made.

use std::sync::{Arc, Mutex};

use chrono::Utc;
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::model::context::tokens_of_text;
use crate::model::{
    BroadcastKind, CycleOutcome, DeliberationState, ExecutionKind, ExecutionStatus, LoggedBroadcast,
    SeatPlace, SeatRecord, ToolCall, ToolSpec,
};

use super::super::events::{EventKind, ExecutionTag, Phase};
use super::super::executions::{Executions, Finish, Start};
use super::super::lent_tools::{BeforeCall, LentAnswer, TurnHooks, TurnTools};
use super::super::lock;
use super::super::protocol::StepPrompt;
use super::super::protocol::team_talk::{
    Broadcast, Delivery, MemberIntro, Peer, Said, SupervisorTurn, acknowledgement, broadcast_tool,
    broadcasts_block, deliveries, failure_message, member_brief, member_first_prompt, member_next_prompt,
    parse_broadcast_call, parse_member_text, parse_supervisor_text, supervisor_brief, supervisor_prompt,
    team_tally, turn_limit_message,
};
use super::super::run::Run;
use super::super::session::{TurnOptions, TurnResult};
use super::super::team::Member;
use super::super::{EngineError, RunReport};
use super::one_pass::{Steps, failed_pass, finish_steps, with_pending};

/// A deliberation's iterations are its supervisor's cycles: the run announces the supervisor's
/// turn limit and one iteration a cycle, and ends after the cycles it took.
pub(super) async fn run(run: &mut Run<'_>, prompt: String) -> Result<RunReport, EngineError> {
    let (prompt, pending) = with_pending(run, prompt);
    let cycles = run.team.settings.team.supervisor_turns();
    run.emit(EventKind::CycleStarted {
        mode: run.team.mode,
        max_iterations: cycles,
    });
    let Some(supervisor) = run.team.orchestrator.clone() else {
        cycle_starts(run, 1, cycles);
        run.restore_pending(pending);
        let steps = Steps {
            taken: 1,
            allowed: cycles,
            more: None,
        };
        return Ok(finish_steps(
            run,
            CycleOutcome::Completed,
            String::new(),
            None,
            Some("the team has no supervisor (orchestrator) session"),
            steps,
        ));
    };
    let mut team = Deliberation::new(run, &supervisor, prompt);
    // A resumed run goes on in the cycle it was in.
    cycle_starts(run, team.cycle, cycles);
    let end = team.deliberate(run).await;
    let (status, final_text) = match &end {
        End::Answer(text) => (ExecutionStatus::Completed, text.clone()),
        End::Stopped(text) => (ExecutionStatus::Cancelled, text.clone()),
        End::Failed(turn) => (ExecutionStatus::Failed, turn.text.clone()),
    };
    team.executions.finish(
        &team.root,
        Finish {
            status: Some(status),
            duration: run.active_time(),
            tokens: run.usage.total(),
            cost_usd: run.control().spent().cost.known(),
            tool_calls: team.tool_calls,
            result: (!final_text.trim().is_empty()).then(|| final_text.clone()),
            error: match &end {
                End::Failed(turn) => turn.error.clone(),
                _ => None,
            },
        },
    );
    let steps = || Steps {
        taken: team.cycle,
        allowed: team.supervisor_turns,
        more: Some(team_tally(
            team.seats.len(),
            team.seats.iter().map(|s| s.turns).sum(),
            team.chair.turns,
            &team.log,
        )),
    };
    let report = match end {
        End::Answer(text) => {
            let steps = steps();
            finish_steps(run, CycleOutcome::Completed, text, Some(&supervisor), None, steps)
        }
        End::Stopped(text) => {
            run.restore_pending(pending);
            let steps = steps();
            return Ok(finish_steps(
                run,
                CycleOutcome::Cancelled,
                text,
                Some(&supervisor),
                None,
                steps,
            ));
        }
        End::Failed(turn) => {
            run.restore_pending(pending);
            return Ok(failed_pass(run, &turn, &supervisor));
        }
    };
    Ok(report)
}

/// Cycle `cycle` of the supervisor's `of` starts: the members deliberate.
fn cycle_starts(run: &Run<'_>, cycle: u32, of: u32) {
    run.emit(EventKind::IterationStarted {
        iteration: cycle,
        max_iterations: of,
    });
    run.emit(EventKind::Phase {
        iteration: cycle,
        phase: Phase::Dispatch,
    });
}

/// How a deliberation ended.
enum End {
    /// The supervisor's final answer.
    Answer(String),
    /// Stopped (by the user or the budget): what the supervisor had said, if it was answering.
    Stopped(String),
    /// The supervisor's turn failed.
    Failed(Box<TurnResult>),
}

/// The `team_broadcast` tool lent to one turn: it keeps the turn's broadcast for the mode.
struct BroadcastTool {
    member: bool,
    /// Who will read it (for the acknowledgement).
    readers: usize,
    /// The supervisor must answer now, without the tool.
    conclude: bool,
    said: Mutex<Option<Said>>,
}

impl BroadcastTool {
    fn new(member: bool, readers: usize, conclude: bool) -> BroadcastTool {
        BroadcastTool {
            member,
            readers,
            conclude,
            said: Mutex::new(None),
        }
    }

    fn take(&self) -> Option<Said> {
        lock(&self.said).take()
    }
}

impl TurnTools for BroadcastTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![broadcast_tool(self.member)]
    }

    fn call<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, LentAnswer> {
        let answer = match parse_broadcast_call(&call.arguments, self.member) {
            Err(text) => LentAnswer::error(text),
            Ok(said) => {
                let mut slot = lock(&self.said);
                if slot.is_some() {
                    LentAnswer {
                        ends_turn: true,
                        ..LentAnswer::error("Ignored: you already broadcast in this turn.")
                    }
                } else {
                    let text = acknowledgement(&said, !self.member, self.readers);
                    *slot = Some(said);
                    LentAnswer {
                        text,
                        ends_turn: true,
                        ..LentAnswer::default()
                    }
                }
            }
        };
        Box::pin(std::future::ready(answer))
    }

    fn before_call(&self) -> BoxFuture<'_, BeforeCall> {
        let before = BeforeCall {
            inputs: Vec::new(),
            conclude: self.conclude,
        };
        Box::pin(async move { before })
    }
}

/// Where a member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SeatState {
    /// Its first turn has not started.
    Ready,
    Running,
    /// It broadcast and waits for something new.
    Waiting,
    /// Its last turn ended without a broadcast: the next one reminds it.
    Reminder,
    /// It left the team (final broadcast, failure, turn limit).
    Left,
}

/// Whether a member in `state`, given the log's broadcasts before `seen`, takes a turn now: its
/// first, a reminder, or when the log holds something new from someone else.
fn member_is_due(state: SeatState, seen: usize, id: &str, log: &[Broadcast]) -> bool {
    match state {
        SeatState::Ready | SeatState::Reminder => true,
        SeatState::Waiting => log[seen.min(log.len())..].iter().any(|b| b.from_id != id),
        SeatState::Running | SeatState::Left => false,
    }
}

/// Whether the supervisor takes its turn now: every member still in the team (`active`: the
/// index of its latest broadcast) has broadcast since its last turn ended (`since`: the log's
/// length then), or none is left.
fn supervisor_is_due(running: bool, since: usize, mut active: impl Iterator<Item = Option<usize>>) -> bool {
    !running && active.all(|last| last.is_some_and(|i| i >= since))
}

/// A member's place in the team, or the supervisor's.
struct Seat {
    member: Arc<Member>,
    /// Its name in the team (the handle it was made with).
    name: String,
    /// No native tools (a CLI agent): the text form.
    text_form: bool,
    window: Option<u64>,
    /// Tokens its context holds (an estimate), against `window`.
    in_use: u64,
    turns: u32,
    /// The log's broadcasts before this index were given to it (or are its own).
    seen: usize,
    state: SeatState,
    /// The index in the log of its latest broadcast.
    last_broadcast: Option<usize>,
    /// Cancels its running turn.
    cancel: Option<CancellationToken>,
    /// Its turns, log cursor and place before the running turn started (what is saved).
    before: Option<(u32, usize, SeatState)>,
}

impl Seat {
    fn new(run: &Run<'_>, member: &Arc<Member>) -> Seat {
        let profile = run.shared.profile(&run.emitter().group_id, None);
        let text_form = profile
            .providers
            .for_slug(&member.model)
            .is_ok_and(|(p, _)| p.capabilities().text_tools);
        // config.yaml's `context_window:` first, as compaction reads it; else a well-known
        // model's.
        let window = profile.options.context_window(&member.model);
        Seat {
            member: Arc::clone(member),
            name: member.handle.clone(),
            text_form,
            window,
            in_use: tokens_of_text(member.system_prompt.as_deref().map_or(0, str::len)),
            turns: 0,
            seen: 0,
            state: SeatState::Ready,
            last_broadcast: None,
            cancel: None,
            before: None,
        }
    }

    fn active(&self) -> bool {
        self.state != SeatState::Left
    }

    /// Remembers where it is before a turn starts (saved while the turn runs).
    fn starting(&mut self) {
        self.before = Some((self.turns, self.seen, self.state));
    }

    /// As saved: a running turn's seat as it was before the turn.
    fn record(&self) -> SeatRecord {
        let (turns, seen, state) = match (self.state, self.before) {
            (SeatState::Running, Some(before)) => before,
            _ => (self.turns, self.seen, self.state),
        };
        SeatRecord {
            session_id: self.member.id.clone(),
            turns,
            seen,
            place: match state {
                SeatState::Ready | SeatState::Running => SeatPlace::Ready,
                SeatState::Waiting => SeatPlace::Waiting,
                SeatState::Reminder => SeatPlace::Reminder,
                SeatState::Left => SeatPlace::Left,
            },
            last_broadcast: self.last_broadcast,
            in_use: self.in_use,
        }
    }

    /// Back where a saved seat was.
    fn restore(&mut self, saved: &SeatRecord) {
        self.turns = saved.turns;
        self.seen = saved.seen;
        self.state = match saved.place {
            SeatPlace::Ready => SeatState::Ready,
            SeatPlace::Waiting => SeatState::Waiting,
            SeatPlace::Reminder => SeatState::Reminder,
            SeatPlace::Left => SeatState::Left,
        };
        self.last_broadcast = saved.last_broadcast;
        self.in_use = saved.in_use;
    }

    /// What its context holds after a turn: the provider's count when it gave one, else a
    /// quarter of the characters sent and received.
    fn count_context(&mut self, prompt_chars: usize, turn: &TurnResult) {
        self.in_use = match turn.usage {
            Some(u) if u.input_tokens > 0 => u.total(),
            _ => self
                .in_use
                .saturating_add(tokens_of_text(prompt_chars + turn.text.len())),
        };
    }
}

/// What the supervisor's turn decided.
enum Decision {
    /// A member's turn ended: the cycle goes on.
    Continue,
    /// The supervisor broadcast back: the next cycle.
    NextCycle,
    Stopped(String),
    Failed(Box<TurnResult>),
    /// The team's final answer.
    Answer(String),
}

/// A turn that ended, with the broadcast it made (if it called the tool).
struct Ended {
    turn: TurnResult,
    said: Option<Said>,
    tag: ExecutionTag,
    prompt_chars: usize,
}

/// A turn that ended: a member's (by index) or the supervisor's (told to conclude or not).
enum Done {
    Member(usize, Ended),
    Supervisor(Ended, bool),
}

/// Starts a turn with the lent `tool`, as execution `tag`; its end comes back with what it
/// broadcast. The token cancels it.
fn launch(
    run: &Run<'_>,
    session_id: &str,
    prompt: StepPrompt,
    tool: BroadcastTool,
    tag: ExecutionTag,
    mut options: TurnOptions,
) -> (BoxFuture<'static, Ended>, CancellationToken) {
    let tool = Arc::new(tool);
    let brief = options.system_extra.take();
    let (prompt, options) = TurnOptions {
        hooks: Some(TurnHooks(tool.clone())),
        execution: Some(tag.clone()),
        ..options
    }
    .with_step(prompt, brief);
    let cancel = options.cancel.clone();
    let shared = Arc::clone(run.shared);
    let id = session_id.to_string();
    let ended = Box::pin(async move {
        let prompt_chars = prompt.len();
        let turn = shared.turn(&id, prompt, options).await;
        Ended {
            turn,
            said: tool.take(),
            tag,
            prompt_chars,
        }
    });
    (ended, cancel)
}

type Running = FuturesUnordered<BoxFuture<'static, Done>>;

struct Deliberation {
    request: String,
    seats: Vec<Seat>,
    chair: Seat,
    log: Vec<Broadcast>,
    executions: Executions,
    root: ExecutionTag,
    /// Where the current cycle starts in the log: after the supervisor's last broadcast (a
    /// member's broadcast made while the supervisor was deciding does not answer it).
    cycle_from: usize,
    member_turns: u32,
    supervisor_turns: u32,
    /// The supervisor's cycle the team is in (from 1): its broadcast back starts the next.
    cycle: u32,
    /// Tool calls of every turn (the root execution's count).
    tool_calls: u32,
}

impl Deliberation {
    fn new(run: &Run<'_>, supervisor: &Arc<Member>, request: String) -> Deliberation {
        // A resumed run's executions never take an id of the run it resumes.
        let after = run.replay().map_or(0, |r| r.last_execution());
        let executions = Executions::numbered_after(run.emitter().clone(), after);
        let mut chair = Seat::new(run, supervisor);
        // The chair speaks by the name its preset gives it (`Chair`), members by their handles.
        chair.name = supervisor.shown.clone();
        let root = executions.start(Start {
            kind: ExecutionKind::Supervisor,
            parent: None,
            member: &chair.name,
            session_id: &supervisor.id,
            task: &crate::text::first_line(&request, 80),
            queued: false,
        });
        let mut team = Deliberation {
            seats: run.team.workers.iter().map(|m| Seat::new(run, m)).collect(),
            chair,
            request,
            log: Vec::new(),
            cycle_from: 0,
            executions,
            root,
            member_turns: run.team.settings.team.member_turns(),
            supervisor_turns: run.team.settings.team.supervisor_turns(),
            cycle: 1,
            tool_calls: 0,
        };
        if let Some(saved) = run.resumed.as_ref().and_then(|r| r.open.deliberation.as_ref()) {
            team.restore(saved);
        }
        // The supervisor's turns that ended (a turn cut by a crash is taken again).
        team.cycle = team
            .chair
            .turns
            .saturating_add(1)
            .min(team.supervisor_turns.max(1));
        team
    }

    /// Where a resumed run starts: the saved log and seats (a member no longer in the team is
    /// left out; one added since starts fresh).
    fn restore(&mut self, saved: &DeliberationState) {
        self.log = saved
            .log
            .iter()
            .map(|b| Broadcast {
                from: b.from.clone(),
                from_id: b.from_id.clone(),
                kind: b.kind,
                message: b.message.clone(),
                turn: b.turn,
                last: b.last,
                supervisor: b.supervisor,
                at: b.at,
            })
            .collect();
        self.cycle_from = saved.cycle_from.min(self.log.len());
        for seat in &mut self.seats {
            if let Some(s) = saved.members.iter().find(|s| s.session_id == seat.member.id) {
                seat.restore(s);
            }
        }
        if saved.supervisor.session_id == self.chair.member.id {
            self.chair.restore(&saved.supervisor);
        }
    }

    /// The deliberation as a resumed run would start from it.
    fn record(&self) -> DeliberationState {
        DeliberationState {
            log: self
                .log
                .iter()
                .map(|b| LoggedBroadcast {
                    from: b.from.clone(),
                    from_id: b.from_id.clone(),
                    kind: b.kind,
                    message: b.message.clone(),
                    turn: b.turn,
                    last: b.last,
                    supervisor: b.supervisor,
                    at: b.at,
                })
                .collect(),
            members: self.seats.iter().map(Seat::record).collect(),
            supervisor: self.chair.record(),
            cycle_from: self.cycle_from,
        }
    }

    /// Saves the deliberation with the open run and waits until it is on disk.
    async fn save(&self, run: &Run<'_>) {
        let state = self.record();
        let gid = run.team.group_id.clone();
        run.shared.org.update(|o| {
            if let Some(open) = o.group_mut(&gid).and_then(|g| g.state.run.as_mut()) {
                open.deliberation = Some(state);
            }
        });
        if let Err(e) = run.shared.checkpoint().await {
            tracing::error!(error = %e, "cannot save the deliberation");
        }
    }

    async fn deliberate(&mut self, run: &mut Run<'_>) -> End {
        let mut running = Running::new();
        loop {
            if run
                .control()
                .wait_if_paused(run.emitter(), |_| {})
                .await
                .is_none()
                || run.cancelled()
            {
                return self.stop(run, running, String::new()).await;
            }
            let supervisor_due = self.supervisor_due();
            // While the cycle closes (the supervisor is due or deciding), members wait: they take
            // their next turn with its broadcast.
            if !supervisor_due && self.chair.state != SeatState::Running {
                let due: Vec<usize> = (0..self.seats.len()).filter(|&i| self.member_due(i)).collect();
                for index in due {
                    running.push(self.member_turn(run, index));
                }
            }
            if supervisor_due {
                running.push(self.supervisor_turn(run, false));
            } else if running.is_empty() {
                // Nothing can move (no member is due, the supervisor is not): it concludes.
                running.push(self.supervisor_turn(run, true));
            }
            let Some(done) = running.next().await else {
                continue;
            };
            let decision = match done {
                Done::Member(index, ended) => {
                    self.member_done(run, index, ended);
                    Decision::Continue
                }
                Done::Supervisor(ended, conclude) => self.supervisor_done(run, ended, conclude),
            };
            // What the turn changed is on disk before the next turns start (not what a stop cut:
            // a resumed run starts those turns again).
            if !run.cancelled() {
                self.save(run).await;
            }
            match decision {
                Decision::Continue => {}
                Decision::NextCycle => {
                    self.cycle = self.chair.turns.saturating_add(1);
                    cycle_starts(run, self.cycle, self.supervisor_turns);
                }
                Decision::Stopped(text) => return self.stop(run, running, text).await,
                Decision::Failed(turn) => {
                    self.cancel_members(run, running).await;
                    return End::Failed(turn);
                }
                Decision::Answer(text) => {
                    self.cancel_members(run, running).await;
                    return End::Answer(text);
                }
            }
        }
    }

    fn member_due(&self, index: usize) -> bool {
        let seat = &self.seats[index];
        member_is_due(seat.state, seat.seen, &seat.member.id, &self.log)
    }

    fn supervisor_due(&self) -> bool {
        supervisor_is_due(
            self.chair.state == SeatState::Running,
            self.cycle_from,
            self.seats.iter().filter(|s| s.active()).map(|s| s.last_broadcast),
        )
    }

    /// The broadcasts `seat` has not been given (the others'), fitted to its context, as one
    /// block; overflows are reported.
    fn unread_block(&self, run: &Run<'_>, seat: &Seat) -> Option<String> {
        let unread: Vec<&Broadcast> = self.log[seat.seen.min(self.log.len())..]
            .iter()
            .filter(|b| b.from_id != seat.member.id)
            .collect();
        if unread.is_empty() {
            return None;
        }
        let fitted = deliveries(&unread, seat.in_use, seat.window);
        for d in &fitted {
            if let Delivery::Overflow {
                broadcast,
                tokens,
                window,
                ..
            } = d
            {
                run.emit(EventKind::Warning {
                    message: format!(
                        "{}'s broadcast (turn {}, about {tokens} tokens) was left out of {}'s turn: it would overflow its context window ({window} tokens)",
                        broadcast.from, broadcast.turn, seat.name
                    ),
                });
            }
        }
        Some(broadcasts_block(&fitted))
    }

    fn peers(&self, except: Option<usize>) -> Vec<Peer> {
        self.seats
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != except)
            .map(|(_, s)| Peer {
                name: s.name.clone(),
                role: s.member.role.clone(),
            })
            .collect()
    }

    fn member_turn(&mut self, run: &Run<'_>, index: usize) -> BoxFuture<'static, Done> {
        let block = self.unread_block(run, &self.seats[index]);
        let peers = self.peers(Some(index));
        let readers = self.seats.iter().filter(|s| s.active()).count().saturating_sub(1) + 1;
        let (max, log_len, supervisor) = (self.member_turns, self.log.len(), self.chair.name.clone());
        let seat = &mut self.seats[index];
        seat.starting();
        seat.turns += 1;
        // How the team works, once in its system prompt: the same for every turn of the run.
        let brief = member_brief(&MemberIntro {
            name: &seat.name,
            role: seat.member.role.as_deref(),
            others: &peers,
            supervisor: &supervisor,
            max_turns: max,
            text_form: seat.text_form,
        });
        let prompt = if seat.turns == 1 {
            member_first_prompt(&self.request, run.team.shared_context.as_deref(), max)
        } else {
            member_next_prompt(
                block.as_deref(),
                seat.state == SeatState::Reminder,
                seat.turns,
                max,
                seat.text_form,
            )
        };
        seat.seen = log_len;
        seat.state = SeatState::Running;
        let tag = self.executions.start(Start {
            kind: ExecutionKind::MemberTurn,
            parent: Some(&self.root.execution_id),
            member: &seat.name,
            session_id: &seat.member.id,
            task: &format!("turn {}", seat.turns),
            queued: false,
        });
        let (ended, cancel) = launch(
            run,
            &seat.member.id,
            prompt,
            BroadcastTool::new(true, readers, false),
            tag,
            TurnOptions {
                system_extra: Some(brief),
                ..run.turn_options(Some(1), Some(run.team.worker_timeout))
            },
        );
        seat.cancel = Some(cancel);
        Box::pin(ended.map(move |ended| Done::Member(index, ended)))
    }

    fn supervisor_turn(&mut self, run: &Run<'_>, forced: bool) -> BoxFuture<'static, Done> {
        let block = self.unread_block(run, &self.chair);
        let active: Vec<String> = self
            .seats
            .iter()
            .filter(|s| s.active())
            .map(|s| s.name.clone())
            .collect();
        let peers = self.peers(None);
        let chair = &mut self.chair;
        chair.starting();
        chair.turns += 1;
        let cycle = chair.turns;
        let conclude = forced || active.is_empty() || cycle >= self.supervisor_turns;
        let prompt = supervisor_prompt(&SupervisorTurn {
            first: (cycle == 1).then_some((self.request.as_str(), run.team.shared_context.as_deref())),
            block: block.as_deref(),
            active: &active,
            cycle,
            max_cycles: self.supervisor_turns,
            conclude,
            from_user: &run.control().take_queued(),
        });
        // Its own instructions and how it supervises, once in its system prompt.
        let brief = supervisor_brief(&peers, chair.text_form);
        let brief = match run.team.orchestrator_prompt.as_deref().map(str::trim) {
            Some(own) if !own.is_empty() => format!("{own}\n\n{brief}"),
            _ => brief,
        };
        chair.seen = self.log.len();
        chair.state = SeatState::Running;
        let tag = self.executions.start(Start {
            kind: ExecutionKind::SupervisorTurn,
            parent: Some(&self.root.execution_id),
            member: &chair.name,
            session_id: &chair.member.id,
            task: &format!("cycle {cycle}"),
            queued: false,
        });
        let (ended, cancel) = launch(
            run,
            &chair.member.id,
            prompt,
            BroadcastTool::new(false, active.len(), conclude),
            tag,
            TurnOptions {
                system_extra: Some(brief),
                ..run.turn_options(Some(1), None)
            },
        );
        chair.cancel = Some(cancel);
        Box::pin(ended.map(move |ended| Done::Supervisor(ended, conclude)))
    }

    /// A turn's end as its execution's, counted in the run's totals.
    fn end_turn(&mut self, run: &mut Run<'_>, tag: &ExecutionTag, turn: &TurnResult) {
        self.executions.finish(tag, Finish::of_turn(turn));
        self.tool_calls = self.tool_calls.saturating_add(turn.tool_calls);
        run.account(turn);
        if let Some(u) = turn.usage {
            run.control().count_tokens(u, run.emitter());
        }
    }

    fn publish(&mut self, tag: &ExecutionTag, broadcast: Broadcast) -> usize {
        self.executions.emit(tag, broadcast.event());
        self.log.push(broadcast);
        self.log.len() - 1
    }

    /// An automatic broadcast for a member that left without saying so.
    fn publish_exit(&mut self, tag: &ExecutionTag, index: usize, message: String) {
        let seat = &self.seats[index];
        let broadcast = Broadcast {
            from: seat.name.clone(),
            from_id: seat.member.id.clone(),
            kind: BroadcastKind::Failure,
            message,
            turn: seat.turns,
            last: true,
            supervisor: false,
            at: Utc::now(),
        };
        self.publish(tag, broadcast);
        self.seats[index].state = SeatState::Left;
    }

    /// The supervisor's turn ended: its broadcast back is published (the next cycle), or its
    /// answer is the team's.
    fn supervisor_done(&mut self, run: &mut Run<'_>, ended: Ended, conclude: bool) -> Decision {
        let Ended {
            turn,
            said,
            tag,
            prompt_chars,
        } = ended;
        let tag = &tag;
        self.chair.count_context(prompt_chars, &turn);
        self.chair.state = SeatState::Waiting;
        self.chair.cancel = None;
        let back = if conclude || !turn.success {
            None
        } else {
            said.map(|s| s.message).or_else(|| {
                self.chair
                    .text_form
                    .then(|| parse_supervisor_text(&turn.text))
                    .flatten()
            })
        };
        if let Some(message) = back.filter(|_| !run.cancelled()) {
            let broadcast = Broadcast {
                from: self.chair.name.clone(),
                from_id: self.chair.member.id.clone(),
                kind: BroadcastKind::Update,
                message,
                turn: self.chair.turns,
                last: false,
                supervisor: true,
                at: Utc::now(),
            };
            self.publish(tag, broadcast);
            self.cycle_from = self.log.len();
            self.end_turn(run, tag, &turn);
            return if run.cancelled() {
                Decision::Stopped(String::new())
            } else {
                Decision::NextCycle
            };
        }
        self.end_turn(run, tag, &turn);
        if run.cancelled() {
            // Only a concluding turn's words are an answer; a cut one could be the start of a
            // broadcast.
            Decision::Stopped(if conclude { turn.text } else { String::new() })
        } else if !turn.success {
            Decision::Failed(Box::new(turn))
        } else {
            Decision::Answer(turn.text)
        }
    }

    /// A member's turn ended: its broadcast (or the automatic one when it left) is published.
    fn member_done(&mut self, run: &mut Run<'_>, index: usize, ended: Ended) {
        self.settle_member(
            run,
            index,
            &ended.turn,
            ended.said,
            &ended.tag,
            ended.prompt_chars,
        );
        self.end_turn(run, &ended.tag, &ended.turn);
    }

    fn settle_member(
        &mut self,
        run: &Run<'_>,
        index: usize,
        turn: &TurnResult,
        said: Option<Said>,
        tag: &ExecutionTag,
        prompt_chars: usize,
    ) {
        let max = self.member_turns;
        let seat = &mut self.seats[index];
        seat.count_context(prompt_chars, turn);
        seat.cancel = None;
        if turn.cancelled() || run.cancelled() {
            seat.state = SeatState::Left;
            return;
        }
        if !turn.success {
            let reason = turn.error.clone().unwrap_or_else(|| "the turn failed".into());
            let message = failure_message(&seat.name, &reason);
            self.publish_exit(tag, index, message);
            return;
        }
        let said = said.or_else(|| seat.text_form.then(|| parse_member_text(&turn.text)).flatten());
        let at_limit = seat.turns >= max;
        let name = seat.name.clone();
        match said {
            Some(said) => {
                let broadcast = Broadcast {
                    from: seat.name.clone(),
                    from_id: seat.member.id.clone(),
                    kind: BroadcastKind::Update,
                    message: said.message,
                    turn: seat.turns,
                    last: said.last,
                    supervisor: false,
                    at: Utc::now(),
                };
                let at = self.publish(tag, broadcast);
                let seat = &mut self.seats[index];
                seat.last_broadcast = Some(at);
                if said.last {
                    seat.state = SeatState::Left;
                } else if at_limit {
                    self.publish_exit(tag, index, turn_limit_message(&name, max));
                } else {
                    seat.state = SeatState::Waiting;
                }
            }
            None if at_limit => self.publish_exit(tag, index, turn_limit_message(&name, max)),
            None => seat.state = SeatState::Reminder,
        }
    }

    /// Cancels the members' running turns and waits for them to end (their executions end
    /// `cancelled`, their partial answers are in their transcripts).
    async fn cancel_members(&mut self, run: &mut Run<'_>, mut running: Running) {
        for seat in &mut self.seats {
            if let Some(cancel) = seat.cancel.take() {
                cancel.cancel();
            }
        }
        while let Some(Done::Member(_, ended) | Done::Supervisor(ended, _)) = running.next().await {
            self.end_turn(run, &ended.tag, &ended.turn);
        }
    }

    /// The run was stopped: every turn is cancelled (the run's token); waits for them to end.
    /// A concluding supervisor's partial answer is what the run keeps.
    async fn stop(&mut self, run: &mut Run<'_>, mut running: Running, mut text: String) -> End {
        while let Some(done) = running.next().await {
            match done {
                Done::Member(_, ended) => self.end_turn(run, &ended.tag, &ended.turn),
                Done::Supervisor(ended, conclude) => {
                    self.end_turn(run, &ended.tag, &ended.turn);
                    if text.is_empty() && conclude {
                        text = ended.turn.text;
                    }
                }
            }
        }
        End::Stopped(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said_by(id: &str) -> Broadcast {
        Broadcast {
            from: id.into(),
            from_id: id.into(),
            kind: BroadcastKind::Update,
            message: "m".into(),
            turn: 1,
            last: false,
            supervisor: false,
            at: Utc::now(),
        }
    }

    #[test]
    fn a_member_is_due_for_its_first_turn_a_reminder_or_something_new_from_another() {
        let log = vec![said_by("a"), said_by("b")];
        assert!(member_is_due(SeatState::Ready, 0, "a", &[]));
        assert!(member_is_due(SeatState::Reminder, 2, "a", &log));
        assert!(
            member_is_due(SeatState::Waiting, 1, "a", &log),
            "b's broadcast is new for a"
        );
        assert!(
            !member_is_due(SeatState::Waiting, 1, "b", &log),
            "its own is nothing new"
        );
        assert!(!member_is_due(SeatState::Waiting, 2, "a", &log));
        assert!(
            !member_is_due(SeatState::Waiting, 9, "a", &log),
            "a cursor past the end reads nothing"
        );
        assert!(!member_is_due(SeatState::Running, 0, "a", &log));
        assert!(!member_is_due(SeatState::Left, 0, "a", &log));
    }

    #[test]
    fn the_supervisor_is_due_when_every_active_member_broadcast_since_its_last_turn_ended() {
        assert!(
            !supervisor_is_due(false, 0, [Some(0), None].into_iter()),
            "one has not spoken"
        );
        assert!(supervisor_is_due(false, 0, [Some(0), Some(1)].into_iter()));
        assert!(
            !supervisor_is_due(false, 2, [Some(3), Some(1)].into_iter()),
            "1 was before its turn"
        );
        assert!(supervisor_is_due(false, 2, [Some(3), Some(2)].into_iter()));
        assert!(
            supervisor_is_due(false, 5, std::iter::empty()),
            "nobody is left: it concludes"
        );
        assert!(
            !supervisor_is_due(true, 0, [Some(0)].into_iter()),
            "not while it runs"
        );
    }
}
