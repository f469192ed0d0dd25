//! The transcript writer's open files and their group syncs: at most a bounded number of
//! transcripts open (one chosen at random closed to open another), which have lines not
//! synced yet, and the thread that syncs them in groups while writing goes on.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[cfg(test)]
use crate::model::Message;

use super::StoreError;
use super::private::create_private_dir;
use super::regular::open_regular;
#[cfg(test)]
use super::transcript::lines_of;
use super::transcript::{Transcripts, open_append, open_for_append};

/// Transcript files the writer keeps open at most under a low open-file limit (the sessions
/// writing now, in practice; see [`open_max_of_process`] for the bound it uses): one is closed
/// to open another, so a long-lived process holds a bounded number of file handles however many
/// sessions it ever wrote to.
pub(crate) const OPEN_MAX: usize = 16;
/// The most a process whose file limit allows it keeps open (see [`open_max_of_process`]).
const OPEN_MOST: usize = 128;

/// How many transcripts the writer keeps open: an eighth of the process's open-file limit,
/// [`OPEN_MAX`] at least and [`OPEN_MOST`] at most (16 under `ulimit -n 128` or lower, 128 under
/// the usual 1,024: a team of 64 and its lead keep their files open; at 64, one over, a team
/// that size opened about two files a run, a tenth of its engine's time). A team larger than
/// the bound opens and closes files as it writes (see [`OpenTranscripts::close_one`]).
pub(super) fn open_max_of_process() -> usize {
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
    usize::try_from(soft / 8)
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

/// The writer's open files: each opened once while in use (its torn-line check done then),
/// the folder created once, and which have lines not yet synced.
#[derive(Default)]
pub(super) struct OpenTranscripts {
    dir_ready: bool,
    /// A transcript was created since the last group: the folder is synced with the group too,
    /// or a power loss could take the new file's name (and all its synced lines) with it.
    folder_unsynced: bool,
    /// Each open file, by session.
    pub(super) files: HashMap<String, fs::File>,
    /// How many files are kept open at most.
    open_max: OpenBound,
    /// Chooses the file closed to open another (see [`OpenTranscripts::close_one`]); seeded the
    /// same always, and choosing among the open sessions in the order of their ids, so that a
    /// run of tests closes the same files each time.
    chooser: Chooser,
    /// Sessions with lines not synced yet, open or closed since (a transcript closed to open
    /// another is synced with the window's group, by its path, not on its own when closed).
    unsynced: HashSet<String>,
    pub(super) unsynced_since: Option<Instant>,
    /// Transcripts known to end with a whole line (checked when first opened, and written only
    /// whole lines since): opened again without reading their end (in a team larger than the
    /// bound, files are closed and opened again all the time).
    whole: HashSet<String>,
    /// `fdatasync` calls made by [`OpenTranscripts::sync`] (tests count them).
    #[cfg(test)]
    syncs: u64,
    /// Files whose end was read to check for a torn line (tests count them).
    #[cfg(test)]
    end_checks: u64,
    /// Files opened (tests count them).
    #[cfg(test)]
    opens: u64,
}

/// A generator of the indices [`OpenTranscripts::close_one`] picks.
struct Chooser(fastrand::Rng);

impl Default for Chooser {
    fn default() -> Chooser {
        Chooser(fastrand::Rng::with_seed(0x6875_6464_6c65))
    }
}

impl OpenTranscripts {
    /// No file open yet; at most `open_max` open at once.
    pub(super) fn bounded(open_max: usize) -> OpenTranscripts {
        OpenTranscripts {
            open_max: OpenBound(open_max),
            ..OpenTranscripts::default()
        }
    }

    /// What opening `session_id`'s transcript takes: decided here, done by [`ToOpen::open`]
    /// (which may read the file's end from disk: the writer's thread does it without holding
    /// what appenders share), and the file handed back with [`OpenTranscripts::opened`].
    pub(super) fn to_open(&self, transcripts: &Transcripts, session_id: &str) -> Result<ToOpen, StoreError> {
        Ok(ToOpen {
            path: transcripts.path(session_id)?,
            folder: (!self.dir_ready).then(|| transcripts.dir().to_path_buf()),
            known_whole: self.whole.contains(session_id),
        })
    }

    /// Takes a file [`ToOpen::open`] opened for `session_id`, closing another (at random)
    /// one first when as many as the bound are open.
    pub(super) fn opened(&mut self, session_id: &str, opened: Opened) {
        // Opened: its folder exists.
        self.dir_ready = true;
        if self.files.len() >= self.open_max.0 {
            self.close_one();
        }
        #[cfg(test)]
        {
            self.opens += 1;
        }
        if opened.checked {
            // A new file's name is synced with the group, in its folder.
            self.folder_unsynced |= opened.created;
            #[cfg(test)]
            {
                self.end_checks += 1;
            }
            self.whole.insert(session_id.to_string());
        }
        self.files.insert(session_id.to_string(), opened.file);
    }

    /// How long `session_id`'s open transcript is now (`None`: it is not open). Taken under the
    /// writer's lock, where every line is written whole, so it ends a line.
    pub(super) fn length_of(&self, session_id: &str) -> Option<u64> {
        let file = self.files.get(session_id)?;
        file.metadata().ok().map(|m| m.len())
    }

    /// Whether `session_id`'s transcript is open (a line for it is written without opening).
    pub(super) fn is_open(&self, session_id: &str) -> bool {
        self.files.contains_key(session_id)
    }

    fn file(&mut self, transcripts: &Transcripts, session_id: &str) -> Result<&mut fs::File, StoreError> {
        if !self.files.contains_key(session_id) {
            let opened = self.to_open(transcripts, session_id)?.open()?;
            self.opened(session_id, opened);
        }
        self.files
            .get_mut(session_id)
            .ok_or_else(|| StoreError::SaveFailed(format!("transcript {session_id} is not open")))
    }

    /// Closes an open file, chosen at random: a team larger than the bound writes its members
    /// in turn, and the file written least recently is the one needed next, so closing it made
    /// every line of such a team open a file (65 members over 64 files: 65 opens a round; at
    /// random, about 2). Its lines are synced with the window's group, not now: a sync of its
    /// own each time would be one `fdatasync` per open.
    fn close_one(&mut self) {
        if self.files.is_empty() {
            return;
        }
        // In the ids' order (a map's own order changes from one process to the next).
        let mut ids: Vec<&String> = self.files.keys().collect();
        ids.sort_unstable();
        let pick = self.chooser.0.usize(..ids.len());
        if let Some(id) = ids.get(pick).map(|id| id.to_string()) {
            self.close(&id);
        }
    }

    /// Closes a session's file; lines not synced yet stay in [`OpenTranscripts::unsynced`].
    pub(super) fn close(&mut self, session_id: &str) {
        self.files.remove(session_id);
    }

    /// Closes every file, returning what is left to sync of them. What is known of their ends
    /// is forgotten too: another process may write them before they are opened again.
    pub(super) fn close_all(&mut self) -> SyncJob {
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
    pub(super) fn append_lines(
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
        // (An id made only for a session not in the group yet: most lines' are.)
        if !self.unsynced.contains(session_id) {
            self.unsynced.insert(session_id.to_string());
        }
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
    pub(super) fn take_unsynced(&mut self) -> SyncJob {
        self.unsynced_since = None;
        SyncJob {
            ids: std::mem::take(&mut self.unsynced).into_iter().collect(),
            folder: std::mem::take(&mut self.folder_unsynced),
            done: Vec::new(),
        }
    }
}

/// A transcript to open (see [`OpenTranscripts::to_open`]).
pub(super) struct ToOpen {
    path: PathBuf,
    /// The transcripts' folder, when not known to exist yet.
    folder: Option<PathBuf>,
    /// The file is known to end with a whole line (this writer wrote it last): not read again.
    known_whole: bool,
}

/// A transcript [`ToOpen::open`] opened.
pub(super) struct Opened {
    file: fs::File,
    /// It was empty (new, in practice).
    created: bool,
    /// Its end was read (and a torn line ended).
    checked: bool,
}

impl ToOpen {
    /// Opens the file (created 0600, only a regular file), its folder created first if need be;
    /// a file not known to end whole has its end read, and a torn line ended.
    pub(super) fn open(self) -> Result<Opened, StoreError> {
        if let Some(folder) = &self.folder {
            create_private_dir(folder).map_err(|e| StoreError::io("cannot create", folder, e))?;
        }
        if self.known_whole {
            return Ok(Opened {
                file: open_append(&self.path)?,
                created: false,
                checked: false,
            });
        }
        let (file, empty) = open_for_append(&self.path)?;
        Ok(Opened {
            file,
            created: empty,
            checked: true,
        })
    }
}

/// A group of transcripts to sync, by session id, and who waits for them (a flush). Ids, not
/// open files: groups that queue up while the disk is slow hold no file handles.
#[derive(Default)]
pub(super) struct SyncJob {
    ids: Vec<String>,
    /// The transcripts' folder too (a transcript was created).
    folder: bool,
    pub(super) done: Vec<std::sync::mpsc::Sender<()>>,
}

impl SyncJob {
    pub(super) fn is_empty(&self) -> bool {
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
    pub(super) fn run(self, transcripts: &Transcripts) -> u64 {
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
/// more. Groups that arrive while one is synced, or while the syncer rests after one (see
/// [`rest_after`]), are merged into one; a flush waiting for its group ends the rest.
pub(super) struct Syncer {
    tx: Option<std::sync::mpsc::Sender<SyncJob>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How long the syncer rests after a group whose syncs took `cpu` of its thread's time: ten
/// times that, at most [`REST_MOST`], so syncing takes about a tenth of a core at most (more
/// only when a group's syncs take over 50 ms of CPU: then a group every half second). A few
/// transcripts (a group's syncs take well under a millisecond) are still synced every 20 ms;
/// a team of 64 writing at once (65 `fdatasync`s, 2-6 ms of CPU in a VM) every 30-70 ms
/// instead of spending a quarter of the engine's time syncing (docs/benchmarks.md, session 14).
pub(super) fn rest_after(cpu: Duration) -> Duration {
    (cpu * REST_PER_CPU).min(REST_MOST)
}

const REST_PER_CPU: u32 = 10;
/// However slow the syncs, a group waits at most this long after the one before.
const REST_MOST: Duration = Duration::from_millis(500);

/// The calling thread's CPU time so far (the wall's where the OS has no such clock).
fn thread_cpu_time() -> Duration {
    #[cfg(unix)]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes into the timespec it is given.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } == 0 {
            return Duration::new(now.tv_sec as u64, now.tv_nsec as u32);
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

impl Syncer {
    pub(super) fn start(transcripts: &Transcripts) -> Syncer {
        let (tx, rx) = std::sync::mpsc::channel::<SyncJob>();
        let transcripts = transcripts.clone();
        let thread = std::thread::Builder::new()
            .name("huddle-sync".into())
            .spawn(move || {
                let mut rested_until: Option<Instant> = None;
                while let Ok(mut job) = rx.recv() {
                    gather(&rx, &mut job, rested_until);
                    let before = thread_cpu_time();
                    job.run(&transcripts);
                    let cpu = thread_cpu_time().saturating_sub(before);
                    rested_until = Some(Instant::now() + rest_after(cpu));
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
    pub(super) fn sync(&self, transcripts: &Transcripts, job: SyncJob) {
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

/// Merges into `job` the groups that come until `until` (the rest after the last group), or
/// at once when a flush waits or the writer is gone: what is handed over meanwhile is synced
/// together.
fn gather(rx: &std::sync::mpsc::Receiver<SyncJob>, job: &mut SyncJob, until: Option<Instant>) {
    loop {
        while let Ok(more) = rx.try_recv() {
            job.merge(more);
        }
        if !job.done.is_empty() {
            return;
        }
        let left = until.and_then(|t| t.checked_duration_since(Instant::now()));
        let Some(left) = left.filter(|left| !left.is_zero()) else {
            return;
        };
        match rx.recv_timeout(left) {
            Ok(more) => job.merge(more),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;
    use std::sync::mpsc;

    fn job(ids: &[&str], waiter: Option<mpsc::Sender<()>>) -> SyncJob {
        SyncJob {
            ids: ids.iter().map(|id| id.to_string()).collect(),
            folder: false,
            done: waiter.into_iter().collect(),
        }
    }

    #[test]
    fn the_syncer_rests_ten_times_a_groups_cpu_time_and_at_most_half_a_second() {
        assert_eq!(rest_after(Duration::from_micros(300)), Duration::from_millis(3));
        assert_eq!(rest_after(Duration::from_millis(4)), Duration::from_millis(40));
        assert_eq!(rest_after(Duration::from_secs(2)), REST_MOST);
        assert_eq!(rest_after(Duration::ZERO), Duration::ZERO);
    }

    /// Groups handed over while the syncer rests are synced together, once the rest is over.
    #[test]
    fn groups_that_come_during_the_rest_are_merged() {
        let (tx, rx) = mpsc::channel();
        tx.send(job(&["b", "c"], None)).unwrap();
        tx.send(job(&["c", "d"], None)).unwrap();
        let mut first = job(&["a"], None);
        let rest_over = Instant::now() + Duration::from_millis(30);
        gather(&rx, &mut first, Some(rest_over));
        assert_eq!(first.ids, ["a", "b", "c", "d"]);
        assert!(rx.try_recv().is_err(), "all of them taken");
        // One that comes later in the rest: waited for (here until the writer goes away).
        let (tx_late, rx_late) = mpsc::channel();
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx_late.send(job(&["late"], None)).unwrap();
        });
        let mut during = job(&["a"], None);
        gather(
            &rx_late,
            &mut during,
            Some(Instant::now() + Duration::from_secs(60)),
        );
        assert_eq!(during.ids, ["a", "late"]);
        late.join().unwrap();
        // Without a rest (the first group, or a rest that is over): only what is queued.
        tx.send(job(&["e"], None)).unwrap();
        let mut next = job(&["f"], None);
        gather(&rx, &mut next, None);
        assert_eq!(next.ids, ["f", "e"]);
    }

    /// A flush waits for its group to be synced: it ends the rest at once, as does the writer
    /// going away (what it handed over is synced before it is gone). The rest here is an hour:
    /// without that the test hangs and its guard fails it.
    #[test]
    fn a_flush_or_the_writer_going_away_ends_the_rest() {
        let an_hour = Some(Instant::now() + Duration::from_secs(3600));
        for flushed in [true, false] {
            let (tx, rx) = mpsc::channel();
            let (done_tx, done_rx) = mpsc::channel();
            let gathering = std::thread::spawn(move || {
                let mut first = job(&["a"], None);
                gather(&rx, &mut first, an_hour);
                first.ids
            });
            tx.send(job(&["b"], None)).unwrap();
            if flushed {
                tx.send(job(&["c"], Some(done_tx))).unwrap();
            } else {
                drop(done_tx);
                drop(tx);
            }
            let (ids_tx, ids_rx) = mpsc::channel();
            std::thread::spawn(move || ids_tx.send(gathering.join().unwrap()));
            let ids = ids_rx
                .recv_timeout(Duration::from_secs(120))
                .expect("the rest ended");
            let expected: &[&str] = if flushed { &["a", "b", "c"] } else { &["a", "b"] };
            assert_eq!(ids, expected);
            drop(done_rx);
        }
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

    /// A team one larger than the bound, writing its members in turn: the file closed to open
    /// another is chosen at random, not the least recently written (the one needed next, which
    /// made every line open a file).
    #[test]
    fn a_team_just_larger_than_the_bound_does_not_open_a_file_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcripts::new(dir.path().join("sessions"));
        let mut open = OpenTranscripts::bounded(16);
        for round in 0..20 {
            for k in 0..17 {
                open.append(&t, &format!("s{k}"), &[Message::user(format!("{round}"))])
                    .unwrap();
            }
        }
        assert!(open.files.len() <= 16);
        assert!(open.opens < 17 + 20 * 8, "{} opens for 340 lines", open.opens);
        let texts: Vec<String> = t
            .load("s3")
            .unwrap()
            .messages
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(texts.len(), 20, "nothing lost to the closes");
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
    /// An eighth of the open-file limit, 16 at least (issue 28 item 4's `ulimit -n 128`), 128
    /// at most (an unlimited one too).
    #[test]
    fn the_open_files_bound_follows_the_processs_limit() {
        assert_eq!(open_max_for(0), 16);
        assert_eq!(open_max_for(128), 16);
        assert_eq!(open_max_for(256), 32);
        assert_eq!(open_max_for(512), 64);
        assert_eq!(open_max_for(1024), 128);
        assert_eq!(open_max_for(u64::MAX), 128);
    }
}
