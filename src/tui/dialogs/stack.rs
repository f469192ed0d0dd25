//! The stack of open popups: the top one gets every key and is drawn over the screen; a
//! finished one hands its result to the app.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;

use super::{
    ApprovalRequest, Approvals, Confirm, ConfirmAction, Dialog, DialogResult, ListPicker, Notice, Outcome,
    PickPurpose,
};
use crate::tui::keymap::Keymap;

#[derive(Default)]
pub struct DialogStack {
    open: Vec<Dialog>,
}

/// What became of a key offered to the stack.
#[derive(Debug, PartialEq)]
pub enum Routed {
    /// No dialog is open: the key is the app's.
    NotOpen,
    /// A dialog took it (and may have closed without a result).
    Taken,
    /// The top dialog finished with this result (and is closed).
    Done(DialogResult),
}

impl DialogStack {
    pub fn push(&mut self, dialog: Dialog) {
        self.open.push(dialog);
    }

    /// Opens `dialog` under those open (the one in use keeps its keys; it shows once they
    /// close), or on top when none is.
    pub fn push_under(&mut self, dialog: Dialog) {
        self.open.insert(0, dialog);
    }

    /// Keeps only the dialogs `keep` says yes to.
    pub fn retain(&mut self, keep: impl FnMut(&Dialog) -> bool) {
        self.open.retain(keep);
    }

    /// An error popup.
    pub fn error(&mut self, title: impl Into<String>, text: impl Into<String>) {
        self.push(Dialog::Notice(Notice::error(title, text)));
    }

    /// An information popup.
    pub fn info(&mut self, title: impl Into<String>, text: impl Into<String>) {
        self.push(Dialog::Notice(Notice::info(title, text)));
    }

    /// A yes/no question; `action` is the result of a yes.
    pub fn confirm(&mut self, title: impl Into<String>, text: impl Into<String>, action: ConfirmAction) {
        self.push(Dialog::Confirm(Confirm::new(title, text, action)));
    }

    /// A tool call waits for the user: into the approval popup's queue. A new popup goes under
    /// the dialogs open (the one in use keeps its keys; the popup shows once they close).
    pub fn request_approval(&mut self, request: ApprovalRequest) {
        match self.approvals_mut() {
            Some(a) => a.push(request),
            None => self
                .open
                .insert(0, Dialog::Approval(Box::new(Approvals::new(request)))),
        }
    }

    /// Drops the approval requests settled elsewhere (`settled` says which); the popup closes
    /// when none is left.
    pub fn settle_approvals(&mut self, settled: impl Fn(&ApprovalRequest) -> bool) {
        let empty = self
            .approvals_mut()
            .is_some_and(|a| a.settle(settled) && a.is_empty());
        if empty {
            self.open.retain(|d| !matches!(d, Dialog::Approval(_)));
        }
    }

    /// The approval popup's queue, if requests wait.
    pub fn approvals(&self) -> Option<&Approvals> {
        self.open.iter().find_map(|d| match d {
            Dialog::Approval(a) => Some(&**a),
            _ => None,
        })
    }

    fn approvals_mut(&mut self) -> Option<&mut Approvals> {
        self.open.iter_mut().find_map(|d| match d {
            Dialog::Approval(a) => Some(&mut **a),
            _ => None,
        })
    }

    /// The dialog on top (the one shown and given keys).
    pub fn last(&self) -> Option<&Dialog> {
        self.open.last()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn clear(&mut self) {
        self.open.clear();
    }

    /// Offers a key to the top dialog. `close` (the quit key) closes it whatever it is, so a
    /// popup never traps the user (the approval popup denies the request shown).
    pub fn handle_key(&mut self, key: &KeyEvent, close: bool) -> Routed {
        let Some(top) = self.open.last_mut() else {
            return Routed::NotOpen;
        };
        let outcome = if close {
            top.on_close()
        } else {
            top.handle_key(key)
        };
        match outcome {
            Outcome::Stay => Routed::Taken,
            Outcome::Close => {
                self.open.pop();
                Routed::Taken
            }
            Outcome::Done(result) => {
                self.open.pop();
                Routed::Done(result)
            }
            Outcome::Reply(result) => Routed::Done(result),
        }
    }

    /// Pasted text for the top dialog; false when none is open.
    pub fn paste(&mut self, text: &str) -> bool {
        match self.open.last_mut() {
            Some(d) => {
                d.handle_paste(text);
                true
            }
            None => false,
        }
    }

    /// The open pickers for `purpose` (to fill them when their items arrive).
    pub fn pickers(&mut self, purpose: &PickPurpose) -> impl Iterator<Item = &mut ListPicker> {
        self.open.iter_mut().filter_map(move |d| match d {
            Dialog::Picker(p) if p.purpose == *purpose => Some(p),
            _ => None,
        })
    }

    /// The open text dialog for `purpose` (to put `$EDITOR`'s text in it).
    pub fn text_input(&mut self, purpose: &super::TextPurpose) -> Option<&mut super::TextInput> {
        self.open.iter_mut().find_map(|d| match d {
            Dialog::Text(t) if t.purpose == *purpose => Some(&mut **t),
            _ => None,
        })
    }

    /// The open diff view waiting for `request`'s diffs.
    pub fn diff_view(&mut self, request: u64) -> Option<&mut super::DiffView> {
        self.open.iter_mut().find_map(|d| match d {
            Dialog::Diff(v) if v.request == request => Some(&mut **v),
            _ => None,
        })
    }

    /// Draws the top dialog over `area`.
    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, keymap: &Keymap) {
        if let Some(dialog) = self.open.last() {
            dialog.render(frame, area, keymap);
        }
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn the_top_dialog_takes_keys_and_hands_back_its_result() {
        let mut stack = DialogStack::default();
        assert_eq!(stack.handle_key(&key(KeyCode::Enter), false), Routed::NotOpen);
        stack.error("first", "below");
        stack.confirm("Quit", "Quit anyway?", ConfirmAction::Quit);
        assert_eq!(stack.len(), 2);
        // Enter is the safe answer: quitting cuts runs off, so only `y` quits.
        assert_eq!(stack.handle_key(&key(KeyCode::Enter), false), Routed::Taken);
        assert_eq!(stack.len(), 1);
        stack.confirm("Quit", "Quit anyway?", ConfirmAction::Quit);
        assert_eq!(
            stack.handle_key(&key(KeyCode::Char('y')), false),
            Routed::Done(DialogResult::Confirmed(ConfirmAction::Quit))
        );
        assert!(matches!(stack.last(), Some(Dialog::Notice(_))));
        // The quit key closes any dialog, without a result.
        assert_eq!(stack.handle_key(&key(KeyCode::Char('y')), true), Routed::Taken);
        assert!(stack.is_empty());
        assert!(!stack.paste("text"));
    }
}
