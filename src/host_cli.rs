//! The command-line front ends of the host: `huddle run` (its run goes on in the host, its
//! output and exit code are those of a run in this process), `huddle ps`, `huddle stop`,
//! `huddle attach`, and the commands that change the records (`huddle runs prune`,
//! `huddle worktrees remove`).

use std::io::IsTerminal;
use std::path::Path;

use crate::cli::{OutputError, RunOutput, note, print_out};
use crate::config::{Config, Paths};
use crate::describe::Names;
use crate::engine::events::EventKind;
use crate::headless::{self, RunRequest};
use crate::host::client::{Client, ClientError, Reader, Writer};
use crate::host::protocol::{Hello, HostMessage, Reply, Request, RunInfo, restore_event};
use crate::model::{CycleOutcome, DraftAnswer};
use crate::text::sanitize;

/// Exit code of a usage error.
const USAGE: u8 = 2;

/// Connects to the host (starting it when `start`); `Err` is the exit code, the reason said.
async fn connect(paths: &Paths, hello: &Hello, start: bool) -> Result<Client, u8> {
    match Client::connect(paths, hello, start).await {
        Ok(client) => {
            for notice in &client.welcome.notices {
                note(format_args!("huddle: {}", sanitize::display(notice)));
            }
            Ok(client)
        }
        Err(ClientError::NotRunning) => Err(u8::MAX),
        Err(e) => {
            note(format_args!("huddle: {e}"));
            Err(1)
        }
    }
}

/// Writes a line of progress on standard error (coloured by the host when asked).
fn progress(text: &str) {
    note(format_args!("{text}"));
}

/// How a group names its members in progress lines, as the organization on disk says.
fn team_names(paths: &Paths, group_id: &str, group: &str) -> Names {
    crate::store::OrganizationFile::new(paths.organization_file())
        .inspect()
        .ok()
        .flatten()
        .and_then(|o| o.group(group_id).map(|g| Names::team(g.members_slug())))
        .unwrap_or_else(|| Names::of_group(group))
}

/// `huddle run`: the run goes on in the host, with this process's configuration and
/// environment; what it prints and its exit code are those of a run in this process. Ctrl-C,
/// SIGTERM and SIGHUP (or this process going away) stop it as they stop a local run. With
/// `detach`, the run's id is printed once it starts, and the run goes on.
pub async fn run(paths: &Paths, request: RunRequest, detach: bool) -> u8 {
    let request = match headless::prepare(request) {
        Ok(r) => r,
        Err(failure) => {
            note(format_args!("huddle: {failure}"));
            return failure.code;
        }
    };
    let config = match Config::load(paths) {
        Ok(loaded) => loaded.config,
        Err(e) => {
            note(format_args!("huddle: {e}"));
            return 1;
        }
    };
    let hello = Hello::new("run", &request.repo).with_work(config, crate::headless_relay::on_terminal());
    // Taken before the run is asked for: a SIGTERM that comes once the host has started it
    // stops it (exit 143), rather than killing this process with the run left behind.
    let signals = Signals::new();
    let client = match connect(paths, &hello, true).await {
        Ok(c) => c,
        Err(code) => return code.min(1),
    };
    let (mut reader, mut writer) = client.split();
    let id = match writer
        .send(Request::Run {
            request,
            detach,
            keep: false,
        })
        .await
    {
        Ok(id) => id,
        Err(e) => {
            note(format_args!("huddle: {e}"));
            return 1;
        }
    };
    follow_run(&mut reader, &mut writer, id, detach, signals).await
}

/// Prints a run's output as it comes, passes signals and draft answers on; the exit code.
async fn follow_run(
    reader: &mut Reader,
    writer: &mut Writer,
    id: u64,
    detach: bool,
    mut signals: Signals,
) -> u8 {
    let mut stopping = false;
    // Standard output gone: the exit code says so, as for a local run.
    let mut stdout_lost: Option<u8> = None;
    let (answer_tx, mut answers) = tokio::sync::mpsc::unbounded_channel::<(String, Option<DraftAnswer>)>();
    // The run's group, for what resumes it if the host goes.
    let mut group_name: Option<String> = None;
    let mut run_name: Option<String> = None;
    loop {
        let message = tokio::select! {
            message = reader.next() => message,
            (number, name) = signals.next(), if !stopping => {
                note(format_args!("\nhuddle: stopping ({name})..."));
                stopping = true;
                let _ = writer.send(Request::Signal { run: id, signal: number }).await;
                continue;
            }
            Some((group_id, answer)) = answers.recv() => {
                let _ = writer.send(Request::AnswerDraft { group_id, answer }).await;
                continue;
            }
        };
        match message {
            Ok(Some(HostMessage::Output { out, err, .. })) => {
                if let Some(text) = out
                    && stdout_lost.is_none()
                    && let Err(e) = print_out(&text)
                {
                    if let OutputError::Failed(_) = e {
                        note(format_args!("huddle: {e} (the run's result is saved)"));
                    }
                    stdout_lost = Some(e.exit_code());
                }
                if let Some(text) = err {
                    progress(&text);
                }
            }
            Ok(Some(HostMessage::Started { run_id, group, .. })) if detach => {
                note(format_args!(
                    "huddle: run {run_id} of `{}` goes on in the background: `huddle attach {run_id}` follows it, `huddle stop {run_id}` stops it",
                    sanitize::display(&group)
                ));
                return match print_out(&format!("{run_id}\n")) {
                    Ok(()) => 0,
                    Err(e) => e.exit_code(),
                };
            }
            Ok(Some(HostMessage::Started { group, run_id, .. })) => {
                group_name = Some(group);
                run_name = Some(run_id);
            }
            Ok(Some(HostMessage::CutOff { reason })) => {
                note(format_args!("huddle: {}", cut_off(&reason, run_name.as_deref())));
                return 1;
            }
            Ok(Some(HostMessage::Draft {
                group_id,
                turn,
                text,
                review,
                ..
            })) => {
                let tx = answer_tx.clone();
                // Asked on this terminal, off the async threads; the answer goes to the host.
                tokio::task::spawn_blocking(move || {
                    let answer = crate::headless_relay::ask(turn, &text, review.as_deref());
                    if answer.is_none() {
                        note(format_args!(
                            "huddle: no answer (standard input closed): stopping the relay"
                        ));
                    }
                    let _ = tx.send((group_id, answer));
                });
            }
            Ok(Some(HostMessage::Exit { code, .. })) => return stdout_lost.unwrap_or(code),
            Ok(Some(HostMessage::Failed { code, message, .. })) => {
                note(format_args!("huddle: {message}"));
                return code;
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                note(format_args!("huddle: {}", host_gone(group_name.as_deref())));
                return 1;
            }
            Err(e) => {
                note(format_args!("huddle: {e}"));
                return 1;
            }
        }
    }
}

/// `huddle ps`: the runs going, one a line (or as JSON).
pub async fn ps(paths: &Paths, repo: &Path, json: bool) -> Result<u8, OutputError> {
    let (runs, host) = match connect(paths, &Hello::new("ps", repo), false).await {
        Ok(mut client) => match client.call(Request::Ps).await {
            Ok(Reply::Runs { runs }) => (runs, Some(client.welcome.pid)),
            Ok(other) => {
                note(format_args!("huddle: the huddle host answered {other:?}"));
                return Ok(1);
            }
            Err((code, message)) => {
                note(format_args!("huddle: {message}"));
                return Ok(code);
            }
        },
        Err(u8::MAX) => (Vec::new(), None),
        Err(code) => return Ok(code),
    };
    if json {
        let text = serde_json::to_string_pretty(&runs).unwrap_or_else(|_| "[]".into());
        print_out(&format!("{text}\n"))?;
        return Ok(0);
    }
    let mut text = ps_table(&runs, chrono::Utc::now());
    // The host's pid, for whoever wants to end a stuck one (review 23-3 nit E6).
    if let Some(pid) = host {
        text.push_str(&format!("huddle host: pid {pid}\n"));
    }
    print_out(&sanitize::display(&text))?;
    Ok(0)
}

/// The runs as `huddle ps` prints them.
pub fn ps_table(runs: &[RunInfo], now: chrono::DateTime<chrono::Utc>) -> String {
    if runs.is_empty() {
        return "nothing runs\n".into();
    }
    let rows: Vec<[String; 7]> = runs
        .iter()
        .map(|r| {
            let what = match &r.session {
                Some(s) => format!("{} / {s}", r.group),
                None => r.group.clone(),
            };
            let mode = match (&r.key, r.mode) {
                (_, Some(mode)) => mode.to_string(),
                (crate::engine::events::RunKey::Chat { .. }, None) => "chat".into(),
                (crate::engine::events::RunKey::Reflection { .. }, None) => "reflection".into(),
                _ => "-".into(),
            };
            let notes = [r.waiting_for.clone(), r.front.clone()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; ");
            [
                r.run_id.clone(),
                crate::text::first_line(&what, 40),
                mode,
                r.state.as_str().to_string(),
                elapsed(now - r.started_at),
                r.tokens.to_string(),
                notes,
            ]
        })
        .collect();
    let head = [
        "RUN",
        "GROUP",
        "MODE",
        "STATE",
        "ELAPSED",
        "TOKENS",
        "WAITING FOR / STARTED BY",
    ];
    let mut widths = head.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.trim_end().to_string() + "\n"
    };
    let mut out = line(head.to_vec());
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// `1h02m`, `3m07s`, `12s`.
fn elapsed(d: chrono::Duration) -> String {
    let s = d.num_seconds().max(0);
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// The exit code of `huddle stop` and `huddle attach` naming no run that goes (unknown, or
/// ended), with a host or without one: a usage error, as the host answers it (review 23-3 nit
/// E7: without a host it was 1, and a script could not tell it from a failure).
const NO_SUCH_RUN: u8 = 2;

/// Why there is nothing to stop or follow when no host runs: the run named has ended (its run
/// file is on disk), or nothing runs at all.
fn nothing_runs(paths: &Paths, target: &str) -> String {
    match ended_run_on_disk(&paths.runs_dir(), target.trim()) {
        Some(id) => crate::host::table::has_ended(&id),
        None => "nothing runs on this data dir".into(),
    }
}

/// The run whose file (in any group's folder of `runs_dir`) has exactly this id; only an id's
/// characters are looked for, so a target never names a path.
fn ended_run_on_disk(runs_dir: &Path, id: &str) -> Option<String> {
    let is_id = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !is_id {
        return None;
    }
    let file = format!("{id}.jsonl");
    std::fs::read_dir(runs_dir)
        .ok()?
        .flatten()
        .any(|group| group.path().join(&file).is_file())
        .then(|| id.to_string())
}

/// `huddle stop RUN|GROUP`: stops a run (its id or the start of it), or a group's runs.
pub async fn stop(paths: &Paths, repo: &Path, target: &str) -> u8 {
    let mut client = match connect(paths, &Hello::new("stop", repo), false).await {
        Ok(c) => c,
        Err(u8::MAX) => {
            note(format_args!("huddle: {}", nothing_runs(paths, target)));
            return NO_SUCH_RUN;
        }
        Err(code) => return code,
    };
    match client
        .call(Request::Stop {
            target: target.to_string(),
        })
        .await
    {
        Ok(Reply::Stopped { runs, stopping }) => {
            for run in runs {
                // An older host answers before the runs end (`None`): as it then said.
                if stopping.as_ref().is_none_or(|s| s.contains(&run)) {
                    note(format_args!(
                        "huddle: stopping run {run}: it ends once its current step lets go (`huddle ps` shows it `stopping` until then)"
                    ));
                } else {
                    note(format_args!("huddle: run {run} stopped"));
                }
            }
            0
        }
        Ok(other) => {
            note(format_args!("huddle: the huddle host answered {other:?}"));
            1
        }
        Err((code, message)) => {
            note(format_args!("huddle: {}", sanitize::display(&message)));
            code
        }
    }
}

/// `huddle attach RUN|GROUP`: what the run did so far and then live, as `huddle run` prints it
/// (progress, or NDJSON with `events`), ending with its answer and exit code; Ctrl-C detaches
/// and the run goes on.
pub async fn attach(paths: &Paths, repo: &Path, target: &str, events: bool) -> u8 {
    // Taken first: a Ctrl-C while the host answers detaches, never kills by the default action.
    let mut signals = Signals::new();
    let client = match connect(paths, &Hello::new("attach", repo), false).await {
        Ok(c) => c,
        Err(u8::MAX) => {
            note(format_args!("huddle: {}", nothing_runs(paths, target)));
            return NO_SUCH_RUN;
        }
        Err(code) => return code,
    };
    let (mut reader, mut writer) = client.split();
    let id = match writer
        .send(Request::Attach {
            target: target.to_string(),
        })
        .await
    {
        Ok(id) => id,
        Err(e) => {
            note(format_args!("huddle: {e}"));
            return 1;
        }
    };
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut names = Names::of_group("");
    let mut run_id = String::new();
    let mut answer = String::new();
    loop {
        let message = tokio::select! {
            message = reader.next() => message,
            _ = signals.next() => {
                note(format_args!(
                    "\nhuddle: detached; run {run_id} goes on (`huddle attach {run_id}` follows it again)"
                ));
                return 0;
            }
        };
        match message {
            Ok(Some(HostMessage::Reply {
                id: got,
                reply: Reply::Attached { run },
            })) if got == id => {
                run_id = run.run_id.clone();
                names = team_names(paths, &run.group_id, &run.group);
                note(format_args!(
                    "huddle: following run {} of `{}` ({}); Ctrl-C detaches, the run goes on",
                    run.run_id,
                    sanitize::display(&run.group),
                    run.state.as_str()
                ));
            }
            Ok(Some(HostMessage::Failed { code, message, .. })) => {
                note(format_args!("huddle: {}", sanitize::display(&message)));
                return code;
            }
            Ok(Some(HostMessage::CutOff { reason })) => {
                note(format_args!(
                    "huddle: {}",
                    cut_off(&reason, Some(run_id.as_str()).filter(|r| !r.is_empty()))
                ));
                return 1;
            }
            Ok(Some(HostMessage::Event { event, stored, .. })) => {
                let event = restore_event(*event, stored);
                if event.run_id.as_deref() != Some(run_id.as_str()) {
                    continue;
                }
                if let Err(e) = headless::print_event(&event, &names, events, color, &RunOutput::Terminal) {
                    if let OutputError::Failed(_) = e {
                        note(format_args!("huddle: {e} (the run goes on)"));
                    }
                    return e.exit_code();
                }
                match &event.kind {
                    EventKind::RunResult { text } => answer = text.clone(),
                    EventKind::RunEnded { outcome, failed, .. } => {
                        if let Some(why) = failed.as_ref().filter(|_| events) {
                            note(format_args!("huddle: the run failed: {}", sanitize::display(why)));
                        }
                        if !events
                            && !answer.trim().is_empty()
                            && let Err(e) = print_out(&format!("{}\n", sanitize::display(answer.trim_end())))
                        {
                            return e.exit_code();
                        }
                        return headless::outcome_code(
                            outcome.unwrap_or(CycleOutcome::Cancelled),
                            failed.is_some(),
                        );
                    }
                    _ => {}
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => {
                note(format_args!(
                    "huddle: the huddle host went away before the run ended (what was done is saved)"
                ));
                return 1;
            }
            Err(e) => {
                note(format_args!("huddle: {e}"));
                return 1;
            }
        }
    }
}

/// A request whose reply is printed output (`huddle runs prune`, `huddle worktrees remove`),
/// done by the host (started if need be).
async fn printed(paths: &Paths, repo: &Path, front: &str, request: Request) -> Result<u8, OutputError> {
    let config = match Config::load(paths) {
        Ok(loaded) => loaded.config,
        Err(e) => {
            note(format_args!("huddle: {e}"));
            return Ok(1);
        }
    };
    let hello = Hello::new(front, repo).with_work(config, false);
    let mut client = match connect(paths, &hello, true).await {
        Ok(c) => c,
        Err(code) => return Ok(code.min(1)),
    };
    match client.call(request).await {
        Ok(Reply::Printed { out, err, code }) => {
            print_out(&out)?;
            if !err.is_empty() {
                note(format_args!("{}", err.trim_end()));
            }
            Ok(code)
        }
        Ok(other) => {
            note(format_args!("huddle: the huddle host answered {other:?}"));
            Ok(1)
        }
        Err((code, message)) => {
            note(format_args!("huddle: {}", sanitize::display(&message)));
            Ok(code)
        }
    }
}

/// `huddle runs prune`.
pub async fn prune(
    paths: &Paths,
    repo: &Path,
    older_than: chrono::Duration,
    dry_run: bool,
) -> Result<u8, OutputError> {
    let request = Request::Prune {
        older_than_secs: older_than.num_seconds(),
        dry_run,
    };
    printed(paths, repo, "runs prune", request).await
}

/// `huddle worktrees remove`.
pub async fn remove_worktrees(
    paths: &Paths,
    repo: &Path,
    group: Option<String>,
    session: Option<String>,
    path: Option<std::path::PathBuf>,
    force: bool,
) -> Result<u8, OutputError> {
    if group.is_none() && session.is_none() && path.is_none() {
        note(format_args!("huddle: say which: --group, --session or --path"));
        return Ok(USAGE);
    }
    let request = Request::RemoveWorktrees {
        group,
        session,
        path,
        force,
    };
    printed(paths, repo, "worktrees remove", request).await
}

/// Asks the host to exit once idle (for a TUI that must own the data dir itself): the reasons
/// it cannot yet, empty when it will (or none runs).
pub async fn ask_host_to_quit(paths: &Paths, repo: &Path) -> Result<Vec<String>, String> {
    let mut client = match Client::connect(paths, &Hello::new("tui", repo), false).await {
        Ok(c) => c,
        Err(ClientError::NotRunning) => return Ok(Vec::new()),
        Err(e) => return Err(e.to_string()),
    };
    match client.call(Request::Quit).await {
        Ok(Reply::Quitting { busy }) => Ok(busy),
        Ok(other) => Err(format!("the huddle host answered {other:?}")),
        Err((_, message)) => Err(message),
    }
}

/// Ctrl-C, SIGTERM and SIGHUP as (number, name). Each is a stream made once, so a signal that
/// arrives while a message is being handled (between two `next`s) is kept for the next one; a
/// `ctrl_c()` made anew per call would miss it.
struct Signals {
    int: Option<tokio::signal::unix::Signal>,
    term: Option<tokio::signal::unix::Signal>,
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            int: signal(SignalKind::interrupt()).ok(),
            term: signal(SignalKind::terminate()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
        }
    }

    async fn next(&mut self) -> (u8, &'static str) {
        async fn wait(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = wait(&mut self.int) => (2, "Ctrl-C"),
            _ = wait(&mut self.term) => (15, "SIGTERM"),
            _ = wait(&mut self.hup) => (1, "SIGHUP"),
        }
    }
}

/// What a front end following a run says when the host stopped serving it (it read too
/// slowly): the run goes on in the host, so what follows it again, not what resumes it.
pub(crate) fn cut_off(reason: &str, run: Option<&str>) -> String {
    let follow = match run {
        Some(run) => format!("`huddle attach {}` follows it again", sanitize::display(run)),
        None => "`huddle ps` lists it, `huddle attach RUN` follows it again".into(),
    };
    format!(
        "the huddle host stopped sending to this terminal ({}); the run goes on: {follow}",
        sanitize::display(reason)
    )
}

/// What a front end following a run says when the host went away: what resumes the run.
pub(crate) fn host_gone(group: Option<&str>) -> String {
    match group {
        Some(group) => format!(
            "the huddle host went away before the run ended (what was done is saved): `huddle run --group \"{}\" --resume` goes on with it (or start over with `--discard-interrupted`)",
            sanitize::display(group)
        ),
        None => "the huddle host went away before the run ended (what was done is saved): `huddle run --group NAME --resume` goes on with it".into(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_front_end_cut_off_says_the_run_goes_on_and_how_to_follow_it() {
        let said = super::cut_off("it did not read \u{1b}[2J", Some("20261128-1"));
        assert!(said.contains("the run goes on"), "{said}");
        assert!(said.contains("`huddle attach 20261128-1`"), "{said}");
        assert!(!said.contains("--resume") && !said.contains('\u{1b}'), "{said}");
        let unnamed = super::cut_off("slow", None);
        assert!(unnamed.contains("`huddle ps`"), "{unnamed}");
    }

    #[test]
    fn a_host_gone_names_what_resumes_the_run() {
        let said = super::host_gone(Some("Support Desk \u{1b}[2J"));
        assert!(said.contains("`huddle run --group \"Support Desk "), "{said}");
        assert!(!said.contains('\u{1b}'), "{said}");
        assert!(!said.contains("reflect"), "every mode resumes: {said}");
        assert!(super::host_gone(None).contains("--group NAME --resume"));
    }

    #[test]
    fn an_ended_run_is_found_on_disk_by_its_id_only() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let group = dir.path().join("gid");
        std::fs::create_dir(&group).expect("a group folder");
        std::fs::write(group.join("20261128T085431898Z-56d286ba.jsonl"), "").expect("a run file");
        let found = super::ended_run_on_disk(dir.path(), "20261128T085431898Z-56d286ba");
        assert_eq!(found.as_deref(), Some("20261128T085431898Z-56d286ba"));
        assert_eq!(
            super::ended_run_on_disk(dir.path(), "20261128T085431898Z-00000000"),
            None
        );
        assert_eq!(
            super::ended_run_on_disk(dir.path(), "../gid/20261128T085431898Z-56d286ba"),
            None
        );
        assert_eq!(super::ended_run_on_disk(dir.path(), ""), None);
    }

    use super::*;
    use crate::engine::events::RunKey;
    use crate::host::protocol::RunState;

    #[test]
    fn ps_lists_each_run_in_aligned_columns() {
        let now = chrono::Utc::now();
        let run = |id: &str, secs: i64, waiting: Option<&str>| RunInfo {
            run_id: id.into(),
            key: RunKey::team("g"),
            group_id: "g".into(),
            group: "Ops".into(),
            session: None,
            mode: Some(crate::model::Mode::Broadcast),
            started_at: now - chrono::Duration::seconds(secs),
            tokens: 1234,
            state: if waiting.is_some() {
                RunState::Waiting
            } else {
                RunState::Running
            },
            waiting_for: waiting.map(str::to_string),
            front: Some("huddle run (pid 7)".into()),
        };
        let text = ps_table(
            &[
                run("r-1", 65, None),
                run("r-22", 7300, Some("approval #1 of time/now for a")),
            ],
            now,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("RUN   GROUP"), "{text}");
        assert!(
            lines[1].contains("1m05s") && lines[1].contains("broadcast"),
            "{text}"
        );
        assert!(
            lines[2].contains("2h01m") && lines[2].contains("waiting"),
            "{text}"
        );
        assert!(
            lines[2].ends_with("approval #1 of time/now for a; huddle run (pid 7)"),
            "{text}"
        );
        assert_eq!(ps_table(&[], now), "nothing runs\n");
    }
}
