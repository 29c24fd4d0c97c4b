//! Sweeps that keep runs honest: runs whose executor vanished, or whose result was lost although
//! the executor lives on, are failed (and so retried), and the registry is refreshed so dead
//! executors leave their groups.

use crate::center::Admin;
use crate::dispatch::client::Target;
use crate::model::{now_ms, AddressType, Group};
use crate::results::ResultMsg;
use crate::store::HandleOutcome;
use chime_protocol::messages::JOB_RESULT_LOST;
use chime_protocol::paths::normalize_address;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Reloads groups and heartbeats until shutdown.
pub async fn run_registry_refresh(admin: Arc<Admin>) {
    loop {
        tokio::select! {
            _ = admin.shutdown.cancelled() => return,
            _ = tokio::time::sleep(admin.config.registry_refresh) => {}
        }
        if let Err(e) = admin.directory.refresh().await {
            tracing::warn!(error = %e, "registry refresh failed");
        }
    }
}

/// Running runs the lost-run sweep reads per query; it pages through all of them by id.
pub const SWEEP_PAGE: i64 = 1_000;

/// What the sweep knows about an executor address, asked at most once per sweep.
#[derive(Default)]
struct Probes {
    beats: HashMap<String, bool>,
    idle: HashMap<(String, i64), bool>,
}

/// The result message of a run that waited `waited` for its result (the job's executor
/// timeout plus a grace, or `--lost-result-after` for a job without timeout) while the
/// executor, still alive, says the job is not running there.
pub fn no_result_message(timeout_secs: i64, waited: Duration) -> String {
    let waited = if timeout_secs > 0 {
        format!(
            "the executor timeout ({timeout_secs}s) plus {}s",
            waited.as_secs() - timeout_secs as u64
        )
    } else {
        format!("{}s", waited.as_secs())
    };
    format!(
        "{JOB_RESULT_LOST}: no result within {waited}, and the executor is not running the job any more \
         (its result was never delivered)"
    )
}

/// How long a run may wait for its result before its executor is asked whether it still has
/// the job: the job's executor timeout plus the dead timeout (the time an executor gets to
/// deliver a result), or `--lost-result-after` for a job without timeout.
fn result_wait(admin: &Admin, timeout_secs: i64) -> Duration {
    if timeout_secs > 0 {
        Duration::from_secs(timeout_secs as u64) + admin.config.dead_timeout
    } else {
        admin.config.lost_result_after
    }
}

/// How long after its trigger a running run is first looked at by the sweep.
///
/// An executor is declared gone a dead timeout after its last heartbeat, and it sent one at
/// most a heartbeat period (a third of the dead timeout: three missed beats) before it took
/// the run, so a younger run cannot be on a gone executor yet, and none is overdue before
/// `--lost-result-after`. Skipping them keeps the sweep's reads to runs that have been running
/// a while: reading every running run each sweep cost the admin about a tenth of its
/// throughput at 20,000 fires/s, when callbacks lag and hundreds of thousands are running.
pub fn sweep_min_age(dead_timeout: Duration, lost_result_after: Duration) -> Duration {
    (dead_timeout / 3).min(lost_result_after).max(Duration::from_secs(1))
}

/// Fails runs still waiting for a result that will never come, and returns how many:
///
/// * their executor is gone: for groups that register, an address without heartbeat for the
///   dead timeout; for manual groups, an address that does not answer `/beat`. XXL-JOB waits
///   ten minutes; here it is the dead timeout plus at most one sweep.
/// * the run was sent longer ago than its job's executor timeout plus the dead timeout (the
///   time an executor gets to deliver a result) — or, for a job without timeout, longer ago
///   than `--lost-result-after` — and the executor, asked with `/idleBeat`, is neither running
///   the job nor holding it in its queue: the executor finished or dropped the run, and its
///   result was lost on the way (pyxxl, for one, drops a result the admin did not accept; a
///   Java executor restarted within the dead timeout forgets its queue). A run queued behind
///   others of a SERIAL_EXECUTION job is still waiting there, so the executor answers busy and
///   the run is left alone, however long it takes.
///
/// Both kinds are failed with a retry, as XXL-JOB's fail monitor does.
pub async fn sweep_lost_runs(admin: &Arc<Admin>) -> crate::store::StoreResult<usize> {
    let now = now_ms();
    let min_age = sweep_min_age(admin.config.dead_timeout, admin.config.lost_result_after);
    let triggered_before = now - min_age.as_millis() as i64;
    let alive = admin.directory.alive_addresses();
    let mut probes = Probes::default();
    // Looked up once per sweep: there may be many more running runs than groups.
    let mut groups: HashMap<i64, Option<Group>> = HashMap::new();
    let mut after_id = 0;
    let mut total = 0;
    loop {
        let page = admin
            .store
            .unfinished_runs(triggered_before, after_id, SWEEP_PAGE)
            .await?;
        let full = page.len() as i64 >= SWEEP_PAGE;
        let Some(last) = page.last() else { break };
        after_id = last.id;
        let mut lost = Vec::new();
        for run in page {
            let group = groups
                .entry(run.group_id)
                .or_insert_with(|| admin.directory.group(run.group_id));
            let Some(group) = group.as_ref() else {
                continue;
            };
            let target = Target::of(group, &run.address);
            let gone = match group.address_type {
                AddressType::Auto => !alive.contains(normalize_address(&run.address)),
                AddressType::Manual => !beat(admin, &mut probes, target).await,
            };
            let wait = result_wait(admin, run.timeout_secs);
            let overdue = now > run.triggered_at.saturating_add(wait.as_millis() as i64);
            let msg = if gone {
                JOB_RESULT_LOST.to_owned()
            } else if overdue && idle(admin, &mut probes, target, run.job_id).await {
                no_result_message(run.timeout_secs, wait)
            } else {
                continue;
            };
            lost.push(HandleOutcome {
                run_id: run.id,
                code: 500,
                msg: Some(msg),
                retry: true,
            });
        }
        let n = lost.len();
        if n > 0 {
            tracing::info!(runs = n, "runs without a result to come marked as failed");
            let (tx, rx) = tokio::sync::oneshot::channel();
            admin.send_result(ResultMsg::Handle(lost, Some(tx)));
            let _ = rx.await;
        }
        total += n;
        if !full {
            break;
        }
    }
    Ok(total)
}

/// Does the executor answer `/beat`?
async fn beat(admin: &Admin, probes: &mut Probes, target: Target<'_>) -> bool {
    if let Some(ok) = probes.beats.get(target.address) {
        return *ok;
    }
    let ok = match admin.probe_gate.enter(target.address).await {
        Some(_pass) => admin.client.beat(target).await.is_success(),
        None => true,
    };
    probes.beats.insert(target.address.to_owned(), ok);
    ok
}

/// Does the executor say `job_id` is neither running nor queued there? An executor that cannot
/// be asked counts as busy: the run is left to the dead-executor check.
async fn idle(admin: &Admin, probes: &mut Probes, target: Target<'_>, job_id: i64) -> bool {
    let key = (target.address.to_owned(), job_id);
    if let Some(idle) = probes.idle.get(&key) {
        return *idle;
    }
    let idle = match admin.probe_gate.enter(target.address).await {
        Some(_pass) => admin.client.idle_beat(target, job_id).await.is_success(),
        None => false,
    };
    probes.idle.insert(key, idle);
    idle
}

/// Runs the lost-run sweep until shutdown.
pub async fn run_lost_sweep(admin: Arc<Admin>) {
    loop {
        tokio::select! {
            _ = admin.shutdown.cancelled() => return,
            _ = tokio::time::sleep(admin.config.lost_sweep) => {}
        }
        if let Err(e) = sweep_lost_runs(&admin).await {
            tracing::warn!(error = %e, "lost-run sweep failed");
        }
    }
}
