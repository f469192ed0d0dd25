//! Telling the user when a run needs them (config.yaml `notify: bell | osc | off`): a team run
//! or a reflection finished or failed, or a tool call waits for approval. What to say is decided
//! by a pure function of the event; the bytes are written by the event loop between frames
//! (like OSC 52), never in the middle of one.

pub use crate::config::NotifyMode;
use crate::engine::events::{EngineEvent, EventKind, RunKey};
use crate::model::CycleOutcome;

/// One notification: a title and a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub title: String,
    pub body: String,
}

/// The notification an engine event calls for, if any: a team run or a reflection that ended
/// (not one the user stopped), a tool call waiting for approval, or a turn waiting for a rate
/// or usage limit.
pub fn decide(event: &EngineEvent) -> Option<Notification> {
    match &event.kind {
        EventKind::RunEnded {
            key, outcome, failed, ..
        } => {
            let what = match key {
                RunKey::Team { .. } => format!("team {}", event.group),
                RunKey::Reflection { .. } => "a reflection".to_string(),
                // A chat answer is seen where it was asked.
                RunKey::Chat { .. } => return None,
            };
            match (outcome, failed) {
                (_, Some(why)) => Some(Notification {
                    title: format!("huddle: {what} failed"),
                    body: why.clone(),
                }),
                (Some(CycleOutcome::Cancelled) | None, None) => None,
                (Some(o), None) => Some(Notification {
                    title: format!("huddle: {what} finished"),
                    body: o.to_string(),
                }),
            }
        }
        EventKind::ToolApprovalRequested {
            session,
            server,
            tool,
            ..
        } => Some(Notification {
            title: format!("huddle: {session} waits for you"),
            body: format!("approve or deny {server} {tool}"),
        }),
        // Not for the user to answer, but a long pause worth knowing of (the stop key ends it).
        EventKind::LimitWait {
            session,
            provider,
            until,
            ..
        } => Some(Notification {
            title: format!("huddle: {session} waits for a limit"),
            body: crate::describe::cycle::limit_wait_notice(provider, *until),
        }),
        _ => None,
    }
}

/// Which desktop-notification sequence the terminal understands, and whether tmux is between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalKind {
    /// OSC 777 (`notify;title;body`: foot, urxvt, Konsole...) rather than OSC 9 (iTerm2,
    /// WezTerm, Windows Terminal, ghostty, kitty).
    pub osc777: bool,
    /// Inside tmux: the OSC goes through its passthrough (`set -g allow-passthrough on`).
    pub tmux: bool,
}

impl TerminalKind {
    /// From the environment (`TERM`, `TERM_PROGRAM`, `TMUX`).
    pub fn detect(var: impl Fn(&str) -> Option<String>) -> TerminalKind {
        let term = var("TERM").unwrap_or_default().to_ascii_lowercase();
        let program = var("TERM_PROGRAM").unwrap_or_default().to_ascii_lowercase();
        let osc777 = ["foot", "rxvt", "konsole"]
            .iter()
            .any(|t| term.starts_with(t) || program.starts_with(t))
            || var("KONSOLE_VERSION").is_some();
        TerminalKind {
            osc777,
            tmux: var("TMUX").is_some_and(|v| !v.is_empty()),
        }
    }
}

/// Characters of a title or body kept in a notification.
const FIELD_MAX_CHARS: usize = 120;

/// Text safe inside an OSC string: no control characters (they could end it early or start
/// another sequence), no `;` (the OSC 777 field separator), one line, bounded.
fn field(text: &str) -> String {
    let one_line = crate::text::first_line(text, FIELD_MAX_CHARS);
    one_line
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| if c == ';' { ',' } else { c })
        .collect()
}

/// The bytes to write for `n` in `mode` to a terminal of `kind`.
pub fn sequence(mode: NotifyMode, n: &Notification, kind: TerminalKind) -> String {
    const BEL: &str = "\x07";
    match mode {
        NotifyMode::Off => String::new(),
        NotifyMode::Bell => BEL.to_string(),
        NotifyMode::Osc => {
            let (title, body) = (field(&n.title), field(&n.body));
            let osc = if kind.osc777 {
                format!("\x1b]777;notify;{title};{body}\x1b\\")
            } else {
                format!("\x1b]9;{title}: {body}\x1b\\")
            };
            let osc = if kind.tmux {
                // tmux hands a DCS passthrough's content to the outer terminal, ESCs doubled.
                format!("\x1bPtmux;{}\x1b\\", osc.replace('\x1b', "\x1b\x1b"))
            } else {
                osc
            };
            format!("{osc}{BEL}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind) -> EngineEvent {
        EngineEvent {
            group_id: "g".into(),
            group: "Review".into(),
            run_id: Some("r".into()),
            execution: None,
            kind,
        }
    }

    fn ended(key: RunKey, outcome: Option<CycleOutcome>, failed: Option<&str>) -> EngineEvent {
        event(EventKind::RunEnded {
            key,
            outcome,
            iterations: 1,
            failed: failed.map(str::to_string),
            totals: None,
        })
    }

    #[test]
    fn finished_and_failed_runs_and_waiting_approvals_notify() {
        let done = decide(&ended(RunKey::team("g"), Some(CycleOutcome::GoalMet), None)).unwrap();
        assert_eq!(done.title, "huddle: team Review finished");
        assert_eq!(done.body, "goal_met");
        let spent = decide(&ended(
            RunKey::team("g"),
            Some(CycleOutcome::BudgetExhausted),
            None,
        ));
        assert!(spent.is_some_and(|n| n.body == "budget_exhausted"));
        let failed = decide(&ended(RunKey::reflection("s"), None, Some("no provider"))).unwrap();
        assert_eq!(failed.title, "huddle: a reflection failed");
        assert_eq!(failed.body, "no provider");
        let asks = decide(&event(EventKind::ToolApprovalRequested {
            session_id: "s".into(),
            session: "review-fixer".into(),
            approval_id: 1,
            call_id: "c".into(),
            server: "git".into(),
            tool: "commit".into(),
            arguments: "{}".into(),
            reason: None,
        }))
        .unwrap();
        assert_eq!(asks.title, "huddle: review-fixer waits for you");
        let until = chrono::DateTime::parse_from_rfc3339("2026-11-28T14:05:00Z")
            .expect("a time")
            .with_timezone(&chrono::Utc);
        let waits = decide(&event(EventKind::LimitWait {
            session_id: "s".into(),
            session: "review-fixer".into(),
            provider: "anthropic".into(),
            until,
            wait_ms: 60_000,
            reason: "429".into(),
        }))
        .unwrap();
        assert_eq!(waits.title, "huddle: review-fixer waits for a limit");
        assert_eq!(
            waits.body,
            "waiting until 14:05 UTC for anthropic limit; the run goes on by itself then"
        );
    }

    #[test]
    fn stops_chats_and_progress_do_not_notify() {
        assert_eq!(
            decide(&ended(RunKey::team("g"), Some(CycleOutcome::Cancelled), None)),
            None
        );
        assert_eq!(
            decide(&ended(RunKey::chat("s"), Some(CycleOutcome::Completed), None)),
            None
        );
        assert_eq!(decide(&event(EventKind::CyclePaused)), None);
    }

    #[test]
    fn the_sequences_per_mode_and_terminal() {
        let n = Notification {
            title: "huddle: team X finished".into(),
            body: "goal_met; \x1b]52;c;evil\x07 done\nsecond line".into(),
        };
        let plain = TerminalKind {
            osc777: false,
            tmux: false,
        };
        assert_eq!(sequence(NotifyMode::Off, &n, plain), "");
        assert_eq!(sequence(NotifyMode::Bell, &n, plain), "\x07");
        let osc9 = sequence(NotifyMode::Osc, &n, plain);
        assert!(
            osc9.starts_with("\x1b]9;huddle: team X finished: goal_met,"),
            "{osc9:?}"
        );
        assert!(osc9.ends_with("\x1b\\\x07"));
        // Nothing from the text can end the sequence or start another.
        assert_eq!(osc9.matches('\x1b').count(), 2, "{osc9:?}");
        assert!(!osc9.contains("second line"));
        let foot = TerminalKind {
            osc777: true,
            tmux: false,
        };
        assert!(
            sequence(NotifyMode::Osc, &n, foot)
                .starts_with("\x1b]777;notify;huddle: team X finished;goal_met,")
        );
        let tmux = TerminalKind {
            osc777: false,
            tmux: true,
        };
        let wrapped = sequence(NotifyMode::Osc, &n, tmux);
        assert!(wrapped.starts_with("\x1bPtmux;\x1b\x1b]9;"), "{wrapped:?}");
        assert!(wrapped.ends_with("\x1b\x1b\\\x1b\\\x07"), "{wrapped:?}");
    }

    #[test]
    fn the_terminal_is_told_by_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(
            TerminalKind::detect(env(&[("TERM", "foot")])),
            TerminalKind {
                osc777: true,
                tmux: false
            }
        );
        assert_eq!(
            TerminalKind::detect(env(&[
                ("TERM", "tmux-256color"),
                ("TMUX", "/tmp/t,1,0"),
                ("TERM_PROGRAM", "tmux")
            ])),
            TerminalKind {
                osc777: false,
                tmux: true
            }
        );
    }
}
