//! Writing transcripts while runs go on.
//!
//! A line is written by whoever appends it when its session's file is open and none of the
//! session's lines wait in the writer's queue: a `write(2)` of a few hundred bytes into the page
//! cache, on the engine's own thread. A turn that waits for its answer to be on disk then waits
//! for nothing, and no other thread is woken: handing every line to a writer thread and being
//! told it was written cost two wake-ups across threads per line, most of the engine's time per
//! message (docs/benchmarks.md, session 13). What can take long stays off the engine's threads:
//! opening a file (its end may be read from disk, to end a torn line) and the session's lines
//! until it is open, on the writer's thread; syncing groups of lines, on a thread of its own;
//! closing idle files; loads that must see every queued line.
//!
//! The price is that an engine thread may wait on the kernel: a write into the page cache takes
//! microseconds, but a kernel that throttles writers (a disk far behind), or a file system that
//! keeps a page being written back stable, can hold one up. Only that thread waits: the files'
//! lock is only tried by appenders (held by another, the line goes to the writer's thread, whose
//! queue keeps the session's order), so one slow write never stops every thread that appends.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::model::Message;

use super::StoreError;
use super::line_wait::{LineWaits, Written};
use super::open_transcripts::{OpenTranscripts, SyncJob, Syncer, ToOpen, open_max_of_process};
use super::transcript::{LoadedTranscript, Transcripts, with_line};

/// Lines written but not yet synced wait this long before their group is handed to the syncer:
/// a group commit, many lines and one `fdatasync` per file, instead of one per message. The
/// group is synced by a thread of its own ([`Syncer`]) while writing goes on, once it has
/// rested after the group before (`open_transcripts::rest_after`: nothing for a few
/// transcripts, 10-50 ms for a team of 64 writing at once); a flush waits for its group's sync
/// and never for the rest.
const SYNC_WINDOW: Duration = Duration::from_millis(20);
/// With nothing written for this long, every open transcript is closed (an idle TUI holds none).
const IDLE_CLOSE: Duration = Duration::from_secs(5);

type LoadReply = Sender<Result<LoadedTranscript, StoreError>>;

enum WriterMsg {
    /// A line (serialised, with its newline) of a session whose file is not open, or that has
    /// lines queued already, and who waits to hear it is written (see
    /// [`TranscriptWriter::append_written`]).
    Append(String, Vec<u8>, Option<Written>),
    /// A line written by its appender began a group of unsynced lines: the writer syncs the
    /// group when its window closes.
    WindowBegan,
    Flush(Sender<()>),
    /// Reads a transcript after every line queued before this message is written.
    Load(String, LoadReply),
}

/// The open files, shared by the appenders and the writer's thread under a lock held while a
/// line is written, never while a file is opened, synced or read. An appender only tries it: when
/// another holds it (a write the kernel holds up, say), the line is handed to the writer's thread
/// instead, so one slow write never stops every thread that appends.
struct Files {
    open: OpenTranscripts,
    /// When a line was last written: files idle for the writer's idle time are closed.
    last_write: Instant,
}

/// Lines handed to the writer's thread and not written yet, by session: the session's later
/// lines are handed over too, so that its lines keep their order. Under a lock of its own, never
/// held while waiting for another (the writer takes it holding [`Files`]; an appender holding it
/// only tries [`Files`]).
type Queued = Mutex<HashMap<String, usize>>;

impl Files {
    /// How long the writer's thread waits for a message: until the group's window closes, with
    /// lines not synced; until the open files count as idle; with none open, for ever.
    fn next_wake(&self, idle: Duration) -> Option<Duration> {
        match self.open.unsynced_since {
            Some(since) => Some(SYNC_WINDOW.saturating_sub(since.elapsed())),
            None if self.open.files.is_empty() => None,
            None => Some(idle.saturating_sub(self.last_write.elapsed())),
        }
    }

    /// What the writer does when no message came: the group is synced once its window closed,
    /// every file closed once they are idle.
    fn on_quiet(&mut self, idle: Duration) -> SyncJob {
        match self.open.unsynced_since {
            Some(since) if since.elapsed() >= SYNC_WINDOW => self.open.take_unsynced(),
            None if !self.open.files.is_empty() && self.last_write.elapsed() >= idle => self.open.close_all(),
            _ => SyncJob::default(),
        }
    }
}

/// `lines` of `session_id`'s queued lines were written (or failed).
fn unqueue(queued: &Queued, session_id: &str, lines: usize) {
    let mut queued = lock(queued);
    if let Some(left) = queued.get_mut(session_id) {
        *left = left.saturating_sub(lines);
        if *left == 0 {
            queued.remove(session_id);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // What a panic could leave half done is a line half written (its file is checked for a torn
    // end when next opened) or a count of queued lines (at worst a session's lines go through
    // the writer's thread).
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The lock on `files` if no one holds it.
fn try_lock(files: &Mutex<Files>) -> Option<MutexGuard<'_, Files>> {
    match files.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

/// Appends transcript lines as they come (see the module's doc): a turn waits at most for its
/// own line to be written ([`TranscriptWriter::append_written`]), never for a sync. Files stay
/// open while in use (at most an eighth of the open-file limit, 16 to 128; closed when idle);
/// lines are synced in groups (see [`SYNC_WINDOW`]).
pub struct TranscriptWriter {
    transcripts: Transcripts,
    files: Arc<Mutex<Files>>,
    queued: Arc<Queued>,
    /// To the writer's thread; none when it could not start (then the appenders do it all).
    tx: Option<Sender<WriterMsg>>,
    /// The writer's thread is gone (it panicked): the appenders do it all from then on.
    gone: std::sync::atomic::AtomicBool,
    thread: Option<std::thread::JoinHandle<()>>,
    waits: Arc<LineWaits>,
    /// Lines handed to the writer's thread (tests count them).
    #[cfg(test)]
    lines_handed_over: std::sync::atomic::AtomicUsize,
    /// `fdatasync`s made by appenders writing alone (tests count them).
    #[cfg(test)]
    synced_alone: std::sync::atomic::AtomicUsize,
}

/// How an append went: written by its appender (`false`: it could not be, the log says why), or
/// handed to the writer's thread, with what says when it is written.
enum Appended {
    Done(bool),
    Queued(tokio::sync::oneshot::Receiver<()>),
}

impl TranscriptWriter {
    pub fn new(transcripts: Transcripts) -> TranscriptWriter {
        TranscriptWriter::with_idle_close(transcripts, IDLE_CLOSE)
    }

    /// A writer that closes its files after `idle` without a write.
    fn with_idle_close(transcripts: Transcripts, idle: Duration) -> TranscriptWriter {
        let files = Arc::new(Mutex::new(Files {
            open: OpenTranscripts::bounded(open_max_of_process()),
            last_write: Instant::now(),
        }));
        let queued = Arc::new(Queued::default());
        let (tx, rx) = std::sync::mpsc::channel::<WriterMsg>();
        let thread = {
            let transcripts = transcripts.clone();
            let (files, queued) = (Arc::clone(&files), Arc::clone(&queued));
            std::thread::Builder::new()
                .name("huddle-transcripts".into())
                .spawn(move || write_loop(&transcripts, &files, &queued, &rx, idle))
                .map_err(|e| tracing::error!(error = %e, "cannot start the transcript writer"))
                .ok()
        };
        TranscriptWriter {
            transcripts,
            files,
            queued,
            tx: thread.is_some().then_some(tx),
            gone: std::sync::atomic::AtomicBool::new(false),
            thread,
            waits: Arc::default(),
            #[cfg(test)]
            lines_handed_over: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(test)]
            synced_alone: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Appends `message` as its session's next line (serialised here: no copy of it is made).
    pub fn append(&self, session_id: &str, message: &Message) {
        self.append_line(session_id, message, false);
    }

    /// Appends like [`TranscriptWriter::append`]; the future ends once the line (and every line
    /// of the session before it) is written to its file, so it outlives this process whatever
    /// ends it (it is synced with the next group of lines), with `true`; `false` when it could
    /// not be written (the log says why). What reports a turn's end waits for it: nothing is
    /// reported that a crash could take back, and an answer that is not on disk is said to be so.
    pub fn append_written(
        &self,
        session_id: &str,
        message: &Message,
    ) -> impl std::future::Future<Output = bool> + use<> {
        let appended = self.append_line(session_id, message, true);
        let waits = Arc::clone(&self.waits);
        async move {
            match appended {
                Appended::Done(written) => written,
                Appended::Queued(rx) => waits.wait(rx).await,
            }
        }
    }

    /// Writes the line here when its file is open, nothing of its session is queued and no one
    /// else is writing; else hands it to the writer's thread (`wait`: with a signal for when it
    /// is written).
    fn append_line(&self, session_id: &str, message: &Message, wait: bool) -> Appended {
        match with_line(message, |line| self.append_serialized(session_id, line, wait)) {
            Ok(appended) => appended,
            Err(e) => {
                tracing::error!(session = session_id, error = %e, "a message was not saved");
                Appended::Done(false)
            }
        }
    }

    /// [`TranscriptWriter::append_line`] of the line made (copied only when handed over).
    fn append_serialized(&self, session_id: &str, line: &[u8], wait: bool) -> Appended {
        let tx = match &self.tx {
            Some(tx) if !self.gone.load(std::sync::atomic::Ordering::Relaxed) => tx,
            _ => return Appended::Done(self.append_alone(session_id, line)),
        };
        let mut queued = lock(&self.queued);
        if !queued.contains_key(session_id)
            && let Some(mut files) = try_lock(&self.files)
            && files.open.is_open(session_id)
        {
            // The lock on the files is taken: the session's next line, if handed over now,
            // is written after this one.
            drop(queued);
            let window_began = files.open.unsynced_since.is_none();
            let written = files.open.append_lines(&self.transcripts, session_id, line);
            files.last_write = Instant::now();
            drop(files);
            if window_began && written.is_ok() && self.hand_over(tx, WriterMsg::WindowBegan).is_err() {
                self.writer_gone();
            }
            return Appended::Done(logged(session_id, written));
        }
        let (done, rx) = match wait {
            true => {
                let (done, rx) = self.waits.start();
                (Some(done), Some(rx))
            }
            false => (None, None),
        };
        // Handed over holding the queued count: the queue has the session's lines in order.
        if let Err(WriterMsg::Append(_, line, _)) =
            self.hand_over(tx, WriterMsg::Append(session_id.to_string(), line.to_vec(), done))
        {
            // The writer's thread is gone (its queued lines with it, as their waiters heard):
            // this line, given back, is written here, and so are the next.
            drop(queued);
            self.writer_gone();
            return Appended::Done(self.append_alone(session_id, &line));
        }
        *queued.entry(session_id.to_string()).or_default() += 1;
        match rx {
            Some(rx) => Appended::Queued(rx),
            None => Appended::Done(true),
        }
    }

    /// Without a writer's thread (it could not start, or is gone): the line is written here,
    /// its file opened here if need be, and the group synced here once its window closed.
    fn append_alone(&self, session_id: &str, line: &[u8]) -> bool {
        let mut files = lock(&self.files);
        let written = files.open.append_lines(&self.transcripts, session_id, line);
        let window_closed = files
            .open
            .unsynced_since
            .is_some_and(|t| t.elapsed() >= SYNC_WINDOW);
        let job = window_closed.then(|| files.open.take_unsynced());
        drop(files);
        if let Some(job) = job {
            let _syncs = job.run(&self.transcripts);
            #[cfg(test)]
            self.synced_alone
                .fetch_add(_syncs as usize, std::sync::atomic::Ordering::Relaxed);
        }
        logged(session_id, written)
    }

    /// The writer's thread stopped taking messages: from now on the appenders write alone (the
    /// lines it had queued are lost; who waited for one heard it was not written).
    fn writer_gone(&self) {
        if !self.gone.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::error!("the transcript writer stopped; lines are written and synced by who adds them");
        }
    }

    /// Sends `msg` to the writer's thread; given back when the thread is gone.
    fn hand_over(&self, tx: &Sender<WriterMsg>, msg: WriterMsg) -> Result<(), WriterMsg> {
        #[cfg(test)]
        if matches!(msg, WriterMsg::Append(..)) {
            self.lines_handed_over
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        tx.send(msg).map_err(|e| e.0)
    }

    /// A session's transcript with every line appended to it so far: read by the writer's
    /// thread, after the lines queued before, so nothing is missing and nothing else is forced
    /// to disk first (a blocking call: use it off the UI thread).
    pub fn load(&self, transcripts: &Transcripts, session_id: &str) -> Result<LoadedTranscript, StoreError> {
        let (reply, answer) = std::sync::mpsc::channel();
        let sent = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.send(WriterMsg::Load(session_id.to_string(), reply)).is_ok());
        match sent.then(|| answer.recv().ok()).flatten() {
            Some(result) => result,
            // No writer thread: nothing is queued, the file is read here.
            None => {
                let upto = lock(&self.files).open.length_of(session_id);
                transcripts.load_upto(session_id, upto)
            }
        }
    }

    /// Waits until everything appended so far is on disk.
    pub fn flush(&self) {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        match &self.tx {
            Some(tx) if tx.send(WriterMsg::Flush(done_tx)).is_ok() => {
                let _ = done_rx.recv();
            }
            _ => {
                let job = lock(&self.files).open.take_unsynced();
                job.run(&self.transcripts);
            }
        }
    }
}

/// Whether a line was written; why not goes to the log.
fn logged(session_id: &str, written: Result<(), StoreError>) -> bool {
    written
        .map_err(|e| tracing::error!(session = session_id, error = %e, "cannot append to transcript"))
        .is_ok()
}

impl Drop for TranscriptWriter {
    fn drop(&mut self) {
        // Closing the channel lets the thread write what is queued, sync and stop.
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // What was written with no thread to sync it (it could not start, or is gone): the
        // flush of a writer without a thread.
        self.flush();
    }
}

/// A session's lines of one batch, in order, and who waits for them.
struct QueuedLines {
    session_id: String,
    lines: Vec<u8>,
    count: usize,
    acks: Vec<Written>,
}

fn write_loop(
    transcripts: &Transcripts,
    files: &Mutex<Files>,
    queued: &Queued,
    rx: &Receiver<WriterMsg>,
    idle: Duration,
) {
    let syncer = Syncer::start(transcripts);
    loop {
        let wake = lock(files).next_wake(idle);
        let first = match wake {
            None => match rx.recv() {
                Ok(m) => m,
                Err(_) => break,
            },
            Some(after) => match rx.recv_timeout(after) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => {
                    let job = lock(files).on_quiet(idle);
                    syncer.sync(transcripts, job);
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            },
        };
        let mut batch: Vec<QueuedLines> = Vec::new();
        let mut flushes = Vec::new();
        let mut loads = Vec::new();
        let mut take = |msg: WriterMsg| match msg {
            WriterMsg::Append(id, line, done) => match batch.iter_mut().find(|q| q.session_id == id) {
                Some(queued) => {
                    queued.lines.extend_from_slice(&line);
                    queued.count += 1;
                    queued.acks.extend(done);
                }
                None => batch.push(QueuedLines {
                    session_id: id,
                    lines: line,
                    count: 1,
                    acks: done.into_iter().collect(),
                }),
            },
            // The wait above is worked out again.
            WriterMsg::WindowBegan => {}
            WriterMsg::Flush(done) => flushes.push(done),
            WriterMsg::Load(id, reply) => loads.push((id, reply)),
        };
        take(first);
        while let Ok(more) = rx.try_recv() {
            take(more);
        }
        let mut written = Vec::new();
        for lines in batch {
            match write_queued(transcripts, files, queued, &lines) {
                Ok(()) => written.extend(lines.acks),
                // Who waits hears it was not written (the signal is dropped unsent).
                Err(e) => {
                    tracing::error!(session = %lines.session_id, error = %e, "cannot append to transcript")
                }
            }
        }
        // Written (in the files, whatever becomes of this process): who waits may go on.
        for done in written {
            done.send();
        }
        let job = {
            let mut files = lock(files);
            let window_closed = files
                .open
                .unsynced_since
                .is_some_and(|t| t.elapsed() >= SYNC_WINDOW);
            // A flush is answered once the group it ends is synced.
            (window_closed || !flushes.is_empty()).then(|| {
                let mut job = files.open.take_unsynced();
                job.done = flushes;
                job
            })
        };
        if let Some(job) = job {
            syncer.sync(transcripts, job);
        }
        // A load sees the lines queued before it (and, harmlessly, those appended since), up to
        // the end of the last line written whole: one being written by an appender meanwhile
        // would read as torn.
        for (id, reply) in loads {
            let upto = lock(files).open.length_of(&id);
            let _ = reply.send(transcripts.load_upto(&id, upto));
        }
    }
    // Closing: what was written is synced before the writer is gone.
    let job = lock(files).open.take_unsynced();
    syncer.sync(transcripts, job);
}

/// Writes a session's queued lines, its file opened first if need be, without holding the lock
/// while it opens (an appender of another session writes meanwhile); then counts them written,
/// still holding the lock (an appender of the session that then finds none queued writes after
/// them).
fn write_queued(
    transcripts: &Transcripts,
    files: &Mutex<Files>,
    queued: &Queued,
    lines: &QueuedLines,
) -> Result<(), StoreError> {
    let id = lines.session_id.as_str();
    let to_open = {
        let mut files = lock(files);
        if files.open.is_open(id) {
            let written = files.open.append_lines(transcripts, id, &lines.lines);
            files.last_write = Instant::now();
            unqueue(queued, id, lines.count);
            return written;
        }
        files.open.to_open(transcripts, id)
    };
    let opened = to_open.and_then(ToOpen::open);
    let mut files = lock(files);
    let written = opened.and_then(|opened| {
        files.open.opened(id, opened);
        files.open.append_lines(transcripts, id, &lines.lines)
    });
    files.last_write = Instant::now();
    unqueue(queued, id, lines.count);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn handed_over(writer: &TranscriptWriter) -> usize {
        writer
            .lines_handed_over
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn texts(t: &Transcripts, session_id: &str) -> Vec<String> {
        t.load(session_id)
            .unwrap()
            .messages
            .into_iter()
            .map(|m| m.text)
            .collect()
    }

    /// Once a session's file is open, its lines are written by whoever appends them: a turn
    /// that waits for its answer to be on disk finds it written when it asks, and none is handed
    /// to the writer's thread (woken once per group of lines, to sync it, not once per line).
    #[test]
    fn a_line_for_an_open_file_is_written_by_its_appender_without_waking_the_writer() {
        use futures::FutureExt;
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::new(t.clone());
        writer.append("s", &Message::user("question"));
        writer.flush();
        // A line whose file the writer's thread holds at that moment (it looks at the files
        // between messages) is handed to it, as designed: a few may be, on a busy machine.
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let _inside = runtime.enter();
        let before = handed_over(&writer);
        let mut at_once = 0;
        for k in 0..100 {
            let written = writer.append_written("s", &Message::assistant(format!("{k}")));
            match written.now_or_never() {
                Some(true) => at_once += 1,
                Some(false) => panic!("line {k} not written"),
                // Handed over: the session's next lines follow it to the writer's thread (to
                // keep their order) until it is written; wait for that, so that a thread
                // preempted meanwhile does not count as many hand-overs.
                None => writer.flush(),
            }
        }
        let handed = handed_over(&writer) - before;
        assert!(at_once >= 90, "{at_once} of 100 lines written at once");
        assert!(
            handed <= 10,
            "{handed} of 100 lines handed to the writer's thread"
        );
        writer.flush();
        assert_eq!(texts(&t, "s").len(), 101);
    }

    /// While a session has lines in the writer's queue (its file being opened), its next lines
    /// go there too, after them, not straight into the file ahead of them.
    #[test]
    fn a_session_with_lines_queued_has_its_next_lines_queued_after_them() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::new(t.clone());
        writer.append("s", &Message::user("0"));
        writer.flush();
        lock(&writer.queued).insert("s".into(), 1);
        let before = handed_over(&writer);
        writer.append("s", &Message::user("1"));
        assert_eq!(handed_over(&writer), before + 1, "handed over, not written here");
        writer.flush();
        assert_eq!(texts(&t, "s"), ["0", "1"]);
    }

    /// A load while lines are written by their appenders reads up to the end of the last line
    /// written whole: never a line half written (which would read as torn, and be missing).
    /// Lines over a page, so that a write crosses pages while a load reads; a new session every
    /// 150 lines, so that loads stay quick (many of them, each a chance to meet a write).
    #[test]
    fn a_load_never_sees_a_line_being_written() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = Arc::new(TranscriptWriter::new(t.clone()));
        let (stop, current) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let appender = {
            let (writer, stop, current) = (Arc::clone(&writer), Arc::clone(&stop), Arc::clone(&current));
            std::thread::spawn(move || {
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let session = n / 150;
                    current.store(session, Ordering::Relaxed);
                    let line = Message::assistant("z".repeat(5_000 + (n % 11) * 97));
                    writer.append(&format!("s{session}"), &line);
                    n += 1;
                }
            })
        };
        let mut torn = Vec::new();
        for _ in 0..1_500 {
            let session = current.load(Ordering::Relaxed);
            let loaded = writer.load(&t, &format!("s{session}")).unwrap();
            torn.extend(loaded.warnings);
        }
        stop.store(true, Ordering::Relaxed);
        appender.join().unwrap();
        assert!(
            torn.is_empty(),
            "{} loads saw a torn line: {:?}",
            torn.len(),
            torn.first()
        );
    }

    /// An appender never waits for another's write: with the files' lock held (a write the
    /// kernel holds up), a line of an open session is handed to the writer's thread, and
    /// written after the lines before it.
    #[test]
    fn an_appender_does_not_wait_while_another_holds_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = Arc::new(TranscriptWriter::new(t.clone()));
        writer.append("s", &Message::user("0"));
        writer.flush();
        let held = lock(&writer.files);
        let (tx, rx) = std::sync::mpsc::channel();
        let appender = {
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || {
                writer.append("s", &Message::user("1"));
                let _ = tx.send(());
                writer.append("s", &Message::user("2"));
            })
        };
        let returned = rx.recv_timeout(Duration::from_secs(20)).is_ok();
        drop(held);
        appender.join().unwrap();
        assert!(returned, "the appender waited for the lock");
        writer.flush();
        assert_eq!(texts(&t, "s"), ["0", "1", "2"]);
    }

    /// A writer's thread that stopped: the line it could not be handed is written by who adds
    /// it, and so are the next, in order (no hole in the transcript).
    #[test]
    fn when_the_writer_thread_is_gone_lines_are_written_by_who_adds_them() {
        use futures::FutureExt;
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let mut writer = TranscriptWriter::new(t.clone());
        // A channel whose receiving end is gone, as when the thread panicked.
        let (dead, receiver) = std::sync::mpsc::channel();
        drop(receiver);
        writer.tx = Some(dead);
        let first = writer.append_written("s", &Message::user("1"));
        assert_eq!(first.now_or_never(), Some(true), "the first line was dropped");
        writer.append("s", &Message::user("2"));
        assert_eq!(texts(&t, "s"), ["1", "2"]);
    }

    /// Without a writer's thread, who appends syncs the group once its window closed.
    #[test]
    fn without_a_writer_thread_the_appender_syncs_the_closed_window() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let mut writer = TranscriptWriter::new(t.clone());
        // As if it could not start: its channel closed, it ends.
        writer.tx = None;
        if let Some(thread) = writer.thread.take() {
            thread.join().unwrap();
        }
        writer.append("s", &Message::user("0"));
        assert!(lock(&writer.files).open.unsynced_since.is_some());
        std::thread::sleep(SYNC_WINDOW + Duration::from_millis(5));
        writer.append("s", &Message::user("1"));
        assert!(
            lock(&writer.files).open.unsynced_since.is_none(),
            "the group was not taken"
        );
        assert!(
            writer.synced_alone.load(std::sync::atomic::Ordering::Relaxed) > 0,
            "the group was not synced"
        );
        assert_eq!(texts(&t, "s"), ["0", "1"]);
    }

    /// Sessions appended to from several threads at once, more of them than files may be open
    /// (each file closed and opened again while others write): every session's lines in order.
    #[test]
    fn lines_appended_from_several_threads_keep_each_sessions_order() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = Arc::new(TranscriptWriter::new(t.clone()));
        let threads: Vec<_> = (0..4)
            .map(|thread| {
                let writer = Arc::clone(&writer);
                std::thread::spawn(move || {
                    for round in 0..20 {
                        for k in 0..30 {
                            let line = Message::user(format!("{round}"));
                            writer.append(&format!("t{thread}s{k}"), &line);
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        writer.flush();
        let expected: Vec<String> = (0..20).map(|round| round.to_string()).collect();
        for thread in 0..4 {
            for k in 0..30 {
                assert_eq!(texts(&t, &format!("t{thread}s{k}")), expected);
            }
        }
    }

    /// A line written by its appender begins a group; the group is synced when its window
    /// closes, although no other line comes and the files are far from idle.
    #[test]
    fn a_group_begun_by_an_appender_is_synced_when_its_window_closes() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::with_idle_close(t, Duration::from_secs(3600));
        writer.append("s", &Message::user("opens the file"));
        writer.flush();
        writer.append("s", &Message::user("written here"));
        assert!(lock(&writer.files).open.unsynced_since.is_some());
        let started = Instant::now();
        while lock(&writer.files).open.unsynced_since.is_some() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the group was never synced"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
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
    /// A transcript the writer closed to open others (and knows to end whole) was replaced by
    /// a FIFO: opened again, it is refused (a line is said not to be written, and nothing is
    /// left open on it), never written into, nor waited on until the pipe is read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_fifo_put_where_a_closed_transcript_was_is_refused_not_written_into() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let writer = TranscriptWriter::new(t.clone());
        writer.append("victim", &Message::user("first"));
        writer.flush();
        // Closed to open another (known to end whole, so it is opened again without a read).
        lock(&writer.files).open.close("victim");
        assert!(!lock(&writer.files).open.is_open("victim"));
        let path = t.path("victim").unwrap();
        fs::remove_file(&path).unwrap();
        let c_path = std::ffi::CString::new(path.into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        // A short line: written into the pipe's buffer, it would be reported written.
        let written = writer.append_written("victim", &Message::user("short"));
        let written = tokio::time::timeout(Duration::from_secs(20), written).await;
        assert_eq!(
            written.ok(),
            Some(false),
            "a line into a FIFO was reported written"
        );
        assert!(!lock(&writer.files).open.is_open("victim"));
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
    /// Under the process's file limit (an eighth of it, up to 128) a team of 40 keeps its 40
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
