//! The new-team preset picker: opened empty ("loading presets…"), then filled from the
//! catalog by tier (the repository's Squad team, the built-ins, the user's), each with its
//! mode, members, models and forecast (what runs of teams made from it cost), and the sources
//! that cannot be used greyed with the reason.

use super::Cx;
use crate::describe::cost::preset_forecast;
use crate::model::Tier;
use crate::presets::Catalog;
use crate::presets::instantiate::source_preset_of;
use crate::tui::command::PresetForecasts;
use crate::tui::dialogs::{Dialog, ListItem, ListPicker, PickPurpose};

const PRESET_PICKER_TITLE: &str = "New team from a preset";

/// Opens the picker, empty until the catalog is read.
pub fn open_picker(cx: &mut Cx) {
    let mut picker = ListPicker::new(PRESET_PICKER_TITLE, PickPurpose::Preset, Vec::new());
    picker.empty_text = "loading presets…".into();
    cx.dialogs.push(Dialog::Picker(picker));
}

/// Fills an open preset picker from `catalog` (nothing before it is read); a member without a
/// model of its own is shown with `default_model`.
pub fn refresh_picker(
    cx: &mut Cx,
    catalog: Option<&Catalog>,
    forecasts: &PresetForecasts,
    default_model: &str,
) {
    let Some(catalog) = catalog else {
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
                let m = m.unwrap_or_else(|| default_model.to_string());
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
            // What runs of teams made from it cost (nothing said until it is worked out).
            if let Some((forecast, basis)) = forecasts.get(&source_preset_of(p)) {
                detail.push('\n');
                detail.push_str(&preset_forecast(forecast.as_ref(), basis));
            }
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
    for p in cx.dialogs.pickers(&PickPurpose::Preset) {
        p.set_items(items.clone());
        p.empty_text = if errors > 0 {
            format!("no presets ({errors} could not be loaded)")
        } else {
            "no presets".into()
        };
    }
}
