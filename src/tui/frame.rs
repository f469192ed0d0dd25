//! On-demand frames. Anything may ask for a frame (now or after a delay); a scheduler task
//! coalesces the requests and wakes the UI loop at most once per deadline. There is no redraw
//! timer: an idle app draws nothing.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

/// Cheap to clone; asks the scheduler for a frame.
#[derive(Clone, Debug)]
pub struct FrameRequester {
    tx: mpsc::UnboundedSender<Instant>,
}

impl FrameRequester {
    /// Starts the scheduler task; the receiver yields one `()` per frame to draw.
    pub fn start() -> (FrameRequester, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (draw_tx, draw_rx) = mpsc::channel(1);
        tokio::spawn(schedule(rx, draw_tx));
        (FrameRequester { tx }, draw_rx)
    }

    pub fn schedule_frame(&self) {
        let _ = self.tx.send(Instant::now());
    }

    pub fn schedule_frame_in(&self, delay: Duration) {
        let _ = self.tx.send(Instant::now() + delay);
    }
}

/// At most this many frames a second: streaming asks for a frame per event, and a human sees
/// no difference above this rate.
const MIN_FRAME_INTERVAL: Duration = Duration::from_millis(8);

async fn schedule(mut requests: mpsc::UnboundedReceiver<Instant>, draw: mpsc::Sender<()>) {
    let mut next: Option<Instant> = None;
    let mut last_frame: Option<Instant> = None;
    loop {
        let deadline = next;
        tokio::select! {
            request = requests.recv() => match request {
                Some(at) => {
                    let at = last_frame.map_or(at, |l| at.max(l + MIN_FRAME_INTERVAL));
                    next = Some(next.map_or(at, |n| n.min(at)));
                }
                None => break,
            },
            () = async {
                match deadline {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => {
                next = None;
                last_frame = Some(Instant::now());
                // A full channel means a frame is already pending: this request is covered.
                let _ = draw.try_send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn requests_coalesce_into_one_frame() {
        let (frames, mut draws) = FrameRequester::start();
        for _ in 0..50 {
            frames.schedule_frame();
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(draws.try_recv(), Ok(()));
        assert!(draws.try_recv().is_err(), "50 requests must make one frame");
    }

    #[tokio::test(start_paused = true)]
    async fn frames_are_capped_in_rate() {
        let (frames, mut draws) = FrameRequester::start();
        frames.schedule_frame();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(draws.try_recv(), Ok(()));
        // A request right after a frame waits for the minimum interval.
        frames.schedule_frame();
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(draws.try_recv().is_err(), "too soon after the last frame");
        tokio::time::sleep(MIN_FRAME_INTERVAL).await;
        assert_eq!(draws.try_recv(), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_frame_arrives_after_its_delay_and_not_before() {
        let (frames, mut draws) = FrameRequester::start();
        frames.schedule_frame_in(Duration::from_millis(100));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(draws.try_recv().is_err());
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(draws.try_recv(), Ok(()));
        // Nothing more without a request: no busy timer.
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(draws.try_recv().is_err());
    }
}
