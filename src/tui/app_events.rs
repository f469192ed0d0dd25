//! How the app takes engine events and command results. Everything is keyed by ids, so a
//! rename during a run changes nothing here; a finished turn's event carries the stored message,
//! so a transcript is read from disk only when a session is first shown.

use std::time::Instant;

use super::app::{App, with_cx};
use super::command::{AppEvent, Command};
use super::dialogs::{ApprovalRequest, ConfirmAction};
use super::features::{conversation, relay, team};
use super::team_panel::replay;
use crate::engine::events::{EngineEvent, EventKind, RunKey};
use crate::workspace::{ExportOutcome, LoadedRun};

impl App {
    pub fn handle_app_event(&mut self, event: AppEvent) -> Vec<Command> {
        // A streamed piece changes no placeholder, and a burst of them (a team streaming at
        // once) is most events: working the placeholder out again walks the sidebar's rows.
        let piece = matches!(&event, AppEvent::Engine(e) if matches!(e.kind, EventKind::Delta { .. }));
        let commands = match event {
            AppEvent::Engine(e) => self.handle_engine_event(e),
            // Drawn anew; what was selected and went is left as a deleted one is.
            AppEvent::OrgChanged => {
                self.mark_interrupted(None);
                self.follow_selection()
            }
            AppEvent::TranscriptLoaded { session_id, result } => {
                self.transcripts.loaded(session_id, result);
                Vec::new()
            }
            AppEvent::RunLoaded { group_id, result } => {
                self.on_run_loaded(group_id, result);
                Vec::new()
            }
            AppEvent::ForecastLoaded {
                group_id,
                forecast,
                basis,
            } => {
                self.team_panel.forecasts.insert(group_id, (forecast, basis));
                Vec::new()
            }
            AppEvent::PresetForecasts(forecasts) => {
                self.preset_forecasts = forecasts;
                self.refresh_preset_picker();
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
            AppEvent::HostLost { why } => {
                self.on_host_lost(&why);
                Vec::new()
            }
            AppEvent::Reconnected(reconnected, ack) => {
                let commands = self.on_reconnected(reconnected);
                let _ = ack.send(());
                commands
            }
            AppEvent::Refused { title, error } => {
                self.dialogs.error(title, error);
                Vec::new()
            }
            AppEvent::ExportPlanned { group_id, result } => {
                with_cx!(self, cx => team::on_export_planned(&mut cx, group_id, result));
                Vec::new()
            }
            AppEvent::Exported { group_id, result } => {
                match result {
                    Ok(text) => self.dialogs.info("Saved as preset", text),
                    Err(ExportOutcome::WouldOverwrite { files }) => self.dialogs.confirm(
                        "Replace files?",
                        format!(
                            "These files exist with different content and would be replaced:\n{}\nReplace them?",
                            files.iter().map(|f| format!("  {f}")).collect::<Vec<_>>().join("\n")
                        ),
                        ConfirmAction::ExportOverwrite(group_id),
                    ),
                    Err(ExportOutcome::Failed(e)) => {
                        self.dialogs.error("Save as preset failed", e)
                    }
                }
                Vec::new()
            }
            AppEvent::Edited { target, result } => {
                self.on_edited(target, result);
                Vec::new()
            }
            AppEvent::RepoFiles(files) => {
                self.composer.attach.set_files(files);
                self.sync_attachments()
            }
            AppEvent::RepoFilesFound { working_dir, found } => {
                self.transcripts.repo_files_found(working_dir, found);
                Vec::new()
            }
            AppEvent::AgentCardRead { provider, card } => {
                self.transcripts.agent_card_read(provider, card);
                Vec::new()
            }
            AppEvent::WorktreeTick => {
                let mut commands = self.find_repo_files(true);
                commands
                    .extend(with_cx!(self, cx => self.worktrees.on_event(&mut cx, AppEvent::WorktreeTick)));
                commands
            }
            AppEvent::AttachmentRead { name, result } => self.on_attachment_read(&name, result),
            AppEvent::InputsLoaded(inputs) => {
                self.on_inputs_loaded(inputs);
                Vec::new()
            }
            AppEvent::Forked { result } => with_cx!(self, cx => conversation::on_forked(&mut cx, result)),
            worktree_event => with_cx!(self, cx => self.worktrees.on_event(&mut cx, worktree_event)),
        };
        if !piece {
            self.refresh_placeholder();
        }
        commands
    }

    /// The `a2a` provider a session on `model` talks to, if its model is a remote A2A agent.
    pub(super) fn a2a_provider_of(&self, model: &str) -> Option<String> {
        self.config
            .resolve(model)
            .ok()
            .filter(|(p, _)| p.kind == crate::config::ProviderKind::A2a)
            .map(|(p, _)| p.name.clone())
    }

    /// Asks the runtime for the card of the remote A2A agent the selected session talks to
    /// (its header's words), the first time such a session is shown.
    pub(super) fn read_agent_card(&mut self) -> Vec<Command> {
        let Some(session_id) = self.selected_session_id() else {
            return Vec::new();
        };
        let model = self.org.read(|o| o.session(&session_id).map(|s| s.model.clone()));
        match model.and_then(|m| self.a2a_provider_of(&m)) {
            Some(provider) if self.transcripts.ask_agent_card(&provider) => {
                vec![Command::ReadAgentCard { provider }]
            }
            _ => Vec::new(),
        }
    }

    /// Asks the runtime for the selected session's `AGENTS.md` files and skills (its header's
    /// words): the first time its working directory is shown, and `again` on the periodic tick.
    pub(super) fn find_repo_files(&mut self, again: bool) -> Vec<Command> {
        let Some(session_id) = self.selected_session_id() else {
            return Vec::new();
        };
        let working_dir = self.org.read(|o| {
            o.session(&session_id)
                .and_then(|s| s.working_dir(o.group(&s.group_id)))
        });
        let Some(working_dir) = working_dir else {
            return Vec::new();
        };
        let first = self.transcripts.ask_repo_files(&working_dir);
        if first || again {
            vec![Command::FindRepoFiles { working_dir }]
        } else {
            Vec::new()
        }
    }

    fn handle_engine_event(&mut self, event: EngineEvent) -> Vec<Command> {
        let now = Instant::now();
        if let Some(ended) = self.runs.apply_at(&event, now) {
            self.started.remove(&ended);
            self.on_run_ended(&ended, &event);
        }
        self.follow_approvals(&event);
        let (org, sidebar) = (&self.org, &self.sidebar);
        self.transcripts.on_event(&event.kind, |id| {
            org.read(|o| sidebar.selected_session_id(o)).as_deref() == Some(id)
        });
        if let EventKind::Delta {
            session_id,
            session,
            text,
            ..
        } = &event.kind
        {
            // Streaming text goes to no timeline; a team member's row shows its last line (of
            // the team's run: a direct chat with it is not the team's).
            if !self.runs.is_chat(&event) {
                self.team_panel.on_delta(&event, session_id, session, text);
            }
            return Vec::new();
        }
        self.follow_team_run(&event, now);
        if let EventKind::RunEnded {
            key: RunKey::Team { group_id },
            ..
        } = &event.kind
        {
            self.mark_interrupted(Some(group_id));
        }
        with_cx!(self, cx => relay::follow(&mut cx, &self.team_panel, &event));
        // After the team's view followed (a plan takes the queued messages there).
        self.settle_flash();
        let mut commands = match &event.kind {
            EventKind::TurnFinished { session_id, .. } => {
                with_cx!(self, cx => self.worktrees.on_turn(&mut cx, session_id))
            }
            // A team run that ended is one more to go by for the next one's forecast.
            EventKind::RunEnded {
                key: RunKey::Team { group_id },
                ..
            } => vec![Command::LoadForecast {
                group_id: group_id.clone(),
            }],
            _ => Vec::new(),
        };
        if self.config.notify != super::notify::NotifyMode::Off
            && let Some(n) = super::notify::decide(&event)
        {
            commands.push(Command::Notify(n));
        }
        commands
    }

    /// A team's run that ended but was left open (stopped while it waited for a limit, or by
    /// its front end going away) reads as interrupted, resumable with the pause key; one
    /// discarded or resumed elsewhere no longer does. For `group` only, else every team's.
    fn mark_interrupted(&mut self, group: Option<&str>) {
        let open: Vec<(String, bool)> = self.org.read(|o| {
            o.groups
                .iter()
                .filter(|g| group.is_none_or(|id| g.id == id))
                .map(|g| (g.id.clone(), g.state.interrupted(g.mode).is_some()))
                .collect()
        });
        for (id, interrupted) in open {
            if self.team_running(&id) {
                continue;
            }
            if let Some(c) = self.team_panel.cycles.get_mut(&id).filter(|c| !c.running) {
                c.interrupted = interrupted;
            }
        }
    }

    /// A call waiting for approval joins the popup's queue; one settled elsewhere (its run
    /// stopped) leaves it, as do those of a run that ended. One of a run another front end
    /// started (`huddle mcp`, `huddle run`) is asked there: the status line says so, no popup.
    fn follow_approvals(&mut self, event: &EngineEvent) {
        match &event.kind {
            EventKind::ToolApprovalRequested {
                session,
                server,
                tool,
                ..
            } => {
                let elsewhere = event
                    .run_id
                    .as_deref()
                    .and_then(|r| self.edits.asked_elsewhere(r));
                if let Some(front) = elsewhere {
                    let said =
                        crate::describe::tools::approval_asked_elsewhere(session, server, tool, &front);
                    self.flash(said, false);
                } else if let Some(request) = ApprovalRequest::from_event(event) {
                    self.dialogs.request_approval(request);
                }
            }
            EventKind::ToolApprovalDecided { approval_id, .. } => {
                self.dialogs.settle_approvals(|r| r.approval_id == *approval_id);
            }
            EventKind::RunEnded { .. } if event.run_id.is_some() => {
                self.dialogs
                    .settle_approvals(|r| r.run_id.as_deref() == event.run_id.as_deref());
            }
            _ => {}
        }
    }

    /// The cycle view of a team follows its run's events; a session's reflection, shown with
    /// its group, too. A direct chat with a member is the member's, not the team's run.
    fn follow_team_run(&mut self, event: &EngineEvent, now: Instant) {
        let id = &event.group_id;
        if matches!(event.kind, EventKind::Message { .. } | EventKind::Notice { .. })
            || !(self.is_team(id) || self.team_panel.knows(id))
            || self.runs.is_chat(event)
        {
            return;
        }
        let org = &self.org;
        self.team_panel.follow(
            event,
            now,
            || org.read(|o| o.group(id).and_then(|g| g.state.orchestrator_reflect.clone())),
            || org.read(|o| crate::describe::Names::for_group(o, id, &event.group)),
        );
    }

    /// Tells the user how a run they cannot see the end of ended (a failure, a reflection's
    /// outcome).
    fn on_run_ended(&mut self, key: &RunKey, event: &EngineEvent) {
        let EventKind::RunEnded {
            outcome,
            iterations,
            failed,
            ..
        } = &event.kind
        else {
            return;
        };
        let name = |app: &App, session_id: &str| {
            app.org
                .read(|o| crate::describe::Names::of_session(o, session_id))
                .unwrap_or_default()
        };
        match (key, failed) {
            (RunKey::Chat { session_id }, Some(e)) => {
                let who = name(self, session_id);
                self.flash(format!("{who}: {e}"), true);
            }
            (RunKey::Chat { .. }, None) => {}
            (RunKey::Team { .. }, Some(e)) if outcome.is_none() => {
                self.dialogs.error("Run failed", e.clone());
            }
            (RunKey::Team { .. }, Some(e)) => self.flash(format!("the run failed: {e}"), true),
            (RunKey::Team { .. }, None) => {}
            (RunKey::Reflection { .. }, Some(e)) if outcome.is_none() => {
                self.dialogs.error("Reflection failed", e.clone());
            }
            (RunKey::Reflection { .. }, Some(e)) => self.flash(format!("the reflection failed: {e}"), true),
            (RunKey::Reflection { .. }, None) => self.flash(
                format!(
                    "reflection ended: {} after {iterations} iteration(s)",
                    outcome.map(|o| o.to_string()).unwrap_or_default()
                ),
                false,
            ),
        }
    }

    /// A run file read back: the newest becomes the team's timeline (unless a live run has
    /// begun meanwhile); an earlier one is shown until the user goes back to the newest.
    fn on_run_loaded(&mut self, group_id: String, result: Result<Option<LoadedRun>, String>) {
        let loaded = match result {
            Ok(Some(loaded)) => loaded,
            Ok(None) => return,
            Err(e) => {
                self.flash(format!("cannot read the run: {e}"), true);
                return;
            }
        };
        // Resumable: the group's run was left interrupted, and this file is of its last part
        // (not a run before it, read while a new one begins).
        let (names, resumable) = self.org.read(|o| {
            o.group(&group_id)
                .map_or((crate::describe::Names::default(), false), |g| {
                    let interrupted = g.state.interrupted(g.mode).is_some()
                        && g.state
                            .run
                            .as_ref()
                            .is_none_or(|open| open.current().is_none_or(|id| id == loaded.run_id));
                    (crate::describe::Names::of_members(o, &group_id), interrupted)
                })
        });
        let view = replay(&loaded, names, resumable);
        let live = self.team_running(&group_id);
        self.team_panel.on_run_loaded(group_id, &loaded, view, live);
    }
}
