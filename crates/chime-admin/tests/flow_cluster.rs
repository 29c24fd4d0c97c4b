//! A limit held by two real `chime admin` processes sharing PostgreSQL or MariaDB, with two real
//! `chime executor` processes running shell jobs, across a `kill -9` of one admin and then of
//! the executor doing the work: 1,000 runs of 50 jobs queued behind a limit of 5. Each run's
//! script writes when it starts and when it ends to one file, so what ran is read from what the
//! executors did: no run started twice, never more than 5 at once, every run ended (the few the
//! killed executor held were failed as lost and their retries ran on the other), and, until
//! the admin's kill, no run started while a run of higher priority went on waiting.

mod common;

use common::cluster::{node_name, Admin};
use common::demo_executor::DemoExecutor;
use common::process::free_port;
use common::{eventually, status, Api, Db, TestDb};
use futures::StreamExt;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
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
/// admin's next round (the admins tick every 200 ms), so it may start this much after a run of
/// lower priority that took a slot left over beside it.
const ROUND_MARGIN_MS: i64 = 1_000;

/// The jobs' script: a line when it starts and one when it ends, each with the run and the
/// time in ms, appended to `events` (lines this short are written whole).
fn script(events: &Path) -> String {
    let file = events.display();
    format!(
        "#!/bin/sh\n\
         echo \"S $CHIME_LOG_ID $(date +%s%3N)\" >> {file}\n\
         sleep 0.05\n\
         echo \"E $CHIME_LOG_ID $(date +%s%3N)\" >> {file}\n"
    )
}

/// What the scripts wrote: each run's start times (one, unless it ran twice) and end time.
fn read_events(events: &Path) -> (HashMap<i64, Vec<i64>>, HashMap<i64, i64>) {
    let text = std::fs::read_to_string(events).unwrap_or_default();
    let (mut starts, mut ends) = (HashMap::<i64, Vec<i64>>::new(), HashMap::new());
    for line in text.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        let [kind, run, at] = parts[..] else {
            panic!("a torn line: {line:?}")
        };
        let (run, at): (i64, i64) = (run.parse().unwrap(), at.parse().unwrap());
        match kind {
            "S" => starts.entry(run).or_default().push(at),
            _ => {
                ends.insert(run, at);
            }
        }
    }
    (starts, ends)
}

/// The most runs running at one instant, from their (start, end) times, and the first instant
/// it was reached; an end at the same millisecond as a start counts first.
fn most_at_once(spans: impl Iterator<Item = (i64, i64)>) -> (usize, i64) {
    let mut edges: Vec<(i64, i32)> = spans.flat_map(|(s, e)| [(s, 1), (e, -1)]).collect();
    edges.sort_unstable();
    let (mut now, mut most, mut when) = (0i32, 0i32, 0);
    for (at, step) in edges {
        now += step;
        if now > most {
            (most, when) = (now, at);
        }
    }
    (most as usize, when)
}

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

/// Waits until `n` runs have started.
async fn wait_started(events: &Path, n: usize) {
    eventually(120, &format!("{n} runs started"), || async {
        match read_events(events).0.len() {
            s if s >= n => Ok(()),
            s => Err(format!("{s} started")),
        }
    })
    .await;
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

async fn a_limit_holds_across_admins_and_kills(kind: Db) {
    let db = TestDb::new(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let bin = common::chime_binary();
    let http = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(1))
        .no_proxy()
        .build()
        .unwrap();
    // One after the other: the first migrates the database. A killed executor's runs are
    // failed as lost once it has missed its heartbeats (every 30 s) for 35 s.
    let mut admins: Vec<Admin> = Vec::new();
    for k in 0..2 {
        let node = node_name(k);
        let at = (IpAddr::V4(Ipv4Addr::LOCALHOST), free_port());
        let log = dir.path().join(format!("{node}.log"));
        let flags = ["--dead-timeout", "35s", "--lost-sweep", "1s"];
        admins.push(Admin::start_with(&bin, &db.url, &node, at, None, &log, &flags));
        ready(&admins[k], &http).await;
    }
    let (a, b) = (admins[0].api(), admins[1].api());
    a.ok("/v1/groups", json!({ "app_name": "pool" })).await;
    // The executors report to the admin that survives.
    let base_b = format!("http://127.0.0.1:{}/xxl-job-admin", admins[1].port);
    let mut executors: Vec<DemoExecutor> = (0..2)
        .map(|_| DemoExecutor::start_with(&base_b, "pool", &["--enable-scripts"]))
        .collect();
    a.wait_executors("pool", 2).await;
    b.wait_executors("pool", 2).await;
    let body = json!({ "max_running": MAX_RUNNING });
    let (s, v) = a.call(Method::PUT, "/v1/limits/pool-db", Some(body)).await;
    assert_eq!(s, 200, "{v}");
    // The other admin learns of a new limit at its queue's next round: the runs it sends
    // before that are not held by it. Wait for both to report it.
    for api in [&a, &b] {
        eventually(20, "the limit known", || async {
            let series = r#"chime_limit_running{limit="pool-db"}"#;
            api.metric(series).await.ok_or_else(|| "not yet".to_owned())
        })
        .await;
    }

    let stop_watching = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch_queue(b.clone(), stop_watching.clone()));
    let events = dir.path().join("events");
    let mut jobs = Vec::new();
    for k in 0..JOBS {
        // FAILOVER: the first executor that answers, so the work goes to one until it dies.
        let body = json!({
            "group": "pool", "glue_type": "GLUE_SHELL", "glue_source": script(&events),
            "route_strategy": "FAILOVER", "retry_count": 1,
            "concurrency_key": "pool-db", "priority": priority(k),
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
    // A third of the way through, the first admin dies; at two thirds, the executor working.
    wait_started(&events, runs.len() / 3).await;
    let admin_killed_at = chime_admin::model::now_ms();
    admins[0].signal(libc::SIGKILL);
    wait_started(&events, 2 * runs.len() / 3).await;
    // The executor of the run started last and not yet ended. (The newest run's job's latest
    // run, asked before, may still wait in the queue on a slow machine.)
    let working = eventually(20, "the executor doing the work", || async {
        let (starts, ends) = read_events(&events);
        let under_way = (starts.iter())
            .filter(|(run, _)| !ends.contains_key(*run))
            .max_by_key(|(_, at)| at[0])
            .map(|(run, _)| *run)
            .ok_or("no run under way")?;
        let (_, r) = b.get(&format!("/v1/runs/{under_way}")).await;
        let address = r["executor_address"].as_str().unwrap_or_default().to_owned();
        executors.iter().position(|e| e.address == address).ok_or(address)
    })
    .await;
    let executor_killed_at = chime_admin::model::now_ms();
    executors[working].kill_9();

    let all_runs = eventually(180, "every run ended", || async {
        let mut all = Vec::new();
        for job in &jobs {
            all.extend(b.runs(*job).await);
        }
        let open = all
            .iter()
            .filter(|r| !["success", "failed"].contains(&status(r)))
            .count();
        if open == 0 {
            Ok(all)
        } else {
            Err(format!(
                "{open} runs not ended; {} started",
                read_events(&events).0.len()
            ))
        }
    })
    .await;
    stop_watching.store(true, Ordering::Relaxed);
    let queued_at = watcher.await.unwrap();
    let (starts, ends) = read_events(&events);

    // Nothing ran twice; each run that succeeded ran once; the failed ones were the killed
    // executor's, lost, and each was retried to a success.
    let twice: Vec<&i64> = starts.iter().filter(|(_, s)| s.len() > 1).map(|(r, _)| r).collect();
    assert!(twice.is_empty(), "{kind:?}: runs started twice: {twice:?}");
    let of_status = |st: &str| -> Vec<&Value> { all_runs.iter().filter(|r| status(r) == st).collect() };
    for r in of_status("success") {
        let id = r["id"].as_i64().unwrap();
        assert!(
            starts.contains_key(&id) && ends.contains_key(&id),
            "{kind:?}: run {id} succeeded unseen"
        );
    }
    let failed = of_status("failed");
    assert!(
        failed.len() <= MAX_RUNNING,
        "{kind:?}: more failed than could run at once: {failed:#?}"
    );
    let retried = all_runs
        .iter()
        .filter(|r| r["trigger_type"] == "RETRY" && status(r) == "success");
    assert_eq!(
        retried.count(),
        failed.len(),
        "{kind:?}: each lost run retried to a success"
    );
    for f in &failed {
        assert!(
            runs.contains_key(&f["id"].as_i64().unwrap()),
            "{kind:?}: a retry failed: {f:#}"
        );
    }
    let ran = all_runs.len() - failed.len();
    assert_eq!(
        ran,
        JOBS * RUNS_PER_JOB,
        "{kind:?}: every run triggered ran once, or its retry did"
    );

    // Never more than the limit at once, and the limit used.
    let spans = || ends.iter().filter_map(|(r, e)| Some((*r, starts.get(r)?[0], *e)));
    let (most, at) = most_at_once(spans().map(|(_, s, e)| (s, e)));
    let then: Vec<(i64, i64, i64)> = spans().filter(|(_, s, e)| *s <= at && at < *e).collect();
    assert!(
        most <= MAX_RUNNING,
        "{kind:?}: {most} ran at once under a limit of {MAX_RUNNING}, at {at} (admin killed at \
         {admin_killed_at}, executor at {executor_killed_at}): {then:?}"
    );
    assert_eq!(most, MAX_RUNNING, "{kind:?}: the limit was used");

    // The order across admins, from the admins' own times: until the admin's kill, no run was
    // sent while a run of higher priority, waiting since a round before, went on waiting for
    // more than a round.
    let job_priority: HashMap<i64, i64> = jobs.iter().enumerate().map(|(k, j)| (*j, priority(k))).collect();
    let of_run = |run: &i64| job_priority[&runs[run]];
    // When each run was sent (`triggered_at`, the admin's own record), not when its script
    // started: on a loaded machine a script may start a second after its send, which says
    // nothing about the order the queue gave.
    let started_at: HashMap<i64, i64> = (all_runs.iter())
        .filter_map(|r| Some((r["id"].as_i64()?, r["triggered_at"].as_i64()?)))
        .filter(|(id, at)| runs.contains_key(id) && *at > 0)
        .collect();
    let mut passed = Vec::new();
    for (a, at_a) in started_at.iter().filter(|(_, at)| **at < admin_killed_at) {
        for (b, queued_b) in &queued_at {
            let Some(at_b) = started_at.get(b) else { continue };
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
        "{kind:?}: {} sends passed a higher-priority run that waited on (run, passed, its queued_at, sent at, passed at): {:?}",
        passed.len(),
        &passed[..passed.len().min(10)]
    );
    eventually(20, "every slot given back", || async {
        let (_, limits) = b.get("/v1/limits").await;
        if limits[0]["running"] == 0 && limits[0]["queued"] == 0 {
            Ok(())
        } else {
            Err(limits.to_string())
        }
    })
    .await;
    drop(executors);
    drop(admins);
    db.drop_db().await;
}

#[test]
fn most_at_once_counts_overlaps() {
    assert_eq!(
        most_at_once([(0, 10), (5, 15), (10, 20)].into_iter()),
        (2, 5),
        "an end counts before a start"
    );
    assert_eq!(most_at_once([(0, 10), (1, 9), (2, 8)].into_iter()), (3, 2));
    assert_eq!(most_at_once(std::iter::empty()).0, 0);
}

#[tokio::test]
async fn a_limit_holds_across_admins_and_kills_postgres() {
    a_limit_holds_across_admins_and_kills(Db::Postgres).await;
}

#[tokio::test]
async fn a_limit_holds_across_admins_and_kills_mariadb() {
    a_limit_holds_across_admins_and_kills(Db::MySql).await;
}
