//! Popups, kept as a stack: the top one gets every key. Each dialog handles its keys and
//! reports an outcome; the app acts on a finished dialog's result.

pub mod approval;
pub mod choice;
pub mod confirm;
pub mod diff_view;
pub mod help;
pub mod list;
pub mod notice;
pub mod relay_draft;
pub mod stack;
pub mod text_input;

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;

use crate::model::{GroupId, SessionId, Worktree};
use crate::tools::Decision;

pub use approval::{ApprovalRequest, Approvals};
pub use choice::{Choice, ChoiceAction, ChoiceOption};
pub use confirm::Confirm;
pub use diff_view::DiffView;
pub use help::Help;
pub use list::{ListItem, ListPicker};
pub use notice::Notice;
pub use relay_draft::{RelayChoice, RelayDraftPopup};
pub use stack::{DialogStack, Routed};
pub use text_input::TextInput;

/// What a confirmed dialog asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfirmAction {
    Quit,
    DeleteGroup(GroupId),
    DeleteSession(SessionId),
    ExportOverwrite(GroupId),
    /// Save the team as a preset (after the list of files was shown).
    Export(GroupId),
    /// Turn a reflect team's evaluator off: remove this session.
    RemoveEvaluator(GroupId, SessionId),
    /// Remove these headless leftovers (`huddle run`'s teams and one-shot sessions).
    PruneHeadless(Vec<crate::workspace::Leftover>),
}

impl ConfirmAction {
    /// Deletes or overwrites something, or quits while runs are in progress: Enter (the easy
    /// key) answers no; only `y` confirms.
    pub fn is_destructive(&self) -> bool {
        matches!(
            self,
            ConfirmAction::Quit
                | ConfirmAction::DeleteGroup(_)
                | ConfirmAction::DeleteSession(_)
                | ConfirmAction::ExportOverwrite(_)
                | ConfirmAction::Export(_)
                | ConfirmAction::RemoveEvaluator(..)
                | ConfirmAction::PruneHeadless(_)
        )
    }
}

/// A run the process left that can be resumed: a team's, or a session's reflection.
#[derive(Debug, Clone, PartialEq)]
pub enum Interruption {
    Group(GroupId),
    Session(SessionId),
}

/// What a text dialog's text is for.
#[derive(Debug, Clone, PartialEq)]
pub enum TextPurpose {
    RenameGroup(GroupId),
    RenameSession(SessionId),
    NewSession(GroupId),
    MaxIterations(GroupId),
    SystemPrompt(SessionId),
    /// Max iterations of a single-session reflection towards this goal.
    ReflectIterations(SessionId, String),
    /// A new team member's name (then its model, then its system prompt).
    MemberName(GroupId),
    /// A new team member's system prompt, last step: (team, name, model).
    MemberPrompt(GroupId, String, String),
    /// A relay draft, edited: sent when saved.
    RelayEdit(GroupId),
    /// The note for a rejected relay draft.
    RelayNote(GroupId),
}

/// What a picked list entry is for.
#[derive(Debug, Clone, PartialEq)]
pub enum PickPurpose {
    Preset,
    Model(SessionId),
    /// Every session of a group.
    GroupModel(GroupId),
    Mode(GroupId),
    /// The worktree strategy of a team from this preset (by name).
    Strategy(String),
    /// A new team member's model: (team, name).
    MemberModel(GroupId, String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum DialogResult {
    Confirmed(ConfirmAction),
    Text(TextPurpose, String),
    Picked(PickPurpose, String),
    /// The user's answer to a tool approval request.
    Approval {
        approval_id: u64,
        decision: Decision,
    },
    /// The option chosen in a [`Choice`] (confirmed with `y`).
    Chose(ChoiceAction, usize),
    /// The merge key in the diff view: bring this worktree's work back (asks first).
    MergeWorktree(Worktree),
    /// An answer in the relay draft popup.
    Relay {
        group_id: GroupId,
        choice: RelayChoice,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Still open.
    Stay,
    /// Closed without a result (Esc, "no").
    Close,
    Done(DialogResult),
    /// A result, and the dialog stays open (the approval popup with more requests queued).
    Reply(DialogResult),
}

pub enum Dialog {
    Help(Help),
    Confirm(Confirm),
    Text(Box<TextInput>),
    Picker(ListPicker),
    Notice(Notice),
    Approval(Box<Approvals>),
    Choice(Box<Choice>),
    Diff(Box<DiffView>),
    RelayDraft(Box<RelayDraftPopup>),
}

impl Dialog {
    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        match self {
            Dialog::Approval(d) => d.handle_key(key),
            Dialog::Help(d) => d.handle_key(key),
            Dialog::Confirm(d) => d.handle_key(key),
            Dialog::Text(d) => d.handle_key(key),
            Dialog::Picker(d) => d.handle_key(key),
            Dialog::Notice(d) => d.handle_key(key),
            Dialog::Choice(d) => d.handle_key(key),
            Dialog::Diff(d) => d.handle_key(key),
            Dialog::RelayDraft(d) => d.handle_key(key),
        }
    }

    /// The quit key on the dialog: it closes, without a result, except the approval popup,
    /// which denies (a waiting call is never left unanswered).
    pub fn on_close(&mut self) -> Outcome {
        match self {
            Dialog::Approval(d) => d.on_close(),
            _ => Outcome::Close,
        }
    }

    pub fn handle_paste(&mut self, text: &str) {
        match self {
            Dialog::Text(d) => d.paste(text),
            Dialog::Picker(d) => d.paste(text),
            _ => {}
        }
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect, keymap: &super::keymap::Keymap) {
        match self {
            Dialog::Help(d) => d.render(frame, area, keymap),
            Dialog::Confirm(d) => d.render(frame, area),
            Dialog::Text(d) => d.render(frame, area),
            Dialog::Picker(d) => d.render(frame, area),
            Dialog::Notice(d) => d.render(frame, area),
            Dialog::Approval(d) => d.render(frame, area),
            Dialog::Choice(d) => d.render(frame, area),
            Dialog::Diff(d) => d.render(frame, area),
            Dialog::RelayDraft(d) => d.render(frame, area),
        }
    }
}

/// A centred box of at most `width` x `height` inside `area`.
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// A bordered block with a title, the house style for popups.
pub fn popup_block(title: &str) -> ratatui::widgets::Block<'static> {
    use ratatui::style::{Modifier, Style};
    ratatui::widgets::Block::bordered()
        .title(format!(" {} ", crate::text::sanitize::display(title)))
        .title_style(Style::default().add_modifier(Modifier::BOLD))
}
