//! Context control from the TUI: a new conversation for a session or a team, browsing a
//! session's earlier conversations, what a team's members remember between runs, and notes
//! for one member (`@member text`).

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

    /// `@member text` in a team's composer: a note for that member's next turn. None when the
    /// text is not one (it is sent to the team as usual).
    pub(super) fn note_for_member(&mut self, group_id: &str, text: &str) -> Option<Vec<Command>> {
        let members: Vec<(String, String)> = self.org.read(|o| {
            o.sessions_in(group_id)
                .iter()
                .map(|s| (s.id.clone(), s.name.clone()))
                .collect()
        });
        let team = self
            .org
            .read(|o| o.group(group_id).map(|g| crate::naming::team_slug(&g.name)))
            .unwrap_or_default();
        let (session_id, note) = member_note(text, &members, &team)?;
        let name = members
            .iter()
            .find(|(id, _)| *id == session_id)
            .map(|(_, n)| crate::naming::strip_team_prefix(n, &team).to_string())
            .unwrap_or_default();
        self.composer.send();
        self.flash(format!("note for {name}'s next turn"), false);
        Some(vec![Command::NoteMember {
            session_id,
            text: note,
        }])
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

/// `@name rest`: the member (id) whose full or short name (without the team prefix) is
/// `name`, ignoring case, and the note. None when the text is not addressed to a member or the
/// note is empty.
pub fn member_note(text: &str, members: &[(String, String)], team_slug: &str) -> Option<(String, String)> {
    let rest = text.trim_start().strip_prefix('@')?;
    let (name, note) = rest.split_once(char::is_whitespace)?;
    let note = note.trim();
    if note.is_empty() {
        return None;
    }
    let wanted = name.to_lowercase();
    members
        .iter()
        .find(|(_, full)| {
            full.to_lowercase() == wanted
                || crate::naming::strip_team_prefix(full, team_slug).to_lowercase() == wanted
        })
        .map(|(id, _)| (id.clone(), note.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_names_a_member_by_its_short_or_full_name() {
        let members = vec![
            ("1".to_string(), "review-security".to_string()),
            ("2".to_string(), "review-tests".to_string()),
        ];
        let note = |t: &str| member_note(t, &members, "review");
        assert_eq!(
            note("@security look at auth"),
            Some(("1".into(), "look at auth".into()))
        );
        assert_eq!(
            note("  @Review-Tests  add one\nfor x "),
            Some(("2".into(), "add one\nfor x".into()))
        );
        assert_eq!(note("@security"), None, "no note");
        assert_eq!(note("@security   "), None);
        assert_eq!(note("@src/main.rs explain"), None, "not a member");
        assert_eq!(note("security: hi"), None);
    }
}
