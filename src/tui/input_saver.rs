//! Writes the composer's drafts and prompt history in the background: changes are gathered
//! for a short while (a burst of typing is one write), then written atomically on a blocking
//! thread. The last save on quit is written at once and awaited.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::store::InputFiles;

/// How long changes are gathered before they are written.
const DEBOUNCE: Duration = Duration::from_millis(400);

#[derive(Debug, Default)]
struct Pending {
    drafts: Option<BTreeMap<String, String>>,
    history: Option<Vec<String>>,
}

impl Pending {
    fn merge(&mut self, newer: Pending) {
        if newer.drafts.is_some() {
            self.drafts = newer.drafts;
        }
        if newer.history.is_some() {
            self.history = newer.history;
        }
    }

    fn is_empty(&self) -> bool {
        self.drafts.is_none() && self.history.is_none()
    }
}

enum Message {
    Save(Pending),
    Flush(Pending, oneshot::Sender<()>),
}

#[derive(Clone)]
pub struct InputSaver {
    tx: mpsc::UnboundedSender<Message>,
}

impl InputSaver {
    /// Starts the saver task; `on_error` hears about the first failed write.
    pub fn start(files: InputFiles, on_error: impl Fn(String) + Send + Sync + 'static) -> InputSaver {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(save_loop(files, rx, on_error));
        InputSaver { tx }
    }

    pub fn save(&self, drafts: Option<BTreeMap<String, String>>, history: Option<Vec<String>>) {
        let _ = self.tx.send(Message::Save(Pending { drafts, history }));
    }

    /// Writes everything now (after what was waiting) and waits for the write.
    pub async fn flush(&self, drafts: BTreeMap<String, String>, history: Vec<String>) {
        let (ack, done) = oneshot::channel();
        let pending = Pending {
            drafts: Some(drafts),
            history: Some(history),
        };
        if self.tx.send(Message::Flush(pending, ack)).is_ok() {
            let _ = done.await;
        }
    }
}

async fn save_loop(files: InputFiles, mut rx: mpsc::UnboundedReceiver<Message>, on_error: impl Fn(String)) {
    let mut pending = Pending::default();
    let mut reported = false;
    let mut deadline: Option<tokio::time::Instant> = None;
    loop {
        let message = match deadline {
            None => rx.recv().await,
            Some(at) => tokio::select! {
                m = rx.recv() => m,
                _ = tokio::time::sleep_until(at) => {
                    deadline = None;
                    write(&files, std::mem::take(&mut pending), &on_error, &mut reported).await;
                    continue;
                }
            },
        };
        match message {
            Some(Message::Save(p)) => {
                pending.merge(p);
                deadline.get_or_insert_with(|| tokio::time::Instant::now() + DEBOUNCE);
            }
            Some(Message::Flush(p, ack)) => {
                pending.merge(p);
                deadline = None;
                write(&files, std::mem::take(&mut pending), &on_error, &mut reported).await;
                let _ = ack.send(());
            }
            None => {
                write(&files, pending, &on_error, &mut reported).await;
                return;
            }
        }
    }
}

async fn write(files: &InputFiles, pending: Pending, on_error: &impl Fn(String), reported: &mut bool) {
    if pending.is_empty() {
        return;
    }
    let files = files.clone();
    let result = tokio::task::spawn_blocking(move || {
        let mut errors = Vec::new();
        if let Some(drafts) = pending.drafts
            && let Err(e) = files.save_drafts(&drafts)
        {
            errors.push(e.to_string());
        }
        if let Some(history) = pending.history
            && let Err(e) = files.save_history(&history)
        {
            errors.push(e.to_string());
        }
        errors
    })
    .await;
    let errors = result.unwrap_or_else(|e| vec![format!("the save task failed: {e}")]);
    for e in &errors {
        tracing::warn!(error = %e, "cannot save drafts or prompt history");
    }
    if let Some(first) = errors.into_iter().next()
        && !*reported
    {
        *reported = true;
        on_error(first);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_is_one_write_and_flush_writes_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let files = InputFiles::new(dir.path());
        let saver = InputSaver::start(files.clone(), |_| {});
        let drafts = |t: &str| {
            let mut d = BTreeMap::new();
            d.insert("s".to_string(), t.to_string());
            Some(d)
        };
        saver.save(drafts("a"), None);
        saver.save(drafts("ab"), Some(vec!["p".into()]));
        tokio::time::sleep(DEBOUNCE / 2).await;
        assert!(!dir.path().join("drafts.json").exists(), "still gathering");
        tokio::time::sleep(DEBOUNCE).await;
        // The blocking write runs on its own thread: poll its result (paused clock, no sleeps).
        let loaded = wait_for(&files, |l| l.drafts.get("s").is_some_and(|d| d == "ab")).await;
        assert_eq!(loaded.history, vec!["p".to_string()]);
        saver.save(drafts("stale"), None);
        let mut last = BTreeMap::new();
        last.insert("s".to_string(), "final".to_string());
        saver.flush(last, vec!["p".into(), "q".into()]).await;
        let loaded = files.load();
        assert_eq!(loaded.drafts["s"], "final");
        assert_eq!(loaded.history.len(), 2);
    }

    async fn wait_for(
        files: &InputFiles,
        done: impl Fn(&crate::store::Inputs) -> bool,
    ) -> crate::store::Inputs {
        for _ in 0..10_000 {
            let loaded = files.load();
            if done(&loaded) {
                return loaded;
            }
            tokio::task::yield_now().await;
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("never saved");
    }
}
