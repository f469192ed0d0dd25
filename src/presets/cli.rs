//! The text of `huddle presets list` and `huddle presets show` (returned, the CLI prints it).
//! Models shown are the resolved ones: a member without a usable model shows the default.

use serde_json::{Value, json};
use unicode_width::UnicodeWidthStr;

use crate::config::Config;
use crate::hooks::{HookEvent, Hooks};
use crate::model::Preset;
use crate::sandbox::SandboxSettings;

use super::catalog::Catalog;
use super::models::resolved;

/// `presets show` of a name no preset has.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no preset named `{name}` (available: {available})")]
pub struct PresetNotFound {
    pub name: String,
    pub available: String,
}

/// `huddle presets list [--json]`: a table (name, tier, mode, workers, warnings), then every
/// warning and every source that could not be loaded; or a JSON array of presets (without
/// prompts and contexts). In JSON mode the load errors are not in the output: print
/// [`errors_text`] to stderr.
pub fn presets_list(catalog: &Catalog, config: &Config, json: bool) -> String {
    if json {
        let list: Vec<Value> = catalog
            .presets
            .iter()
            .map(|p| preset_json(p, config, false))
            .collect();
        return serde_json::to_string_pretty(&Value::Array(list)).unwrap_or_else(|_| "[]".into()) + "\n";
    }
    let header = ["NAME", "TIER", "MODE", "WORKERS", "WARNINGS"].map(String::from);
    let mut rows = vec![header];
    for p in &catalog.presets {
        rows.push([
            p.name.clone(),
            p.tier.map_or("-", |t| t.as_str()).to_string(),
            p.mode.to_string(),
            p.workers.len().to_string(),
            p.warnings.len().to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|c| rows.iter().map(|r| r[c].width()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if c + 1 < row.len() {
                line.push_str(&" ".repeat(widths[c] - cell.width() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if catalog.presets.is_empty() {
        out.push_str("(no presets)\n");
    }
    let warned: Vec<&Preset> = catalog
        .presets
        .iter()
        .filter(|p| !p.warnings.is_empty())
        .collect();
    if !warned.is_empty() {
        out.push_str("\nwarnings:\n");
        for p in warned {
            for w in &p.warnings {
                out.push_str(&format!("  {}: {w}\n", p.name));
            }
        }
    }
    if !catalog.errors.is_empty() {
        out.push('\n');
        out.push_str(&errors_text(catalog));
    }
    out
}

/// The load errors, one per line (`error: ...`), or nothing.
pub fn errors_text(catalog: &Catalog) -> String {
    catalog.errors.iter().map(|e| format!("error: {e}\n")).collect()
}

/// `huddle presets show NAME [--json]`: the resolved team in full.
pub fn presets_show(
    catalog: &Catalog,
    config: &Config,
    name: &str,
    json: bool,
) -> Result<String, PresetNotFound> {
    let Some(p) = catalog.find(name) else {
        return Err(PresetNotFound {
            name: name.to_string(),
            available: catalog
                .presets
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    if json {
        return Ok(serde_json::to_string_pretty(&preset_json(p, config, true)).unwrap_or_default() + "\n");
    }
    Ok(show_text(p, config))
}

fn first_line(text: Option<&str>) -> String {
    text.and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
        .map_or_else(|| "(no prompt)".to_string(), str::to_string)
}

fn size(text: Option<&str>) -> String {
    text.map_or_else(|| "none".into(), |t| format!("{} characters", t.chars().count()))
}

/// The preset's `max_iterations`; its default where the mode iterates.
fn max_iterations(p: &Preset) -> Option<u32> {
    if p.mode.spec().iterates {
        Some(p.max_iterations.unwrap_or(p.mode.spec().default_max_iterations))
    } else {
        p.max_iterations
    }
}

fn show_text(p: &Preset, config: &Config) -> String {
    let mut out = String::new();
    let emoji = p.emoji.as_deref().map(|e| format!("{e} ")).unwrap_or_default();
    out.push_str(&format!(
        "{emoji}{} ({}, {})\n",
        p.name,
        p.tier.map_or("-", |t| t.as_str()),
        p.mode
    ));
    if let Some(d) = &p.description {
        out.push_str(&format!("{d}\n"));
    }
    if let Some(s) = &p.source {
        out.push_str(&format!("source: {s}\n"));
    }
    if let Some(n) = max_iterations(p) {
        out.push_str(&format!("max iterations: {n}\n"));
    }
    // The mode's own settings (unset guardrails from config.yaml, then the defaults).
    let mut settings = crate::model::ModeSettings::from_preset(p, |name| Some(name.to_string()));
    settings.dispatch = settings.dispatch.or(&config.dispatch);
    if let Some(line) = (p.mode.spec().settings_line)(&settings) {
        out.push_str(&format!("{line}\n"));
    }
    if !p.worktrees.is_shared() {
        out.push_str(&format!(
            "worktrees: {} (each git worktree on its own huddle/ branch)\n",
            p.worktrees
        ));
    }
    out.push_str(&guard_lines("", &p.sandbox, &p.hooks));
    for (label, agent) in [("orchestrator", &p.orchestrator), ("evaluator", &p.evaluator)] {
        let Some(a) = agent else {
            continue;
        };
        // A named leader (a Squad team's coordinator) is said by name.
        let who = a
            .display_name
            .as_deref()
            .map_or_else(String::new, |n| format!(" ({n})"));
        out.push_str(&format!(
            "{label}{who}: {}  {}\n",
            resolved(a.model.as_deref(), config),
            first_line(a.prompt.as_deref())
        ));
        out.push_str(&tools_line("  ", &a.tools, a.max_tool_rounds));
        out.push_str(&guard_lines("  ", &a.sandbox, &a.hooks));
    }
    if let Some(entry) = &p.entry {
        out.push_str(&format!("entry: {entry}\n"));
    }
    if !p.stages.is_empty() {
        let phases: Vec<String> = p
            .stages
            .iter()
            .map(|s| format!("{} ({})", s.phase, s.member))
            .collect();
        out.push_str(&format!("stages: {}\n", phases.join(" → ")));
        if let Some(s) = &p.supervisor {
            out.push_str(&format!("supervisor: {s}\n"));
        }
    }
    out.push_str(&format!("workers ({}):\n", p.workers.len()));
    for w in &p.workers {
        let label = match &w.display_name {
            Some(d) => format!("{} ({d})", w.name),
            None => w.name.clone(),
        };
        out.push_str(&format!(
            "  @worker:{label}  {}  [{}]\n      {}\n",
            w.role.as_deref().unwrap_or("-"),
            resolved(w.model.as_deref(), config),
            first_line(w.system_prompt.as_deref())
        ));
        out.push_str(&tools_line("      ", &w.tools, w.max_tool_rounds));
        out.push_str(&guard_lines("      ", &w.sandbox, &w.hooks));
        out.push_str(&flow_line("      ", w));
    }
    out.push_str(&format!(
        "shared context: {}\n",
        size(p.shared_context.as_deref())
    ));
    out.push_str(&format!(
        "routing context: {}\n",
        size(p.routing_context.as_deref())
    ));
    if !p.warnings.is_empty() {
        out.push_str("warnings:\n");
        for w in &p.warnings {
            out.push_str(&format!("  - {w}\n"));
        }
    }
    out
}

/// `routes to: a, b · advisors: c · hands off to: d`, or nothing for a worker without links.
fn flow_line(indent: &str, w: &crate::model::PresetWorker) -> String {
    let mut parts = Vec::new();
    if let Some(r) = &w.router {
        parts.push(format!("routes to: {}", r.destinations.join(", ")));
    }
    if !w.advisors.is_empty() {
        parts.push(format!("advisors: {}", w.advisors.join(", ")));
    }
    if let Some(h) = &w.handoff {
        parts.push(format!("hands off to: {h}"));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("{indent}{}\n", parts.join(" · "))
}

/// A level's `sandbox:` as written (`sandbox: read-only, network off, allow_write ~/.cache`)
/// and its hooks, one a line (`hook pre_tool_use: sh guard.sh (tools git__.*), 5 s`, with the
/// hook's own sandbox); nothing for a level without either.
fn guard_lines(indent: &str, sandbox: &SandboxSettings, hooks: &Hooks) -> String {
    let mut out = String::new();
    if !sandbox.is_empty() {
        out.push_str(&format!("{indent}sandbox: {}\n", settings_text(sandbox)));
    }
    for event in HookEvent::ALL {
        for hook in hooks.of(event) {
            let own = if hook.sandbox.is_empty() {
                String::new()
            } else {
                format!(", sandbox: {}", settings_text(&hook.sandbox))
            };
            let deny = hook.on_error_note();
            out.push_str(&format!(
                "{indent}hook {event}: {}{}, {} s{own}{deny}\n",
                hook.label(),
                hook.matcher_note(event),
                hook.timeout().as_secs()
            ));
        }
    }
    out
}

/// What a `sandbox:` block sets, in its own words: `read-only, network off, allow_write ~/x`.
fn settings_text(s: &SandboxSettings) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(s.mode.map(|m| m.to_string()));
    parts.extend(s.network.map(|n| format!("network {}", n.as_str())));
    for (key, list) in [
        ("allow_write", &s.allow_write),
        ("allow_read", &s.allow_read),
        ("allow_env", &s.allow_env),
    ] {
        if !list.is_empty() {
            parts.push(format!("{key} {}", list.join(", ")));
        }
    }
    parts.extend(s.bwrap.as_ref().map(|b| format!("bwrap {}", b.display())));
    if s.allow_host_proc == Some(true) {
        parts.push("allow_host_proc".into());
    }
    if parts.is_empty() {
        "(as around it)".into()
    } else {
        parts.join(", ")
    }
}

/// `tools: git, time (max 10 rounds)`, or nothing for an agent without tools.
fn tools_line(indent: &str, tools: &[String], rounds: Option<u32>) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let rounds = rounds.map_or_else(String::new, |n| format!(" (max {n} rounds)"));
    format!("{indent}tools: {}{rounds}\n", tools.join(", "))
}

/// The JSON object of one preset; `full` adds prompts and contexts.
pub fn preset_json(p: &Preset, config: &Config, full: bool) -> Value {
    let agent = |a: &crate::model::PresetAgent| {
        let mut v = json!({ "model": resolved(a.model.as_deref(), config), "tools": a.tools });
        if let Some(name) = &a.display_name {
            v["display_name"] = json!(name);
        }
        if full {
            v["prompt"] = json!(a.prompt);
        }
        guard_json(&mut v, &a.sandbox, &a.hooks);
        v
    };
    let workers: Vec<Value> = p
        .workers
        .iter()
        .map(|w| {
            let mut v = json!({
                "name": w.name,
                "display_name": w.display_name.as_deref().unwrap_or(&w.name),
                "role": w.role,
                "model": resolved(w.model.as_deref(), config),
                "tools": w.tools,
            });
            if full {
                v["system_prompt"] = json!(w.system_prompt);
            }
            if let Some(h) = &w.handoff {
                v["handoff"] = json!(h);
            }
            if let Some(r) = &w.router {
                v["router"] = json!({ "destinations": r.destinations });
            }
            if !w.advisors.is_empty() {
                v["advisors"] = json!(w.advisors);
            }
            guard_json(&mut v, &w.sandbox, &w.hooks);
            v
        })
        .collect();
    let mut v = json!({
        "name": p.name,
        "tier": p.tier.map(|t| t.as_str()),
        "mode": p.mode.as_str(),
        "description": p.description,
        "emoji": p.emoji,
        "source": p.source,
        "warnings": p.warnings,
        "workers": workers,
        "orchestrator": p.orchestrator.as_ref().map(agent),
        "evaluator": p.evaluator.as_ref().map(agent),
        "max_iterations": max_iterations(p),
        "worktrees": p.worktrees.as_str(),
    });
    guard_json(&mut v, &p.sandbox, &p.hooks);
    if let Some(entry) = &p.entry {
        v["entry"] = json!(entry);
    }
    if !p.stages.is_empty() {
        v["stages"] = json!(p.stages);
        v["supervisor"] = json!(p.supervisor);
        v["rules"] = json!(p.rules);
    }
    if full {
        v["shared_context"] = json!(p.shared_context);
        v["routing_context"] = json!(p.routing_context);
    }
    v
}

/// A level's `sandbox:` and `hooks:` in a preset's JSON, as written (only when set).
fn guard_json(v: &mut Value, sandbox: &SandboxSettings, hooks: &Hooks) {
    if !sandbox.is_empty() {
        v["sandbox"] = json!(sandbox);
    }
    if !hooks.is_empty() {
        v["hooks"] = json!(hooks);
    }
}
