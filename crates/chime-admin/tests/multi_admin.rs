//! Several admins on one database: two real `chime admin` processes share PostgreSQL (and
//! MariaDB), jobs fire every second with the default misfire policy (`DO_NOTHING`), lease time
//! and misfire threshold. Both hold partitions (`/healthz`), and every scheduled second has
//! exactly one run. Then one admin is killed with SIGKILL (or two of three, one after the
//! other), or frozen with SIGSTOP for 20 s: the others take over its partitions once their
//! leases lapse, soon enough that every second still has exactly one run and it succeeded —
//! none skipped as a misfire, none lost, none doubled — and a frozen admin, continued, sends
//! nothing it had claimed (counted at the executor: no run received twice). A rolling restart
//! of three admins loses and doubles nothing either.

mod common;

use common::executor::TestExecutor;
use common::{Api, Db, TestDb, ACCESS_TOKEN, API_TOKEN};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Two jobs per partition.
const JOBS: usize = 32;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An admin process, killed when dropped (also when the test fails).
struct AdminProc {
    child: Child,
    port: u16,
}

impl Drop for AdminProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path, db: &str, node: &str, log: &Path) -> AdminProc {
    start_on(bin, db, node, log, free_port())
}

/// An admin on a given port (a restarted one keeps its address, which the executor uses).
fn start_on(bin: &Path, db: &str, node: &str, log: &Path, port: u16) -> AdminProc {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let child = Command::new(bin)
        .args(["admin", "--db", db, "--listen", &format!("127.0.0.1:{port}")])
        .args(["--context-path", "/xxl-job-admin", "--node-id", node])
        .args(["--tick", "200ms", "--lookahead", "2s"])
        .args(["--registry-refresh", "500ms", "--default-tz", "UTC"])
        .env("CHIME_API_TOKEN", API_TOKEN)
        .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
        .env("CHIME_ADMIN_PASSWORD", "multi-admin-test")
        .env("RUST_LOG", "info,sqlx=warn")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect("chime admin starts");
    AdminProc { child, port }
}

async fn health(port: u16) -> Option<Value> {
    let r = reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await.ok()?;
    if r.status() != 200 {
        return None;
    }
    r.json().await.ok()
}

/// Waits until `/healthz` of `port` reports a number of partitions that `pred` accepts.
async fn wait_partitions(port: u16, what: &str, pred: impl Fn(u64) -> bool) -> u64 {
    wait_shares(&[port], what, |shares| pred(shares[0])).await[0]
}

/// Admins sharing the partitions of one database, an executor talking to the last of them,
/// and `JOBS` jobs firing every second, sent by every admin.
struct Cluster {
    kind: Db,
    db: TestDb,
    dir: tempfile::TempDir,
    admins: Vec<AdminProc>,
    /// The REST API of the last admin, which every scenario keeps alive.
    api_last: Api,
    ex: TestExecutor,
    ids: Vec<i64>,
}

/// Waits until the partitions the admins on `ports` report (`/healthz`, in port order) satisfy
/// `pred`, and returns them. A partition moving between two admins is counted by neither or,
/// for a moment, by both, so a sum of 16 means every partition is held.
async fn wait_shares(ports: &[u16], what: &str, pred: impl Fn(&[u64]) -> bool) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut shares = Vec::new();
        for port in ports {
            shares.push(health(*port).await.and_then(|h| h["partitions"].as_u64()).unwrap_or(0));
        }
        if pred(&shares) {
            return shares;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {shares:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every admin holds some partitions, and together all 16.
fn shared_by_all(shares: &[u64]) -> bool {
    shares.iter().all(|n| (1..16).contains(n)) && shares.iter().sum::<u64>() == 16
}

async fn admins_firing(kind: Db, count: usize) -> Cluster {
    let bin = common::chime_binary();
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("admins.log");
    let mut admins = Vec::new();
    for k in 0..count {
        let node = format!("admin-{}", (b'a' + k as u8) as char);
        let admin = start(&bin, &db.url, &node, &log);
        if k == 0 {
            wait_partitions(admin.port, "the first admin to start", |n| n == 16).await;
        } else {
            // The others give back partitions beyond their fair share; the new one takes them.
            wait_partitions(admin.port, "a new admin to hold partitions", |n| n >= 1).await;
        }
        admins.push(admin);
    }
    let ports: Vec<u16> = admins.iter().map(|a| a.port).collect();
    let api_first = Api::new(format!("127.0.0.1:{}", ports[0]).parse().unwrap());
    let api_last = Api::new(format!("127.0.0.1:{}", ports[count - 1]).parse().unwrap());
    // The executor talks to the last admin, which survives; all read the registry from the
    // database.
    let ex = TestExecutor::start(
        &format!("http://127.0.0.1:{}/xxl-job-admin", ports[count - 1]),
        "multi",
        ACCESS_TOKEN,
    )
    .await;
    api_first.ok("/v1/groups", json!({"app_name": "multi"})).await;
    api_first.wait_executors("multi", 1).await;
    api_last.wait_executors("multi", 1).await;
    let mut ids = Vec::new();
    for _ in 0..JOBS {
        let v = api_first
            .ok("/v1/jobs", json!({"group": "multi", "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "running": true}))
            .await;
        ids.push(v["id"].as_i64().unwrap());
    }
    // The other claim loops learn of the new jobs from the database.
    tokio::time::sleep(Duration::from_secs(5)).await;
    wait_shares(&ports, "the admins to share the partitions", shared_by_all).await;
    // Every admin sent runs: the trigger report names the admin that sent it.
    let (_, recent) = api_last.get("/v1/runs?status=success&limit=2000").await;
    let recent = recent.as_array().cloned().unwrap_or_default();
    for k in 0..count {
        let node = format!("admin-{}", (b'a' + k as u8) as char);
        let sent = runs_sent_by(&api_last, &recent, &node).await;
        assert!(sent > 0, "{node} sent no run");
    }
    Cluster {
        kind,
        db,
        dir,
        admins,
        api_last,
        ex,
        ids,
    }
}

impl Cluster {
    fn port(&self, k: usize) -> u16 {
        self.admins[k].port
    }

    /// Kills admin `k` with SIGKILL.
    fn kill(&mut self, k: usize) {
        self.admins[k].child.kill().unwrap();
        self.admins[k].child.wait().unwrap();
    }

    /// Stops admin `k` as a service manager does (SIGTERM), waits for it to exit, and starts
    /// it again with the same node id and address.
    fn restart(&mut self, k: usize) {
        let pid = self.admins[k].child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let status = self.admins[k].child.wait().unwrap();
        assert!(status.success(), "admin {k} stopped cleanly: {status:?}");
        let node = format!("admin-{}", (b'a' + k as u8) as char);
        let log = self.dir.path().join("admins.log");
        let port = self.admins[k].port;
        self.admins[k] = start_on(&common::chime_binary(), &self.db.url, &node, &log, port);
    }

    /// Stops the jobs through the last admin, waits until no run is open, and checks every job: each second
    /// from before `outage_start` to after `outage_end` has exactly one run, sent as scheduled
    /// (no misfire: the outage is shorter than the misfire threshold) and successful, and the
    /// executor received every run. Returns how many runs the executor received more than once.
    async fn check_every_second_ran_once(self, outage_start: i64, outage_end: i64) -> usize {
        let Cluster {
            kind,
            db,
            admins,
            api_last: api,
            ex,
            ids,
            ..
        } = self;
        tokio::time::sleep(Duration::from_secs(4)).await;
        for id in &ids {
            api.post(&format!("/v1/jobs/{id}/stop"), json!({})).await;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, pending) = api.get("/v1/runs?status=pending&limit=10000").await;
            let (_, running) = api.get("/v1/runs?status=running&limit=10000").await;
            let open =
                pending.as_array().map(|a| a.len()).unwrap_or(0) + running.as_array().map(|a| a.len()).unwrap_or(0);
            if open == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "{open} runs still open after 60 s");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let mut total = 0;
        let mut latest = 0;
        for id in &ids {
            let runs = api.runs(*id).await;
            for r in &runs {
                // No misfire: the takeover is shorter than the misfire threshold, so no fire
                // is skipped or replayed; each ran as scheduled, at most late.
                assert_eq!(r["trigger_type"], "CRON", "{r}");
                assert_eq!(r["status"], "success", "every fire ran: {r}");
                latest = latest.max(r["triggered_at"].as_i64().unwrap() - r["scheduled_at"].as_i64().unwrap());
            }
            total += runs.len();
            common::assert_every_second_ran_once(
                *id,
                runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()),
                outage_start,
                outage_end,
            );
        }
        let log_ids = ex.log_ids();
        let distinct: HashSet<i64> = log_ids.iter().copied().collect();
        assert!(
            distinct.len() >= total,
            "every run row was delivered ({} < {total})",
            distinct.len()
        );
        let twice = log_ids.len() - distinct.len();
        eprintln!(
            "{kind:?}: {total} runs of {JOBS} jobs, latest sent {latest} ms after its second, received twice: {twice}"
        );
        ex.kill();
        drop(admins);
        db.drop_db().await;
        twice
    }
}

async fn two_admins_share_and_take_over(kind: Db) {
    let mut cluster = admins_firing(kind, 2).await;
    cluster.kill(0);
    let killed_at = chime_admin::model::now_ms();
    // Once A's leases lapse (the default lease time), B holds every partition.
    wait_partitions(cluster.port(1), "admin B to take over all partitions", |n| n == 16).await;
    let took_over_at = chime_admin::model::now_ms();
    eprintln!(
        "{kind:?}: B held every partition {} ms after the kill",
        took_over_at - killed_at
    );
    cluster.check_every_second_ran_once(killed_at, took_over_at).await;
}

/// Three admins; the first is killed, then, once the two others share everything, the second:
/// the third ends up with every partition, and still no second is skipped or doubled.
async fn two_of_three_admins_killed_one_after_the_other(kind: Db) {
    let mut cluster = admins_firing(kind, 3).await;
    cluster.kill(0);
    let first_killed_at = chime_admin::model::now_ms();
    let survivors = [cluster.port(1), cluster.port(2)];
    wait_shares(&survivors, "the two survivors to hold everything", |shares| {
        shares.iter().sum::<u64>() == 16
    })
    .await;
    eprintln!(
        "{kind:?}: the two survivors held every partition {} ms after the first kill",
        chime_admin::model::now_ms() - first_killed_at
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    cluster.kill(1);
    let second_killed_at = chime_admin::model::now_ms();
    wait_partitions(cluster.port(2), "the last admin to take over all partitions", |n| {
        n == 16
    })
    .await;
    let took_over_at = chime_admin::model::now_ms();
    eprintln!(
        "{kind:?}: the last admin held every partition {} ms after the second kill",
        took_over_at - second_killed_at
    );
    cluster.check_every_second_ran_once(first_killed_at, took_over_at).await;
}

/// Three admins restarted one by one (SIGTERM, start again with the same node id), each
/// waiting until the three share every partition again: no second skipped or doubled, and no
/// run received twice.
async fn a_rolling_restart_of_three_admins(kind: Db) {
    let mut cluster = admins_firing(kind, 3).await;
    let ports: Vec<u16> = (0..3).map(|k| cluster.port(k)).collect();
    let started_at = chime_admin::model::now_ms();
    for k in 0..3 {
        let stopping = chime_admin::model::now_ms();
        cluster.restart(k);
        let what = format!("the partitions to be shared again after restarting admin {k}");
        wait_shares(&ports, &what, shared_by_all).await;
        eprintln!(
            "{kind:?}: admin {k} restarted and the three shared everything again after {} ms",
            chime_admin::model::now_ms() - stopping
        );
    }
    let done_at = chime_admin::model::now_ms();
    let twice = cluster.check_every_second_ran_once(started_at, done_at).await;
    assert_eq!(twice, 0, "runs received twice during the rolling restart");
}

/// A frozen admin (SIGSTOP) loses its partitions to the other; when it runs again (SIGCONT) it
/// sends nothing of what it had claimed for them: its deadline passed while it was stopped.
/// Counted at the executor: no run is received twice.
async fn a_frozen_admin_sends_nothing_stale(kind: Db) {
    let cluster = admins_firing(kind, 2).await;
    let pid = cluster.admins[0].child.id().to_string();
    let signal = |sig: &str| {
        let ok = Command::new("kill").args([sig, &pid]).status().unwrap().success();
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    let stopped_at = chime_admin::model::now_ms();
    wait_partitions(cluster.port(1), "admin B to take over all partitions", |n| n == 16).await;
    let took_over_at = chime_admin::model::now_ms();
    eprintln!(
        "{kind:?}: B held every partition {} ms after SIGSTOP",
        took_over_at - stopped_at
    );
    // Long enough for A's timer to hold runs due while it was stopped, and for B to send them.
    tokio::time::sleep(Duration::from_secs(20)).await;
    signal("-CONT");
    // A wakes up past its deadline: it must send none of them, then takes its share again.
    wait_partitions(cluster.port(0), "admin A to hold partitions again", |n| {
        (1..16).contains(&n)
    })
    .await;
    let twice = cluster.check_every_second_ran_once(stopped_at, took_over_at).await;
    assert_eq!(twice, 0, "runs received twice after the frozen admin woke up");
}

/// How many of `runs` were sent by `node` (the trigger report names the sending admin).
async fn runs_sent_by(api: &Api, runs: &[Value], node: &str) -> usize {
    let mut n = 0;
    for r in runs.iter().take(200) {
        let id = r["id"].as_i64().unwrap();
        let (_, full) = api.get(&format!("/v1/runs/{id}")).await;
        if full["trigger_msg"].as_str().is_some_and(|m| m.contains(node)) {
            n += 1;
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_postgres() {
    two_admins_share_and_take_over(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_mysql() {
    two_admins_share_and_take_over(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_admins_two_killed_postgres() {
    two_of_three_admins_killed_one_after_the_other(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_admins_two_killed_mysql() {
    two_of_three_admins_killed_one_after_the_other(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_restart_postgres() {
    a_rolling_restart_of_three_admins(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rolling_restart_mysql() {
    a_rolling_restart_of_three_admins(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn frozen_admin_postgres() {
    a_frozen_admin_sends_nothing_stale(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn frozen_admin_mysql() {
    a_frozen_admin_sends_nothing_stale(Db::MySql).await;
}
