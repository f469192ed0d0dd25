//! The binary's edge: parse the command line, set up logging, dispatch, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;

use huddle::cli::{Cli, Command};
use huddle::config::Paths;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let paths = match Paths::from_env() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("huddle: {e}");
            return ExitCode::from(1);
        }
    };
    let _log_guard = huddle::logging::init(&paths.logs_dir());
    match run(cli, &paths) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("huddle: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli, paths: &Paths) -> anyhow::Result<ExitCode> {
    match cli.command {
        Some(Command::Doctor) => {
            let report = huddle::doctor::report(paths);
            print!("{}", report.text);
            Ok(if report.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Some(Command::Run(_)) | Some(Command::Presets(_)) | Some(Command::Squad(_)) | None => {
            anyhow::bail!("this command is not available yet in this build")
        }
    }
}
