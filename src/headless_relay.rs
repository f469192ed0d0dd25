//! `huddle run` with a relay: which approval modes can run without the TUI (`full_auto`, or
//! any with `--approve` on a terminal), and the terminal prompt that answers each draft
//! (`y` send, `e` edit in `$VISUAL`/`$EDITOR`, `n` reject with a note).

use std::io::{BufRead, IsTerminal, Write};

use crate::cli::{OutputLine, RunOutput};
use crate::engine::Engine;
use crate::engine::events::{EngineEvent, EventKind};
use crate::model::{ApprovalMode, DraftAnswer, Mode};
use crate::text::sanitize;

/// Why a relay cannot run headless as asked, if it cannot. `terminal`: standard input and
/// standard error are a terminal.
pub fn check_approval(
    group: &str,
    approval: ApprovalMode,
    approve: bool,
    terminal: bool,
) -> Result<(), String> {
    match (approval, approve, terminal) {
        (ApprovalMode::FullAuto, _, _) | (_, true, true) => Ok(()),
        (_, true, false) => Err(format!(
            "--approve asks about each draft on a terminal, and standard input or standard error is not one; \
             run it in a terminal, or use --approval full_auto to send every draft of `{group}` unasked"
        )),
        (mode, false, _) => Err(format!(
            "`{group}` is a relay in {mode} approval: its drafts wait for a person. Add --approve to \
             answer each draft on this terminal (y send / e edit / n reject), or --approval full_auto \
             to send every draft unasked"
        )),
    }
}

/// Why a team made from `preset` could not run headless as a relay here, if it could not
/// (refused before its team is made). `mode`: the run's `--mode`.
pub fn check_preset(
    preset: &crate::model::Preset,
    mode: Option<Mode>,
    approval: Option<ApprovalMode>,
    approve: bool,
    terminal: bool,
) -> Result<(), String> {
    // Only a run as a relay has drafts to approve; its relay settings say how.
    if mode.unwrap_or(preset.mode) != Mode::Relay {
        return Ok(());
    }
    // Without settings (a repository's were ignored, say) it could not run: no team is made.
    let Some(relay) = &preset.relay else {
        return Err(format!(
            "`{}` runs as a relay and has no usable `relay:` settings (driver, counterpart), so it cannot run; no team was made",
            preset.name
        ));
    };
    check_approval(
        &preset.name,
        approval.unwrap_or(relay.approval),
        approve,
        terminal,
    )
}

/// The relay settings a headless run of this group would use: its approval mode, when it runs
/// as a relay.
pub fn relay_approval(
    org: &crate::model::Organization,
    group_id: &str,
    mode: Option<Mode>,
    approval: Option<ApprovalMode>,
) -> Option<(String, ApprovalMode)> {
    let group = org.group(group_id)?;
    if mode.unwrap_or(group.mode) != Mode::Relay {
        return None;
    }
    let settings = group.settings.relay.as_ref()?;
    Some((group.name.clone(), approval.unwrap_or(settings.approval)))
}

/// The group and the groups its relay talks to, and theirs in turn (a chain of relays): whose
/// events a run of the group shows.
pub fn with_counterparts(org: &crate::model::Organization, group_id: &str) -> Vec<String> {
    let mut found = vec![group_id.to_string()];
    let mut at = 0;
    while at < found.len() {
        let next = org
            .group(&found[at])
            .and_then(|g| g.settings.relay.as_ref())
            .and_then(|r| org.group_by_name(&r.counterpart))
            .map(|g| g.id.clone());
        if let Some(id) = next.filter(|id| !found.contains(id)) {
            found.push(id);
        }
        at += 1;
    }
    found
}

/// True when standard input and standard error are a terminal (where `--approve` asks).
pub fn on_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// Who answers drafts that wait in `huddle run`.
pub struct Approver {
    pub engine: Engine,
    /// `--approve` on a terminal: ask the person there.
    pub ask: bool,
    /// Where the run's output goes: this terminal, or the front end's (which then asks).
    pub out: RunOutput,
}

impl Approver {
    /// Answers a draft that waits: asks on the terminal (a front end of the host asks on its
    /// own and answers through the host), or, with nobody to ask (a relay in manual approval
    /// behind a full_auto one), stops that relay's run and says why.
    pub async fn answer(&self, event: &EngineEvent) {
        if self.ask {
            match (&self.out, &event.kind) {
                (RunOutput::Terminal, _) => answer_draft(&self.engine, event, &self.out).await,
                (
                    RunOutput::Remote(_),
                    EventKind::RelayDraft {
                        turn, text, review, ..
                    },
                ) => {
                    let asked = self.out.tell(OutputLine::Draft {
                        group_id: event.group_id.to_string(),
                        turn: *turn,
                        text: text.clone(),
                        review: review.clone(),
                    });
                    if !asked {
                        self.engine
                            .stop(&crate::engine::events::RunKey::team(event.group_id.to_string()));
                    }
                }
                _ => {}
            }
            return;
        }
        self.out.note(format_args!(
            "huddle: a draft of relay `{}` waits for a person and nobody can answer it here \
             (use --approve on a terminal): stopping that relay",
            sanitize::display(&event.group)
        ));
        self.engine
            .stop(&crate::engine::events::RunKey::team(event.group_id.to_string()));
    }
}

/// Answers a draft that waits, asking on the terminal (off the async threads). Returns when
/// answered; a closed standard input stops the relay.
async fn answer_draft(engine: &Engine, event: &EngineEvent, out: &RunOutput) {
    let EventKind::RelayDraft {
        turn,
        text,
        waiting: true,
        review,
        ..
    } = &event.kind
    else {
        return;
    };
    let (turn, text, review) = (*turn, text.clone(), review.clone());
    let asked = tokio::task::spawn_blocking(move || ask(turn, &text, review.as_deref())).await;
    match asked {
        Ok(Some(answer)) => {
            engine.answer_relay(&event.group_id, answer);
        }
        _ => {
            out.note(format_args!(
                "huddle: no answer (standard input closed): stopping the relay"
            ));
            engine.stop(&crate::engine::events::RunKey::team(event.group_id.to_string()));
        }
    }
}

/// Asks y / e / n about one draft on stdin and stderr; None when stdin ends. A front end of the
/// host calls it for the drafts it is sent.
pub fn ask(turn: u32, draft: &str, review: Option<&str>) -> Option<DraftAnswer> {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "── relay draft for turn {turn} waits for you ({})\n{}\n──",
        review.unwrap_or("manual approval"),
        sanitize::display(draft.trim_end())
    );
    let stdin = std::io::stdin();
    let mut lines = stdin.lock();
    loop {
        let _ = write!(
            err,
            "send it? [y] send  [e] edit in your editor  [n] reject with a note: "
        );
        let _ = err.flush();
        let line = read_line(&mut lines)?;
        match line.trim() {
            "y" | "Y" | "yes" => return Some(DraftAnswer::Approve),
            "e" | "E" => match edit(draft) {
                Ok(edited) if !edited.trim().is_empty() => return Some(DraftAnswer::Edit(edited)),
                Ok(_) => {
                    let _ = writeln!(err, "the edited draft is empty; it is not sent");
                }
                Err(e) => {
                    let _ = writeln!(err, "the editor did not work: {e}");
                }
            },
            "n" | "N" | "no" => {
                let _ = write!(err, "note for the driver: ");
                let _ = err.flush();
                let note = read_line(&mut lines)?;
                return Some(DraftAnswer::Reject(note.trim().to_string()));
            }
            _ => {}
        }
    }
}

fn read_line(input: &mut impl BufRead) -> Option<String> {
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
    }
}

/// Opens the draft in `$VISUAL` or `$EDITOR` (else `vi`) and returns what was saved. The file
/// is private (0600) and removed afterwards.
fn edit(draft: &str) -> Result<String, String> {
    let editor = std::env::var("VISUAL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| std::env::var("EDITOR").ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_string());
    let mut parts = editor.split_whitespace();
    let program = parts.next().ok_or("no editor set")?.to_string();
    let args: Vec<String> = parts.map(str::to_string).collect();
    let path = std::env::temp_dir().join(format!(
        "huddle-relay-draft-{}-{:08x}.md",
        std::process::id(),
        fastrand::u32(..)
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&path)
        .and_then(|mut f| f.write_all(draft.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()));
    let result = written.and_then(|()| {
        let status = std::process::Command::new(&program)
            .args(&args)
            .arg(&path)
            .status()
            .map_err(|e| format!("cannot run `{program}`: {e}"))?;
        if !status.success() {
            return Err(format!("`{program}` exited with {status}"));
        }
        std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    });
    let _ = std::fs::remove_file(&path);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headless_needs_full_auto_or_approve_on_a_terminal() {
        assert!(check_approval("n", ApprovalMode::FullAuto, false, false).is_ok());
        assert!(check_approval("n", ApprovalMode::Manual, true, true).is_ok());
        let e = check_approval("n", ApprovalMode::Manual, false, true).unwrap_err();
        assert!(e.contains("manual approval") && e.contains("--approve"), "{e}");
        let e = check_approval("n", ApprovalMode::SemiAuto, true, false).unwrap_err();
        assert!(e.contains("not one"), "{e}");
        let e = check_approval("n", ApprovalMode::SemiAuto, false, false).unwrap_err();
        assert!(e.contains("semi_auto"), "{e}");
    }

    /// A preset run as a relay without relay settings (a repository's were ignored) is refused
    /// before its team is made; run in another mode it needs none.
    #[test]
    fn a_relay_without_settings_is_refused_before_its_team_is_made() {
        let preset = crate::model::Preset {
            name: "Pushy".into(),
            mode: Mode::Relay,
            ..Default::default()
        };
        let e = check_preset(&preset, None, Some(ApprovalMode::FullAuto), false, false).unwrap_err();
        assert!(
            e.contains("no usable `relay:` settings") && e.contains("no team was made"),
            "{e}"
        );
        assert!(check_preset(&preset, Some(Mode::Broadcast), None, false, false).is_ok());
    }
}
