//! A tool call as the transcript draws it: compact (name, one-line arguments, status,
//! duration, the result's first line) or expanded (the arguments as pretty JSON, then the whole
//! result). A cell is made from stored messages only (the assistant step that made the call,
//! the `tool` message with its result) plus, while the call has no result yet, what the events
//! said (running, waiting for approval): a restarted TUI draws the same cells from the
//! transcript as the live one drew. The argument formatting is shared with the approval popup.
//! Tools and models are untrusted: everything drawn here is sanitised.

use std::ops::Range;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::cycle_view::seconds;
use super::markdown::wrap_line_into;
use crate::model::{Message, ToolCall};
use crate::text::sanitize;
use crate::tools::approval::{DENIED_BY_USER, DENIED_HEADLESS, DENIED_OVER_MCP};

/// What the events said of a call that has no result yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolLive {
    Running,
    /// Waits for the user's answer in the approval popup.
    Waiting,
}

/// Where a call stands, as its cell says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Running,
    Waiting,
    Ok,
    Error,
    Denied,
    Cancelled,
    /// No result stored and none coming (huddle stopped during the call).
    NoResult,
}

impl ToolStatus {
    pub fn label(self) -> &'static str {
        match self {
            ToolStatus::Running => "running…",
            ToolStatus::Waiting => "waiting for approval",
            ToolStatus::Ok => "ok",
            ToolStatus::Error => "error",
            ToolStatus::Denied => "denied",
            ToolStatus::Cancelled => "cancelled",
            ToolStatus::NoResult => "no result",
        }
    }

    fn style(self) -> Style {
        match self {
            ToolStatus::Running => Style::default().fg(Color::Cyan),
            ToolStatus::Waiting => Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ToolStatus::Ok => Style::default().fg(Color::Green),
            ToolStatus::Error => Style::default().fg(Color::Red),
            ToolStatus::Denied | ToolStatus::Cancelled | ToolStatus::NoResult => {
                Style::default().fg(Color::Yellow)
            }
        }
    }
}

/// How the engine's tool loop answers a call a stop cut short.
const CANCELLED_PREFIX: &str = crate::tools::CANCELLED_RESULT;

/// Lines of pretty arguments an expanded cell shows (the rest is counted).
const ARGUMENT_LINES_MAX: usize = 200;

/// Indentation of an expanded cell's arguments and result.
const INDENT: &str = "    ";

/// One tool call of an assistant step, with its result once stored.
#[derive(Debug, Clone, Copy)]
pub struct ToolCell<'a> {
    pub call: &'a ToolCall,
    /// The `tool` message that answered it.
    pub result: Option<&'a Message>,
    /// For a call without a result: what the events of the turn going said.
    pub live: Option<ToolLive>,
    pub expanded: bool,
    /// The transcript's tool cursor is on it.
    pub selected: bool,
    /// The last call of its step: a blank line follows.
    pub last: bool,
}

impl<'a> ToolCell<'a> {
    pub fn status(&self) -> ToolStatus {
        let Some(m) = self.result else {
            return match self.live {
                Some(ToolLive::Running) => ToolStatus::Running,
                Some(ToolLive::Waiting) => ToolStatus::Waiting,
                None => ToolStatus::NoResult,
            };
        };
        if !m.tool_result.as_ref().is_some_and(|r| r.is_error) {
            ToolStatus::Ok
        } else if m.text.starts_with(DENIED_BY_USER)
            || m.text.starts_with(DENIED_HEADLESS)
            || m.text.starts_with(DENIED_OVER_MCP)
        {
            ToolStatus::Denied
        } else if m.text.starts_with(CANCELLED_PREFIX) {
            ToolStatus::Cancelled
        } else {
            ToolStatus::Error
        }
    }

    /// The text below the head: the whole result when expanded, else nothing.
    pub fn body(&self) -> &'a str {
        match self.result {
            Some(m) if self.expanded => &m.text,
            _ => "",
        }
    }

    /// The call's line (marker, name, arguments, status, duration), then when compact the
    /// result's first line, or when expanded the arguments in full and the result's heading.
    pub fn head(&self, width: u16) -> Vec<Line<'static>> {
        let width = width.max(1) as usize;
        let dim = Style::default().add_modifier(Modifier::DIM);
        let status = self.status();
        let (marker, marker_style) = match (self.selected, self.expanded) {
            (true, _) => ("▶ ", Style::default().add_modifier(Modifier::REVERSED)),
            (false, true) => ("▾ ", Style::default().fg(Color::Cyan)),
            (false, false) => ("⚙ ", Style::default().fg(Color::Cyan)),
        };
        let name = sanitize::display(&self.call.name).into_owned();
        // After the status: how long it took (and, expanded, how much it returned).
        let mut extra = String::new();
        if let Some(info) = self.result.and_then(|m| m.tool_result.as_ref()) {
            extra.push_str(&format!(" · {}", seconds(info.duration_ms)));
            if self.expanded {
                extra.push_str(&format!(" · {}", bytes(info.size)));
            }
        }
        let tail_width = " · ".width() + status.label().width() + extra.width();
        let mut spans = vec![
            Span::styled(marker, marker_style),
            Span::styled(name.clone(), Style::default().add_modifier(Modifier::BOLD)),
        ];
        if !self.expanded {
            // The arguments get what the line has left.
            let room = width.saturating_sub(marker.width() + name.width() + tail_width + 2);
            if room >= 8 {
                spans.push(Span::styled(
                    format!("  {}", fit(&one_line_arguments(&self.call.arguments), room)),
                    dim,
                ));
            }
        }
        spans.push(Span::styled(" · ", dim));
        spans.push(Span::styled(status.label(), status.style()));
        spans.push(Span::styled(extra, dim));
        let mut out = Vec::new();
        wrap_line_into(Line::from(spans), width, &mut out);
        if !self.expanded {
            if let Some(m) = self
                .result
                .filter(|_| matches!(status, ToolStatus::Ok | ToolStatus::Error))
            {
                // One line is cut from the result first: cleaning a large result whole for it would
                // cost a full pass per layout.
                let first =
                    sanitize::display(&crate::tools::limits::result_line(&m.text, width)).into_owned();
                if !first.is_empty() {
                    out.push(Line::styled(
                        format!("  ↳ {}", fit(&first, width.saturating_sub(4).max(1))),
                        dim,
                    ));
                }
            }
            return out;
        }
        out.push(Line::styled(format!("{}arguments:", &INDENT[2..]), dim));
        let pretty = pretty_arguments(&self.call.arguments);
        let total = pretty.lines().count();
        for line in pretty.lines().take(ARGUMENT_LINES_MAX) {
            wrap_line_into(Line::raw(format!("{INDENT}{line}")), width, &mut out);
        }
        if total > ARGUMENT_LINES_MAX {
            out.push(Line::styled(
                format!("{INDENT}… {} more line(s)", total - ARGUMENT_LINES_MAX),
                dim,
            ));
        }
        let heading = match self.result {
            Some(_) => "result:".to_string(),
            None => format!("result: none ({})", status.label()),
        };
        out.push(Line::styled(format!("{}{heading}", &INDENT[2..]), dim));
        out
    }

    /// After the cell: a blank line when it is expanded or ends its step's calls.
    pub fn foot(&self) -> Vec<Line<'static>> {
        if self.last || self.expanded {
            vec![Line::default()]
        } else {
            Vec::new()
        }
    }
}

/// Lines of an expanded result's piece (`text` is sanitised), indented and wrapped.
pub fn body_lines(text: &str, width: u16) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in text.lines() {
        wrap_line_into(
            Line::raw(format!("{INDENT}{line}")),
            width.max(1) as usize,
            &mut out,
        );
    }
    out
}

/// A result's pieces: cut after a newline once about `target` bytes are taken, so a long result
/// is laid out only where it is seen.
pub fn cut_lines(text: &str, target: usize) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while text.len() - start > target {
        let Some(nl) = text[start + target..].find('\n') else {
            break;
        };
        let end = start + target + nl + 1;
        pieces.push(start..end);
        start = end;
    }
    pieces.push(start..text.len());
    pieces
}

/// Raw arguments as pretty JSON (as they came when they are not JSON), safe to draw.
pub fn pretty_arguments(raw: &str) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_else(|_| raw.to_string()),
        Err(_) => raw.to_string(),
    };
    sanitize::display(&text).into_owned()
}

/// Raw arguments on one line (compact JSON; other text with its line breaks as spaces), safe
/// to draw.
pub fn one_line_arguments(raw: &str) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => v.to_string(),
        Err(_) => raw.to_string(),
    };
    sanitize::display(&text).replace('\n', " ")
}

/// `text` cut to at most `columns` display columns, the cut marked with `…`.
pub fn fit(text: &str, columns: usize) -> String {
    if text.width() <= columns {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > columns {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// A byte count for people.
fn bytes(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MB", n as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolResultInfo;

    fn call(arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "git__git_status".into(),
            arguments: arguments.into(),
        }
    }

    fn result(text: &str, is_error: bool) -> Message {
        Message::tool(
            text,
            ToolResultInfo {
                call_id: "c1".into(),
                name: "git__git_status".into(),
                is_error,
                duration_ms: 1500,
                size: 2048,
            },
        )
    }

    fn cell<'a>(call: &'a ToolCall, result: Option<&'a Message>) -> ToolCell<'a> {
        ToolCell {
            call,
            result,
            live: None,
            expanded: false,
            selected: false,
            last: true,
        }
    }

    fn text_of(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn the_status_comes_from_the_result_or_else_the_events() {
        let c = call("{}");
        let mut t = cell(&c, None);
        assert_eq!(t.status(), ToolStatus::NoResult);
        t.live = Some(ToolLive::Waiting);
        assert_eq!(t.status(), ToolStatus::Waiting);
        t.live = Some(ToolLive::Running);
        assert_eq!(t.status(), ToolStatus::Running);
        let cases = [
            (result("fine", false), ToolStatus::Ok),
            (result("boom", true), ToolStatus::Error),
            (result(DENIED_BY_USER, true), ToolStatus::Denied),
            (result(DENIED_HEADLESS, true), ToolStatus::Denied),
            (result(DENIED_OVER_MCP, true), ToolStatus::Denied),
            (
                result("cancelled: the run was stopped before this tool finished", true),
                ToolStatus::Cancelled,
            ),
        ];
        for (m, status) in &cases {
            assert_eq!(cell(&c, Some(m)).status(), *status, "{}", m.text);
        }
    }

    #[test]
    fn a_compact_cell_fits_its_line_and_an_expanded_one_shows_everything() {
        let c =
            call(r#"{"repo": ".", "long": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#);
        let r = result("On branch main\nnothing to commit", false);
        let compact = text_of(&cell(&c, Some(&r)).head(60));
        assert_eq!(compact.len(), 2, "{compact:?}");
        assert!(
            compact[0].starts_with("⚙ git__git_status  {\"long\""),
            "{compact:?}"
        );
        assert!(compact[0].ends_with("… · ok · 1.5s"), "{compact:?}");
        assert!(compact[0].width() <= 60);
        assert_eq!(compact[1], "  ↳ On branch main");
        let mut open = cell(&c, Some(&r));
        open.expanded = true;
        let head = text_of(&open.head(60));
        assert_eq!(head[0], "▾ git__git_status · ok · 1.5s · 2.0 KB");
        assert_eq!(head[1], "  arguments:");
        assert!(head.contains(&"      \"repo\": \".\"".to_string()), "{head:?}");
        assert_eq!(head.last().map(String::as_str), Some("  result:"));
        assert_eq!(open.body(), r.text);
        assert_eq!(
            text_of(&body_lines(&r.text, 60)),
            ["    On branch main", "    nothing to commit"]
        );
    }

    #[test]
    fn arguments_are_made_safe_to_draw() {
        let raw = "{\"cmd\": \"\\u001b[31mred\\u202e\"}";
        assert!(!pretty_arguments(raw).contains('\u{1b}'));
        assert!(!pretty_arguments(raw).contains('\u{202e}'));
        let not_json = "rm -rf /\x1b]0;title\x07\nnext";
        assert_eq!(one_line_arguments(not_json), "rm -rf / next");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
    }

    #[test]
    fn results_are_cut_after_newlines() {
        let text = "line\n".repeat(100);
        let pieces = cut_lines(&text, 64);
        assert!(pieces.len() > 5);
        assert!(pieces.iter().all(|r| text[r.clone()].ends_with('\n')));
        assert_eq!(pieces.last().map(|r| r.end), Some(text.len()));
        let whole = cut_lines("one line", 4);
        assert_eq!((whole.len(), whole[0].clone()), (1, 0..8));
    }
}
