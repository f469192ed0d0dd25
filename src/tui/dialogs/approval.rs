//! The tool approval popup: a call waits until the user answers. It shows which session asks
//! (and its group), the server, the tool and the arguments (pretty JSON, sanitised, scrolled
//! with ↑/↓ when long), and takes one of four answers:
//!
//! - `y`: approve once (not Enter: a popup can open while you type, and an Enter meant for
//!   the composer must never run a tool);
//! - `a`: approve this tool for this session (until huddle exits);
//! - `n` or Esc: deny (the safe default: Esc, like the quit key, never lets a call run);
//! - `s`: deny and stop the run the call belongs to.
//!
//! An agent that runs its own tools (an ACP agent) offers answers of its own: the popup lists
//! them by the agent's names, each beside the key that picks it (by its kind: `y` its
//! `allow_once`, `a` its `allow_always`, `n` and `s` its `reject_once`); a key whose approval
//! the agent does not offer does nothing, and a refusal it does not offer answers `cancelled`,
//! which allows nothing either. `a` on an agent's call approves for the session only the same
//! call again (its kind, title and input as shown), never every call of the kind it reports.
//!
//! Requests queue in one popup: the first is shown ("2 of 3"), the next after an answer. A
//! request settled elsewhere (its run stopped) leaves the queue; the popup closes when the
//! queue is empty.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Padding, Paragraph};

use super::{DialogResult, Outcome, centered, popup_block};
use crate::engine::events::{EngineEvent, EventKind};
use crate::model::SessionId;
use crate::text::sanitize;
use crate::tools::{AgentOption, Decision};
use crate::tui::markdown::wrap_line_into;
use crate::tui::tool_cell::pretty_arguments;

/// Argument lines laid out at most (a longer text is cut, with a note).
const ARGUMENT_LINES_MAX: usize = 2000;

/// One call waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub approval_id: u64,
    pub session_id: SessionId,
    /// The session's and its group's names (for display).
    pub session: String,
    pub group: String,
    /// The run the call belongs to.
    pub run_id: Option<String>,
    pub server: String,
    pub tool: String,
    /// The arguments as pretty JSON, sanitised (made once, when the request arrives).
    pub arguments: String,
    /// Why a hook asks for this call (sanitised), when a hook asked.
    pub reason: Option<String>,
    /// The answers an agent that asks offers (names sanitised); empty for huddle's own tools.
    pub options: Vec<AgentOption>,
}

impl ApprovalRequest {
    /// The request a `tool_approval_requested` event makes (None for other events).
    pub fn from_event(event: &EngineEvent) -> Option<ApprovalRequest> {
        let EventKind::ToolApprovalRequested {
            session_id,
            session,
            approval_id,
            server,
            tool,
            arguments,
            reason,
            options,
            ..
        } = &event.kind
        else {
            return None;
        };
        let clean = |s: &str| sanitize::display(s).into_owned();
        Some(ApprovalRequest {
            approval_id: *approval_id,
            session_id: session_id.clone(),
            session: clean(session),
            group: clean(&event.group),
            run_id: event.run_id.as_deref().map(str::to_string),
            server: clean(server),
            tool: clean(tool),
            arguments: pretty_arguments(arguments),
            reason: reason.as_deref().map(clean),
            options: options
                .iter()
                .map(|o| AgentOption {
                    id: o.id.clone(),
                    name: crate::text::first_line(&clean(&o.name), 60),
                    kind: o.kind.clone(),
                })
                .collect(),
        })
    }
}

/// The queue of requests and the popup showing its first.
#[derive(Debug)]
pub struct Approvals {
    queue: VecDeque<ApprovalRequest>,
    /// Answered since the popup opened (for "2 of 3").
    answered: usize,
    /// Argument lines scrolled past.
    scroll: usize,
}

impl Approvals {
    pub fn new(first: ApprovalRequest) -> Approvals {
        Approvals {
            queue: VecDeque::from([first]),
            answered: 0,
            scroll: 0,
        }
    }

    pub fn push(&mut self, request: ApprovalRequest) {
        self.queue.push_back(request);
    }

    /// The request shown.
    pub fn current(&self) -> Option<&ApprovalRequest> {
        self.queue.front()
    }

    /// Every request waiting, the shown one first.
    pub fn waiting(&self) -> impl Iterator<Item = &ApprovalRequest> {
        self.queue.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Which request is shown and of how many (1-based).
    pub fn position(&self) -> (usize, usize) {
        (self.answered + 1, self.answered + self.queue.len())
    }

    /// Drops the requests `settled` says were settled elsewhere; true when any was.
    pub fn settle(&mut self, settled: impl Fn(&ApprovalRequest) -> bool) -> bool {
        let before = self.queue.len();
        if self.queue.front().is_some_and(&settled) {
            self.scroll = 0;
        }
        self.queue.retain(|r| !settled(r));
        self.queue.len() != before
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return Outcome::Stay;
        }
        let decision = match key.code {
            KeyCode::Char('y' | 'Y') => Decision::ApproveOnce,
            KeyCode::Char('a' | 'A') => Decision::ApproveForSession,
            KeyCode::Char('n' | 'N') | KeyCode::Esc => Decision::Deny,
            KeyCode::Char('s' | 'S') => Decision::DenyAndStop,
            KeyCode::Down | KeyCode::Char('j') => return self.scroll_by(1),
            KeyCode::Up | KeyCode::Char('k') => return self.scroll_by(-1),
            KeyCode::PageDown => return self.scroll_by(10),
            KeyCode::PageUp => return self.scroll_by(-10),
            _ => return Outcome::Stay,
        };
        // An approval the asking agent does not offer is not an answer.
        if decision.approves()
            && self.current().is_some_and(|r| {
                !r.options.is_empty() && AgentOption::answering(decision, &r.options).is_none()
            })
        {
            return Outcome::Stay;
        }
        self.answer(decision)
    }

    /// The quit key on the popup: deny, as Esc does (a call never runs unanswered).
    pub fn on_close(&mut self) -> Outcome {
        self.answer(Decision::Deny)
    }

    fn scroll_by(&mut self, lines: isize) -> Outcome {
        // Clamped to the text when drawn.
        self.scroll = self.scroll.saturating_add_signed(lines);
        Outcome::Stay
    }

    /// Answers the request shown: the popup stays for the next one, or closes.
    fn answer(&mut self, decision: Decision) -> Outcome {
        let Some(request) = self.queue.pop_front() else {
            return Outcome::Close;
        };
        self.answered += 1;
        self.scroll = 0;
        let result = DialogResult::Approval {
            approval_id: request.approval_id,
            decision,
        };
        if self.queue.is_empty() {
            Outcome::Done(result)
        } else {
            Outcome::Reply(result)
        }
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let Some(r) = self.current() else {
            return;
        };
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = Style::default().add_modifier(Modifier::DIM);
        let width = 84u16.min(area.width);
        // Borders and padding take four columns.
        let inner = width.saturating_sub(4).max(1) as usize;
        let mut head = Vec::new();
        wrap_line_into(
            Line::from(vec![
                Span::styled(r.session.clone(), bold),
                Span::styled(format!(" ({})", r.group), dim),
                Span::raw(" wants to run a tool"),
            ]),
            inner,
            &mut head,
        );
        for (label, value) in [("server", &r.server), ("tool", &r.tool)] {
            wrap_line_into(
                Line::from(vec![
                    Span::styled(format!("{label:<7} "), dim),
                    Span::styled(value.clone(), bold),
                ]),
                inner,
                &mut head,
            );
        }
        if let Some(reason) = &r.reason {
            wrap_line_into(
                Line::from(vec![
                    Span::styled("hook    ".to_string(), dim),
                    Span::styled(reason.clone(), Style::default().fg(Color::Yellow)),
                ]),
                inner,
                &mut head,
            );
        }
        head.push(Line::styled("arguments:", dim));
        let mut arguments = Vec::new();
        for line in r.arguments.lines() {
            if arguments.len() >= ARGUMENT_LINES_MAX {
                break;
            }
            wrap_line_into(Line::raw(format!("  {line}")), inner, &mut arguments);
        }
        let keys = if r.options.is_empty() {
            vec![
                keys_line(&[
                    (&["y"], "approve once"),
                    (&["a"], "approve this tool for this session"),
                ]),
                keys_line(&[(&["n", "Esc"], "deny"), (&["s"], "deny and stop the run")]),
            ]
        } else {
            let mut keys = vec![Line::styled("the agent offers:", dim)];
            keys.extend(agent_keys(&r.options));
            keys
        };
        // Head, arguments, a note line, a blank line, the keys, the borders.
        let fixed = head.len() + 1 + 1 + keys.len() + 2;
        let room = (area.height as usize).saturating_sub(fixed).max(1);
        let total = arguments.len();
        let shown = total.min(room);
        let scroll = self.scroll.min(total - shown);
        let mut lines = head;
        lines.extend(arguments.into_iter().skip(scroll).take(shown));
        if shown < total {
            lines.push(Line::styled(
                format!(
                    "lines {}–{} of {}{} · ↑/↓ scroll",
                    scroll + 1,
                    scroll + shown,
                    total,
                    if total >= ARGUMENT_LINES_MAX { " (cut)" } else { "" }
                ),
                Style::default().fg(Color::Yellow),
            ));
        }
        lines.push(Line::default());
        lines.extend(keys);
        let (at, of) = self.position();
        let title = if of > 1 {
            format!("Tool approval · {at} of {of}")
        } else {
            "Tool approval".to_string()
        };
        let rect = centered(area, width, (lines.len() as u16).saturating_add(2));
        frame.render_widget(Clear, rect);
        frame.render_widget(
            Paragraph::new(lines).block(
                popup_block(&title)
                    .border_style(Style::default().fg(Color::Yellow))
                    .padding(Padding::horizontal(1)),
            ),
            rect,
        );
    }
}

/// One line per key that answers with one of the agent's options: the option's name, and what
/// huddle does besides (remembers the tool, stops the run). A key whose approval the agent does
/// not offer is left out; a refusal it does not offer is `cancelled`.
fn agent_keys(options: &[AgentOption]) -> Vec<Line<'static>> {
    let rows: [(&[&str], Decision, &str); 4] = [
        (&["y"], Decision::ApproveOnce, ""),
        (
            &["a"],
            Decision::ApproveForSession,
            " (and huddle allows this same call again for the session)",
        ),
        (&["n", "Esc"], Decision::Deny, ""),
        (&["s"], Decision::DenyAndStop, ", and stop the run"),
    ];
    rows.iter()
        .filter_map(|(keys, decision, besides)| {
            let name = match AgentOption::answering(*decision, options) {
                Some(o) => format!("\"{}\"", o.name),
                None if decision.approves() => return None,
                None => "cancel (the agent offers no refusal)".to_string(),
            };
            let pad = 6usize.saturating_sub(keys.join("/").chars().count());
            Some(keys_line(&[(
                *keys,
                &format!("{}{name}{besides}", " ".repeat(pad)),
            )]))
        })
        .collect()
}

/// The answers' keys (joined by `/`, in the key style) and what each does.
fn keys_line(answers: &[(&[&str], &str)]) -> Line<'static> {
    let key = Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let mut spans = Vec::new();
    for (i, (keys, what)) in answers.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw("   "));
        }
        for (j, k) in keys.iter().enumerate() {
            if j > 0 {
                spans.push(Span::raw("/"));
            }
            spans.push(Span::styled(k.to_string(), key));
        }
        spans.push(Span::raw(format!(" {what}")));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: u64) -> ApprovalRequest {
        request_with(id, Vec::new())
    }

    /// A request of the popup, made from its event (`options`: an agent's).
    fn request_with(id: u64, options: Vec<AgentOption>) -> ApprovalRequest {
        let event = EngineEvent {
            group_id: "g".into(),
            group: "Team".into(),
            run_id: None,
            execution: None,
            kind: EventKind::ToolApprovalRequested {
                session_id: format!("s{id}"),
                session: "dev".into(),
                approval_id: id,
                call_id: format!("c{id}"),
                server: "git".into(),
                tool: "git_status".into(),
                arguments: r#"{"repo":"."}"#.into(),
                reason: None,
                options,
            },
        };
        ApprovalRequest::from_event(&event).expect("a request")
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn answers_go_out_in_order_and_the_last_closes_the_popup() {
        let mut a = Approvals::new(request(1));
        a.push(request(2));
        assert_eq!(a.position(), (1, 2));
        assert_eq!(
            a.handle_key(&key(KeyCode::Char('a'))),
            Outcome::Reply(DialogResult::Approval {
                approval_id: 1,
                decision: Decision::ApproveForSession
            })
        );
        assert_eq!(a.position(), (2, 2));
        assert_eq!(
            a.handle_key(&KeyEvent::new(KeyCode::Char('y'), KeyModifiers::CONTROL)),
            Outcome::Stay
        );
        assert_eq!(a.handle_key(&key(KeyCode::Char('x'))), Outcome::Stay);
        assert_eq!(
            a.on_close(),
            Outcome::Done(DialogResult::Approval {
                approval_id: 2,
                decision: Decision::Deny
            })
        );
        assert!(a.is_empty());
    }

    /// The popup with two calls queued: the first a file write a hook asks about, whose
    /// arguments are long (and carry an escape sequence, drawn harmless), at 80 and 120
    /// columns.
    #[test]
    fn snapshot_the_popup() {
        use crate::tui::test_screen::{WIDTHS, draw};
        let call = |id: u64, server: &str, tool: &str, arguments: &str, reason: Option<&str>| {
            ApprovalRequest::from_event(&EngineEvent {
                group_id: "g".into(),
                group: "Incident Investigation".into(),
                run_id: Some("run-1".into()),
                execution: None,
                kind: EventKind::ToolApprovalRequested {
                    session_id: "s".into(),
                    session: "incident-investigation-log-analyzer".into(),
                    approval_id: id,
                    call_id: format!("c{id}"),
                    server: server.into(),
                    tool: tool.into(),
                    arguments: arguments.into(),
                    reason: reason.map(str::to_string),
                    options: Vec::new(),
                },
            })
            .expect("a request")
        };
        let mut popup = Approvals::new(call(
            1,
            "filesystem",
            "write_file",
            r##"{"path":"notes/expired-tokens.md","content":"# Expired tokens\n\nSince Tuesday 14:02 the login handler answers 401 for tokens refreshed less than a minute ago.\n\u001b[31mred\u001b[0m is gone: the clock skew check compares local time with UTC.\n\nNext: deploy 4f2c1a9 changed the check."}"##,
            Some("notes/ is reviewed by a person before anything is written there"),
        ));
        popup.push(call(
            2,
            "git",
            "git_log",
            r#"{"repo_path":".","max_count":20}"#,
            None,
        ));
        for width in WIDTHS {
            let screen = draw(width, 24, |f| popup.render(f, f.area()));
            insta::assert_snapshot!(format!("approval_{width}"), screen);
        }
    }

    /// An ACP agent's permission request: its options by name beside their keys; `y`, whose
    /// approval the agent does not offer here, does nothing; `a` picks its allow_always.
    #[test]
    fn an_agents_options_are_listed_by_their_keys() {
        use crate::tui::test_screen::draw;
        let option = |id: &str, name: &str, kind: &str| AgentOption {
            id: id.into(),
            name: name.into(),
            kind: kind.into(),
        };
        let mut popup = Approvals::new(request_with(
            7,
            vec![
                option("ok", "Always allow", "allow_always"),
                option("no", "Reject \u{1b}[31mthis", "reject_once"),
            ],
        ));
        let screen = draw(80, 24, |f| popup.render(f, f.area()));
        assert!(screen.contains("the agent offers:"), "{screen}");
        assert!(
            screen.contains("a      \"Always allow\" (and huddle allows this same call again"),
            "{screen}"
        );
        assert!(!screen.contains("y  "), "{screen}");
        assert!(screen.contains("n/Esc  \"Reject this\""), "{screen}");
        assert!(
            screen.contains("s      \"Reject this\", and stop the run"),
            "{screen}"
        );
        assert!(!screen.contains("approve once"), "{screen}");
        assert!(!screen.contains('\u{1b}'), "{screen}");
        assert_eq!(popup.handle_key(&key(KeyCode::Char('y'))), Outcome::Stay);
        assert_eq!(
            popup.handle_key(&key(KeyCode::Char('a'))),
            Outcome::Done(DialogResult::Approval {
                approval_id: 7,
                decision: Decision::ApproveForSession
            })
        );
    }

    #[test]
    fn settled_requests_leave_the_queue() {
        let mut a = Approvals::new(request(1));
        a.push(request(2));
        a.push(request(3));
        assert!(a.settle(|r| r.approval_id == 2));
        assert!(!a.settle(|r| r.approval_id == 9));
        assert_eq!(a.position(), (1, 2));
        assert!(a.settle(|r| r.approval_id == 1));
        assert_eq!(a.current().map(|r| r.approval_id), Some(3));
    }
}
