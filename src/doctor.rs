//! `huddle doctor`: what huddle sees: paths, config, providers, lock and organization.

use std::fmt::Write as _;

use std::path::Path;

use crate::config::{Config, ConfigError, Paths, ProviderKind};
use crate::model::GroupKind;
use crate::presets::Catalog;
use crate::store::{DataDirLock, OrganizationFile, Unreadable};
use crate::text::sanitize;

/// The report and whether everything needed to run is in order.
pub struct DoctorReport {
    pub text: String,
    /// No check failed (the CLI exits non-zero otherwise).
    pub ok: bool,
    /// One line per failed check, as the summary at the end lists them.
    pub problems: Vec<String>,
}

/// Builds the report without changing anything on disk. With `probe`, HTTP providers are asked
/// `GET /models` (a few seconds at most) to see whether they answer. Every failed check (an
/// invalid config, a provider that does not answer or lacks its key, a preset or Squad folder
/// that cannot be used, an unreadable organization) is a problem, listed again in a summary
/// line at the end.
pub fn report(paths: &Paths, repo: &Path, probe: bool) -> DoctorReport {
    let mut out = String::new();
    let mut problems: Vec<String> = Vec::new();
    let _ = writeln!(out, "huddle {}", env!("CARGO_PKG_VERSION"));
    let _ = writeln!(out, "\nPaths");
    if std::env::var_os("HUDDLE_HOME").is_some() {
        let _ = writeln!(out, "  HUDDLE_HOME is set: config and data live in one directory");
    }
    let _ = writeln!(out, "  config dir    {}", paths.config_dir.display());
    let _ = writeln!(out, "  data dir      {}", paths.data_dir.display());
    let _ = writeln!(out, "  logs          {}", paths.logs_dir().display());
    let _ = writeln!(out, "  run timelines {}", paths.runs_dir().display());

    let _ = writeln!(out, "\nConfig");
    let config = match Config::load(paths) {
        Ok(loaded) => {
            match &loaded.file {
                Some(f) => _ = writeln!(out, "  {} (valid)", f.display()),
                None => {
                    _ = writeln!(
                        out,
                        "  no config.yaml; providers derived from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY) and sim"
                    )
                }
            }
            Some(loaded.config)
        }
        Err(e) => {
            problems.push("the config is invalid".into());
            let _ = writeln!(out, "  ERROR {e}");
            if matches!(e, ConfigError::Invalid { .. }) {
                let _ = writeln!(
                    out,
                    "  fix the file, or move it away to use the environment defaults"
                );
            }
            None
        }
    };
    if let Some(config) = &config {
        let _ = writeln!(out, "  default model {}", config.default_model());
        let _ = writeln!(out, "  max concurrency {}", config.max_concurrency);
        let _ = writeln!(out, "  runs kept     {} per group", config.runs_kept);
        let _ = writeln!(
            out,
            "  timeouts      {} s for the next chunk of an answer, {} s to connect",
            config.read_timeout_secs, config.connect_timeout_secs
        );
        let _ = writeln!(out, "\nProviders");
        for p in &config.providers {
            let detail = match p.kind {
                ProviderKind::Openai | ProviderKind::Anthropic => {
                    let url = p.base_url.clone().unwrap_or_else(|| match p.kind {
                        ProviderKind::Anthropic => "https://api.anthropic.com".into(),
                        _ => "https://api.openai.com/v1".into(),
                    });
                    let key = match &p.api_key_env {
                        Some(var) if p.api_key().is_some() => format!("key from {var} (set)"),
                        Some(var) => format!("key from {var} (NOT SET)"),
                        None => "no key".into(),
                    };
                    let caching = if !p.prompt_caching {
                        ", prompt caching off"
                    } else if p.sends_prompt_cache_key() {
                        ", prompt caching (with prompt_cache_key)"
                    } else {
                        ", prompt caching"
                    };
                    format!("{url}, {key}{caching}")
                }
                ProviderKind::Command => match p.agent {
                    Some(agent) => format!(
                        "agent {}: runs {:?}, reads {}",
                        agent.as_str(),
                        p.command,
                        p.output_format().as_str()
                    ),
                    None if p.output_format().is_structured() => {
                        format!("runs {:?}, reads {}", p.command, p.output_format().as_str())
                    }
                    None => format!("runs {:?}", p.command),
                },
                ProviderKind::Acp => format!("ACP agent: runs {:?}", p.command),
                ProviderKind::A2a => match &p.a2a {
                    Some(a2a) => format!(
                        "remote A2A agent at {}{}{}",
                        a2a.url,
                        if a2a.headers_env.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ", headers from {}",
                                a2a.headers_env
                                    .iter()
                                    .map(|(h, v)| format!(
                                        "{v} ({h}, {})",
                                        if std::env::var(v).is_ok_and(|x| !x.trim().is_empty()) {
                                            "set"
                                        } else {
                                            "NOT SET"
                                        }
                                    ))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        },
                        if a2a.allow_private {
                            ", private hosts allowed"
                        } else {
                            ""
                        }
                    ),
                    None => "remote A2A agent (no a2a: block)".into(),
                },
                ProviderKind::Sim => "built-in offline simulator (answers are simulated)".into(),
            };
            let _ = writeln!(out, "  {:<12} {:<9} {detail}", p.name, p.kind.as_str());
        }
        if probe {
            let _ = writeln!(out, "\nDo they answer?");
            match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => {
                    for result in rt.block_on(crate::providers::probe(config)) {
                        let mark = if result.ok() { "ok " } else { "!! " };
                        let _ = writeln!(out, "  {mark}{:<12} {}", result.provider, result.describe());
                        if !result.ok() {
                            problems.push(format!("provider `{}` is not usable", result.provider));
                        }
                    }
                }
                Err(e) => {
                    problems.push("the providers could not be checked".into());
                    let _ = writeln!(out, "  cannot probe: {e}");
                }
            }
        }

        prices_section(&mut out, &mut problems, config, paths);
        repo_context_section(&mut out, config, paths, repo);
        // One baseline for the MCP servers' launches and the sandbox section.
        let baseline = crate::workspace::baseline(paths, config, None, &crate::env::Env::process());
        mcp_section(&mut out, &mut problems, config, &baseline, repo, probe);
        sandbox_section(&mut out, &mut problems, config, &baseline, paths);
        hooks_section(&mut out, &mut problems, config, &baseline);
        telemetry_section(&mut out, &mut problems, config, probe);

        let _ = writeln!(out, "\nPresets (repo {})", repo.display());
        let catalog = Catalog::load(paths, config, Some(repo));
        for tier in [
            crate::model::Tier::Repo,
            crate::model::Tier::User,
            crate::model::Tier::Builtin,
        ] {
            let names: Vec<&str> = catalog
                .presets
                .iter()
                .filter(|p| p.tier == Some(tier))
                .map(|p| p.name.as_str())
                .collect();
            let _ = writeln!(
                out,
                "  {:<8} {}",
                tier.as_str(),
                if names.is_empty() {
                    "-".into()
                } else {
                    names.join(", ")
                }
            );
        }
        for e in &catalog.errors {
            let _ = writeln!(out, "  !! {e}");
        }
        match catalog.errors.len() {
            0 => {}
            1 => problems.push("a preset source cannot be used".into()),
            n => problems.push(format!("{n} preset sources cannot be used")),
        }
    }

    let _ = writeln!(out, "\nData");
    match DataDirLock::holder(&paths.lock_file()) {
        Some(pid) => _ = writeln!(out, "  lock          held by a running huddle (pid {pid})"),
        None => _ = writeln!(out, "  lock          free"),
    }
    let file = OrganizationFile::new(paths.organization_file());
    match file.inspect() {
        Ok(None) => _ = writeln!(out, "  organization  none yet ({})", file.path().display()),
        Ok(Some(org)) => {
            let teams = org.groups.iter().filter(|g| g.kind == GroupKind::Team).count();
            let interrupted = org
                .groups
                .iter()
                .filter(|g| g.state.interrupted(g.mode).is_some())
                .count()
                + org.sessions.iter().filter(|s| s.reflection.is_some()).count();
            let _ = writeln!(
                out,
                "  organization  {} group(s) ({teams} team(s)), {} session(s){}",
                org.groups.len(),
                org.sessions.len(),
                if interrupted > 0 {
                    format!(", {interrupted} interrupted run(s) to resume")
                } else {
                    String::new()
                }
            );
        }
        Err(Unreadable::TooNew { found }) => {
            problems.push("the organization was written by a newer huddle".into());
            let _ = writeln!(
                out,
                "  organization  {}\n                {}",
                file.path().display(),
                Unreadable::TooNew { found }
            );
        }
        Err(Unreadable::Corrupt(reason)) => {
            problems.push("the organization is unreadable".into());
            let _ = writeln!(
                out,
                "  organization  UNREADABLE: {reason}\n                the next start moves it aside and restores the backup"
            );
        }
    }
    let transcripts = std::fs::read_dir(paths.sessions_dir())
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .count()
        })
        .unwrap_or(0);
    let _ = writeln!(out, "  transcripts   {transcripts}");
    // One folder of run files per group that has run, and one per session that chatted (in
    // `sessions/`).
    let count = |dir: &std::path::Path| -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => std::fs::read_dir(e.path()).map_or(0, |runs| {
                        runs.filter_map(Result::ok)
                            .filter(|r| r.file_type().is_ok_and(|t| t.is_file()))
                            .count()
                    }),
                    _ => 0,
                })
                .sum()
        })
    };
    let run_files = count(&paths.runs_dir()) + count(&paths.runs_dir().join("sessions"));
    let _ = writeln!(out, "  run files     {run_files}");
    worktrees_section(&mut out, &mut problems, paths, repo);
    match problems.len() {
        0 => _ = writeln!(out, "\nSummary: no problems found"),
        n => {
            _ = writeln!(
                out,
                "\nSummary: {n} problem{}: {}",
                if n == 1 { "" } else { "s" },
                problems.join("; ")
            )
        }
    }
    DoctorReport {
        text: out,
        ok: problems.is_empty(),
        problems,
    }
}

/// `Repository context`: the `AGENTS.md` / `CLAUDE.md` files and skills a session working in
/// `repo` gets, and whether config.yaml turned them off. Nothing here is a problem.
fn repo_context_section(out: &mut String, config: &Config, paths: &Paths, repo: &Path) {
    let _ = writeln!(out, "\nRepository context (repo {})", repo.display());
    let settings = config.repo_context;
    let files = crate::repo_context::read_instructions(repo);
    let names: Vec<&str> = files.files.iter().map(|f| f.shown.as_str()).collect();
    let off = |on: bool| {
        if on {
            ""
        } else {
            " (off in config.yaml: repo_context)"
        }
    };
    let _ = writeln!(
        out,
        "  instructions  {}{}",
        if names.is_empty() {
            "none found".to_string()
        } else {
            names.join(", ")
        },
        off(settings.instructions_on())
    );
    for (file, why) in &files.skipped {
        let _ = writeln!(out, "  !! {file} left out: {why}");
    }
    let user = paths.config_dir.join("skills");
    let skills = crate::repo_context::find_skills(Some(repo), Some(&user));
    let _ = writeln!(out, "  your skills   {}", user.display());
    let names: Vec<String> = skills
        .iter()
        .map(|s| match s.source {
            crate::repo_context::SkillSource::Repository => s.name.clone(),
            crate::repo_context::SkillSource::User => format!("{} (yours)", s.name),
        })
        .collect();
    let _ = writeln!(
        out,
        "  skills        {}{}",
        if names.is_empty() {
            "none found".to_string()
        } else {
            names.join(", ")
        },
        off(settings.skills_on())
    );
}

/// `Worktrees`: how many teams and worktrees, and what reconciling found (vanished worktrees,
/// ones no session records): each finding is a problem, reported and never deleted.
fn worktrees_section(out: &mut String, problems: &mut Vec<String>, paths: &Paths, repo: &Path) {
    let _ = writeln!(out, "\nWorktrees ({})", paths.worktrees_dir().display());
    let org = OrganizationFile::new(paths.organization_file())
        .inspect()
        .ok()
        .flatten()
        .unwrap_or_default();
    let recorded = crate::worktrees::distinct(org.sessions.iter().filter_map(|s| s.worktree.as_ref()));
    let teams = org.groups.iter().filter(|g| !g.worktrees.is_shared()).count();
    if recorded.is_empty() && !paths.worktrees_dir().exists() {
        let _ = writeln!(out, "  none");
        return;
    }
    let git = std::process::Command::new("git")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output();
    match git {
        Ok(o) if o.status.success() => {
            let _ = writeln!(
                out,
                "  git           {}",
                String::from_utf8_lossy(&o.stdout).trim()
            );
        }
        _ => {
            problems.push("git is missing (team worktrees need it)".into());
            let _ = writeln!(out, "  !! git is not installed or not on PATH");
        }
    }
    let _ = writeln!(
        out,
        "  recorded      {} worktree(s) of {teams} team(s)",
        recorded.len()
    );
    let found = crate::worktrees::reconcile(&paths.worktrees_dir(), &org, &[repo.to_path_buf()]);
    for line in found.lines() {
        let _ = writeln!(out, "  !! {line}");
    }
    match found.findings.len() {
        0 => {}
        1 => problems.push("a worktree needs a look".into()),
        n => problems.push(format!("{n} worktrees need a look")),
    }
}

/// `Sandbox`: whether bwrap is here and works (the exact flag set, run once), and what
/// config.yaml asks for. A sandbox that is required (a mode or network off set anywhere in
/// config.yaml) and unavailable is a problem; one that is merely unavailable is said: processes
/// then run unconfined.
fn sandbox_section(
    out: &mut String,
    problems: &mut Vec<String>,
    config: &Config,
    baseline: &crate::sandbox::Baseline,
    paths: &Paths,
) {
    use crate::sandbox::Status;
    let _ = writeln!(out, "\nSandbox");
    let sandbox = baseline.sandbox(&[], None);
    let policy = &sandbox.policy;
    let bwrap = crate::sandbox::probe::availability(policy.bwrap.as_deref());
    let mark = if bwrap.is_usable() { "ok " } else { "!! " };
    let _ = writeln!(out, "  {mark}bwrap       {}", bwrap.describe());
    let mut levels = vec![("config.yaml".to_string(), sandbox.status_with(&bwrap))];
    for (name, server) in &config.mcp_servers {
        if server.command.is_empty() || server.sandbox.is_empty() {
            continue;
        }
        let level = format!("mcp_servers.{name}");
        let own = baseline.sandbox(&[(level.as_str(), &server.sandbox)], None);
        levels.push((format!("mcp {name}"), own.status_with(&bwrap)));
    }
    for (who, status) in &levels {
        let _ = writeln!(out, "  {who:<15} {}", status.label());
        if let Status::Refused(_) = status {
            problems.push(format!("the sandbox {who} requires is not available"));
        }
    }
    if !policy.is_off() {
        let hidden: Vec<String> = crate::sandbox::profile::HIDDEN_HOME_DIRS
            .iter()
            .chain(crate::sandbox::profile::HIDDEN_HOME_FILES)
            .map(|p| format!("~/{p}"))
            .collect();
        let _ = writeln!(
            out,
            "  hidden          {}, huddle's data dir ({})",
            hidden.join(", "),
            paths.data_dir.display()
        );
        if policy.mode == crate::sandbox::SandboxMode::WorkspaceWrite {
            let _ = writeln!(
                out,
                "  writable        the session's working directory (its worktree or the repository), what git needs for it, a private /tmp"
            );
        }
        for p in &policy.allow_write {
            let _ = writeln!(out, "  allow_write     {}", p.display());
        }
        for p in &policy.allow_read {
            let _ = writeln!(out, "  allow_read      {}", p.display());
        }
    }
    if matches!(levels.first(), Some((_, Status::Unconfined { why })) if why != "off") {
        let _ = writeln!(
            out,
            "  CLI agents, stdio MCP servers and hooks run unconfined; install bubblewrap, or set sandbox: {{ mode: off }} to say so"
        );
    }
}

/// Models listed by name in `Prices`; the rest are counted.
const MODELS_SHOWN: usize = 12;

/// `Prices`: where they come from (the built-in table's day, config.yaml's overrides), the
/// price of the default model and of every model the organization's sessions use (or that it
/// has none: its cost is unknown), the default cost budget; a default cost budget over a
/// default model without a price is a problem (every run using it would be refused).
fn prices_section(out: &mut String, problems: &mut Vec<String>, config: &Config, paths: &Paths) {
    use crate::model::cost::PRICES_TAKEN_ON;
    let _ = writeln!(
        out,
        "\nPrices (USD per million tokens; built-in table of {PRICES_TAKEN_ON})"
    );
    if config.prices.is_empty() {
        let _ = writeln!(
            out,
            "  config.yaml   none (prices: adds or overrides one by slug, name or <provider>/*)"
        );
    } else {
        let keys: Vec<&str> = config.prices.keys().map(String::as_str).collect();
        let _ = writeln!(out, "  config.yaml   {}", keys.join(", "));
    }
    let book = config.price_book();
    let reports_cost = |slug: &str| {
        config
            .resolve(slug)
            .is_ok_and(|(p, _)| p.output_format() == crate::model::AgentFormat::ClaudeStreamJson)
    };
    let price_of = |slug: &str| match book.rate(slug) {
        Some(rate) => rate.price.per_million(),
        None if reports_cost(slug) => "its own figure (the agent reports what it cost)".into(),
        None => "no price: its cost is unknown (a cost budget over it is refused)".into(),
    };
    let default = config.default_model();
    let _ = writeln!(out, "  default model {default}: {}", price_of(&default));
    let mut used: Vec<String> = match OrganizationFile::new(paths.organization_file()).inspect() {
        Ok(Some(org)) => org.sessions.iter().map(|s| s.model.clone()).collect(),
        _ => Vec::new(),
    };
    used.sort();
    used.dedup();
    used.retain(|m| *m != default && !m.is_empty());
    for slug in used.iter().take(MODELS_SHOWN) {
        let _ = writeln!(out, "  in use        {slug}: {}", price_of(slug));
    }
    if used.len() > MODELS_SHOWN {
        let _ = writeln!(out, "  in use        and {} more", used.len() - MODELS_SHOWN);
    }
    if let Some(max) = config.budget.max_cost_usd {
        let _ = writeln!(
            out,
            "  cost budget   {} per team run (config.yaml budget.max_cost_usd)",
            crate::model::usd_text(max)
        );
        if book.rate(&default).is_none() && !reports_cost(&default) {
            problems.push(format!(
                "the default cost budget cannot be kept: no price for the default model `{default}`"
            ));
            let _ = writeln!(
                out,
                "  !! no price for the default model: runs with the cost budget are refused; give it one in prices:"
            );
        }
    }
}

/// `Hooks`: config.yaml's, by event (a preset's team and members add their own); a hook with
/// a `sandbox:` of its own says what it comes to over config.yaml's (a required sandbox that
/// is missing is a problem: the hook would not run).
fn hooks_section(
    out: &mut String,
    problems: &mut Vec<String>,
    config: &Config,
    baseline: &crate::sandbox::Baseline,
) {
    let _ = writeln!(out, "\nHooks");
    if config.hooks.is_empty() {
        let _ = writeln!(
            out,
            "  none in config.yaml (hooks: pre_tool_use, post_tool_use, turn_finished, iteration_finished, run_finished, worktree_created)"
        );
        return;
    }
    for event in crate::hooks::HookEvent::ALL {
        for hook in config.hooks.of(event) {
            let matcher = hook.matcher_note(event);
            let own = (!hook.sandbox.is_empty()).then(|| {
                let level = format!("hooks.{}", event.key());
                let sandbox = baseline.sandbox(&[(level.as_str(), &hook.sandbox)], None);
                let bwrap = crate::sandbox::probe::availability(sandbox.policy.bwrap.as_deref());
                sandbox.status_with(&bwrap)
            });
            let refused = matches!(own, Some(crate::sandbox::Status::Refused(_)));
            if refused {
                problems.push(format!(
                    "the sandbox the {} hook {} requires is not available",
                    event.key(),
                    hook.label()
                ));
            }
            let missing =
                crate::process::find_program(hook.command.first().map_or("", String::as_str)).is_none();
            let _ = writeln!(
                out,
                "  {:<19}{} {}{matcher}, {} s{}{}",
                event.key(),
                if missing || refused { " !!" } else { "" },
                hook.label(),
                hook.timeout().as_secs(),
                own.map(|s| format!(", {}", s.label())).unwrap_or_default(),
                hook.on_error_note()
            );
        }
    }
}

/// `Telemetry`: where runs go as OpenTelemetry spans; with `probe`, an empty export is posted
/// to the collector as the exporter would post one.
fn telemetry_section(out: &mut String, problems: &mut Vec<String>, config: &Config, probe: bool) {
    let _ = writeln!(out, "\nTelemetry");
    let settings = &config.telemetry;
    let Some(endpoint) = settings.otlp_endpoint.as_deref() else {
        let _ = writeln!(out, "  off (telemetry: otlp_endpoint in config.yaml)");
        return;
    };
    let protocol = match settings.protocol {
        crate::config::TelemetryProtocol::HttpProtobuf => "http/protobuf",
        crate::config::TelemetryProtocol::HttpJson => "http/json",
    };
    let content = match settings.content {
        crate::config::TelemetryContent::Off => "off",
        crate::config::TelemetryContent::On => "on (prompts and answers are sent)",
    };
    let url = crate::text::secrets::redact_secrets(&crate::telemetry::traces_url(endpoint));
    let url = sanitize::display(&url);
    let _ = writeln!(out, "  endpoint      {url} ({protocol}), content {content}");
    for (header, var) in &settings.headers_env {
        let set = if std::env::var_os(var).is_some() {
            "set"
        } else {
            "NOT SET"
        };
        let _ = writeln!(out, "  header        {header} from {var} ({set})");
    }
    if !probe {
        return;
    }
    let checked = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(crate::telemetry::check(settings)),
        Err(e) => Err(format!("cannot check it: {e}")),
    };
    match checked {
        Ok(answer) => _ = writeln!(out, "  ok {answer}"),
        Err(why) => {
            problems.push("telemetry cannot reach its collector (runs still run; spans are dropped)".into());
            let _ = writeln!(out, "  !! {}", sanitize::display(&why));
        }
    }
}

/// Tool names shown per server; the rest are counted.
const TOOLS_SHOWN: usize = 8;

/// `MCP servers`: with `probe`, each configured server is started (within its timeout), its
/// tools counted and named, and stopped again; one that cannot be used is a problem.
fn mcp_section(
    out: &mut String,
    problems: &mut Vec<String>,
    config: &Config,
    baseline: &crate::sandbox::Baseline,
    repo: &Path,
    probe: bool,
) {
    let _ = writeln!(out, "\nMCP servers");
    if config.mcp_servers.is_empty() {
        let _ = writeln!(out, "  none configured (mcp_servers: in config.yaml)");
        return;
    }
    if !probe {
        for (name, server) in &config.mcp_servers {
            let via = crate::tools::mcp::McpSource::new(name, server.clone(), repo).describe();
            let _ = writeln!(out, "  {name:<12} {via} (not started)");
        }
        return;
    }
    let checks = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt.block_on(crate::tools::mcp::check_all(&config.mcp_servers, repo, baseline)),
        Err(e) => {
            problems.push("the MCP servers could not be checked".into());
            let _ = writeln!(out, "  cannot start them: {e}");
            return;
        }
    };
    for check in checks {
        // Names and errors come from the server: made safe to print, and sorted as a model
        // request sorts them (names a model cannot take and tools beyond `max_tools` left out).
        match check.tools {
            Ok(tools) => {
                let count = tools.len();
                let max = config
                    .mcp_servers
                    .get(&check.name)
                    .map_or(crate::tools::DEFAULT_MAX_TOOLS, |s| s.max_tools);
                let screened = crate::tools::screen(&check.name, tools, String::as_str, max);
                let mut names = screened
                    .declared
                    .iter()
                    .take(TOOLS_SHOWN)
                    .map(|n| crate::tools::shown_name(n))
                    .collect::<Vec<_>>()
                    .join(", ");
                if screened.declared.len() > TOOLS_SHOWN {
                    names.push_str(&format!(", … {} more", screened.declared.len() - TOOLS_SHOWN));
                }
                // "… N more" counts the declared ones; the tools left out are counted apart.
                let declared = if screened.declared.len() < count {
                    format!(", {} declared to models", screened.declared.len())
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "  ok {:<12} {}, {count} tool{}{declared}: {names}",
                    check.name,
                    check.via,
                    if count == 1 { "" } else { "s" }
                );
                for problem in &screened.problems {
                    let _ = writeln!(out, "     note: {problem}");
                }
            }
            Err(e) => {
                problems.push(format!("MCP server `{}` is not usable", check.name));
                let _ = writeln!(
                    out,
                    "  !! {:<12} {}: {}",
                    check.name,
                    check.via,
                    sanitize::display(&e.to_string())
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_say_where_they_come_from_and_a_budget_that_cannot_be_kept() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::single(dir.path().to_path_buf());
        std::fs::write(
            paths.config_file(),
            "default_model: anthropic/claude-sonnet-4-5\nproviders:\n  - { name: anthropic, kind: anthropic }\n  - { name: gw, kind: openai, base_url: \"http://127.0.0.1:9/v1\" }\nprices:\n  \"gw/cheap\": { input: 0.1, output: 0.2 }\n",
        )
        .unwrap();
        let mut org = crate::model::Organization::default();
        crate::model::reconcile::reconcile(&mut org);
        let group = org.groups[0].id.clone();
        for model in ["gw/cheap", "gw/mystery", "sim/x"] {
            org.sessions
                .push(crate::model::Session::new(model, group.clone(), model));
        }
        OrganizationFile::new(paths.organization_file())
            .save(&org)
            .unwrap();
        let text = report(&paths, dir.path(), false).text;
        assert!(text.contains("config.yaml   gw/cheap"), "{text}");
        assert!(
            text.contains("default model anthropic/claude-sonnet-4-5: $3.00 in / $15.00 out / $0.300 cache read / $3.75 cache write per million tokens"),
            "{text}"
        );
        assert!(
            text.contains("in use        gw/cheap: $0.100 in / $0.200 out per million tokens"),
            "{text}"
        );
        assert!(text.contains("in use        gw/mystery: no price"), "{text}");
        assert!(text.contains("in use        sim/x: free"), "{text}");

        std::fs::write(
            paths.config_file(),
            "default_model: gw/mystery\nproviders:\n  - { name: gw, kind: openai, base_url: \"http://127.0.0.1:9/v1\" }\nbudget: { max_cost_usd: 2 }\n",
        )
        .unwrap();
        let bad = report(&paths, dir.path(), false);
        assert!(
            bad.text.contains("cost budget   $2.00 per team run"),
            "{}",
            bad.text
        );
        assert!(
            bad.problems
                .iter()
                .any(|p| p.contains("no price for the default model `gw/mystery`")),
            "{:?}",
            bad.problems
        );
    }

    #[test]
    fn reports_a_broken_config_and_an_unreadable_organization() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::single(dir.path().to_path_buf());
        let fine = report(&paths, dir.path(), false);
        assert!(fine.ok, "{}", fine.text);
        assert!(fine.text.contains("lock          free"), "{}", fine.text);
        assert!(
            fine.text.contains("Code Review Team"),
            "built-in presets listed: {}",
            fine.text
        );
        let probed = report(&paths, dir.path(), true);
        assert!(probed.text.contains("ok sim"), "{}", probed.text);

        std::fs::write(paths.config_file(), "providers:\n  - { name: a, kind: nope }\n").unwrap();
        std::fs::write(paths.organization_file(), "{oops").unwrap();
        assert!(
            fine.text.ends_with("\nSummary: no problems found\n"),
            "{}",
            fine.text
        );
        let bad = report(&paths, dir.path(), false);
        assert!(!bad.ok);
        assert!(
            bad.text
                .ends_with("Summary: 2 problems: the config is invalid; the organization is unreadable\n"),
            "{}",
            bad.text
        );
        assert!(bad.text.contains("line 2"), "{}", bad.text);
        assert!(bad.text.contains("UNREADABLE"), "{}", bad.text);
        assert!(
            paths.organization_file().exists(),
            "doctor changes nothing on disk"
        );
    }

    #[test]
    fn the_repository_context_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::single(dir.path().join("home"));
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".agents/skills/deploy")).unwrap();
        std::fs::write(repo.join("AGENTS.md"), "rules").unwrap();
        std::fs::write(
            repo.join(".agents/skills/deploy/SKILL.md"),
            "---\ndescription: Ship it.\n---\nsteps",
        )
        .unwrap();
        let r = report(&paths, &repo, false);
        assert!(r.text.contains("  instructions  AGENTS.md\n"), "{}", r.text);
        assert!(r.text.contains("  skills        deploy\n"), "{}", r.text);
        std::fs::create_dir_all(&paths.config_dir).unwrap();
        std::fs::write(paths.config_file(), "repo_context: { skills: false }\n").unwrap();
        let r = report(&paths, &repo, false);
        assert!(
            r.text.contains("deploy (off in config.yaml: repo_context)"),
            "{}",
            r.text
        );
    }

    #[test]
    fn the_sandbox_and_hooks_are_reported_and_a_required_missing_sandbox_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::single(dir.path().to_path_buf());
        std::fs::write(
            paths.config_file(),
            "sandbox: { mode: workspace-write, bwrap: /nonexistent/bwrap }\nhooks:\n  pre_tool_use:\n    - { matcher: \"git__.*\", command: [/bin/sh, guard.sh], timeout_secs: 5 }\n    - { command: [/bin/sh, strict.sh], on_error: deny }\n",
        )
        .unwrap();
        let r = report(&paths, dir.path(), false);
        assert!(
            r.text
                .contains("!! bwrap       bwrap not found at /nonexistent/bwrap"),
            "{}",
            r.text
        );
        assert!(
            r.text.contains("config.yaml     sandbox: REFUSED, the sandbox is required (workspace-write, set in config.yaml)"),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("pre_tool_use        sh guard.sh (tools git__.*), 5 s\n"),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("pre_tool_use        sh strict.sh, 60 s, on error: deny\n"),
            "{}",
            r.text
        );
        assert_eq!(r.problems, ["the sandbox config.yaml requires is not available"]);

        // Review 26-2 finding 15: a hook's own sandbox, refused when it is required and missing.
        std::fs::write(
            paths.config_file(),
            "sandbox: { mode: off }\nhooks:\n  turn_finished: [{ command: [/bin/sh, check.sh], sandbox: { mode: read-only, bwrap: /nonexistent/bwrap } }]\n",
        )
        .unwrap();
        let r = report(&paths, dir.path(), false);
        assert!(
            r.text.contains(
                "turn_finished       !! sh check.sh, 60 s, sandbox: REFUSED, the sandbox is required (read-only, set in hooks.turn_finished)"
            ),
            "{}",
            r.text
        );
        assert_eq!(
            r.problems,
            ["the sandbox the turn_finished hook sh check.sh requires is not available"]
        );

        std::fs::write(paths.config_file(), "sandbox: { bwrap: /nonexistent/bwrap }\n").unwrap();
        let r = report(&paths, dir.path(), false);
        assert!(r.ok, "unavailable but not required: {}", r.text);
        assert!(r.text.contains("sandbox: none (bwrap not found"), "{}", r.text);
        assert!(r.text.contains("run unconfined"), "{}", r.text);
        assert!(r.text.contains("Hooks\n  none in config.yaml"), "{}", r.text);
    }

    #[test]
    fn a_provider_that_does_not_answer_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::single(dir.path().to_path_buf());
        // Port 9 on loopback: nothing listens there, the connection is refused at once.
        std::fs::write(
            paths.config_file(),
            "providers:\n  - { name: local, kind: openai, base_url: \"http://127.0.0.1:9/v1\" }\n  - { name: agent, kind: command, command: [\"huddle-no-such-program-xyz\"] }\n",
        )
        .unwrap();
        let r = report(&paths, dir.path(), true);
        assert!(!r.ok, "{}", r.text);
        assert_eq!(
            r.problems,
            ["provider `local` is not usable", "provider `agent` is not usable"],
            "{}",
            r.text
        );
        assert!(r.text.contains("!! local"), "{}", r.text);
        assert!(r.text.contains("timeouts      120 s"), "{}", r.text);
        assert!(
            r.text.trim_end().ends_with(
                "Summary: 2 problems: provider `local` is not usable; provider `agent` is not usable"
            ),
            "{}",
            r.text
        );
    }

    #[test]
    fn an_mcp_server_that_cannot_start_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::single(dir.path().to_path_buf());
        std::fs::write(
            paths.config_file(),
            "mcp_servers:\n  broken: { command: [\"huddle-no-such-mcp-server-xyz\"], timeout_secs: 5 }\n  elsewhere: { command: [\"true\"], cwd: no-such-dir }\n",
        )
        .unwrap();
        let r = report(&paths, dir.path(), true);
        assert!(!r.ok, "{}", r.text);
        assert_eq!(
            r.problems,
            [
                "MCP server `broken` is not usable",
                "MCP server `elsewhere` is not usable"
            ],
            "{}",
            r.text
        );
        assert!(
            r.text.contains("!! broken       stdio huddle-no-such-mcp-server-xyz: tool server `broken` could not start: cannot run `huddle-no-such-mcp-server-xyz`"),
            "{}",
            r.text
        );
        assert!(
            r.text
                .contains("no-such-dir (mcp_servers.elsewhere.cwd) does not exist"),
            "{}",
            r.text
        );
        let unprobed = report(&paths, dir.path(), false);
        assert!(
            unprobed
                .text
                .contains("broken       stdio huddle-no-such-mcp-server-xyz (not started)"),
            "{}",
            unprobed.text
        );
    }

    #[test]
    fn telemetry_is_reported_and_a_collector_that_is_not_there_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::single(dir.path().to_path_buf());
        let r = report(&paths, dir.path(), false);
        assert!(r.text.contains("Telemetry\n  off"), "{}", r.text);
        // Port 9 on loopback: nothing listens there.
        std::fs::write(
            paths.config_file(),
            "telemetry:\n  otlp_endpoint: \"http://user:pw-secret@127.0.0.1:9\"\n  protocol: http/json\n  headers_env: { Authorization: HUDDLE_TEST_SURELY_UNSET_OTLP }\n",
        )
        .unwrap();
        let r = report(&paths, dir.path(), true);
        assert!(
            r.text.contains("(http/json), content off")
                && r.text.contains("HUDDLE_TEST_SURELY_UNSET_OTLP (NOT SET)"),
            "{}",
            r.text
        );
        assert!(
            !r.text.contains("pw-secret"),
            "the endpoint's password is not printed: {}",
            r.text
        );
        assert!(
            r.problems.iter().any(|p| p.starts_with("telemetry cannot reach")),
            "{:?}",
            r.problems
        );
    }
}
