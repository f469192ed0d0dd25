//! The team panel: each team's runs as the UI shows them (the newest, live or replayed from
//! its run file, and an earlier one being browsed), and the cycle panel that draws the one
//! shown: iteration i/N and phase, which run of how many, each worker's state, duration and
//! tokens, the score sparkline and trend, stall warnings, pending adjustments, paused or
//! interrupted.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use chrono::{DateTime, Local, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthStr;

use super::command::Command;
use super::cycle_view::{CycleView, TimelineKind, WorkerState};
use super::markdown::wrap_line_into;
use super::widgets::{pane, spinner};
use crate::describe::cycle::{outcome_tone, phase_name};
use crate::describe::duration;
use crate::engine::events::{EngineEvent, EventKind, RunKey};
use crate::model::forecast::{Basis, Forecast};
use crate::model::{Group, GroupId, Organization, ReflectionCycle, RunBudget};
use crate::text::sanitize;
use crate::workspace::{LoadedRun, WhichRun};

/// An earlier run of a team shown instead of the newest (browsed with the run keys).
#[derive(Debug, Clone, PartialEq)]
pub struct ShownRun {
    /// 0-based position among the group's runs on disk, oldest first, of `total`.
    pub index: usize,
    pub total: usize,
    pub view: CycleView,
}

/// Where a group's newest run stands among its runs on disk (for browsing back).
#[derive(Debug, Clone, PartialEq)]
pub struct RunPosition {
    pub index: usize,
    pub total: usize,
    /// The newest run's id, when known: its `run_started` followed after its file was read
    /// (a TUI that attached mid-run) is not one more run.
    pub run_id: Option<String>,
}

/// How many of a team's runs followed live are remembered (see [`TeamPanel::followed`]).
const FOLLOWED_KEPT: usize = 8;

/// The team panel's state: per team, its runs as shown.
#[derive(Debug, Default)]
pub struct TeamPanel {
    /// Each team's newest run (live, or replayed from its run file after a restart).
    pub cycles: HashMap<GroupId, CycleView>,
    /// Where each team's newest run stands among its runs on disk.
    pub latest_runs: HashMap<GroupId, RunPosition>,
    /// An earlier run being looked at, per team.
    pub shown_runs: HashMap<GroupId, ShownRun>,
    /// Teams whose newest run file was asked for (read once, when first shown).
    requested: HashSet<GroupId>,
    /// The trace trees of the runs shown (the trace view draws them).
    pub traces: super::trace_view::RunTraces,
    /// Each team's forecast of its next run (read from its run files when it is first shown,
    /// and again when a run of it ends); `None` inside: no earlier run to go by.
    pub forecasts: HashMap<GroupId, (Option<Forecast>, Basis)>,
    /// Teams whose forecast was asked for.
    forecasts_asked: HashSet<GroupId>,
    /// The ids of each team's runs followed live here (their events seen from their start):
    /// a run file read meanwhile is no newer than what they showed.
    followed: HashMap<GroupId, Vec<String>>,
}

/// Where browsing a team's runs leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Browse {
    /// Read the run at this position on disk.
    Load(usize),
    /// Back on the newest run (nothing to read).
    Newest,
    /// The team has no runs on disk.
    NoRuns,
    /// Already on the first (`false`) or the newest (`true`) run.
    AtEnd { newest: bool },
}

/// The keys named in the panel (from the keymap, which can rebind them).
#[derive(Debug, Clone, Default)]
pub struct PanelKeys {
    pub pause: String,
    /// Stops the run (and a limit wait, leaving the run resumable).
    pub stop: String,
    pub older: String,
    pub newer: String,
    /// Opens a relay's waiting draft (or its take-over).
    pub relay_review: String,
}

impl TeamPanel {
    /// The cycles saved in the organization (scores, tokens, an interrupted cycle), before any
    /// run file is read.
    pub fn from_org(o: &Organization) -> TeamPanel {
        let mut panel = TeamPanel::default();
        for g in &o.groups {
            panel.seed_saved(g);
        }
        panel
    }

    /// A group's saved cycle as its newest run, unless one is known already.
    fn seed_saved(&mut self, g: &Group) {
        if self.cycles.contains_key(&g.id) {
            return;
        }
        if let Some(view) = CycleView::saved(g) {
            self.cycles.insert(g.id.clone(), view);
        }
    }

    /// A group was selected: its saved cycle is shown, and a team's newest run file is asked
    /// for the first time.
    pub fn on_selected(&mut self, g: &Group) -> Option<Command> {
        self.seed_saved(g);
        (g.is_team() && self.requested.insert(g.id.clone())).then(|| Command::LoadRun {
            group_id: g.id.clone(),
            which: WhichRun::Newest,
        })
    }

    /// [`Self::on_selected`], and a team's forecast asked for the first time it is shown.
    pub fn on_selected_all(&mut self, g: &Group) -> Vec<Command> {
        let forecast =
            (g.is_team() && self.forecasts_asked.insert(g.id.clone())).then(|| Command::LoadForecast {
                group_id: g.id.clone(),
            });
        self.on_selected(g).into_iter().chain(forecast).collect()
    }

    /// True once the group has a cycle view (its events are followed even if it is no team).
    pub fn knows(&self, group_id: &str) -> bool {
        self.cycles.contains_key(group_id)
    }

    /// The run of a team to show: an earlier one being browsed, else the newest.
    pub fn shown_cycle(&self, group_id: &str) -> Option<&CycleView> {
        self.shown_runs
            .get(group_id)
            .map(|r| &r.view)
            .or_else(|| self.cycles.get(group_id))
    }

    /// The run of a team shown, to change what is drawn of it (its cards).
    pub fn shown_cycle_mut(&mut self, group_id: &str) -> Option<&mut CycleView> {
        match self.shown_runs.get_mut(group_id) {
            Some(r) => Some(&mut r.view),
            None => self.cycles.get_mut(group_id),
        }
    }

    /// True while an earlier run of the team is shown.
    pub fn browsing(&self, group_id: &str) -> bool {
        self.shown_runs.contains_key(group_id)
    }

    /// Shows the newest run again (a new one starts there).
    pub fn show_newest(&mut self, group_id: &str) {
        self.shown_runs.remove(group_id);
        self.traces.show_newest(group_id);
    }

    /// True when the team's newest cycle was interrupted and can be resumed.
    pub fn interrupted(&self, group_id: &str) -> bool {
        self.cycles.get(group_id).is_some_and(|c| c.interrupted)
    }

    /// A message queued for the running team's next plan.
    pub fn queue(&mut self, group_id: &str, text: String) {
        self.cycles
            .entry(group_id.to_string())
            .or_default()
            .queued
            .push(text);
    }

    /// Drops everything of a deleted group.
    pub fn forget(&mut self, group_id: &str) {
        self.cycles.remove(group_id);
        self.shown_runs.remove(group_id);
        self.latest_runs.remove(group_id);
        self.requested.remove(group_id);
        self.followed.remove(group_id);
        self.traces.forget(group_id);
    }

    /// Moves the shown run of a team one earlier (`-1`) or later (`1`) among its runs on disk.
    pub fn browse(&mut self, group_id: &str, step: isize) -> Browse {
        let Some(latest) = self.latest_runs.get(group_id) else {
            return Browse::NoRuns;
        };
        let current = self.shown_runs.get(group_id).map_or(latest.index, |r| r.index);
        let Some(target) = current.checked_add_signed(step) else {
            return Browse::AtEnd { newest: false };
        };
        if target < latest.index {
            return Browse::Load(target);
        }
        match self.shown_runs.remove(group_id) {
            Some(_) if target == latest.index => Browse::Newest,
            _ => Browse::AtEnd { newest: true },
        }
    }

    /// Follows one engine event of a team (or of a group that has a cycle view). `saved` is
    /// the group's persisted cycle, asked for when a run says it resumes one (it keeps the
    /// scores and tokens of its earlier iterations); `names` how its members read (their handles,
    /// else without the prefix of their names, kept across renames), asked for once per cycle.
    pub fn follow(
        &mut self,
        event: &EngineEvent,
        now: Instant,
        saved: impl FnOnce() -> Option<ReflectionCycle>,
        names: impl FnOnce() -> crate::describe::Names,
    ) {
        let id: &str = &event.group_id;
        if let EventKind::RunStarted {
            key: RunKey::Team { .. },
        } = &event.kind
        {
            // A new run: it is the newest, one more on disk (unless it is the one read).
            self.shown_runs.remove(id);
            let (index, total) = match self.latest_runs.get(id) {
                Some(p) if p.run_id.is_some() && p.run_id.as_deref() == event.run_id.as_deref() => {
                    (p.index, p.total)
                }
                Some(p) => (p.total, p.total + 1),
                None => (0, 1),
            };
            self.latest_runs.insert(
                id.to_string(),
                RunPosition {
                    index,
                    total,
                    run_id: event.run_id.as_deref().map(str::to_string),
                },
            );
            if let Some(run_id) = event.run_id.as_deref() {
                let ids = self.followed.entry(id.to_string()).or_default();
                if !ids.iter().any(|r| r == run_id) {
                    ids.push(run_id.to_string());
                }
                // Only a read answered late is compared with them: the newest few do.
                if ids.len() > FOLLOWED_KEPT {
                    ids.remove(0);
                }
            }
        }
        self.traces.follow(event);
        let cycle = self.cycles.entry(id.to_string()).or_default();
        // Names in a run's events are those at its start: how they read is taken once per cycle.
        if cycle.names.is_unset() || matches!(event.kind, EventKind::CycleStarted { .. }) {
            cycle.names = names();
        }
        cycle.apply(event, now);
        // Only a run that says it resumes a cycle carries the earlier runs' history, as it was
        // when it resumed: the saved cycle also holds this run's own progress, which a view
        // opened next to it (its events read back) counts from its events.
        if let EventKind::RunResumed {
            cycle: Some(resumed), ..
        } = &event.kind
            && resumed.after > 0
            && let Some(r) = saved()
        {
            cycle.seed_history(&r, resumed);
        }
    }

    /// Streamed text of a member of a team whose run is followed (the panel shows its end).
    pub fn on_delta(&mut self, event: &EngineEvent, session_id: &str, session: &str, text: &str) {
        if let Some(c) = self.cycles.get_mut(&*event.group_id) {
            c.on_delta(session_id, session, text, event.execution.as_ref());
        }
    }

    /// A run file read back as `view`: the newest becomes the team's timeline (unless a live
    /// run has begun meanwhile: `live`); an earlier one is shown until the user goes back.
    pub fn on_run_loaded(&mut self, group_id: GroupId, loaded: &LoadedRun, mut view: CycleView, live: bool) {
        // Read while a run followed live here began (or went on): the newest file read is no
        // newer than what its events showed, which stays (a resumed run that finished before
        // the read's answer came was shown as the read found it, just begun, for good).
        let newest = loaded.index + 1 == loaded.total;
        if newest && let Some(after) = self.followed_since(&group_id, &loaded.run_id) {
            let run_id = self.followed.get(&group_id).and_then(|ids| ids.last().cloned());
            self.latest_runs.insert(
                group_id,
                RunPosition {
                    index: loaded.index + after,
                    total: loaded.total + after,
                    run_id,
                },
            );
            return;
        }
        self.traces.on_run_loaded(&group_id, loaded, live);
        if !live && let Some(line) = super::relay_view::settle_replayed(&mut view.relay) {
            view.push(line.tone, line.text);
        }
        if loaded.index + 1 < loaded.total {
            self.shown_runs.insert(
                group_id,
                ShownRun {
                    index: loaded.index,
                    total: loaded.total,
                    view,
                },
            );
            return;
        }
        if live {
            return;
        }
        self.latest_runs.insert(
            group_id.clone(),
            RunPosition {
                index: loaded.index,
                total: loaded.total,
                run_id: Some(loaded.run_id.clone()),
            },
        );
        self.shown_runs.remove(&group_id);
        // A pipeline's conversation spans runs: the view seeded from the saved state (or kept
        // from live events) stays, rather than the moves of the newest run alone.
        if let Some(kept) = self.cycles.get(&group_id).and_then(|c| c.pipeline.clone()) {
            view.pipeline = Some(kept);
        }
        self.cycles.insert(group_id, view);
    }

    /// When the run `run_id` (the newest on disk when it was read), or one after it, was
    /// followed live here: how many followed runs came after it (run ids sort as they began).
    fn followed_since(&self, group_id: &str, run_id: &str) -> Option<usize> {
        let ids = self.followed.get(group_id)?;
        let after = ids.iter().filter(|id| id.as_str() > run_id).count();
        (after > 0 || ids.iter().any(|id| id == run_id)).then_some(after)
    }

    /// Which of a team's runs on disk is shown and the keys to the others, e.g.
    /// `run 2 of 7 · 2026-11-23 21:40 · [ older · ] newer` (recorded at, in local time), or
    /// `run 7 of 7 · [ older` for the newest; None while there is no other run to go to.
    pub fn run_label(&self, group_id: &str, keys: &PanelKeys) -> Option<RunLabel> {
        if let Some(shown) = self.shown_runs.get(group_id) {
            let mut parts = vec![format!("run {} of {}", shown.index + 1, shown.total)];
            parts.extend(shown.view.recorded_at.map(local_time));
            if shown.index > 0 {
                parts.push(format!("{} older", keys.older));
            }
            parts.push(format!("{} newer", keys.newer));
            return Some(RunLabel { parts, earlier: true });
        }
        let latest = self.latest_runs.get(group_id).filter(|p| p.index > 0)?;
        Some(RunLabel {
            parts: vec![
                format!("run {} of {}", latest.index + 1, latest.total),
                format!("{} older", keys.older),
            ],
            earlier: false,
        })
    }
}

/// Which run is shown, as the panel and the timeline say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLabel {
    /// Which run, when it was recorded, the keys: shown joined by ` · `.
    pub parts: Vec<String>,
    /// An earlier run, not the newest, is shown.
    pub earlier: bool,
}

impl RunLabel {
    pub fn text(&self) -> String {
        self.parts.join(" · ")
    }

    /// The label in lines of at most `width` columns where it can, broken only between its
    /// parts (a key and its word stay together).
    pub fn packed(&self, width: usize) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for part in &self.parts {
            match lines.last_mut() {
                Some(line) if line.width() + " · ".width() + part.width() <= width => {
                    line.push_str(" · ");
                    line.push_str(part);
                }
                _ => lines.push(part.clone()),
            }
        }
        lines
    }

    /// Drawn to stand out while an earlier run is shown, dim otherwise.
    pub fn style(&self) -> Style {
        if self.earlier {
            Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::DIM)
        }
    }
}

/// When a run was recorded, in the local time zone, to the minute.
pub fn local_time(at: DateTime<Utc>) -> String {
    at.with_timezone(&Local).format("%Y-%m-%d %H:%M").to_string()
}

/// A cycle view rebuilt from a run's recorded events. `names` says how its members read (by
/// handle, else without the prefix of their names); `resumable`: the process stopped during this
/// run and its cycle can be resumed.
pub fn replay(loaded: &LoadedRun, names: crate::describe::Names, resumable: bool) -> CycleView {
    // Each event at its recorded time, on a clock whose last event is now: a card cut short
    // ran until the last event, not 0.0s.
    let first_at = loaded.records.first().map(|r| r.at);
    let offset = |at: DateTime<Utc>| {
        first_at
            .and_then(|first| (at - first).to_std().ok())
            .unwrap_or_default()
    };
    let span = loaded.records.last().map_or(Duration::ZERO, |r| offset(r.at));
    let now = Instant::now();
    let base = now.checked_sub(span).unwrap_or(now);
    let mut view = CycleView::default();
    view.names = names;
    let mut ended = false;
    let mut last = base;
    for record in &loaded.records {
        ended |= matches!(record.event.kind, EventKind::RunEnded { .. });
        last = base + offset(record.at);
        view.apply(&record.event, last);
    }
    if let Some(first) = loaded.records.first() {
        view.recorded_at = Some(first.at);
    }
    let newest = loaded.index + 1 == loaded.total;
    if !ended {
        // The process ended while this run was going (a crash, or quitting mid-cycle).
        view.mark_cut_short(resumable && newest, last);
    } else if resumable && newest {
        // It ended but was left open (its front end went away, or it was stopped during a
        // limit wait): it reads as interrupted, as a live one does, not finished.
        view.mark_left_open();
    }
    if loaded.skipped > 0 {
        view.note_skipped(loaded.skipped);
    }
    view
}

/// The colour of a timeline entry or an outcome (dropped under `NO_COLOR` by the renderer).
pub fn kind_style(kind: &TimelineKind) -> Style {
    super::timeline_kind::style(*kind)
}

/// Scores 0..1 as block characters.
pub fn sparkline(scores: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    scores
        .iter()
        .map(|s| BARS[((s.clamp(0.0, 1.0) * 7.0).round() as usize).min(7)])
        .collect()
}

/// What the cycle panel draws besides the team's runs.
pub struct Props {
    pub group_id: GroupId,
    /// The team's run is in progress in this process.
    pub running: bool,
    /// A pause was asked for and the step in flight has not ended.
    pub pause_requested: bool,
    /// Messages kept for the team's next run.
    pub kept: usize,
    pub tick: usize,
    pub keys: PanelKeys,
    /// The team's run budget (none: no budget line).
    pub budget: RunBudget,
    /// The time the panel is drawn at (a limit wait's countdown counts down to it).
    pub now: Instant,
}

impl TeamPanel {
    /// Draws the cycle panel of the run shown.
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, props: &Props) {
        let default = CycleView::default();
        let cycle = self.shown_cycle(&props.group_id).unwrap_or(&default);
        // An earlier run being looked at is not the one going.
        let running = props.running && !self.browsing(&props.group_id);
        let label = self.run_label(&props.group_id, &props.keys);
        // Before a run (and between runs): what the next one will probably cost.
        let forecast = self
            .forecasts
            .get(&props.group_id)
            .and_then(|(f, _)| f.as_ref())
            .filter(|_| !running)
            .map(crate::describe::cost::forecast_next);
        render(frame, area, props, cycle, running, label.as_ref(), forecast);
    }
}

fn render(
    frame: &mut Frame<'_>,
    area: Rect,
    props: &Props,
    cycle: &CycleView,
    running: bool,
    label: Option<&RunLabel>,
    forecast: Option<String>,
) {
    let state = cycle.state_while(running);
    let block = pane(format!(" Cycle · {state} "), false);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines = Vec::new();
    if let Some(label) = label {
        for line in label.packed(width) {
            wrap_line_into(Line::styled(line, label.style()), width.max(1), &mut lines);
        }
    }
    let (mut cycle, head) = cycle_lines(props, cycle, running, width);
    if let Some(forecast) = forecast {
        // Under the head line (wrapped, it may take more than one).
        let dim = Style::default().add_modifier(Modifier::DIM);
        let mut wrapped = Vec::new();
        wrap_line_into(Line::styled(forecast, dim), width.max(1), &mut wrapped);
        let at = head.min(cycle.len());
        cycle.splice(at..at, wrapped);
    }
    lines.extend(cycle);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The run's wait for a limit at `now`, if a turn of it waits: who (the first, and how many
/// more), until when, how long is left, and that the stop key ends the wait.
pub fn limit_wait_lines(c: &CycleView, keys: &PanelKeys, now: Instant) -> Vec<String> {
    let Some(first) = c.limit_waits.first() else {
        return Vec::new();
    };
    vec![
        crate::describe::cycle::limit_wait_row(
            &sanitize::display(&first.session),
            &sanitize::display(&first.provider),
            first.until,
            first.left(now),
            c.limit_waits.len() - 1,
        ),
        format!("  {}", crate::describe::cycle::limit_wait_stop_hint(&keys.stop)),
    ]
}

/// The cycle's lines, and how many of them the head line took.
fn cycle_lines(props: &Props, c: &CycleView, running: bool, width: usize) -> (Vec<Line<'static>>, usize) {
    let pause_key = &props.keys.pause;
    let dim = Style::default().add_modifier(Modifier::DIM);
    let warn = Style::default().fg(Color::Yellow);
    let mut out = Vec::new();
    let mut head = if c.iteration == 0 && c.mode.is_none() {
        "not run yet".to_string()
    } else {
        format!("iteration {}/{}", c.iteration, c.max_iterations.max(c.iteration))
    };
    if let Some(p) = c.phase.filter(|_| running) {
        head.push_str(&format!(" · {}", phase_name(p)));
    }
    if c.usage.total() > 0 {
        head.push_str(&format!(" · {} tok", crate::text::thousands(c.usage.total())));
    }
    // What the run cost so far (a free model's run says nothing; an unknown cost is said once
    // the run's end recorded it, as a run file written before costs were has none).
    if let Some(cost) = crate::describe::cost::short(&c.cost)
        .filter(|_| !free(&c.cost) && (c.cost.priced > 0 || c.cost_recorded))
    {
        head.push_str(&format!(" · {cost}"));
    }
    // Wrapped: the panel can be narrow (28 columns at 120), and the cost comes last.
    let bold = Style::default().add_modifier(Modifier::BOLD);
    wrap_line_into(Line::styled(head, bold), width.max(1), &mut out);
    let head_lines = out.len();
    if let Some((_, name, live)) = c.lead_live.as_ref().filter(|l| running && !l.2.trim().is_empty()) {
        // The orchestrator (or evaluator) writing: who, and the end of its line.
        let name = sanitize::display(name);
        let room = width.saturating_sub(name.width() + 5);
        let tail = live_tail(live.trim(), room);
        out.push(Line::styled(
            format!("✎ {name}{}", tail.trim_start_matches(' ').replacen('›', " ›", 1)),
            dim,
        ));
    }
    if let Some((text, near)) = budget_line(&props.budget, c, props.now) {
        let style = if near { warn } else { dim };
        // What is left goes whole onto a line of its own when the line does not fit.
        let parts = match text.rfind(" (") {
            Some(at) if text.width() > width => vec![text[..at].to_string(), text[at + 1..].to_string()],
            _ => vec![text],
        };
        for part in parts {
            wrap_line_into(Line::styled(part, style), width.max(1), &mut out);
        }
    }
    out.extend(super::relay_view::panel_lines(
        c.relay.as_ref(),
        &props.keys.relay_review,
        width,
    ));
    out.extend(super::pipeline_view::panel_lines(
        c.pipeline.as_ref(),
        &props.keys.relay_review,
        width,
    ));
    if let Some(line) = super::execution_cards::summary(&c.cards) {
        wrap_line_into(Line::styled(line, dim), width.max(1), &mut out);
    }
    if let Some(first) = c.approvals.first().filter(|_| running) {
        // The run waits until the popup is answered.
        let more = match c.approvals.len() {
            1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        let text = format!(
            "? waits for your approval: {} · {}{more}",
            sanitize::display(&first.session),
            sanitize::display(&first.tool)
        );
        wrap_line_into(
            Line::styled(text, warn.add_modifier(Modifier::BOLD)),
            width.max(1),
            &mut out,
        );
    }
    if running {
        // The run goes on by itself at the reset; stopping it keeps it resumable.
        for line in limit_wait_lines(c, &props.keys, props.now) {
            wrap_line_into(Line::styled(line, warn), width.max(1), &mut out);
        }
    }
    if running && c.paused {
        out.push(Line::styled(format!("⏸ paused — {pause_key} resumes"), warn));
    } else if running && props.pause_requested {
        out.push(Line::styled("pausing after the step in flight…", warn));
    } else if !running && c.interrupted {
        out.push(Line::styled(format!("! interrupted — {pause_key} resumes"), warn));
    } else if let (false, Some(o)) = (running, c.outcome) {
        out.push(Line::styled(
            format!("finished: {o}"),
            kind_style(&outcome_tone(o)),
        ));
    }
    if !c.scores.is_empty() {
        let last = c.scores.last().copied().unwrap_or_default();
        let trend = c.trend.map(|t| format!(" {t}")).unwrap_or_default();
        out.push(Line::from(vec![
            Span::raw("score "),
            Span::styled(sparkline(&c.scores), Style::default().fg(Color::Cyan)),
            Span::raw(format!(" {last:.2}{trend}")),
        ]));
    }
    if !c.queued.is_empty() {
        out.push(Line::styled(
            format!("queued: {} message(s)", c.queued.len()),
            dim,
        ));
    }
    let kept = props.kept;
    if kept > 0 {
        out.push(Line::styled(format!("kept for the next run: {kept}"), dim));
    }
    let now = Instant::now();
    for w in &c.workers {
        let (mark, style) = match w.state {
            WorkerState::Assigned => ("·".to_string(), dim),
            WorkerState::Running => (spinner(props.tick).to_string(), Style::default()),
            WorkerState::Done => ("✓".to_string(), Style::default().fg(Color::Green)),
            WorkerState::Failed => ("✗".to_string(), Style::default().fg(Color::Red)),
        };
        let time = match (w.duration_ms, w.started) {
            (Some(ms), _) => duration(ms),
            (None, Some(t)) if w.state == WorkerState::Running => {
                duration(now.saturating_duration_since(t).as_millis() as u64)
            }
            _ => String::new(),
        };
        let tokens = if w.tokens > 0 {
            format!(" {}t", w.tokens)
        } else {
            String::new()
        };
        out.push(Line::from(vec![
            Span::styled(format!("{mark} "), style),
            Span::raw(sanitize::display(&w.name).into_owned()),
            Span::styled(format!(" {time}{tokens}"), dim),
        ]));
        // Below the member, while its turn has a call in flight: which, or that it waits;
        // else what it is writing.
        let live = w.live.trim();
        if w.tools.iter().any(|t| t.waiting) {
            out.push(Line::styled(
                "  waiting for approval",
                warn.add_modifier(Modifier::BOLD),
            ));
        } else if let Some(t) = w.tools.first() {
            let more = match w.tools.len() {
                1 => String::new(),
                n => format!(" +{}", n - 1),
            };
            out.push(Line::styled(
                format!("  ⚙ {}{more}", sanitize::display(&t.name)),
                Style::default().fg(Color::Cyan),
            ));
        } else if w.state == WorkerState::Running && !live.is_empty() {
            out.push(Line::styled(live_tail(live, width.saturating_sub(4)), dim));
        }
    }
    for s in c.stall_warnings.iter().rev().take(2) {
        out.push(Line::styled(s.clone(), warn));
    }
    for a in c.adjustments.iter().rev().take(3) {
        let text: String = sanitize::display(a)
            .chars()
            .take(width.saturating_sub(2).max(1))
            .collect();
        out.push(Line::styled(format!("→ {text}"), warn));
    }
    (out, head_lines)
}

/// `  › ` and the end of a streaming line that fits in `room` columns (`…` where cut).
fn live_tail(live: &str, room: usize) -> String {
    let clean = sanitize::display(live);
    let clean = clean.trim();
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for c in clean.chars().rev() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > room.saturating_sub(1) {
            tail.push('…');
            break;
        }
        used += w;
        tail.push(c);
    }
    tail.reverse();
    format!("  › {}", tail.into_iter().collect::<String>())
}

/// Nothing was spent: no turn yet, or only turns of free models (the simulator, a local server).
pub fn free(cost: &crate::model::Cost) -> bool {
    cost.unpriced == 0 && cost.usd <= 0.0
}

/// `budget: 1m05s / 30m00s · 12,000 / 50,000 tok · $0.42 / $1.00 ($0.58 left)` for a team with a
/// budget: the run's time (pauses left out), tokens and cost against each limit set, and whether
/// one is at 80 % or more.
pub fn budget_line(budget: &RunBudget, c: &CycleView, now: Instant) -> Option<(String, bool)> {
    if budget.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let mut near = false;
    if let Some(limit) = budget.max_duration() {
        let used = c.active_time(now).unwrap_or_default();
        near |= used.as_secs_f64() >= 0.8 * limit.as_secs_f64();
        parts.push(format!(
            "{} / {}",
            duration(used.as_millis() as u64),
            duration(limit.as_millis() as u64)
        ));
    }
    if let Some(limit) = budget.token_budget {
        let used = c.usage.total();
        near |= used as f64 >= 0.8 * limit as f64;
        parts.push(format!(
            "{} / {} tok",
            crate::text::thousands(used),
            crate::text::thousands(limit)
        ));
    }
    if let Some(limit) = budget.max_cost_usd {
        near |= c.cost.usd >= 0.8 * limit;
        let usd = crate::describe::cost::usd;
        // What is left to spend (turns without a price count nothing: said with `≥`).
        let at_least = if c.cost.unpriced > 0 { "≥" } else { "" };
        parts.push(format!(
            "{at_least}{} / {} ({} left)",
            usd(c.cost.usd),
            usd(limit),
            usd((limit - c.cost.usd).max(0.0))
        ));
    }
    Some((format!("budget: {}", parts.join(" · ")), near))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::{ResumedCycle, RunRecord};
    use crate::model::{CycleOutcome, Mode, Usage};

    #[test]
    fn the_live_tail_is_the_end_of_the_line_that_fits() {
        assert_eq!(live_tail("short", 20), "  › short");
        assert_eq!(live_tail("a long line of streamed text", 10), "  › …amed text");
        assert_eq!(live_tail("\x1b[31mred\x1b[0m", 20), "  › red");
    }

    #[test]
    fn the_budget_line_shows_time_and_tokens_against_the_limits() {
        let now = Instant::now();
        let mut c = CycleView::default();
        c.started = Some(now - std::time::Duration::from_secs(65));
        c.usage.input_tokens = 12_000;
        assert_eq!(budget_line(&RunBudget::default(), &c, now), None);
        let budget = RunBudget {
            max_duration_secs: Some(1800),
            token_budget: Some(50_000),
            max_cost_usd: None,
        };
        assert_eq!(
            budget_line(&budget, &c, now),
            Some(("budget: 1m05s / 30m00s · 12,000 / 50,000 tok".into(), false))
        );
        c.usage.output_tokens = 30_000;
        assert_eq!(budget_line(&budget, &c, now).map(|(_, near)| near), Some(true));
        let tokens_only = RunBudget {
            max_duration_secs: None,
            token_budget: Some(100),
            max_cost_usd: None,
        };
        assert_eq!(
            budget_line(&tokens_only, &c, now).map(|(t, _)| t),
            Some("budget: 42,000 / 100 tok".into())
        );
        let money = RunBudget {
            max_cost_usd: Some(1.0),
            ..RunBudget::default()
        };
        c.cost = crate::model::Cost::of_turn(Some(0.42));
        assert_eq!(
            budget_line(&money, &c, now),
            Some(("budget: $0.420 / $1.00 ($0.580 left)".into(), false))
        );
        c.cost = crate::model::Cost::of_turn(Some(0.85));
        assert_eq!(budget_line(&money, &c, now).map(|(_, near)| near), Some(true));
    }

    #[test]
    fn sparkline_maps_scores_to_bars() {
        assert_eq!(sparkline(&[0.0, 0.5, 1.0, 7.0]), "▁▅██");
    }

    fn keys() -> PanelKeys {
        PanelKeys {
            pause: "P".into(),
            stop: "^X".into(),
            older: "<".into(),
            newer: ">".into(),
            relay_review: "v".into(),
        }
    }

    /// The countdown of a limit wait counts from when its event came by the wait it announced
    /// (no wall clock: the instants are given), names who waits and the stop key.
    #[test]
    fn a_limit_wait_counts_down_from_its_event() {
        use chrono::TimeZone;
        let t0 = Instant::now();
        let mut c = CycleView::default();
        let until = Utc.with_ymd_and_hms(2026, 11, 28, 14, 5, 0).unwrap();
        c.apply(
            &event(EventKind::LimitWait {
                session_id: "sa".into(),
                session: "alpha".into(),
                provider: "openai".into(),
                until,
                wait_ms: 600_000,
                reason: "429".into(),
            }),
            t0,
        );
        let at = |c: &CycleView, secs| limit_wait_lines(c, &keys(), t0 + Duration::from_secs(secs));
        assert_eq!(
            at(&c, 90),
            [
                "⏳ alpha: waiting until 14:05 UTC for openai limit, 8m30s left",
                "  ^X stops the wait; the run stays resumable"
            ]
        );
        assert!(at(&c, 599)[0].ends_with(", 1s left"), "{:?}", at(&c, 599));
        assert!(
            at(&c, 700)[0].ends_with(", 0s left"),
            "never below zero: {:?}",
            at(&c, 700)
        );
        c.apply(
            &event(EventKind::LimitWaitOver {
                session_id: "sa".into(),
                session: "alpha".into(),
                waited_ms: 600_000,
            }),
            t0 + Duration::from_secs(600),
        );
        assert!(at(&c, 601).is_empty());
    }

    fn event(kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "g".into(),
            group: "Team".into(),
            run_id: Some("r".into()),
            execution: None,
            kind,
        }
    }

    /// Run `index` of `total` on disk, recorded at `at`: one started cycle.
    fn loaded(index: usize, total: usize, at: DateTime<Utc>) -> LoadedRun {
        let records = [
            EventKind::RunStarted {
                key: RunKey::team("g"),
            },
            EventKind::CycleStarted {
                mode: Mode::Broadcast,
                max_iterations: 1,
            },
        ]
        .into_iter()
        .map(|kind| RunRecord {
            at,
            event: event(kind),
        })
        .collect();
        LoadedRun {
            run_id: format!("run-{index}"),
            records,
            index,
            total,
            skipped: 0,
        }
    }

    #[test]
    fn browsing_walks_the_runs_on_disk_and_the_label_says_which_is_shown() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let mut panel = TeamPanel::default();
        assert_eq!(panel.browse("g", -1), Browse::NoRuns);
        let newest = loaded(2, 3, at);
        panel.on_run_loaded(
            "g".into(),
            &newest,
            replay(&newest, crate::describe::Names::team("team"), false),
            false,
        );
        assert_eq!(
            panel.run_label("g", &keys()).map(|l| l.text()),
            Some("run 3 of 3 · < older".into())
        );
        assert_eq!(panel.browse("g", 1), Browse::AtEnd { newest: true });
        assert_eq!(panel.browse("g", -1), Browse::Load(1));
        let middle = loaded(1, 3, at);
        panel.on_run_loaded(
            "g".into(),
            &middle,
            replay(&middle, crate::describe::Names::team("team"), false),
            false,
        );
        assert!(panel.browsing("g"));
        let label = panel.run_label("g", &keys()).expect("a label");
        assert!(label.earlier);
        assert_eq!(
            label.text(),
            format!("run 2 of 3 · {} · < older · > newer", local_time(at))
        );
        assert_eq!(
            label.packed(30),
            [
                format!("run 2 of 3 · {}", local_time(at)),
                "< older · > newer".into()
            ]
        );
        assert_eq!(panel.browse("g", -1), Browse::Load(0));
        let first = loaded(0, 3, at);
        panel.on_run_loaded(
            "g".into(),
            &first,
            replay(&first, crate::describe::Names::team("team"), false),
            false,
        );
        assert!(
            panel
                .run_label("g", &keys())
                .is_some_and(|l| l.text().starts_with("run 1 of 3") && !l.text().contains("older"))
        );
        assert_eq!(panel.browse("g", -1), Browse::AtEnd { newest: false });
        assert_eq!(panel.browse("g", 1), Browse::Load(1));
        // From the run before the newest, the next step is the newest itself: nothing to read.
        panel.on_run_loaded(
            "g".into(),
            &middle,
            replay(&middle, crate::describe::Names::team("team"), false),
            false,
        );
        assert_eq!(panel.browse("g", 1), Browse::Newest);
        assert!(!panel.browsing("g"));
    }

    /// The CI flake of Nov 29: resuming from the offer selected the team, which asked for its
    /// newest run file; the resumed run began and finished before the read's answer came, and
    /// the read (the run just begun, or the interrupted one before it) replaced what its events
    /// had shown: `not run yet`, `cut short`, for good.
    #[test]
    fn a_read_answered_after_a_live_run_finished_does_not_replace_it() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let resumed = "20271115T080000000Z-bbbbbbbb";
        let of_resumed = |kind| EngineEvent {
            run_id: Some(resumed.into()),
            ..event(kind)
        };
        let live_run = [
            EventKind::RunStarted {
                key: RunKey::team("g"),
            },
            EventKind::CycleStarted {
                mode: Mode::Pipeline,
                max_iterations: 1,
            },
            EventKind::CycleFinished {
                outcome: CycleOutcome::Completed,
                iterations: 1,
                max_iterations: 1,
                mode: Some(Mode::Pipeline),
                summary: "Cycle finished: completed.".into(),
            },
            EventKind::RunEnded {
                key: RunKey::team("g"),
                outcome: Some(CycleOutcome::Completed),
                iterations: 1,
                failed: None,
                totals: None,
            },
        ];
        // Read as it began (the newest of two on disk), or before it began (the one before).
        let just_begun = LoadedRun {
            run_id: resumed.into(),
            records: vec![RunRecord {
                at,
                event: of_resumed(live_run[0].clone()),
            }],
            index: 1,
            total: 2,
            skipped: 0,
        };
        let before_it = LoadedRun {
            run_id: "20271115T075900000Z-aaaaaaaa".into(),
            ..loaded(0, 1, at)
        };
        for read in [just_begun, before_it] {
            let mut panel = TeamPanel::default();
            for kind in live_run.clone() {
                panel.follow(
                    &of_resumed(kind),
                    Instant::now(),
                    || None,
                    || crate::describe::Names::team("team"),
                );
            }
            assert_eq!(panel.cycles["g"].state_label(), "finished");
            let view = replay(&read, crate::describe::Names::team("team"), true);
            panel.on_run_loaded("g".into(), &read, view, false);
            assert_eq!(panel.cycles["g"].state_label(), "finished", "{}", read.run_id);
            assert_eq!(
                panel.latest_runs.get("g").map(|p| (p.index, p.total)),
                Some((1, 2)),
                "{}",
                read.run_id
            );
        }
    }

    /// Review s12 D1: a TUI attached mid-run reads the run's file before the host's replay of
    /// its `run_started` reaches it: the run is counted once (`run 2 of 2`, not `run 3 of 3`).
    #[test]
    fn a_run_read_before_its_replayed_start_is_counted_once() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let going = "20271115T080000000Z-bbbbbbbb";
        let mut panel = TeamPanel::default();
        let read = LoadedRun {
            run_id: going.into(),
            ..loaded(1, 2, at)
        };
        let view = replay(&read, crate::describe::Names::team("team"), false);
        panel.on_run_loaded("g".into(), &read, view, false);
        let started = EngineEvent {
            run_id: Some(going.into()),
            ..event(EventKind::RunStarted {
                key: RunKey::team("g"),
            })
        };
        panel.follow(
            &started,
            Instant::now(),
            || None,
            || crate::describe::Names::team("team"),
        );
        assert_eq!(
            panel.latest_runs.get("g").map(|p| (p.index, p.total)),
            Some((1, 2))
        );
        // The next run is one more.
        let next = EngineEvent {
            run_id: Some("20271115T090000000Z-cccccccc".into()),
            ..started
        };
        panel.follow(
            &next,
            Instant::now(),
            || None,
            || crate::describe::Names::team("team"),
        );
        assert_eq!(
            panel.latest_runs.get("g").map(|p| (p.index, p.total)),
            Some((2, 3))
        );
    }

    #[test]
    fn a_new_run_is_the_newest_and_a_late_read_does_not_replace_it() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let mut panel = TeamPanel::default();
        let newest = loaded(0, 1, at);
        panel.on_run_loaded(
            "g".into(),
            &newest,
            replay(&newest, crate::describe::Names::team("team"), false),
            false,
        );
        assert_eq!(panel.run_label("g", &keys()), None, "one run: nowhere to go");
        let now = Instant::now();
        panel.follow(
            &event(EventKind::RunStarted {
                key: RunKey::team("g"),
            }),
            now,
            || None,
            || crate::describe::Names::team("team"),
        );
        assert_eq!(
            panel.latest_runs.get("g").map(|p| (p.index, p.total)),
            Some((1, 2))
        );
        panel.follow(
            &event(EventKind::CycleStarted {
                mode: Mode::Orchestrator,
                max_iterations: 1,
            }),
            now,
            || None,
            || crate::describe::Names::team("team"),
        );
        // The newest run file read back while the live run goes: the live view stays.
        let stale = loaded(0, 1, at);
        panel.on_run_loaded(
            "g".into(),
            &stale,
            replay(&stale, crate::describe::Names::team("team"), false),
            true,
        );
        assert_eq!(panel.cycles["g"].mode, Some(Mode::Orchestrator));
        assert!(panel.cycles["g"].running);
    }

    #[test]
    fn a_replayed_run_without_its_end_was_cut_short() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let run = loaded(0, 1, at);
        let view = replay(&run, crate::describe::Names::team("team"), true);
        assert_eq!(view.recorded_at, Some(at));
        assert!(view.interrupted && !view.running);
        assert!(!replay(&run, crate::describe::Names::team("team"), false).interrupted);
    }

    /// A run that ended but was left open (the host stopped it when the `huddle run` that
    /// started it went away) reads back as interrupted, resumable, not `finished`; the same
    /// run ended and not left open, or an earlier run, reads as finished.
    #[test]
    fn a_replayed_run_left_open_reads_interrupted_not_finished() {
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let ended = |index, total| {
            let mut run = loaded(index, total, at);
            for kind in [
                EventKind::CycleFinished {
                    outcome: CycleOutcome::Cancelled,
                    iterations: 1,
                    max_iterations: 1,
                    mode: Some(Mode::Dispatch),
                    summary: "Cycle finished: cancelled".into(),
                },
                EventKind::RunEnded {
                    key: RunKey::team("g"),
                    outcome: Some(CycleOutcome::Cancelled),
                    iterations: 1,
                    failed: None,
                    totals: None,
                },
            ] {
                run.records.push(RunRecord {
                    at,
                    event: event(kind),
                });
            }
            run
        };
        let names = || crate::describe::Names::team("team");
        let view = replay(&ended(0, 1), names(), true);
        assert_eq!(view.state_label(), "interrupted");
        assert!(view.interrupted && !view.cut_short);
        assert_eq!(replay(&ended(0, 1), names(), false).state_label(), "finished");
        assert_eq!(replay(&ended(0, 2), names(), true).state_label(), "finished");
    }

    /// A run read back after a crash: a sub-agent still running at the last event ran until
    /// then (not `interrupted 0.0s`), and the panel says the run was cut short, not `idle`
    /// (issue 28 item 16).
    #[test]
    fn a_run_cut_short_times_its_cards_by_the_recorded_events() {
        use crate::engine::events::ExecutionTag;
        use crate::model::ExecutionKind;
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let mut run = loaded(0, 1, at);
        run.records.push(RunRecord {
            at,
            event: EngineEvent {
                execution: Some(ExecutionTag {
                    execution_id: "exec-2".into(),
                    parent_execution_id: Some("exec-1".into()),
                }),
                ..event(EventKind::ExecutionStarted {
                    kind: ExecutionKind::SubAgent,
                    member: "log-analyzer".into(),
                    session_id: "s-log".into(),
                    task: "Look at the logs".into(),
                    queued: false,
                })
            },
        });
        run.records.push(RunRecord {
            at: at + chrono::Duration::seconds(5),
            event: event(EventKind::Notice {
                session_id: "s-log".into(),
                session: "log-analyzer".into(),
                text: "still reading".into(),
                message: None,
            }),
        });
        let view = replay(&run, crate::describe::Names::team("team"), false);
        let card = view.cards.get("exec-2").expect("the card");
        // Drawn later: the time stays that of the last event.
        let header = card.header(Instant::now() + Duration::from_secs(60));
        assert!(header.contains("5.0s"), "{header}");
        assert_eq!(view.state_label(), "cut short");
    }

    /// A reflect run's events: its start, then a turn of 100 tokens and an evaluation for each
    /// of `iterations` (from `first`), as a TUI opened next to it reads them back.
    fn reflect_events(first: u32, scores: &[f64], resumed: Option<ResumedCycle>) -> Vec<EngineEvent> {
        let mut kinds = vec![
            EventKind::RunStarted {
                key: RunKey::team("g"),
            },
            EventKind::CycleStarted {
                mode: Mode::OrchestratorReflect,
                max_iterations: 4,
            },
        ];
        kinds.extend(resumed.map(|cycle| EventKind::RunResumed {
            resumes: "run-0".into(),
            interrupted_at: None,
            reason: None,
            finished_turns: 0,
            cycle: Some(cycle),
        }));
        for (iteration, score) in (first..).zip(scores) {
            kinds.push(EventKind::TurnFinished {
                session_id: "s".into(),
                session: "worker".into(),
                generation: 1,
                success: true,
                interrupted: false,
                duration_ms: 10,
                usage: Some(Usage::new(60, 40)),
                cost_usd: None,
                error: None,
                message: None,
            });
            kinds.push(EventKind::Evaluation {
                iteration,
                score: *score,
                rationale: String::new(),
                trend: None,
                usage: Usage::new(60, 40),
                duration_ms: 10,
            });
        }
        kinds.into_iter().map(event).collect()
    }

    /// The cycle as saved now: active, `scores` evaluated (from iteration 1), 100 tokens each.
    fn saved_cycle(scores: &[f64]) -> ReflectionCycle {
        let mut usage = Usage::default();
        let evaluations = (1..)
            .zip(scores)
            .map(|(iteration, score)| {
                usage.add(Usage::new(60, 40));
                crate::model::Evaluation {
                    iteration,
                    score: *score,
                    rationale: String::new(),
                    evaluator_model: None,
                    at: Utc::now(),
                    trend: None,
                    usage: Usage::new(60, 40),
                    duration_ms: 10,
                    assigned: Vec::new(),
                }
            })
            .collect();
        ReflectionCycle {
            max_iterations: 4,
            iteration: u32::try_from(scores.len()).unwrap_or(0),
            completed_iterations: u32::try_from(scores.len()).unwrap_or(0),
            active: true,
            evaluations,
            usage,
            ..ReflectionCycle::default()
        }
    }

    fn follow_all(panel: &mut TeamPanel, events: &[EngineEvent], saved: &ReflectionCycle) {
        for e in events {
            panel.follow(
                e,
                Instant::now(),
                || Some(saved.clone()),
                || crate::describe::Names::team("team"),
            );
        }
    }

    /// Review 23 finding 1: a TUI opened next to a running reflect cycle (never interrupted)
    /// reads its events back while the saved cycle already holds their progress: the panel
    /// counts each score and token once, as the trace does, and says nothing of a resume.
    #[test]
    fn a_running_cycle_read_back_counts_each_score_once() {
        let events = reflect_events(1, &[0.6, 0.77], None);
        let mut panel = TeamPanel::default();
        follow_all(&mut panel, &events, &saved_cycle(&[0.6, 0.77]));
        let records: Vec<RunRecord> = events
            .iter()
            .map(|e| RunRecord {
                at: Utc::now(),
                event: e.clone(),
            })
            .collect();
        let trace = crate::trace::TraceBuilder::from_records(&records);
        let c = &panel.cycles["g"];
        let evaluations = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Evaluation { .. }))
            .count();
        assert_eq!(c.scores.len(), evaluations, "{:?}", c.scores);
        assert_eq!(c.scores, vec![0.6, 0.77]);
        assert_eq!(c.usage.total(), trace.run.tokens);
        assert_eq!(c.usage.total(), 200);
        assert!(!c.timeline.iter().any(|l| l.text.contains("resumed after")));
    }

    /// A resumed cycle read back: the iterations before it resumed come from its
    /// `run_resumed`, the later ones from its events (not from the saved cycle twice).
    #[test]
    fn a_resumed_cycle_read_back_counts_its_earlier_iterations_once() {
        let resumed = ResumedCycle {
            after: 1,
            usage: Usage::new(60, 40),
        };
        let events = reflect_events(2, &[0.77], Some(resumed));
        let mut panel = TeamPanel::default();
        follow_all(&mut panel, &events, &saved_cycle(&[0.6, 0.77]));
        let c = &panel.cycles["g"];
        assert_eq!(c.scores, vec![0.6, 0.77]);
        assert_eq!(c.usage.total(), 200);
        assert!(
            c.timeline
                .iter()
                .any(|l| l.text.contains("resumed after iteration 1/4"))
        );
    }
}
