//! How the app takes engine events and command results.

use std::time::Instant;

use super::app::App;
use super::command::{AppEvent, Command, ExportOutcome};
use super::dialogs::{Confirm, ConfirmAction, Dialog, Notice};
use crate::engine::events::EngineEvent;

impl App {
    pub fn handle_app_event(&mut self, event: AppEvent) -> Vec<Command> {
        let commands = match event {
            AppEvent::Engine(e) => self.handle_engine_event(e),
            AppEvent::TranscriptLoaded { session_id, result } => {
                let view = self.views.entry(session_id).or_default();
                match result {
                    Ok(loaded) => {
                        view.set_messages(loaded.messages);
                        view.load_error = None;
                    }
                    Err(e) => {
                        view.loaded = true;
                        view.load_error = Some(e);
                    }
                }
                // A finished turn's streamed text is now in the messages.
                if view
                    .streaming
                    .as_ref()
                    .is_some_and(|(g, _)| view.finished_generation >= *g)
                {
                    view.streaming = None;
                }
                Vec::new()
            }
            AppEvent::CatalogLoaded(catalog) => {
                let repo_error = catalog
                    .errors
                    .iter()
                    .find(|e| e.tier == crate::model::Tier::Repo)
                    .map(|e| e.message.lines().next().unwrap_or_default().to_string());
                self.catalog = Some(*catalog);
                self.refresh_preset_picker();
                // The picker lists it greyed; without the picker open, say it in the status line.
                if let Some(why) = repo_error
                    && self.dialogs.is_empty()
                {
                    self.flash(
                        format!("the repo's Squad folder cannot be used: {why} (see the new-team picker)"),
                        true,
                    );
                }
                Vec::new()
            }
            AppEvent::RunEnded { group_id, result } => {
                self.running.remove(&group_id);
                self.pause_requested.remove(&group_id);
                if let Err(e) = result {
                    self.dialogs.push(Dialog::Notice(Notice::error("Run failed", e)));
                } else if let Ok(report) = result
                    && let Some(why) = &report.failed
                {
                    self.flash(format!("the run failed: {why}"), true);
                }
                Vec::new()
            }
            AppEvent::ChatEnded { session_id, error } => {
                if let Some(n) = self.chats.get_mut(&session_id) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.chats.remove(&session_id);
                    }
                }
                if let Some(e) = error {
                    let name = self
                        .org
                        .read(|o| o.session(&session_id).map(|s| s.name.clone()))
                        .unwrap_or_default();
                    self.flash(format!("{name}: {e}"), true);
                }
                Vec::new()
            }
            AppEvent::ReflectionEnded { session_id, result } => {
                self.reflecting.remove(&session_id);
                match result {
                    Err(e) => self
                        .dialogs
                        .push(Dialog::Notice(Notice::error("Reflection failed", e))),
                    Ok(report) => match &report.failed {
                        Some(why) => self.flash(format!("the reflection failed: {why}"), true),
                        None => self.flash(
                            format!(
                                "reflection ended: {} after {} iteration(s)",
                                report.outcome, report.iterations
                            ),
                            false,
                        ),
                    },
                }
                Vec::new()
            }
            AppEvent::ExportPlanned { group_id, result } => {
                self.on_export_planned(group_id, result);
                Vec::new()
            }
            AppEvent::Exported(result) => {
                match result {
                    Ok(text) => self.dialogs.push(Dialog::Notice(Notice::info("Saved as preset", text))),
                    Err(ExportOutcome::WouldOverwrite { group_id, files }) => {
                        self.dialogs.push(Dialog::Confirm(Confirm::new(
                            "Replace files?",
                            format!(
                                "These files exist with different content and would be replaced:\n{}\nReplace them?",
                                files.iter().map(|f| format!("  {f}")).collect::<Vec<_>>().join("\n")
                            ),
                            ConfirmAction::ExportOverwrite(group_id),
                        )))
                    }
                    Err(ExportOutcome::Failed(e)) => {
                        self.dialogs.push(Dialog::Notice(Notice::error("Save as preset failed", e)))
                    }
                }
                Vec::new()
            }
        };
        self.refresh_placeholder();
        commands
    }

    fn handle_engine_event(&mut self, event: EngineEvent) -> Vec<Command> {
        let now = Instant::now();
        let group_id = self
            .org
            .read(|o| o.group_by_name(event.group()).map(|g| g.id.clone()));
        let mut commands = Vec::new();
        match &event {
            EngineEvent::Delta {
                session,
                generation,
                text,
                ..
            } => {
                if let Some(view) = self.view_by_name(session) {
                    view.delta(*generation, text);
                }
                return commands;
            }
            EngineEvent::TurnStarted {
                session, generation, ..
            } => {
                if let Some(id) = self.session_id_by_name(session) {
                    self.busy.insert(id);
                }
                if let Some(view) = self.view_by_name(session) {
                    view.streaming = Some((*generation, String::new()));
                }
            }
            EngineEvent::TurnFinished {
                session, generation, ..
            } => {
                let id = self.session_id_by_name(session);
                if let Some(id) = id {
                    self.busy.remove(&id);
                    if self.selected_session_id().as_deref() == Some(id.as_str()) {
                        if let Some(v) = self.views.get_mut(&id) {
                            v.finished_generation = v.finished_generation.max(*generation);
                        }
                        commands.push(Command::LoadTranscript { session_id: id });
                    } else {
                        // Reloaded when it is next on screen.
                        self.views.remove(&id);
                        self.unread.insert(id);
                    }
                }
            }
            // A plain group's "cycle" is a session reflecting (tracked in `reflecting`).
            EngineEvent::CycleStarted { .. } => {
                if let Some(id) = group_id.as_ref().filter(|id| self.is_team(id)) {
                    self.running.insert(id.clone());
                }
            }
            EngineEvent::CyclePaused { .. } => {
                if let Some(id) = &group_id {
                    self.pause_requested.insert(id.clone());
                }
            }
            EngineEvent::CycleResumed { .. } | EngineEvent::CycleFinished { .. } => {
                if let Some(id) = &group_id {
                    self.pause_requested.remove(id);
                }
            }
            _ => {}
        }
        if let Some(id) = group_id
            && !matches!(event, EngineEvent::Message { .. })
            && (self.is_team(&id) || self.cycles.contains_key(&id))
        {
            let prefix = format!("{}-", crate::presets::instantiate::team_slug(event.group()));
            let cycle = self.cycles.entry(id.clone()).or_default();
            cycle.name_prefix = prefix;
            cycle.apply(&event, now);
            if matches!(event, EngineEvent::CycleStarted { .. }) {
                // A resumed cycle keeps the scores and tokens of its earlier iterations.
                let saved = self.org.read(|o| {
                    o.group(&id)
                        .and_then(|g| g.reflection.clone())
                        .filter(|r| r.active && r.completed_iterations > 0)
                });
                if let (Some(r), Some(cycle)) = (saved, self.cycles.get_mut(&id)) {
                    cycle.seed_history(&r);
                }
            }
        }
        commands
    }

    fn session_id_by_name(&self, session: &str) -> Option<crate::model::SessionId> {
        self.org
            .read(|o| o.session_by_name(session).map(|s| s.id.clone()))
    }

    fn view_by_name(&mut self, session: &str) -> Option<&mut super::transcript_view::TranscriptView> {
        let id = self.session_id_by_name(session)?;
        self.views.get_mut(&id)
    }
}
