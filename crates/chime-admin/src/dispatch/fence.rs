//! The fencing step before each send, for admins that share a database: the run is marked in
//! the database as being sent by this admin, under the epoch of its partition's lease, and
//! sent only if the database took the mark (`Store::mark_sending`).
//!
//! The monotonic deadline of `Partitions` already keeps an admin from sending once it may
//! have lost its leases; the mark closes what a deadline checked in this process cannot: a
//! pause between the check and the send (SIGSTOP, a stall of the machine), after which the
//! lease may belong to another admin that is sending the same run. The database then refuses
//! the mark, because the lease's epoch changed or it lapsed by the database's clock.
//!
//! Marks wait for one round trip of a batch: the send tasks hand them to one task that writes
//! everything queued so far in one statement, so the runs of one second, fired together, are
//! marked together.

use crate::run::SendMark;
use crate::store::Store;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Marks written per batch at most.
const BATCH_MAX: usize = 2_000;

/// How long one attempt to write a batch may take. Marks take milliseconds; an attempt that
/// takes longer is most likely on a connection the network dropped without a word, which
/// would otherwise hold every later mark until TCP gives up.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a batch is tried again, with the same stamp, before its sends are told it failed.
const RETRY_FOR: Duration = Duration::from_secs(10);

/// How a mark ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The run is this admin's to send; `at` is the stamp of the mark (epoch ms), stored as
    /// the run's trigger time and sent as its `logDateTim`, so that whoever asks the executor
    /// about the run later looks for its log where the executor keeps it.
    Marked {
        /// The mark's stamp.
        at: i64,
    },
    /// The database refused: the run was marked or sent already, or the lease is gone.
    Refused,
    /// The database could not be asked: nothing is known; the run must not be sent now.
    Failed,
}

/// The send tasks' handle on the marking task. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SendFence {
    tx: mpsc::UnboundedSender<(SendMark, oneshot::Sender<Mark>)>,
    /// This process's token for runs sent outside the partition leases (manual runs,
    /// retries, child runs): negative, random, so no other process marks with it.
    own_token: i64,
}

impl SendFence {
    /// Starts the marking task on `store`; it ends with `shutdown` (marks asked afterwards
    /// end as [`Mark::Failed`]).
    pub fn start(store: Store, shutdown: CancellationToken) -> SendFence {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(store, rx, shutdown));
        SendFence {
            tx,
            own_token: -rand::random_range(1..i64::MAX),
        }
    }

    /// The token for a run sent outside the partition leases.
    pub fn own_token(&self) -> i64 {
        self.own_token
    }

    /// Marks one run as being sent with `token` to `address`, and waits for the database.
    pub async fn mark(&self, run_id: i64, token: i64, address: &str) -> Mark {
        let (reply, answer) = oneshot::channel();
        let mark = SendMark {
            run_id,
            token,
            address: address.to_owned(),
        };
        if self.tx.send((mark, reply)).is_err() {
            return Mark::Failed;
        }
        answer.await.unwrap_or(Mark::Failed)
    }
}

/// Writes queued marks, a batch at a time, until shutdown.
async fn run(
    store: Store,
    mut rx: mpsc::UnboundedReceiver<(SendMark, oneshot::Sender<Mark>)>,
    shutdown: CancellationToken,
) {
    let mut batch = Vec::new();
    let mut last_stamp = 0;
    loop {
        let got = tokio::select! {
            n = rx.recv_many(&mut batch, BATCH_MAX) => n,
            _ = shutdown.cancelled() => return,
        };
        if got == 0 {
            return;
        }
        let (marks, replies): (Vec<SendMark>, Vec<oneshot::Sender<Mark>>) = batch.drain(..).unzip();
        // Each batch's stamp is later than the one before, as `Store::mark_sending` needs.
        let stamp = crate::model::now_ms().max(last_stamp + 1);
        last_stamp = stamp;
        let written = write(&store, &marks, stamp, &shutdown).await;
        match written {
            Ok(marked) => {
                let marked: std::collections::HashSet<i64> = marked.into_iter().collect();
                for (m, reply) in marks.iter().zip(replies) {
                    let _ = reply.send(if marked.contains(&m.run_id) {
                        Mark::Marked { at: stamp }
                    } else {
                        Mark::Refused
                    });
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, runs = marks.len(), "marking runs as being sent failed; they wait");
                for reply in replies {
                    let _ = reply.send(Mark::Failed);
                }
            }
        }
    }
}

/// Writes one batch, trying again with the same stamp on a fresh connection when an attempt
/// fails or hangs: should an earlier attempt have been committed with its answer lost, the
/// stamp makes the runs it marked count as marked by this one (`Store::mark_sending`).
async fn write(
    store: &Store,
    marks: &[SendMark],
    stamp: i64,
    shutdown: &CancellationToken,
) -> Result<Vec<i64>, String> {
    let started = std::time::Instant::now();
    loop {
        let error = match tokio::time::timeout(ATTEMPT_TIMEOUT, store.mark_sending(marks, stamp)).await {
            Ok(Ok(marked)) => return Ok(marked),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {ATTEMPT_TIMEOUT:?}"),
        };
        if started.elapsed() >= RETRY_FOR || shutdown.is_cancelled() {
            return Err(error);
        }
        tracing::warn!(error = %error, runs = marks.len(), "marking runs as being sent failed; trying again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
