//! The trace view: the tree of a team's run (executions nested under their parents, with
//! status, duration, tokens and the first line of each result; tool calls and broadcasts),
//! drawn over the centre of the screen, scrollable, closed with Esc.
//!
//! The trees come from the `trace` module's builder: the newest run of each team is built from
//! the live events as they come (or from its run file, once read off the UI thread with the
//! rest of the run), an earlier run being browsed from its file. The text of a tree is made
//! again only when the tree changed and the view is drawn: a frame costs the tree's size at
//! most, never the run's event count.

use std::collections::HashMap;

use chrono::Utc;
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use super::widgets::pane;
use crate::engine::events::{EngineEvent, EventKind, RunKey};
use crate::model::GroupId;
use crate::text::clip;
use crate::trace::{Trace, TraceBuilder};
use crate::workspace::LoadedRun;

/// A run's tree: still growing (the newest run, followed live) or read whole from its file.
#[derive(Debug)]
enum RunTrace {
    Live(Box<TraceBuilder>),
    Read(Box<Trace>),
}

impl RunTrace {
    fn trace(&self) -> &Trace {
        match self {
            RunTrace::Live(b) => b.trace(),
            RunTrace::Read(t) => t,
        }
    }
}

/// A tree and how many times it changed (the view's text is made again when that moves).
#[derive(Debug)]
struct Kept {
    trace: RunTrace,
    version: u64,
}

/// The trees of the teams' runs: each team's newest and, while one is browsed, an earlier one.
#[derive(Debug, Default)]
pub struct RunTraces {
    newest: HashMap<GroupId, Kept>,
    earlier: HashMap<GroupId, Kept>,
    /// Changes given out so far (a version is unique across trees).
    changes: u64,
}

impl RunTraces {
    fn next_version(&mut self) -> u64 {
        self.changes += 1;
        self.changes
    }

    /// One live event of a team: a new run starts a new tree, every other event grows it.
    pub fn follow(&mut self, event: &EngineEvent) {
        let version = self.next_version();
        let id: &str = &event.group_id;
        if let EventKind::RunStarted {
            key: RunKey::Team { .. },
        } = &event.kind
        {
            self.earlier.remove(id);
            self.newest.insert(
                id.to_string(),
                Kept {
                    trace: RunTrace::Live(Box::default()),
                    version,
                },
            );
        }
        if let Some(Kept {
            trace: RunTrace::Live(builder),
            version: v,
        }) = self.newest.get_mut(id)
        {
            builder.apply(event, Utc::now());
            *v = version;
        }
    }

    /// A run file read back (off the UI thread): the newest run's tree, unless a live run has
    /// begun meanwhile (`live`), or an earlier run's while it is browsed.
    pub fn on_run_loaded(&mut self, group_id: &str, loaded: &LoadedRun, live: bool) {
        let earlier = loaded.index + 1 < loaded.total;
        if live && !earlier {
            return;
        }
        let mut builder = TraceBuilder::new();
        for r in &loaded.records {
            builder.apply(&r.event, r.at);
        }
        for _ in 0..loaded.skipped {
            builder.skip_line();
        }
        let kept = Kept {
            trace: RunTrace::Read(Box::new(builder.finish())),
            version: self.next_version(),
        };
        if earlier {
            self.earlier.insert(group_id.to_string(), kept);
        } else {
            self.earlier.remove(group_id);
            self.newest.insert(group_id.to_string(), kept);
        }
    }

    /// Back on the newest run: the earlier one's tree goes.
    pub fn show_newest(&mut self, group_id: &str) {
        self.earlier.remove(group_id);
    }

    pub fn forget(&mut self, group_id: &str) {
        self.newest.remove(group_id);
        self.earlier.remove(group_id);
    }

    /// The tree of the run shown (an earlier one while `browsing`) and its version.
    fn shown(&self, group_id: &str, browsing: bool) -> Option<(&Trace, u64)> {
        let kept = if browsing {
            self.earlier.get(group_id)
        } else {
            self.newest.get(group_id)
        }?;
        Some((kept.trace.trace(), kept.version))
    }
}

/// The open trace view: which team, how far scrolled, the text of the tree last drawn.
#[derive(Debug)]
pub struct TraceView {
    pub group_id: GroupId,
    /// Lines from the top.
    pub scroll: usize,
    /// The tree's lines and the version they were made from.
    text: Option<(u64, Vec<String>)>,
    /// The window's height in the last frame (a page).
    height: usize,
    /// An earlier run is shown (not the newest).
    browsing: bool,
}

/// What a key did to the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceKey {
    Stay,
    Close,
}

impl TraceView {
    pub fn new(group_id: GroupId) -> TraceView {
        TraceView {
            group_id,
            scroll: 0,
            text: None,
            height: 10,
            browsing: false,
        }
    }

    /// Scrolls with the arrows, j/k, the page keys, g/G/Home/End; Esc or q closes. Other keys
    /// do nothing while it is open.
    pub fn handle_key(&mut self, key: &KeyEvent) -> TraceKey {
        let page = self.height.saturating_sub(1).max(1);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return TraceKey::Close,
            KeyCode::Down | KeyCode::Char('j') => self.scroll = self.scroll.saturating_add(1),
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll = self.scroll.saturating_add(page),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(page),
            KeyCode::Home | KeyCode::Char('g') => self.scroll = 0,
            KeyCode::End | KeyCode::Char('G') => self.scroll = usize::MAX,
            _ => {}
        }
        TraceKey::Stay
    }

    /// Before a frame: the tree of the run shown (an earlier one while `browsing`) as text,
    /// made again only when it changed, and the scroll kept in it for a window `area`.
    pub fn prepare(&mut self, traces: &RunTraces, browsing: bool, area: Rect) {
        self.browsing = browsing;
        match traces.shown(&self.group_id, browsing) {
            Some((trace, version)) => {
                if self.text.as_ref().is_none_or(|(v, _)| *v != version) {
                    self.text = Some((version, tree_lines(trace)));
                }
            }
            None => self.text = None,
        }
        // Inside the border.
        self.height = area.height.saturating_sub(2) as usize;
        let count = self.text.as_ref().map_or(0, |(_, l)| l.len());
        self.scroll = self.scroll.min(count.saturating_sub(self.height));
    }

    /// Draws the tree over `area`: only the lines in view are cut, styled and drawn.
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, team: &str) {
        frame.render_widget(Clear, area);
        let which = if self.browsing {
            "earlier run"
        } else {
            "newest run"
        };
        let block = pane(
            format!(
                " Trace · {} · {which} · j/k PgUp/PgDn scroll · Esc closes ",
                crate::text::sanitize::display(team)
            ),
            true,
        );
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let lines = self.text.as_ref().map_or(&[][..], |(_, l)| &l[..]);
        if lines.is_empty() {
            let text = "No run to trace yet: the team's newest run, or the one browsed with the run keys, shows here.";
            frame.render_widget(
                Paragraph::new(text).wrap(ratatui::widgets::Wrap { trim: true }),
                inner,
            );
            return;
        }
        let width = inner.width as usize;
        let shown: Vec<Line<'_>> = lines
            .iter()
            .enumerate()
            .skip(self.scroll)
            .take(inner.height as usize)
            .map(|(i, l)| {
                let style = if i == 0 {
                    Style::default().add_modifier(Modifier::BOLD)
                } else {
                    line_style(l)
                };
                Line::styled(clip(l, width), style)
            })
            .collect();
        frame.render_widget(Paragraph::new(shown), inner);
    }
}

/// The tree as lines (the `trace` module's text: untrusted text already made safe).
fn tree_lines(trace: &Trace) -> Vec<String> {
    crate::trace::render::text(trace)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Failures red, what was cut short yellow, a running node cyan.
fn line_style(line: &str) -> Style {
    use ratatui::style::Color;
    let has = |w: &str| line.contains(&format!(" {w}"));
    if has("failed") || has("timed_out") {
        Style::default().fg(Color::Red)
    } else if has("cancelled") || has("interrupted") {
        Style::default().fg(Color::Yellow)
    } else if has("running") || has("queued") {
        Style::default().fg(Color::Cyan)
    } else {
        Style::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::{ExecutionTag, RunRecord};
    use crate::model::{ExecutionKind, ExecutionStatus};

    fn ev(exec: Option<&str>, kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "g".into(),
            group: "Team".into(),
            run_id: Some("r1".into()),
            execution: exec.map(|id| ExecutionTag {
                execution_id: id.into(),
                parent_execution_id: (id != "exec-1").then(|| "exec-1".into()),
            }),
            kind,
        }
    }

    fn started(kind: ExecutionKind, member: &str) -> EventKind {
        EventKind::ExecutionStarted {
            kind,
            member: member.into(),
            session_id: format!("s-{member}"),
            task: format!("task of {member}"),
            queued: false,
        }
    }

    #[test]
    fn a_live_run_grows_its_tree_and_a_new_run_starts_another() {
        let mut traces = RunTraces::default();
        traces.follow(&ev(
            None,
            EventKind::RunStarted {
                key: RunKey::team("g"),
            },
        ));
        traces.follow(&ev(Some("exec-1"), started(ExecutionKind::Orchestrator, "lead")));
        let (_, v1) = traces.shown("g", false).expect("a tree");
        traces.follow(&ev(Some("exec-2"), started(ExecutionKind::SubAgent, "logs")));
        let (trace, v2) = traces.shown("g", false).expect("a tree");
        assert_ne!(v1, v2, "a change moves the version");
        let lines = tree_lines(trace);
        assert!(
            lines.iter().any(|l| l.contains("exec-2 logs · running")),
            "{lines:?}"
        );
        traces.follow(&ev(
            None,
            EventKind::RunStarted {
                key: RunKey::team("g"),
            },
        ));
        let (trace, _) = traces.shown("g", false).expect("a tree");
        assert!(trace.nodes.is_empty(), "a new run, a new tree");
        assert!(traces.shown("g", true).is_none());
    }

    #[test]
    fn a_run_read_from_its_file_is_closed_and_an_earlier_one_kept_apart() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let records = vec![
            RunRecord {
                at,
                event: ev(
                    None,
                    EventKind::RunStarted {
                        key: RunKey::team("g"),
                    },
                ),
            },
            RunRecord {
                at,
                event: ev(Some("exec-1"), started(ExecutionKind::Orchestrator, "lead")),
            },
            RunRecord {
                at,
                event: ev(
                    Some("exec-2"),
                    EventKind::ExecutionFinished {
                        kind: ExecutionKind::SubAgent,
                        member: "logs".into(),
                        status: ExecutionStatus::Completed,
                        duration_ms: 1500,
                        tokens: 90,
                        tool_calls: 0,
                        result: Some("found it".into()),
                        error: None,
                        cost_usd: None,
                    },
                ),
            },
        ];
        let loaded = |index, total| LoadedRun {
            run_id: "r1".into(),
            records: records.clone(),
            index,
            total,
            skipped: 0,
        };
        let mut traces = RunTraces::default();
        traces.on_run_loaded("g", &loaded(0, 2), false);
        let (trace, _) = traces.shown("g", true).expect("the earlier run");
        assert!(
            trace.nodes.iter().all(|n| n.exec.status.is_finished()),
            "read to its end: {trace:?}"
        );
        assert!(traces.shown("g", false).is_none());
        traces.on_run_loaded("g", &loaded(1, 2), true);
        assert!(
            traces.shown("g", false).is_none(),
            "a live run wins over its file"
        );
        traces.on_run_loaded("g", &loaded(1, 2), false);
        assert!(traces.shown("g", false).is_some());
        assert!(traces.shown("g", true).is_none(), "back on the newest");
    }

    /// The trace view of a run read back from its file (recorded on the sim), drawn where the
    /// centre pane and the cycle panel are.
    #[test]
    fn snapshot_runs_read_back() {
        use crate::tui::test_screen::{WIDTHS, draw, events};
        for (name, team, fixture) in [
            (
                "dispatch",
                "Incident Investigation",
                include_str!("../../tests/fixtures/runs/dispatch.ndjson"),
            ),
            (
                "team",
                "Deliberation Panel",
                include_str!("../../tests/fixtures/runs/team.ndjson"),
            ),
        ] {
            let start = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
            let records: Vec<RunRecord> = events(fixture)
                .into_iter()
                .enumerate()
                .map(|(i, event)| RunRecord {
                    at: start + chrono::Duration::milliseconds(700 * i as i64),
                    event,
                })
                .collect();
            let group_id = records[0].event.group_id.clone();
            let mut traces = RunTraces::default();
            traces.on_run_loaded(
                &group_id,
                &LoadedRun {
                    run_id: "run-1".into(),
                    records,
                    index: 0,
                    total: 1,
                    skipped: 0,
                },
                false,
            );
            for width in WIDTHS {
                let mut view = TraceView::new(group_id.to_string());
                let screen = draw(width, 24, |f| {
                    view.prepare(&traces, false, f.area());
                    view.render(f, f.area(), team);
                });
                insta::assert_snapshot!(format!("trace_{name}_{width}"), screen);
            }
        }
    }

    #[test]
    fn keys_scroll_and_close() {
        let mut view = TraceView::new("g".into());
        assert_eq!(
            view.handle_key(&KeyEvent::from(KeyCode::Char('j'))),
            TraceKey::Stay
        );
        assert_eq!(view.scroll, 1);
        view.handle_key(&KeyEvent::from(KeyCode::End));
        assert_eq!(view.scroll, usize::MAX);
        view.prepare(&RunTraces::default(), false, Rect::new(0, 0, 40, 10));
        assert_eq!(view.scroll, 0, "clamped to the text");
        view.handle_key(&KeyEvent::from(KeyCode::Home));
        assert_eq!(view.scroll, 0);
        assert_eq!(view.handle_key(&KeyEvent::from(KeyCode::Esc)), TraceKey::Close);
    }

    #[test]
    fn a_line_is_cut_to_the_width() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("exactly10!", 10), "exactly10!");
        assert_eq!(clip("a longer line", 6), "a lon…");
    }
}
