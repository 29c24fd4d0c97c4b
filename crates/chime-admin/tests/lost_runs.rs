//! The lost-run sweep: it looks at every running run, however many there are, and fails runs
//! whose result will never come — their executor is gone, restarted since it took the run, or
//! alive but dropped the result — and only those, and none as gone before the admin has been up
//! for a dead timeout. A success that arrives after all replaces the loss, once. (With real
//! executor processes killed and restarted: `restarted_executors.rs`.)

mod common;

use chime_admin::monitor::{sweep_lost_runs, SWEEP_PAGE};
use chime_admin::store::{NewRun, TriggerOutcome};
use chime_protocol::messages::JOB_RESULT_LOST;
use chime_protocol::TriggerType;
use common::{Api, Db, TestDb, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

async fn register(base: &str, app: &str, address: &str) {
    let v = common::post_registration(base, app, address).await;
    assert_eq!(v["code"], 200, "{v}");
}

/// Creates `n` runs of `job` that `address` accepted ten seconds ago and never reported on.
async fn running_runs(handle: &chime_admin::AdminHandle, job: i64, address: &str, n: usize) -> Vec<i64> {
    let store = &handle.admin.store;
    let job = store.job(job).await.unwrap();
    let sent_at = chime_admin::model::now_ms() - 10_000;
    let runs: Vec<NewRun> = (0..n)
        .map(|_| NewRun::of_job(&job, TriggerType::Api, sent_at, None))
        .collect();
    let tickets = store.insert_runs(&runs).await.unwrap();
    let sent: Vec<TriggerOutcome> = tickets
        .iter()
        .map(|t| TriggerOutcome {
            run_id: t.id,
            job_id: t.job_id,
            triggered_at: sent_at,
            address: address.to_owned(),
            code: 200,
            msg: "sent".to_owned(),
            shard_total: 1,
            trigger_type: TriggerType::Api,
        })
        .collect();
    store.record_outcomes(&sent, &[]).await.unwrap();
    tickets.iter().map(|t| t.id).collect()
}

async fn run(api: &Api, id: i64) -> Value {
    let (s, v) = api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200, "{v}");
    v
}

#[tokio::test]
async fn the_sweep_looks_past_the_first_page_of_running_runs() {
    let db = TestDb::new(Db::Sqlite).await;
    let mut config = common::config(&db.url);
    // Swept by hand below, once.
    config.lost_sweep = Duration::from_secs(3600);
    let handle = chime_admin::start(config).await.expect("admin starts");
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}/xxl-job-admin", handle.local_addr);
    api.ok("/v1/groups", json!({"app_name": "long"})).await;
    let job = api.ok("/v1/jobs", json!({"group": "long", "handler": "h"})).await["id"]
        .as_i64()
        .unwrap();
    // More than a page of long runs on a live executor, oldest first, then a few on an
    // executor that never registered (or died long ago).
    let alive = "http://127.0.0.1:4";
    let long = running_runs(&handle, job, alive, SWEEP_PAGE as usize + 50).await;
    let lost = running_runs(&handle, job, "http://127.0.0.1:5", 3).await;
    // An admin that has just started has not been up for a dead timeout: an executor it has
    // not heard of yet may still be heard, so no run is failed as gone before then.
    assert_eq!(sweep_lost_runs(handle.sweeper()).await.unwrap(), 0);
    let directory = handle.admin.directory.clone();
    let dead_timeout = handle.admin.config.dead_timeout;
    common::eventually(30, "the admin up for a dead timeout", || async {
        let up = directory.up_time();
        up.settled_for(dead_timeout).then_some(()).ok_or(format!("{up:?}"))
    })
    .await;
    register(&base, "long", &format!("{alive}/")).await;
    api.wait_executors("long", 1).await;
    assert_eq!(sweep_lost_runs(handle.sweeper()).await.unwrap(), lost.len());
    for id in &lost {
        let r = run(&api, *id).await;
        assert_eq!(
            (r["status"].as_str(), r["handle_msg"].as_str()),
            (Some("failed"), Some(JOB_RESULT_LOST))
        );
    }
    for id in [long[0], long[long.len() - 1]] {
        assert_eq!(run(&api, id).await["status"], "running", "run {id} of a live executor");
    }
    // Counted for the alert on lost runs.
    assert_eq!(api.metric("chime_runs_lost_total").await, Some(lost.len() as f64));
    handle.shutdown().await;
    db.drop_db().await;
}

/// A G2 executor that accepts every run and never reports a result; `/idleBeat` says busy for
/// the jobs in `busy`.
async fn silent_executor(busy: Arc<Mutex<HashSet<i64>>>) -> (String, tokio_util::sync::CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let app = axum::Router::new()
        .route(
            "/{path}",
            axum::routing::post(
                |axum::extract::State(busy): axum::extract::State<Arc<Mutex<HashSet<i64>>>>,
                 axum::extract::Path(path): axum::extract::Path<String>,
                 body: axum::body::Bytes| async move {
                    let job = serde_json::from_slice::<Value>(&body)
                        .ok()
                        .and_then(|v| v["jobId"].as_i64());
                    if path == "idleBeat" && job.is_some_and(|j| busy.lock().unwrap().contains(&j)) {
                        r#"{"code":500,"msg":"job thread is running or has trigger queue."}"#
                    } else {
                        r#"{"code":200}"#
                    }
                },
            ),
        )
        .with_state(busy);
    let s = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { s.cancelled().await })
            .await;
    });
    (address, stop)
}

#[tokio::test]
async fn a_run_whose_result_was_dropped_fails_after_the_job_timeout() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let busy = Arc::new(Mutex::new(HashSet::new()));
    let (address, stop) = silent_executor(busy.clone()).await;
    api.ok("/v1/groups", json!({"app_name": "silent", "addresses": [address]}))
        .await;
    let job = |timeout: i64| json!({"group": "silent", "handler": "h", "timeout_secs": timeout});
    let dropped = api.ok("/v1/jobs", job(1)).await["id"].as_i64().unwrap();
    let queued = api.ok("/v1/jobs", job(1)).await["id"].as_i64().unwrap();
    let no_timeout = api.ok("/v1/jobs", job(0)).await["id"].as_i64().unwrap();
    // The executor still works on (or has queued) runs of this job.
    busy.lock().unwrap().insert(queued);
    let mut runs = Vec::new();
    for j in [dropped, queued, no_timeout] {
        runs.push(
            api.ok(&format!("/v1/jobs/{j}/trigger"), json!({})).await["run_id"]
                .as_i64()
                .unwrap(),
        );
    }

    // Timeout 1 s plus the dead timeout (4 s in the tests) plus a sweep.
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = loop {
        let r = run(&api, runs[0]).await;
        if r["status"] == "failed" {
            break r;
        }
        assert_eq!(r["status"], "running", "{r:#}");
        assert!(
            Instant::now() < deadline,
            "the run with a dropped result was never failed: {r:#}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let msg = failed["handle_msg"].as_str().unwrap();
    assert!(msg.contains("no result within the executor timeout (1s)"), "{msg}");
    // The other two were as overdue in the same sweeps, and are left alone: one is still in the
    // executor's hands, the other's job has no timeout.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for id in &runs[1..] {
        assert_eq!(run(&api, *id).await["status"], "running", "run {id}");
    }
    // Once the executor is done with the queued job, its run is failed too.
    busy.lock().unwrap().clear();
    let deadline = Instant::now() + Duration::from_secs(30);
    while run(&api, runs[1]).await["status"] != "failed" {
        assert!(Instant::now() < deadline, "the queued run was never failed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(run(&api, runs[2]).await["status"], "running");
    stop.cancel();
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test]
async fn a_run_without_timeout_fails_once_its_executor_no_longer_has_it() {
    let db = TestDb::new(Db::Sqlite).await;
    let mut config = common::config(&db.url);
    config.lost_result_after = Duration::from_secs(2);
    let handle = chime_admin::start(config).await.expect("admin starts");
    let api = Api::new(handle.local_addr);
    let busy = Arc::new(Mutex::new(HashSet::new()));
    let (address, stop) = silent_executor(busy.clone()).await;
    api.ok("/v1/groups", json!({"app_name": "forgetful", "addresses": [address]}))
        .await;
    let job = api.ok("/v1/jobs", json!({"group": "forgetful", "handler": "h"})).await["id"]
        .as_i64()
        .unwrap();
    // A long run: the executor says it is working on the job.
    busy.lock().unwrap().insert(job);
    let run_id = api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    // Well past the wait, and swept many times: still the executor's, so still running.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let r = run(&api, run_id).await;
    assert_eq!(
        r["status"], "running",
        "a run its executor is working on is left alone: {r:#}"
    );
    // The executor forgets the run (restarted within the dead timeout, say): its result will
    // never come, and the next sweep says so.
    busy.lock().unwrap().clear();
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = loop {
        let r = run(&api, run_id).await;
        if r["status"] == "failed" {
            break r;
        }
        assert!(Instant::now() < deadline, "the forgotten run was never failed: {r:#}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let msg = failed["handle_msg"].as_str().unwrap();
    assert!(msg.contains("no result within 2s"), "{msg}");
    stop.cancel();
    handle.shutdown().await;
    db.drop_db().await;
}

/// Registers `address` in `app` every half second as a Chime executor does, naming its process:
/// the id and start in `process` (changed by the test to play a restart).
fn chime_heartbeats(
    base: String,
    app: &str,
    address: String,
    process: Arc<Mutex<(String, Instant)>>,
) -> tokio_util::sync::CancellationToken {
    let stop = tokio_util::sync::CancellationToken::new();
    let (app, s) = (app.to_owned(), stop.clone());
    tokio::spawn(async move {
        let http = reqwest::Client::new();
        loop {
            let (id, uptime) = {
                let p = process.lock().unwrap();
                (p.0.clone(), p.1.elapsed().as_millis() as u64)
            };
            let body = json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": address,
                              "instance": {"id": id, "uptimeMs": uptime}});
            let _ = http
                .post(format!("{base}/api/registry"))
                .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
                .json(&body)
                .send()
                .await;
            tokio::select! {
                _ = s.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    });
    stop
}

/// Waits until run `id` has a result; returns it.
async fn wait_handled(api: &Api, id: i64, secs: u64, what: &str) -> Value {
    common::eventually(secs, what, || async {
        let r = run(api, id).await;
        if matches!(r["status"].as_str(), Some("pending" | "running")) {
            Err(format!("{r:#}"))
        } else {
            Ok(r)
        }
    })
    .await
}

/// A Chime executor that restarted (a new process id at the same address, serving since the
/// restart) lost the runs its predecessor accepted: they are failed and retried, although the
/// new process says it is busy with their job — and runs sent to the new process are not.
async fn runs_of_a_restarted_process_fail(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}/xxl-job-admin", handle.local_addr);
    // Busy with every job it is given, for ever: neither idle rule can fail these runs, and the
    // job has no timeout (`--lost-result-after` is ten minutes).
    let busy = Arc::new(Mutex::new(HashSet::new()));
    let (address, stop) = silent_executor(busy.clone()).await;
    api.ok("/v1/groups", json!({"app_name": "restarting"})).await;
    let process = Arc::new(Mutex::new(("first-process".to_owned(), Instant::now())));
    let beats = chime_heartbeats(base, "restarting", address.clone(), process.clone());
    api.wait_executors("restarting", 1).await;
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": "restarting", "handler": "h", "retry_count": 1}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    busy.lock().unwrap().insert(job);
    let trigger = || async {
        api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
            .as_i64()
            .unwrap()
    };
    let before = trigger().await;
    common::eventually(10, "the first run accepted", || async {
        let r = run(&api, before).await;
        (r["trigger_code"] == 200).then_some(()).ok_or(format!("{r:#}"))
    })
    .await;
    // More than the margin for a slow call (the executor timeout, 2 s here, plus 1 s) later,
    // the executor restarts: a new id, serving from now.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(run(&api, before).await["status"], "running");
    *process.lock().unwrap() = ("second-process".to_owned(), Instant::now());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = trigger().await;
    let restarted_at = chime_admin::model::now_ms();

    let failed = wait_handled(&api, before, 60, "the run of the earlier process failed").await;
    let msg = failed["handle_msg"].as_str().unwrap();
    assert_eq!(failed["status"], "failed", "{failed:#}");
    assert!(
        msg.starts_with(JOB_RESULT_LOST) && msg.contains("restarted"),
        "failed as lost because of the restart: {msg}"
    );
    println!(
        "{kind:?}: run of the earlier process failed {} ms after the restart",
        failed["handled_at"].as_i64().unwrap() - restarted_at
    );
    let runs = api.runs(job).await;
    let retry = runs.iter().find(|r| r["trigger_type"] == "RETRY").expect("a retry");
    assert_eq!(runs.len(), 3, "one retry: {runs:#?}");
    // The retry and the run sent after the restart went to the new process, and stay its own
    // through more sweeps than it took to fail the other.
    tokio::time::sleep(Duration::from_secs(3)).await;
    for id in [after, retry["id"].as_i64().unwrap()] {
        let r = run(&api, id).await;
        assert_eq!(
            r["status"], "running",
            "a run of the process now serving is left alone: {r:#}"
        );
    }
    beats.cancel();
    stop.cancel();
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test]
async fn runs_of_a_restarted_process_fail_sqlite() {
    runs_of_a_restarted_process_fail(Db::Sqlite).await;
}

#[tokio::test]
async fn runs_of_a_restarted_process_fail_mariadb() {
    runs_of_a_restarted_process_fail(Db::MySql).await;
}

#[tokio::test]
async fn runs_of_a_restarted_process_fail_postgres() {
    runs_of_a_restarted_process_fail(Db::Postgres).await;
}

/// Posts one result for `run_id` as an executor's callback; returns the admin's reply.
async fn callback(base: &str, run_id: i64, code: i64) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/api/callback"))
        .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
        .json(&json!([{"logId": run_id, "logDateTim": 0, "handleCode": code, "handleMsg": "late"}]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// An executor (without process id: XXL-JOB's kind) says twice, `--lost-idle-confirm` apart,
/// that it does not have the run's job: the run is failed as lost and retried once. Its success
/// arriving afterwards — the executor had it after all — makes it a success: the retry, already
/// running, runs on but its failure makes no second retry, and the run's child job is fired
/// once, however often the success is reported.
async fn a_late_success_replaces_the_loss(kind: Db) {
    let db = TestDb::new(kind).await;
    let mut config = common::config(&db.url);
    config.lost_idle_confirm = Duration::from_secs(2);
    let handle = chime_admin::start(config).await.expect("admin starts");
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}/xxl-job-admin", handle.local_addr);
    let busy = Arc::new(Mutex::new(HashSet::new()));
    let (address, stop) = silent_executor(busy.clone()).await;
    api.ok("/v1/groups", json!({"app_name": "late", "addresses": [address]}))
        .await;
    let child = api.ok("/v1/jobs", json!({"group": "late", "handler": "child"})).await["id"]
        .as_i64()
        .unwrap();
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": "late", "handler": "h", "retry_count": 1, "child_job_ids": [child]}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let lost = api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    let failed = wait_handled(&api, lost, 60, "the run its executor does not have failed").await;
    let msg = failed["handle_msg"].as_str().unwrap();
    assert_eq!(failed["status"], "failed", "{failed:#}");
    assert!(msg.starts_with(JOB_RESULT_LOST) && msg.contains("said twice"), "{msg}");
    println!(
        "{kind:?}: idle run failed {} ms after it was sent",
        failed["handled_at"].as_i64().unwrap() - failed["triggered_at"].as_i64().unwrap()
    );
    // The retry is the executor's now, for good.
    busy.lock().unwrap().insert(job);
    let runs = api.runs(job).await;
    assert_eq!(runs.len(), 2, "{runs:#?}");
    let retry = runs.iter().find(|r| r["trigger_type"] == "RETRY").expect("a retry")["id"]
        .as_i64()
        .unwrap();
    common::eventually(10, "the retry sent", || async {
        let r = run(&api, retry).await;
        (r["status"] == "running").then_some(()).ok_or(format!("{r:#}"))
    })
    .await;

    // The lost run's result after all: a success, reported twice (an executor re-sending).
    for _ in 0..2 {
        let reply = callback(&base, lost, 200).await;
        assert_eq!(reply["code"], 200, "accepted: {reply}");
    }
    let r = run(&api, lost).await;
    let msg = r["handle_msg"].as_str().unwrap_or_default();
    assert_eq!(
        r["status"], "success",
        "{kind:?}: the executor's success replaces the loss: {r:#}"
    );
    assert!(
        msg.starts_with("late<br>Reported after this run had been failed as lost")
            && msg.contains(&format!("Retry run {retry} was sent already")),
        "{msg}"
    );
    let children = api.wait_runs(child, 10, "the child job fired", |r| !r.is_empty()).await;
    assert_eq!(children[0]["trigger_type"], "PARENT");
    // The retry's own failure makes no second retry.
    assert_eq!(callback(&base, retry, 500).await["code"], 200);
    common::eventually(10, "the retry's result recorded", || async {
        let r = run(&api, retry).await;
        (r["status"] == "failed").then_some(()).ok_or(format!("{r:#}"))
    })
    .await;
    // Long enough for a retry or a second child to have been written by now, had one been made.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(api.runs(job).await.len(), 2, "{kind:?}: no second retry");
    assert_eq!(api.runs(child).await.len(), 1, "{kind:?}: the child fired once");
    stop.cancel();
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test]
async fn a_late_success_replaces_the_loss_sqlite() {
    a_late_success_replaces_the_loss(Db::Sqlite).await;
}

#[tokio::test]
async fn a_late_success_replaces_the_loss_mariadb() {
    a_late_success_replaces_the_loss(Db::MySql).await;
}

#[tokio::test]
async fn a_late_success_replaces_the_loss_postgres() {
    a_late_success_replaces_the_loss(Db::Postgres).await;
}
