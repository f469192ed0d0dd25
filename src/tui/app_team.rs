//! Team actions that go beyond a dialog: the evaluator switch and save as preset (which lists
//! every file it would touch before writing).

use super::app::App;
use super::command::Command;
use super::dialogs::{Confirm, ConfirmAction, Dialog, Notice};
use crate::model::{Mode, Role, Session};
use crate::presets::instantiate::team_slug;

impl App {
    /// Adds an evaluator session (default model) to a reflect team that has none; asks before
    /// removing the one it has (its transcript goes with it).
    pub(super) fn toggle_evaluator(&mut self) -> Vec<Command> {
        let Some(group_id) = self.selected_team() else {
            return Vec::new();
        };
        let Some((mode, name, evaluator)) = self.org.read(|o| {
            let g = o.group(&group_id)?;
            let sessions = o.sessions_in(&group_id);
            let by_name = g
                .evaluator
                .as_ref()
                .and_then(|n| sessions.iter().find(|s| &s.name == n));
            let evaluator = by_name
                .or_else(|| sessions.iter().find(|s| s.role == Role::Evaluator))
                .map(|s| (s.id.clone(), s.name.clone()));
            Some((g.mode, g.name.clone(), evaluator))
        }) else {
            return Vec::new();
        };
        if mode != Mode::OrchestratorReflect {
            self.flash(
                "an evaluator scores orchestrator_reflect cycles only: set that mode first",
                true,
            );
            return Vec::new();
        }
        if self.group_busy(&group_id) {
            self.refuse(
                "Cannot change the evaluator now",
                "This team is running. Stop it or wait for it to finish, then switch the evaluator.",
            );
            return Vec::new();
        }
        match evaluator {
            Some((session_id, session_name)) => {
                self.dialogs.push(Dialog::Confirm(Confirm::new(
                    "Evaluator off",
                    format!(
                        "Remove the evaluator `{session_name}` and its transcript? The orchestrator will then judge its own work."
                    ),
                    ConfirmAction::RemoveEvaluator(group_id, session_id),
                )));
            }
            None => {
                let model = self.config.default_model();
                let repo = self.repo.clone();
                let added = self.org.update(|o| {
                    let name = o.unique_session_name(&format!("{}-evaluator", team_slug(&name)));
                    let order = o.next_session_order(&group_id);
                    let group_repo = o.group(&group_id).and_then(|g| g.repo.clone());
                    let mut s = Session::new(name.clone(), &group_id, model.clone());
                    s.role = Role::Evaluator;
                    s.team = true;
                    s.order = order;
                    s.repo = group_repo.or(Some(repo));
                    o.sessions.push(s);
                    if let Some(g) = o.group_mut(&group_id) {
                        g.evaluator = Some(name.clone());
                    }
                    name
                });
                self.flash(format!("evaluator on: {added} ({model})"), false);
            }
        }
        Vec::new()
    }

    pub(super) fn remove_evaluator(&mut self, group_id: &str, session_id: &str) -> Vec<Command> {
        if self.group_busy(group_id) {
            self.refuse(
                "Cannot change the evaluator now",
                "This team started running. Stop it first.",
            );
            return Vec::new();
        }
        self.org.update(|o| {
            o.sessions.retain(|s| s.id != session_id);
            if let Some(g) = o.group_mut(group_id) {
                g.evaluator = None;
            }
        });
        self.views.remove(session_id);
        self.flash("evaluator off: the orchestrator judges its own work", false);
        let mut commands = self.on_selection_changed();
        commands.push(Command::RemoveTranscripts {
            session_ids: vec![session_id.to_string()],
        });
        commands
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
                self.dialogs.push(Dialog::Confirm(Confirm::new(
                    "Save as preset",
                    format!(
                        "Saving writes these files (\"change\": it exists and is replaced if its content differs):\n{list}\nSave?"
                    ),
                    ConfirmAction::Export(group_id),
                )));
            }
            Err(e) => self
                .dialogs
                .push(Dialog::Notice(Notice::error("Save as preset failed", e))),
        }
    }
}

/// Max iterations offered for a single-session reflection.
const DEFAULT_REFLECT_ITERATIONS: u32 = 3;

impl App {
    /// The selected session, when a reflection of it started here is running.
    pub(super) fn selected_reflection(&self) -> Option<crate::model::SessionId> {
        self.selected_session_id()
            .filter(|id| self.reflecting.contains_key(id))
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
            self.views.get(&id).and_then(|v| {
                v.messages
                    .iter()
                    .rev()
                    .find(|m| m.role == crate::model::MessageRole::User)
                    .map(|m| m.text.clone())
            })
        };
        let Some(goal) = goal else {
            self.flash("write the goal in the composer first (or chat once)", true);
            return;
        };
        self.dialogs.push(super::dialogs::Dialog::Text(Box::new(
            super::dialogs::TextInput::new(
                "Reflect: max iterations (1-20)",
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
        let max_iterations: u32 = text
            .parse()
            .ok()
            .filter(|n| (1..=20).contains(n))
            .ok_or_else(|| format!("`{text}` is not a number from 1 to 20"))?;
        // The goal came from the composer: it is sent now.
        if self.composer.text() == goal {
            self.composer.take();
        }
        self.history.record(&goal);
        self.reflecting.insert(session_id.clone(), false);
        if let Some(v) = self.views.get_mut(&session_id) {
            v.follow();
        }
        Ok(vec![Command::ReflectSession {
            session_id,
            goal,
            max_iterations,
        }])
    }

    pub(super) fn toggle_pause_reflection(&mut self, session_id: crate::model::SessionId) -> Vec<Command> {
        let Some(paused) = self.reflecting.get_mut(&session_id) else {
            return Vec::new();
        };
        *paused = !*paused;
        if *paused {
            self.flash("pausing the reflection after the step in flight…", false);
            vec![Command::PauseReflection { session_id }]
        } else {
            self.flash("resuming the reflection", false);
            vec![Command::ResumeReflection { session_id }]
        }
    }
}
