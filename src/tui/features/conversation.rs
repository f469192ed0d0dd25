//! The conversation controller, context control from the TUI: a new conversation for a session
//! or a team, browsing a session's earlier conversations, what a team's members remember
//! between runs, notes for one member (`@member text`), asking the last prompt again (as it
//! was, or edited) and forking a session.

use super::{Cx, Then};
use crate::model::Memory;
use crate::tui::command::Command;
use crate::tui::layout::Focus;
use crate::tui::sidebar::Row;
use crate::tui::transcript_pane::TranscriptPane;
use crate::workspace::EditError;

/// `C`: a new conversation for the selected session, or for every member of the selected
/// team. The old one stays in the transcript (`[` / `]` read it).
pub fn new_conversation(cx: &mut Cx) -> Vec<Command> {
    let done = match cx.selection().row.clone() {
        Some(Row::Session(id)) => cx
            .edits
            .new_session_conversation(&id)
            .map(|()| "new conversation: the model sees nothing from before (the old one: [ )".to_string()),
        Some(Row::Group(id)) => cx
            .edits
            .new_group_conversation(&id)
            .map(|n| format!("new conversation for the {n} member(s): they see nothing from before")),
        None => return Vec::new(),
    };
    match done {
        Ok(text) => cx.flash.say(text, false),
        Err(e @ EditError::Busy { .. }) => cx.refuse("Cannot start a new conversation now", &e.to_string()),
        Err(e) => cx.flash.say(e.to_string(), true),
    }
    Vec::new()
}

/// `K`: the selected team's members remember each run alone, or the whole conversation.
pub fn toggle_memory(cx: &mut Cx) -> Vec<Command> {
    let Some(group_id) = cx.team_or_say() else {
        return Vec::new();
    };
    let current = cx
        .org
        .read(|o| o.group(&group_id).map(|g| g.memory))
        .unwrap_or_default();
    let next = match current {
        Memory::Run => Memory::Conversation,
        Memory::Conversation => Memory::Run,
    };
    match cx.edits.set_memory(&group_id, next) {
        Ok(()) => cx.flash.say(memory_text(next), false),
        Err(e) => cx.flash.say(e.to_string(), true),
    }
    Vec::new()
}

/// `[` / `]` on a session with earlier conversations (or browsing one): steps through
/// them. False when there is nothing to browse (on a team member, its team's runs are).
pub fn browse(cx: &mut Cx, transcripts: &mut TranscriptPane, step: isize) -> bool {
    let Some(Row::Session(id)) = cx.selection().row.clone() else {
        return false;
    };
    let browsing = transcripts.browsing.as_ref().is_some_and(|b| b.session_id == id);
    let earlier = transcripts.views.get(&id).map_or(0, |v| v.earlier_count());
    if earlier == 0 && !browsing {
        if is_team_member(cx, &id) {
            return false;
        }
        cx.flash.say("this session has no earlier conversations", false);
        return true;
    }
    match transcripts.browse(&id, step) {
        Some(text) => cx.flash.say(text, false),
        None if step < 0 => cx.flash.say("this is the session's first conversation", false),
        None => cx.flash.say("this is the current conversation", false),
    }
    true
}

/// `@member text` in a team's composer: a note for that member's next turn. None when the
/// text is not one (it is sent to the team as usual).
pub fn note_for_member(cx: &mut Cx, group_id: &str, text: &str) -> Option<Vec<Command>> {
    let (members, handles) = cx.org.read(|o| {
        let names: Vec<(String, String)> = o
            .sessions_in(group_id)
            .iter()
            .map(|s| (s.id.clone(), s.name.clone()))
            .collect();
        (names, o.member_handles(group_id))
    });
    let team = cx
        .org
        .read(|o| o.group(group_id).map(|g| g.members_slug()))
        .unwrap_or_default();
    let (session_id, note) = member_note(text, &handles, &members, &team)?;
    let name = handles
        .iter()
        .find(|(id, _)| *id == session_id)
        .map(|(_, h)| h.clone())
        .unwrap_or_default();
    cx.then(Then::ComposerSent);
    cx.flash.say(format!("note for {name}'s next turn"), false);
    Some(vec![Command::NoteMember {
        session_id,
        text: note,
    }])
}

/// `u`: asks the selected session's last prompt again; the old answer stays in the
/// transcript, superseded.
pub fn regenerate(cx: &mut Cx, transcripts: &mut TranscriptPane) -> Vec<Command> {
    let Some((session_id, (from, prompt))) = last_exchange_of_selected(cx, transcripts) else {
        return Vec::new();
    };
    ask_again(
        cx,
        transcripts,
        session_id,
        &from,
        prompt,
        "regenerated: the exchange above is superseded",
    )
}

/// `U`: the selected session's last prompt in the composer, to edit; Enter sends it in
/// place of the last exchange.
pub fn edit_resend(cx: &mut Cx, transcripts: &mut TranscriptPane) {
    let Some((session_id, (from, prompt))) = last_exchange_of_selected(cx, transcripts) else {
        return;
    };
    if cx.runs.session_busy(&session_id) {
        cx.refuse(
            "Cannot resend now",
            "The session is answering. Stop it or wait for it to finish, then edit the prompt.",
        );
        return;
    }
    cx.then(Then::ComposerText(prompt));
    transcripts.resend = Some((session_id, from));
    cx.then(Then::Focus(Focus::Composer));
    cx.flash.say(
        "edit the prompt; Enter sends it in place of the last exchange",
        false,
    );
}

/// Enter while the last prompt is edited (`U`) for this session: the edited text replaces
/// the last exchange. None when no edit is pending for it.
pub fn send_resend(
    cx: &mut Cx,
    transcripts: &mut TranscriptPane,
    session_id: &str,
    text: &str,
) -> Option<Vec<Command>> {
    let (sid, from) = transcripts.resend.take()?;
    if sid != session_id {
        return None;
    }
    cx.then(Then::ComposerSent);
    Some(ask_again(
        cx,
        transcripts,
        sid,
        &from,
        text.to_string(),
        "edited and sent again: the exchange above is superseded",
    ))
}

/// The composer's title while a resend is pending for the selected session.
pub fn resend_title(cx: &Cx, transcripts: &TranscriptPane) -> Option<String> {
    let (sid, _) = transcripts.resend.as_ref()?;
    (cx.selection().session.as_deref() == Some(sid.as_str()))
        .then(|| " Edit and resend (replaces the last exchange; Enter sends) ".to_string())
}

fn last_exchange_of_selected(
    cx: &mut Cx,
    transcripts: &TranscriptPane,
) -> Option<(String, (String, String))> {
    let Some(Row::Session(session_id)) = cx.selection().row.clone() else {
        cx.flash.say("select a session first", true);
        return None;
    };
    match transcripts.last_exchange(&session_id) {
        Some(exchange) => Some((session_id, exchange)),
        None => {
            cx.flash
                .say("nothing to ask again: no prompt in this conversation", true);
            None
        }
    }
}

/// Takes back the exchange from `from` on and sends `prompt` in its place.
fn ask_again(
    cx: &mut Cx,
    transcripts: &mut TranscriptPane,
    session_id: String,
    from: &str,
    prompt: String,
    why: &str,
) -> Vec<Command> {
    match cx.edits.supersede_last_exchange(&session_id, from, why) {
        Ok(()) => {
            transcripts.follow(&session_id);
            vec![Command::Chat { session_id, prompt }]
        }
        Err(e @ EditError::Busy { .. }) => {
            cx.refuse("Cannot ask again now", &e.to_string());
            Vec::new()
        }
        Err(e) => {
            cx.flash.say(e.to_string(), true);
            Vec::new()
        }
    }
}

/// `F`: a copy of the selected session and its conversation (made off the UI thread).
pub fn fork(cx: &mut Cx) -> Vec<Command> {
    let Some(Row::Session(session_id)) = cx.selection().row.clone() else {
        cx.flash.say("select a session to fork", true);
        return Vec::new();
    };
    if cx.runs.session_busy(&session_id) {
        cx.refuse(
            "Cannot fork now",
            "The session is answering. Stop it or wait for it to finish, then fork it.",
        );
        return Vec::new();
    }
    cx.flash.say("forking…", false);
    vec![Command::ForkSession { session_id }]
}

/// A fork was made: it is selected.
pub fn on_forked(cx: &mut Cx, result: Result<String, String>) -> Vec<Command> {
    match result {
        Ok(id) => {
            let name = cx
                .org
                .read(|o| o.session(&id).map(|s| s.name.clone()))
                .unwrap_or_default();
            cx.select(Row::Session(id));
            cx.flash.say(format!("forked as {name} (r renames it)"), false);
        }
        Err(e) => cx.refuse("Fork failed", &e),
    }
    Vec::new()
}

fn is_team_member(cx: &Cx, session_id: &str) -> bool {
    cx.org.read(|o| {
        o.session(session_id)
            .and_then(|s| o.group(&s.group_id))
            .is_some_and(|g| g.is_team())
    })
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
