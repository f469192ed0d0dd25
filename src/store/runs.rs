//! Run files: `runs/<group-id>/<run-id>.jsonl`, one line per engine event of a run (streaming
//! deltas excepted), appended by a background thread so the engine never waits on the disk.
//! A session's own runs (its direct chats) are the session's, not its group's:
//! `runs/sessions/<session-id>/<run-id>.jsonl`, so they never count as, or crowd out, a team's
//! runs.
//!
//! The store only moves lines; the engine decides what a line says. Run ids sort by start time,
//! so the newest files are the last names. When a run's file is created, older files of its
//! owner (group or session) beyond the configured count are removed (never the file being
//! written).

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use serde::Serialize;

use super::StoreError;
use super::private::{create_private_dir, private_file};
use super::regular::{open_regular, read_regular};

/// Run files kept per group unless configured otherwise.
pub const DEFAULT_RUNS_KEPT: usize = 50;

/// Open files the writer keeps at most: runs in progress at once, in practice (a run's file is
/// closed when the run ends; a line after that opens it again).
const OPEN_FILES_MAX: usize = 64;

/// Reading and listing run files.
#[derive(Debug, Clone)]
pub struct RunFiles {
    dir: PathBuf,
}

/// Whose runs a run file is among.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RunOwner {
    /// A group's runs (a team's runs): `runs/<group-id>/`.
    Group(String),
    /// One session's own runs (its direct chats): `runs/sessions/<session-id>/`.
    Session(String),
}

/// The folder under `runs/` that holds the sessions' own runs (never a group's id).
const SESSIONS_DIR: &str = "sessions";

/// True for ids that are safe as one path component (they come from a user-editable file).
fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn not_plain(what: &'static str, id: &str) -> StoreError {
    StoreError::io(
        what,
        id,
        std::io::Error::new(ErrorKind::InvalidInput, "not a plain id"),
    )
}

/// A group's run folder that is a symbolic link is not read (it could point anywhere).
fn refuse_symlink(dir: &Path) -> Result<(), StoreError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(StoreError::io(
            "refusing to read",
            dir,
            std::io::Error::new(ErrorKind::InvalidInput, "a symbolic link, not a run folder"),
        )),
        _ => Ok(()),
    }
}

impl RunFiles {
    pub fn new(dir: impl Into<PathBuf>) -> RunFiles {
        RunFiles { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn group_dir(&self, group_id: &str) -> Result<PathBuf, StoreError> {
        if !plain_id(group_id) || group_id == SESSIONS_DIR {
            return Err(not_plain("refusing run files for group id", group_id));
        }
        Ok(self.dir.join(group_id))
    }

    fn owner_dir(&self, owner: &RunOwner) -> Result<PathBuf, StoreError> {
        match owner {
            RunOwner::Group(id) => self.group_dir(id),
            RunOwner::Session(id) if plain_id(id) => Ok(self.dir.join(SESSIONS_DIR).join(id)),
            RunOwner::Session(id) => Err(not_plain("refusing run files for session id", id)),
        }
    }

    pub fn path(&self, group_id: &str, run_id: &str) -> Result<PathBuf, StoreError> {
        self.path_of(&RunOwner::Group(group_id.to_string()), run_id)
    }

    fn path_of(&self, owner: &RunOwner, run_id: &str) -> Result<PathBuf, StoreError> {
        if !plain_id(run_id) {
            return Err(not_plain("refusing run file for run id", run_id));
        }
        Ok(self.owner_dir(owner)?.join(format!("{run_id}.jsonl")))
    }

    /// The group's run ids, oldest first. A group without runs has none.
    pub fn list(&self, group_id: &str) -> Result<Vec<String>, StoreError> {
        self.list_of(&RunOwner::Group(group_id.to_string()))
    }

    /// The run ids of a group or a session, oldest first.
    pub fn list_of(&self, owner: &RunOwner) -> Result<Vec<String>, StoreError> {
        let dir = self.owner_dir(owner)?;
        refuse_symlink(&dir)?;
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io("cannot list", &dir, e)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".jsonl")?;
                plain_id(id).then(|| id.to_string())
            })
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// The lines of one run file, and the lines that could not be read (a torn last line after a
    /// crash), which stay in the file untouched.
    pub fn read_lines(&self, group_id: &str, run_id: &str) -> Result<Vec<String>, StoreError> {
        self.read_lines_of(&RunOwner::Group(group_id.to_string()), run_id)
    }

    /// [`Self::read_lines`] of a group's or a session's run.
    pub fn read_lines_of(&self, owner: &RunOwner, run_id: &str) -> Result<Vec<String>, StoreError> {
        refuse_symlink(&self.owner_dir(owner)?)?;
        let path = self.path_of(owner, run_id)?;
        let meta = fs::symlink_metadata(&path).map_err(|e| StoreError::io("cannot read", &path, e))?;
        if meta.file_type().is_symlink() {
            return Err(StoreError::io(
                "refusing to read",
                &path,
                std::io::Error::new(ErrorKind::InvalidInput, "a symbolic link, not a run file"),
            ));
        }
        let bytes = read_regular(&path).map_err(|e| StoreError::io("cannot read", &path, e))?;
        Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect())
    }

    /// The complete lines among the last `max_bytes` of a run file (a run's end is its last
    /// line: found without reading a long run whole).
    pub fn read_tail(&self, group_id: &str, run_id: &str, max_bytes: u64) -> Result<Vec<String>, StoreError> {
        use std::io::{Read, Seek, SeekFrom};
        refuse_symlink(&self.group_dir(group_id)?)?;
        let path = self.path(group_id, run_id)?;
        let cannot = |e| StoreError::io("cannot read", &path, e);
        if fs::symlink_metadata(&path)
            .map_err(cannot)?
            .file_type()
            .is_symlink()
        {
            return Err(StoreError::io(
                "refusing to read",
                &path,
                std::io::Error::new(ErrorKind::InvalidInput, "a symbolic link, not a run file"),
            ));
        }
        let mut file = open_regular(&path).map_err(cannot)?;
        let len = file.metadata().map_err(cannot)?.len();
        let from = len.saturating_sub(max_bytes);
        file.seek(SeekFrom::Start(from)).map_err(cannot)?;
        let mut bytes = Vec::new();
        file.take(max_bytes).read_to_end(&mut bytes).map_err(cannot)?;
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        // The first line was cut by the start of the window (unless the file starts there).
        if from > 0 && !lines.is_empty() {
            lines.remove(0);
        }
        Ok(lines)
    }

    /// Removes all of a group's run files (the group was deleted).
    pub fn remove_group(&self, group_id: &str) -> Result<(), StoreError> {
        self.remove(&RunOwner::Group(group_id.to_string()))
    }

    /// Removes all of a session's own run files (the session was deleted).
    pub fn remove_session(&self, session_id: &str) -> Result<(), StoreError> {
        self.remove(&RunOwner::Session(session_id.to_string()))
    }

    fn remove(&self, owner: &RunOwner) -> Result<(), StoreError> {
        let dir = self.owner_dir(owner)?;
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("cannot delete", &dir, e)),
        }
    }

    /// Deletes the oldest run files of a group or session so that at most `keep` remain, never
    /// `current`.
    fn prune(&self, owner: &RunOwner, current: &str, keep: usize) -> Result<usize, StoreError> {
        let ids = self.list_of(owner)?;
        let excess = ids.len().saturating_sub(keep.max(1));
        let mut removed = 0;
        for id in ids.iter().filter(|id| id.as_str() != current).take(excess) {
            let path = self.path_of(owner, id)?;
            match fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("cannot delete", &path, e)),
            }
        }
        Ok(removed)
    }
}

/// One record for a run's file: whose run it is, its run, the record.
pub type RunLine<T> = (RunOwner, String, T);

enum LogMsg<T> {
    Lines(Vec<RunLine<T>>),
    /// The run is over: its file is synced and closed after the lines queued before.
    End(RunOwner, String),
    Flush(Sender<()>),
}

/// How long a front end's report of a run's end waits at most for [`RunLog::written`] (a disk
/// that hangs must not hold up every event after it).
pub const WRITTEN_WAIT: Duration = Duration::from_secs(3);

/// How far the writer got: messages of lines and ends queued and written (in order, so the
/// count written says which), and a wake-up for whoever waits for it ([`RunLog::written`]).
#[derive(Default)]
struct Progress {
    queued: AtomicU64,
    written: AtomicU64,
    /// The writer's thread ended (or never started): nothing waits for it.
    gone: AtomicBool,
    wake: tokio::sync::Notify,
    /// The writer's thread, woken from its pause after a batch by whoever waits for it.
    writer: std::sync::OnceLock<std::thread::Thread>,
}

impl Progress {
    fn wrote(&self, messages: u64) {
        self.written.fetch_add(messages, Ordering::SeqCst);
        self.wake.notify_waiters();
    }

    fn end(&self) {
        self.gone.store(true, Ordering::SeqCst);
        self.wake.notify_waiters();
    }
}

/// Says the writer is gone when its thread ends, also by a panic.
struct Gone(Arc<Progress>);

impl Drop for Gone {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// The background writer of run files: records of type `T` are serialised as JSON lines on its
/// own thread, so the caller only hands them over. Cheap to clone; clones feed the same thread.
pub struct RunLog<T> {
    tx: Sender<LogMsg<T>>,
    progress: Arc<Progress>,
}

impl<T> Clone for RunLog<T> {
    fn clone(&self) -> Self {
        RunLog {
            tx: self.tx.clone(),
            progress: Arc::clone(&self.progress),
        }
    }
}

impl<T: Serialize + Send + 'static> RunLog<T> {
    /// Starts the writer; `keep` is the number of run files kept per group.
    pub fn start(files: RunFiles, keep: usize) -> RunLog<T> {
        let (tx, rx) = channel::<LogMsg<T>>();
        let progress = Arc::new(Progress::default());
        let gone = Gone(Arc::clone(&progress));
        let started = std::thread::Builder::new()
            .name("huddle-runs".into())
            .spawn(move || write_loop(&files, keep, &rx, &gone.0));
        if let Err(e) = started {
            progress.end();
            tracing::error!(error = %e, "cannot start the run log writer; run timelines are not saved");
        }
        RunLog { tx, progress }
    }

    /// Queues one record for a run's file.
    pub fn append(&self, group_id: &str, run_id: &str, record: T) {
        self.append_all(vec![(
            RunOwner::Group(group_id.to_string()),
            run_id.to_string(),
            record,
        )]);
    }

    /// Queues records, in order, with one hand-over to the writer.
    pub fn append_all(&self, lines: Vec<RunLine<T>>) {
        if lines.is_empty() {
            return;
        }
        self.progress.queued.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(LogMsg::Lines(lines)).is_err() {
            tracing::warn!("run log writer is gone; timeline lines were not saved");
        }
    }

    /// Says a run (a group's or a session's own) is over: once the lines queued so far are
    /// written, its file is synced and closed, so a long-lived process does not keep one open
    /// file per run it ever ran (a line queued later opens it again).
    pub fn end_of(&self, owner: &RunOwner, run_id: &str) {
        // The writer gone was said when its lines were lost.
        self.progress.queued.fetch_add(1, Ordering::SeqCst);
        let _ = self.tx.send(LogMsg::End(owner.clone(), run_id.to_string()));
    }

    /// Ends once every line queued so far is in its file (the end of a run that was said to
    /// end, too), without a sync and without blocking a thread: what a host waits for before it
    /// reports a run as ended, so whoever then reads its file finds the end.
    pub fn written(&self) -> impl std::future::Future<Output = ()> + use<T> {
        // What is queued now; the writer takes it in order.
        let target = self.progress.queued.load(Ordering::SeqCst);
        let progress = Arc::clone(&self.progress);
        async move {
            let mut asked = false;
            loop {
                let woken = progress.wake.notified();
                tokio::pin!(woken);
                // Listening before looking: a batch written in between wakes it.
                woken.as_mut().enable();
                // The writer gone (its lines lost) was said when they were queued.
                if progress.written.load(Ordering::SeqCst) >= target || progress.gone.load(Ordering::SeqCst) {
                    return;
                }
                // Someone waits: the writer does not let lines gather first.
                if !asked && let Some(writer) = progress.writer.get() {
                    writer.unpark();
                    asked = true;
                }
                woken.await;
            }
        }
    }

    /// Waits until every line queued so far is written and synced.
    pub fn flush(&self) {
        let (done_tx, done_rx) = channel();
        if self.tx.send(LogMsg::Flush(done_tx)).is_ok() {
            let _ = done_rx.recv();
        }
    }
}

/// Open run files, keyed by (owner, run).
type OpenFiles = HashMap<(RunOwner, String), File>;

/// After writing, the writer lets lines gather this long before it looks again: senders then
/// find it not waiting and need not wake it (as the transcript writer does); someone waiting
/// for what is queued ([`RunLog::written`]) cuts it short. Lines are synced
/// only on a flush, which is answered at once.
const LINGER: Duration = Duration::from_millis(2);

fn write_loop<T: Serialize>(files: &RunFiles, keep: usize, rx: &Receiver<LogMsg<T>>, progress: &Progress) {
    let mut open: OpenFiles = HashMap::new();
    let _ = progress.writer.set(std::thread::current());
    while let Ok(first) = rx.recv() {
        // Messages of lines and ends taken (see `Progress`).
        let mut taken = 0u64;
        let mut batch: Vec<((RunOwner, String), Vec<u8>)> = Vec::new();
        // Where each run's lines are in `batch` (a backlog may hold many runs).
        let mut index: HashMap<(RunOwner, String), usize> = HashMap::new();
        let mut waiting = Vec::new();
        let mut ended = Vec::new();
        let mut take = |msg: LogMsg<T>| match msg {
            LogMsg::Lines(lines) => {
                taken += 1;
                for (owner, run_id, record) in lines {
                    let line = match serde_json::to_string(&record) {
                        Ok(line) => line,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot serialise a run record");
                            continue;
                        }
                    };
                    let key = (owner, run_id);
                    let at = match batch.last() {
                        // Consecutive lines of one run: no lookup.
                        Some((last, _)) if *last == key => batch.len() - 1,
                        _ => *index.entry(key.clone()).or_insert_with(|| {
                            batch.push((key, Vec::new()));
                            batch.len() - 1
                        }),
                    };
                    let buf = &mut batch[at].1;
                    buf.extend_from_slice(line.as_bytes());
                    buf.push(b'\n');
                }
            }
            LogMsg::End(owner, run_id) => {
                taken += 1;
                ended.push((owner, run_id));
            }
            LogMsg::Flush(done) => waiting.push(done),
        };
        take(first);
        while let Ok(more) = rx.try_recv() {
            take(more);
        }
        let wrote = !batch.is_empty();
        for (key, bytes) in batch {
            if let Err(e) = write_run(files, keep, &mut open, key, &bytes) {
                tracing::error!(error = %e, "cannot write a run file");
            }
        }
        // In the files (not synced yet): whoever waits may read them.
        progress.wrote(taken);
        // Every line of the batch is written: an ended run's file is closed (synced first, as
        // a later flush no longer sees it). A line of the run later in this batch was written too.
        for key in ended {
            if let Some(file) = open.remove(&key)
                && let Err(e) = file.sync_data()
            {
                tracing::warn!(error = %e, "cannot sync a run file");
            }
        }
        if !waiting.is_empty() {
            for file in open.values() {
                if let Err(e) = file.sync_data() {
                    tracing::warn!(error = %e, "cannot sync a run file");
                }
            }
            for done in waiting {
                let _ = done.send(());
            }
        } else if wrote {
            // Cut short by someone waiting for what is queued (`RunLog::written`).
            std::thread::park_timeout(LINGER);
        }
    }
}

/// Opens a run file to append to (created 0600), and whether it is new: one system call for a
/// new file, no check of the folder first.
fn open_run_file(path: &Path) -> std::io::Result<(File, bool)> {
    match private_file().create_new(true).append(true).open(path) {
        Ok(file) => Ok((file, true)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            private_file().append(true).open(path).map(|file| (file, false))
        }
        Err(e) => Err(e),
    }
}

fn write_run(
    files: &RunFiles,
    keep: usize,
    open: &mut OpenFiles,
    key: (RunOwner, String),
    bytes: &[u8],
) -> Result<(), StoreError> {
    if !open.contains_key(&key) {
        if open.len() >= OPEN_FILES_MAX {
            // Finished runs' files are closed here at the latest; a later line reopens.
            open.clear();
        }
        let path = files.path_of(&key.0, &key.1)?;
        let dir = files.owner_dir(&key.0)?;
        let (file, new) = match open_run_file(&path) {
            // The owner's folder is not there yet (or was deleted with its group or session).
            Err(e) if e.kind() == ErrorKind::NotFound => {
                create_private_dir(&dir).map_err(|e| StoreError::io("cannot create", &dir, e))?;
                open_run_file(&path)
            }
            opened => opened,
        }
        .map_err(|e| StoreError::io("cannot open", &path, e))?;
        if new {
            match files.prune(&key.0, &key.1, keep) {
                Ok(0) => {}
                Ok(n) => tracing::debug!(owner = ?key.0, removed = n, "pruned old run files"),
                Err(e) => tracing::warn!(error = %e, "cannot prune old run files"),
            }
        }
        open.insert(key.clone(), file);
    }
    let Some(file) = open.get_mut(&key) else {
        return Ok(());
    };
    let result = file.write_all(bytes);
    result.map_err(|e| {
        open.remove(&key);
        let path = files
            .path_of(&key.0, &key.1)
            .unwrap_or_else(|_| files.dir().to_path_buf());
        StoreError::io("cannot append to", path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn lines_are_appended_per_run_and_listed_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path().join("runs"));
        let log: RunLog<Value> = RunLog::start(files.clone(), 10);
        log.append("g1", "20260101T000000000Z-b", json!({"n": 1}));
        log.append("g1", "20260101T000000000Z-a", json!({"n": 2}));
        log.append("g1", "20260101T000000000Z-b", json!({"n": 3}));
        log.append("g2", "20260102T000000000Z-c", json!({"n": 4}));
        log.flush();
        assert_eq!(
            files.list("g1").unwrap(),
            ["20260101T000000000Z-a", "20260101T000000000Z-b"]
        );
        assert_eq!(
            files.read_lines("g1", "20260101T000000000Z-b").unwrap(),
            ["{\"n\":1}", "{\"n\":3}"]
        );
        assert_eq!(files.list("g2").unwrap().len(), 1);
        assert!(files.list("never").unwrap().is_empty());
    }

    #[test]
    fn a_runs_file_is_closed_when_the_run_ends_and_opened_again_for_a_late_line() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path().join("runs"));
        let log: RunLog<Value> = RunLog::start(files.clone(), 500);
        // A long-lived process runs one run after another: no handle stays per run.
        for k in 0..200 {
            let run = format!("r{k:03}");
            log.append("g", &run, json!({"n": k}));
            log.append("g", &run, json!({"end": k}));
            log.end_of(&RunOwner::Group("g".into()), &run);
        }
        log.flush();
        let open = crate::store::open_files_under(dir.path());
        assert!(open.is_empty(), "ended runs' files still open: {}", open.len());
        assert_eq!(files.list("g").unwrap().len(), 200);
        assert_eq!(
            files.read_lines("g", "r199").unwrap(),
            ["{\"n\":199}", "{\"end\":199}"]
        );
        // A run still going keeps its file; a late line of an ended run is appended, not lost.
        log.append("g", "live", json!({}));
        log.append("g", "r000", json!({"late": true}));
        log.flush();
        assert_eq!(crate::store::open_files_under(dir.path()).len(), 2);
        assert_eq!(files.read_lines("g", "r000").unwrap().len(), 3);
    }

    /// `written` waits for the writer's thread on a runtime's thread without blocking it, and
    /// every line queued before, the run's end among them, is in its file when it ends.
    #[tokio::test(flavor = "current_thread")]
    async fn what_was_queued_before_written_is_in_its_file_when_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path().join("runs"));
        let log: RunLog<Value> = RunLog::start(files.clone(), 10);
        for k in 0..2000 {
            log.append("g", "r", json!({"n": k}));
        }
        log.append("g", "r", json!({"end": true}));
        log.end_of(&RunOwner::Group("g".into()), "r");
        log.written().await;
        let lines = files.read_lines("g", "r").unwrap();
        assert_eq!(lines.len(), 2001);
        assert_eq!(lines.last().map(String::as_str), Some("{\"end\":true}"));
    }

    /// Once the writer has written everything, waiting for it costs nothing (no round trip to
    /// its thread, no wait for its pause after a batch).
    #[test]
    fn written_is_ready_at_once_when_everything_queued_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let log: RunLog<Value> = RunLog::start(RunFiles::new(dir.path().join("runs")), 10);
        log.append("g", "r", json!({"n": 1}));
        log.end_of(&RunOwner::Group("g".into()), "r");
        log.flush();
        let mut written = std::pin::pin!(log.written());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(written.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn old_runs_beyond_the_count_are_pruned_never_the_current_one() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path().join("runs"));
        let log: RunLog<Value> = RunLog::start(files.clone(), 3);
        for k in 0..6 {
            log.append("g", &format!("r{k}"), json!({}));
            log.flush();
        }
        assert_eq!(files.list("g").unwrap(), ["r3", "r4", "r5"]);
        // A run that sorts first (a clock set back) is still kept while it is written.
        log.append("g", "a-early", json!({}));
        log.flush();
        assert!(files.list("g").unwrap().contains(&"a-early".to_string()));
        assert_eq!(files.list("g").unwrap().len(), 3);
    }

    #[test]
    fn a_sessions_own_runs_are_kept_apart_from_its_groups_and_pruned_on_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path().join("runs"));
        let log: RunLog<Value> = RunLog::start(files.clone(), 2);
        log.append("g", "r0", json!({}));
        let chat = RunOwner::Session("s1".into());
        for k in 1..=3 {
            log.append_all(vec![(chat.clone(), format!("r{k}"), json!({"k": k}))]);
            log.flush();
        }
        assert_eq!(files.list("g").unwrap(), ["r0"], "the group's runs are its own");
        assert_eq!(files.list_of(&chat).unwrap(), ["r2", "r3"]);
        assert!(dir.path().join("runs/sessions/s1/r3.jsonl").is_file());
        assert_eq!(files.read_lines_of(&chat, "r3").unwrap(), ["{\"k\":3}"]);
        assert!(files.list("sessions").is_err(), "never a group's folder");
        files.remove_session("s1").unwrap();
        assert!(files.list_of(&chat).unwrap().is_empty());
        assert_eq!(files.list("g").unwrap(), ["r0"]);
    }

    #[test]
    fn ids_that_are_not_plain_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path());
        assert!(files.path("../x", "r").is_err());
        assert!(files.path("g", "../../etc/passwd").is_err());
        assert!(files.list("a/b").is_err());
        let log: RunLog<Value> = RunLog::start(files.clone(), 3);
        log.append("../escape", "r", json!({}));
        log.flush();
        assert!(!dir.path().parent().unwrap().join("escape").exists());
    }

    #[test]
    fn a_group_folder_that_is_a_symbolic_link_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir_all(&elsewhere).unwrap();
        fs::write(elsewhere.join("r.jsonl"), "{}\n").unwrap();
        let files = RunFiles::new(dir.path().join("runs"));
        fs::create_dir_all(files.dir()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, files.dir().join("g")).unwrap();
        let err = files.list("g").unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(files.read_lines("g", "r").is_err());
    }

    #[test]
    fn a_directory_in_place_of_a_run_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles::new(dir.path());
        fs::create_dir_all(dir.path().join("g").join("r.jsonl")).unwrap();
        assert!(files.read_lines("g", "r").is_err());
        assert!(files.list("g").unwrap().is_empty());
        files.remove_group("g").unwrap();
        assert!(!dir.path().join("g").exists());
    }
}
