//! The relay controller: the draft popup opens when a draft waits for you (and again with the
//! relay key), its answers become `AnswerRelay` commands (an edit or a rejection note first
//! opens its text field), and while you have taken a relay over the composer's text goes to the
//! counterpart. A relay's state is its run's view in the team panel (`relay_view.rs`), read
//! here.

use super::{Cx, Then};
use crate::engine::events::{EngineEvent, EventKind};
use crate::model::{DraftAnswer, GroupId, Mode};
use crate::text::sanitize;
use crate::tui::action::Action;
use crate::tui::command::Command;
use crate::tui::dialogs::{Dialog, RelayChoice, RelayDraftPopup, TextInput, TextPurpose};
use crate::tui::runs::Runs;
use crate::tui::team_panel::TeamPanel;

/// The relay key: the popup of the selected relay (its waiting draft, or its take-over). On a
/// pipeline team the same key shows or hides the whole phase history.
pub fn open(cx: &mut Cx, panel: &mut TeamPanel) {
    let Some(group_id) = cx.selection().group.clone() else {
        cx.flash.say("select a relay team", true);
        return;
    };
    if let Some(p) = panel.cycles.get_mut(&group_id).and_then(|c| c.pipeline.as_mut()) {
        p.expanded = !p.expanded;
        return;
    }
    match popup(cx, panel, &group_id) {
        Some(popup) => cx.dialogs.push(Dialog::RelayDraft(Box::new(popup))),
        None => cx.flash.say("no relay draft waits for you here", true),
    }
}

fn popup(cx: &Cx, panel: &TeamPanel, group_id: &str) -> Option<RelayDraftPopup> {
    let relay = panel.cycles.get(group_id)?.relay.as_ref()?;
    // A relay another front end started asks there.
    if !cx.team_running(group_id)
        || !relay.waits_for_you()
        || cx.edits.group_asked_elsewhere(group_id).is_some()
    {
        return None;
    }
    let name = cx
        .org
        .read(|o| o.group(group_id).map(|g| sanitize::display(&g.name).into_owned()))
        .unwrap_or_default();
    Some(match &relay.draft {
        Some(d) if !relay.taken_over => RelayDraftPopup::draft(
            group_id.to_string(),
            name,
            d.turn,
            d.text.clone(),
            d.review.clone(),
        ),
        _ => RelayDraftPopup::taken_over(group_id.to_string(), name, relay.turn + 1),
    })
}

/// True while the user has taken the group's relay over (the composer writes to the
/// counterpart).
fn taken_over(runs: &Runs, panel: &TeamPanel, group_id: &str) -> bool {
    runs.team(group_id).is_some()
        && panel
            .cycles
            .get(group_id)
            .and_then(|c| c.relay.as_ref())
            .is_some_and(|r| r.taken_over && !r.state.is_final())
}

/// True when the group is a relay team whose run is going.
fn running_relay(cx: &Cx, group_id: &str) -> bool {
    let relay = cx.org.read(|o| {
        o.group(group_id)
            .is_some_and(|g| g.is_team() && g.mode == Mode::Relay)
    });
    relay && cx.team_running(group_id)
}

/// The composer's placeholder on a running relay team: where its text goes. None when the
/// group is no running relay.
pub fn placeholder(cx: &Cx, panel: &TeamPanel, group_id: &str) -> Option<String> {
    let key = cx.keymap.key_label(Action::RelayDraft);
    if taken_over(cx.runs, panel, group_id) {
        return Some(format!(
            "Your message to the counterpart (taken over; {key} hands back)…"
        ));
    }
    running_relay(cx, group_id).then(|| format!("The relay is running ({key} answers a waiting draft)"))
}

/// The composer's text for a running relay: the user's own message while taken over;
/// otherwise nothing is sent (a relay reads no queued messages) and the user is told why.
/// None when the group is no running relay.
pub fn send(cx: &mut Cx, panel: &TeamPanel, group_id: &str, text: &str) -> Option<Vec<Command>> {
    if taken_over(cx.runs, panel, group_id) {
        cx.then(Then::ComposerSent);
        cx.flash.say("sent to the counterpart (yours)", false);
        return Some(vec![Command::AnswerRelay {
            group_id: group_id.to_string(),
            answer: DraftAnswer::Yours(text.to_string()),
        }]);
    }
    if running_relay(cx, group_id) {
        let key = cx.keymap.key_label(Action::RelayDraft);
        cx.flash.say(
            format!(
                "the relay is running: {key} answers its draft (t there takes it over to write yourself)"
            ),
            true,
        );
        return Some(Vec::new());
    }
    None
}

/// A draft waiting for you opens its popup; a draft settled (sent, run over) closes it.
pub fn follow(cx: &mut Cx, panel: &TeamPanel, event: &EngineEvent) {
    let group_id: &str = &event.group_id;
    let settled = matches!(
        &event.kind,
        EventKind::RelaySent { .. } | EventKind::RelayTakeOver { .. } | EventKind::RunEnded { .. }
    ) || matches!(&event.kind, EventKind::RelayState { state, .. } if state.is_final());
    if settled {
        cx.dialogs
            .retain(|d| !matches!(d, Dialog::RelayDraft(p) if p.group_id == group_id));
    }
    if let EventKind::RelayDraft { waiting: true, .. } = &event.kind
        && let Some(front) = cx.edits.group_asked_elsewhere(group_id)
    {
        let name = cx
            .org
            .read(|o| o.group(group_id).map(|g| sanitize::display(&g.name).into_owned()))
            .unwrap_or_default();
        cx.flash.say(
            crate::describe::tools::draft_asked_elsewhere(&name, &front),
            false,
        );
        return;
    }
    if let EventKind::RelayDraft { waiting: true, .. } = &event.kind
        && let Some(popup) = popup(cx, panel, group_id)
    {
        // Under a dialog in use (a draft must not take keys meant for it).
        cx.dialogs.retain(|d| !matches!(d, Dialog::RelayDraft(_)));
        cx.dialogs.push_under(Dialog::RelayDraft(Box::new(popup)));
    }
}

/// An answer from the popup.
pub fn on_choice(cx: &mut Cx, group_id: GroupId, choice: RelayChoice) -> Vec<Command> {
    match choice {
        RelayChoice::Answer(answer) => vec![Command::AnswerRelay { group_id, answer }],
        RelayChoice::Edit(draft) => {
            cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
                "Edit the draft (Ctrl-S sends it; Ctrl-O: in $EDITOR)",
                TextPurpose::RelayEdit(group_id),
                &draft,
                true,
            ))));
            Vec::new()
        }
        RelayChoice::Note => {
            cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
                "Reject: a note for the driver",
                TextPurpose::RelayNote(group_id),
                "",
                false,
            ))));
            Vec::new()
        }
    }
}

/// The text of an edited draft or a rejection note.
pub fn on_text(cx: &mut Cx, group_id: GroupId, text: String, edited: bool) -> Vec<Command> {
    let answer = if edited {
        if text.trim().is_empty() {
            cx.flash
                .say("an empty draft is not sent; the draft still waits", true);
            return Vec::new();
        }
        DraftAnswer::Edit(text)
    } else {
        DraftAnswer::Reject(text)
    };
    vec![Command::AnswerRelay { group_id, answer }]
}
