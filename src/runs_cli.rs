//! `huddle runs prune`: removes what `huddle run` left behind (teams named `<preset> · run
//! <time>` and one-shot `run-…` sessions) once no headless run used it for a while. It takes the
//! data dir like any front end; while the TUI is open, its prune key does the same.

use crate::cli::{OutputError, RunsCommand, note, print_out};
use crate::config::{Config, Paths};
use crate::store::StoreError;
use crate::text::sanitize;
use crate::tools::ApprovalPolicy;
use crate::workspace::{OpenError, Workspace, headless_leftovers, prune};

const FAILED: u8 = 1;

/// Runs one `huddle runs` command; the exit code, or standard output lost.
pub fn run(paths: &Paths, repo: &std::path::Path, command: RunsCommand) -> Result<u8, OutputError> {
    let RunsCommand::Prune { older_than, dry_run } = command;
    let config = match Config::load(paths) {
        Ok(loaded) => loaded.config,
        Err(e) => {
            note(format_args!("huddle: {e}"));
            return Ok(FAILED);
        }
    };
    let workspace = match Workspace::open(paths, &config, repo.to_path_buf(), ApprovalPolicy::DenyAll) {
        Ok(w) => w,
        Err(OpenError::Store(StoreError::AlreadyRunning { pid, .. })) => {
            note(format_args!(
                "huddle: huddle is open on this data dir (pid {pid}): prune there (its prune key, `P`), or quit it first"
            ));
            return Ok(FAILED);
        }
        Err(e) => {
            note(format_args!("huddle: {e}"));
            return Ok(FAILED);
        }
    };
    let cutoff = chrono::Utc::now() - older_than;
    let leftovers = workspace.org.read(|o| headless_leftovers(o, cutoff));
    let mut out = String::new();
    if leftovers.is_empty() {
        out.push_str("nothing to prune\n");
    } else if dry_run {
        for l in &leftovers {
            let what = if l.is_group { "team" } else { "session" };
            out.push_str(&format!(
                "would remove {what} `{}` (last used {})\n",
                l.name,
                l.last_used.format("%Y-%m-%d %H:%M")
            ));
        }
    } else {
        let report = prune(&workspace.edits, &leftovers);
        for line in report.lines() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    let saved = workspace.engine.flush();
    print_out(&sanitize::display(&out))?;
    if let Err(e) = saved {
        note(format_args!("huddle: could not save: {e}"));
        return Ok(FAILED);
    }
    Ok(0)
}
