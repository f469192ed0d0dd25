//! The team controller: team actions that go beyond a dialog, the evaluator switch and save
//! as preset (which lists every file it would touch before writing).

use super::{Cx, Then};
use crate::tui::command::Command;
use crate::tui::dialogs::ConfirmAction;
use crate::workspace::{EditError, EvaluatorSwitch};

const EVALUATOR_BUSY: &str =
    "This team is running. Stop it or wait for it to finish, then switch the evaluator.";

/// Adds an evaluator session (default model) to a reflect team that has none; asks before
/// removing the one it has (its transcript goes with it).
pub fn toggle_evaluator(cx: &mut Cx) -> Vec<Command> {
    let Some(group_id) = cx.team_or_say() else {
        return Vec::new();
    };
    if cx.runs.group_busy(&group_id) {
        cx.refuse("Cannot change the evaluator now", EVALUATOR_BUSY);
        return Vec::new();
    }
    if let Some((session_id, session_name)) = cx.edits.evaluator(&group_id) {
        let mode = cx.org.read(|o| o.group(&group_id).map(|g| g.mode));
        if mode.is_some_and(|m| m.spec().has_evaluator) {
            cx.dialogs.confirm(
                "Evaluator off",
                format!(
                    "Remove the evaluator `{session_name}` and its transcript? The orchestrator will then judge its own work."
                ),
                ConfirmAction::RemoveEvaluator(group_id, session_id),
            );
            return Vec::new();
        }
    }
    match cx.edits.add_evaluator(&group_id) {
        Ok(EvaluatorSwitch::Added { name, model, .. }) => {
            cx.flash.say(format!("evaluator on: {name} ({model})"), false);
        }
        Ok(EvaluatorSwitch::Removed(_)) => {}
        Err(EditError::Busy { .. }) => cx.refuse("Cannot change the evaluator now", EVALUATOR_BUSY),
        Err(e) => cx.flash.say(e.to_string(), true),
    }
    Vec::new()
}

/// The removal the user confirmed: the evaluator's session and transcript go.
pub fn remove_evaluator(cx: &mut Cx, group_id: &str) -> Vec<Command> {
    match cx.edits.remove_evaluator(group_id) {
        Ok(EvaluatorSwitch::Removed(removal)) => {
            cx.flash
                .say("evaluator off: the orchestrator judges its own work", false);
            cx.then(Then::Deleted(removal));
        }
        Ok(EvaluatorSwitch::Added { .. }) => {}
        Err(e) => cx.refuse("Cannot change the evaluator now", &e.to_string()),
    }
    Vec::new()
}

/// Save as preset starts by listing the files; nothing is written before the user agrees.
pub fn save_as_preset(cx: &mut Cx) -> Vec<Command> {
    match cx.team_or_say() {
        Some(group_id) => vec![Command::PlanExport { group_id }],
        None => Vec::new(),
    }
}

/// The files a save would write: the user is asked.
pub fn on_export_planned(cx: &mut Cx, group_id: String, result: Result<Vec<(String, bool)>, String>) {
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
            cx.dialogs.confirm(
                "Save as preset",
                format!(
                    "Saving writes these files (\"change\": it exists and is replaced if its content differs):\n{list}\nSave?"
                ),
                ConfirmAction::Export(group_id),
            );
        }
        Err(e) => cx.dialogs.error("Save as preset failed", e),
    }
}
