//! The dialogs' results routed to what acts on them (the feature controllers, the run
//! controls), and the new-team preset picker's routing (`features/presets.rs` fills it).

use super::app::{App, with_cx};
use super::command::Command;
use super::dialogs::{ChoiceAction, ConfirmAction, DialogResult, PickPurpose, TextPurpose};
use super::features::{control, edit, presets, prune, relay, team, worktrees};
use crate::workspace::WorktreeChoice;

impl App {
    pub(super) fn open_preset_picker(&mut self) -> Vec<Command> {
        with_cx!(self, cx => presets::open_picker(&mut cx));
        self.refresh_preset_picker();
        // Re-read: the repo's Squad folder or the user presets may have changed.
        vec![Command::LoadCatalog]
    }

    /// Fills an open preset picker from the catalog.
    pub(super) fn refresh_preset_picker(&mut self) {
        let default_model = self.config.default_model();
        with_cx!(self, cx => presets::refresh_picker(&mut cx, self.catalog.as_ref(), &self.preset_forecasts, &default_model))
    }

    pub(super) fn on_dialog_result(&mut self, result: DialogResult) -> Vec<Command> {
        match result {
            DialogResult::Confirmed(action) => self.on_confirmed(action),
            DialogResult::Text(TextPurpose::ReflectIterations(id, goal), text) => {
                with_cx!(self, cx => control::start_reflection(&mut cx, &mut self.composer, &mut self.transcripts, id, goal, &text))
            }
            DialogResult::Text(TextPurpose::RelayEdit(id), text) => {
                with_cx!(self, cx => relay::on_text(&mut cx, id, text, true))
            }
            DialogResult::Text(TextPurpose::RelayNote(id), text) => {
                with_cx!(self, cx => relay::on_text(&mut cx, id, text, false))
            }
            DialogResult::Checked(purpose, answer) => {
                with_cx!(self, cx => super::features::tool_servers::apply(&mut cx, purpose, answer))
            }
            DialogResult::Relay { group_id, choice } => {
                with_cx!(self, cx => relay::on_choice(&mut cx, group_id, choice))
            }
            DialogResult::Text(purpose, text) => {
                match with_cx!(self, cx => edit::apply_text(&mut cx, &self.config, purpose, text)) {
                    Ok(commands) => commands,
                    Err(e) => {
                        self.dialogs.error("Not changed", e);
                        Vec::new()
                    }
                }
            }
            DialogResult::Approval {
                approval_id,
                decision,
            } => vec![Command::AnswerApproval {
                approval_id,
                decision,
            }],
            DialogResult::Chose(ChoiceAction::Merge(plan), option) => {
                with_cx!(self, cx => self.worktrees.merge(&mut cx, plan, option))
            }
            DialogResult::Chose(ChoiceAction::DeleteGroup(id), option) => {
                with_cx!(self, cx => edit::delete_group(&mut cx, &id, worktrees::removal_choice(option)))
            }
            DialogResult::Chose(ChoiceAction::Interrupted(target), option) => {
                self.on_interrupted(target, option == 0)
            }
            DialogResult::Chose(ChoiceAction::Quit, option) => {
                let mut commands: Vec<Command> = if option == 1 {
                    // Only the runs this TUI started (other front ends' go on).
                    self.runs
                        .iter()
                        .filter(|r| !self.edits.is_remote() || self.started.contains(&r.key))
                        .map(|r| Command::Stop { key: r.key.clone() })
                        .collect()
                } else {
                    Vec::new()
                };
                self.quit_stops_mine = option == 1;
                self.should_quit = true;
                commands.push(Command::Quit);
                commands
            }
            DialogResult::MergeWorktree(worktree) => {
                with_cx!(self, cx => worktrees::plan_merge(&mut cx, worktree))
            }
            DialogResult::Picked(purpose, value) => match self.apply_pick(purpose, value) {
                Ok(commands) => commands,
                Err(e) => {
                    self.dialogs.error("Not changed", e);
                    Vec::new()
                }
            },
        }
    }

    fn on_confirmed(&mut self, action: ConfirmAction) -> Vec<Command> {
        match action {
            ConfirmAction::Quit => {
                self.should_quit = true;
                vec![Command::Quit]
            }
            // The user saw every file, the existing ones marked: replacing them is agreed.
            ConfirmAction::ExportOverwrite(group_id) | ConfirmAction::Export(group_id) => {
                vec![Command::ExportGroup {
                    group_id,
                    confirmed: true,
                }]
            }
            ConfirmAction::RemoveEvaluator(group_id, _) => {
                with_cx!(self, cx => team::remove_evaluator(&mut cx, &group_id))
            }
            ConfirmAction::PruneHeadless(leftovers) => {
                with_cx!(self, cx => prune::confirmed(&mut cx, leftovers))
            }
            ConfirmAction::DeleteGroup(id) => {
                with_cx!(self, cx => edit::delete_group(&mut cx, &id, WorktreeChoice::Keep))
            }
            ConfirmAction::DeleteSession(id) => with_cx!(self, cx => edit::delete_session(&mut cx, &id)),
        }
    }

    /// A pick: a preset and a strategy make a team (the worktrees controller), the others
    /// change the organization (the edit controller).
    fn apply_pick(&mut self, purpose: PickPurpose, value: String) -> Result<Vec<Command>, String> {
        match purpose {
            PickPurpose::Preset => {
                let catalog = self.catalog.as_ref().ok_or("the presets are still loading")?;
                let preset = catalog
                    .find(&value)
                    .ok_or_else(|| format!("no preset named `{value}`"))?
                    .clone();
                Ok(with_cx!(self, cx => self.worktrees.on_preset_picked(&mut cx, preset)))
            }
            PickPurpose::Strategy(preset) => {
                let catalog = self.catalog.as_ref();
                with_cx!(self, cx => self.worktrees.on_strategy_picked(&mut cx, catalog, &preset, &value))
            }
            purpose => with_cx!(self, cx => edit::apply_pick(&mut cx, &self.config, purpose, value)),
        }
    }
}
