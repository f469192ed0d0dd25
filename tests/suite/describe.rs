//! Events are described once: the same events give `huddle run`'s progress lines, the TUI's
//! timeline (its lines and an execution's card) and `huddle trace`'s tree, and a broadcast, a
//! flow hop, a phase transition and an execution's end read the same words in all three. Only
//! the layout may differ (an indentation, an arrow, a card's fold mark, a tree's branches).

use std::time::Instant;

use chrono::{DateTime, Utc};
use huddle::engine::events::{EngineEvent, EventKind, ExecutionTag, HopKind, RunKey, RunRecord};
use huddle::headless::progress_line;
use huddle::model::{BroadcastKind, CycleOutcome, ExecutionKind, ExecutionStatus, Mode};
use huddle::trace::TraceBuilder;
use huddle::tui::cycle_view::CycleView;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
}

fn event(exec: Option<(&str, Option<&str>)>, kind: EventKind) -> EngineEvent {
    EngineEvent {
        group_id: "gid".into(),
        group: "Incidents".into(),
        run_id: Some("run-1".into()),
        execution: exec.map(|(id, parent)| ExecutionTag {
            execution_id: id.into(),
            parent_execution_id: parent.map(str::to_string),
        }),
        kind,
    }
}

/// The four events the words are compared for, and what a run around them needs.
struct Run {
    events: Vec<EngineEvent>,
    broadcast: EngineEvent,
    hop: EngineEvent,
    transition: EngineEvent,
    end: EngineEvent,
    iteration: EngineEvent,
    finished: EngineEvent,
}

fn run() -> Run {
    let sub = Some(("exec-2", Some("exec-1")));
    let broadcast = event(
        sub,
        EventKind::TeamBroadcast {
            from: "logs".into(),
            from_id: "sid-logs".into(),
            kind: BroadcastKind::Update,
            message: "The pool is exhausted\nat 10:02".into(),
            turn: 2,
            last: true,
            supervisor: false,
            sent_at: at(3),
        },
    );
    let hop = event(
        None,
        EventKind::FlowHop {
            from: "triage".into(),
            from_id: "sid-triage".into(),
            to: Some("tech".into()),
            to_id: Some("sid-tech".into()),
            kind: HopKind::Route,
            message: Some("Disk full on db-2\nmore".into()),
            success: true,
            duration_ms: 1234,
            tokens: 56,
        },
    );
    let transition = event(
        None,
        EventKind::PhaseTransition {
            from_phase: Some("intake".into()),
            to_phase: "handling".into(),
            from_member: Some("triage".into()),
            to_member: Some("handler".into()),
            to_member_id: Some("sid-handler".into()),
            reason: "ready for the next stage".into(),
            handoff_count: 1,
            back: false,
        },
    );
    let end = event(
        sub,
        EventKind::ExecutionFinished {
            kind: ExecutionKind::SubAgent,
            member: "logs".into(),
            status: ExecutionStatus::Completed,
            duration_ms: 3100,
            tokens: 812,
            tool_calls: 2,
            result: Some("DB pool exhausted\nat 10:02".into()),
            error: None,
            cost_usd: None,
        },
    );
    let iteration = event(
        None,
        EventKind::IterationStarted {
            iteration: 1,
            max_iterations: 12,
        },
    );
    let finished = event(
        None,
        EventKind::CycleFinished {
            outcome: CycleOutcome::Completed,
            iterations: 1,
            max_iterations: 12,
            mode: Some(Mode::Dispatch),
            summary: String::new(),
        },
    );
    let events = vec![
        event(
            None,
            EventKind::RunStarted {
                key: RunKey::team("gid"),
            },
        ),
        event(
            None,
            EventKind::CycleStarted {
                mode: Mode::Dispatch,
                max_iterations: 12,
            },
        ),
        iteration.clone(),
        event(
            Some(("exec-1", None)),
            EventKind::ExecutionStarted {
                kind: ExecutionKind::Orchestrator,
                member: "lead".into(),
                session_id: "sid-lead".into(),
                task: "Why is checkout slow?".into(),
                queued: false,
            },
        ),
        event(
            sub,
            EventKind::ExecutionStarted {
                kind: ExecutionKind::SubAgent,
                member: "logs".into(),
                session_id: "sid-logs".into(),
                task: "Read the logs".into(),
                queued: false,
            },
        ),
        broadcast.clone(),
        hop.clone(),
        transition.clone(),
        end.clone(),
        finished.clone(),
    ];
    Run {
        events,
        broadcast,
        hop,
        transition,
        end,
        iteration,
        finished,
    }
}

/// `huddle run`'s line without its layout: the indentation and an execution's arrow.
fn headless(e: &EngineEvent) -> String {
    let line = progress_line(e).unwrap_or_else(|| panic!("no progress line for {e:?}"));
    let line = line.trim();
    line.strip_prefix("⇠ ")
        .or_else(|| line.strip_prefix("⇢ "))
        .or_else(|| line.strip_prefix("── "))
        .unwrap_or(line)
        .to_string()
}

/// The lines the TUI shows for the run: its timeline, each card's anchor as the card's line.
fn timeline(events: &[EngineEvent]) -> Vec<String> {
    let now = Instant::now();
    let mut view = CycleView::default();
    for e in events {
        view.apply(e, now);
    }
    view.timeline
        .iter()
        .map(|entry| match entry.card.as_deref() {
            Some(id) => view.cards.get(id).expect("the anchored card").header(now),
            None => entry.text.clone(),
        })
        .map(|text| {
            let text = text.trim_start();
            text.strip_prefix("▸ ").unwrap_or(text).to_string()
        })
        .collect()
}

/// `huddle trace`'s lines without their branches.
fn trace(events: &[EngineEvent]) -> Vec<String> {
    let records: Vec<RunRecord> = events
        .iter()
        .enumerate()
        .map(|(i, e)| RunRecord {
            at: at(i as i64),
            event: e.clone(),
        })
        .collect();
    let text = huddle::trace::render::text(&TraceBuilder::from_records(&records));
    text.lines()
        .map(|l| match l.find("── ") {
            Some(i) if l[..i].chars().all(|c| " │├└".contains(c)) => l[i + "── ".len()..].to_string(),
            _ => l.to_string(),
        })
        .collect()
}

#[test]
fn a_broadcast_a_hop_a_phase_transition_an_execution_end_and_a_runs_course_read_the_same_everywhere() {
    let run = run();
    let timeline = timeline(&run.events);
    let trace = trace(&run.events);
    for (what, e, expected) in [
        (
            "broadcast",
            &run.broadcast,
            "📣 logs (turn 2, update, final): The pool is exhausted",
        ),
        (
            "hop",
            &run.hop,
            "triage ⇒ tech (route, 1.2s, 56 tok): Disk full on db-2",
        ),
        (
            "phase transition",
            &run.transition,
            "phase intake → handling (handler): ready for the next stage",
        ),
        (
            "execution end",
            &run.end,
            "exec-2 logs · ✓ completed 3.1s · 812 tok · 2 calls — DB pool exhausted",
        ),
        // The trace heads a run with its own line and no iteration lines: the timeline and
        // `huddle run` word a run's course.
        ("iteration start", &run.iteration, "iteration 1/12"),
        ("cycle end", &run.finished, "finished: completed after 1/12"),
    ] {
        let said = headless(e);
        assert_eq!(said, expected, "{what}: huddle run");
        assert!(
            timeline.contains(&said),
            "{what}: the timeline says it otherwise: {timeline:#?}"
        );
        assert!(
            what == "iteration start" || what == "cycle end" || trace.contains(&said),
            "{what}: the trace says it otherwise: {trace:#?}"
        );
    }
}

/// A long line is cut at the same place by `huddle run` and `huddle trace` (review 22 finding 8:
/// the progress line was cut at 120 characters, the trace's at 200 and more).
#[test]
fn a_long_line_is_cut_alike_in_huddle_run_and_the_trace() {
    let mut run = run();
    let long = "word ".repeat(80);
    let end = event(
        Some(("exec-2", Some("exec-1"))),
        EventKind::ExecutionFinished {
            kind: ExecutionKind::SubAgent,
            member: "logs".into(),
            status: ExecutionStatus::Failed,
            duration_ms: 3100,
            tokens: 812,
            tool_calls: 2,
            result: None,
            error: Some(long.clone()),
            cost_usd: None,
        },
    );
    let at = run.events.iter().position(|e| *e == run.end).expect("the end");
    run.events[at] = end.clone();
    let said = headless(&end);
    assert!(said.ends_with('…'), "the error quoted, cut: {said}");
    assert!(said.chars().count() > 130, "the line is not cut short: {said}");
    let trace = trace(&run.events);
    assert!(
        trace.contains(&said),
        "the trace cuts it otherwise:\n{said}\n{trace:#?}"
    );
}

/// A team member's turn ends with the same line in `huddle run` as on its card in the TUI
/// (review 22 finding 7: `huddle run` said nothing of members' turns, the TUI showed a card
/// for each).
#[test]
fn a_team_members_turn_reads_the_same_in_huddle_run_as_on_its_card() {
    let events: Vec<EngineEvent> = include_str!("../fixtures/runs/team.ndjson")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a recorded event"))
        .collect();
    let timeline = timeline(&events);
    let turns: Vec<&EngineEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::ExecutionFinished {
                    kind: ExecutionKind::MemberTurn,
                    ..
                }
            )
        })
        .collect();
    assert!(turns.len() > 3, "the fixture's member turns");
    for e in turns {
        let said = headless(e);
        assert!(said.contains(" · ✓ completed "), "{said}");
        assert!(
            timeline.contains(&said),
            "the card says it otherwise: {said}\n{timeline:#?}"
        );
    }
}
