//! Compatibility with a real third-party executor: pyxxl 0.4.8 (from PyPI), started as child
//! processes, registering with the admin under the `/xxl-job-admin` prefix like an XXL-JOB 2.4
//! deployment. On SQLite, MariaDB and PostgreSQL:
//!
//! - one pyxxl executor: cron and manual jobs, failure with retry, kill, the run log;
//! - three pyxxl executors: ROUND, SHARDING_BROADCAST, a child job, FAILOVER past one killed
//!   with SIGKILL;
//! - a group mixing two of Chime's demo executors and a pyxxl executor: one sharded broadcast
//!   over both kinds, ROUND, a child job fired from a pyxxl run onto all three, logs of both
//!   kinds through the admin, FAILOVER past a killed one.
//!
//! Needs `python3 -m pip install pyxxl==0.4.8` (scripts/test installs it).

mod common;

use common::demo_executor::{DemoExecutor, REAL_EXECUTOR_DEAD_TIMEOUT};
use common::pyxxl_executor::PyExecutor;
use common::{address_of, finished, status, succeeded, Db, Env};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

/// Cron and manual jobs, failure with retry, kill, and the run log on one pyxxl executor.
async fn pyxxl_scenario(kind: Db) {
    let e = Env::start(kind, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("pyxxl-app").await;
    let py = PyExecutor::start(&e.prefix, "pyxxl-app");
    e.api.wait_executors("pyxxl-app", 1).await;

    // Cron: every second, results come back through pyxxl's callback.
    let cron = e
        .job(json!({"group": "pyxxl-app", "handler": "echoJob", "param": "hello", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "running": true}))
        .await;
    let runs = e
        .api
        .wait_runs(cron, 60, "two pyxxl cron runs", |r| {
            r.iter().filter(|r| succeeded(r)).count() >= 2
        })
        .await;
    let ok = runs.iter().find(|r| succeeded(r)).unwrap();
    assert_eq!(ok["handle_msg"], "echo:hello");
    assert_eq!(ok["executor_address"], py.address.as_str());
    e.api.post(&format!("/v1/jobs/{cron}/stop"), json!({})).await;
    assert!(
        runs.iter()
            .all(|r| matches!(status(r), "success" | "running" | "pending")),
        "no cron run failed: {runs:#?}"
    );

    // The run's log, read from pyxxl through the admin.
    let run_id = ok["id"].as_i64().unwrap();
    let (s, log) = e.api.get(&format!("/v1/runs/{run_id}/log")).await;
    assert_eq!(s, 200, "{log}");
    assert!(
        log["content"].as_str().unwrap().contains("echoJob param=hello"),
        "{log}"
    );

    // A manual run with its own parameter.
    let manual = e.job(json!({"group": "pyxxl-app", "handler": "echoJob"})).await;
    e.trigger(manual, json!({"param": "by hand"})).await;
    let runs = e
        .api
        .wait_runs(manual, 30, "manual run done", |r| finished(r) == 1)
        .await;
    assert_eq!(status(&runs[0]), "success", "{}", runs[0]);
    assert_eq!(runs[0]["handle_msg"], "echo:by hand");
    assert_eq!(runs[0]["trigger_type"], "API");

    // Failure with one retry.
    let fail = e
        .job(json!({"group": "pyxxl-app", "handler": "failJob", "retry_count": 1}))
        .await;
    e.trigger(fail, json!({"param": "kaboom"})).await;
    let runs = e
        .api
        .wait_runs(fail, 40, "failed run and its retry", |r| {
            r.len() == 2 && finished(r) == 2
        })
        .await;
    assert!(runs.iter().all(|r| status(r) == "failed"), "{runs:#?}");
    assert!(runs.iter().any(|r| r["trigger_type"] == "RETRY"));
    assert!(
        runs.iter()
            .all(|r| r["handle_msg"].as_str().unwrap().contains("kaboom")),
        "pyxxl reports the exception: {runs:#?}"
    );

    // Kill a slow run: failed, not retried.
    let slow = e
        .job(json!({"group": "pyxxl-app", "handler": "slowJob", "retry_count": 1}))
        .await;
    let run = e.trigger(slow, json!({"param": "120"})).await;
    e.api
        .wait_runs(slow, 30, "slow run accepted", |r| {
            r.iter().any(|r| status(r) == "running")
        })
        .await;
    let (s, v) = e.api.post(&format!("/v1/runs/{run}/kill"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], "killed");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(e.api.runs(slow).await.len(), 1, "a killed run is not retried");

    drop(py);
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_sqlite() {
    pyxxl_scenario(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_mariadb() {
    pyxxl_scenario(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_postgres() {
    pyxxl_scenario(Db::Postgres).await;
}

/// Checks a finished SHARDING_BROADCAST over `addrs`: shard `i` went to `addrs[i]` and its
/// executor answered `shard i/N`.
fn assert_shards(runs: &[Value], addrs: &[String]) {
    let shards: HashMap<i64, &Value> = runs.iter().map(|r| (r["shard_index"].as_i64().unwrap(), r)).collect();
    assert_eq!(shards.len(), addrs.len(), "one run per executor: {runs:#?}");
    for (i, r) in shards {
        assert_eq!(address_of(r), addrs[i as usize], "shard {i} goes to address {i}");
        assert_eq!(r["shard_total"], addrs.len());
        assert_eq!(status(r), "success", "{r}");
        assert_eq!(
            r["handle_msg"],
            format!("shard {i}/{}", addrs.len()),
            "the executor received its shard: {r}"
        );
    }
}

/// Three pyxxl executors in one group: ROUND, SHARDING_BROADCAST, a child job, and FAILOVER
/// past one killed with SIGKILL.
async fn pyxxl_group_routes(kind: Db) {
    let e = Env::start(kind, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("pyxxl-routes").await;
    let mut executors: Vec<PyExecutor> = (0..3).map(|_| PyExecutor::start(&e.prefix, "pyxxl-routes")).collect();
    executors.sort_by(|a, b| a.address.cmp(&b.address));
    let addrs: Vec<String> = executors.iter().map(|x| x.address.clone()).collect();
    assert_eq!(e.api.wait_executors("pyxxl-routes", 3).await, addrs);
    let job =
        |route: &str, handler: &str| json!({"group": "pyxxl-routes", "handler": handler, "route_strategy": route});

    let j = e.job(job("ROUND", "echoJob")).await;
    let used: HashSet<String> = e.trigger_n(j, 6).await.into_iter().collect();
    assert_eq!(
        used.len(),
        3,
        "ROUND spreads over every executor of {addrs:?}: {used:?}"
    );

    let j = e.job(job("SHARDING_BROADCAST", "shardingJobHandler")).await;
    e.trigger(j, json!({})).await;
    let runs = e.api.wait_runs(j, 40, "three shards done", |r| finished(r) == 3).await;
    assert_shards(&runs, &addrs);

    let child = e
        .job(json!({"group": "pyxxl-routes", "handler": "echoJob", "param": "child"}))
        .await;
    let parent = e
        .job(json!({"group": "pyxxl-routes", "handler": "echoJob", "param": "parent", "child_job_ids": [child]}))
        .await;
    e.trigger(parent, json!({})).await;
    let runs = e.api.wait_runs(child, 40, "child run done", |r| finished(r) == 1).await;
    assert_eq!(runs[0]["trigger_type"], "PARENT");
    assert_eq!(status(&runs[0]), "success", "{}", runs[0]);
    assert_eq!(runs[0]["handle_msg"], "echo:child");

    executors[0].process.kill_9();
    let j = e.job(job("FAILOVER", "echoJob")).await;
    let got = e.trigger_n(j, 2).await;
    assert!(
        got.iter().all(|a| *a == addrs[1]),
        "FAILOVER past {}: {got:?}",
        addrs[0]
    );
    assert_eq!(
        e.api.wait_executors("pyxxl-routes", 3).await,
        addrs,
        "the killed executor is still listed: failover did the work"
    );
    assert_eq!(e.api.runs(child).await.len(), 1, "the child fired once");

    drop(executors);
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_group_routes_sqlite() {
    pyxxl_group_routes(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_group_routes_mariadb() {
    pyxxl_group_routes(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_group_routes_postgres() {
    pyxxl_group_routes(Db::Postgres).await;
}

/// Two Chime demo executors and a pyxxl executor in one group, run by the same jobs.
async fn mixed_group(kind: Db) {
    let e = Env::start(kind, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("mixed").await;
    let mut chime: Vec<DemoExecutor> = (0..2).map(|_| DemoExecutor::start(&e.prefix, "mixed")).collect();
    let mut py = PyExecutor::start(&e.prefix, "mixed");
    let addrs = e.api.wait_executors("mixed", 3).await;
    let mut started: Vec<String> = chime.iter().map(|x| x.address.clone()).collect();
    started.push(py.address.clone());
    started.sort();
    assert_eq!(addrs, started, "both kinds registered");
    // Chime's executors list their handlers in each registration; pyxxl says nothing of them.
    let (_, listed) = e.api.get("/v1/executors?group=mixed").await;
    for entry in listed[0]["executors"].as_array().unwrap() {
        let handlers: Vec<&str> = entry["handlers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|h| h.as_str())
            .collect();
        let address = entry["address"].as_str().unwrap();
        if chime.iter().any(|x| x.address.trim_end_matches('/') == address) {
            for demo in ["demoJobHandler", "shardingJobHandler", "failJobHandler"] {
                assert!(handlers.contains(&demo), "{demo} missing: {entry}");
            }
        } else {
            assert!(handlers.is_empty(), "{entry}");
        }
    }
    let job = |route: &str, handler: &str| json!({"group": "mixed", "handler": handler, "route_strategy": route});

    // One broadcast over both implementations: each reports its own shard.
    let j = e.job(job("SHARDING_BROADCAST", "shardingJobHandler")).await;
    e.trigger(j, json!({})).await;
    let runs = e.api.wait_runs(j, 40, "three shards done", |r| finished(r) == 3).await;
    assert_shards(&runs, &addrs);

    // ROUND over all three, the same handler name on both kinds; logs of both kinds read
    // through the admin.
    let mut round = job("ROUND", "demoJobHandler");
    round["param"] = json!("mixed");
    let j = e.job(round).await;
    let used: HashSet<String> = e.trigger_n(j, 6).await.into_iter().collect();
    assert_eq!(
        used.len(),
        3,
        "ROUND spreads over every executor of {addrs:?}: {used:?}"
    );
    let runs = e.api.runs(j).await;
    for address in [&py.address, &chime[0].address] {
        let run = runs.iter().find(|r| address_of(r) == *address).unwrap();
        assert_eq!(run["handle_msg"], "mixed", "{run}");
        let (s, log) = e.api.get(&format!("/v1/runs/{}/log", run["id"])).await;
        assert_eq!(s, 200, "{log}");
        assert!(
            log["content"]
                .as_str()
                .unwrap()
                .contains("XXL-JOB, Hello World. param=mixed"),
            "log of the run on {address}: {log}"
        );
    }

    // A parent run on pyxxl fires a broadcast child onto all three.
    let child = e.job(job("SHARDING_BROADCAST", "shardingJobHandler")).await;
    let mut parent = job("FIRST", "demoJobHandler");
    parent["child_job_ids"] = json!([child]);
    let parent = e.job(parent).await;
    e.trigger(parent, json!({"address": py.address})).await;
    let runs = e
        .api
        .wait_runs(child, 40, "the child's three shards done", |r| finished(r) == 3)
        .await;
    assert!(runs.iter().all(|r| r["trigger_type"] == "PARENT"), "{runs:#?}");
    assert_shards(&runs, &addrs);

    // FAILOVER past the first executor, killed with SIGKILL, whichever kind it is.
    match chime.iter_mut().find(|x| x.address == addrs[0]) {
        Some(x) => x.kill_9(),
        None => py.process.kill_9(),
    }
    let j = e.job(job("FAILOVER", "demoJobHandler")).await;
    let got = e.trigger_n(j, 2).await;
    assert!(
        got.iter().all(|a| *a == addrs[1]),
        "FAILOVER past {}: {got:?}",
        addrs[0]
    );
    assert_eq!(e.api.runs(parent).await.len(), 1);

    drop((chime, py));
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_group_sqlite() {
    mixed_group(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_group_mariadb() {
    mixed_group(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_group_postgres() {
    mixed_group(Db::Postgres).await;
}
