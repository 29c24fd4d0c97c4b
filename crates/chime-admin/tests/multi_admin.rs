//! Several admins on one database: two real `chime admin` processes share PostgreSQL (and
//! MariaDB), jobs fire every second. Both hold partitions (`/healthz`), and every scheduled
//! second has exactly one run. Then one admin is killed with SIGKILL: the other takes over
//! its partitions once their leases expire, and still every second has exactly one run —
//! none lost, none doubled.

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
    let port = free_port();
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let child = Command::new(bin)
        .args(["admin", "--db", db, "--listen", &format!("127.0.0.1:{port}")])
        .args(["--context-path", "/xxl-job-admin", "--node-id", node])
        .args(["--tick", "200ms", "--lookahead", "2s", "--misfire-threshold", "1s"])
        .args([
            "--registry-refresh",
            "500ms",
            "--lease-ttl",
            "3s",
            "--default-tz",
            "UTC",
        ])
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
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(h) = health(port).await {
            let n = h["partitions"].as_u64().unwrap_or(0);
            if pred(n) {
                return n;
            }
        }
        assert!(
            Instant::now() < deadline,
            "admin on port {port}: timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn two_admins_share_and_take_over(kind: Db) {
    let bin = common::chime_binary();
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("admins.log");
    let mut a = start(&bin, &db.url, "admin-a", &log);
    wait_partitions(a.port, "admin A to start", |n| n == 16).await;
    let b = start(&bin, &db.url, "admin-b", &log);
    // A gives back partitions beyond its fair share; B takes them.
    let held_b = wait_partitions(b.port, "admin B to hold partitions", |n| n >= 1).await;
    let held_a = wait_partitions(a.port, "admin A to share", |n| n < 16).await;
    assert!(held_a + held_b <= 16, "a partition held twice: {held_a} + {held_b}");

    let api_a = Api::new(format!("127.0.0.1:{}", a.port).parse().unwrap());
    let api_b = Api::new(format!("127.0.0.1:{}", b.port).parse().unwrap());
    // The executor talks to B, the admin that survives; both read the registry from the database.
    let ex = TestExecutor::start(
        &format!("http://127.0.0.1:{}/xxl-job-admin", b.port),
        "multi",
        ACCESS_TOKEN,
    )
    .await;
    api_a.ok("/v1/groups", json!({"app_name": "multi"})).await;
    api_a.wait_executors("multi", 1).await;
    api_b.wait_executors("multi", 1).await;
    let mut ids = Vec::new();
    for _ in 0..JOBS {
        let v = api_a
            .ok("/v1/jobs", json!({"group": "multi", "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "misfire_strategy": "CATCH_UP", "running": true}))
            .await;
        ids.push(v["id"].as_i64().unwrap());
    }
    // B's claim loop learns of the new jobs from the database.
    tokio::time::sleep(Duration::from_secs(5)).await;
    // B before A: a partition moves from A to B only after A gave it back, so this order never
    // counts a moving partition twice.
    let held_b = wait_partitions(b.port, "admin B's share", |n| (1..16).contains(&n)).await;
    let held_a = wait_partitions(a.port, "admin A's share", |n| (1..16).contains(&n)).await;
    assert!(held_a + held_b <= 16, "a partition held twice: {held_a} + {held_b}");
    // Both admins sent runs: the trigger report names the admin that sent it.
    let (_, recent) = api_b.get("/v1/runs?status=success&limit=2000").await;
    let recent = recent.as_array().cloned().unwrap_or_default();
    let by_a = runs_sent_by(&api_b, &recent, "admin-a").await;
    let by_b = runs_sent_by(&api_b, &recent, "admin-b").await;
    assert!(by_a > 0 && by_b > 0, "runs sent by A: {by_a}, by B: {by_b}");

    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    let killed_at = chime_admin::model::now_ms();
    // After the lease TTL (3 s), B holds every partition.
    wait_partitions(b.port, "admin B to take over all partitions", |n| n == 16).await;
    let took_over_at = chime_admin::model::now_ms();
    tokio::time::sleep(Duration::from_secs(4)).await;
    for id in &ids {
        api_b.post(&format!("/v1/jobs/{id}/stop"), json!({})).await;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, pending) = api_b.get("/v1/runs?status=pending&limit=10000").await;
        let (_, running) = api_b.get("/v1/runs?status=running&limit=10000").await;
        let open = pending.as_array().map(|a| a.len()).unwrap_or(0) + running.as_array().map(|a| a.len()).unwrap_or(0);
        if open == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} runs still open after 60 s");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut total = 0;
    for id in &ids {
        let runs = api_b.runs(*id).await;
        for r in &runs {
            assert!(matches!(r["trigger_type"].as_str(), Some("CRON" | "MISFIRE")), "{r}");
            assert_eq!(r["status"], "success", "every fire ran: {r}");
        }
        total += runs.len();
        common::assert_every_second_ran_once(
            *id,
            runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()),
            killed_at,
            took_over_at,
        );
    }
    let log_ids = ex.log_ids();
    let distinct: HashSet<i64> = log_ids.iter().copied().collect();
    assert!(
        distinct.len() >= total,
        "every run row was delivered ({} < {total})",
        distinct.len()
    );
    eprintln!(
        "{kind:?}: {total} runs of {JOBS} jobs, re-delivered after the kill: {}",
        log_ids.len() - distinct.len()
    );
    ex.kill();
    drop(b);
    db.drop_db().await;
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
