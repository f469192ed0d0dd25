//! Sub-agent cards (modes `dispatch` and `team`): one card per dispatched execution (a
//! sub-agent, a clarification, a member's turn), anchored in the team's timeline where it
//! started. Collapsed, a card is its execution's line (id, member, status, time, tokens,
//! calls, then its task or result), kept by the same fold as the trace's
//! ([`describe::executions::Execution`]); expanded, it shows the execution's own transcript
//! (its streamed text, tool calls and results, its answer), from the events tagged with its
//! execution id. The timeline also gets a line per pushed result (`turn_input`).
//!
//! Pure state fed by the cycle view; it does not import the cycle view (it feeds it).

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use ratatui::style::{Color, Modifier, Style};

use super::timeline_kind::TimelineKind;
use crate::describe::executions::Execution;
use crate::describe::{self, Line};
use crate::engine::events::{EngineEvent, EventKind, ExecutionTag};
use crate::model::{ExecutionKind, ExecutionStatus, Message};
use crate::text::sanitize;

/// Lines a card's transcript keeps (its oldest go first).
const CARD_LINES_MAX: usize = 300;
/// Lines of one answer a card keeps (the rest is counted).
const ANSWER_LINES_MAX: usize = 80;
/// Characters of a card's streaming text kept (its end).
const LIVE_MAX_CHARS: usize = 4000;
/// Characters of a line in a card (task, tool arguments, results).
const LINE_MAX_CHARS: usize = 400;
/// Cards that keep their transcript (the newest): an older card keeps its line only, so a
/// long team run does not hold every turn's text.
const CARDS_WITH_TRANSCRIPT: usize = 200;
/// A card's transcript is indented under its line.
const INDENT: &str = "      ";

/// One line a card's transcript shows, sanitised when made.
#[derive(Debug, Clone, PartialEq)]
pub struct CardLine {
    pub kind: TimelineKind,
    pub text: String,
}

/// One execution as its card shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionCard {
    /// The execution as its events leave it (the trace keeps the same).
    pub exec: Execution,
    /// When it began running here (live runs: the duration ticks from it).
    pub started: Option<Instant>,
    pub expanded: bool,
    /// Its transcript, bounded: the task, tool calls and results, answers.
    pub lines: VecDeque<CardLine>,
    /// Transcript lines dropped from the front.
    pub dropped: usize,
    /// The text streaming in now (its end), not yet part of `lines`.
    pub live: String,
    /// An answer was added (from the turn or the execution's result).
    answered: bool,
}

impl ExecutionCard {
    fn push(&mut self, kind: TimelineKind, text: String) {
        self.lines.push_back(CardLine { kind, text });
        while self.lines.len() > CARD_LINES_MAX {
            self.lines.pop_front();
            self.dropped += 1;
        }
    }

    /// Adds a line in `describe`'s words, indented under the card's line by `indent`.
    fn push_line(&mut self, indent: &str, line: Line) {
        self.push(line.tone, format!("{indent}{}", line.text));
    }

    /// Adds an answer's text (its lines, at most [`ANSWER_LINES_MAX`]).
    fn push_text(&mut self, text: &str) {
        let clean = sanitize::display(text);
        let lines: Vec<&str> = clean.trim().lines().collect();
        self.answered = true;
        for line in lines.iter().take(ANSWER_LINES_MAX) {
            let line = line.strip_prefix(INDENT).unwrap_or(line);
            self.push(
                TimelineKind::Info,
                format!("{INDENT}{}", crate::text::cap_chars(line, LINE_MAX_CHARS)),
            );
        }
        if lines.len() > ANSWER_LINES_MAX {
            self.push(
                TimelineKind::Info,
                format!("{INDENT}… {} more line(s)", lines.len() - ANSWER_LINES_MAX),
            );
        }
    }

    /// The streamed text so far becomes transcript lines (a tool round or the turn ended).
    fn commit_live(&mut self) {
        let live = std::mem::take(&mut self.live);
        if !live.trim().is_empty() {
            self.push_text(&live);
        }
    }

    /// How long it ran (or runs, as of `now`).
    pub fn elapsed_ms(&self, now: Instant) -> Option<u64> {
        self.exec.duration_ms.or_else(|| {
            self.started
                .filter(|_| self.exec.status == ExecutionStatus::Running)
                .map(|t| now.saturating_duration_since(t).as_millis() as u64)
        })
    }

    /// The collapsed line: `▸ exec-2 log-analyzer · running 3.1s · 800 tok — task: …`, the
    /// execution's line as `huddle run` and `huddle trace` say it.
    pub fn header(&self, now: Instant) -> String {
        let arrow = if self.expanded { "▾" } else { "▸" };
        format!("  {arrow} {}", self.exec.line(self.elapsed_ms(now)))
    }

    /// The colour of its line: by status.
    pub fn style(&self) -> Style {
        match self.exec.status {
            ExecutionStatus::Completed => Style::default().fg(Color::Green),
            ExecutionStatus::Failed | ExecutionStatus::TimedOut => Style::default().fg(Color::Red),
            ExecutionStatus::Cancelled | ExecutionStatus::Interrupted => Style::default().fg(Color::Yellow),
            ExecutionStatus::Queued => Style::default().add_modifier(Modifier::DIM),
            ExecutionStatus::Running => Style::default().fg(Color::Cyan),
        }
    }

    /// The expanded card's body, line by line with its style: its transcript, then the text
    /// streaming in (the timeline draws them under the card's line).
    pub fn body_lines(&self) -> impl Iterator<Item = (&str, Style)> {
        let dim = Style::default().add_modifier(Modifier::DIM);
        let dropped = (self.dropped > 0).then_some(("      … earlier lines dropped", dim));
        let lines = self
            .lines
            .iter()
            .map(|l| (l.text.as_str(), super::timeline_kind::style(l.kind)));
        let live = self
            .live
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(move |l| (l, dim));
        let empty =
            (self.lines.is_empty() && self.live.trim().is_empty()).then_some(("      (nothing yet)", dim));
        dropped.into_iter().chain(lines).chain(live).chain(empty)
    }
}

/// A line for the team's timeline, anchored to a card when `card` is set.
#[derive(Debug, Clone, PartialEq)]
pub struct CardTimelineLine {
    pub kind: TimelineKind,
    pub text: String,
    pub card: Option<String>,
}

/// Every card of a run, and which is selected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecutionCards {
    cards: Vec<ExecutionCard>,
    by_id: HashMap<String, usize>,
    /// The card the card keys act on.
    pub selected: Option<String>,
}

/// How many cards have each status, e.g. `sub-agents: 2 running · 1 queued · 3 completed`,
/// None without cards.
pub fn summary(cards: &ExecutionCards) -> Option<String> {
    const ORDER: [ExecutionStatus; 7] = [
        ExecutionStatus::Running,
        ExecutionStatus::Queued,
        ExecutionStatus::Completed,
        ExecutionStatus::Failed,
        ExecutionStatus::TimedOut,
        ExecutionStatus::Cancelled,
        ExecutionStatus::Interrupted,
    ];
    if cards.is_empty() {
        return None;
    }
    let parts: Vec<String> = ORDER
        .iter()
        .map(|&s| (s, cards.iter().filter(|c| c.exec.status == s).count()))
        .filter(|&(_, n)| n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    Some(format!("executions: {}", parts.join(" · ")))
}

/// The executions that get a card (the orchestrator and supervisor are the timeline itself),
/// as `huddle run` gives them lines.
fn has_card(kind: ExecutionKind) -> bool {
    crate::describe::executions::shown_on_their_own(kind)
}

impl ExecutionCards {
    pub fn get(&self, id: &str) -> Option<&ExecutionCard> {
        self.by_id.get(id).map(|&i| &self.cards[i])
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut ExecutionCard> {
        self.by_id.get(id).map(|&i| &mut self.cards[i])
    }

    pub fn is_empty(&self) -> bool {
        self.cards.is_empty()
    }

    /// The cards in the order they started.
    pub fn iter(&self) -> impl Iterator<Item = &ExecutionCard> {
        self.cards.iter()
    }

    /// The card an event belongs to (by its execution tag).
    fn card_of(&mut self, tag: Option<&ExecutionTag>) -> Option<&mut ExecutionCard> {
        let id = &tag?.execution_id;
        self.get_mut(id)
    }

    /// Follows one event of the run: the lines it adds to the timeline (a new card's anchor, a
    /// pushed result). Events of no card and of no interest here add nothing.
    pub fn apply(
        &mut self,
        event: &EngineEvent,
        now: Instant,
        short: impl Fn(&str) -> String,
    ) -> Vec<CardTimelineLine> {
        let tag = event.execution.as_ref();
        // The card's execution follows every event of it (its end, its turns' tokens and calls).
        if let Some(card) = self.card_of(tag) {
            card.exec.follow(&event.kind);
        }
        match &event.kind {
            EventKind::ExecutionStarted {
                kind, member, task, ..
            } => {
                let Some(tag) = tag.filter(|_| has_card(*kind)) else {
                    return Vec::new();
                };
                let Some(mut exec) = Execution::started(tag, &event.kind) else {
                    return Vec::new();
                };
                exec.member = short(member);
                let mut card = ExecutionCard {
                    started: (!exec.queued).then_some(now),
                    exec,
                    expanded: false,
                    lines: VecDeque::new(),
                    dropped: 0,
                    live: String::new(),
                    answered: false,
                };
                // The whole task heads the expanded card.
                let whole = task.split_whitespace().collect::<Vec<_>>().join(" ");
                card.push(
                    TimelineKind::Heading,
                    format!(
                        "{INDENT}task: {}",
                        sanitize::display(&crate::text::cap_chars(&whole, LINE_MAX_CHARS))
                    ),
                );
                let id = tag.execution_id.clone();
                match self.by_id.get(&id) {
                    // Started again (cannot happen with fresh ids): the newest wins.
                    Some(&i) => self.cards[i] = card,
                    None => {
                        self.by_id.insert(id.clone(), self.cards.len());
                        self.cards.push(card);
                        if let Some(old) = self
                            .cards
                            .len()
                            .checked_sub(CARDS_WITH_TRANSCRIPT + 1)
                            .and_then(|i| self.cards.get_mut(i))
                        {
                            old.dropped += old.lines.len();
                            old.lines = VecDeque::new();
                            old.live = String::new();
                        }
                    }
                }
                vec![CardTimelineLine {
                    kind: TimelineKind::Info,
                    text: String::new(),
                    card: Some(id),
                }]
            }
            EventKind::ExecutionRunning => {
                if let Some(card) = self.card_of(tag) {
                    card.started = Some(now);
                }
                Vec::new()
            }
            EventKind::ExecutionFinished {
                status,
                result,
                error,
                ..
            } => {
                if let Some(card) = self.card_of(tag) {
                    card.commit_live();
                    if let Some(r) = result.as_deref().filter(|_| !card.answered) {
                        // Read back from a run file (no streamed answer): its result.
                        card.push_text(r);
                        card.answered = true;
                    }
                    if let Some(e) = error {
                        card.push(
                            TimelineKind::Bad,
                            format!(
                                "{INDENT}✗ {status}: {}",
                                sanitize::display(&crate::text::first_line(e, LINE_MAX_CHARS))
                            ),
                        );
                    } else if *status != ExecutionStatus::Completed {
                        card.push(TimelineKind::Warn, format!("{INDENT}✗ {status}"));
                    }
                }
                Vec::new()
            }
            EventKind::ToolCall { name, arguments, .. } => {
                if let Some(card) = self.card_of(tag) {
                    card.commit_live();
                    card.push_line(INDENT, describe::tools::call(name, arguments));
                }
                Vec::new()
            }
            EventKind::ToolResult {
                name,
                ok,
                duration_ms,
                first_line,
                ..
            } => {
                if let Some(card) = self.card_of(tag) {
                    let line = describe::tools::result(name, Some(*ok), Some(*duration_ms), Some(first_line));
                    card.push_line("        ↳ ", line);
                }
                Vec::new()
            }
            EventKind::ToolApprovalRequested { server, tool, .. } => {
                if let Some(card) = self.card_of(tag) {
                    let tool = crate::tools::qualified_name(server, tool);
                    card.push_line(INDENT, describe::tools::waits_for_approval(&tool));
                }
                Vec::new()
            }
            EventKind::TurnFinished { message, .. } => {
                if let Some(card) = self.card_of(tag) {
                    match message.as_deref().filter(|m| !m.text.trim().is_empty()) {
                        Some(m) => {
                            card.live.clear();
                            card.push_text(&m.text);
                        }
                        None => card.commit_live(),
                    }
                }
                Vec::new()
            }
            EventKind::TurnInput { text, message, .. } => {
                if let Some(card) = self.card_of(tag) {
                    // Given to a sub-agent or member mid-turn (broadcasts, a clarification).
                    let shown = message.as_deref().map_or(text.as_str(), |m: &Message| &m.text);
                    for line in describe::executions::arrived(shown, true) {
                        card.push_line(INDENT, line);
                    }
                    return Vec::new();
                }
                // A pushed result, or a note (the orchestrator must conclude, a message of yours).
                timeline_lines(describe::executions::arrived(text, true))
            }
            // Results that came while the orchestrator was idle open its next turn.
            EventKind::TurnStarted {
                prompt: Some(prompt), ..
            } if self.card_of(tag).is_none() => {
                timeline_lines(describe::executions::arrived(&prompt.text, false))
            }
            EventKind::RunEnded { .. } => {
                self.cut_short(now);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Streamed text of an execution with a card: true when it went to the card.
    pub fn delta(&mut self, tag: Option<&ExecutionTag>, text: &str) -> bool {
        let Some(card) = self.card_of(tag) else {
            return false;
        };
        if card.live.is_empty() {
            card.live.push_str(INDENT);
        }
        // Each line of the stream is indented as it comes (the view borrows it as it is).
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                card.live.push('\n');
                card.live.push_str(INDENT);
            }
            card.live.push_str(part);
        }
        crate::text::keep_last_chars(&mut card.live, LIVE_MAX_CHARS);
        true
    }

    /// The run is over or was cut short at `at` (its last event): what has not finished never
    /// will, and ran until then.
    pub fn cut_short(&mut self, at: Instant) {
        for card in &mut self.cards {
            if !card.exec.status.is_finished() {
                card.commit_live();
                let ran = card.elapsed_ms(at).or(Some(0));
                card.exec.interrupt(ran);
            }
        }
    }

    /// Moves the selection to the card above (`up`) or below; the first time, to the newest.
    /// False when there are no cards.
    pub fn select_step(&mut self, up: bool) -> bool {
        let Some(last) = self.cards.len().checked_sub(1) else {
            return false;
        };
        let at = self.selected.as_ref().and_then(|id| self.by_id.get(id).copied());
        let next = match at {
            None => last,
            Some(i) if up => i.saturating_sub(1),
            Some(i) => (i + 1).min(last),
        };
        self.selected = Some(self.cards[next].exec.id.clone());
        true
    }

    /// Expands or collapses the selected card (none selected: the newest). The id of the
    /// card toggled, None when there are no cards.
    pub fn toggle_selected(&mut self) -> Option<String> {
        if self
            .selected
            .as_ref()
            .is_none_or(|id| !self.by_id.contains_key(id))
            && !self.select_step(true)
        {
            return None;
        }
        let id = self.selected.clone()?;
        let card = self.get_mut(&id)?;
        card.expanded = !card.expanded;
        Some(id)
    }
}

/// Lines of the timeline, anchored to no card.
fn timeline_lines(lines: Vec<Line>) -> Vec<CardTimelineLine> {
    lines
        .into_iter()
        .map(|l| CardTimelineLine {
            kind: l.tone,
            text: format!("  {}", l.text),
            card: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(exec: Option<(&str, Option<&str>)>, kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "g".into(),
            group: "t".into(),
            run_id: Some("r".into()),
            execution: exec.map(|(id, parent)| ExecutionTag {
                execution_id: id.into(),
                parent_execution_id: parent.map(str::to_string),
            }),
            kind,
        }
    }

    fn started(id: &str, member: &str, task: &str) -> EngineEvent {
        ev(
            Some((id, Some("exec-1"))),
            EventKind::ExecutionStarted {
                kind: ExecutionKind::SubAgent,
                member: member.into(),
                session_id: format!("s-{member}"),
                task: task.into(),
                queued: false,
            },
        )
    }

    fn same(s: &str) -> String {
        s.to_string()
    }

    #[test]
    fn a_card_follows_its_execution_and_its_line_says_how_it_stands() {
        let t0 = Instant::now();
        let mut cards = ExecutionCards::default();
        let lines = cards.apply(
            &started("exec-2", "log-analyzer", "Look at the logs\nmore"),
            t0,
            same,
        );
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].card.as_deref(), Some("exec-2"));
        let card = cards.get("exec-2").expect("a card");
        assert_eq!(
            card.header(t0 + std::time::Duration::from_millis(3100)),
            "  ▸ exec-2 log-analyzer · running 3.1s — task: Look at the logs"
        );
        assert!(cards.delta(
            Some(&ExecutionTag {
                execution_id: "exec-2".into(),
                parent_execution_id: None
            }),
            "Found \u{1b}[31m5xx"
        ));
        assert_eq!(
            cards.get("exec-2").map(|c| c.live.as_str()),
            Some("      Found \u{1b}[31m5xx")
        );
        cards.apply(
            &ev(
                Some(("exec-2", Some("exec-1"))),
                EventKind::ExecutionFinished {
                    kind: ExecutionKind::SubAgent,
                    member: "log-analyzer".into(),
                    status: ExecutionStatus::Failed,
                    duration_ms: 4200,
                    tokens: 800,
                    tool_calls: 0,
                    result: None,
                    error: Some("boom".into()),
                    cost_usd: None,
                },
            ),
            t0,
            same,
        );
        let card = cards.get("exec-2").expect("a card");
        assert_eq!(
            card.header(t0),
            "  ▸ exec-2 log-analyzer · ✗ failed 4.2s · 800 tok — boom"
        );
        let texts: Vec<&str> = card.lines.iter().map(|l| l.text.as_str()).collect();
        assert!(
            texts.contains(&"      Found 5xx"),
            "streamed text kept, sanitised: {texts:?}"
        );
        assert!(texts.contains(&"      ✗ failed: boom"), "{texts:?}");
    }

    #[test]
    fn a_card_read_back_from_a_run_file_shows_its_result() {
        // A run file has no deltas and no stored answers: the execution's result stands in.
        let now = Instant::now();
        let mut cards = ExecutionCards::default();
        cards.apply(&started("exec-2", "a", "t"), now, same);
        cards.apply(
            &ev(
                Some(("exec-2", Some("exec-1"))),
                EventKind::ExecutionFinished {
                    kind: ExecutionKind::SubAgent,
                    member: "a".into(),
                    status: ExecutionStatus::Completed,
                    duration_ms: 10,
                    tokens: 5,
                    tool_calls: 0,
                    result: Some("line one\nline \u{1b}[1mtwo".into()),
                    error: None,
                    cost_usd: None,
                },
            ),
            now,
            same,
        );
        let card = cards.get("exec-2").expect("a card");
        let texts: Vec<&str> = card.lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["      task: t", "      line one", "      line two"]);
        // A run file that ends without the execution's end: it never finished.
        cards.apply(&started("exec-3", "b", "t"), now, same);
        cards.cut_short(Instant::now());
        assert_eq!(
            cards.get("exec-3").map(|c| c.exec.status),
            Some(ExecutionStatus::Interrupted)
        );
    }

    #[test]
    fn a_pushed_result_is_a_timeline_line() {
        let mut cards = ExecutionCards::default();
        let lines = cards.apply(
            &ev(
                Some(("exec-1", None)),
                EventKind::TurnInput {
                    session_id: "o".into(),
                    session: "o".into(),
                    generation: 1,
                    text: "[Sub-agent completed] log-analyzer (exec-2): found it".into(),
                    message: None,
                },
            ),
            Instant::now(),
            same,
        );
        assert_eq!(lines[0].text, "  ⇠ result from log-analyzer (exec-2)");
        // Results that waited for an idle orchestrator open its next turn, several at once.
        let prompt = "[Sub-agent completed] a (exec-3): fine\nmore\n\n[Sub-agent failed] b (exec-4): boom";
        let lines = cards.apply(
            &ev(
                Some(("exec-1", None)),
                EventKind::TurnStarted {
                    session_id: "o".into(),
                    session: "o".into(),
                    generation: 2,
                    prompt: Some(std::sync::Arc::new(Message::user(prompt))),
                },
            ),
            Instant::now(),
            same,
        );
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            ["  ⇠ result from a (exec-3)", "  ⇠ failure from b (exec-4)"]
        );
    }

    #[test]
    fn a_card_keeps_a_bounded_transcript() {
        let now = Instant::now();
        let mut cards = ExecutionCards::default();
        cards.apply(&started("exec-2", "a", "t"), now, same);
        let tag = ExecutionTag {
            execution_id: "exec-2".into(),
            parent_execution_id: None,
        };
        for i in 0..(CARD_LINES_MAX + 50) {
            cards.apply(
                &ev(
                    Some(("exec-2", None)),
                    EventKind::ToolCall {
                        session_id: "s".into(),
                        session: "a".into(),
                        generation: 1,
                        call_id: format!("c{i}"),
                        name: "grep".into(),
                        arguments: "{}".into(),
                        step: None,
                    },
                ),
                now,
                same,
            );
        }
        cards.delta(Some(&tag), &"x".repeat(LIVE_MAX_CHARS * 3));
        let card = cards.get("exec-2").expect("a card");
        assert_eq!(card.lines.len(), CARD_LINES_MAX);
        assert_eq!(card.dropped, 51);
        assert_eq!(card.live.chars().count(), LIVE_MAX_CHARS);
        // Only the newest cards keep a transcript.
        for n in 3..(CARDS_WITH_TRANSCRIPT as u32 + 3) {
            cards.apply(&started(&format!("exec-{n}"), "a", "t"), now, same);
        }
        let card = cards.get("exec-2").expect("a card");
        assert!(card.lines.is_empty() && card.live.is_empty());
        assert_eq!(card.dropped, 51 + CARD_LINES_MAX);
        assert!(cards.get("exec-3").is_some_and(|c| !c.lines.is_empty()));
    }

    /// The timeline of a dispatch run while it goes (recorded on the sim): a card per
    /// sub-agent, running ones with their time, one expanded on its transcript, one selected.
    #[test]
    fn snapshot_cards_in_the_timeline() {
        use crate::tui::test_screen::{WIDTHS, draw, events_of, panel_after, team_org, timeline_props};
        let fixture = include_str!("../../tests/fixtures/runs/dispatch.ndjson");
        let (org, group_id) = team_org("Incident Investigation", 10);
        let mut events = events_of(fixture, &group_id);
        events.truncate(24);
        // Two minutes ago: a card still running shows 2m05s.
        let mut panel = panel_after(&events, &org, std::time::Duration::from_secs(125));
        let cycle = panel.cycles.get_mut(&group_id).expect("the run");
        // The first card (done) opened; the selection on a running one.
        for _ in 0..4 {
            cycle.cards.select_step(true);
        }
        assert_eq!(cycle.cards.toggle_selected().as_deref(), Some("exec-2"));
        cycle.cards.select_step(false);
        cycle.cards.select_step(false);
        assert_eq!(cycle.cards.selected.as_deref(), Some("exec-4"));
        for width in WIDTHS {
            let screen = draw(width, 30, |f| {
                let mut pane = crate::tui::transcript_pane::TranscriptPane::default();
                pane.render(
                    f,
                    f.area(),
                    &timeline_props(&org, &group_id, panel.shown_cycle(&group_id)),
                );
            });
            insta::assert_snapshot!(format!("cards_{width}"), screen);
        }
    }

    #[test]
    fn the_card_keys_walk_and_toggle_the_cards() {
        let now = Instant::now();
        let mut cards = ExecutionCards::default();
        assert!(!cards.select_step(true));
        assert_eq!(cards.toggle_selected(), None);
        cards.apply(&started("exec-2", "a", "t"), now, same);
        cards.apply(&started("exec-3", "b", "t"), now, same);
        assert_eq!(
            cards.toggle_selected().as_deref(),
            Some("exec-3"),
            "the newest first"
        );
        assert!(cards.get("exec-3").is_some_and(|c| c.expanded));
        assert!(cards.select_step(true));
        assert_eq!(cards.selected.as_deref(), Some("exec-2"));
        assert!(cards.select_step(true));
        assert_eq!(cards.selected.as_deref(), Some("exec-2"), "stays on the first");
        cards.toggle_selected();
        assert!(cards.get("exec-2").is_some_and(|c| c.expanded));
        assert!(cards.select_step(false));
        cards.toggle_selected();
        assert!(cards.get("exec-3").is_some_and(|c| !c.expanded));
    }
}
