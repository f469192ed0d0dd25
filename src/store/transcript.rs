//! Transcripts: `sessions/<session-id>.jsonl`, one JSON message per line, append-only.
//!
//! Lines are never rewritten, so a crash can at worst tear the line being written; loading
//! ignores such a line with a warning and keeps everything before it. Runs write them through
//! a [`super::TranscriptWriter`] (`transcript_writer.rs`).

use std::fs;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::model::Message;

use super::StoreError;
use super::private::{create_private_dir, private_file};
use super::regular::{read_regular, regular_only};

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
        self.load_upto(session_id, None)
    }

    /// Reads a session's messages from the first `upto` bytes of its file (all of it with
    /// `None`): what was written whole when its length was taken, not a line being written now.
    pub(super) fn load_upto(
        &self,
        session_id: &str,
        upto: Option<u64>,
    ) -> Result<LoadedTranscript, StoreError> {
        let path = self.path(session_id)?;
        let text = match read_regular(&path) {
            Ok(mut bytes) => {
                if let Some(upto) = upto.and_then(|n| usize::try_from(n).ok()) {
                    bytes.truncate(upto);
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
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
/// a newline is added first, so the next message is not glued to the fragment.
/// Also says whether the file is empty (new, in practice).
pub(super) fn open_for_append(path: &Path) -> Result<(fs::File, bool), StoreError> {
    let mut file = open_append(path)?;
    let end = end_of(&mut file).map_err(|e| StoreError::io("cannot read", path, e))?;
    if end == FileEnd::MidLine {
        file.write_all(b"\n")
            .map_err(|e| StoreError::io("cannot append to", path, e))?;
    }
    Ok((file, end == FileEnd::Empty))
}

/// Messages as transcript lines, each with its newline.
pub(super) fn lines_of(messages: &[Message]) -> Result<Vec<u8>, StoreError> {
    let room = messages.iter().map(line_room).sum();
    let mut lines = Vec::with_capacity(room);
    write_lines(&mut lines, messages)?;
    Ok(lines)
}

/// Room for a message's line: its text and the fields around it, one allocation for most lines
/// (a long answer's line does not grow by doubling).
fn line_room(message: &Message) -> usize {
    message.text.len() + 256
}

fn write_lines(out: &mut Vec<u8>, messages: &[Message]) -> Result<(), StoreError> {
    for message in messages {
        serde_json::to_writer(&mut *out, message).map_err(|e| StoreError::Serialize(e.to_string()))?;
        out.push(b'\n');
    }
    Ok(())
}

/// A line buffer kept by each thread that writes transcripts at most this large between lines
/// (a long answer's line is not held for the thread's life).
const LINE_BUFFER_KEPT: usize = 64 * 1024;

thread_local! {
    static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f` of `message` as its transcript line (with its newline), made in this thread's buffer:
/// a line written where it is made (most are) costs no allocation of its own.
pub(super) fn with_line<R>(message: &Message, f: impl FnOnce(&[u8]) -> R) -> Result<R, StoreError> {
    // Taken out while `f` runs (a line made inside it gets a buffer of its own, not a second
    // borrow); none when the thread is ending and its buffer is gone.
    let mut line = LINE
        .try_with(|buffer| std::mem::take(&mut *buffer.borrow_mut()))
        .unwrap_or_default();
    line.clear();
    line.reserve(line_room(message));
    let result = write_lines(&mut line, std::slice::from_ref(message)).map(|()| f(&line));
    if line.capacity() <= LINE_BUFFER_KEPT {
        let _ = LINE.try_with(|buffer| *buffer.borrow_mut() = line);
    }
    result
}

/// Opens a transcript to append to (created 0600), as it is; only a regular file (a FIFO put
/// where a transcript was is refused at once, never written into until its buffer fills and
/// the writer waits for ever).
pub(super) fn open_append(path: &Path) -> Result<fs::File, StoreError> {
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

    /// The thread's buffer: its address and capacity.
    fn kept_buffer() -> (usize, usize) {
        LINE.with(|b| {
            let b = b.borrow();
            (b.as_ptr() as usize, b.capacity())
        })
    }

    #[test]
    fn a_line_is_made_in_the_threads_buffer_which_is_kept_unless_it_grew_large() {
        std::thread::spawn(|| {
            let small = Message::assistant("a short answer");
            let line = with_line(&small, <[u8]>::to_vec).unwrap();
            assert_eq!(line, lines_of(std::slice::from_ref(&small)).unwrap());
            assert!(line.ends_with(b"}\n"));
            let (at, room) = kept_buffer();
            assert!(room >= line.len(), "kept for the next line");
            // The next line is made in the same buffer; one made while it is out gets its own.
            let other = Message::user("a question");
            let (outer, inner) = with_line(&small, |outer| {
                (outer.to_vec(), with_line(&other, <[u8]>::to_vec).unwrap())
            })
            .unwrap();
            assert_eq!(outer, line);
            assert_eq!(inner, lines_of(std::slice::from_ref(&other)).unwrap());
            assert_eq!(kept_buffer().0, at, "the same buffer");
            // A long answer's buffer is let go.
            let long = Message::assistant("x".repeat(LINE_BUFFER_KEPT * 2));
            let line = with_line(&long, <[u8]>::len).unwrap();
            assert!(line > LINE_BUFFER_KEPT * 2);
            assert!(kept_buffer().1 <= LINE_BUFFER_KEPT, "{:?}", kept_buffer());
        })
        .join()
        .unwrap();
    }

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
}
