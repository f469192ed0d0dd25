//! The new-team preset picker, and the dialogs' results routed to what acts on them (the
//! feature controllers, the run controls).

use super::app::{App, with_cx};
use super::command::Command;
use super::dialogs::{
    ChoiceAction, ConfirmAction, Dialog, DialogResult, ListItem, ListPicker, PickPurpose, TextPurpose,
};
use super::features::{control, edit, prune, relay, team, worktrees};
use crate::model::Tier;
use crate::workspace::WorktreeChoice;

const PRESET_PICKER_TITLE: &str = "New team from a preset";

impl App {
    pub(super) fn open_preset_picker(&mut self) -> Vec<Command> {
        let mut picker = ListPicker::new(PRESET_PICKER_TITLE, PickPurpose::Preset, Vec::new());
        picker.empty_text = "loading presets…".into();
        self.dialogs.push(Dialog::Picker(picker));
        self.refresh_preset_picker();
        // Re-read: the repo's Squad folder or the user presets may have changed.
        vec![Command::LoadCatalog]
    }

    /// Fills an open preset picker from the catalog.
    pub(super) fn refresh_preset_picker(&mut self) {
        let Some(catalog) = &self.catalog else {
            return;
        };
        let mut items = Vec::new();
        for (tier, section) in [
            (Tier::Repo, "From repo (Squad)"),
            (Tier::Builtin, "Built-in"),
            (Tier::User, "My presets"),
        ] {
            for p in catalog.presets.iter().filter(|p| p.tier == Some(tier)) {
                let mut models: Vec<String> = Vec::new();
                let agents = p
                    .orchestrator
                    .iter()
                    .chain(p.evaluator.iter())
                    .map(|a| a.model.clone());
                for m in agents.chain(p.workers.iter().map(|w| w.model.clone())) {
                    let m = m.unwrap_or_else(|| self.config.default_model());
                    if !models.contains(&m) {
                        models.push(m);
                    }
                }
                let mut detail = format!(
                    "{}\nmode {} · {} worker(s) · models {}",
                    p.description.as_deref().unwrap_or(""),
                    p.mode,
                    p.workers.len(),
                    models.join(", ")
                );
                for w in &p.warnings {
                    detail.push_str(&format!("\n⚠ {w}"));
                }
                items.push(ListItem {
                    section: section.to_string(),
                    label: p.name.clone(),
                    tag: if tier == Tier::Repo {
                        "[repo]".into()
                    } else {
                        p.mode.to_string()
                    },
                    detail,
                    value: p.name.clone(),
                    ..ListItem::default()
                });
            }
            // A preset source that cannot be used is listed greyed, with the reason.
            for e in catalog.errors.iter().filter(|e| e.tier == tier) {
                let source = std::path::Path::new(&e.source)
                    .file_name()
                    .map_or(e.source.clone(), |f| f.to_string_lossy().into_owned());
                items.push(ListItem {
                    section: section.to_string(),
                    label: format!("{source} (cannot be used)"),
                    tag: "error".into(),
                    detail: e.message.clone(),
                    disabled: true,
                    ..ListItem::default()
                });
            }
        }
        let errors = catalog.errors.len();
        for p in self.dialogs.pickers(&PickPurpose::Preset) {
            p.set_items(items.clone());
            p.empty_text = if errors > 0 {
                format!("no presets ({errors} could not be loaded)")
            } else {
                "no presets".into()
            };
        }
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
                    self.runs
                        .iter()
                        .map(|r| Command::Stop { key: r.key.clone() })
                        .collect()
                } else {
                    Vec::new()
                };
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
