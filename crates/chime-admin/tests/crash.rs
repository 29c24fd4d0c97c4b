//! Crash safety of the real `chime admin` process: 200 jobs fire every second, the admin is
//! killed with SIGKILL, restarted, and every scheduled second in the window must have exactly
//! one run row — none lost, none twice — resolved as the job's misfire policy says. On SQLite,
//! and on PostgreSQL and MariaDB, where in production several admins share the database.
//!
//! The downtime is longer than the look-ahead plus the misfire threshold, so both recovery
//! paths are exercised: fires claimed before the crash (pending rows, recovered at start) and
//! fires never claimed (found late by the first claim round). The jobs of all three policies
//! share one kill/restart cycle:
//!
//! - `CATCH_UP`: every second runs (late ones as MISFIRE runs);
//! - `DO_NOTHING`: the seconds of the outage are recorded as skipped, all others run;
//! - `FIRE_ONCE_NOW`: like `DO_NOTHING`, except that one missed second runs (as MISFIRE).
//!
//! A second scenario restarts the admin at once with the same `--node-id`, as a supervisor
//! restarting a configured deployment does: what it claimed before the crash must still go out.
//!
//! The executor is the in-test one (`common/executor.rs`): it counts every delivery of every
//! run id, which a real executor does not expose. The whole file takes about 1.5 minutes; its
//! tests run one at a time (`.config/nextest.toml`, group `process-kill`).

mod common;

use common::executor::TestExecutor;
use common::process::{free_port, OwnedProcess};
use common::{Api, Db, TestDb, ACCESS_TOKEN, API_TOKEN};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Jobs per misfire policy: 200 jobs, each firing every second.
const POLICIES: [(&str, usize); 3] = [("CATCH_UP", 100), ("DO_NOTHING", 50), ("FIRE_ONCE_NOW", 50)];
/// `--misfire-threshold` of the admin, in ms. Lower makes a loaded machine's ordinary delays
/// count as misfires.
const MISFIRE_THRESHOLD_MS: i64 = 2000;

/// Starts `chime admin` on `port`; `node_id` None lets it pick a fresh one, as every start
/// does by default.
fn start(bin: &Path, db: &str, port: u16, node_id: Option<&str>, log: &Path) -> OwnedProcess {
    let mut command = Command::new(bin);
    command
        .args([
            "admin",
            "--db",
            db,
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--context-path",
            "/xxl-job-admin",
        ])
        .args([
            "--tick",
            "200ms",
            "--lookahead",
            "2s",
            "--misfire-threshold",
            "2s",
            "--registry-refresh",
            "500ms",
            // Sends queue behind 200 runs/s and the replays on a small loaded machine: a reply
            // later than the default 3 s would count as a failed trigger of a run that ran.
            "--executor-timeout",
            "10s",
            // On PostgreSQL and MariaDB a restarted admin with a fresh node id claims fires once
            // the killed one's partition leases have expired: shorter than the downtime, and
            // long enough that a slow renewal on a loaded machine does not lose them mid-test.
            "--lease-ttl",
            "5s",
            "--default-tz",
            "UTC",
        ])
        .env("CHIME_API_TOKEN", API_TOKEN)
        .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
        .env("CHIME_ADMIN_PASSWORD", "crash-test")
        .env("RUST_LOG", "info,sqlx=warn");
    if let Some(node) = node_id {
        command.args(["--node-id", node]);
    }
    OwnedProcess::spawn(&format!("chime admin :{port}"), &mut command, Some(log))
}

/// The lines of an admin's log that tell how its partitions went (taken over, recovered, lost,
/// rounds abandoned) and its warnings: what explains a fire skipped or sent late.
fn partition_lines(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("partition") || l.contains("recovered"))
        .collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Waits until no run is pending or running: everything claimed was sent and answered.
async fn wait_all_runs_finished(api: &Api, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let (_, pending) = api.get("/v1/runs?status=pending&limit=5").await;
        let (_, running) = api.get("/v1/runs?status=running&limit=5").await;
        let open: Vec<&Value> = pending
            .as_array()
            .into_iter()
            .chain(running.as_array())
            .flatten()
            .collect();
        if open.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "runs still open after {secs} s: {open:#?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Waits until the admin on `port` answers `/healthz` and holds all 16 partitions, so it
/// claims fires of every job.
async fn wait_ready(port: u16, admin: &mut OwnedProcess) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await {
            if let Ok(h) = r.json::<Value>().await {
                if h["partitions"] == 16 {
                    return;
                }
            }
        }
        if let Some(status) = admin.exited() {
            panic!("the admin exited ({status}):\n{}", admin.output_tail(4000));
        }
        assert!(Instant::now() < deadline, "admin on port {port} did not become ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One run row as stored: what the REST API does not show is `fire_key`, the scheduled second
/// a row stands for (a FIRE_ONCE_NOW run found late is scheduled "now" but keeps its key).
#[derive(Debug, Clone)]
struct RunRow {
    id: i64,
    fire_key: Option<i64>,
    scheduled_at: i64,
    triggered_at: i64,
    trigger_type: String,
    trigger_code: i64,
    trigger_msg: String,
    handled_at: i64,
    handle_code: i64,
    handle_msg: String,
}

impl RunRow {
    fn skipped(&self) -> bool {
        self.trigger_code == -1
    }
    /// Ran and succeeded. The trigger result may be missing (code 0): the executor's callback
    /// and the trigger result are committed independently, and a kill between the two keeps
    /// only the callback; the run is then finished and never sent again.
    fn succeeded(&self) -> bool {
        matches!(self.trigger_code, 200 | 0) && self.handle_code == 200
    }
}

/// A TEXT column: MariaDB's reaches the `Any` driver as a BLOB.
fn text(row: &sqlx::any::AnyRow, column: &str) -> String {
    use sqlx::Row;
    row.try_get::<String, _>(column)
        .or_else(|_| {
            row.try_get::<Vec<u8>, _>(column)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        })
        .unwrap()
}

async fn run_rows(db_url: &str) -> HashMap<i64, Vec<RunRow>> {
    use sqlx::{Connection, Row};
    let mut conn = sqlx::AnyConnection::connect(db_url).await.unwrap();
    let rows = sqlx::query(
        "SELECT id, job_id, fire_key, scheduled_at, triggered_at, trigger_type, trigger_code, trigger_msg, \
         handled_at, handle_code, handle_msg FROM run",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let mut by_job: HashMap<i64, Vec<RunRow>> = HashMap::new();
    for row in rows {
        by_job.entry(row.get::<i64, _>("job_id")).or_default().push(RunRow {
            id: row.get("id"),
            fire_key: row.get("fire_key"),
            scheduled_at: row.get("scheduled_at"),
            triggered_at: row.get("triggered_at"),
            trigger_type: row.get("trigger_type"),
            trigger_code: row.get("trigger_code"),
            trigger_msg: text(&row, "trigger_msg"),
            handled_at: row.get("handled_at"),
            handle_code: row.get("handle_code"),
            handle_msg: text(&row, "handle_msg"),
        });
    }
    let _ = conn.close().await;
    by_job
}

async fn kill_9_under_load(kind: Db) {
    let bin = common::chime_binary();
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut admin = start(&bin, &db.url, port, None, &dir.path().join("admin-1.log"));
    wait_ready(port, &mut admin).await;
    let api = Api::new(format!("127.0.0.1:{port}").parse().unwrap());
    let ex = TestExecutor::start(&format!("http://127.0.0.1:{port}/xxl-job-admin"), "crash", ACCESS_TOKEN).await;
    api.ok("/v1/groups", json!({"app_name": "crash"})).await;
    api.wait_executors("crash", 1).await;
    let mut policy_of: BTreeMap<i64, &str> = BTreeMap::new();
    for (policy, jobs) in POLICIES {
        for _ in 0..jobs {
            let v = api
                .ok("/v1/jobs", json!({"group": "crash", "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "misfire_strategy": policy, "running": true}))
                .await;
            policy_of.insert(v["id"].as_i64().unwrap(), policy);
        }
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    admin.kill_9();
    let killed_at = chime_admin::model::now_ms();
    // Down for longer than look-ahead (2 s) plus misfire threshold (2 s).
    tokio::time::sleep(Duration::from_millis(6000)).await;
    let restart_at = chime_admin::model::now_ms();
    let mut admin = start(&bin, &db.url, port, None, &dir.path().join("admin-2.log"));
    wait_ready(port, &mut admin).await;
    let restarted_at = chime_admin::model::now_ms();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let stopping_at = chime_admin::model::now_ms();
    for id in policy_of.keys() {
        api.post(&format!("/v1/jobs/{id}/stop"), json!({})).await;
    }
    // Let everything scheduled so far be sent and answered.
    wait_all_runs_finished(&api, 90).await;
    admin.kill_9();

    let rows = run_rows(&db.url).await;
    let delivered = ex.log_ids();
    let mut deliveries: HashMap<i64, usize> = HashMap::new();
    for id in &delivered {
        *deliveries.entry(*id).or_default() += 1;
    }
    let outage = Outage {
        killed_at,
        restart_at,
        ready_at: restarted_at,
        stopping_at,
    };
    let mut totals: BTreeMap<&str, Totals> = BTreeMap::new();
    let mut problems = Vec::new();
    for (&job, &policy) in &policy_of {
        let runs = rows.get(&job).map(Vec::as_slice).unwrap_or_default();
        // The core promise first: each second of the window has exactly one row.
        let keys = runs.iter().map(|r| {
            r.fire_key
                .unwrap_or_else(|| panic!("job {job}: a run without a fire key: {r:?}"))
        });
        common::assert_every_second_ran_once(job, keys, killed_at, restarted_at);
        let t = totals.entry(policy).or_default();
        problems.extend(check_job(job, policy, runs, &outage, &deliveries, t));
    }
    assert!(
        problems.is_empty(),
        "{} problems (times relative to the kill; admin started again at +{} ms, ready at +{} ms):\n{}\n\
         what the restarted admin said of its partitions:\n{}",
        problems.len(),
        restart_at - killed_at,
        restarted_at - killed_at,
        problems.iter().take(25).cloned().collect::<Vec<_>>().join("\n"),
        partition_lines(&dir.path().join("admin-2.log"))
    );
    assert!(
        totals["CATCH_UP"].replayed > 0,
        "the downtime left fires for CATCH_UP to replay: {totals:?}"
    );
    // The executor saw each run id at most once, except runs in flight at the kill.
    let redelivered = delivered.len() - deliveries.len();
    let jobs: usize = POLICIES.iter().map(|(_, n)| n).sum();
    assert!(redelivered <= jobs * 2, "{redelivered} duplicate deliveries");
    eprintln!("{kind:?}: per policy {totals:?}; re-delivered after the kill: {redelivered}");
    ex.kill();
    drop(admin);
    db.drop_db().await;
}

/// When the admin was down, epoch ms.
struct Outage {
    /// SIGKILL sent.
    killed_at: i64,
    /// Second process started.
    restart_at: i64,
    /// Second process holds every partition.
    ready_at: i64,
    /// The test began stopping the jobs (one request each, while they fire).
    stopping_at: i64,
}

/// What happened to a policy's fires.
#[derive(Debug, Default)]
struct Totals {
    runs: usize,
    skipped: usize,
    /// Missed fires run after the restart (type MISFIRE).
    replayed: usize,
    /// Recorded as skipped although the executor got them (sent just before the kill).
    skipped_but_delivered: usize,
    /// Finished runs whose trigger result the kill lost (see [`RunRow::succeeded`]).
    trigger_result_lost: usize,
}

/// Checks one job's rows against its misfire policy; returns what is wrong.
fn check_job(
    job: i64,
    policy: &str,
    runs: &[RunRow],
    outage: &Outage,
    deliveries: &HashMap<i64, usize>,
    totals: &mut Totals,
) -> Vec<String> {
    let mut problems = Vec::new();
    let rel = |t: i64| t - outage.killed_at;
    let show = |r: &RunRow| {
        format!(
            "run {} second +{} (scheduled +{}) {} trigger {} at +{} ({:?}) handle {} at +{} ({:?}), delivered {}x",
            r.id,
            rel(r.fire_key.unwrap_or(0)),
            rel(r.scheduled_at),
            r.trigger_type,
            r.trigger_code,
            rel(r.triggered_at),
            r.trigger_msg.rsplit("<br>").next().unwrap_or(""),
            r.handle_code,
            rel(r.handled_at),
            r.handle_msg,
            deliveries.get(&r.id).copied().unwrap_or(0)
        )
    };
    let key = |r: &RunRow| r.fire_key.unwrap_or(0);
    for r in runs {
        if !matches!(r.trigger_type.as_str(), "CRON" | "MISFIRE") {
            problems.push(format!("job {job} ({policy}): unexpected trigger type: {}", show(r)));
        }
        if !(r.succeeded() || r.skipped()) {
            problems.push(format!("job {job} ({policy}): neither ran nor skipped: {}", show(r)));
        }
        if r.succeeded() && !deliveries.contains_key(&r.id) {
            problems.push(format!("job {job} ({policy}): succeeded undelivered: {}", show(r)));
        }
        if r.skipped() && deliveries.contains_key(&r.id) {
            totals.skipped_but_delivered += 1;
        }
        if r.trigger_code == 0 && r.handle_code != 0 {
            totals.trigger_result_lost += 1;
        }
        // Seconds well before the kill and well after the restart ran, whatever the policy.
        // (From `stopping_at` on the test's own requests compete with the fires.)
        let s = key(r);
        let steady = s < outage.killed_at - 2000 || (s > outage.ready_at + 3000 && s < outage.stopping_at);
        if steady && !r.succeeded() {
            problems.push(format!(
                "job {job} ({policy}): outside the outage, not run: {}",
                show(r)
            ));
        }
    }
    let skipped: BTreeSet<i64> = runs.iter().filter(|r| r.skipped()).map(key).collect();
    // Missed fires of the outage run after the restart.
    let replayed: Vec<&RunRow> = runs
        .iter()
        .filter(|r| r.trigger_type == "MISFIRE" && r.succeeded() && key(r) < outage.ready_at + 3000)
        .collect();
    totals.runs += runs.len();
    totals.skipped += skipped.len();
    totals.replayed += replayed.len();
    // Seconds after the kill that were already late when the admin came back: no admin was up
    // to run them on time.
    let late: Vec<i64> = runs
        .iter()
        .map(key)
        .filter(|s| *s > outage.killed_at && *s < outage.restart_at - MISFIRE_THRESHOLD_MS)
        .collect();
    if late.is_empty() {
        problems.push(format!("job {job}: no second fell in the outage"));
    }
    let replayed_keys: BTreeSet<i64> = replayed.iter().map(|r| key(r)).collect();
    match policy {
        "CATCH_UP" => {
            if !skipped.is_empty() {
                problems.push(format!("job {job} (CATCH_UP): skipped seconds {skipped:?}"));
            }
        }
        "DO_NOTHING" | "FIRE_ONCE_NOW" => {
            let missing: Vec<i64> = late
                .iter()
                .filter(|s| !skipped.contains(s) && !replayed_keys.contains(s))
                .map(|s| rel(*s))
                .collect();
            if !missing.is_empty() {
                problems.push(format!(
                    "job {job} ({policy}): late seconds {missing:?} neither skipped nor run as MISFIRE"
                ));
            }
            // DO_NOTHING runs none of the missed fires, FIRE_ONCE_NOW exactly one.
            let expected = usize::from(policy == "FIRE_ONCE_NOW");
            if replayed.len() != expected {
                problems.push(format!(
                    "job {job} ({policy}): {} missed fires run after the restart, expected {expected}: [{}]; skipped seconds {:?}",
                    replayed.len(),
                    replayed.iter().map(|r| show(r)).collect::<Vec<_>>().join("; "),
                    skipped.iter().map(|s| rel(*s)).collect::<Vec<_>>()
                ));
            }
        }
        other => unreachable!("{other}"),
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_loses_no_fire_and_fires_none_twice_sqlite() {
    kill_9_under_load(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_loses_no_fire_and_fires_none_twice_postgres() {
    kill_9_under_load(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_loses_no_fire_and_fires_none_twice_mariadb() {
    kill_9_under_load(Db::MySql).await;
}

/// An admin with a configured `--node-id`, killed with SIGKILL and started again at once with
/// the same id — a supervisor restarting a crashed service. Its partition leases are still
/// its own and unexpired, and the runs it claimed before the crash are pending in the
/// database: they must be sent (or handled as misfires) like after any other restart, not left
/// pending for ever.
async fn restart_with_the_same_node_id(kind: Db) {
    const JOBS: usize = 20;
    let bin = common::chime_binary();
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let node = Some("chime-admin-1");
    let mut admin = start(&bin, &db.url, port, node, &dir.path().join("admin-1.log"));
    wait_ready(port, &mut admin).await;
    let api = Api::new(format!("127.0.0.1:{port}").parse().unwrap());
    let ex = TestExecutor::start(
        &format!("http://127.0.0.1:{port}/xxl-job-admin"),
        "same-node",
        ACCESS_TOKEN,
    )
    .await;
    api.ok("/v1/groups", json!({"app_name": "same-node"})).await;
    api.wait_executors("same-node", 1).await;
    let mut ids = Vec::new();
    for _ in 0..JOBS {
        let v = api
            .ok("/v1/jobs", json!({"group": "same-node", "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "misfire_strategy": "CATCH_UP", "running": true}))
            .await;
        ids.push(v["id"].as_i64().unwrap());
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    admin.kill_9();
    let killed_at = chime_admin::model::now_ms();
    let mut admin = start(&bin, &db.url, port, node, &dir.path().join("admin-2.log"));
    wait_ready(port, &mut admin).await;
    let restarted_at = chime_admin::model::now_ms();
    tokio::time::sleep(Duration::from_secs(4)).await;
    for id in &ids {
        api.post(&format!("/v1/jobs/{id}/stop"), json!({})).await;
    }
    wait_all_runs_finished(&api, 30).await;
    for id in &ids {
        let runs = api.runs(*id).await;
        for r in &runs {
            assert_eq!(r["status"], "success", "job {id}: every fire ran: {r}");
        }
        common::assert_every_second_ran_once(
            *id,
            runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()),
            killed_at,
            restarted_at,
        );
    }
    ex.kill();
    drop(admin);
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_with_the_same_node_id_sends_what_was_claimed_sqlite() {
    restart_with_the_same_node_id(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_with_the_same_node_id_sends_what_was_claimed_postgres() {
    restart_with_the_same_node_id(Db::Postgres).await;
}
