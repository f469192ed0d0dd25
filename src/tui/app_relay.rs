//! Relays in the TUI: the draft popup opens when a draft waits for you (and again with the
//! relay key), its answers become `AnswerRelay` commands (an edit or a rejection note first
//! opens its text field), and while you have taken a relay over the composer's text goes to the
//! counterpart.

use crate::engine::events::{EngineEvent, EventKind};
use crate::model::{DraftAnswer, GroupId};

use super::app::App;
use super::command::Command;
use super::dialogs::{Dialog, RelayChoice, RelayDraftPopup, TextInput, TextPurpose};

impl App {
    /// Opens the popup of the selected relay: its waiting draft, or its take-over.
    pub(super) fn open_relay_draft(&mut self) {
        let Some(group_id) = self.selected_group_id() else {
            self.flash("select a relay team", true);
            return;
        };
        // On a pipeline team the same key shows or hides the whole phase history.
        if let Some(p) = self
            .team_panel
            .cycles
            .get_mut(&group_id)
            .and_then(|c| c.pipeline.as_mut())
        {
            p.expanded = !p.expanded;
            return;
        }
        match self.relay_popup(&group_id) {
            Some(popup) => self.dialogs.push(Dialog::RelayDraft(Box::new(popup))),
            None => self.flash("no relay draft waits for you here", true),
        }
    }

    fn relay_popup(&self, group_id: &str) -> Option<RelayDraftPopup> {
        let relay = self.team_panel.cycles.get(group_id)?.relay.as_ref()?;
        if !self.team_running(group_id) || !relay.waits_for_you() {
            return None;
        }
        let name = self
            .org
            .read(|o| {
                o.group(group_id)
                    .map(|g| crate::text::sanitize::display(&g.name).into_owned())
            })
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
    pub(super) fn relay_taken_over(&self, group_id: &str) -> bool {
        self.team_running(group_id)
            && self
                .team_panel
                .cycles
                .get(group_id)
                .and_then(|c| c.relay.as_ref())
                .is_some_and(|r| r.taken_over && !r.state.is_final())
    }

    /// The composer's placeholder on a running relay team: where its text goes. None when the
    /// group is no running relay.
    pub(super) fn relay_placeholder(&self, group_id: &str) -> Option<String> {
        let key = self.keymap.key_label(super::action::Action::RelayDraft);
        if self.relay_taken_over(group_id) {
            return Some(format!(
                "Your message to the counterpart (taken over; {key} hands back)…"
            ));
        }
        let relay = self.org.read(|o| {
            o.group(group_id)
                .map(|g| g.is_team() && g.mode == crate::model::Mode::Relay)
        });
        (relay == Some(true) && self.team_running(group_id))
            .then(|| format!("The relay is running ({key} answers a waiting draft)"))
    }

    /// The composer's text for a running relay: the user's own message while taken over;
    /// otherwise nothing is sent (a relay reads no queued messages) and the user is told why.
    /// None when the group is no running relay.
    pub(super) fn relay_send(&mut self, group_id: &str, text: &str) -> Option<Vec<Command>> {
        if self.relay_taken_over(group_id) {
            self.composer.send();
            self.flash("sent to the counterpart (yours)", false);
            return Some(vec![Command::AnswerRelay {
                group_id: group_id.to_string(),
                answer: DraftAnswer::Yours(text.to_string()),
            }]);
        }
        let relay = self.org.read(|o| o.group(group_id).map(|g| g.mode)) == Some(crate::model::Mode::Relay);
        if relay && self.team_running(group_id) {
            let key = self.keymap.key_label(super::action::Action::RelayDraft);
            self.flash(
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
    pub(super) fn follow_relay(&mut self, event: &EngineEvent) {
        let group_id = &event.group_id;
        let settled = matches!(
            &event.kind,
            EventKind::RelaySent { .. } | EventKind::RelayTakeOver { .. } | EventKind::RunEnded { .. }
        ) || matches!(&event.kind, EventKind::RelayState { state, .. } if state.is_final());
        if settled {
            self.dialogs
                .retain(|d| !matches!(d, Dialog::RelayDraft(p) if p.group_id == *group_id));
        }
        if let EventKind::RelayDraft { waiting: true, .. } = &event.kind
            && let Some(popup) = self.relay_popup(group_id)
        {
            // Under a dialog in use (a draft must not take keys meant for it).
            self.dialogs.retain(|d| !matches!(d, Dialog::RelayDraft(_)));
            self.dialogs.push_under(Dialog::RelayDraft(Box::new(popup)));
        }
    }

    /// An answer from the popup.
    pub(super) fn on_relay_choice(&mut self, group_id: GroupId, choice: RelayChoice) -> Vec<Command> {
        match choice {
            RelayChoice::Answer(answer) => vec![Command::AnswerRelay { group_id, answer }],
            RelayChoice::Edit(draft) => {
                self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
                    "Edit the draft (Ctrl-S sends it; Ctrl-O: in $EDITOR)",
                    TextPurpose::RelayEdit(group_id),
                    &draft,
                    true,
                ))));
                Vec::new()
            }
            RelayChoice::Note => {
                self.dialogs.push(Dialog::Text(Box::new(TextInput::new(
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
    pub(super) fn on_relay_text(&mut self, group_id: GroupId, text: String, edited: bool) -> Vec<Command> {
        let answer = if edited {
            if text.trim().is_empty() {
                self.flash("an empty draft is not sent; the draft still waits", true);
                return Vec::new();
            }
            DraftAnswer::Edit(text)
        } else {
            DraftAnswer::Reject(text)
        };
        vec![Command::AnswerRelay { group_id, answer }]
    }
}
