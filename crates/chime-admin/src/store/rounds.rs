//! Group commit's waiting room: requests that arrive while the writer is busy wait here, and
//! whichever of them came first commits the lot (`job_inserts.rs`, `audit.rs`).
//!
//! There is no committer task waiting for work: the request that finds the room empty starts
//! one (`push` says so) and it takes the writer, then everything that queued by then. So a
//! request alone pays no wait, and requests that pile up behind a busy writer share one
//! transaction instead of queueing for one each.

use super::{Store, StoreError, StoreResult};
use sqlx::any::Any;
use sqlx::Transaction;
use std::sync::Mutex;
use tokio::sync::oneshot;

/// Requests waiting for their round's commit.
pub(super) struct Rounds<T> {
    queue: Mutex<Vec<T>>,
}

impl<T> Default for Rounds<T> {
    fn default() -> Self {
        Rounds {
            queue: Mutex::new(Vec::new()),
        }
    }
}

impl<T> std::fmt::Debug for Rounds<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = self.queue.lock().map(|q| q.len()).unwrap_or_default();
        f.debug_struct("Rounds").field("waiting", &waiting).finish()
    }
}

impl<T> Rounds<T> {
    /// Queues a request; true when the room was empty, so the caller must start the round's
    /// committer.
    pub(super) fn push(&self, request: T) -> bool {
        let mut queue = self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        queue.push(request);
        queue.len() == 1
    }

    /// Everything queued so far; later requests start the next round.
    pub(super) fn take(&self) -> Vec<T> {
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

impl<R, A: Send + 'static> Rounds<Waiting<R, A>> {
    /// Queues `request` and waits for its own answer. The request that finds the room empty
    /// starts the round with `commit`, on a task of its own, so that a caller that goes away
    /// (its client hung up) cannot strand the others of its round. `None`: the committer
    /// ended without answering (it panicked).
    pub(super) async fn wait_for_round<F, Fut>(&self, request: R, commit: F) -> Option<A>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let (request, answer) = Waiting::new(request);
        if self.push(request) {
            tokio::spawn(commit());
        }
        answer.await.ok()
    }
}

impl Store {
    /// Queues `request` in `room` and waits for its own result, as
    /// [`Rounds::wait_for_round`] does, with `commit` run on a clone of this store as the
    /// round's committer. A committer that ended without answering (it panicked) answers with
    /// the error of a crashed worker.
    pub(super) async fn join_round<R, T, Fut>(
        &self,
        room: &Rounds<Waiting<R, StoreResult<T>>>,
        request: R,
        commit: impl FnOnce(Store) -> Fut,
    ) -> StoreResult<T>
    where
        T: Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let store = self.clone();
        room.wait_for_round(request, move || commit(store))
            .await
            .unwrap_or(Err(StoreError::Db(sqlx::Error::WorkerCrashed)))
    }

    /// The start of a round of `room`: the writer's transaction, then every request queued by
    /// the time it was had, in that order, so that the requests that arrive while the writer
    /// is busy join this round.
    pub(super) async fn begin_round<T>(
        &self,
        room: &Rounds<T>,
    ) -> (Result<Transaction<'static, Any>, sqlx::Error>, Vec<T>) {
        let tx = self.write.begin().await;
        (tx, room.take())
    }
}

/// A request and where its own answer goes.
pub(super) struct Waiting<R, A> {
    /// What was asked.
    pub(super) request: R,
    reply: oneshot::Sender<A>,
}

impl<R, A> Waiting<R, A> {
    /// A request, and the receiver its caller awaits.
    fn new(request: R) -> (Self, oneshot::Receiver<A>) {
        let (reply, answer) = oneshot::channel();
        (Waiting { request, reply }, answer)
    }

    /// Answers the caller; one that has gone (its client hung up) is not missed.
    pub(super) fn answer(self, result: A) {
        let _ = self.reply.send(result);
    }
}
