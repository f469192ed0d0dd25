//! The prune controller: removing what `huddle run` left behind from the TUI (`huddle runs
//! prune` when it is closed): the list of headless teams and one-shot sessions, a
//! confirmation, then the same deletions as the delete key (files off the UI thread; worktrees
//! holding work kept).

use super::{Cx, Then};
use crate::tui::command::Command;
use crate::tui::dialogs::ConfirmAction;
use crate::workspace::{Leftover, headless_leftovers};

/// At most this many are listed by name in the confirmation.
const LISTED: usize = 12;

/// Lists every headless leftover and asks before removing them.
pub fn open(cx: &mut Cx) {
    let leftovers = cx.org.read(|o| headless_leftovers(o, chrono::Utc::now()));
    if leftovers.is_empty() {
        cx.flash
            .say("nothing to prune: no team or session made by `huddle run`", false);
        return;
    }
    let mut text = format!(
        "Remove {} made by `huddle run`, with their transcripts and run files? Worktrees holding work are kept.\n",
        count(leftovers.len())
    );
    for l in leftovers.iter().take(LISTED) {
        let what = if l.is_group { "team" } else { "session" };
        text.push_str(&format!(
            "\n  {what} {} (last used {})",
            l.name,
            l.last_used.with_timezone(&chrono::Local).format("%b %d %H:%M")
        ));
    }
    if leftovers.len() > LISTED {
        text.push_str(&format!("\n  … and {} more", leftovers.len() - LISTED));
    }
    cx.dialogs.confirm(
        "Prune headless runs",
        text,
        ConfirmAction::PruneHeadless(leftovers),
    );
}

/// Removes what was confirmed; what is running now is kept and said.
pub fn confirmed(cx: &mut Cx, leftovers: Vec<Leftover>) -> Vec<Command> {
    let mut commands = Vec::new();
    let mut removed = 0;
    let mut kept = Vec::new();
    for l in leftovers {
        let removal = if l.is_group {
            cx.edits.delete_group(&l.id)
        } else {
            cx.edits.delete_session(&l.id)
        };
        match removal {
            Ok(removal) => {
                cx.then(Then::Forget {
                    group: removal.group.clone(),
                    sessions: removal.sessions.clone(),
                });
                commands.push(Command::RemoveFiles(removal));
                removed += 1;
            }
            Err(e) => kept.push(format!("{}: {e}", l.name)),
        }
    }
    cx.then(Then::SelectionChanged);
    if kept.is_empty() {
        cx.flash.say(format!("pruned {}", count(removed)), false);
    } else {
        cx.refuse(
            "Pruned in part",
            &format!("Removed {}. Kept:\n{}", count(removed), kept.join("\n")),
        );
    }
    commands
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 leftover".to_string()
    } else {
        format!("{n} leftovers")
    }
}
