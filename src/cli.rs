//! The command line (SPEC section 9), and how its output reaches the terminal.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::model::limits::parse_max_iterations;
use crate::model::{Mode, WorktreeStrategy};

#[derive(Debug, Parser)]
#[command(
    name = "huddle",
    version,
    about = "A terminal workbench for running teams of LLM sessions"
)]
pub struct Cli {
    /// Repository directory (defaults to the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a team (or one session) headless: progress on stderr, the answer on stdout.
    Run(RunArgs),
    /// List and inspect team presets.
    #[command(subcommand)]
    Presets(PresetsCommand),
    /// Read and write the repository's Squad team folder.
    #[command(subcommand)]
    Squad(SquadCommand),
    /// Show paths, config, providers and the organization's state.
    Doctor,
    /// Team worktrees: list them, review a diff, merge one back, remove them.
    #[command(subcommand)]
    Worktrees(WorktreesCommand),
    /// What `huddle run` left behind: prune old headless teams and sessions.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// The runs going (in the background host): group, mode, state, elapsed time, tokens and
    /// what each waits for.
    Ps {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop a run (its id, or the start of it) or every run of a group (its name).
    Stop {
        #[arg(value_name = "RUN|GROUP")]
        target: String,
    },
    /// Follow a run as `huddle run` shows it (what it did so far, then live); Ctrl-C detaches
    /// and the run goes on.
    Attach {
        #[arg(value_name = "RUN|GROUP")]
        target: String,
        /// NDJSON events on stdout instead of progress.
        #[arg(long)]
        events: bool,
    },
    /// Serve MCP on standard input and output (or `--http` on loopback): agents such as Claude Code and Codex list
    /// huddle's teams, run one on a prompt and follow, stop and answer its runs (which go on in
    /// the host). See docs/mcp-server.md.
    Mcp {
        /// Serve streamable HTTP on this loopback address (e.g. 127.0.0.1:0) instead of
        /// standard input and output.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
    },
    /// The host: the process that owns the data dir and runs everything (started on demand by
    /// the other commands; not meant to be run by hand).
    #[command(hide = true)]
    Host,
    /// Print a team run's trace tree: who did what, with status, duration, tokens and cost.
    ///
    /// The run's executions (modes dispatch and team) nested by parent, or one node per member
    /// turn (the other modes), each with its status, duration, tokens, cost, tool calls and the
    /// first line of its result. Read-only: it works next to an open huddle.
    Trace(TraceArgs),
}

/// `huddle trace`: which run, and how to print it.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The team group: its name, or the start of only one group's name; default: any group.
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
    /// The run: its id or a prefix only one run starts with; default: the newest run.
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Print the tree as JSON (nodes nested under `children`).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Remove the teams and one-shot sessions `huddle run` made that no headless run used for
    /// this long (their transcripts and run files go; worktrees holding work are kept).
    Prune {
        /// An age: `30m`, `12h`, `7d`, `2w`.
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        older_than: chrono::Duration,
        /// Only list what would go.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `30m`, `12h`, `7d`, `2w` (also `s`): a positive number and one unit.
pub fn parse_age(text: &str) -> Result<chrono::Duration, String> {
    let text = text.trim();
    let expected =
        || format!("`{text}` is not an age: expected a number and a unit, like 30m, 12h, 7d or 2w");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(expected)?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().map_err(|_| expected())?;
    let seconds = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(expected()),
    };
    if n == 0 {
        return Err(format!(
            "`{text}` is no age to prune by: it must be more than zero, like 30m, 12h, 7d or 2w"
        ));
    }
    n.checked_mul(seconds)
        .and_then(chrono::Duration::try_seconds)
        .ok_or_else(|| format!("`{text}` is too long an age"))
}

/// Which worktrees: a team's, a session's, or a folder no session records.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct WorktreeTarget {
    /// Every worktree of this team group.
    #[arg(long)]
    pub group: Option<String>,
    /// The worktree of this session.
    #[arg(long)]
    pub session: Option<String>,
    /// A worktree folder no session records: kept when its team was deleted or pruned (`huddle
    /// worktrees list` shows it under "to look at").
    #[arg(long, value_name = "DIR")]
    pub path: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum WorktreesCommand {
    /// Every team worktree with its sessions, branch and state (uncommitted changes, commits
    /// ahead, merged or not), and any huddle did not record.
    List {
        /// Only this team group's.
        #[arg(long)]
        group: Option<String>,
    },
    /// What a worktree changed since its base commit (committed or not): files, then the patch.
    Diff {
        #[command(flatten)]
        target: WorktreeTarget,
        /// Only the list of files.
        #[arg(long)]
        stat: bool,
    },
    /// Bring a worktree's commits into the repository's current branch: lists them, then asks
    /// (y/N); a conflict is aborted and the repository left as it was.
    Merge {
        #[command(flatten)]
        target: WorktreeTarget,
        /// Cherry-pick the commits instead of a merge commit.
        #[arg(long)]
        cherry_pick: bool,
        /// Do not ask (needed when standard input is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Remove worktrees and their branches; refused when they hold uncommitted changes or
    /// unmerged commits, unless --force.
    Remove {
        /// Every worktree of this team group.
        #[arg(long, conflicts_with_all = ["session", "path"], required_unless_present_any = ["session", "path"])]
        group: Option<String>,
        /// The worktree of this session.
        #[arg(long, conflicts_with = "path")]
        session: Option<String>,
        /// A worktree folder no session records (as `huddle doctor` reports it).
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        /// Remove even when that throws uncommitted changes or unmerged commits away.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("existing").args(["group", "session"]))]
pub struct RunArgs {
    /// Create a team group from this preset.
    #[arg(long, conflicts_with = "group")]
    pub preset: Option<String>,
    /// Reuse an existing team group.
    #[arg(long)]
    pub group: Option<String>,
    /// Reuse an existing session (a one-shot session an earlier `huddle run` made, or any
    /// other): ask it, have it reflect (--max-iterations N), or resume its reflection.
    #[arg(long, conflicts_with = "preset")]
    pub session: Option<String>,
    /// Continue the group's (or the session's) interrupted run where it was left (no prompt):
    /// turns it finished are not asked again.
    #[arg(long, requires = "existing", conflicts_with_all = ["preset", "discard_interrupted"])]
    pub resume: bool,
    /// Start over on a group (or session) whose run was interrupted (the interrupted run is
    /// recorded as cancelled).
    #[arg(long, requires = "existing")]
    pub discard_interrupted: bool,
    /// Override the team's mode for this run.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Override the team's max iterations for this run (1-100); a single session reflects up to
    /// N times.
    #[arg(long, value_name = "N", value_parser = parse_max_iterations)]
    pub max_iterations: Option<u32>,
    /// Use this model for every session of the run.
    #[arg(long, value_name = "SLUG")]
    pub model: Option<String>,
    /// End the run with `budget_exhausted` (exit code 6) after SECS seconds (over the team's
    /// `max_duration_secs`).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_duration: Option<u64>,
    /// End the run with `budget_exhausted` (exit code 6) once it has used N tokens (over the
    /// team's `token_budget`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub token_budget: Option<u64>,
    /// End the run with `budget_exhausted` (exit code 6) once it has spent USD US dollars
    /// (over the team's `max_cost_usd`); refused when a model of the run has no known price.
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// Run nothing: print what earlier runs of the team (or of teams made from the preset)
    /// cost, in tokens and time (median and 90th percentile), or that there are none.
    #[arg(long, conflicts_with_all = ["resume", "discard_interrupted", "events"])]
    pub dry_run: bool,
    /// Wait at most SECS seconds for a rate or usage limit to reset (over the team's and
    /// config.yaml's `rate_limit_wait_secs`, default 900); past it the run ends `rate_limited`
    /// (exit code 8), resumable with --resume. 0: never wait.
    #[arg(long, value_name = "SECS")]
    pub max_limit_wait: Option<u64>,
    /// Print NDJSON events on stdout.
    #[arg(long)]
    pub events: bool,
    /// Start the run and print its id at once; it goes on in the background (`huddle ps`,
    /// `huddle attach`, `huddle stop`).
    #[arg(long, conflicts_with_all = ["events", "approve"])]
    pub detach: bool,
    /// With --preset: how the team shares git worktrees (shared, group_shared,
    /// orchestrator_isolated, fully_isolated) instead of the preset's `worktrees:`.
    #[arg(long, value_name = "STRATEGY", requires = "preset", value_parser = parse_strategy)]
    pub worktrees: Option<WorktreeStrategy>,
    /// Run tool calls whose MCP server has `approval: ask` (by default they are denied, since
    /// nobody is there to approve them).
    #[arg(long)]
    pub approve_tools: bool,
    /// A relay asks about each draft on this terminal (y send / e edit / n reject); without it a
    /// relay runs only in full_auto approval.
    #[arg(long)]
    pub approve: bool,
    /// A relay's approval mode for this run: manual, semi_auto or full_auto.
    #[arg(long, value_name = "MODE", value_parser = parse_approval)]
    pub approval: Option<crate::model::ApprovalMode>,
    /// The sandbox of this run's CLI agents, stdio MCP servers and hooks, over every setting
    /// (config.yaml, the team, its members, each server): off, read-only or workspace-write.
    /// read-only and workspace-write are required: without a working sandbox nothing starts.
    #[arg(long, value_name = "MODE", value_parser = crate::sandbox::SandboxMode::parse)]
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    /// The prompt; `-` reads it from standard input.
    #[arg(required_unless_present_any = ["resume", "dry_run"], conflicts_with = "resume")]
    pub prompt: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum PresetsCommand {
    /// Every preset with its tier (builtin, user, repo).
    List {
        #[arg(long)]
        json: bool,
    },
    /// One preset, resolved.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SquadCommand {
    /// Write a team group to the repository's `.squad/` folder and the user presets.
    Export {
        #[arg(long)]
        group: String,
        /// Overwrite files that differ.
        #[arg(long)]
        force: bool,
    },
}

/// Standard output could not take what huddle printed.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The reader went away (`huddle doctor | head -1`): not worth a message.
    #[error("standard output was closed")]
    Closed,
    /// A full disk (`> /dev/full`), an I/O error.
    #[error("cannot write to standard output: {0}")]
    Failed(#[source] io::Error),
}

impl OutputError {
    /// What a shell shows for a process killed by SIGPIPE (128 + 13) for a closed pipe, as for
    /// `cat` or `git`; 1 for any other failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            OutputError::Closed => 141,
            OutputError::Failed(_) => 1,
        }
    }
}

impl From<io::Error> for OutputError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            OutputError::Closed
        } else {
            OutputError::Failed(e)
        }
    }
}

/// Writes `text` to standard output and flushes it. Unlike `print!`, a closed pipe or a full
/// disk is an error to act on, not a panic.
pub fn print_out(text: &str) -> Result<(), OutputError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Writes one line to standard error, ignoring failure: unlike `eprintln!`, a closed or full
/// stderr never panics (a message nobody can read is no reason to lose a finished run).
pub fn note(line: std::fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(line);
    let _ = err.write_all(b"\n");
    let _ = err.flush();
}

/// Where a command's two kinds of output go: this process's standard output and error, or, for
/// a run driven by the host, back over its socket to the front end that asked (which writes
/// them to its own).
#[derive(Debug, Clone)]
pub enum RunOutput {
    Terminal,
    Remote(tokio::sync::mpsc::UnboundedSender<OutputLine>),
}

/// One piece of output of a run driven for a front end over the host's socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputLine {
    /// For standard output, as is.
    Out(String),
    /// One line for standard error.
    Err(String),
    /// The run is registered under this id (a detaching `huddle run` prints it and goes).
    Started {
        run_id: String,
        group_id: String,
        group: String,
    },
    /// A relay draft waits for the person at the front end's terminal (`--approve`): it asks
    /// there and answers through the host.
    Draft {
        group_id: String,
        turn: u32,
        text: String,
        review: Option<String>,
    },
}

impl RunOutput {
    /// [`note`]: one line for standard error.
    pub fn note(&self, line: std::fmt::Arguments<'_>) {
        match self {
            RunOutput::Terminal => note(line),
            RunOutput::Remote(tx) => {
                let _ = tx.send(OutputLine::Err(line.to_string()));
            }
        }
    }

    /// Tells a remote front end something that is not output (a run's id, a draft to ask
    /// about); false when it went away. Nothing for this process's own terminal.
    pub fn tell(&self, line: OutputLine) -> bool {
        match self {
            RunOutput::Terminal => true,
            RunOutput::Remote(tx) => tx.send(line).is_ok(),
        }
    }

    /// [`print_out`]; a remote reader that went away is a closed output.
    pub fn print(&self, text: &str) -> Result<(), OutputError> {
        match self {
            RunOutput::Terminal => print_out(text),
            RunOutput::Remote(tx) => tx
                .send(OutputLine::Out(text.to_string()))
                .map_err(|_| OutputError::Closed),
        }
    }
}

/// A positive amount of US dollars (`2.50`, `$2.50`).
fn parse_cost(s: &str) -> Result<f64, String> {
    let text = s.trim().trim_start_matches('$');
    match text.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(format!(
            "`{s}` is not an amount of US dollars above 0 (e.g. 2.50)"
        )),
    }
}

fn parse_strategy(s: &str) -> Result<WorktreeStrategy, String> {
    s.parse::<WorktreeStrategy>().map_err(|e| e.to_string())
}

fn parse_approval(s: &str) -> Result<crate::model::ApprovalMode, String> {
    use crate::model::ApprovalMode;
    match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
        "manual" => Ok(ApprovalMode::Manual),
        "semi_auto" => Ok(ApprovalMode::SemiAuto),
        "full_auto" => Ok(ApprovalMode::FullAuto),
        _ => Err(format!(
            "unknown approval mode `{s}` (expected one of: manual, semi_auto, full_auto)"
        )),
    }
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse::<Mode>().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_need_a_number_and_a_unit() {
        assert_eq!(parse_age("7d"), Ok(chrono::Duration::days(7)));
        assert_eq!(parse_age("2w"), Ok(chrono::Duration::days(14)));
        assert_eq!(parse_age("30m"), Ok(chrono::Duration::minutes(30)));
        assert_eq!(parse_age(" 12h "), Ok(chrono::Duration::hours(12)));
        for bad in ["7", "d", "-1d", "7 days", "7y", ""] {
            let err = parse_age(bad).unwrap_err();
            assert!(err.contains("not an age"), "{bad}: {err}");
        }
        // A number and a unit, but no age to prune by: said so, not "not a number and a unit".
        for zero in ["0m", "0d", "00h"] {
            let err = parse_age(zero).unwrap_err();
            assert!(err.contains("must be more than zero"), "{zero}: {err}");
        }
        let err = parse_age("99999999999999999w").unwrap_err();
        assert!(err.contains("too long"), "{err}");
        let cli =
            Cli::try_parse_from(["huddle", "runs", "prune", "--older-than", "7d", "--dry-run"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Runs(RunsCommand::Prune { dry_run: true, .. }))
        ));
    }

    #[test]
    fn run_takes_mode_flags_in_any_case() {
        let cli = Cli::try_parse_from([
            "huddle",
            "run",
            "--preset",
            "x",
            "--mode",
            "Orchestrator-Reflect",
            "--events",
            "hi",
        ])
        .unwrap();
        let Some(Command::Run(run)) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.mode, Some(Mode::OrchestratorReflect));
        assert!(run.events);
        assert_eq!(run.prompt.as_deref(), Some("hi"));
    }

    #[test]
    fn a_cost_budget_is_dollars_above_zero_and_a_dry_run_needs_no_prompt() {
        let parse = |args: &[&str]| {
            let mut all = vec!["huddle", "run"];
            all.extend_from_slice(args);
            Cli::try_parse_from(all).map(|cli| match cli.command {
                Some(Command::Run(run)) => run,
                _ => panic!("not run"),
            })
        };
        let run = parse(&["--preset", "x", "--max-cost", "2.5", "hi"]).unwrap();
        assert_eq!(run.max_cost, Some(2.5));
        assert_eq!(
            parse(&["--preset", "x", "--max-cost", "$0.10", "hi"])
                .unwrap()
                .max_cost,
            Some(0.1)
        );
        for bad in ["0", "--max-cost=-1", "lots", "inf"] {
            let args = match bad.strip_prefix("--max-cost=") {
                Some(_) => vec!["--preset", "x", bad, "hi"],
                None => vec!["--preset", "x", "--max-cost", bad, "hi"],
            };
            let err = parse(&args).unwrap_err().to_string();
            assert!(err.contains("not an amount of US dollars"), "{err}");
        }
        let dry = parse(&["--preset", "x", "--dry-run"]).unwrap();
        assert!(dry.dry_run && dry.prompt.is_none());
        assert!(parse(&["--preset", "x"]).is_err(), "a prompt is needed to run");
        assert!(parse(&["--group", "g", "--dry-run", "--events"]).is_err());
    }

    #[test]
    fn resume_needs_a_group_and_no_prompt() {
        let cli = Cli::try_parse_from(["huddle", "run", "--group", "g", "--resume"]).unwrap();
        let Some(Command::Run(run)) = cli.command else {
            panic!("not run")
        };
        assert!(run.resume && run.prompt.is_none());
        // Or a session (its reflection).
        let cli = Cli::try_parse_from(["huddle", "run", "--session", "s", "--resume"]).unwrap();
        let Some(Command::Run(run)) = cli.command else {
            panic!("not run")
        };
        assert!(run.resume && run.session.as_deref() == Some("s"));
        for args in [
            &["huddle", "run", "--resume"][..],
            &["huddle", "run", "--group", "g", "--resume", "x"],
            &[
                "huddle",
                "run",
                "--group",
                "g",
                "--resume",
                "--discard-interrupted",
            ],
            &["huddle", "run", "--group", "g"],
            &["huddle", "run", "--discard-interrupted", "x"],
            &["huddle", "run", "--session", "s", "--resume", "x"],
            &["huddle", "run", "--session", "s", "--group", "g", "--resume"],
            &["huddle", "run", "--session", "s", "--preset", "p", "x"],
        ] {
            let err = Cli::try_parse_from(args).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{args:?}");
        }
    }

    #[test]
    fn preset_and_group_conflict_and_bad_mode_is_a_usage_error() {
        let err = Cli::try_parse_from(["huddle", "run", "--preset", "a", "--group", "b", "x"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let err = Cli::try_parse_from(["huddle", "run", "--mode", "chaos", "x"]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("unknown mode"), "{err}");
    }

    #[test]
    fn max_iterations_outside_one_to_a_hundred_is_a_usage_error() {
        for bad in ["0", "101", "-1", "many"] {
            let flag = format!("--max-iterations={bad}");
            let err = Cli::try_parse_from(["huddle", "run", flag.as_str(), "x"]).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}");
            assert!(
                err.to_string()
                    .contains("max iterations must be a whole number from 1 to 100"),
                "{err}"
            );
        }
        for good in ["1", "100"] {
            let cli = Cli::try_parse_from(["huddle", "run", "--max-iterations", good, "x"]).unwrap();
            let Some(Command::Run(run)) = cli.command else {
                panic!("not run")
            };
            assert_eq!(run.max_iterations, good.parse().ok());
        }
    }

    #[test]
    fn trace_takes_a_group_a_run_and_json() {
        let cli =
            Cli::try_parse_from(["huddle", "trace", "--group", "Ops", "--run", "2026", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Trace(TraceArgs { group: Some(g), run: Some(r), json: true })) if g == "Ops" && r == "2026"
        ));
        let cli = Cli::try_parse_from(["huddle", "trace"]).unwrap();
        assert!(matches!(
            cli.command,
            Some(Command::Trace(TraceArgs {
                group: None,
                run: None,
                json: false
            }))
        ));
        assert!(Cli::try_parse_from(["huddle", "trace", "--run"]).is_err());
    }

    #[test]
    fn repo_is_global() {
        let cli = Cli::try_parse_from(["huddle", "presets", "list", "--repo", "/r", "--json"]).unwrap();
        assert_eq!(cli.repo, Some(PathBuf::from("/r")));
        let cli = Cli::try_parse_from(["huddle", "--repo", "/r"]).unwrap();
        assert!(cli.command.is_none());
    }
}
