//! Events in words for people: the one place that turns an engine event into a line and a
//! tone. `huddle run`'s progress (`headless`, `headless_relay`), the TUI's timeline, cards and
//! relay view, and `huddle trace` all take their words from here, so a broadcast, a hop, a
//! phase change or an execution reads the same everywhere. Front ends add only layout: an
//! indentation, a branch or arrow glyph, a colour for the tone, a cut to their width.
//!
//! [`describe`] is the entry point: one event, its line (None for events no front end words,
//! e.g. streamed text). The files below hold the words of one idea each, as functions of the
//! event's fields, so a front end that knows more than the event (the TUI knows a run's
//! iteration limit and which tool an approval was for) words it with the same function.
//!
//! Everything returned is safe to print ([`sanitize::display`]) and one line: text a model,
//! a tool or a user wrote is cut to its first line.

pub mod cost;
pub mod cycle;
pub mod executions;
pub mod flow;
pub mod pipeline;
pub mod relay;
pub mod safety;
pub mod team;
pub mod tools;

use crate::engine::events::{EngineEvent, EventKind, ExecutionTag};
use crate::text::sanitize;

/// The most characters of a quoted text (a message, a result, a reason) a line keeps.
pub const QUOTE_MAX: usize = 100;

/// The most characters of an event's line in a log: `huddle run`'s progress and `huddle
/// trace`'s tree cut a longer line at the same place (the TUI lays lines out to its width).
pub const LINE_MAX: usize = 240;

/// How a line reads: its colour in a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tone {
    /// A heading (a run's or an iteration's start, the supervisor speaking): bold.
    Heading,
    Info,
    /// Something went well (a worker finished, a goal met): green.
    Good,
    /// Something to look at (a stall, a rejected handoff, a cancelled run): yellow.
    Warn,
    /// Something failed: red.
    Bad,
}

/// One event in words: one line, display-safe, and its tone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub tone: Tone,
}

impl Line {
    /// A line of `text`, made safe to print.
    pub fn new(tone: Tone, text: impl AsRef<str>) -> Line {
        Line {
            text: sanitize::display(text.as_ref()).into_owned(),
            tone,
        }
    }

    pub fn info(text: impl AsRef<str>) -> Line {
        Line::new(Tone::Info, text)
    }
}

/// How member names read. A team's member sessions are named `<members slug>-<member>`; a line
/// names them `<member>`. A member made from a preset goes by its handle (its role: `analyst`),
/// also when its session's name had to be made unique (`analyst-2`); mode `team`'s chair by its
/// display name (`Chair`). Handles (flow, pipeline,
/// dispatch, team) have no prefix to lose.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    members_slug: String,
    /// Session name → handle, for the members that have one.
    handles: Vec<(String, String)>,
}

impl Names {
    /// The names of a team whose member sessions start with `<members_slug>-`.
    pub fn team(members_slug: impl Into<String>) -> Names {
        Names {
            members_slug: members_slug.into(),
            handles: Vec::new(),
        }
    }

    /// The names of a team as its name makes them (a team renamed since its members were made
    /// keeps their old prefix: [`Names::team`] with the group's members slug reads those).
    pub fn of_group(group_name: &str) -> Names {
        Names::team(crate::naming::team_slug(group_name))
    }

    /// The names the events of group `group_id` are put in words with: its members' as the
    /// organization has them now ([`Names::of_members`]) or, the group gone, as its name on the
    /// event makes them ([`Names::of_group`]). The TUI, headless output and the widgets' tests
    /// all name a group's events through this one.
    pub fn for_group(o: &crate::model::Organization, group_id: &str, group_name: &str) -> Names {
        match o.group(group_id) {
            Some(_) => Names::of_members(o, group_id),
            None => Names::of_group(group_name),
        }
    }

    /// The names of a group's members as the organization has them now: a team's members
    /// that have a handle go by it.
    pub fn of_members(o: &crate::model::Organization, group_id: &str) -> Names {
        let Some(g) = o.group(group_id) else {
            return Names::default();
        };
        let mut names = Names::team(g.members_slug());
        if g.is_team() {
            let members = o.sessions_in(group_id);
            names.handles = crate::model::member_handles(&members, &g.members_slug())
                .into_iter()
                .zip(&members)
                .filter_map(|((_, handle), s)| {
                    // Mode `team`'s chair by the name its preset gives it (`Chair`).
                    let chair = (g.mode == crate::model::Mode::Team
                        && s.role == crate::model::Role::Orchestrator)
                        .then(|| s.display_name.clone())
                        .flatten()
                        .filter(|d| !d.trim().is_empty());
                    match chair {
                        Some(display) => Some((s.name.clone(), display)),
                        None => s.handle.is_some().then(|| (s.name.clone(), handle)),
                    }
                })
                .collect();
        }
        names
    }

    /// How session `id` reads to a person: a team's member by its handle (or its name without
    /// the team's prefix), any other session by its name. None for a session that is gone.
    pub fn of_session(o: &crate::model::Organization, id: &str) -> Option<String> {
        let s = o.session(id)?;
        Some(match o.group(&s.group_id).is_some_and(|g| g.is_team()) {
            true => Names::of_members(o, &s.group_id).short(&s.name).to_string(),
            false => s.name.clone(),
        })
    }

    /// The handle (or the chair's name) `name` goes by, when it has one.
    pub fn known(&self, name: &str) -> Option<&str> {
        self.handles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, h)| h.as_str())
    }

    /// True when nothing is known of the team (no slug, no handle).
    pub fn is_unset(&self) -> bool {
        self.members_slug.is_empty() && self.handles.is_empty()
    }

    /// How `name` reads: its handle, else without the team's prefix.
    pub fn short<'a>(&'a self, name: &'a str) -> &'a str {
        match self.handles.iter().find(|(n, _)| n == name) {
            Some((_, handle)) => handle,
            None => crate::naming::strip_team_prefix(name, &self.members_slug),
        }
    }
}

/// An event in words: one line and its tone, or None for an event no front end words (a
/// stream's delta, a stored message, a dispatch's own tool call that its execution says).
/// Member names lose the prefix the event's group gives its members.
pub fn describe(event: &EngineEvent) -> Option<Line> {
    describe_as(
        &event.kind,
        event.execution.as_ref(),
        &Names::of_group(&event.group),
    )
}

/// [`describe`] with the names as the reader knows them (the TUI knows a renamed team's
/// members prefix). `execution` is the event's execution tag.
pub fn describe_as(kind: &EventKind, execution: Option<&ExecutionTag>, names: &Names) -> Option<Line> {
    let id = execution.map_or("", |t| t.execution_id.as_str());
    match kind {
        EventKind::CycleStarted { mode, max_iterations } => Some(cycle::run_started(*mode, *max_iterations)),
        EventKind::IterationStarted {
            iteration,
            max_iterations,
        } => Some(cycle::iteration(*iteration, cycle::known(*max_iterations))),
        EventKind::Phase { phase, .. } => Some(cycle::phase(*phase)),
        EventKind::Assignment { worker, task, .. } => Some(cycle::assignment(names.short(worker), task)),
        EventKind::AssignmentDropped { name, reason, .. } => Some(cycle::dropped(name, reason)),
        EventKind::WorkerFinished {
            worker,
            success,
            duration_ms,
            ..
        } => Some(cycle::worker_finished(
            names.short(worker),
            *success,
            *duration_ms,
        )),
        EventKind::Evaluation {
            score,
            rationale,
            trend,
            ..
        } => Some(cycle::evaluation(*score, *trend, rationale)),
        EventKind::EvaluationUnparsed { iteration } => Some(cycle::evaluation_unparsed(*iteration)),
        EventKind::StallWarning {
            iteration,
            consecutive,
            similarity,
        } => Some(cycle::stall(*iteration, *consecutive, *similarity)),
        EventKind::Adjustment { text } => Some(cycle::adjustment(text)),
        EventKind::Warning { message } => Some(cycle::warning(message)),
        EventKind::Error { iteration, message } => Some(cycle::error(*iteration, message)),
        EventKind::RunResumed {
            resumes,
            interrupted_at,
            reason,
            finished_turns,
            ..
        } => Some(cycle::run_resumed(
            resumes,
            *interrupted_at,
            reason.as_deref(),
            *finished_turns,
        )),
        EventKind::TurnReplayed { session, .. } => Some(cycle::turn_replayed(names.short(session))),
        EventKind::LimitWait {
            session,
            provider,
            until,
            wait_ms,
            reason,
            ..
        } => Some(cycle::limit_wait(
            names.short(session),
            provider,
            *until,
            *wait_ms,
            reason,
        )),
        EventKind::LimitWaitOver {
            session, waited_ms, ..
        } => Some(cycle::limit_wait_over(names.short(session), *waited_ms)),
        EventKind::ContextCompacted {
            session,
            folded,
            before,
            after,
            ..
        } => Some(cycle::context_compacted(
            names.short(session),
            *folded,
            *before,
            *after,
        )),
        EventKind::CyclePaused => Some(cycle::paused()),
        EventKind::CycleResumed => Some(cycle::resumed()),
        EventKind::CycleFinished {
            outcome,
            iterations,
            max_iterations,
            mode,
            ..
        } => Some(cycle::finished(
            *outcome,
            *iterations,
            cycle::known(*max_iterations),
            cycle::counts_of(*mode),
        )),
        EventKind::RunEnded {
            outcome: None,
            failed: Some(why),
            ..
        } => Some(cycle::not_run(why)),
        // A run that did its work says what it spent.
        EventKind::RunEnded {
            outcome: Some(_),
            totals: Some(totals),
            ..
        } => Some(cost::spent(totals)),
        EventKind::MemberNote {
            session,
            text,
            delivered,
            ..
        } => Some(cycle::member_note(names.short(session), text, *delivered)),
        EventKind::TurnFinished {
            session,
            success: false,
            error: Some(error),
            ..
        } if execution.is_none() => Some(tools::turn_failed(names.short(session), error)),
        EventKind::ToolCall {
            session,
            name,
            arguments,
            step,
            ..
        } if !tools::said_by_its_own_event(name) => Some(match step {
            // A coding agent's words before its call are not in its answer (they are this
            // step's): said here, or `huddle run` would never show them.
            Some(step) if step.by_agent && !step.text.trim().is_empty() => {
                tools::called_by_after(names.short(session), name, arguments, &step.text)
            }
            _ => tools::called_by(names.short(session), name, arguments),
        }),
        EventKind::ToolResult {
            name,
            ok,
            duration_ms,
            first_line,
            ..
        } if !tools::said_by_its_own_event(name) => Some(tools::result(
            name,
            Some(*ok),
            Some(*duration_ms),
            Some(first_line),
        )),
        EventKind::FlowHop { .. } => flow::hop(kind),
        EventKind::PhaseTransition { .. } | EventKind::Handoff { .. } | EventKind::HandoffRejected { .. } => {
            pipeline::line(kind)
        }
        EventKind::RelayState { .. }
        | EventKind::RelayDraft { .. }
        | EventKind::RelayTakeOver { .. }
        | EventKind::RelaySent { .. }
        | EventKind::RelayReply { .. }
        | EventKind::RelayAudit { .. } => relay::line(kind),
        EventKind::ExecutionStarted { .. }
        | EventKind::ExecutionRunning
        | EventKind::ExecutionFinished { .. } => executions::event_line(id, kind),
        EventKind::TeamBroadcast {
            from,
            kind,
            message,
            turn,
            last,
            supervisor,
            ..
        } => Some(team::broadcast(&team::Broadcast {
            from: names.short(from),
            kind: *kind,
            message,
            turn: *turn,
            last: *last,
            supervisor: *supervisor,
        })),
        EventKind::HookBlocked {
            session,
            hook_event,
            hook,
            tool,
            reason,
            ..
        } => Some(safety::hook_blocked(
            session.as_deref().map(|s| names.short(s)),
            hook_event,
            hook,
            tool.as_deref(),
            reason,
        )),
        EventKind::HookFailed {
            session,
            hook_event,
            message,
            ..
        } => Some(safety::hook_failed(
            session.as_deref().map(|s| names.short(s)),
            hook_event,
            message,
        )),
        EventKind::SandboxRefused {
            session,
            what,
            reason,
            ..
        } => Some(safety::sandbox_refused(
            session.as_deref().map(|s| names.short(s)),
            what,
            reason,
        )),
        EventKind::SandboxDenied {
            session,
            what,
            detail,
            ..
        } => Some(safety::sandbox_denied(
            session.as_deref().map(|s| names.short(s)),
            what,
            detail,
        )),
        // Said by what they start or end, or not worded: a run's start and end, a turn's start
        // and answer, a stream, a notice in a transcript, a run's result (printed whole), what
        // a turn was given mid-way (the TUI marks a pushed result with `executions::arrived`).
        EventKind::RunStarted { .. }
        | EventKind::RunEnded { .. }
        | EventKind::TurnStarted { .. }
        | EventKind::TurnFinished { .. }
        | EventKind::Message { .. }
        | EventKind::Delta { .. }
        | EventKind::Notice { .. }
        | EventKind::RunResult { .. }
        | EventKind::TurnInput { .. }
        | EventKind::ToolCall { .. }
        | EventKind::ToolResult { .. } => None,
        // The approval asked for shows where it is answered; how it was settled shows in the
        // call's result (a front end that saw the request words a denial with `tools::decided`).
        EventKind::ToolApprovalRequested { .. } | EventKind::ToolApprovalDecided { .. } => None,
    }
}

pub use crate::text::duration;

/// The first line of a text a model, tool or user wrote, at most [`QUOTE_MAX`] characters,
/// with what looks like a credential redacted (a line is drawn, printed to stderr and kept in
/// scrollback; the quote is taken wider first so a key cut at the edge is still recognised).
pub(crate) fn quote(text: &str) -> String {
    let wide = crate::text::first_line(text, QUOTE_MAX * 4);
    crate::text::first_line(&crate::text::secrets::redact_credentials(&wide), QUOTE_MAX)
}

/// `: <first line>` when there is one, else nothing.
pub(crate) fn colon_quote(text: &str) -> String {
    let q = quote(text);
    if q.is_empty() { q } else { format!(": {q}") }
}

/// `1 call`, `2 calls`.
pub(crate) fn counted(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    fn event(kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "gid".into(),
            group: "Code Review".into(),
            run_id: None,
            execution: None,
            kind,
        }
    }

    #[test]
    fn a_quote_hides_a_key_even_one_cut_at_the_edge() {
        let key = "sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij";
        let words = format!("RED secret {key} then more");
        assert_eq!(quote(&words), "RED secret [redacted] then more");
        // The key starts before the 100th character and ends after it.
        let long = format!("{} {key} tail", "w".repeat(80));
        let q = quote(&long);
        assert!(!q.contains("sk-ant"), "{q}");
        assert!(q.ends_with("[redacted] tail"), "{q}");
        assert_eq!(
            quote("fetch http://localhost:3000"),
            "fetch http://localhost:3000"
        );
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(3240), "3.2s");
        assert_eq!(duration(125_000), "2m05s");
        assert_eq!(duration(3_720_000), "1h02m");
    }

    #[test]
    fn member_names_lose_their_teams_prefix_and_lines_are_safe() {
        let line = describe(&event(EventKind::Assignment {
            iteration: 1,
            worker: "code-review-security".into(),
            session_id: "s".into(),
            task: "Look \u{1b}[31mfor\n  injection".into(),
        }))
        .unwrap();
        assert_eq!(line.text, "→ security: Look for injection");
        assert_eq!(line.tone, Tone::Info);
        let renamed = describe_as(
            &EventKind::WorkerFinished {
                iteration: 1,
                worker: "old-name-security".into(),
                session_id: "s".into(),
                success: false,
                duration_ms: 600_000,
            },
            None,
            &Names::team("old-name"),
        )
        .unwrap();
        assert_eq!(
            (renamed.text.as_str(), renamed.tone),
            ("✗ security 10m00s", Tone::Bad)
        );
    }

    #[test]
    fn streams_and_stored_messages_have_no_line() {
        let delta = EventKind::Delta {
            session_id: "s".into(),
            session: "s".into(),
            generation: 1,
            text: "t".into(),
        };
        assert_eq!(describe(&event(delta)), None);
        assert!(
            describe(&event(EventKind::CycleStarted {
                mode: Mode::Relay,
                max_iterations: 8
            }))
            .is_some_and(|l| l.text == "relay run (at most 8 turns)" && l.tone == Tone::Heading)
        );
    }
}
