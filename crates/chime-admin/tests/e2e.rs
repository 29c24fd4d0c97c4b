//! End to end on a real database and real HTTP: the admin in-process, jobs run by Chime's
//! executor with its demo handlers as real processes (`chime executor --demo-handlers`, two or
//! three per group), registering and calling back over sockets. Each scenario runs on SQLite, MariaDB and PostgreSQL, each test
//! on its own fresh database.
//!
//! The in-test executor (`common/executor.rs`) appears only in
//! `callback_before_trigger_result_*`: no real executor can be made to commit its result before
//! the admin has recorded that it sent the run. The protocol and bad-input tests need no
//! executor at all: they are the requests an executor or a client would send.

mod common;

use common::demo_executor::{DemoExecutor, REAL_EXECUTOR_DEAD_TIMEOUT};
use common::executor::TestExecutor;
use common::{address_of, eventually, finished, status, succeeded, Db, Env, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

fn addresses(executors: &[DemoExecutor]) -> Vec<String> {
    executors.iter().map(|x| x.address.clone()).collect()
}

/// Cron and manual jobs, the run log through the admin, a panicking handler, kill, retries,
/// child jobs, idempotent callbacks — on two demo executors.
async fn lifecycle(kind: Db) {
    let e = Env::start(kind, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("life").await;
    let executors = e.demo_executors("life", 2).await;
    let addrs = addresses(&executors);

    // A cron job firing every second, ROUND over both executors, reports results back.
    let cron = e.job(json!({"group": "life", "handler": "demoJobHandler", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "param": "p1", "route_strategy": "ROUND", "running": true})).await;
    let runs = e
        .api
        .wait_runs(cron, 60, "successful cron runs on both executors", |r| {
            let ok: Vec<&Value> = r.iter().filter(|r| succeeded(r)).collect();
            ok.len() >= 4 && ok.iter().map(|r| address_of(r)).collect::<HashSet<_>>().len() == 2
        })
        .await;
    for r in runs.iter().filter(|r| succeeded(r)) {
        assert_eq!(r["trigger_type"], "CRON");
        assert_eq!(r["trigger_code"], 200);
        assert_eq!(r["handle_code"], 200);
        assert_eq!(
            r["scheduled_at"].as_i64().unwrap() % 1000,
            0,
            "cron fires on whole seconds"
        );
        assert!(r["triggered_at"].as_i64().unwrap() >= r["scheduled_at"].as_i64().unwrap());
        assert!(addrs.contains(&address_of(r)), "{r}");
        assert_eq!(r["handle_msg"], "p1", "demoJobHandler answers its parameter: {r}");
    }
    let (s, _) = e.api.post(&format!("/v1/jobs/{cron}/stop"), json!({})).await;
    assert_eq!(s, 200);

    // Manual trigger with a parameter, sent to the address asked for.
    let manual = e.job(json!({"group": "life", "handler": "demoJobHandler"})).await;
    let run_id = e
        .trigger(manual, json!({"param": "by hand", "address": addrs[1]}))
        .await;
    let runs = e
        .api
        .wait_runs(manual, 30, "manual run done", |r| finished(r) == 1)
        .await;
    assert_eq!(runs[0]["id"], run_id);
    assert_eq!(runs[0]["trigger_type"], "API");
    assert_eq!(runs[0]["param"], "by hand");
    assert_eq!(address_of(&runs[0]), addrs[1]);
    assert_eq!(status(&runs[0]), "success", "{}", runs[0]);
    assert_eq!(runs[0]["handle_msg"], "by hand");
    // An address outside the group is refused.
    let (s, v) = e
        .api
        .post(
            &format!("/v1/jobs/{manual}/trigger"),
            json!({"address": "http://10.9.9.9:1"}),
        )
        .await;
    assert_eq!((s, v["field"].as_str()), (422, Some("address")), "{v}");

    // The run's log, written by the handler, read from the executor through the admin.
    let (s, log) = e.api.get(&format!("/v1/runs/{run_id}/log?from_line=1")).await;
    assert_eq!(s, 200, "{log}");
    assert!(
        log["content"]
            .as_str()
            .unwrap()
            .contains("XXL-JOB, Hello World. param=by hand"),
        "{log}"
    );
    assert_eq!(log["is_end"], true, "the run has its result: {log}");

    // A panicking handler fails its run with the panic message; the executor carries on.
    let panics = e
        .job(json!({"group": "life", "handler": "panicJobHandler", "param": "boom"}))
        .await;
    e.trigger(panics, json!({"address": addrs[0]})).await;
    let runs = e
        .api
        .wait_runs(panics, 30, "panicking run reported", |r| finished(r) == 1)
        .await;
    assert_eq!(status(&runs[0]), "failed", "{}", runs[0]);
    assert_eq!(runs[0]["trigger_code"], 200, "the run was accepted: {}", runs[0]);
    assert!(
        runs[0]["handle_msg"]
            .as_str()
            .unwrap()
            .contains("panicJobHandler panicked on purpose (param: boom)"),
        "{}",
        runs[0]
    );
    e.trigger(manual, json!({"param": "after the panic", "address": addrs[0]}))
        .await;
    let runs = e
        .api
        .wait_runs(manual, 30, "a run after the panic", |r| finished(r) == 2)
        .await;
    assert_eq!(status(&runs[0]), "success", "{}", runs[0]);
    assert_eq!(runs[0]["handle_msg"], "after the panic");

    // A long run: its log grows while it runs (read through the admin), then it is killed —
    // the executor is told, the run is failed, and no retry follows.
    let sleeper = e
        .job(json!({"group": "life", "handler": "sleepJobHandler", "param": "120", "retry_count": 2}))
        .await;
    let sleep_run = e.trigger(sleeper, json!({})).await;
    e.api
        .wait_runs(sleeper, 30, "long run accepted", |r| {
            r.iter().any(|r| status(r) == "running")
        })
        .await;
    let log = eventually(30, "the log of the running run to show a second slept", || {
        let api = e.api.clone();
        async move {
            let (s, log) = api.get(&format!("/v1/runs/{sleep_run}/log?from_line=1")).await;
            let text = log["content"].as_str().unwrap_or_default();
            if s == 200 && text.contains("slept 1 s") {
                Ok(log)
            } else {
                Err(format!("{s} {log}"))
            }
        }
    })
    .await;
    assert_eq!(log["is_end"], false, "the run is still running: {log}");
    let (s, v) = e.api.post(&format!("/v1/runs/{sleep_run}/kill"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    // Stored as a failure (as executors report it), shown as killed, with who killed it.
    assert_eq!(
        (v["status"].as_str(), v["handle_code"].as_i64()),
        (Some("killed"), Some(500)),
        "{v}"
    );
    assert_eq!(v["killed_by"], "api-token", "{v}");
    assert!(v["handle_msg"].as_str().unwrap().contains("killed"), "{v}");
    // The executor's own report of the kill arrives too; it must not start a retry.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let runs = e.api.runs(sleeper).await;
    assert_eq!(runs.len(), 1, "a killed run is not retried: {runs:#?}");
    assert_eq!(e.run(sleep_run).await["status"], "killed");
    let (s, _) = e.api.post(&format!("/v1/runs/{sleep_run}/kill"), json!({})).await;
    assert_eq!(s, 409, "killing a finished run is a conflict");

    // Retries: a failing job with 2 retries runs three times, each retry one fewer.
    let fail = e
        .job(json!({"group": "life", "handler": "failJobHandler", "retry_count": 2}))
        .await;
    e.trigger(fail, json!({"param": "it went wrong"})).await;
    let runs = e
        .api
        .wait_runs(fail, 40, "run and two retries failed", |r| {
            r.len() == 3 && finished(r) == 3
        })
        .await;
    let mut by_retry: Vec<(i64, String)> = runs
        .iter()
        .map(|r| {
            (
                r["retry_count"].as_i64().unwrap(),
                r["trigger_type"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    by_retry.sort();
    assert_eq!(
        by_retry,
        [(0, "RETRY".to_owned()), (1, "RETRY".to_owned()), (2, "API".to_owned())]
    );
    for r in &runs {
        assert_eq!(r["param"], "it went wrong");
        assert_eq!(status(r), "failed", "{r}");
        assert_eq!(r["handle_msg"], "it went wrong", "failJobHandler's message: {r}");
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(e.api.runs(fail).await.len(), 3, "no fourth run");

    // Child jobs: a successful parent fires its child once (type PARENT); a failed one does not.
    let child = e
        .job(json!({"group": "life", "handler": "demoJobHandler", "param": "child"}))
        .await;
    let parent = e
        .job(json!({"group": "life", "handler": "demoJobHandler", "child_job_ids": [child]}))
        .await;
    let parent_run = e.trigger(parent, json!({})).await;
    let runs = e.api.wait_runs(child, 30, "child run done", |r| finished(r) == 1).await;
    assert_eq!(runs[0]["trigger_type"], "PARENT");
    assert_eq!(runs[0]["param"], "child");
    assert_eq!(status(&runs[0]), "success", "{}", runs[0]);
    let failing_parent = e
        .job(json!({"group": "life", "handler": "failJobHandler", "child_job_ids": [child]}))
        .await;
    e.trigger(failing_parent, json!({})).await;
    e.api
        .wait_runs(failing_parent, 30, "failing parent done", |r| finished(r) == 1)
        .await;
    // A cycle is refused at save time, naming the field.
    let (s, v) = e
        .api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/jobs/{child}"),
            Some(json!({"child_job_ids": [parent]})),
        )
        .await;
    assert_eq!((s, v["field"].as_str()), (422, Some("child_job_ids")), "{v}");

    // A repeated callback for a finished run changes nothing and fires no child twice.
    let before = e.run(parent_run).await;
    let http = reqwest::Client::new();
    for _ in 0..3 {
        let resp = http
            .post(format!("{}/api/callback", e.prefix))
            .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
            .body(format!(
                r#"{{"callbackList":[{{"logId":{parent_run},"logDateTime":1,"handleCode":500,"handleMsg":"late"}}]}}"#
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.text().await.unwrap(), r#"{"code":200,"msg":null,"content":null}"#);
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(e.run(parent_run).await, before);
    let runs = e.api.runs(child).await;
    assert_eq!(runs.len(), 1, "one child run, none for the failed parent: {runs:#?}");

    // Next fire times of a cron job in its zone.
    let (s, v) = e.api.get(&format!("/v1/jobs/{cron}/next?count=3")).await;
    assert_eq!(s, 200);
    assert_eq!(v["next"].as_array().unwrap().len(), 3);

    drop(executors);
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lifecycle_sqlite() {
    lifecycle(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lifecycle_mariadb() {
    lifecycle(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lifecycle_postgres() {
    lifecycle(Db::Postgres).await;
}

/// Every route strategy with three demo executors, sharding broadcast, BUSYOVER past a busy
/// executor and FAILOVER past one killed with SIGKILL.
async fn routes(kind: Db) {
    let e = Env::start(kind, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("routes").await;
    let mut executors = e.demo_executors("routes", 3).await;
    let addrs = addresses(&executors);
    let job = |route: &str, handler: &str| json!({"group": "routes", "handler": handler, "route_strategy": route});

    let j = e.job(job("FIRST", "demoJobHandler")).await;
    let got = e.trigger_n(j, 3).await;
    assert!(got.iter().all(|a| *a == addrs[0]), "FIRST of {addrs:?}: {got:?}");
    let j = e.job(job("LAST", "demoJobHandler")).await;
    let got = e.trigger_n(j, 3).await;
    assert!(got.iter().all(|a| *a == addrs[2]), "LAST of {addrs:?}: {got:?}");
    // LFU starts each new address at a random count below the number of addresses, as
    // XXL-JOB does; from counts (0, 0, 2) the third address is first picked on the 7th run.
    for (route, runs) in [("ROUND", 6), ("LEAST_FREQUENTLY_USED", 7), ("LEAST_RECENTLY_USED", 6)] {
        let j = e.job(job(route, "demoJobHandler")).await;
        let got = e.trigger_n(j, runs).await;
        let used: HashSet<&String> = got.iter().collect();
        let (_, group) = e.api.get("/v1/executors?group=routes").await;
        assert_eq!(
            used.len(),
            3,
            "{route} spreads over every executor of {addrs:?}: {got:?}; the group now: {group}"
        );
    }
    let j = e.job(job("RANDOM", "demoJobHandler")).await;
    let used: HashSet<String> = e.trigger_n(j, 20).await.into_iter().collect();
    assert!(used.len() >= 2, "RANDOM used only {used:?}");
    let j = e.job(job("CONSISTENT_HASH", "demoJobHandler")).await;
    // XXL-JOB hashes the addresses as the executors registered them, and Chime's executor
    // registers with a trailing slash, as the Java one does.
    let registered: Vec<String> = addrs.iter().map(|a| format!("{a}/")).collect();
    let expected = chime_admin::dispatch::route::consistent_hash::pick(j, &registered)
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let got = e.trigger_n(j, 4).await;
    assert!(
        got.iter().all(|a| *a == expected),
        "same job, same executor ({expected}): {got:?}"
    );

    // SHARDING_BROADCAST: one run per executor; each executor's handler reports its shard.
    let j = e.job(job("SHARDING_BROADCAST", "shardingJobHandler")).await;
    e.trigger(j, json!({})).await;
    let runs = e.api.wait_runs(j, 30, "three shards done", |r| finished(r) == 3).await;
    let shards: HashMap<i64, &Value> = runs.iter().map(|r| (r["shard_index"].as_i64().unwrap(), r)).collect();
    assert_eq!(shards.len(), 3, "{runs:#?}");
    for (i, r) in &shards {
        assert_eq!(address_of(r), addrs[*i as usize], "shard {i} goes to address {i}");
        assert_eq!(r["shard_total"], 3);
        assert_eq!(status(r), "success", "{r}");
        assert_eq!(
            r["handle_msg"],
            format!("shard {i}/3"),
            "the executor received its shard: {r}"
        );
    }

    // BUSYOVER: the first executor is busy with this job, so the run goes to the next one.
    let j = e.job(job("BUSYOVER", "sleepJobHandler")).await;
    let busy = e.trigger(j, json!({"address": addrs[0], "param": "120"})).await;
    e.api
        .wait_runs(j, 30, "long run accepted", |r| r.iter().any(|r| status(r) == "running"))
        .await;
    let next = e.trigger(j, json!({"param": "0.2"})).await;
    let runs = e
        .api
        .wait_runs(j, 30, "second run done", |r| {
            r.iter().any(|r| r["id"] == next && succeeded(r))
        })
        .await;
    let second = runs.iter().find(|r| r["id"] == next).unwrap();
    assert_eq!(address_of(second), addrs[1], "{second}");
    assert!(
        second["trigger_msg"].as_str().unwrap().contains(&addrs[0]),
        "the report shows the busy executor was asked first: {second}"
    );
    let (s, v) = e.api.post(&format!("/v1/runs/{busy}/kill"), json!({})).await;
    assert_eq!(s, 200, "{v}");

    // FAILOVER: the first executor is killed with SIGKILL. It stays registered until the dead
    // timeout, but does not answer `/beat`, so runs go to the next one.
    executors[0].kill_9();
    let j = e.job(job("FAILOVER", "demoJobHandler")).await;
    let got = e.trigger_n(j, 2).await;
    assert!(
        got.iter().all(|a| *a == addrs[1]),
        "FAILOVER past {}: {got:?}",
        addrs[0]
    );
    let listed = e.api.wait_executors("routes", 3).await;
    assert_eq!(
        listed, addrs,
        "the killed executor is still listed: failover did the work"
    );
    let j = e.job(job("FIRST", "demoJobHandler")).await;
    e.trigger(j, json!({})).await;
    let runs = e.api.wait_runs(j, 30, "failed trigger", |r| finished(r) == 1).await;
    assert_eq!(runs[0]["trigger_code"], 500, "FIRST does not fail over: {}", runs[0]);
    assert_eq!(status(&runs[0]), "failed");
    drop(executors);
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn routes_sqlite() {
    routes(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn routes_mariadb() {
    routes(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn routes_postgres() {
    routes(Db::Postgres).await;
}

/// Dead timeout of the lost-run test: above the demo executor's 30 s heartbeat, so a live
/// executor never counts as dead, and low enough that the test ends within a minute.
const LOST_RUN_DEAD_TIMEOUT: Duration = Duration::from_secs(40);

/// A run whose executor is killed with SIGKILL mid-run is failed ("Job result lost") and
/// retried on the executor still alive: in a registering group once the dead executor's
/// heartbeat is older than the dead timeout, in a manual group as soon as `/beat` fails.
async fn lost_run(kind: Db) {
    let e = Env::start(kind, LOST_RUN_DEAD_TIMEOUT).await;
    e.group("lost").await;
    let mut executors = e.demo_executors("lost", 2).await;
    let addrs = addresses(&executors);
    // The same two executors, listed by hand.
    e.api
        .ok("/v1/groups", json!({"app_name": "lost-manual", "addresses": addrs}))
        .await;
    // Registering group: FIRST, so the retry can reach the second executor only once the
    // first has left the group. Manual group: the list keeps the dead address, so FAILOVER.
    // Both sleep long enough that the kill below lands mid-run.
    let registered = e
        .job(json!({"group": "lost", "handler": "sleepJobHandler", "param": "8", "retry_count": 1, "route_strategy": "FIRST"}))
        .await;
    let manual = e
        .job(json!({"group": "lost-manual", "handler": "sleepJobHandler", "param": "8", "retry_count": 1, "route_strategy": "FAILOVER"}))
        .await;
    for job in [registered, manual] {
        e.trigger(job, json!({"address": addrs[0]})).await;
    }
    for job in [registered, manual] {
        e.api
            .wait_runs(job, 30, "run accepted", |r| r.iter().any(|r| status(r) == "running"))
            .await;
    }
    executors[0].kill_9();

    let check = |runs: &[Value], group: &str| {
        let lost = runs.iter().find(|r| r["trigger_type"] == "API").expect("the first run");
        assert_eq!(status(lost), "failed", "{group}: {lost}");
        assert_eq!(address_of(lost), addrs[0]);
        assert!(
            lost["handle_msg"]
                .as_str()
                .unwrap()
                .contains("Job result lost, marked as failure"),
            "{group}: {lost}"
        );
        let retry = runs.iter().find(|r| r["trigger_type"] == "RETRY").unwrap();
        assert_eq!(
            address_of(retry),
            addrs[1],
            "{group}: retried on the live executor: {retry}"
        );
        assert_eq!(retry["trigger_code"], 200, "{group}: {retry}");
        assert_eq!(retry["param"], "8");
    };
    let retried = |r: &[Value]| {
        r.len() == 2
            && r.iter().any(|r| status(r) == "failed")
            && r.iter().any(|r| r["trigger_type"] == "RETRY" && r["trigger_code"] != 0)
    };
    // Manual group: the sweep (every 0.5 s) probes the address.
    let runs = e
        .api
        .wait_runs(manual, 30, "lost run failed and retried", retried)
        .await;
    check(&runs, "manual group");
    let runs = e
        .api
        .wait_runs(manual, 40, "the retry succeeded", |r| {
            r.iter().any(|r| r["trigger_type"] == "RETRY" && succeeded(r))
        })
        .await;
    assert_eq!(runs.len(), 2, "{runs:#?}");
    // Registering group: lost once the last heartbeat is older than the dead timeout.
    let runs = e
        .api
        .wait_runs(registered, 90, "lost run failed and retried", retried)
        .await;
    check(&runs, "registering group");
    let listed = e.api.wait_executors("lost", 1).await;
    assert_eq!(listed, addrs[1..], "the dead executor left its group");
    drop(executors);
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lost_run_sqlite() {
    lost_run(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lost_run_mariadb() {
    lost_run(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lost_run_postgres() {
    lost_run(Db::Postgres).await;
}

/// A result committed before the trigger result it answers — the callback and the `/run`
/// reply are written independently, and a fast executor's callback can win. The in-test
/// executor forces the order: it answers `/run` only after the admin accepted its callback.
/// The run must still end with both recorded, fire its child once, and retry a failure once.
async fn callback_before_trigger_result(kind: Db) {
    let e = Env::start(kind, Duration::from_secs(4)).await;
    e.group("early").await;
    let ex = TestExecutor::start(&e.prefix, "early", ACCESS_TOKEN).await;
    e.api.wait_executors("early", 1).await;

    let child = e
        .job(json!({"group": "early", "handler": "ok", "param": "child"}))
        .await;
    let ok = e
        .job(json!({"group": "early", "handler": "callback_first", "child_job_ids": [child]}))
        .await;
    let run_id = e.trigger(ok, json!({})).await;
    e.api
        .wait_runs(ok, 30, "early success recorded", |r| finished(r) == 1)
        .await;
    let run = e.run(run_id).await;
    assert_eq!(status(&run), "success", "{run}");
    assert_eq!(run["trigger_code"], 200, "{run}");
    assert_eq!(run["handle_code"], 200, "{run}");
    assert_eq!(run["executor_address"], ex.address.as_str());
    assert!(
        run["handle_msg"]
            .as_str()
            .unwrap()
            .contains("reported before the trigger reply"),
        "{run}"
    );
    assert!(
        run["trigger_msg"].as_str().unwrap().contains("code：200"),
        "the trigger report is kept: {run}"
    );
    let runs = e.api.wait_runs(child, 30, "child run done", |r| finished(r) == 1).await;
    assert_eq!(runs[0]["trigger_type"], "PARENT");

    let fail = e
        .job(json!({"group": "early", "handler": "callback_first_fail", "retry_count": 1}))
        .await;
    e.trigger(fail, json!({})).await;
    let runs = e
        .api
        .wait_runs(fail, 30, "early failure and its retry recorded", |r| {
            r.len() == 2 && finished(r) == 2
        })
        .await;
    assert!(runs.iter().all(|r| status(r) == "failed"), "{runs:#?}");
    let types: BTreeSet<&str> = runs.iter().map(|r| r["trigger_type"].as_str().unwrap()).collect();
    assert_eq!(types, BTreeSet::from(["API", "RETRY"]), "{runs:#?}");
    // The retry's failure, too, was reported before its trigger result: its alarm is still
    // claimed at once (no contacts, no webhook: 1, nothing needed), not left at 0 for the
    // sweep five minutes later.
    let retry = runs.iter().find(|r| r["trigger_type"] == "RETRY").unwrap()["id"]
        .as_i64()
        .unwrap();
    eventually(10, "the early failure's alarm is claimed", || async {
        let now = e.admin.admin.store.alarm_statuses(&[retry]).await.unwrap();
        if now == vec![(retry, 1)] {
            Ok(())
        } else {
            Err(format!("{now:?}"))
        }
    })
    .await;

    // Every second, for a few seconds: each run recorded once, as it happened.
    let cron = e.job(json!({"group": "early", "handler": "callback_first", "schedule_type": "CRON", "schedule_expr": "* * * * * ?", "running": true})).await;
    e.api
        .wait_runs(cron, 40, "three early cron results", |r| finished(r) >= 3)
        .await;
    e.api.post(&format!("/v1/jobs/{cron}/stop"), json!({})).await;
    // Fires claimed before the stop still go out; then every run has both results.
    let runs = e
        .api
        .wait_runs(cron, 30, "every cron run recorded in full", |r| finished(r) == r.len())
        .await;
    assert!(runs.iter().all(|r| status(r) == "success"), "{runs:#?}");
    let seconds: HashSet<i64> = runs.iter().map(|r| r["scheduled_at"].as_i64().unwrap()).collect();
    assert_eq!(seconds.len(), runs.len(), "one run per second: {runs:#?}");

    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(e.api.runs(child).await.len(), 1, "the child fired once");
    assert_eq!(e.api.runs(fail).await.len(), 2, "one retry, not two");
    assert_eq!(
        ex.seen.lock().unwrap().bad_tokens,
        0,
        "the admin sends the access token"
    );
    ex.kill();
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn callback_before_trigger_result_sqlite() {
    callback_before_trigger_result(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn callback_before_trigger_result_mariadb() {
    callback_before_trigger_result(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn callback_before_trigger_result_postgres() {
    callback_before_trigger_result(Db::Postgres).await;
}

/// The executor API speaks XXL-JOB's envelope in every case, with and without the prefix.
async fn executor_api_protocol(kind: Db) {
    let e = Env::start(kind, Duration::from_secs(4)).await;
    let http = reqwest::Client::new();
    let plain = format!("http://{}", e.admin.local_addr);
    for base in [plain.as_str(), e.prefix.as_str()] {
        let post = |path: &str, token: Option<&str>, body: &str| {
            let mut r = http.post(format!("{base}{path}")).body(body.to_owned());
            if let Some(t) = token {
                r = r.header("XXL-JOB-ACCESS-TOKEN", t);
            }
            r.send()
        };
        let check = |resp: reqwest::Response, want: &'static str| async move {
            assert_eq!(resp.status(), 200);
            assert_eq!(resp.headers()["content-type"], "application/json");
            assert_eq!(resp.text().await.unwrap(), want);
        };
        let reg = r#"{"registryGroup":"EXECUTOR","registryKey":"app","registryValue":"http://127.0.0.1:1/"}"#;
        check(
            post("/api/registry", Some(ACCESS_TOKEN), reg).await.unwrap(),
            r#"{"code":200,"msg":null,"content":null}"#,
        )
        .await;
        check(
            post("/api/registry", Some("wrong"), reg).await.unwrap(),
            r#"{"code":500,"msg":"The access token is wrong.","content":null}"#,
        )
        .await;
        check(
            post("/api/registry", None, reg).await.unwrap(),
            r#"{"code":500,"msg":"The access token is wrong.","content":null}"#,
        )
        .await;
        check(
            post(
                "/api/registry",
                Some(ACCESS_TOKEN),
                r#"{"registryGroup":"EXECUTOR","registryKey":"","registryValue":"x"}"#,
            )
            .await
            .unwrap(),
            r#"{"code":500,"msg":"Illegal Argument.","content":null}"#,
        )
        .await;
        check(
            post("/api/nope", Some(ACCESS_TOKEN), "{}").await.unwrap(),
            r#"{"code":500,"msg":"invalid request, uri-mapping(nope) not found.","content":null}"#,
        )
        .await;
        let resp = http.get(format!("{base}/api/registry")).send().await.unwrap();
        check(
            resp,
            r#"{"code":500,"msg":"invalid request, HttpMethod not support.","content":null}"#,
        )
        .await;
        // Callback bodies: bare array, callbackList, unknown run id, extra keys — all accepted.
        for body in [
            r#"[{"logId":999999,"logDateTim":1,"handleCode":200,"handleMsg":"x","executeResult":{"code":200}}]"#,
            r#"{"callbackList":[{"logId":999998,"logDateTime":1,"handleCode":500}]}"#,
            "[]",
        ] {
            check(
                post("/api/callback", Some(ACCESS_TOKEN), body).await.unwrap(),
                r#"{"code":200,"msg":null,"content":null}"#,
            )
            .await;
        }
        // An executor drains every pending result into one callback (xxl-job-core does), so a
        // busy one sends bodies far over axum's default 2 MB limit: 40,000 results, about 3 MB.
        let big: Vec<String> = (0..40_000)
            .map(|i| {
                format!(
                    r#"{{"logId":{},"logDateTim":1,"handleCode":200,"handleMsg":"done"}}"#,
                    1_000_000 + i
                )
            })
            .collect();
        let big = format!("[{}]", big.join(","));
        assert!(big.len() > 2 * 1024 * 1024);
        check(
            post("/api/callback", Some(ACCESS_TOKEN), &big).await.unwrap(),
            r#"{"code":200,"msg":null,"content":null}"#,
        )
        .await;
        let resp = post("/api/callback", Some(ACCESS_TOKEN), "{not json").await.unwrap();
        let v: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(v["code"], 500);
        check(
            post("/api/registryRemove", Some(ACCESS_TOKEN), reg).await.unwrap(),
            r#"{"code":200,"msg":null,"content":null}"#,
        )
        .await;
    }
    // Nothing of the above left a run behind.
    assert_eq!(e.api.get("/v1/runs").await.1.as_array().unwrap().len(), 0);
    // /healthz, /metrics and the OpenAPI document.
    let h = http.get(format!("{plain}/healthz")).send().await.unwrap();
    assert_eq!(h.status(), 200);
    let m = e.api.metrics_text().await;
    assert!(m.contains("chime_callbacks_total"), "{m}");
    assert!(m.contains("chime_dispatch_lateness_seconds_bucket"), "{m}");
    // Every result handed to the writer was counted out again: a count that only grew would
    // hold the claim loop back for good.
    assert!(m.contains("\nchime_results_backlog 0\n"), "{m}");
    // (The 40,000-result callback may have put a claim round off for a tick: it is a backlog.)
    assert!(m.contains("\nchime_claims_deferred_total "), "{m}");
    let doc: Value = http
        .get(format!("{plain}/v1/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/v1/jobs/{id}/trigger"]["post"].is_object());
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executor_api_protocol_sqlite() {
    executor_api_protocol(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executor_api_protocol_mariadb() {
    executor_api_protocol(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executor_api_protocol_postgres() {
    executor_api_protocol(Db::Postgres).await;
}

/// Bad input on every endpoint: a clear 4xx naming the field, and nothing stored half-way.
async fn bad_input(kind: Db) {
    let e = Env::start(kind, Duration::from_secs(4)).await;
    let http = reqwest::Client::new();
    let base = e.api.base.clone();
    let r = http.get(format!("{base}/v1/jobs")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = http
        .get(format!("{base}/v1/jobs"))
        .bearer_auth("wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let raw = http
        .post(format!("{base}/v1/groups"))
        .bearer_auth(common::API_TOKEN)
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);

    let cases: Vec<(&str, Value, u16, Option<&str>)> = vec![
        ("/v1/groups", json!({}), 422, Some("app_name")),
        ("/v1/groups", json!({"app_name": "a b"}), 422, Some("app_name")),
        (
            "/v1/groups",
            json!({"app_name": "g", "colour": "red"}),
            400,
            Some("colour"),
        ),
        (
            "/v1/groups",
            json!({"app_name": "g", "addresses": ["ftp://x"]}),
            422,
            Some("addresses"),
        ),
        (
            "/v1/groups",
            json!({"app_name": "g", "protocol": "G9"}),
            422,
            Some("protocol"),
        ),
        ("/v1/groups", json!({"app_name": 5}), 400, Some("app_name")),
    ];
    for (path, body, want, field) in cases {
        let (s, v) = e.api.post(path, body.clone()).await;
        assert_eq!((s, v["field"].as_str()), (want, field), "POST {path} {body} -> {v}");
        assert!(v["error"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    }
    let gid = e.group("good").await;
    let (s, v) = e.api.post("/v1/groups", json!({"app_name": "good"})).await;
    assert_eq!(
        (s, v["field"].as_str()),
        (422, Some("app_name")),
        "duplicate app name: {v}"
    );

    let job = |extra: Value| {
        let mut b = json!({"group": "good", "handler": "h"});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!({"handler": "h"}), 422, "group_id"),
        (json!({"group": "nope", "handler": "h"}), 422, "group"),
        (json!({"group_id": 999, "handler": "h"}), 422, "group_id"),
        (json!({"group": "good"}), 422, "handler"),
        (
            job(json!({"schedule_type": "CRON", "schedule_expr": "0 0 25 * * ?"})),
            422,
            "schedule_expr",
        ),
        (
            job(json!({"schedule_type": "CRON", "schedule_expr": "0 0 1 * * ?", "time_zone": "Mars/Base"})),
            422,
            "time_zone",
        ),
        (job(json!({"schedule_type": "WEEKLY"})), 422, "schedule_type"),
        (
            job(json!({"schedule_type": "FIX_RATE", "schedule_expr": "-3"})),
            422,
            "schedule_expr",
        ),
        (job(json!({"route_strategy": "ROUND_ROBIN"})), 422, "route_strategy"),
        (job(json!({"block_strategy": "WAIT"})), 422, "block_strategy"),
        (job(json!({"misfire_strategy": "LATER"})), 422, "misfire_strategy"),
        (job(json!({"glue_type": "GLUE_COBOL"})), 422, "glue_type"),
        (job(json!({"glue_type": "GLUE_SHELL"})), 422, "glue_source"),
        (job(json!({"child_job_ids": [424242]})), 422, "child_job_ids"),
        (job(json!({"retry_count": 1000})), 422, "retry_count"),
        (job(json!({"timeout_secs": -1})), 422, "timeout_secs"),
        (job(json!({"timeout_secs": "soon"})), 400, "timeout_secs"),
        (job(json!({"running": true})), 422, "running"),
        (job(json!({"surprise": 1})), 400, "surprise"),
    ];
    for (body, want, field) in cases {
        let (s, v) = e.api.post("/v1/jobs", body.clone()).await;
        assert_eq!(
            (s, v["field"].as_str()),
            (want, Some(field)),
            "POST /v1/jobs {body} -> {v}"
        );
    }
    let (s, v) = e
        .api
        .post(
            "/v1/jobs",
            job(json!({"schedule_type": "CRON", "schedule_expr": "0 0 25 * * ?"})),
        )
        .await;
    assert!(
        v["error"].as_str().unwrap().contains("hour"),
        "a bad cron names the cron field: {s} {v}"
    );
    let (_, v) = e
        .api
        .post("/v1/jobs", job(json!({"route_strategy": "ROUND_ROBIN"})))
        .await;
    assert!(
        v["error"].as_str().unwrap().contains("CONSISTENT_HASH"),
        "unknown enum lists the choices: {v}"
    );

    let jid = e.job(job(json!({}))).await;
    for (method, path, want) in [
        (reqwest::Method::GET, "/v1/jobs/abc".to_owned(), 400),
        (reqwest::Method::GET, "/v1/jobs/99999".to_owned(), 404),
        (reqwest::Method::GET, "/v1/groups/99999".to_owned(), 404),
        (reqwest::Method::DELETE, format!("/v1/groups/{gid}"), 409),
        (reqwest::Method::POST, format!("/v1/jobs/{jid}/start"), 422),
        (reqwest::Method::GET, format!("/v1/jobs/{jid}/next?count=0"), 400),
        (reqwest::Method::GET, "/v1/runs?status=bogus".to_owned(), 422),
        (reqwest::Method::GET, "/v1/runs?limit=0".to_owned(), 400),
        (reqwest::Method::GET, "/v1/runs?job_id=x".to_owned(), 400),
        (reqwest::Method::GET, "/v1/runs/99999".to_owned(), 404),
        (reqwest::Method::GET, "/v1/runs/99999/log".to_owned(), 404),
        (reqwest::Method::POST, "/v1/runs/99999/kill".to_owned(), 404),
        (reqwest::Method::GET, "/v1/executors?group=nope".to_owned(), 404),
        (reqwest::Method::GET, "/v1/nothing".to_owned(), 404),
        (reqwest::Method::GET, "/v1/groups/nope".to_owned(), 404),
        (reqwest::Method::DELETE, "/v1/groups/99999".to_owned(), 404),
        (reqwest::Method::DELETE, "/v1/jobs/abc".to_owned(), 400),
        (reqwest::Method::DELETE, "/v1/jobs/99999".to_owned(), 404),
        (reqwest::Method::POST, "/v1/jobs/99999/start".to_owned(), 404),
        (reqwest::Method::POST, "/v1/jobs/99999/stop".to_owned(), 404),
        (reqwest::Method::GET, "/v1/jobs/99999/next".to_owned(), 404),
        (reqwest::Method::GET, format!("/v1/jobs/{jid}/next?count=abc"), 400),
        (reqwest::Method::GET, "/v1/runs/abc".to_owned(), 400),
        (reqwest::Method::GET, "/v1/runs/abc/log".to_owned(), 400),
        (reqwest::Method::POST, "/v1/runs/abc/kill".to_owned(), 400),
    ] {
        let (s, v) = e.api.call(method.clone(), &path, None).await;
        assert_eq!(s, want, "{method} {path} -> {v}");
        assert!(
            v["error"].is_string(),
            "{method} {path}: JSON error body expected, got {v}"
        );
    }
    let (s, v) = e
        .api
        .post(&format!("/v1/jobs/{jid}/trigger"), json!({"param": "x", "extra": 1}))
        .await;
    assert_eq!((s, v["field"].as_str()), (400, Some("extra")));
    let (s, v) = e
        .api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/jobs/{jid}"),
            Some(json!({"schedule_type": "CRON", "schedule_expr": "nope"})),
        )
        .await;
    assert_eq!((s, v["field"].as_str()), (422, Some("schedule_expr")));
    // Bodies on the other writing endpoints.
    for (method, path, body, want, field) in [
        (
            reqwest::Method::PUT,
            "/v1/jobs/99999".to_owned(),
            json!({"handler": "h"}),
            404,
            None,
        ),
        (
            reqwest::Method::PATCH,
            format!("/v1/jobs/{jid}"),
            json!({"child_job_ids": [jid]}),
            422,
            Some("child_job_ids"),
        ),
        (
            reqwest::Method::PATCH,
            format!("/v1/jobs/{jid}"),
            json!({"retry_count": "two"}),
            400,
            Some("retry_count"),
        ),
        (
            reqwest::Method::PUT,
            format!("/v1/groups/{gid}"),
            json!({"addresses": ["ftp://x"]}),
            422,
            Some("addresses"),
        ),
        (
            reqwest::Method::PATCH,
            format!("/v1/groups/{gid}"),
            json!({"app_name": ""}),
            422,
            Some("app_name"),
        ),
        (
            reqwest::Method::PATCH,
            format!("/v1/groups/{gid}"),
            json!({"colour": "red"}),
            400,
            Some("colour"),
        ),
        (
            reqwest::Method::PUT,
            "/v1/groups/99999".to_owned(),
            json!({"title": "t"}),
            404,
            None,
        ),
        (
            reqwest::Method::POST,
            "/v1/jobs/99999/trigger".to_owned(),
            json!({}),
            404,
            None,
        ),
        (
            reqwest::Method::POST,
            format!("/v1/jobs/{jid}/trigger"),
            json!({"param": 5}),
            400,
            Some("param"),
        ),
    ] {
        let (s, v) = e.api.call(method.clone(), &path, Some(body.clone())).await;
        assert_eq!((s, v["field"].as_str()), (want, field), "{method} {path} {body} -> {v}");
        assert!(v["error"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    }
    let raw = http
        .post(format!("{base}/v1/jobs/{jid}/trigger"))
        .bearer_auth(common::API_TOKEN)
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);
    // Nothing stored by any rejected request, and the rejected updates left the job and the
    // group unchanged.
    let groups = e.api.get("/v1/groups").await.1;
    assert_eq!(groups.as_array().unwrap().len(), 1, "{groups}");
    assert_eq!(groups[0]["app_name"], "good");
    assert_eq!(groups[0]["address_type"], "auto");
    assert_eq!(groups[0]["addresses"], json!([]));
    let jobs = e.api.get("/v1/jobs").await.1;
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs}");
    assert_eq!(jobs[0]["schedule_type"], "NONE");
    assert_eq!(jobs[0]["child_job_ids"], json!([]), "{jobs}");
    assert_eq!(jobs[0]["retry_count"], 0, "{jobs}");
    assert_eq!(e.api.get("/v1/runs").await.1.as_array().unwrap().len(), 0);
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_sqlite() {
    bad_input(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_mariadb() {
    bad_input(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_postgres() {
    bad_input(Db::Postgres).await;
}
