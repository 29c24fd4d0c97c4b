//! A limit held by two real `chime admin` processes sharing PostgreSQL or MariaDB, across a
//! `kill -9` of one of them: 1,000 runs of 50 jobs queued behind a limit of 5, each run reaching
//! the executor exactly once and the executor never running more than 5 at a time, and, until
//! the kill, no run reaching it while a run of higher priority had been waiting in the queue.

mod common;

use common::cluster::{node_name, Admin};
use common::executor::TestExecutor;
use common::process::free_port;
use common::{eventually, status, Api, Db, TestDb, ACCESS_TOKEN};
use futures::StreamExt;
use reqwest::Method;
use serde_json::json;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Jobs sharing the limit, and runs of each.
const JOBS: usize = 50;
const RUNS_PER_JOB: usize = 20;
/// The limit.
const MAX_RUNNING: usize = 5;
/// Job `k`'s priority: three levels far enough apart that a few minutes' aging (a point a
/// minute) cannot reorder them.
fn priority(k: usize) -> i64 {
    (k % 3) as i64 * 100
}

/// A queue round's time, and more: a run queued less than this before a round's send was maybe
/// not yet there to be chosen, and a run first in line that another admin holds goes at that
/// admin's next round (the admins tick every 200 ms), so it may reach the executor this much
/// after a run of lower priority that took a slot left over beside it.
const ROUND_MARGIN_MS: i64 = 1_000;

/// Watches the queue through `api` until `stop`: the time each run listed was queued.
async fn watch_queue(api: Api, stop: Arc<AtomicBool>) -> HashMap<i64, i64> {
    let mut queued_at = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        let (s, listed) = api.get("/v1/queue").await;
        if s == 200 {
            for e in listed.as_array().into_iter().flatten() {
                if let (Some(run), Some(at)) = (e["run_id"].as_i64(), e["queued_at"].as_i64()) {
                    queued_at.entry(run).or_insert(at);
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    queued_at
}

/// Waits until `admin` holds partitions (it has migrated the database and schedules).
async fn ready(admin: &Admin, http: &reqwest::Client) {
    eventually(60, &format!("{} holds partitions", admin.node), || async {
        match admin.partitions(http).await {
            Some(n) if n > 0 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
}

async fn a_limit_holds_across_admins_and_a_kill(kind: Db) {
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let bin = common::chime_binary();
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(1))
        .no_proxy()
        .build()
        .unwrap();
    // One after the other: the first migrates the database.
    let mut admins: Vec<Admin> = Vec::new();
    for k in 0..2 {
        let node = node_name(k);
        let at = (IpAddr::V4(Ipv4Addr::LOCALHOST), free_port());
        let log = dir.path().join(format!("{node}.log"));
        admins.push(Admin::start(&bin, &db.url, &node, at, None, &log));
        ready(&admins[k], &http).await;
    }
    let (a, b) = (admins[0].api(), admins[1].api());
    a.ok("/v1/groups", json!({ "app_name": "pool" })).await;
    // The executor reports to the admin that survives.
    let base_b = format!("http://127.0.0.1:{}/xxl-job-admin", admins[1].port);
    let ex = TestExecutor::start(&base_b, "pool", ACCESS_TOKEN).await;
    a.wait_executors("pool", 1).await;
    b.wait_executors("pool", 1).await;
    let body = json!({ "max_running": MAX_RUNNING });
    let (s, v) = a.call(Method::PUT, "/v1/limits/pool-db", Some(body)).await;
    assert_eq!(s, 200, "{v}");

    let stop_watching = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch_queue(b.clone(), stop_watching.clone()));
    let mut jobs = Vec::new();
    for k in 0..JOBS {
        let body = json!({
            "group": "pool", "handler": "slow", "concurrency_key": "pool-db", "priority": priority(k),
        });
        jobs.push(a.ok("/v1/jobs", body).await["id"].as_i64().unwrap());
    }
    // Triggered through both admins, eight at a time: each admin sends (or queues) the runs
    // it was asked for.
    let triggers = (0..RUNS_PER_JOB).flat_map(|round| jobs.iter().enumerate().map(move |(k, job)| (k + round, *job)));
    let runs: HashMap<i64, i64> = futures::stream::iter(triggers)
        .map(|(n, job)| {
            let api = if n % 2 == 0 { &a } else { &b };
            async move {
                let run = api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
                    .as_i64()
                    .unwrap();
                (run, job)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert_eq!(runs.len(), JOBS * RUNS_PER_JOB);
    // A third of the way through, the first admin dies.
    eventually(90, "a third of the runs delivered", || async {
        let n = ex.run_count();
        if n >= runs.len() / 3 {
            Ok(())
        } else {
            Err(format!("{n} delivered"))
        }
    })
    .await;
    let killed_at = chime_admin::model::now_ms();
    admins[0].signal(libc::SIGKILL);

    eventually(150, "every run succeeded", || async {
        let mut open = 0;
        for job in &jobs {
            open += b.runs(*job).await.iter().filter(|r| status(r) != "success").count();
        }
        if open == 0 {
            Ok(())
        } else {
            Err(format!("{open} runs not yet succeeded; {} delivered", ex.run_count()))
        }
    })
    .await;
    let mut delivered = ex.log_ids();
    delivered.sort_unstable();
    let mut expected: Vec<i64> = runs.keys().copied().collect();
    expected.sort_unstable();
    assert_eq!(
        delivered, expected,
        "{kind:?}: every run reached the executor exactly once"
    );
    stop_watching.store(true, Ordering::Relaxed);
    let queued_at = watcher.await.unwrap();
    // The order across admins, from the queue's own times: until the kill, no run reached the
    // executor while a run of higher priority, waiting since a round before, went on waiting
    // for more than a round.
    let job_priority: HashMap<i64, i64> = jobs.iter().enumerate().map(|(k, j)| (*j, priority(k))).collect();
    let of_run = |run: &i64| job_priority[&runs[run]];
    let delivered_at: HashMap<i64, i64> = ex.deliveries().iter().map(|d| (d.log_id, d.at)).collect();
    let mut passed = Vec::new();
    for (a, at_a) in delivered_at.iter().filter(|(_, at)| **at < killed_at) {
        for (b, queued_b) in &queued_at {
            let (Some(at_b), Some(_)) = (delivered_at.get(b), runs.get(b)) else {
                continue;
            };
            if of_run(b) > of_run(a) && queued_b + ROUND_MARGIN_MS < *at_a && *at_b > at_a + ROUND_MARGIN_MS {
                passed.push((*a, *b, *queued_b, *at_a, *at_b));
            }
        }
    }
    assert!(
        queued_at.len() >= MAX_RUNNING * 20,
        "{kind:?}: runs waited in the queue: {}",
        queued_at.len()
    );
    assert!(
        passed.is_empty(),
        "{kind:?}: {} deliveries passed a higher-priority run that waited on (run, passed, its queued_at, sent at, passed at): {:?}",
        passed.len(),
        &passed[..passed.len().min(10)]
    );
    let most = ex.seen.lock().unwrap().slow_most;
    assert!(
        most <= MAX_RUNNING,
        "{kind:?}: {most} ran at once under a limit of {MAX_RUNNING}"
    );
    assert_eq!(most, MAX_RUNNING, "{kind:?}: the limit was used");
    let (_, limits) = b.get("/v1/limits").await;
    eventually(20, "every slot given back", || async {
        let (_, limits) = b.get("/v1/limits").await;
        if limits[0]["running"] == 0 && limits[0]["queued"] == 0 {
            Ok(())
        } else {
            Err(limits.to_string())
        }
    })
    .await;
    drop(limits);
    ex.kill();
    drop(admins);
    db.drop_db().await;
}

#[tokio::test]
async fn a_limit_holds_across_admins_and_a_kill_postgres() {
    a_limit_holds_across_admins_and_a_kill(Db::Postgres).await;
}

#[tokio::test]
async fn a_limit_holds_across_admins_and_a_kill_mariadb() {
    a_limit_holds_across_admins_and_a_kill(Db::MySql).await;
}
