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
    let text = confirmation(&leftovers, |at| {
        at.with_timezone(&chrono::Local).format("%b %d %H:%M").to_string()
    });
    cx.dialogs.confirm(
        "Remove what `huddle run` made",
        text,
        ConfirmAction::PruneHeadless(leftovers),
    );
}

/// The question: how many teams and sessions, what goes with them, and each by name (with
/// when it was last used where its name does not say it already). `when` words a time.
fn confirmation(leftovers: &[Leftover], when: impl Fn(&chrono::DateTime<chrono::Utc>) -> String) -> String {
    let counted = count(leftovers.iter().map(|l| l.is_group));
    // `the team`, `the 2 teams`.
    let what = match (leftovers.len(), counted.strip_prefix("1 ")) {
        (1, Some(one)) => one.to_string(),
        _ => counted,
    };
    let mut text = format!(
        "Remove the {what} `huddle run` made, with their transcripts and run files? Worktrees holding work are kept.\n"
    );
    for l in leftovers.iter().take(LISTED) {
        let what = if l.is_group { "team" } else { "session" };
        let used = when(&l.last_used);
        text.push_str(&format!("\n  {what} {}", l.name));
        if !l.name.contains(&used) {
            text.push_str(&format!(", last used {used}"));
        }
    }
    if leftovers.len() > LISTED {
        text.push_str(&format!("\n  … and {} more", leftovers.len() - LISTED));
    }
    text
}

/// Removes what was confirmed; what is running now is kept and said.
pub fn confirmed(cx: &mut Cx, leftovers: Vec<Leftover>) -> Vec<Command> {
    let mut commands = Vec::new();
    let mut removed = Vec::new();
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
                removed.push(l.is_group);
            }
            Err(e) => kept.push(format!("{}: {e}", l.name)),
        }
    }
    cx.then(Then::SelectionChanged);
    let removed = count(removed.into_iter());
    if kept.is_empty() {
        cx.flash
            .say(format!("removed {removed} made by `huddle run`"), false);
    } else {
        cx.refuse(
            "Removed in part",
            &format!("Removed {removed}. Kept:\n{}", kept.join("\n")),
        );
    }
    commands
}

/// `2 teams`, `1 team and 3 sessions`, `1 session`, `nothing` (one bool a leftover: a team).
fn count(teams: impl Iterator<Item = bool>) -> String {
    let (mut t, mut s) = (0, 0);
    for team in teams {
        if team { t += 1 } else { s += 1 }
    }
    let word = |n: usize, one: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {one}s"),
    };
    match (t, s) {
        (0, 0) => "nothing".to_string(),
        (t, 0) => word(t, "team"),
        (0, s) => word(s, "session"),
        (t, s) => format!("{} and {}", word(t, "team"), word(s, "session")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftover(name: &str, is_group: bool) -> Leftover {
        Leftover {
            id: name.into(),
            name: name.into(),
            is_group,
            last_used: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
        }
    }

    /// Issue 28 item 18: the prune dialog said "Remove 2 leftovers", and each team's time
    /// twice (`team Research Panel · run Nov 28 06:07 (last used Nov 28 06:07)`).
    #[test]
    fn the_question_counts_teams_and_sessions_and_says_each_time_once() {
        let when = |_: &chrono::DateTime<chrono::Utc>| "Jan 15 08:00".to_string();
        let text = confirmation(
            &[
                leftover("Research Panel · run Jan 15 08:00", true),
                leftover("run-7f3a", false),
            ],
            when,
        );
        assert!(
            text.starts_with("Remove the 1 team and 1 session `huddle run` made, with their transcripts"),
            "{text}"
        );
        assert!(
            text.contains("\n  team Research Panel · run Jan 15 08:00\n"),
            "{text}"
        );
        assert!(
            text.ends_with("\n  session run-7f3a, last used Jan 15 08:00"),
            "{text}"
        );
        assert!(!text.contains("leftover"), "{text}");
        let one = confirmation(&[leftover("run-7f3a", false)], when);
        assert!(one.starts_with("Remove the session `huddle run` made"), "{one}");
        assert_eq!(count([true, true].into_iter()), "2 teams");
        assert_eq!(count([false].into_iter()), "1 session");
    }
}
