//! Run logs kept by the admin, end to end: Chime's executor as a real process sends each
//! finished run's log (`POST /api/runLog`), the admin stores it, and `GET /v1/runs/{id}/log`
//! serves it after the executor was killed (`kill -9`) and its log directory deleted — on
//! SQLite, MariaDB and PostgreSQL. Also: a group that does not keep logs has none stored, an
//! oversized log is cut to the admin's cap, and a log for a run of another group is refused.

mod common;

use common::demo_executor::{DemoExecutor, REAL_EXECUTOR_DEAD_TIMEOUT};
use common::{executor_api, finished, status, Db, Env, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::time::Duration;

async fn outlives_the_executor(kind: Db) {
    let e = Env::start(kind, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("logs").await;
    let mut executors = e.demo_executors("logs", 1).await;
    let job = e.job(json!({"group": "logs", "handler": "demoJobHandler"})).await;
    let run = e.trigger(job, json!({"param": "kept by the admin"})).await;
    let runs = e.api.wait_runs(job, 30, "the run finished", |r| finished(r) == 1).await;
    assert_eq!(status(&runs[0]), "success", "{}", runs[0]);
    e.stored_log(run).await;

    // The executor and its disk are gone: the log is still there.
    let log_dir = executors[0].log_dir();
    assert!(log_dir.exists(), "the executor wrote its logs to {}", log_dir.display());
    executors[0].kill_9();
    std::fs::remove_dir_all(&log_dir).unwrap();
    let (s, v) = e.api.get(&format!("/v1/runs/{run}/log")).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["stored"], true, "{v}");
    assert_eq!(v["is_end"], true, "{v}");
    let content = v["content"].as_str().unwrap();
    assert!(
        content.contains("XXL-JOB, Hello World. param=kept by the admin"),
        "{content}"
    );
    assert_eq!(v["to_line"].as_i64().unwrap() as usize, content.lines().count(), "{v}");
    // Paging works on the stored copy as on the executor's.
    let (s, page) = e.api.get(&format!("/v1/runs/{run}/log?from_line=2")).await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(
        page["content"].as_str().unwrap(),
        content.lines().skip(1).map(|l| format!("{l}\n")).collect::<String>()
    );

    // A group that does not keep logs: the log is read from the executor while it lives, and
    // nothing is left once it is gone.
    let (s, g) = e
        .api
        .post(
            "/v1/groups",
            json!({"app_name": "nologs", "title": "t", "keep_logs": false}),
        )
        .await;
    assert_eq!((s, &g["keep_logs"]), (201, &json!(false)), "{g}");
    // The OpenAPI document's group schema (exact: every key required, no others) fits it.
    let (_, doc) = e.api.get("/v1/openapi.json").await;
    let mut required: Vec<&str> = doc["components"]["schemas"]["Group"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    let mut keys: Vec<&str> = g.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, required, "{g}");
    let mut others = e.demo_executors("nologs", 1).await;
    let job2 = e.job(json!({"group": "nologs", "handler": "demoJobHandler"})).await;
    let run2 = e.trigger(job2, json!({"param": "left on the executor"})).await;
    e.api
        .wait_runs(job2, 30, "the second run finished", |r| finished(r) == 1)
        .await;
    let (s, v) = e.api.get(&format!("/v1/runs/{run2}/log")).await;
    assert_eq!((s, &v["stored"]), (200, &json!(false)), "{v}");
    assert!(v["content"].as_str().unwrap().contains("left on the executor"), "{v}");
    // Time for a log that was (wrongly) sent and stored to arrive.
    tokio::time::sleep(Duration::from_secs(3)).await;
    others[0].kill_9();
    let (s, v) = e.api.get(&format!("/v1/runs/{run2}/log")).await;
    assert_eq!(s, 502, "nothing stored, and the executor is gone: {v}");

    let http = reqwest::Client::new();
    // A log for a run of another group is refused, and the stored one stays as it was.
    let (code, msg) = executor_api(
        &http,
        &e.prefix,
        "runLog",
        ACCESS_TOKEN,
        json!({"appName": "nologs", "logId": run, "logDateTim": 0, "logContent": "forged\n"}),
    )
    .await;
    assert_eq!(code, 500, "{msg}");
    assert!(msg.contains("does not belong"), "{msg}");
    assert!(e.stored_log(run).await["content"]
        .as_str()
        .unwrap()
        .contains("kept by the admin"));
    // So is one with the wrong access token, and one for a run that does not exist.
    let forged = json!({"appName": "logs", "logId": run, "logContent": "forged\n"});
    let (code, msg) = executor_api(&http, &e.prefix, "runLog", "wrong", forged).await;
    assert_eq!(code, 500, "{msg}");
    let missing = json!({"appName": "logs", "logId": run + 1000, "logContent": "x\n"});
    let (code, msg) = executor_api(&http, &e.prefix, "runLog", ACCESS_TOKEN, missing).await;
    assert_eq!(code, 500, "{msg}");
    assert!(msg.contains("does not exist"), "{msg}");

    // A group with its own token: only that token may send its runs' logs, and it may not
    // send another group's.
    let (s, v) = e
        .api
        .call(
            reqwest::Method::PATCH,
            "/v1/groups/nologs",
            Some(json!({"access_token": "nologs-own-token"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let own = json!({"appName": "nologs", "logId": run2, "logContent": "x\n"});
    let (code, msg) = executor_api(&http, &e.prefix, "runLog", ACCESS_TOKEN, own.clone()).await;
    assert_eq!(code, 500, "the admin's token is not the group's: {msg}");
    let (code, msg) = executor_api(&http, &e.prefix, "runLog", "nologs-own-token", own).await;
    assert_eq!(code, 200, "{msg}");
    let other = json!({"appName": "logs", "logId": run, "logContent": "forged\n"});
    let (code, msg) = executor_api(&http, &e.prefix, "runLog", "nologs-own-token", other).await;
    assert_eq!(code, 500, "{msg}");
    assert!(e.stored_log(run).await["content"]
        .as_str()
        .unwrap()
        .contains("kept by the admin"));

    // An oversized log is cut to the admin's cap, keeping its end and saying so.
    let line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxy\n"; // 72 bytes
    let big: String = line.repeat(3 * 1024 * 1024 / line.len()) + "the last line\n";
    let (code, msg) = executor_api(
        &http,
        &e.prefix,
        "runLog",
        ACCESS_TOKEN,
        json!({"appName": "logs", "logId": run, "logDateTim": 0, "logContent": big, "totalBytes": big.len()}),
    )
    .await;
    assert_eq!(code, 200, "{msg}");
    let v = e.stored_log(run).await;
    let content = v["content"].as_str().unwrap();
    let first = content.lines().next().unwrap();
    assert!(first.starts_with("[chime] log cut"), "{first}");
    assert!(first.contains(&format!("of {} bytes", big.len())), "{first}");
    let kept = &content[first.len() + 1..];
    assert!(
        kept.len() <= chime_protocol::MAX_RUN_LOG_BYTES,
        "{} bytes kept",
        kept.len()
    );
    assert!(
        kept.len() > chime_protocol::MAX_RUN_LOG_BYTES - 4096,
        "{} bytes kept",
        kept.len()
    );
    assert!(kept.ends_with("the last line\n"));
    assert!(kept.starts_with(line), "cut at a line start");
    // Too large a body is refused before it is read: the reply comes while it is being sent,
    // and the admin may close the connection before the client finished writing.
    let huge = "x".repeat(9 * 1024 * 1024);
    let sent = http
        .post(format!("{}/api/runLog", e.prefix))
        .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
        .json(&json!({"appName": "logs", "logId": run, "logContent": huge}))
        .send()
        .await;
    if let Ok(reply) = sent {
        let v: Value = reply.json().await.unwrap();
        assert_eq!(v["code"], 500, "{v}");
        assert!(v["msg"].as_str().unwrap().contains("larger than"), "{v}");
    }
    assert!(e.stored_log(run).await["content"]
        .as_str()
        .unwrap()
        .ends_with("the last line\n"));
    e.close().await;
}

/// The executor's own cap (`--central-log-bytes`): it sends the end of a longer log, marked as
/// cut, and the admin shows that.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_executor_sends_the_end_of_a_long_log() {
    let e = Env::start(Db::Sqlite, REAL_EXECUTOR_DEAD_TIMEOUT).await;
    e.group("capped").await;
    let mut executor = DemoExecutor::start_with(&e.prefix, "capped", &["--central-log-bytes", "100"]);
    e.api.wait_executors("capped", 1).await;
    let job = e.job(json!({"group": "capped", "handler": "demoJobHandler"})).await;
    let run = e.trigger(job, json!({"param": "the end of a long log"})).await;
    e.api.wait_runs(job, 30, "the run finished", |r| finished(r) == 1).await;
    // While the executor has the whole log, it is read from there (a cut copy is only the end).
    let (s, whole) = e.api.get(&format!("/v1/runs/{run}/log")).await;
    assert_eq!((s, &whole["stored"]), (200, &json!(false)), "{whole}");
    assert!(whole["content"].as_str().unwrap().contains("execute start"), "{whole}");
    // The log follows the result within milliseconds; then the executor is gone.
    tokio::time::sleep(Duration::from_secs(2)).await;
    executor.kill_9();
    let v = e.stored_log(run).await;
    let content = v["content"].as_str().unwrap();
    let mut lines = content.lines();
    let note = lines.next().unwrap();
    assert!(note.starts_with("[chime] log cut"), "{content}");
    let kept: String = lines.map(|l| format!("{l}\n")).collect();
    assert!(
        !kept.is_empty() && kept.len() <= 100,
        "{} bytes kept: {kept:?}",
        kept.len()
    );
    // The log's end (its result line) is what is kept.
    assert!(kept.ends_with("handleMsg = the end of a long log\n"), "{kept:?}");
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outlives_the_executor_sqlite() {
    outlives_the_executor(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outlives_the_executor_mariadb() {
    outlives_the_executor(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outlives_the_executor_postgres() {
    outlives_the_executor(Db::Postgres).await;
}
