//! Logs go to `<data>/logs/huddle.<date>.log` (UTC date, one file a day, 14 kept) through a
//! non-blocking writer, never to the terminal (the TUI owns it). The filter comes from
//! `HUDDLE_LOG`, else `RUST_LOG`, else `info`. Log files are 0600 in a 0700 folder, like
//! everything else in the data dir: a rolling appender from a crate would create them as the
//! umask says, so the daily file is opened here.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

use crate::store::{create_private_dir, private_file};

/// Log files kept (one per day).
const KEEP: usize = 14;

/// Lines waiting for the log's writer thread at most (beyond, a line is dropped rather than
/// the caller held up). The crate's default, 128,000, is a 4 MiB queue allocated and touched at
/// start: a quarter of what `huddle presets list` used.
const QUEUED_LINES: usize = 2_048;

/// Starts file logging. Returns the guard that flushes the log on drop, or `None` when the log
/// directory cannot be used (huddle then runs without a log rather than failing).
pub fn init(logs_dir: &Path) -> Option<WorkerGuard> {
    let daily = match DailyFile::open(logs_dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("huddle: logging disabled, cannot use {}: {e}", logs_dir.display());
            return None;
        }
    };
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(QUEUED_LINES)
        .finish(daily);
    let filter = std::env::var("HUDDLE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .is_ok();
    installed.then_some(guard)
}

/// Today's log file, reopened when the date changes; older files beyond [`KEEP`] are removed.
struct DailyFile {
    dir: PathBuf,
    date: String,
    file: File,
}

impl DailyFile {
    fn open(dir: &Path) -> io::Result<DailyFile> {
        create_private_dir(dir)?;
        let date = today();
        let file = open_day(dir, &date)?;
        prune(dir);
        Ok(DailyFile {
            dir: dir.to_path_buf(),
            date,
            file,
        })
    }
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

fn file_name(date: &str) -> String {
    format!("huddle.{date}.log")
}

fn open_day(dir: &Path, date: &str) -> io::Result<File> {
    private_file()
        .create(true)
        .append(true)
        .open(dir.join(file_name(date)))
}

/// Removes all but the newest [`KEEP`] log files (their names sort by date).
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut logs: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("huddle.") && n.ends_with(".log"))
        .collect();
    logs.sort();
    let excess = logs.len().saturating_sub(KEEP);
    for old in &logs[..excess] {
        let _ = std::fs::remove_file(dir.join(old));
    }
}

impl Write for DailyFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let date = today();
        if date != self.date {
            // A failure keeps writing to yesterday's file rather than losing lines.
            if let Ok(file) = open_day(&self.dir, &date) {
                self.file = file;
                self.date = date;
                prune(&self.dir);
            }
        }
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_log_file_is_private_and_old_ones_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("data/logs");
        // Made by huddle: a fresh data dir and its logs folder are 0700.
        DailyFile::open(&logs).unwrap();
        for day in 1..=20 {
            std::fs::write(logs.join(format!("huddle.2020-01-{day:02}.log")), b"old").unwrap();
        }
        let mut daily = DailyFile::open(&logs).unwrap();
        daily.write_all(b"a line\n").unwrap();
        let path = logs.join(file_name(&today()));
        assert_eq!(std::fs::read(&path).unwrap(), b"a line\n");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("data")), 0o700);
        assert_eq!(mode(&logs), 0o700);
        assert_eq!(std::fs::read_dir(&logs).unwrap().count(), KEEP);
        assert!(
            !logs.join("huddle.2020-01-01.log").exists(),
            "the oldest went first"
        );
    }
}
