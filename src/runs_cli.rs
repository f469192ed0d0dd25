//! `huddle runs prune`: removes what `huddle run` left behind (teams named `<preset> · run
//! <time>` and one-shot `run-…` sessions) once no headless run used it for a while. The host
//! does it on its workspace (the command is a front end, see `host_cli`); the TUI's prune key
//! does the same.

use crate::text::sanitize;
use crate::workspace::{Edits, headless_leftovers, prune};

/// Prunes (or with `dry_run` lists) the leftovers older than `older_than`: what the command
/// prints on standard output.
pub fn prune_text(edits: &Edits, older_than: chrono::Duration, dry_run: bool) -> String {
    let cutoff = chrono::Utc::now() - older_than;
    let leftovers = edits.view().read(|o| headless_leftovers(o, cutoff));
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
        let report = prune(edits, &leftovers);
        for line in report.lines() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    sanitize::display(&out).into_owned()
}
