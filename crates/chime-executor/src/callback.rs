//! Results on their way to the admin: runners hand them to a [`CallbackSink`]; a writer thread
//! appends them to the [spool](crate::spool) and fsyncs; a sender task reads the spool in order
//! and posts batches to the admins until one accepts, retrying every few seconds.
//!
//! The writer is a plain thread because `fdatasync` blocks for milliseconds, which must not
//! stall a tokio worker serving `/run`. Batching falls out of the pipeline: whatever finished
//! while one fsync or one HTTP call was in flight goes in the next one.

use crate::admin::{AdminClient, NotAccepted};
use crate::spool::{self, Pos, SpoolReader, SpoolWriter};
use chime_protocol::{paths, HandleCallbackParam};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub(crate) enum Msg {
    Result(HandleCallbackParam),
    /// No more results will come: spool what is left, then stop.
    Close,
}

/// Where runners put results. Cheap to clone.
#[derive(Clone)]
pub(crate) struct CallbackSink {
    tx: mpsc::Sender<Msg>,
}

impl CallbackSink {
    pub(crate) fn send(&self, item: HandleCallbackParam) {
        if self.tx.send(Msg::Result(item.clone())).is_err() {
            // Only after shutdown finished: nothing can spool it any more.
            tracing::error!(
                log_id = item.log_id,
                code = item.handle_code,
                "result after shutdown, not reported"
            );
        }
    }

    pub(crate) fn close(&self) {
        let _ = self.tx.send(Msg::Close);
    }

    /// A sink that hands results to the returned receiver instead of the spool.
    #[cfg(test)]
    pub(crate) fn for_tests() -> (CallbackSink, mpsc::Receiver<Msg>) {
        let (tx, rx) = mpsc::channel();
        (CallbackSink { tx }, rx)
    }
}

/// Settings of the pipeline.
pub(crate) struct CallbackOptions {
    pub(crate) retry_interval: Duration,
    pub(crate) max_batch: usize,
}

/// The running pipeline.
pub(crate) struct CallbackPipeline {
    pub(crate) sink: CallbackSink,
    writer: std::thread::JoinHandle<()>,
    sender: tokio::task::JoinHandle<()>,
    flush: CancellationToken,
}

impl CallbackPipeline {
    /// Spools everything handed in so far, then tries to deliver it within `deadline`; what is
    /// not delivered stays spooled for the next start.
    pub(crate) async fn finish(self, deadline: Duration) {
        self.sink.close();
        let writer = self.writer;
        // Joining the writer guarantees every result is on disk before the process may exit.
        let _ = tokio::task::spawn_blocking(move || writer.join()).await;
        self.flush.cancel();
        let mut sender = self.sender;
        if tokio::time::timeout(deadline, &mut sender).await.is_err() {
            sender.abort();
            tracing::warn!("callbacks not delivered before shutdown stay in the spool");
        }
    }
}

/// Starts the pipeline over the spool in `dir`.
pub(crate) fn start(dir: &Path, admin: AdminClient, options: CallbackOptions) -> std::io::Result<CallbackPipeline> {
    let (writer, reader) = spool::open(dir)?;
    let (tx, rx) = mpsc::channel();
    let (durable_tx, durable_rx) = watch::channel(writer.end());
    let writer = std::thread::Builder::new()
        .name("chime-callback-spool".into())
        .spawn(move || write_loop(rx, writer, durable_tx))?;
    let flush = CancellationToken::new();
    let sender = tokio::spawn(send_loop(reader, durable_rx, admin, options, flush.clone()));
    Ok(CallbackPipeline {
        sink: CallbackSink { tx },
        writer,
        sender,
        flush,
    })
}

/// Least time between two fsyncs: under load, results that finish meanwhile share the next
/// one (group commit) instead of each paying for a disk flush; idle, it adds nothing.
const GROUP_COMMIT_WINDOW: Duration = Duration::from_millis(2);

fn write_loop(rx: mpsc::Receiver<Msg>, mut writer: SpoolWriter, durable: watch::Sender<Pos>) {
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut closing = false;
    let mut last_sync = std::time::Instant::now() - GROUP_COMMIT_WINDOW;
    while !closing {
        let Ok(first) = rx.recv() else { break };
        let since = last_sync.elapsed();
        if since < GROUP_COMMIT_WINDOW {
            std::thread::sleep(GROUP_COMMIT_WINDOW - since);
        }
        buf.clear();
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Result(item) => {
                    serde_json::to_writer(&mut buf, &item).expect("callback items serialize");
                    buf.push(b'\n');
                }
                Msg::Close => closing = true,
            }
            next = if closing || buf.len() > 1024 * 1024 {
                None
            } else {
                rx.try_recv().ok()
            };
        }
        if buf.is_empty() {
            continue;
        }
        loop {
            let result = writer.append(&buf);
            last_sync = std::time::Instant::now();
            match result {
                Ok(end) => {
                    durable.send_replace(end);
                    break;
                }
                Err(err) => {
                    // Keep the batch and retry: results stay in memory until the disk recovers.
                    tracing::error!(error = %err, "cannot write the callback spool; retrying in 1s");
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }
    // Dropping `durable` tells the sender that nothing more will be spooled.
}

/// Sends spooled results in order until the writer is done and everything is sent; once
/// `flush` is cancelled (shutdown) a failed send ends it instead of waiting to retry.
async fn send_loop(
    mut reader: SpoolReader,
    mut durable: watch::Receiver<Pos>,
    admin: AdminClient,
    options: CallbackOptions,
    flush: CancellationToken,
) {
    let mut writer_done = false;
    let mut warnings = Throttle::default();
    loop {
        let end = *durable.borrow_and_update();
        if reader.pos() >= end {
            if writer_done {
                return;
            }
            writer_done = durable.changed().await.is_err();
            continue;
        }
        let batch = match reader.read_batch_within(end, options.max_batch, MAX_BATCH_BYTES) {
            Ok(batch) => batch,
            Err(err) => {
                tracing::error!(error = %err, "cannot read the callback spool");
                if flush.is_cancelled() {
                    return;
                }
                sleep_or(&flush, options.retry_interval).await;
                continue;
            }
        };
        if batch.lines.is_empty() {
            reader.acknowledge(batch.end);
            continue;
        }
        let mut body = String::with_capacity(batch.lines.iter().map(|l| l.len() + 1).sum::<usize>() + 2);
        body.push('[');
        for (i, line) in batch.lines.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            body.push_str(line);
        }
        body.push(']');
        match admin.post_first(paths::API_CALLBACK, body).await {
            Ok(()) => {
                tracing::debug!(count = batch.lines.len(), "callbacks accepted");
                if let Some(failed) = warnings.recovered() {
                    tracing::info!(failed_attempts = failed, "callbacks are accepted again");
                }
                reader.acknowledge(batch.end);
            }
            Err(err) => {
                if let Some(suppressed) = warnings.allow(std::time::Instant::now()) {
                    warn_not_accepted(&err, batch.lines.len(), suppressed, options.retry_interval);
                }
                if flush.is_cancelled() {
                    return;
                }
                sleep_or(&flush, options.retry_interval).await;
            }
        }
    }
}

/// Most bytes of results in one callback: a batch goes up an executor link as one message, and
/// an admin closes a link whose message (other than an answer to `/log`) is larger than
/// [`chime_protocol::link::MAX_MESSAGE_BYTES`]; a longer backlog goes in several batches. Room
/// is left for the array's brackets and the link frame around it. One result is at most about
/// 300 KB (its message is cut at 50,000 characters), so every result fits.
const MAX_BATCH_BYTES: usize = chime_protocol::link::MAX_MESSAGE_BYTES - 1024;

/// Least time between two warnings about callbacks that no admin accepts. The sender retries
/// every few seconds, possibly for hours (an admin down, a wrong token): one warning a minute
/// says so without burying every other log line.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Lets a repeated warning through at most once per [`WARN_EVERY`], counting the ones held back.
#[derive(Debug, Default)]
struct Throttle {
    last: Option<std::time::Instant>,
    /// Failures since the last warning that was let through.
    held_back: u64,
    /// Failures since the last success.
    failures: u64,
}

impl Throttle {
    /// A failure at `now`: `Some(held back since the last warning)` if it may be warned about.
    fn allow(&mut self, now: std::time::Instant) -> Option<u64> {
        self.failures += 1;
        match self.last {
            Some(last) if now.duration_since(last) < WARN_EVERY => {
                self.held_back += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.held_back))
            }
        }
    }

    /// A success: `Some(failures before it)` if there were any. The next failure warns at once.
    fn recovered(&mut self) -> Option<u64> {
        let failures = std::mem::take(&mut self.failures);
        *self = Throttle::default();
        (failures > 0).then_some(failures)
    }
}

fn warn_not_accepted(err: &NotAccepted, count: usize, held_back: u64, retry: Duration) {
    let retry_secs = retry.as_secs_f64();
    if let Some(refusal) = err.refusals().next() {
        // An admin that answers "no" keeps answering "no": the spool is stuck until someone
        // fixes the setup, and every later result waits behind this batch.
        tracing::warn!(
            refused = %refusal,
            all = %err,
            results_in_batch = count,
            failures_not_logged = held_back,
            "an admin refuses the callback batch; it and every later result stay in the spool, \
             re-sent every {retry_secs} s in order, until an admin accepts (check the access token \
             and the admin's own log)"
        );
    } else {
        tracing::warn!(
            error = %err,
            results_in_batch = count,
            failures_not_logged = held_back,
            "no admin reachable for callbacks; results stay in the spool, re-sent every {retry_secs} s"
        );
    }
}

async fn sleep_or(cancel: &CancellationToken, duration: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(duration) => {}
        _ = cancel.cancelled() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_failures_warn_once_a_minute_and_a_success_resets() {
        let start = std::time::Instant::now();
        let mut throttle = Throttle::default();
        assert_eq!(throttle.allow(start), Some(0), "the first failure warns at once");
        for secs in [3, 6, 9] {
            assert_eq!(throttle.allow(start + Duration::from_secs(secs)), None);
        }
        assert_eq!(throttle.allow(start + WARN_EVERY), Some(3), "with the count held back");
        assert_eq!(throttle.allow(start + WARN_EVERY + Duration::from_secs(3)), None);
        assert_eq!(throttle.recovered(), Some(6));
        assert_eq!(throttle.recovered(), None);
        let later = start + WARN_EVERY + Duration::from_secs(6);
        assert_eq!(throttle.allow(later), Some(0), "a new outage warns at once");
    }
}
