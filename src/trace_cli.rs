//! `huddle trace`: prints a team run's trace tree from its run file. It only reads (the
//! organization file as saved and the run file), so it works next to the host or a TUI, even on
//! a run that is still going (the host says whether it is).

use crate::cli::{OutputError, TraceArgs, note, print_out};
use crate::config::Paths;
use crate::model::{Group, Organization};
use crate::store::{DataDirLock, OrganizationFile, RunFiles};
use crate::text::sanitize;
use crate::trace::{TraceBuilder, render};

/// Exit code of a usage error: an unknown group or run, no runs yet.
const USAGE: u8 = 2;
/// Exit code of a failure to read.
const FAILED: u8 = 1;
/// How many names or run ids an error message lists at most.
const LISTED_MAX: usize = 5;

/// Why there is no tree to print, and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    code: u8,
    message: String,
}

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        code: USAGE,
        message: message.into(),
    }
}

fn failed(message: impl Into<String>) -> Failure {
    Failure {
        code: FAILED,
        message: message.into(),
    }
}

/// Runs `huddle trace`; the exit code, or standard output lost.
pub fn run(paths: &Paths, args: &TraceArgs) -> Result<u8, OutputError> {
    match tree_text(paths, args) {
        Ok(text) => {
            print_out(&text)?;
            Ok(0)
        }
        Err(f) => {
            note(format_args!("huddle: {}", sanitize::display(&f.message)));
            Ok(f.code)
        }
    }
}

fn tree_text(paths: &Paths, args: &TraceArgs) -> Result<String, Failure> {
    let file = OrganizationFile::new(paths.organization_file());
    let org = file
        .inspect()
        .map_err(|reason| failed(format!("{} is unreadable: {reason}", file.path().display())))?
        .unwrap_or_default();
    let runs = RunFiles::new(paths.runs_dir());
    // The runs to choose from, oldest first: the group's, or every group's (run ids start with
    // their start time, so they sort across groups too).
    let group = args
        .group
        .as_deref()
        .map(|name| pick_group(&org, name))
        .transpose()?;
    let mut candidates: Vec<RunRef<'_>> = Vec::new();
    for g in group.map_or(org.groups.as_slice(), std::slice::from_ref) {
        let ids = runs
            .list(&g.id)
            .map_err(|e| failed(format!("cannot list the runs of group `{}`: {e}", g.name)))?;
        candidates.extend(ids.into_iter().map(|id| RunRef { id, group: g }));
    }
    candidates.sort_by(|a, b| a.id.cmp(&b.id));
    let scope = match group {
        Some(g) => format!("group `{}`", g.name),
        None => "any group".to_string(),
    };
    let chosen = match &args.run {
        Some(wanted) => pick_run(&candidates, wanted).map_err(|e| usage(e.message(&scope, wanted)))?,
        None => candidates.last().ok_or_else(|| {
            usage(match group {
                Some(g) => format!(
                    "group `{}` has no runs yet (old runs are pruned; run it with `huddle run --group \"{}\" …`)",
                    g.name, g.name
                ),
                None => "no runs yet: a team's runs are traced once it has run (`huddle run --preset NAME …`, or in the TUI)".to_string(),
            })
        })?,
    };
    let (group, run_id) = (chosen.group, &chosen.id);
    let lines = runs
        .read_lines(&group.id, run_id)
        .map_err(|e| failed(e.to_string()))?;
    // Member turns by their members' handles, as the TUI and `huddle run` name them.
    // A file without its end is a run still going only while the host (or a TUI) has it.
    let trace = TraceBuilder::of_run_file(
        crate::describe::Names::of_members(&org, &group.id),
        &lines,
        || still_going(paths, run_id),
    );
    Ok(if args.json {
        format!("{}\n", render::json(&trace))
    } else {
        render::text(&trace)
    })
}

/// True when the run may still be going: a host holds the data dir and lists it among its runs
/// (a holder that does not answer may be running it).
fn still_going(paths: &Paths, run_id: &str) -> bool {
    use crate::host::client::Client;
    use crate::host::protocol::{Hello, Reply, Request};
    if DataDirLock::holder(&paths.lock_file()).is_none() {
        return false;
    }
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return true;
    };
    runtime.block_on(async {
        let hello = Hello::new("trace", &paths.data_dir);
        let Ok(mut client) = Client::connect(paths, &hello, false).await else {
            return true;
        };
        match client.call(Request::Ps).await {
            Ok(Reply::Runs { runs }) => runs.iter().any(|r| r.run_id == run_id),
            _ => true,
        }
    })
}

/// A run file: its id and its group.
#[derive(Debug, Clone, PartialEq)]
struct RunRef<'a> {
    id: String,
    group: &'a Group,
}

impl AsRef<str> for RunRef<'_> {
    fn as_ref(&self) -> &str {
        &self.id
    }
}

/// Why a `--run` names no run.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RunPick<'a> {
    /// No id is or starts with it; the newest few ids, newest first.
    Unknown(Vec<&'a str>),
    /// It starts several ids: the first few of them.
    Ambiguous(usize, Vec<&'a str>),
}

impl RunPick<'_> {
    /// The message, `scope` saying where the runs were looked for (`group `X``, `any group`).
    fn message(&self, scope: &str, wanted: &str) -> String {
        match self {
            RunPick::Unknown(newest) if newest.is_empty() => {
                format!("no run `{wanted}` in {scope}: there are no runs yet")
            }
            RunPick::Unknown(newest) => format!(
                "no run `{wanted}` in {scope} (the newest: {}; old runs are pruned)",
                newest.join(", ")
            ),
            RunPick::Ambiguous(n, some) => format!(
                "`{wanted}` starts {n} runs in {scope} ({}{}): give more of the id",
                some.join(", "),
                if *n > some.len() { ", …" } else { "" }
            ),
        }
    }
}

/// The run `wanted` names among `runs` (oldest first): its full id, or a prefix of one only.
fn pick_run<'a, T: AsRef<str>>(runs: &'a [T], wanted: &str) -> Result<&'a T, RunPick<'a>> {
    let wanted = wanted.trim();
    if let Some(exact) = runs.iter().find(|r| r.as_ref() == wanted) {
        return Ok(exact);
    }
    let matching: Vec<&T> = runs
        .iter()
        .filter(|r| !wanted.is_empty() && r.as_ref().starts_with(wanted))
        .collect();
    match matching.len() {
        1 => Ok(matching[0]),
        0 => Err(RunPick::Unknown(
            runs.iter().rev().take(LISTED_MAX).map(AsRef::as_ref).collect(),
        )),
        n => Err(RunPick::Ambiguous(
            n,
            matching.into_iter().take(LISTED_MAX).map(AsRef::as_ref).collect(),
        )),
    }
}

/// The group named `name` (ignoring case), or the only one whose name starts with it
/// (headless teams are named `<preset> · run <time>`).
fn pick_group<'a>(org: &'a Organization, name: &str) -> Result<&'a Group, Failure> {
    if let Some(group) = org.group_by_name(name) {
        return Ok(group);
    }
    let wanted = name.trim().to_lowercase();
    let starting: Vec<&Group> = org
        .groups
        .iter()
        .filter(|g| !wanted.is_empty() && g.name.to_lowercase().starts_with(&wanted))
        .collect();
    match starting.as_slice() {
        [one] => Ok(one),
        [] => Err(usage(unknown_group(org, name))),
        several => {
            let names: Vec<String> = several
                .iter()
                .take(LISTED_MAX)
                .map(|g| format!("`{}`", g.name))
                .collect();
            Err(usage(format!(
                "`{name}` starts the names of {} groups ({}{}): give more of the name",
                several.len(),
                names.join(", "),
                if several.len() > LISTED_MAX { ", …" } else { "" }
            )))
        }
    }
}

/// "no group named …", with the names closest to it (or the groups there are).
fn unknown_group(org: &Organization, name: &str) -> String {
    let names: Vec<&str> = org.groups.iter().map(|g| g.name.as_str()).collect();
    if names.is_empty() {
        return format!("no group named `{name}` (there are no groups yet)");
    }
    let near = near_names(&names, name);
    if !near.is_empty() {
        let quoted: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
        return format!("no group named `{name}` (did you mean {}?)", quoted.join(", "));
    }
    let more = names.len().saturating_sub(LISTED_MAX);
    let listed = names[..names.len().min(LISTED_MAX)].join(", ");
    if more > 0 {
        format!("no group named `{name}` (groups: {listed} and {more} more)")
    } else {
        format!("no group named `{name}` (groups: {listed})")
    }
}

/// The names most like `wanted` (ignoring case; one containing the other counts as close),
/// closest first, at most a few.
fn near_names<'a>(names: &[&'a str], wanted: &str) -> Vec<&'a str> {
    let wanted = wanted.trim().to_lowercase();
    if wanted.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f64, &str)> = names
        .iter()
        .map(|&n| {
            let lower = n.to_lowercase();
            let score = if lower.contains(&wanted) || wanted.contains(&lower) {
                1.0
            } else {
                // A misspelt start of a long name (`planing` for `Planning Team · run …`)
                // counts as much as a misspelt whole name.
                let start: String = lower.chars().take(wanted.chars().count()).collect();
                strsim::normalized_damerau_levenshtein(&wanted, &lower)
                    .max(strsim::normalized_damerau_levenshtein(&wanted, &start))
            };
            (score, n)
        })
        .filter(|&(score, _)| score >= 0.6)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(LISTED_MAX).map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_run_is_named_by_its_id_or_a_unique_prefix() {
        let ids = ids(&["20260101-aa", "20260102-bb", "20260102-bc", "20260102-bc2"]);
        assert_eq!(pick_run(&ids, "20260101").unwrap(), "20260101-aa");
        assert_eq!(
            pick_run(&ids, "20260102-bc").unwrap(),
            "20260102-bc",
            "an exact id wins"
        );
        let ambiguous = pick_run(&ids, "20260102").unwrap_err();
        assert_eq!(
            ambiguous,
            RunPick::Ambiguous(3, vec!["20260102-bb", "20260102-bc", "20260102-bc2"])
        );
        assert!(
            ambiguous
                .message("group `Ops`", "20260102")
                .starts_with("`20260102` starts 3 runs in group `Ops` (")
        );
        let unknown = pick_run(&ids, "1999").unwrap_err();
        assert_eq!(
            unknown,
            RunPick::Unknown(vec!["20260102-bc2", "20260102-bc", "20260102-bb", "20260101-aa"])
        );
        assert!(matches!(pick_run(&ids, ""), Err(RunPick::Unknown(_))));
        let none: Vec<String> = Vec::new();
        let nothing = pick_run(&none, "2026").unwrap_err();
        assert_eq!(
            nothing.message("any group", "2026"),
            "no run `2026` in any group: there are no runs yet"
        );
    }

    #[test]
    fn near_names_come_closest_first() {
        let names = ["Incident Investigation · run 06:10", "Code Review", "Ops", "Docs"];
        assert_eq!(near_names(&names, "code reveiw"), ["Code Review"]);
        assert_eq!(
            near_names(&names, "incident"),
            ["Incident Investigation · run 06:10"]
        );
        assert_eq!(near_names(&names, "ops"), ["Ops"]);
        assert_eq!(
            near_names(&names, "incidnet"),
            ["Incident Investigation · run 06:10"]
        );
        assert!(near_names(&names, "zzzzzz").is_empty());
    }
}
