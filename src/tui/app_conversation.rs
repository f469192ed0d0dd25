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
        let (members, handles) = self.org.read(|o| {
            let names: Vec<(String, String)> = o
                .sessions_in(group_id)
                .iter()
                .map(|s| (s.id.clone(), s.name.clone()))
                .collect();
            (names, o.member_handles(group_id))
        });
        let team = self
            .org
            .read(|o| o.group(group_id).map(|g| g.members_slug()))
            .unwrap_or_default();
        let (session_id, note) = member_note(text, &handles, &members, &team)?;
        let name = handles
            .iter()
            .find(|(id, _)| *id == session_id)
            .map(|(_, h)| h.clone())
            .unwrap_or_default();
        self.composer.send();
        self.flash(format!("note for {name}'s next turn"), false);
        Some(vec![Command::NoteMember {
            session_id,
            text: note,
        }])
    }

    /// `u`: asks the selected session's last prompt again; the old answer stays in the
    /// transcript, superseded.
    pub(super) fn regenerate(&mut self) -> Vec<Command> {
        let Some((session_id, (from, prompt))) = self.last_exchange_of_selected() else {
            return Vec::new();
        };
        self.ask_again(
            session_id,
            &from,
            prompt,
            "regenerated: the exchange above is superseded",
        )
    }

    /// `U`: the selected session's last prompt in the composer, to edit; Enter sends it in
    /// place of the last exchange.
    pub(super) fn edit_resend(&mut self) {
        let Some((session_id, (from, prompt))) = self.last_exchange_of_selected() else {
            return;
        };
        if self.session_busy(&session_id) {
            self.refuse(
                "Cannot resend now",
                "The session is answering. Stop it or wait for it to finish, then edit the prompt.",
            );
            return;
        }
        self.composer.set_text(&prompt);
        self.transcripts.resend = Some((session_id, from));
        self.focus = super::app::Focus::Composer;
        self.flash(
            "edit the prompt; Enter sends it in place of the last exchange",
            false,
        );
    }

    /// Enter while the last prompt is edited (`U`) for this session: the edited text replaces
    /// the last exchange. None when no edit is pending for it.
    pub(super) fn send_resend(&mut self, session_id: &str, text: &str) -> Option<Vec<Command>> {
        let (sid, from) = self.transcripts.resend.take()?;
        if sid != session_id {
            return None;
        }
        self.composer.send();
        Some(self.ask_again(
            sid,
            &from,
            text.to_string(),
            "edited and sent again: the exchange above is superseded",
        ))
    }

    /// The composer's title while a resend is pending for the selected session.
    pub(super) fn resend_title(&self) -> Option<String> {
        let (sid, _) = self.transcripts.resend.as_ref()?;
        (self.selected_session_id().as_deref() == Some(sid.as_str()))
            .then(|| " Edit and resend (replaces the last exchange; Enter sends) ".to_string())
    }

    fn last_exchange_of_selected(&mut self) -> Option<(String, (String, String))> {
        let Some(Row::Session(session_id)) = self.selected_row() else {
            self.flash("select a session first", true);
            return None;
        };
        match self.transcripts.last_exchange(&session_id) {
            Some(exchange) => Some((session_id, exchange)),
            None => {
                self.flash("nothing to ask again: no prompt in this conversation", true);
                None
            }
        }
    }

    /// Takes back the exchange from `from` on and sends `prompt` in its place.
    fn ask_again(&mut self, session_id: String, from: &str, prompt: String, why: &str) -> Vec<Command> {
        match self.edits.supersede_last_exchange(&session_id, from, why) {
            Ok(()) => {
                self.transcripts.follow(&session_id);
                vec![Command::Chat { session_id, prompt }]
            }
            Err(e @ EditError::Busy { .. }) => {
                self.refuse("Cannot ask again now", &e.to_string());
                Vec::new()
            }
            Err(e) => {
                self.flash(e.to_string(), true);
                Vec::new()
            }
        }
    }

    /// `F`: a copy of the selected session and its conversation (made off the UI thread).
    pub(super) fn fork_session(&mut self) -> Vec<Command> {
        let Some(Row::Session(session_id)) = self.selected_row() else {
            self.flash("select a session to fork", true);
            return Vec::new();
        };
        if self.session_busy(&session_id) {
            self.refuse(
                "Cannot fork now",
                "The session is answering. Stop it or wait for it to finish, then fork it.",
            );
            return Vec::new();
        }
        self.flash("forking…", false);
        vec![Command::ForkSession { session_id }]
    }

    /// A fork was made: it is selected.
    pub(super) fn on_forked(&mut self, result: Result<String, String>) -> Vec<Command> {
        match result {
            Ok(id) => {
                let name = self
                    .org
                    .read(|o| o.session(&id).map(|s| s.name.clone()))
                    .unwrap_or_default();
                self.select_row(&Row::Session(id));
                let commands = self.on_selection_changed();
                self.flash(format!("forked as {name} (r renames it)"), false);
                commands
            }
            Err(e) => {
                self.refuse("Fork failed", &e);
                Vec::new()
            }
        }
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

/// `@name rest`: the member (id) whose handle (`handles`: id and handle), full session name or
/// short one (without the team prefix; `members`: id and session name) is `name`, ignoring
/// case, and the note. None when the text is not addressed to a member or the note is empty.
pub fn member_note(
    text: &str,
    handles: &[(String, String)],
    members: &[(String, String)],
    team_slug: &str,
) -> Option<(String, String)> {
    let rest = text.trim_start().strip_prefix('@')?;
    let (name, note) = rest.split_once(char::is_whitespace)?;
    let note = note.trim();
    if note.is_empty() {
        return None;
    }
    let wanted = name.to_lowercase();
    handles
        .iter()
        .find(|(_, handle)| handle.to_lowercase() == wanted)
        .or_else(|| {
            members.iter().find(|(_, full)| {
                full.to_lowercase() == wanted
                    || crate::naming::strip_team_prefix(full, team_slug).to_lowercase() == wanted
            })
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
        let note = |t: &str| member_note(t, &[], &members, "review");
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

    #[test]
    fn a_note_names_a_member_by_its_handle_when_its_session_name_was_made_unique() {
        let members = vec![("1".to_string(), "review-security-2".to_string())];
        let handles = vec![("1".to_string(), "security".to_string())];
        assert_eq!(
            member_note("@security look", &handles, &members, "review"),
            Some(("1".into(), "look".into()))
        );
        assert_eq!(
            member_note("@security-2 look", &handles, &members, "review"),
            Some(("1".into(), "look".into())),
            "the session name still works"
        );
    }
}
