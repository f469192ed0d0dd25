//! What every front end uses to talk to the host: connect (starting the host when none runs and
//! the front end needs one), send requests, read what comes back.

use std::io;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::config::{Config, Paths};
use crate::env::Env;

use super::protocol::{self, ClientMessage, Hello, HostMessage, PROTOCOL, Reply, Request, read_line};

/// How long a front end tries to reach a host (starting one, waiting for one that is exiting).
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
/// How long a host that took the connection may take to greet, and to answer a short request
/// (`ps`, `stop`, `quit`, an answer): a host that does not is stopped, wedged or swapped out,
/// and the front end says so rather than waiting for ever.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(10);
/// How long a host may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No host runs (and the front end did not ask to start one).
    #[error("no huddle host runs on this data dir")]
    NotRunning,
    /// The host would not take this front end (another version).
    #[error("{0}")]
    Refused(String),
    /// The host could not start: why (a corrupt organization, a data dir held by another huddle).
    #[error("{0}")]
    Start(String),
    #[error("{0}")]
    Io(String),
}

impl Hello {
    /// A front end of kind `front` working in `repo`, starting no work of its own.
    pub fn new(front: &str, repo: &Path) -> Hello {
        Hello {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").to_string(),
            front: front.to_string(),
            pid: std::process::id(),
            repo: repo.to_path_buf(),
            config: None,
            env: Default::default(),
            terminal: false,
            color: false,
        }
    }

    /// With the configuration and environment its work runs with (this process's), and
    /// whether it sits at a terminal.
    pub fn with_work(mut self, config: Config, terminal: bool) -> Hello {
        self.config = Some(config);
        self.env = Env::capture();
        self.terminal = terminal;
        self.color =
            std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none();
        self
    }
}

/// The host's greeting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Welcome {
    pub pid: u32,
    pub version: String,
    pub notices: Vec<String>,
}

/// A connection to the host, greeted.
pub struct Client {
    pub welcome: Welcome,
    reader: Reader,
    writer: Writer,
}

/// The connection's reading half.
pub struct Reader {
    inner: BufReader<OwnedReadHalf>,
}

/// The connection's writing half: requests, each with its id.
pub struct Writer {
    inner: OwnedWriteHalf,
    next_id: u64,
}

impl Reader {
    /// The next message; `None` when the host closed the connection.
    pub async fn next(&mut self) -> Result<Option<HostMessage>, ClientError> {
        match read_line(&mut self.inner).await {
            Ok(Some(line)) => protocol::decode::<HostMessage>(&line)
                .map(Some)
                .map_err(|e| ClientError::Io(format!("the huddle host sent an {e}"))),
            Ok(None) => Ok(None),
            Err(e) => Err(ClientError::Io(format!("cannot read from the huddle host: {e}"))),
        }
    }
}

impl Writer {
    /// The id the next request will have.
    pub fn next_id(&self) -> u64 {
        self.next_id + 1
    }

    /// Sends a request; its id.
    pub async fn send(&mut self, request: Request) -> Result<u64, ClientError> {
        self.next_id += 1;
        let id = self.next_id;
        let line = protocol::encode(&ClientMessage::Request {
            id,
            request: Box::new(request),
        });
        self.inner
            .write_all(line.as_bytes())
            .await
            .map_err(|e| ClientError::Io(format!("cannot write to the huddle host: {e}")))?;
        Ok(id)
    }
}

impl Client {
    /// Connects to the data dir's host; with `start`, starts one first when none runs (for work
    /// in `repo`).
    pub async fn connect(paths: &Paths, hello: &Hello, start: bool) -> Result<Client, ClientError> {
        let deadline = tokio::time::Instant::now() + CONNECT_DEADLINE;
        let mut started = false;
        loop {
            match attempt(paths, hello).await {
                Ok(client) => return Ok(client),
                Err(Attempt::Absent) if !start => return Err(ClientError::NotRunning),
                Err(Attempt::Absent) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(ClientError::Start(
                            "the huddle host did not start in time (see the log in the data dir)".into(),
                        ));
                    }
                    if started {
                        // It said ready but went (it was idle and exiting): once more.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    spawn_host(&hello.repo).await?;
                    started = true;
                }
                Err(Attempt::Closed) => {
                    // A host exiting took the connection and closed it: a new one comes.
                    if tokio::time::Instant::now() >= deadline {
                        return Err(ClientError::Io(
                            "the huddle host closed every connection (see the log in the data dir)".into(),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(Attempt::Failed(e)) => return Err(e),
            }
        }
    }

    /// The two halves, to read and write at once.
    pub fn split(self) -> (Reader, Writer) {
        (self.reader, self.writer)
    }

    /// Sends a request and waits for its reply (pushed messages meanwhile are dropped): the
    /// reply, or the exit code and message of a failure.
    pub async fn call(&mut self, request: Request) -> Result<Reply, (u8, String)> {
        let pid = self.welcome.pid;
        tokio::time::timeout(ANSWER_DEADLINE, self.call_unbounded(request))
            .await
            .unwrap_or_else(|_| Err((1, does_not_answer(Some(pid.to_string())))))
    }

    async fn call_unbounded(&mut self, request: Request) -> Result<Reply, (u8, String)> {
        let id = self.writer.send(request).await.map_err(|e| (1, e.to_string()))?;
        loop {
            match self.reader.next().await.map_err(|e| (1, e.to_string()))? {
                Some(HostMessage::Reply { id: got, reply }) if got == id => return Ok(reply),
                Some(HostMessage::Failed {
                    id: got,
                    code,
                    message,
                }) if got == id => return Err((code, message)),
                Some(_) => {}
                None => return Err((1, "the huddle host went away".into())),
            }
        }
    }
}

/// A greeted connection used from a blocking thread: one request at a time, each waiting for
/// its answer (a TUI's edits: the UI goes on with the result).
pub struct BlockingClient {
    stream: std::os::unix::net::UnixStream,
    reader: std::io::BufReader<std::os::unix::net::UnixStream>,
    next_id: u64,
    /// The host's, for what is said when it does not answer.
    pid: u32,
    /// How long it waits for an answer.
    deadline: Duration,
}

impl Client {
    /// This connection as a [`BlockingClient`] (asked nothing yet, so nothing is buffered).
    pub fn into_blocking(self) -> Result<BlockingClient, ClientError> {
        let io = |e: io::Error| ClientError::Io(format!("cannot use the huddle host's connection: {e}"));
        let stream = self
            .reader
            .inner
            .into_inner()
            .reunite(self.writer.inner)
            .map_err(|e| ClientError::Io(e.to_string()))?;
        let stream = stream.into_std().map_err(io)?;
        stream.set_nonblocking(false).map_err(io)?;
        // A host that does not answer (stopped, stuck) is said to, not waited for for ever.
        BlockingClient::on(stream, self.writer.next_id, self.welcome.pid, ANSWER_DEADLINE).map_err(io)
    }
}

impl BlockingClient {
    fn on(
        stream: std::os::unix::net::UnixStream,
        next_id: u64,
        pid: u32,
        deadline: Duration,
    ) -> io::Result<BlockingClient> {
        stream.set_read_timeout(Some(deadline))?;
        stream.set_write_timeout(Some(deadline))?;
        Ok(BlockingClient {
            reader: std::io::BufReader::new(stream.try_clone()?),
            stream,
            next_id,
            pid,
            deadline,
        })
    }
}

impl BlockingClient {
    /// Sends a request and waits for its reply: the reply, or the exit code and message of a
    /// failure.
    pub fn call(&mut self, request: Request) -> Result<Reply, (u8, String)> {
        use std::io::{BufRead, Read, Write};
        self.next_id += 1;
        let id = self.next_id;
        let line = protocol::encode(&ClientMessage::Request {
            id,
            request: Box::new(request),
        });
        let (pid, deadline) = (self.pid, self.deadline);
        let failed = |e: io::Error, what: &str| {
            if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) {
                // A host may be busy with it (a slow edit), not stuck: nobody is told to kill it.
                (1, did_not_answer_in_time(pid, deadline))
            } else {
                (1, format!("cannot {what} the huddle host: {e}"))
            }
        };
        self.stream
            .write_all(line.as_bytes())
            .map_err(|e| failed(e, "write to"))?;
        loop {
            let mut bytes = Vec::new();
            let n = (&mut self.reader)
                .take(protocol::MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut bytes)
                .map_err(|e| failed(e, "read from"))?;
            if n == 0 {
                return Err((1, "the huddle host went away".into()));
            }
            let line = String::from_utf8_lossy(&bytes);
            // A line cut by an earlier call's timeout (or one it does not know) is not this
            // call's answer.
            let Ok(message) = protocol::decode::<HostMessage>(&line) else {
                continue;
            };
            match message {
                HostMessage::Reply { id: got, reply } if got == id => return Ok(reply),
                HostMessage::Failed {
                    id: got,
                    code,
                    message,
                } if got == id => return Err((code, message)),
                _ => {}
            }
        }
    }
}

impl crate::workspace::EditTransport for BlockingClient {
    fn call(
        &mut self,
        call: crate::workspace::EditCall,
    ) -> Result<(serde_json::Value, Option<(crate::model::Organization, u64)>), String> {
        match BlockingClient::call(self, Request::Edit { call }) {
            Ok(Reply::Edited { result, org, version }) => Ok((result, Some((*org, version)))),
            Ok(other) => Err(format!("the huddle host answered an edit with {other:?}")),
            Err((_, why)) => Err(why),
        }
    }
}

enum Attempt {
    /// Nobody listens (no socket, or a dead host's).
    Absent,
    /// Connected, then closed before the greeting.
    Closed,
    Failed(ClientError),
}

async fn attempt(paths: &Paths, hello: &Hello) -> Result<Client, Attempt> {
    let path = paths.run_socket();
    let stream = match UnixStream::connect(&path).await {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Err(Attempt::Absent);
        }
        // A host exiting at that moment.
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Err(Attempt::Closed),
        Err(e) => {
            return Err(Attempt::Failed(ClientError::Io(format!(
                "cannot reach the huddle host at {}: {e}",
                path.display()
            ))));
        }
    };
    // The socket sits in our private data dir; a listener of another user is never used.
    match stream.peer_cred() {
        Ok(cred) if super::server::same_user(cred.uid()) => {}
        Ok(cred) => {
            return Err(Attempt::Failed(ClientError::Refused(format!(
                "{} is served by a process of another user (uid {}); huddle does not use it",
                path.display(),
                cred.uid()
            ))));
        }
        Err(e) => {
            return Err(Attempt::Failed(ClientError::Io(format!(
                "cannot tell who serves {}: {e}",
                path.display()
            ))));
        }
    }
    let (read, write) = stream.into_split();
    let mut reader = Reader {
        inner: BufReader::new(read),
    };
    let mut writer = Writer {
        inner: write,
        next_id: 0,
    };
    let line = protocol::encode(&ClientMessage::Hello(Box::new(hello.clone())));
    if writer.inner.write_all(line.as_bytes()).await.is_err() {
        return Err(Attempt::Closed);
    }
    let Ok(greeting) = tokio::time::timeout(ANSWER_DEADLINE, reader.next()).await else {
        let pid = crate::store::DataDirLock::holder(&paths.lock_file());
        return Err(Attempt::Failed(ClientError::Io(does_not_answer(pid))));
    };
    match greeting {
        Ok(Some(HostMessage::Welcome {
            pid,
            version,
            notices,
            ..
        })) => Ok(Client {
            welcome: Welcome {
                pid,
                version,
                notices,
            },
            reader,
            writer,
        }),
        Ok(Some(HostMessage::Refused { message })) => Err(Attempt::Failed(ClientError::Refused(message))),
        Ok(Some(other)) => Err(Attempt::Failed(ClientError::Io(format!(
            "the huddle host greeted with {other:?}"
        )))),
        Ok(None) | Err(_) => Err(Attempt::Closed),
    }
}

/// Starts `huddle host` for this data dir (this executable, in its own session, its standard
/// streams not ours) and waits until it says it is ready, or why it cannot be.
async fn spawn_host(repo: &Path) -> Result<(), ClientError> {
    let exe = std::env::current_exe()
        .map_err(|e| ClientError::Start(format!("cannot find huddle's own executable: {e}")))?;
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg("--repo")
        .arg(repo)
        .arg("host")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: setsid(2) is async-signal-safe; nothing else runs between fork and exec. The
        // host leaves our session: our terminal's Ctrl-C and hang-up are not its.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| ClientError::Start(format!("cannot start the huddle host ({}): {e}", exe.display())))?;
    let Some(stdout) = child.stdout.take() else {
        return Err(ClientError::Start(
            "cannot read from the starting huddle host".into(),
        ));
    };
    // Its first line, read off the async threads.
    let said = tokio::time::timeout(
        START_TIMEOUT,
        tokio::task::spawn_blocking(move || {
            use std::io::BufRead;
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            line
        }),
    )
    .await;
    // Reaped when it ends, whether before us or not.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    let line = match said {
        Ok(Ok(line)) => line,
        Ok(Err(e)) => return Err(ClientError::Start(format!("the huddle host did not answer: {e}"))),
        Err(_) => {
            return Err(ClientError::Start(format!(
                "the huddle host did not say it was ready within {}s (see the log in the data dir)",
                START_TIMEOUT.as_secs()
            )));
        }
    };
    let line = line.trim();
    if line == "ready" {
        return Ok(());
    }
    if let Some(why) = line.strip_prefix("error: ") {
        return Err(ClientError::Start(why.to_string()));
    }
    Err(ClientError::Start(
        "the huddle host ended as it started (see the log in the data dir)".into(),
    ))
}

/// What a front end says of a host that took its connection and does not answer.
/// An edit not answered within `deadline`: it may still be made.
fn did_not_answer_in_time(pid: u32, deadline: Duration) -> String {
    let within = if deadline.as_secs() > 0 {
        format!("{} s", deadline.as_secs())
    } else {
        format!("{} ms", deadline.as_millis())
    };
    format!(
        "the huddle host (pid {pid}) did not answer within {within} (busy, stopped or stuck?); what it was asked may still happen (see the log in the data dir's logs folder)"
    )
}

fn does_not_answer(pid: Option<String>) -> String {
    match pid {
        Some(pid) => format!(
            "the huddle host (pid {pid}) does not answer (stopped or stuck?); see the log in the data dir's logs folder, or end it with `kill {pid}`"
        ),
        None => {
            "the huddle host does not answer (stopped or stuck?); see the log in the data dir's logs folder"
                .into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_to_a_host_that_does_not_answer_fails_and_says_so() {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        let mut client = BlockingClient::on(ours, 0, 4242, Duration::from_millis(50)).expect("client");
        let (code, message) = client.call(Request::Ps).expect_err("no answer comes");
        assert_eq!(code, 1);
        assert!(
            message.contains("the huddle host (pid 4242) did not answer within 50 ms"),
            "{message}"
        );
        assert!(
            !message.contains("kill"),
            "a host that may be busy is not to be killed: {message}"
        );
        // Its late answer is not taken for the next call's.
        use std::io::Write;
        let mut theirs = theirs;
        let late = protocol::encode(&HostMessage::Reply {
            id: 1,
            reply: Reply::Done,
        });
        let now = protocol::encode(&HostMessage::Reply {
            id: 2,
            reply: Reply::Runs { runs: Vec::new() },
        });
        theirs
            .write_all(format!("{late}{now}").as_bytes())
            .expect("write");
        assert!(matches!(client.call(Request::Ps), Ok(Reply::Runs { .. })));
    }
}
