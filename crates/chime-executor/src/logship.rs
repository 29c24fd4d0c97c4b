//! Finished runs' logs on their way to the admin (`POST /api/runLog`), so that the admin can
//! show a run's log after this executor, and its disk, are gone.
//!
//! The runner hands each finished run to a [`LogShipper`] once its log file is complete; one
//! task reads the log (its last [`chime_protocol::MAX_RUN_LOG_BYTES`] by default, saying it was
//! cut) and posts it, trying a few times over a few seconds. A log is a convenience, not a
//! result: unlike callbacks nothing is spooled, and a log that cannot be delivered stays only
//! on this disk (readable through `/log` as before). The queue is bounded; when it is full the
//! log is not sent.
//!
//! An XXL-JOB admin does not know the endpoint and answers with an error: the first such
//! answer turns sending off for the life of the process, logged once at debug level, so the
//! SDK keeps working quietly against an XXL-JOB admin.

use crate::admin::{AdminClient, AdminError};
use crate::runlog;
use chime_protocol::{paths, RunLogParam};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Finished runs waiting to have their log sent, at most. Beyond that a log is not sent (it is
/// still on disk): a slow admin must not make the executor hold logs without bound.
const QUEUE: usize = 1024;

/// Tries per log: the first, then after 1 s and 2 s.
const ATTEMPTS: u32 = 3;

struct Shipment {
    log_id: i64,
    log_date_time: i64,
    path: PathBuf,
}

/// Where the runner puts finished runs whose log is to be sent. Cheap to clone.
#[derive(Clone)]
pub(crate) struct LogShipper {
    tx: mpsc::Sender<Shipment>,
}

/// The sending task, to be finished on shutdown.
pub(crate) struct ShipperTask {
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl LogShipper {
    /// Starts the task that sends logs through `admin` for the runs of `app_name`, each cut to
    /// its last `cap` bytes.
    pub(crate) fn start(admin: AdminClient, app_name: String, cap: usize) -> (LogShipper, ShipperTask) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let stop = CancellationToken::new();
        let task = tokio::spawn(send_loop(rx, admin, app_name, cap, stop.clone()));
        (LogShipper { tx }, ShipperTask { stop, task })
    }

    /// Queues the log of a finished run (its file is complete). Never blocks: called on the
    /// log writer's thread.
    pub(crate) fn send(&self, log_id: i64, log_date_time: i64, path: PathBuf) {
        let shipment = Shipment {
            log_id,
            log_date_time,
            path,
        };
        if let Err(mpsc::error::TrySendError::Full(s)) = self.tx.try_send(shipment) {
            tracing::debug!(
                log_id = s.log_id,
                "run log queue full; this log stays on the executor only"
            );
        }
    }
}

impl ShipperTask {
    /// Sends what is queued (one try each) for at most `timeout`, then stops.
    pub(crate) async fn finish(self, timeout: Duration) {
        self.stop.cancel();
        let mut task = self.task;
        if tokio::time::timeout(timeout, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// Is this an admin that does not know the endpoint? XXL-JOB answers an unknown `/api/…` with
/// `code: 500` and "uri-mapping(…) not found"; a server without `/api/{uri}` at all says 404.
fn unknown_endpoint(err: &AdminError) -> bool {
    match err {
        AdminError::Refused { msg, .. } => msg.contains("uri-mapping"),
        AdminError::Unreachable(reason) => reason.ends_with("HTTP 404 Not Found"),
    }
}

async fn send_loop(
    mut rx: mpsc::Receiver<Shipment>,
    admin: AdminClient,
    app_name: String,
    cap: usize,
    stop: CancellationToken,
) {
    let mut off = false;
    loop {
        let shipment = tokio::select! {
            s = rx.recv() => s,
            _ = stop.cancelled() => rx.try_recv().ok(),
        };
        let Some(shipment) = shipment else { return };
        if off {
            continue;
        }
        let path = shipment.path.clone();
        let Ok(Some(bytes)) = tokio::task::spawn_blocking(move || runlog::read_log(&path)).await else {
            continue;
        };
        let param = RunLogParam::from_log(&app_name, shipment.log_id, shipment.log_date_time, &bytes, cap);
        drop(bytes);
        let Ok(body) = serde_json::to_string(&param) else {
            continue;
        };
        drop(param);
        let attempts = if stop.is_cancelled() { 1 } else { ATTEMPTS };
        for attempt in 0..attempts {
            match admin.post_first(paths::API_RUN_LOG, body.clone()).await {
                Ok(()) => break,
                Err(err) if err.0.iter().any(unknown_endpoint) => {
                    off = true;
                    tracing::debug!(
                        error = %err,
                        "the admin does not keep run logs (not a Chime admin?); run logs stay on this executor only"
                    );
                    break;
                }
                // An answer that says no (a run of another group, a wrong token) is the same
                // the next time.
                Err(err) if err.refusals().count() == err.0.len() => {
                    tracing::debug!(log_id = shipment.log_id, error = %err, "run log refused by the admin");
                    break;
                }
                Err(err) => {
                    if attempt + 1 == attempts {
                        tracing::debug!(log_id = shipment.log_id, error = %err, "run log not delivered");
                        break;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1 << attempt)) => {}
                        _ = stop.cancelled() => {}
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxl_jobs_answer_to_an_unknown_endpoint_turns_sending_off() {
        let xxl = AdminError::Refused {
            url: "http://a/api/runLog".into(),
            code: 500,
            msg: chime_protocol::messages::uri_not_found("runLog"),
        };
        assert!(unknown_endpoint(&xxl));
        let token = AdminError::Refused {
            url: "http://a/api/runLog".into(),
            code: 500,
            msg: chime_protocol::messages::ACCESS_TOKEN_WRONG.into(),
        };
        assert!(!unknown_endpoint(&token));
    }
}
