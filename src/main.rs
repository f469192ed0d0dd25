//! The binary's edge: parse the command line, set up logging, dispatch, map errors to exit codes.
//!
//! Output goes through [`cli::print_out`] and [`cli::note`], never `print!`/`eprintln!`: those
//! panic (exit 101, with a backtrace) when stdout or stderr is closed or full
//! (`huddle doctor | true`, `huddle presets list > /dev/full`).

use std::process::ExitCode;

use clap::Parser;

use anyhow::Context;
use huddle::cli::{
    self, Cli, Command, OutputError, PresetsCommand, RunsCommand, SquadCommand, WorktreesCommand,
};
use huddle::config::{Config, Paths};
use huddle::presets::Catalog;
use huddle::store::OrganizationFile;

/// mimalloc when built with the `mimalloc` feature; the system's allocator otherwise (the
/// default: see [`huddle::allocator`] and docs/benchmarks.md, "Memory").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The async runtime (one worker: see [`huddle::async_runtime`]).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    huddle::async_runtime::build().context("cannot start the async runtime")
}

/// Exit code of a usage error (as clap uses for its own).
const USAGE: u8 = 2;

fn main() -> ExitCode {
    huddle::allocator::tune();
    huddle::store::real_clock_only();
    let cli = Cli::parse();
    let paths = match Paths::from_env() {
        Ok(p) => p,
        Err(e) => {
            cli::note(format_args!("huddle: {e}"));
            return ExitCode::from(1);
        }
    };
    if let Some(repo) = &cli.repo
        && !repo.is_dir()
    {
        let why = if repo.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        cli::note(format_args!("huddle: --repo {}: {why}", repo.display()));
        return ExitCode::from(USAGE);
    }
    let _log_guard = huddle::logging::init(&paths.logs_dir());
    match run(cli, &paths) {
        Ok(code) => code,
        Err(e) => match e.downcast_ref::<OutputError>() {
            // The reader is gone: nothing to say, and nobody to say it to.
            Some(out @ OutputError::Closed) => ExitCode::from(out.exit_code()),
            Some(out) => {
                tracing::error!("{out}");
                cli::note(format_args!("huddle: {out}"));
                ExitCode::from(out.exit_code())
            }
            None => {
                let text = describe(&e);
                tracing::error!("{text}");
                cli::note(format_args!("huddle: {text}"));
                ExitCode::from(1)
            }
        },
    }
}

/// The error and its causes on one line, each cause once: most of huddle's errors already quote
/// their cause (`cannot write X: File exists`), which `{:#}` would repeat.
fn describe(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
    }
    text
}

/// Runs a front end's future to its end; tasks still running (a blocking prompt) are not
/// waited for.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> anyhow::Result<T> {
    let runtime = runtime()?;
    let result = runtime.block_on(future);
    runtime.shutdown_background();
    Ok(result)
}

fn run(cli: Cli, paths: &Paths) -> anyhow::Result<ExitCode> {
    let repo = match &cli.repo {
        // Absolute, as teams record it and the TUI shows it (`--repo .` is not shown as `.`).
        Some(r) => std::path::absolute(r).unwrap_or_else(|_| r.clone()),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    match cli.command {
        Some(Command::Presets(cmd)) => {
            let config = Config::load(paths)?.config;
            let catalog = Catalog::load(paths, &config, Some(&repo));
            let (text, json) = match cmd {
                PresetsCommand::List { json } => {
                    (huddle::presets::cli::presets_list(&catalog, &config, json), json)
                }
                PresetsCommand::Show { name, json } => {
                    match huddle::presets::cli::presets_show(&catalog, &config, &name, json) {
                        Ok(text) => (text, json),
                        Err(e) => {
                            cli::note(format_args!("huddle: {e}"));
                            return Ok(ExitCode::from(USAGE));
                        }
                    }
                }
            };
            if json {
                let errors = huddle::presets::cli::errors_text(&catalog);
                if !errors.is_empty() {
                    cli::note(format_args!("{}", errors.trim_end()));
                }
            }
            cli::print_out(&huddle::text::sanitize::display(&text))?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Squad(SquadCommand::Export { group, force })) => {
            let file = OrganizationFile::new(paths.organization_file());
            let org = file
                .inspect()
                .map_err(|reason| anyhow::anyhow!("{} is unreadable: {reason}", file.path().display()))?
                .unwrap_or_default();
            let Some(group_id) = org.group_by_name(&group).map(|g| g.id.clone()) else {
                let known: Vec<&str> = org.groups.iter().map(|g| g.name.as_str()).collect();
                cli::note(format_args!(
                    "huddle: no group named `{group}` (groups: {})",
                    known.join(", ")
                ));
                return Ok(ExitCode::from(USAGE));
            };
            // The group's own repo unless --repo says otherwise.
            let target = match (&cli.repo, org.group(&group_id).and_then(|g| g.repo.clone())) {
                (Some(explicit), _) => explicit.clone(),
                (None, Some(own)) => own,
                (None, None) => repo.clone(),
            };
            let report = huddle::presets::squad::export_group(&org, &group_id, &target, paths, force)?;
            let mut text = String::new();
            for line in report.lines() {
                text.push_str(&line);
                text.push('\n');
            }
            text.push_str(&format!("preset {}\n", report.preset_file.display()));
            cli::print_out(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Worktrees(WorktreesCommand::Remove {
            group,
            session,
            path,
            force,
        })) => {
            let code = block_on(huddle::host_cli::remove_worktrees(
                paths, &repo, group, session, path, force,
            ))??;
            Ok(ExitCode::from(code))
        }
        Some(Command::Worktrees(cmd)) => {
            let code = huddle::worktrees_cli::run(paths, &repo, cmd)?;
            Ok(ExitCode::from(code))
        }
        Some(Command::Runs(RunsCommand::Prune { older_than, dry_run })) => {
            let code = block_on(huddle::host_cli::prune(paths, &repo, older_than, dry_run))??;
            Ok(ExitCode::from(code))
        }
        Some(Command::Ps { json }) => {
            let code = block_on(huddle::host_cli::ps(paths, &repo, json))??;
            Ok(ExitCode::from(code))
        }
        Some(Command::Stop { target }) => {
            let code = block_on(huddle::host_cli::stop(paths, &repo, &target))?;
            Ok(ExitCode::from(code))
        }
        Some(Command::Attach { target, events }) => {
            let code = block_on(huddle::host_cli::attach(paths, &repo, &target, events))?;
            Ok(ExitCode::from(code))
        }
        Some(Command::Mcp { http: None }) => {
            let code = block_on(huddle::mcp_front::serve(paths, repo))?;
            Ok(ExitCode::from(code))
        }
        Some(Command::Mcp { http: Some(addr) }) => {
            let code = block_on(huddle::mcp_front::serve_http(paths, repo, &addr))?;
            Ok(ExitCode::from(code))
        }
        Some(Command::Host) => {
            huddle::host::log_panics();
            let code = block_on(huddle::host::run(paths, repo))?;
            Ok(ExitCode::from(code))
        }
        Some(Command::Trace(args)) => {
            let code = huddle::trace_cli::run(paths, &args)?;
            Ok(ExitCode::from(code))
        }
        Some(Command::Doctor) => {
            let report = huddle::doctor::report(paths, &repo, true);
            // What servers and files said is in it: nothing reaches the terminal raw.
            cli::print_out(&huddle::text::sanitize::display(&report.text))?;
            Ok(if report.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Some(Command::Run(args)) => {
            let request = huddle::headless::RunRequest {
                preset: args.preset,
                group: args.group,
                session: args.session,
                mode: args.mode,
                max_iterations: args.max_iterations,
                model: args.model,
                budget: huddle::model::RunBudget {
                    max_duration_secs: args.max_duration,
                    token_budget: args.token_budget,
                    max_cost_usd: args.max_cost,
                },
                rate_limit_wait_secs: args.max_limit_wait,
                events: args.events,
                approve_tools: args.approve_tools,
                ask_tools: false,
                over_mcp: false,
                approve: args.approve,
                approval: args.approval,
                prompt: args.prompt.unwrap_or_default(),
                resume: args.resume,
                discard_interrupted: args.discard_interrupted,
                repo,
                worktrees: args.worktrees,
                sandbox: args.sandbox,
            };
            if args.dry_run {
                return Ok(ExitCode::from(huddle::dry_run::run(paths, &request)));
            }
            let code = block_on(huddle::host_cli::run(paths, request, args.detach))?;
            Ok(ExitCode::from(code))
        }
        None => {
            let runtime = runtime()?;
            let result = runtime.block_on(huddle::tui::run(paths, repo));
            // A running cycle and turns still ending are not waited for.
            runtime.shutdown_background();
            result?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
