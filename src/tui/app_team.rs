//! Team actions that go beyond a dialog: the evaluator switch and save as preset (which lists
//! every file it would touch before writing).

use super::app::App;
use super::command::Command;
use super::dialogs::ConfirmAction;
use super::runs::Pending;
use crate::engine::events::RunKey;
use crate::workspace::{EditError, EvaluatorSwitch};

impl App {
    /// Adds an evaluator session (default model) to a reflect team that has none; asks before
    /// removing the one it has (its transcript goes with it).
    pub(super) fn toggle_evaluator(&mut self) -> Vec<Command> {
        let Some(group_id) = self.selected_team() else {
            return Vec::new();
        };
        if self.group_busy(&group_id) {
            self.refuse(
                "Cannot change the evaluator now",
                "This team is running. Stop it or wait for it to finish, then switch the evaluator.",
            );
            return Vec::new();
        }
        if let Some((session_id, session_name)) = self.edits.evaluator(&group_id) {
            let mode = self.org.read(|o| o.group(&group_id).map(|g| g.mode));
            if mode.is_some_and(|m| m.spec().has_evaluator) {
                self.dialogs.confirm(
                    "Evaluator off",
                    format!(
                        "Remove the evaluator `{session_name}` and its transcript? The orchestrator will then judge its own work."
                    ),
                    ConfirmAction::RemoveEvaluator(group_id, session_id),
                );
                return Vec::new();
            }
        }
        match self.edits.add_evaluator(&group_id) {
            Ok(EvaluatorSwitch::Added { name, model, .. }) => {
                self.flash(format!("evaluator on: {name} ({model})"), false);
            }
            Ok(EvaluatorSwitch::Removed(_)) => {}
            Err(EditError::Busy { .. }) => self.refuse(
                "Cannot change the evaluator now",
                "This team is running. Stop it or wait for it to finish, then switch the evaluator.",
            ),
            Err(e) => self.flash(e.to_string(), true),
        }
        Vec::new()
    }

    pub(super) fn remove_evaluator(&mut self, group_id: &str) -> Vec<Command> {
        match self.edits.remove_evaluator(group_id) {
            Ok(EvaluatorSwitch::Removed(removal)) => {
                self.transcripts.forget(&removal.sessions);
                self.flash("evaluator off: the orchestrator judges its own work", false);
                let mut commands = self.on_selection_changed();
                commands.push(Command::RemoveFiles(removal));
                commands
            }
            Ok(EvaluatorSwitch::Added { .. }) => Vec::new(),
            Err(e) => {
                self.refuse("Cannot change the evaluator now", &e.to_string());
                Vec::new()
            }
        }
    }

    /// Save as preset starts by listing the files; nothing is written before the user agrees.
    pub(super) fn save_as_preset(&mut self) -> Vec<Command> {
        match self.selected_team() {
            Some(group_id) => vec![Command::PlanExport { group_id }],
            None => Vec::new(),
        }
    }

    pub(super) fn on_export_planned(
        &mut self,
        group_id: String,
        result: Result<Vec<(String, bool)>, String>,
    ) {
        match result {
            Ok(files) => {
                let list = files
                    .iter()
                    .map(|(f, exists)| {
                        let what = if *exists { "change " } else { "create " };
                        format!("  {what} {f}")
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                self.dialogs.confirm(
                    "Save as preset",
                    format!(
                        "Saving writes these files (\"change\": it exists and is replaced if its content differs):\n{list}\nSave?"
                    ),
                    ConfirmAction::Export(group_id),
                );
            }
            Err(e) => self.dialogs.error("Save as preset failed", e),
        }
    }
}

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
