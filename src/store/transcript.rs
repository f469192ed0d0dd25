//! Transcripts: `sessions/<session-id>.jsonl`, one JSON message per line, append-only.
//!
//! Lines are never rewritten, so a crash can at worst tear the line being written; loading
//! ignores such a line with a warning and keeps everything before it.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::Message;

use super::StoreError;
use super::line_wait::{LineWaits, Written};
use super::private::{create_private_dir, private_file};
use super::regular::{open_regular, read_regular, regular_only};

#[derive(Debug, Default)]
pub struct LoadedTranscript {
    pub messages: Vec<Message>,
    /// Lines that could not be read (they stay in the file untouched).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Transcripts {
    dir: PathBuf,
}

impl Transcripts {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Transcripts { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a session. Ids come from a user-editable file, so anything that is not a
    /// plain id is refused rather than turned into a path outside the directory.
    pub fn path(&self, session_id: &str) -> Result<PathBuf, StoreError> {
        let plain = !session_id.is_empty()
            && session_id.len() <= 128
            && session_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !plain {
            return Err(StoreError::io(
                "refusing transcript for session id",
                session_id,
                std::io::Error::new(ErrorKind::InvalidInput, "not a plain id"),
            ));
        }
        Ok(self.dir.join(format!("{session_id}.jsonl")))
    }

    /// Appends one message as one line and syncs it to disk.
    pub fn append(&self, session_id: &str, message: &Message) -> Result<(), StoreError> {
        self.append_all(session_id, std::slice::from_ref(message))
    }

    /// Appends messages, one line each, with a single sync.
    pub fn append_all(&self, session_id: &str, messages: &[Message]) -> Result<(), StoreError> {
        let path = self.path(session_id)?;
        create_private_dir(&self.dir).map_err(|e| StoreError::io("cannot create", &self.dir, e))?;
        let line = lines_of(messages)?;
        let (mut file, _) = open_for_append(&path)?;
        file.write_all(&line)
            .map_err(|e| StoreError::io("cannot append to", &path, e))?;
        file.sync_data()
            .map_err(|e| StoreError::io("cannot sync", &path, e))
    }

    /// Reads a session's messages; a missing file is an empty transcript.
    pub fn load(&self, session_id: &str) -> Result<LoadedTranscript, StoreError> {
        let path = self.path(session_id)?;
        let text = match read_regular(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(LoadedTranscript::default()),
            Err(e) => return Err(StoreError::io("cannot read", &path, e)),
        };
        Ok(parse_lines(&text, &path))
    }

    /// Writes a whole transcript at once, atomically (a reader sees no file or all of it): a
    /// fork's copy. Refused when the session has a transcript already.
    pub fn create_with(&self, session_id: &str, messages: &[Message]) -> Result<(), StoreError> {
        let path = self.path(session_id)?;
        if path.exists() {
            return Err(StoreError::io(
                "refusing to replace the transcript",
                &path,
                std::io::Error::new(ErrorKind::AlreadyExists, "it exists already"),
            ));
        }
        create_private_dir(&self.dir).map_err(|e| StoreError::io("cannot create", &self.dir, e))?;
        super::atomic::write_atomic_private(&path, &lines_of(messages)?)
    }

    /// Deletes a session's transcript (used when its team is deleted).
    pub fn remove(&self, session_id: &str) -> Result<(), StoreError> {
        let path = self.path(session_id)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io("cannot delete", &path, e)),
        }
    }
}

type LoadReply = std::sync::mpsc::Sender<Result<LoadedTranscript, StoreError>>;

enum WriterMsg {
    /// A line to append (serialised, with its newline), and who waits to hear it is written
    /// (see [`TranscriptWriter::append_written`]).
    Append(String, Vec<u8>, Option<Written>),
    Flush(std::sync::mpsc::Sender<()>),
    /// Reads a transcript after every line queued before this message is written.
    Load(String, LoadReply),
}

/// Appends transcript lines on a background thread: a turn waits at most for its own line to
/// be written ([`TranscriptWriter::append_written`]), never for a sync. Files stay open while
/// in use (at most a sixteenth of the open-file limit, 16 to 64: [`open_max_of_process`];
/// closed when idle); lines are synced in groups (see
/// [`SYNC_WINDOW`]).
pub struct TranscriptWriter {
    tx: Option<std::sync::mpsc::Sender<WriterMsg>>,
    thread: Option<std::thread::JoinHandle<()>>,
    waits: Arc<LineWaits>,
}

impl TranscriptWriter {
    pub fn new(transcripts: Transcripts) -> TranscriptWriter {
        TranscriptWriter::with_idle_close(transcripts, IDLE_CLOSE)
    }

    /// A writer that closes its files after `idle` without a write.
    fn with_idle_close(transcripts: Transcripts, idle: Duration) -> TranscriptWriter {
        let (tx, rx) = std::sync::mpsc::channel::<WriterMsg>();
        let thread = std::thread::Builder::new()
            .name("huddle-transcripts".into())
            .spawn(move || write_loop(&transcripts, &rx, idle))
            .map_err(|e| tracing::error!(error = %e, "cannot start the transcript writer"))
            .ok();
        TranscriptWriter {
            tx: Some(tx),
            thread,
            waits: Arc::default(),
        }
    }

    /// Queues `message` as its session's next line. It is serialised here (no copy of it is
    /// made, and the writer frees one buffer).
    pub fn append(&self, session_id: &str, message: &Message) {
        self.send_append(session_id, message, None);
    }

    /// Appends like [`TranscriptWriter::append`]; the future ends once the line (and every line
    /// queued before it) is written to its file, so it outlives this process whatever ends it
    /// (it is synced with the next group of lines), with `true`; `false` when it could not be
    /// written (the log says why). What reports a turn's end waits for it: nothing is reported
    /// that a crash could take back, and an answer that is not on disk is said to be so.
    pub fn append_written(
        &self,
        session_id: &str,
        message: &Message,
    ) -> impl std::future::Future<Output = bool> + use<> {
        let (done, written) = self.waits.start();
        self.send_append(session_id, message, Some(done));
        Arc::clone(&self.waits).wait(written)
    }

    fn send_append(&self, session_id: &str, message: &Message, done: Option<Written>) {
        let line = match lines_of(std::slice::from_ref(message)) {
            Ok(line) => line,
            Err(e) => {
                tracing::error!(session = session_id, error = %e, "a message was not saved");
                return;
            }
        };
        let sent = self.tx.as_ref().is_some_and(|tx| {
            tx.send(WriterMsg::Append(session_id.to_string(), line, done))
                .is_ok()
        });
        if !sent {
            tracing::error!(
                session = session_id,
                "transcript writer is gone; a message was not saved"
            );
        }
    }

    /// A session's transcript with every line queued for it so far: read by the writer itself,
    /// in order with the appends, so nothing queued is missing and nothing else is forced to
    /// disk first (a blocking call: use it off the UI thread).
    pub fn load(&self, transcripts: &Transcripts, session_id: &str) -> Result<LoadedTranscript, StoreError> {
        let (reply, answer) = std::sync::mpsc::channel();
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(WriterMsg::Load(session_id.to_string(), reply)).is_ok());
        match sent.then(|| answer.recv().ok()).flatten() {
            Some(result) => result,
            // No writer (it could not start): nothing is queued, read the file directly.
            None => transcripts.load(session_id),
        }
    }

    /// Waits until everything queued so far is on disk.
    pub fn flush(&self) {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        if self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(WriterMsg::Flush(done_tx)).is_ok())
        {
            let _ = done_rx.recv();
        }
    }
}

impl Drop for TranscriptWriter {
    fn drop(&mut self) {
        // Closing the channel lets the thread write what is queued and stop.
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Lines written but not yet synced wait at most this long: a group commit, many lines and
/// one `fdatasync` per file, instead of one per message. The group is synced by a thread of
/// its own ([`Syncer`]) while writing goes on; a flush waits for its group's sync.
const SYNC_WINDOW: Duration = Duration::from_millis(20);
/// Transcript files the writer keeps open at most under a low open-file limit (the sessions
/// writing now, in practice; see [`open_max_of_process`] for the bound it uses): the least
/// recently written is closed to open another, so a long-lived process holds a bounded number
/// of file handles however many sessions it ever wrote to.
pub(crate) const OPEN_MAX: usize = 16;
/// The most a process whose file limit allows it keeps open (see [`open_max_of_process`]).
const OPEN_MOST: usize = 64;

/// How many transcripts the writer keeps open: a sixteenth of the process's open-file limit,
/// [`OPEN_MAX`] at least and [`OPEN_MOST`] at most (16 under `ulimit -n 256` or lower, 64 under
/// the usual 1,024). A team larger than the bound opens and closes a file per answer.
fn open_max_of_process() -> usize {
    // SAFETY: getrlimit writes into the struct it is given.
    let soft = unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return OPEN_MAX;
        }
        limit.rlim_cur
    };
    open_max_for(soft)
}

/// [`open_max_of_process`] for a soft open-file limit of `soft`.
fn open_max_for(soft: u64) -> usize {
    usize::try_from(soft / 16)
        .unwrap_or(OPEN_MOST)
        .clamp(OPEN_MAX, OPEN_MOST)
}

/// The bound of an [`OpenTranscripts`] ([`OPEN_MAX`] unless the writer says otherwise).
struct OpenBound(usize);

impl Default for OpenBound {
    fn default() -> OpenBound {
        OpenBound(OPEN_MAX)
    }
}
/// With nothing written for this long, every open transcript is closed (an idle TUI holds none).
const IDLE_CLOSE: Duration = Duration::from_secs(5);

/// The writer's open files: each opened once while in use (its torn-line check done then),
/// the folder created once, and which have lines not yet synced.
#[derive(Default)]
struct OpenTranscripts {
    dir_ready: bool,
    /// A transcript was created since the last group: the folder is synced with the group too,
    /// or a power loss could take the new file's name (and all its synced lines) with it.
    folder_unsynced: bool,
    /// Each open file with when it was last written (a counter: the least is closed first).
    files: HashMap<String, (fs::File, u64)>,
    /// How many files are kept open at most.
    open_max: OpenBound,
    uses: u64,
    /// Sessions with lines not synced yet, open or closed since (a transcript closed to open
    /// another is synced with the window's group, by its path, not on its own when closed).
    unsynced: HashSet<String>,
    unsynced_since: Option<Instant>,
    /// Transcripts known to end with a whole line (checked when first opened, and written only
    /// whole lines since): opened again without reading their end, as in a team larger than
    /// [`OPEN_MAX`] every answer opens a file again.
    whole: HashSet<String>,
    /// `fdatasync` calls made by [`OpenTranscripts::sync`] (tests count them).
    #[cfg(test)]
    syncs: u64,
    /// Files whose end was read to check for a torn line (tests count them).
    end_checks: u64,
}

impl OpenTranscripts {
    fn file(&mut self, transcripts: &Transcripts, session_id: &str) -> Result<&mut fs::File, StoreError> {
        if !self.files.contains_key(session_id) {
            if !self.dir_ready {
                let dir = transcripts.dir();
                create_private_dir(dir).map_err(|e| StoreError::io("cannot create", dir, e))?;
                self.dir_ready = true;
            }
            if self.files.len() >= self.open_max.0 {
                self.close_least_recent();
            }
            let path = transcripts.path(session_id)?;
            let file = if self.whole.contains(session_id) {
                open_append(&path)?
            } else {
                let (file, empty) = open_for_append(&path)?;
                // A new file's name is synced with the group, in its folder.
                self.folder_unsynced |= empty;
                self.end_checks += 1;
                self.whole.insert(session_id.to_string());
                file
            };
            self.files.insert(session_id.to_string(), (file, 0));
        }
        self.uses += 1;
        let uses = self.uses;
        self.files
            .get_mut(session_id)
            .map(|(file, used)| {
                *used = uses;
                file
            })
            .ok_or_else(|| StoreError::SaveFailed(format!("transcript {session_id} is not open")))
    }

    /// Closes the file written least recently. Its lines are synced with the window's group,
    /// not now: in a team larger than [`OPEN_MAX`] every answer closes a file, and a sync of its
    /// own each time would be one `fdatasync` per message.
    fn close_least_recent(&mut self) {
        let oldest = self
            .files
            .iter()
            .min_by_key(|(_, (_, used))| *used)
            .map(|(id, _)| id.clone());
        if let Some(id) = oldest {
            self.close(&id);
        }
    }

    /// Closes a session's file; lines not synced yet stay in [`OpenTranscripts::unsynced`].
    fn close(&mut self, session_id: &str) {
        self.files.remove(session_id);
    }

    /// Closes every file, returning what is left to sync of them. What is known of their ends
    /// is forgotten too: another process may write them before they are opened again.
    fn close_all(&mut self) -> SyncJob {
        let job = self.take_unsynced();
        self.files.clear();
        self.whole.clear();
        job
    }

    #[cfg(test)]
    fn append(
        &mut self,
        transcripts: &Transcripts,
        session_id: &str,
        messages: &[Message],
    ) -> Result<(), StoreError> {
        self.append_lines(transcripts, session_id, &lines_of(messages)?)
    }

    /// Appends whole lines (each with its newline) to a session's transcript.
    fn append_lines(
        &mut self,
        transcripts: &Transcripts,
        session_id: &str,
        lines: &[u8],
    ) -> Result<(), StoreError> {
        let written = self.file(transcripts, session_id)?.write_all(lines);
        if let Err(e) = written {
            // Reopened next time (the file may have been moved or its disk remounted), its end
            // checked again (part of the line may have been written).
            self.close(session_id);
            self.whole.remove(session_id);
            return Err(StoreError::io(
                "cannot append to",
                transcripts.path(session_id).unwrap_or_default(),
                e,
            ));
        }
        self.unsynced.insert(session_id.to_string());
        self.unsynced_since.get_or_insert_with(Instant::now);
        Ok(())
    }

    /// Syncs every file with unsynced lines, here and now (see [`SyncJob::run`]).
    #[cfg(test)]
    fn sync(&mut self, transcripts: &Transcripts) {
        self.syncs += self.take_unsynced().run(transcripts);
    }

    /// What is to be synced: the transcripts with unsynced lines. From now on, lines count
    /// towards the next group.
    fn take_unsynced(&mut self) -> SyncJob {
        self.unsynced_since = None;
        SyncJob {
            ids: std::mem::take(&mut self.unsynced).into_iter().collect(),
            folder: std::mem::take(&mut self.folder_unsynced),
            done: Vec::new(),
        }
    }
}

/// A group of transcripts to sync, by session id, and who waits for them (a flush). Ids, not
/// open files: groups that queue up while the disk is slow hold no file handles.
#[derive(Default)]
struct SyncJob {
    ids: Vec<String>,
    /// The transcripts' folder too (a transcript was created).
    folder: bool,
    done: Vec<std::sync::mpsc::Sender<()>>,
}

impl SyncJob {
    fn is_empty(&self) -> bool {
        self.ids.is_empty() && !self.folder && self.done.is_empty()
    }

    /// Adds `other`'s transcripts (those not in this job already) and waiters.
    fn merge(&mut self, other: SyncJob) {
        for id in other.ids {
            if !self.ids.contains(&id) {
                self.ids.push(id);
            }
        }
        self.folder |= other.folder;
        self.done.extend(other.done);
    }

    /// Syncs each transcript (opened by its path, only if a regular file: `fdatasync` syncs the
    /// file, whichever handle asks), then lets the waiters go; returns the `fdatasync` calls made.
    fn run(self, transcripts: &Transcripts) -> u64 {
        let mut syncs = 0;
        for id in self.ids {
            let synced = transcripts
                .path(&id)
                .map_err(std::io::Error::other)
                .and_then(|path| open_regular(&path)?.sync_data());
            syncs += 1;
            // A closed transcript removed since (its session deleted) has nothing to sync.
            if let Err(e) = synced.or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            }) {
                tracing::error!(session = %id, error = %e, "cannot sync a transcript");
            }
        }
        if self.folder {
            super::atomic::sync_dir(transcripts.dir());
            syncs += 1;
        }
        for done in self.done {
            let _ = done.send(());
        }
        syncs
    }
}

/// Syncs groups of transcripts on a thread of its own, so the writer goes on writing (and
/// turns go on ending) meanwhile: a group's `fdatasync`s take milliseconds, on a slow disk far
/// more. Groups that arrive while one is synced are merged into one.
struct Syncer {
    tx: Option<std::sync::mpsc::Sender<SyncJob>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start(transcripts: &Transcripts) -> Syncer {
        let (tx, rx) = std::sync::mpsc::channel::<SyncJob>();
        let transcripts = transcripts.clone();
        let thread = std::thread::Builder::new()
            .name("huddle-sync".into())
            .spawn(move || {
                while let Ok(mut job) = rx.recv() {
                    while let Ok(more) = rx.try_recv() {
                        job.merge(more);
                    }
                    job.run(&transcripts);
                }
            })
            .map_err(|e| tracing::error!(error = %e, "cannot start the transcript syncer"))
            .ok();
        Syncer {
            tx: thread.is_some().then_some(tx),
            thread,
        }
    }

    /// Hands `job` over; without a syncer thread it is run here.
    fn sync(&self, transcripts: &Transcripts, job: SyncJob) {
        if job.is_empty() {
            return;
        }
        let unsent = match &self.tx {
            Some(tx) => tx.send(job).err().map(|e| e.0),
            None => Some(job),
        };
        if let Some(job) = unsent {
            job.run(transcripts);
        }
    }
}

impl Drop for Syncer {
    /// Every group handed over is synced before the writer is gone.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_loop(transcripts: &Transcripts, rx: &std::sync::mpsc::Receiver<WriterMsg>, idle: Duration) {
    use std::sync::mpsc::RecvTimeoutError;
    let mut open = OpenTranscripts {
        open_max: OpenBound(open_max_of_process()),
        ..OpenTranscripts::default()
    };
    let syncer = Syncer::start(transcripts);
    loop {
        // With lines waiting for their sync, wait for more only until the window closes; with
        // files open and all synced, until they count as idle.
        let first = match open.unsynced_since {
            None if open.files.is_empty() => match rx.recv() {
                Ok(m) => m,
                Err(_) => break,
            },
            None => match rx.recv_timeout(idle) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    syncer.sync(transcripts, open.close_all());
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            },
            Some(since) => match rx.recv_timeout(SYNC_WINDOW.saturating_sub(since.elapsed())) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    syncer.sync(transcripts, open.take_unsynced());
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            },
        };
        // Each session's lines of the batch, in order, to be written at once, and who waits for
        // them.
        let mut batch: Vec<(String, Vec<u8>, Vec<Written>)> = Vec::new();
        let mut waiting = Vec::new();
        let mut loads = Vec::new();
        let mut take = |msg: WriterMsg| match msg {
            WriterMsg::Append(id, line, done) => match batch.iter_mut().find(|(s, _, _)| *s == id) {
                Some((_, lines, acks)) => {
                    lines.extend_from_slice(&line);
                    acks.extend(done);
                }
                None => batch.push((id, line, done.into_iter().collect())),
            },
            WriterMsg::Flush(done) => waiting.push(done),
            WriterMsg::Load(id, reply) => loads.push((id, reply)),
        };
        take(first);
        while let Ok(more) = rx.try_recv() {
            take(more);
        }
        let mut written = Vec::new();
        for (id, lines, acks) in batch {
            match open.append_lines(transcripts, &id, &lines) {
                Ok(()) => written.extend(acks),
                // Who waits hears it was not written (the signal is dropped unsent).
                Err(e) => tracing::error!(session = %id, error = %e, "cannot append to transcript"),
            }
        }
        // Written (in the files, whatever becomes of this process): who waits may go on.
        for done in written {
            done.send();
        }
        let window_closed = open.unsynced_since.is_some_and(|t| t.elapsed() >= SYNC_WINDOW);
        let flushed = !waiting.is_empty();
        if flushed || window_closed {
            // A flush is answered once the group it ends is synced.
            let mut job = open.take_unsynced();
            job.done = waiting;
            syncer.sync(transcripts, job);
        }
        // A load sees the lines queued before it (and, harmlessly, those queued with it).
        for (id, reply) in loads {
            let _ = reply.send(transcripts.load(&id));
        }
    }
    // Closing: what was written is synced before the writer is gone.
    syncer.sync(transcripts, open.take_unsynced());
    drop(syncer);
}

/// Opens a transcript to append to (created 0600). After a torn write the file ends mid-line:
/// a newline is added first, so the next message is not glued to the fragment.
/// Also says whether the file is empty (new, in practice).
fn open_for_append(path: &Path) -> Result<(fs::File, bool), StoreError> {
    let mut file = open_append(path)?;
    let end = end_of(&mut file).map_err(|e| StoreError::io("cannot read", path, e))?;
    if end == FileEnd::MidLine {
        file.write_all(b"\n")
            .map_err(|e| StoreError::io("cannot append to", path, e))?;
    }
    Ok((file, end == FileEnd::Empty))
}

/// Messages as transcript lines, each with its newline.
fn lines_of(messages: &[Message]) -> Result<Vec<u8>, StoreError> {
    // Room for the texts and the fields around them: one allocation for most lines.
    let room = messages.iter().map(|m| m.text.len() + 256).sum();
    let mut lines = Vec::with_capacity(room);
    for message in messages {
        serde_json::to_writer(&mut lines, message).map_err(|e| StoreError::Serialize(e.to_string()))?;
        lines.push(b'\n');
    }
    Ok(lines)
}

/// Opens a transcript to append to (created 0600), as it is; only a regular file (a FIFO put
/// where a transcript was is refused at once, never written into until its buffer fills and
/// the writer waits for ever).
fn open_append(path: &Path) -> Result<fs::File, StoreError> {
    use std::os::unix::fs::OpenOptionsExt;
    private_file()
        .read(true)
        .append(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .and_then(regular_only)
        .map_err(|e| StoreError::io("cannot open", path, e))
}

/// How a transcript ends.
#[derive(Debug, PartialEq, Eq)]
enum FileEnd {
    Empty,
    WholeLine,
    MidLine,
}

fn end_of(file: &mut fs::File) -> std::io::Result<FileEnd> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(FileEnd::Empty);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(if last[0] == b'\n' {
        FileEnd::WholeLine
    } else {
        FileEnd::MidLine
    })
}

fn parse_lines(text: &str, path: &Path) -> LoadedTranscript {
    let mut out = LoadedTranscript::default();
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Message>(line) {
            Ok(m) => out.messages.push(m),
            Err(e) => {
                let what = if i == last && !complete {
                    "torn last line (an interrupted write) ignored"
                } else {
                    "unreadable line skipped (left in the file)"
                };
                let warning = format!("{}:{}: {what}: {e}", path.display(), i + 1);
                tracing::warn!("{warning}");
                out.warnings.push(warning);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    #[test]
    fn a_copy_is_written_whole_once_and_never_over_a_transcript() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let messages = vec![Message::user("q"), Message::assistant("a")];
        t.create_with("copy", &messages).unwrap();
        assert_eq!(t.load("copy").unwrap().messages, messages);
        let mode = fs::metadata(t.path("copy").unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(t.create_with("copy", &[]).is_err(), "never replaced");
        assert_eq!(t.load("copy").unwrap().messages.len(), 2);
        assert!(t.create_with("../x", &messages).is_err());
    }

    #[test]
    fn appends_and_loads_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        t.append("s1", &Message::user("hello")).unwrap();
        t.append("s1", &Message::assistant("hi there\nsecond line"))
            .unwrap();
        let loaded = t.load("s1").unwrap();
        assert_eq!(loaded.messages.len(), 2);
        assert_eq!(loaded.messages[1].text, "hi there\nsecond line");
        assert!(loaded.warnings.is_empty());
        assert!(t.load("nobody").unwrap().messages.is_empty());
    }

    #[test]
    fn torn_last_line_is_ignored_and_the_next_append_starts_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path());
        t.append("s", &Message::user("one")).unwrap();
        let path = t.path("s").unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"role":"assistant","text":"cut sho"#).unwrap();
        drop(f);
        let loaded = t.load("s").unwrap();
        assert_eq!(loaded.messages.len(), 1);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(
            loaded.warnings[0].contains("torn last line"),
            "{:?}",
            loaded.warnings
        );

        t.append("s", &Message::user("two")).unwrap();
        let loaded = t.load("s").unwrap();
        let texts: Vec<_> = loaded.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["one", "two"]);
        assert_eq!(
            loaded.warnings.len(),
            1,
            "the fragment stays in the file, reported"
        );
    }

    #[test]
    fn background_writer_keeps_order_and_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path());
        let writer = TranscriptWriter::new(t.clone());
        for k in 0..100 {
            writer.append(
                if k % 2 == 0 { "even" } else { "odd" },
                &Message::user(format!("{k}")),
            );
        }
        writer.flush();
        let even: Vec<String> = t
            .load("even")
            .unwrap()
            .messages
            .into_iter()
            .map(|m| m.text)
            .collect();
        let expected: Vec<String> = (0..100).step_by(2).map(|k| k.to_string()).collect();
        assert_eq!(even, expected);
        writer.append("odd", &Message::user("last"));
        drop(writer);
        assert_eq!(
            t.load("odd").unwrap().messages.last().unwrap().text,
            "last",
            "drop writes the queue"
        );
    }

    /// Three lines each for 40 sessions, written in turn (more sessions than open files).
    fn written_in_turn(t: &Transcripts) -> OpenTranscripts {
        let mut open = OpenTranscripts::default();
        for round in 0..3 {
            for k in 0..40 {
                open.append(t, &format!("s{k}"), &[Message::user(format!("{round}"))])
                    .unwrap();
            }
        }
        open
    }

    /// A team larger than the open files' bound writes its members in turn: each answer closes
    /// a transcript to open another, and none is synced on its own then; the window's group
    /// sync covers the closed ones too (one sync per session, not per message).
    #[test]
    fn transcripts_closed_for_others_are_synced_with_the_group_not_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let mut open = written_in_turn(&t);
        assert!(open.files.len() <= OPEN_MAX);
        assert_eq!(open.syncs, 0, "no transcript synced before the window closes");
        assert_eq!(open.unsynced.len(), 40);
        open.sync(&t);
        assert_eq!(
            open.syncs, 41,
            "each session's file synced once, and their folder (new files)"
        );
        assert!(open.unsynced.is_empty());
        let texts: Vec<String> = t
            .load("s0")
            .unwrap()
            .messages
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(texts, ["0", "1", "2"]);
    }

    #[test]
    fn a_transcript_opened_again_is_not_read_again_until_the_writer_lets_go_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let mut open = written_in_turn(&t);
        // 120 opens (a team larger than the open files), one check of each file's end.
        assert_eq!(open.end_checks, 40);
        // Once every file is closed (idle), another process may have torn one: checked again.
        open.close_all().run(&t);
        let mut torn = OpenOptions::new()
            .append(true)
            .open(t.path("s0").unwrap())
            .unwrap();
        torn.write_all(br#"{"role":"us"#).unwrap();
        open.append(&t, "s0", &[Message::user("after")]).unwrap();
        assert_eq!(open.end_checks, 41);
        let loaded = t.load("s0").unwrap();
        let texts: Vec<&str> = loaded.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["0", "1", "2", "after"]);
        assert_eq!(loaded.warnings.len(), 1, "the fragment is on a line of its own");
    }

    #[test]
    fn groups_waiting_for_the_syncer_are_synced_once_each_file_and_answered_after() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let mut open = OpenTranscripts::default();
        open.append(&t, "a", &[Message::user("1")]).unwrap();
        open.append(&t, "b", &[Message::user("1")]).unwrap();
        let mut first = open.take_unsynced();
        assert!(open.unsynced.is_empty(), "later lines go to the next group");
        open.append(&t, "a", &[Message::user("2")]).unwrap();
        open.close("a");
        let (tx, rx) = std::sync::mpsc::channel();
        let mut second = open.take_unsynced();
        second.done.push(tx);
        first.merge(second);
        let mut ids: Vec<&str> = first.ids.iter().map(String::as_str).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["a", "b"], "each file once");
        assert!(first.folder, "new transcripts: their folder is synced too");
        assert!(rx.try_recv().is_err(), "not answered before the sync");
        assert_eq!(first.run(&t), 3, "two files and their folder");
        // Lines added to transcripts that exist: the folder is left alone.
        open.append(&t, "b", &[Message::user("2")]).unwrap();
        assert!(!open.take_unsynced().folder);
        let mut again = OpenTranscripts::default();
        again.append(&t, "a", &[Message::user("3")]).unwrap();
        assert!(!again.take_unsynced().folder, "opened, not created");
        assert!(rx.try_recv().is_ok(), "answered once synced");
    }

    #[test]
    fn a_fifo_where_a_transcript_was_is_not_waited_on_when_syncing() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        fs::create_dir_all(t.dir()).unwrap();
        let path =
            std::ffi::CString::new(t.path("x").unwrap().into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let job = SyncJob {
            ids: vec!["x".into()],
            folder: false,
            done: vec![tx],
        };
        let t2 = t.clone();
        std::thread::spawn(move || job.run(&t2));
        assert!(
            rx.recv_timeout(Duration::from_secs(20)).is_ok(),
            "the syncer waited on a FIFO"
        );
    }

    /// A transcript the writer closed to open others (and knows to end whole) was replaced by
    /// a FIFO: opened again, it is refused, not written into until the pipe is full.
    #[test]
    fn a_fifo_put_where_a_closed_transcript_was_is_refused_not_written_into() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::new(t.clone());
        writer.append("victim", &Message::user("first"));
        for k in 0..open_max_of_process() {
            writer.append(&format!("other{k}"), &Message::user("x"));
        }
        writer.flush();
        let path = t.path("victim").unwrap();
        fs::remove_file(&path).unwrap();
        let c_path = std::ffi::CString::new(path.into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let long = "y".repeat(100_000);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            writer.append("victim", &Message::user(long));
            writer.flush();
            let _ = tx.send(());
        });
        assert!(
            rx.recv_timeout(Duration::from_secs(20)).is_ok(),
            "the writer wrote into a FIFO and waits for a reader"
        );
    }

    #[tokio::test]
    async fn a_line_that_cannot_be_written_is_not_reported_written() {
        let dir = tempfile::tempdir().unwrap();
        // Where the transcripts' folder belongs, a file: nothing can be written under it.
        fs::write(dir.path().join("sessions"), b"").unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::new(t);
        assert!(!writer.append_written("s", &Message::assistant("lost")).await);
        let ok_dir = tempfile::tempdir().unwrap();
        let ok = TranscriptWriter::new(Transcripts::new(ok_dir.path().join("sessions")));
        assert!(ok.append_written("s", &Message::assistant("kept")).await);
    }

    /// A sixteenth of the open-file limit, 16 at least (issue 28 item 4's `ulimit -n 128`), 64
    /// at most (an unlimited one too).
    #[test]
    fn the_open_files_bound_follows_the_processs_limit() {
        assert_eq!(open_max_for(0), 16);
        assert_eq!(open_max_for(128), 16);
        assert_eq!(open_max_for(256), 16);
        assert_eq!(open_max_for(512), 32);
        assert_eq!(open_max_for(1024), 64);
        assert_eq!(open_max_for(u64::MAX), 64);
    }

    /// Under the process's file limit (a sixteenth of it, up to 64) a team of 40 keeps its 40
    /// transcripts open while it writes: none is closed to open another.
    #[test]
    fn the_writer_keeps_as_many_files_open_as_the_processs_limit_allows() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::new(t);
        for k in 0..40 {
            writer.append(&format!("s{k}"), &Message::user("x"));
        }
        writer.flush();
        let open = crate::store::open_files_under(dir.path()).len();
        assert_eq!(open, 40.min(open_max_of_process()));
    }

    #[test]
    fn the_writer_holds_a_bounded_number_of_files_however_many_sessions_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::new(t.clone());
        for round in 0..2 {
            for k in 0..200 {
                writer.append(&format!("s{k}"), &Message::user(format!("{round}")));
            }
            writer.flush();
            let open = crate::store::open_files_under(dir.path()).len();
            assert!(
                open <= open_max_of_process(),
                "{open} transcripts open after 200 sessions"
            );
        }
        for k in [0, 77, 199] {
            let texts: Vec<String> = t
                .load(&format!("s{k}"))
                .unwrap()
                .messages
                .into_iter()
                .map(|m| m.text)
                .collect();
            assert_eq!(texts, ["0", "1"], "closed and opened again, nothing lost");
        }
    }

    #[test]
    fn an_idle_writer_closes_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::with_idle_close(t.clone(), Duration::from_millis(50));
        for k in 0..3 {
            writer.append(&format!("s{k}"), &Message::user("x"));
        }
        writer.flush();
        // Polled, not slept for a guessed time: the writer closes them on its own.
        let started = Instant::now();
        while !crate::store::open_files_under(dir.path()).is_empty() {
            assert!(started.elapsed() < Duration::from_secs(60), "never closed");
            std::thread::sleep(Duration::from_millis(10));
        }
        writer.append("s0", &Message::user("y"));
        writer.flush();
        assert_eq!(t.load("s0").unwrap().messages.len(), 2, "opened again to write");
    }

    #[test]
    fn ids_that_are_not_plain_are_refused() {
        let t = Transcripts::new("/tmp/x");
        assert!(t.path("../../etc/passwd").is_err());
        assert!(t.path("").is_err());
        assert!(t.path("a/b").is_err());
        assert!(t.path("0b6f-aa_1").is_ok());
    }

    #[test]
    fn remove_deletes_the_file_and_tolerates_absence() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path());
        t.append("s", &Message::user("x")).unwrap();
        t.remove("s").unwrap();
        assert!(!t.path("s").unwrap().exists());
        t.remove("s").unwrap();
    }

    #[test]
    fn a_load_through_the_writer_sees_every_line_queued_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path());
        let writer = TranscriptWriter::new(t.clone());
        for k in 0..200 {
            writer.append("s", &Message::user(format!("m{k}")));
        }
        let loaded = writer.load(&t, "s").unwrap();
        assert_eq!(loaded.messages.len(), 200);
        assert_eq!(loaded.messages.last().unwrap().text, "m199");
        assert!(writer.load(&t, "never").unwrap().messages.is_empty());
        assert!(writer.load(&t, "../x").is_err());
    }

    #[test]
    fn the_writer_keeps_files_open_starts_after_a_torn_line_and_syncs_on_flush() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        // A crash tore the last line of one transcript.
        t.append("torn", &Message::user("before")).unwrap();
        let path = t.path("torn").unwrap();
        let mut text = fs::read_to_string(&path).unwrap();
        text.push_str("{\"role\":\"us");
        fs::write(&path, text).unwrap();
        let writer = TranscriptWriter::new(t.clone());
        for k in 0..50 {
            for s in ["torn", "a", "b"] {
                writer.append(s, &Message::assistant(format!("{s}{k}")));
            }
        }
        writer.flush();
        let torn = t.load("torn").unwrap();
        assert_eq!(
            torn.messages.len(),
            51,
            "the fragment is skipped, nothing glued to it"
        );
        assert_eq!(torn.warnings.len(), 1);
        for s in ["a", "b"] {
            let loaded = t.load(s).unwrap();
            assert_eq!(loaded.messages.len(), 50);
            assert_eq!(loaded.messages[49].text, format!("{s}49"));
        }
        drop(writer);
        assert_eq!(t.load("a").unwrap().messages.len(), 50);
    }
}
