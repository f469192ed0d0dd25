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

    /// The `@` files named in the composer now: the new ones are read (off the UI thread).
    pub(super) fn sync_attachments(&mut self) -> Vec<Command> {
        let text = self.composer.text();
        let typing = self.composer.typing_word();
        self.composer
            .attach
            .sync(&text, typing.as_deref())
            .into_iter()
            .map(|name| Command::ReadAttachment { name })
            .collect()
    }

    pub(super) fn on_attachment_read(
        &mut self,
        name: &str,
        result: Result<crate::attachments::Attachment, String>,
    ) -> Vec<Command> {
        self.composer.attach.on_read(name, result);
        if self.composer.attach.send_when_ready && !self.composer.attach.reading() {
            self.composer.attach.send_when_ready = false;
            return self.send();
        }
        Vec::new()
    }

    /// Tab on an `@word` completes it from the repository's files (again: the next one); Esc
    /// closes the completions. None: the key is not for the completion.
    pub(super) fn completion_key(&mut self, key: &KeyEvent) -> Option<Vec<Command>> {
        use crossterm::event::{KeyCode, KeyModifiers};
        let plain = key.modifiers - KeyModifiers::SHIFT == KeyModifiers::NONE;
        match key.code {
            KeyCode::Esc if plain && self.composer.attach.completion.is_some() => {
                self.composer.attach.completion = None;
                Some(Vec::new())
            }
            KeyCode::Tab if plain => {
                let word = self.composer.word_at_cursor().filter(|w| w.starts_with('@'))?;
                if let Some(c) = self.composer.attach.completion.as_mut() {
                    c.index = (c.index + 1) % c.candidates.len().max(1);
                    let next = format!("@{}", c.candidates.get(c.index).cloned().unwrap_or_default());
                    self.composer.replace_word_at_cursor(&next);
                    return Some(Vec::new());
                }
                let candidates = self.composer.attach.complete(&word[1..]);
                match candidates.len() {
                    0 => self.flash(format!("no file of the repository matches {word}"), true),
                    1 => self
                        .composer
                        .replace_word_at_cursor(&format!("@{}", candidates[0])),
                    _ => {
                        self.composer
                            .replace_word_at_cursor(&format!("@{}", candidates[0]));
                        self.composer.attach.completion =
                            Some(super::composer_attachments::Completion { candidates, index: 0 });
                    }
                }
                // The list may have changed since it was read.
                Some(vec![Command::ListRepoFiles])
            }
            _ => {
                self.composer.attach.completion = None;
                None
            }
        }
    }

    /// Send: with the `@` files attached once they are read; a file that cannot be attached
    /// keeps the text in the composer and says why.
    pub(super) fn send(&mut self) -> Vec<Command> {
        let text = self.composer.text();
        let new_reads: Vec<Command> = self
            .composer
            .attach
            .sync(&text, None)
            .into_iter()
            .map(|name| Command::ReadAttachment { name })
            .collect();
        if self.composer.attach.reading() {
            self.composer.attach.send_when_ready = true;
            self.flash("reading the attached files; sends when they are read", false);
            return new_reads;
        }
        let attachments = match self.composer.attach.ready() {
            Ok(a) => a,
            Err(why) => {
                self.flash(why, true);
                return Vec::new();
            }
        };
        if attachments.is_empty() {
            return self.send_text();
        }
        if let Some(group_id) = self.selected_group_id()
            && self.is_team(&group_id)
            && self.team_running(&group_id)
        {
            self.flash(
                "files go with a new run: send this when the team's run has ended (the text is kept)",
                true,
            );
            return Vec::new();
        }
        self.send_text()
            .into_iter()
            .map(|command| match command {
                send @ (Command::Chat { .. } | Command::RunGroup { .. }) => Command::Attached {
                    attachments: attachments.clone(),
                    send: Box::new(send),
                },
                other => other,
            })
            .collect()
    }

    pub(super) fn on_inputs_loaded(&mut self, inputs: crate::store::Inputs) {
        for problem in &inputs.problems {
            tracing::warn!(problem = %problem, "drafts or prompt history");
        }
        if let Some(first) = inputs.problems.first() {
            self.flash(format!("drafts / prompt history: {first}"), true);
        }
        // Drafts of deleted sessions and groups go (nothing can show them again).
        let mut drafts = inputs.drafts;
        self.org.read(|o| {
            drafts.retain(|id, _| o.session(id).is_some() || o.group(id).is_some());
        });
        self.composer.restore(drafts, inputs.history);
    }
}
