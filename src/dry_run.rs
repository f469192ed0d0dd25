//! `huddle run --dry-run`: runs nothing, changes nothing. Says what a run of the team (or of a
//! team made from the preset) will probably cost, from earlier runs on disk: the median and 90th
//! percentile of their cost, tokens and time, and what that goes by; and each model's price,
//! so a cost budget over a model without one is seen before it is refused.

use crate::config::{Config, Paths};
use crate::describe::cost::{forecast_basis, forecast_line, usd};
use crate::headless::{RunFailure, RunRequest};
use crate::model::{AgentFormat, Organization, RunBudget};
use crate::presets::Catalog;
use crate::store::{OrganizationFile, RunFiles};
use crate::text::sanitize;

fn usage(message: impl Into<String>) -> RunFailure {
    RunFailure {
        code: 2,
        message: message.into(),
    }
}

/// What the dry run found, as printed.
pub fn report(paths: &Paths, request: &RunRequest) -> Result<String, RunFailure> {
    let config = Config::load(paths)
        .map_err(|e| RunFailure {
            code: 1,
            message: e.to_string(),
        })?
        .config;
    let file = OrganizationFile::new(paths.organization_file());
    let org: Organization = file
        .inspect()
        .map_err(|reason| RunFailure {
            code: 1,
            message: format!("{} is unreadable: {reason}", file.path().display()),
        })?
        .unwrap_or_default();
    let runs = RunFiles::new(paths.runs_dir());
    let mut out = String::from("huddle: dry run: nothing was run or changed.\n");
    let (what, forecast, models, budget) = if let Some(name) = &request.preset {
        let catalog = Catalog::load(paths, &config, Some(&request.repo));
        let Some(preset) = catalog.find(name) else {
            let known: Vec<&str> = catalog.presets.iter().map(|p| p.name.as_str()).collect();
            return Err(usage(format!(
                "no preset named `{name}` (available: {})",
                known.join(", ")
            )));
        };
        let key = crate::presets::instantiate::source_preset_of(preset);
        let forecast = crate::workspace::forecast_runs(&runs, &org, None, Some(&key));
        let models = crate::presets::models::preset_models(preset, &config);
        let what = format!(
            "a new team from preset `{}` ({}, {} members)",
            preset.name,
            request.mode.unwrap_or(preset.mode),
            models.len()
        );
        (what, forecast, models, preset.budget())
    } else if let Some(name) = &request.group {
        let Some(group) = org.group_by_name(name) else {
            let known: Vec<&str> = org.groups.iter().map(|g| g.name.as_str()).collect();
            return Err(usage(format!(
                "no group named `{name}` (groups: {})",
                known.join(", ")
            )));
        };
        let forecast = crate::workspace::forecast_runs(&runs, &org, Some(&group.id), None);
        let models: Vec<String> = org
            .sessions_in(&group.id)
            .iter()
            .map(|s| s.model.clone())
            .collect();
        let what = format!(
            "team `{}` ({}, {} members)",
            group.name,
            request.mode.unwrap_or(group.mode),
            models.len()
        );
        (what, forecast, models, group.budget)
    } else {
        return Err(usage(
            "--dry-run forecasts a team's run from its earlier ones: add --preset or --group",
        ));
    };
    let (forecast, basis) = forecast;
    out.push_str(&format!("run: {}\n", sanitize::display(&what)));
    out.push_str(&format!("forecast: {}\n", forecast_line(forecast.as_ref()).text));
    out.push_str(&format!("  {}\n", forecast_basis(forecast.as_ref(), &basis).text));
    let models = match &request.model {
        Some(model) => vec![model.clone()],
        None => models,
    };
    out.push_str(&prices(&config, &models));
    let budget = request.budget.or(budget).or(config.budget);
    out.push_str(&budget_line(&config, &budget, &models));
    Ok(sanitize::display(&out).into_owned())
}

/// Each model once, with its price per million tokens (or that it has none).
fn prices(config: &Config, models: &[String]) -> String {
    let book = config.price_book();
    let mut seen: Vec<&str> = Vec::new();
    let mut out = String::from("models:\n");
    for slug in models {
        if seen.contains(&slug.as_str()) {
            continue;
        }
        seen.push(slug);
        let price = match book.rate(slug) {
            Some(rate) if rate.price == crate::model::Price::FREE => {
                format!("{} in / {} out (free)", usd(0.0), usd(0.0))
            }
            Some(rate) => rate.price.per_million(),
            None if reports_cost(config, slug) => "its own figure (the agent reports what it cost)".into(),
            None => "no price: its cost is unknown (give one in config.yaml `prices:`)".into(),
        };
        out.push_str(&format!("  {slug}: {price}\n"));
    }
    out
}

/// A CLI agent that says what each turn cost (Claude Code).
fn reports_cost(config: &Config, slug: &str) -> bool {
    config
        .resolve(slug)
        .is_ok_and(|(p, _)| p.output_format() == AgentFormat::ClaudeStreamJson)
}

/// The run's cost budget, and whether it would be refused.
fn budget_line(config: &Config, budget: &RunBudget, models: &[String]) -> String {
    let Some(max) = budget.max_cost_usd else {
        return String::new();
    };
    let book = config.price_book();
    let unpriced: Vec<&str> = models
        .iter()
        .map(String::as_str)
        .filter(|slug| book.rate(slug).is_none() && !reports_cost(config, slug))
        .collect();
    if unpriced.is_empty() {
        format!("cost budget: {} (max_cost_usd)\n", usd(max))
    } else {
        format!(
            "cost budget: {} (max_cost_usd), but the run would be refused: no price for {}\n",
            usd(max),
            unpriced.join(", ")
        )
    }
}

/// Runs the dry run: prints its report on standard output; the exit code.
pub fn run(paths: &Paths, request: &RunRequest) -> u8 {
    match report(paths, request) {
        Ok(text) => match crate::cli::print_out(&text) {
            Ok(()) => 0,
            Err(e) => e.exit_code(),
        },
        Err(failure) => {
            crate::cli::note(format_args!("huddle: {failure}"));
            failure.code
        }
    }
}
