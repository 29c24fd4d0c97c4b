//! The results writer's inbox and the message type of its channel, apart from the writer
//! itself: dispatch, the lost-run sweep and the API hand outcomes over through it, and the claim
//! loop reads its backlog; none of them needs anything of the writer.

use crate::run::{HandleOutcome, TriggerOutcome};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Something to record.
#[derive(Debug)]
pub enum ResultMsg {
    /// A run was sent (or could not be).
    Trigger(TriggerOutcome),
    /// Run results (a callback batch, a kill, the lost sweep); the sender learns when they are
    /// committed.
    Handle(Vec<HandleOutcome>, Option<oneshot::Sender<Result<(), String>>>),
}

impl ResultMsg {
    /// How many outcomes this message carries.
    pub fn outcomes(&self) -> usize {
        match self {
            ResultMsg::Trigger(_) => 1,
            ResultMsg::Handle(h, _) => h.len(),
        }
    }
}

/// Messages the channel holds before senders wait (or, for [`ResultsQueue::send`], hand the
/// send to a task).
const CAPACITY: usize = 100_000;

/// The results writer's inbox, with the count of outcomes handed over and not yet written.
/// Cheap to clone; every clone shares the channel and the count.
#[derive(Debug, Clone)]
pub struct ResultsQueue {
    tx: mpsc::Sender<ResultMsg>,
    queued: Arc<AtomicUsize>,
}

impl ResultsQueue {
    /// A queue and the receiver `results::run` reads.
    pub fn new() -> (ResultsQueue, mpsc::Receiver<ResultMsg>) {
        let (tx, rx) = mpsc::channel(CAPACITY);
        let queue = ResultsQueue {
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
        };
        (queue, rx)
    }

    /// Hands `msg` to the writer without waiting.
    pub(crate) fn send(&self, msg: ResultMsg) {
        self.queued.fetch_add(msg.outcomes(), Ordering::Relaxed);
        if let Err(e) = self.tx.try_send(msg) {
            // Full channel: wait for room from a task instead of blocking the caller.
            let tx = self.tx.clone();
            let msg = match e {
                mpsc::error::TrySendError::Full(m) | mpsc::error::TrySendError::Closed(m) => m,
            };
            tokio::spawn(async move {
                let _ = tx.send(msg).await;
            });
        }
    }

    /// Records run results and waits for the commit.
    pub async fn record(&self, outcomes: Vec<HandleOutcome>) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        let n = outcomes.len();
        self.queued.fetch_add(n, Ordering::Relaxed);
        if self.tx.send(ResultMsg::Handle(outcomes, Some(tx))).await.is_err() {
            self.done(n);
            return Err("admin is shutting down".to_owned());
        }
        rx.await.map_err(|_| "admin is shutting down".to_owned())?
    }

    /// Trigger results and run results handed to the writer and not yet written. A callback
    /// batch counts as many results as it carries.
    pub fn backlog(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// The writer finished with `n` outcomes (written, or given up on).
    pub(crate) fn done(&self, n: usize) {
        // Saturating: never wraps, whatever the order of the two counters' updates.
        let _ = self
            .queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| Some(q.saturating_sub(n)));
    }
}
