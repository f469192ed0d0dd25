//! The run control controller: pausing, resuming and stopping what runs (a team's run, a
//! plain session's reflection, a session's chat turns), and starting a reflection (its max
//! iterations asked; the goal is the composer's text or the session's last prompt).
//!
//! A request the engine has not confirmed yet is marked on the run ([`Then::Request`]) and
//! said in the status line until it is.

use super::{Cx, Then};
use crate::engine::events::RunKey;
use crate::model::SessionId;
use crate::tui::command::Command;
use crate::tui::composer::Composer;
use crate::tui::dialogs::{Choice, ChoiceAction, ChoiceOption, Dialog, Interruption, TextInput, TextPurpose};
use crate::tui::flash::FlashTie;
use crate::tui::runs::Pending;
use crate::tui::team_panel::TeamPanel;
use crate::tui::transcript_pane::TranscriptPane;

/// Max iterations offered for a single-session reflection (a session iterates on its own
/// answer: fewer rounds than a team's default).
const DEFAULT_REFLECT_ITERATIONS: u32 = 3;

/// Marks the request on the run, and says it until the engine confirms it.
fn request(cx: &mut Cx, key: RunKey, pending: Pending, words: &str) {
    cx.flash.until(words, FlashTie::Pending(key.clone()));
    cx.then(Then::Request(key, pending));
}

/// Pauses or resumes the selected session's reflection, else the selected team's run; resumes
/// a team's interrupted cycle.
pub fn toggle_pause(cx: &mut Cx, team_panel: &mut TeamPanel) -> Vec<Command> {
    if let Some(session_id) = cx
        .selection()
        .session
        .clone()
        .filter(|s| cx.runs.reflection(s).is_some())
    {
        return toggle_pause_reflection(cx, session_id);
    }
    let Some(group_id) = cx.selection().group.clone() else {
        return Vec::new();
    };
    let key = RunKey::team(&group_id);
    if let Some(run) = cx.runs.team(&group_id) {
        if run.paused_as_shown() {
            request(cx, key.clone(), Pending::Resuming, "resuming");
            return vec![Command::Resume { key }];
        }
        request(
            cx,
            key.clone(),
            Pending::Pausing,
            "pausing after the step in flight…",
        );
        return vec![Command::Pause { key }];
    }
    if team_panel.interrupted(&group_id) {
        team_panel.show_newest(&group_id);
        return vec![Command::ResumeCycle { group_id }];
    }
    cx.flash.say("no cycle is running in this group", true);
    Vec::new()
}

fn toggle_pause_reflection(cx: &mut Cx, session_id: SessionId) -> Vec<Command> {
    let key = RunKey::reflection(&session_id);
    let Some(run) = cx.runs.reflection(&session_id) else {
        return Vec::new();
    };
    if run.paused_as_shown() {
        request(cx, key.clone(), Pending::Resuming, "resuming the reflection");
        vec![Command::Resume { key }]
    } else {
        request(
            cx,
            key.clone(),
            Pending::Pausing,
            "pausing the reflection after the step in flight…",
        );
        vec![Command::Pause { key }]
    }
}

/// Stops the selected group's run, or else the selected session's chat turns and
/// reflection (or those of every session of the selected group).
pub fn stop(cx: &mut Cx) -> Vec<Command> {
    let Some(group_id) = cx.selection().group.clone() else {
        return Vec::new();
    };
    let reflecting = |cx: &Cx, id: &str| cx.runs.reflection(id).is_some();
    let session = cx.selection().session.clone();
    if session.is_none() && cx.team_running(&group_id) {
        let key = RunKey::team(&group_id);
        request(cx, key.clone(), Pending::Stopping, "stopping");
        return vec![Command::Stop { key }];
    }
    let busy: Vec<SessionId> = match session {
        Some(id) => {
            let own_run = cx.runs.chatting(&id) || reflecting(cx, &id);
            if !own_run && cx.team_running(&group_id) {
                // A team member's turn belongs to the team's run.
                let key = RunKey::team(&group_id);
                request(cx, key.clone(), Pending::Stopping, "stopping the team's run");
                return vec![Command::Stop { key }];
            }
            own_run.then_some(id).into_iter().collect()
        }
        None => cx.org.read(|o| {
            o.sessions_in(&group_id)
                .iter()
                .filter(|s| cx.runs.chatting(&s.id) || reflecting(cx, &s.id))
                .map(|s| s.id.clone())
                .collect()
        }),
    };
    if busy.is_empty() {
        cx.flash.say("nothing is running here", true);
        return Vec::new();
    }
    cx.flash.until("stopping", FlashTie::Busy(busy.clone()));
    busy.into_iter()
        .map(|session_id| {
            cx.then(Then::Request(RunKey::reflection(&session_id), Pending::Stopping));
            Command::StopSession { session_id }
        })
        .collect()
}

/// Asks the max iterations of a reflection of the selected plain session; the goal is the
/// composer's text, else the session's last prompt.
pub fn open_reflect(cx: &mut Cx, composer: &Composer, transcripts: &TranscriptPane) {
    let Some(id) = cx.selection().session.clone() else {
        cx.flash.say("select a plain session to reflect on", true);
        return;
    };
    let team = cx.org.read(|o| {
        o.session(&id)
            .is_some_and(|s| s.team || o.group(&s.group_id).is_some_and(|g| g.is_team()))
    });
    if team {
        cx.flash.say(
            "a team reflects with its orchestrator_reflect mode (M to set it)",
            true,
        );
        return;
    }
    if cx.runs.session_busy(&id) {
        cx.flash
            .say("this session is busy: wait for it or stop it first", true);
        return;
    }
    let typed = composer.text();
    let goal = if !typed.trim().is_empty() {
        Some(typed)
    } else {
        transcripts.last_prompt(&id)
    };
    let Some(goal) = goal else {
        cx.flash
            .say("write the goal in the composer first (or chat once)", true);
        return;
    };
    let title = format!(
        "Reflect: max iterations ({}-{})",
        crate::model::MAX_ITERATIONS.start(),
        crate::model::MAX_ITERATIONS.end()
    );
    cx.dialogs.push(Dialog::Text(Box::new(TextInput::new(
        &title,
        TextPurpose::ReflectIterations(id, goal),
        &DEFAULT_REFLECT_ITERATIONS.to_string(),
        false,
    ))));
}

/// Starts the reflection the dialog confirmed; an invalid max iterations is said in a popup.
pub fn start_reflection(
    cx: &mut Cx,
    composer: &mut Composer,
    transcripts: &mut TranscriptPane,
    session_id: SessionId,
    goal: String,
    text: &str,
) -> Vec<Command> {
    let max_iterations = match crate::model::limits::parse_max_iterations(text) {
        Ok(n) => n,
        Err(e) => {
            cx.refuse("Not started", &e.to_string());
            return Vec::new();
        }
    };
    // The goal came from the composer: it is sent now.
    if composer.text() == goal {
        composer.take();
    }
    composer.record(&goal);
    transcripts.follow(&session_id);
    vec![Command::ReflectSession {
        session_id,
        goal,
        max_iterations,
    }]
}

/// The offer of an interrupted run, at start: resume now (`r`), or discard it (`d`: a new run
/// starts over); `n` leaves it for later.
pub fn resume_offer(target: Interruption, name: &str, i: &crate::model::Interrupted) -> Choice {
    let mut message = format!(
        "{} of `{name}` was interrupted",
        crate::text::capitalised(&i.what())
    );
    if let Some(at) = i.at {
        message.push_str(&format!(" at {}", crate::tui::team_panel::local_time(at)));
    }
    if let Some(why) = &i.reason {
        message.push_str(&format!(" ({why})"));
    }
    message.push_str(&format!(
        ".\nGoal: {}\nResumed, it goes on {}; turns it finished are not asked again.",
        crate::text::first_line(&i.goal, 80),
        i.resumes()
    ));
    Choice {
        title: "Interrupted run".into(),
        message,
        options: vec![
            ChoiceOption {
                key: 'r',
                label: "resume it now".into(),
                disabled: None,
            },
            ChoiceOption {
                key: 'd',
                label: "discard it (a new run starts over)".into(),
                disabled: None,
            },
        ],
        chosen: 0,
        verb: "go ahead".into(),
        action: ChoiceAction::Interrupted(target),
    }
}
