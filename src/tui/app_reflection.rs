//! A plain session's reflection in the app: asking its max iterations (the goal is the
//! composer's text or the session's last prompt), starting it, pausing and resuming it.

use super::app::App;
use super::command::Command;
use super::runs::Pending;
use crate::engine::events::RunKey;

/// Max iterations offered for a single-session reflection (a session iterates on its own
/// answer: fewer rounds than a team's default).
const DEFAULT_REFLECT_ITERATIONS: u32 = 3;

impl App {
    /// The selected session, when a reflection of it started here is running.
    pub(super) fn selected_reflection(&self) -> Option<crate::model::SessionId> {
        self.selected_session_id().filter(|id| self.reflecting(id))
    }

    /// Asks the max iterations of a reflection of the selected plain session; the goal is the
    /// composer's text, else the session's last prompt.
    pub(super) fn open_reflect(&mut self) {
        let Some(id) = self.selected_session_id() else {
            self.flash("select a plain session to reflect on", true);
            return;
        };
        let team = self.org.read(|o| {
            o.session(&id)
                .is_some_and(|s| s.team || o.group(&s.group_id).is_some_and(|g| g.is_team()))
        });
        if team {
            self.flash(
                "a team reflects with its orchestrator_reflect mode (M to set it)",
                true,
            );
            return;
        }
        if self.session_busy(&id) {
            self.flash("this session is busy: wait for it or stop it first", true);
            return;
        }
        let typed = self.composer.text();
        let goal = if !typed.trim().is_empty() {
            Some(typed)
        } else {
            self.transcripts.last_prompt(&id)
        };
        let Some(goal) = goal else {
            self.flash("write the goal in the composer first (or chat once)", true);
            return;
        };
        let title = format!(
            "Reflect: max iterations ({}-{})",
            crate::model::MAX_ITERATIONS.start(),
            crate::model::MAX_ITERATIONS.end()
        );
        self.dialogs.push(super::dialogs::Dialog::Text(Box::new(
            super::dialogs::TextInput::new(
                &title,
                super::dialogs::TextPurpose::ReflectIterations(id, goal),
                &DEFAULT_REFLECT_ITERATIONS.to_string(),
                false,
            ),
        )));
    }

    /// Starts the reflection the dialog confirmed.
    pub(super) fn start_reflection(
        &mut self,
        session_id: crate::model::SessionId,
        goal: String,
        text: &str,
    ) -> Result<Vec<Command>, String> {
        let max_iterations = crate::model::limits::parse_max_iterations(text).map_err(|e| e.to_string())?;
        // The goal came from the composer: it is sent now.
        if self.composer.text() == goal {
            self.composer.take();
        }
        self.composer.record(&goal);
        self.transcripts.follow(&session_id);
        Ok(vec![Command::ReflectSession {
            session_id,
            goal,
            max_iterations,
        }])
    }

    pub(super) fn toggle_pause_reflection(&mut self, session_id: crate::model::SessionId) -> Vec<Command> {
        let key = RunKey::reflection(&session_id);
        let Some(run) = self.runs.reflection(&session_id) else {
            return Vec::new();
        };
        let paused = run.paused_as_shown();
        if paused {
            self.runs.request(&key, Pending::Resuming);
            self.flash_until(
                "resuming the reflection",
                super::flash::FlashTie::Pending(key.clone()),
            );
            vec![Command::Resume { key }]
        } else {
            self.runs.request(&key, Pending::Pausing);
            self.flash_until(
                "pausing the reflection after the step in flight…",
                super::flash::FlashTie::Pending(key.clone()),
            );
            vec![Command::Pause { key }]
        }
    }
}
