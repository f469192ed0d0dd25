//! What the host has to send to one front end, bounded: a front end that stops reading (a
//! suspended TUI, a wedged client) cannot make the host grow. Messages are kept as the lines
//! they go out as; the organization is kept once (only its newest snapshot waits, sent before
//! anything queued after it); when more than [`LIMIT`] bytes wait, the front end is cut off (it
//! sees the host go and can connect again) rather than the host holding on to everything.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use super::protocol::{self, HostMessage};

/// How many bytes may wait for one front end before it is cut off.
pub const LIMIT: usize = 16 * 1024 * 1024;

#[derive(Default)]
struct State {
    lines: VecDeque<String>,
    /// Bytes in `lines`.
    bytes: usize,
    /// The newest organization snapshot not sent yet.
    org: Option<String>,
    /// Nothing more is taken: the receiver went, the senders went, or it overflowed.
    closed: bool,
    overflowed: bool,
    senders_gone: bool,
}

impl State {
    /// The next line to go: the newest organization first, then the queue in order.
    fn take(&mut self) -> Option<String> {
        if let Some(org) = self.org.take() {
            return Some(org);
        }
        let line = self.lines.pop_front()?;
        self.bytes -= line.len();
        Some(line)
    }
}

struct Inner {
    state: Mutex<State>,
    /// Something was queued, or it closed.
    queued: Notify,
    /// Something was taken, or it closed.
    taken: Notify,
    limit: usize,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn close(&self, overflowed: bool) {
        {
            let mut s = self.state();
            s.closed = true;
            s.overflowed |= overflowed;
            s.lines.clear();
            s.bytes = 0;
            s.org = None;
        }
        self.queued.notify_waiters();
        self.taken.notify_waiters();
    }
}

/// Marks the senders gone when the last [`Outbox`] clone goes.
struct Senders(Arc<Inner>);

impl Drop for Senders {
    fn drop(&mut self) {
        self.0.state().senders_gone = true;
        self.0.queued.notify_waiters();
    }
}

/// The sending side (cloned freely: replies, followers of events and the organization).
#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Inner>,
    _senders: Arc<Senders>,
}

/// The receiving side: the task that writes to the socket.
pub struct Receiver {
    inner: Arc<Inner>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.inner.close(false);
    }
}

/// A bounded outbox and its receiver.
pub fn outbox() -> (Outbox, Receiver) {
    with_limit(LIMIT)
}

/// An outbox cut off at `limit` bytes waiting.
pub fn with_limit(limit: usize) -> (Outbox, Receiver) {
    let inner = Arc::new(Inner {
        state: Mutex::new(State::default()),
        queued: Notify::new(),
        taken: Notify::new(),
        limit,
    });
    let outbox = Outbox {
        inner: Arc::clone(&inner),
        _senders: Arc::new(Senders(Arc::clone(&inner))),
    };
    (outbox, Receiver { inner })
}

impl Outbox {
    /// Queues a message; false when the outbox takes nothing more (closed or overflowed).
    pub fn send(&self, message: HostMessage) -> bool {
        let org = matches!(message, HostMessage::Org { .. });
        self.push(protocol::encode(&message), org)
    }

    /// Queues a line as it goes out (one encoded message, newline included).
    pub fn send_line(&self, line: String) -> bool {
        self.push(line, false)
    }

    /// Puts an encoded organization snapshot in the organization's place.
    pub fn send_org_line(&self, line: String) -> bool {
        self.push(line, true)
    }

    /// Cuts the front end off (what it follows overflowed further up).
    pub fn cut_off(&self) {
        self.inner.close(true);
    }

    fn push(&self, line: String, org: bool) -> bool {
        let overflowed = {
            let mut s = self.inner.state();
            if s.closed {
                return false;
            }
            if org {
                s.org = Some(line);
                false
            } else {
                s.bytes += line.len();
                s.lines.push_back(line);
                s.bytes > self.inner.limit
            }
        };
        if overflowed {
            tracing::warn!(
                limit = self.inner.limit,
                "a front end does not read what the host sends; it is cut off"
            );
            self.inner.close(true);
            return false;
        }
        self.inner.queued.notify_one();
        true
    }

    /// Like [`Outbox::send`], for a producer that may wait (a run file read back): waits while
    /// more than half the limit waits to go. False when it takes nothing more.
    pub async fn send_paced(&self, message: HostMessage) -> bool {
        loop {
            let taken = self.inner.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            {
                let s = self.inner.state();
                if s.closed {
                    return false;
                }
                if s.bytes <= self.inner.limit / 2 {
                    break;
                }
            }
            taken.await;
        }
        self.send(message)
    }

    pub fn is_closed(&self) -> bool {
        self.inner.state().closed
    }

    /// Resolves once it overflowed (the front end is cut off).
    pub async fn overflowed(&self) {
        loop {
            let taken = self.inner.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            if self.inner.state().overflowed {
                return;
            }
            taken.await;
        }
    }
}

impl Receiver {
    /// The next line to send: the newest organization first, then the queue in order. `None`
    /// once closed, or every sender went and everything was taken.
    pub async fn recv(&mut self) -> Option<String> {
        loop {
            let queued = self.inner.queued.notified();
            tokio::pin!(queued);
            queued.as_mut().enable();
            {
                let mut s = self.inner.state();
                if s.closed {
                    return None;
                }
                if let Some(line) = s.take() {
                    drop(s);
                    self.inner.taken.notify_waiters();
                    return Some(line);
                }
                if s.senders_gone {
                    return None;
                }
            }
            queued.await;
        }
    }

    /// Waits for the next line, then appends to `out` it and the lines waiting after it, in
    /// order, while `out` holds less than `room` bytes (at least one line is taken, whatever its
    /// size): what the writer sends in one `write`. False once closed, or every sender went
    /// and everything was taken (then nothing was appended).
    ///
    /// A burst of events (every member of a team streaming) goes out in a few writes instead
    /// of one per line: a write costs a system call and a unit of the writer's turn on the
    /// runtime (see `async_runtime::RECEIVE_BATCH`), so a writer taking a line at a time fell
    /// behind a busy engine, and its front end was cut off at the limit.
    pub async fn recv_into(&mut self, out: &mut String, room: usize) -> bool {
        let Some(first) = self.recv().await else {
            return false;
        };
        out.push_str(&first);
        {
            let mut s = self.inner.state();
            while out.len() < room {
                let Some(line) = s.take() else { break };
                out.push_str(&line);
            }
        }
        self.inner.taken.notify_waiters();
        true
    }

    /// The next message, decoded.
    #[cfg(test)]
    pub async fn recv_message(&mut self) -> Option<HostMessage> {
        loop {
            let line = self.recv().await?;
            match protocol::decode::<HostMessage>(&line) {
                Ok(message) => return Some(message),
                Err(e) => tracing::error!("host outbox: {e}"),
            }
        }
    }

    /// True when it ended because it overflowed.
    pub fn overflowed(&self) -> bool {
        self.inner.state().overflowed
    }

    /// Takes a line if one waits.
    #[cfg(test)]
    pub fn try_recv(&mut self) -> Option<String> {
        let line = self.inner.state().take()?;
        self.inner.taken.notify_waiters();
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::protocol::Reply;
    use crate::model::Organization;

    fn reply(id: u64) -> HostMessage {
        HostMessage::Reply {
            id,
            reply: Reply::Done,
        }
    }

    fn org(version: u64) -> HostMessage {
        HostMessage::Org {
            org: Box::new(Organization::default()),
            version,
        }
    }

    #[tokio::test]
    async fn lines_go_in_order_and_end_when_the_senders_go() {
        let (tx, mut rx) = outbox();
        assert!(tx.send(reply(1)));
        assert!(tx.send(reply(2)));
        drop(tx);
        assert!(rx.recv().await.is_some_and(|l| l.contains("\"id\":1")));
        assert!(rx.recv().await.is_some_and(|l| l.contains("\"id\":2")));
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn only_the_newest_organization_waits_and_goes_first() {
        let (tx, mut rx) = outbox();
        tx.send(reply(1));
        tx.send(org(3));
        tx.send(org(4));
        let first = rx.recv_message().await;
        assert!(
            matches!(first, Some(HostMessage::Org { version: 4, .. })),
            "{first:?}"
        );
        assert!(matches!(
            rx.recv_message().await,
            Some(HostMessage::Reply { id: 1, .. })
        ));
        assert!(
            rx.try_recv().is_none(),
            "the older snapshot was replaced, not queued"
        );
    }

    #[tokio::test]
    async fn a_front_end_that_does_not_read_is_cut_off_and_nothing_more_is_kept() {
        let (tx, mut rx) = with_limit(1000);
        let mut sent = 0;
        while tx.send(reply(sent)) {
            sent += 1;
            assert!(sent < 1000, "never cut off");
        }
        assert!(sent > 5, "{sent}");
        assert!(tx.is_closed());
        tx.overflowed().await;
        assert!(!tx.send(reply(0)));
        assert_eq!(rx.recv().await, None, "what waited was dropped");
    }

    #[tokio::test]
    async fn a_paced_sender_waits_for_the_reader() {
        let (tx, mut rx) = with_limit(200);
        let paced = {
            let tx = tx.clone();
            tokio::spawn(async move {
                for id in 0..50 {
                    assert!(tx.send_paced(reply(id)).await, "cut off at {id}");
                }
            })
        };
        let mut got = 0;
        while got < 50 {
            let line = rx.recv().await.expect("a line");
            assert!(line.contains(&format!("\"id\":{got}")), "{line}");
            got += 1;
        }
        paced.await.expect("the paced sender ends");
        assert!(!tx.is_closed());
    }

    #[tokio::test]
    async fn lines_waiting_are_taken_together_in_order_up_to_the_room_given() {
        let (tx, mut rx) = outbox();
        let one = protocol::encode(&reply(1));
        for id in 1..=5 {
            assert!(tx.send(reply(id)));
        }
        assert!(tx.send(org(7)));
        let mut out = String::new();
        // Room for the organization and two lines: the third starts past it and waits.
        let organization = protocol::encode(&org(7));
        assert!(rx.recv_into(&mut out, organization.len() + 2 * one.len()).await);
        let ids: Vec<&str> = out.lines().collect();
        assert_eq!(ids.len(), 3, "{out}");
        assert!(ids[0].contains("\"version\":7"), "the organization first: {out}");
        assert!(
            ids[1].contains("\"id\":1") && ids[2].contains("\"id\":2"),
            "{out}"
        );
        out.clear();
        assert!(rx.recv_into(&mut out, usize::MAX).await);
        let rest: Vec<&str> = out.lines().collect();
        assert_eq!(rest.len(), 3, "{out}");
        assert!(rest[2].contains("\"id\":5"), "{out}");
        // A line larger than the room still goes, alone.
        assert!(tx.send(reply(6)));
        assert!(tx.send(reply(7)));
        out.clear();
        assert!(rx.recv_into(&mut out, 1).await);
        assert_eq!(out, protocol::encode(&reply(6)));
        drop(tx);
        out.clear();
        assert!(rx.recv_into(&mut out, 1).await);
        out.clear();
        assert!(!rx.recv_into(&mut out, 1).await, "ended once the senders went");
        assert!(out.is_empty());
    }

    #[tokio::test]
    async fn senders_see_the_receiver_go() {
        let (tx, rx) = outbox();
        drop(rx);
        assert!(!tx.send(reply(1)));
        assert!(tx.is_closed());
    }
}
