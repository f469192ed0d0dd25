//! What the app does for the text the user types and must not lose: the draft of each session
//! and team, Ctrl-C clearing a non-empty composer before it quits, `$EDITOR` for the composer
//! and the system prompt editor, and the drafts and history of earlier runs coming back.

use crossterm::event::KeyEvent;

use super::action::{Action, Context};
use super::app::{App, Focus};
use super::command::{Command, EditorTarget};
use super::dialogs::Dialog;

impl App {
    /// The quit key in a composer holding text empties it instead (a second press quits). The
    /// text can be brought back with the textarea's yank key.
    pub(super) fn clear_composer_instead_of_quitting(&mut self) -> bool {
        if self.focus != Focus::Composer || self.composer.is_empty() {
            return false;
        }
        self.composer.clear();
        let quit = self.keymap.key_label(Action::Quit);
        self.flash(
            format!("cleared (Ctrl-Y brings it back, Ctrl-Z undoes); {quit} again quits"),
            false,
        );
        true
    }

    /// The editor key on the composer.
    pub(super) fn open_editor_for_composer(&mut self) -> Vec<Command> {
        vec![Command::OpenEditor {
            target: EditorTarget::Composer,
            text: self.composer.text(),
        }]
    }

    /// The editor key on a multi-line text dialog (the system prompt): its text to `$EDITOR`.
    /// None when the key is not the editor key or no such dialog is on top.
    pub(super) fn open_editor_for_dialog(&mut self, key: &KeyEvent) -> Option<Vec<Command>> {
        let is_editor_key = self
            .keymap
            .keys_of(Context::Composer, Action::OpenEditor)
            .iter()
            .any(|k| k.matches(key));
        match self.dialogs.last() {
            Some(Dialog::Text(input)) if is_editor_key && input.multiline => {
                Some(vec![Command::OpenEditor {
                    target: EditorTarget::Dialog(input.purpose.clone()),
                    text: input.text(),
                }])
            }
            _ => None,
        }
    }

    /// The text back from `$EDITOR` replaces the one it was made from; an error leaves it as it
    /// was and says why.
    pub(super) fn on_edited(&mut self, target: EditorTarget, result: Result<String, String>) {
        let text = match result {
            Ok(text) => text,
            Err(e) => {
                self.flash(e, true);
                return;
            }
        };
        match target {
            EditorTarget::Composer => {
                self.composer.replace_text(&text);
                self.focus = Focus::Composer;
            }
            EditorTarget::Dialog(purpose) => match self.dialogs.text_input(&purpose) {
                Some(input) => input.replace_text(&text),
                None => self.flash("the dialog was closed; the edited text was not used", true),
            },
        }
    }

    pub(super) fn on_inputs_loaded(&mut self, inputs: crate::store::Inputs) {
        for problem in &inputs.problems {
            tracing::warn!(problem = %problem, "drafts or prompt history");
        }
        if let Some(first) = inputs.problems.first() {
            self.flash(format!("drafts / prompt history: {first}"), true);
        }
        self.composer.restore(inputs.drafts, inputs.history);
    }
}
