//! Context control from the TUI: a new conversation for a session or a team, browsing a
//! session's earlier conversations, and what a team's members remember between runs.

use super::app::App;
use super::command::Command;
use super::sidebar::Row;
use crate::model::Memory;
use crate::workspace::EditError;

impl App {
    /// `C`: a new conversation for the selected session, or for every member of the selected
    /// team. The old one stays in the transcript (`[` / `]` read it).
    pub(super) fn new_conversation(&mut self) -> Vec<Command> {
        let done = match self.selected_row() {
            Some(Row::Session(id)) => self.edits.new_session_conversation(&id).map(|()| {
                "new conversation: the model sees nothing from before (the old one: [ )".to_string()
            }),
            Some(Row::Group(id)) => self
                .edits
                .new_group_conversation(&id)
                .map(|n| format!("new conversation for the {n} member(s): they see nothing from before")),
            None => return Vec::new(),
        };
        match done {
            Ok(text) => self.flash(text, false),
            Err(e @ EditError::Busy { .. }) => {
                self.refuse("Cannot start a new conversation now", &e.to_string())
            }
            Err(e) => self.flash(e.to_string(), true),
        }
        Vec::new()
    }

    /// `K`: the selected team's members remember each run alone, or the whole conversation.
    pub(super) fn toggle_memory(&mut self) -> Vec<Command> {
        let Some(group_id) = self.selected_team() else {
            return Vec::new();
        };
        let current = self
            .org
            .read(|o| o.group(&group_id).map(|g| g.memory))
            .unwrap_or_default();
        let next = match current {
            Memory::Run => Memory::Conversation,
            Memory::Conversation => Memory::Run,
        };
        match self.edits.set_memory(&group_id, next) {
            Ok(()) => self.flash(memory_text(next), false),
            Err(e) => self.flash(e.to_string(), true),
        }
        Vec::new()
    }

    /// `[` / `]` on a session with earlier conversations (or browsing one): steps through
    /// them. False when there is nothing to browse (on a team member, its team's runs are).
    pub(super) fn browse_conversations(&mut self, step: isize) -> bool {
        let Some(Row::Session(id)) = self.selected_row() else {
            return false;
        };
        let browsing = self
            .transcripts
            .browsing
            .as_ref()
            .is_some_and(|b| b.session_id == id);
        let earlier = self.transcripts.views.get(&id).map_or(0, |v| v.earlier_count());
        if earlier == 0 && !browsing {
            if self.is_team_member(&id) {
                return false;
            }
            self.flash("this session has no earlier conversations", false);
            return true;
        }
        match self.transcripts.browse(&id, step) {
            Some(text) => self.flash(text, false),
            None if step < 0 => self.flash("this is the session's first conversation", false),
            None => self.flash("this is the current conversation", false),
        }
        true
    }

    fn is_team_member(&self, session_id: &str) -> bool {
        self.org.read(|o| {
            o.session(session_id)
                .and_then(|s| o.group(&s.group_id))
                .is_some_and(|g| g.is_team())
        })
    }
}

/// What the status line says after the memory setting changed.
pub fn memory_text(memory: Memory) -> &'static str {
    match memory {
        Memory::Run => "memory: run — each team run starts from the system prompt (from the next run)",
        Memory::Conversation => {
            "memory: conversation — members keep their conversation from run to run (from the next run)"
        }
    }
}
