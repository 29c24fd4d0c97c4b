//! The executor's HTTP endpoints over real loopback HTTP: replies, codes and messages exactly
//! as XXL-JOB 2.4's Java executor gives them, token checks, requests shaped by a web browser,
//! malformed input, log paging, and what every registration says about the process.

mod support;

use chime_executor::JobContext;
use serde_json::json;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::*;

#[tokio::test]
async fn beat_answers_200_json_with_empty_or_quoted_body() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    for body in ["", "\"\""] {
        let reply = exec.client.post("/beat", body).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(reply.body, json!({"code": 200}), "Gson style: nulls omitted");
    }
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn access_token_is_checked_on_every_endpoint() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, Some("s3cret"), |b| b).await;
    let missing = Client::new(exec.handle.local_addr().unwrap(), None);
    let wrong = Client::new(exec.handle.local_addr().unwrap(), Some("s3cret-not"));
    for path in ["/beat", "/idleBeat", "/run", "/kill", "/log", "/nope"] {
        for client in [&missing, &wrong] {
            let reply = client.post(path, "{\"jobId\":1}").await;
            assert_eq!(reply.status, 200);
            assert_eq!(
                reply.body,
                json!({"code": 500, "msg": "The access token is wrong."}),
                "{path}"
            );
        }
    }
    assert_eq!(exec.client.post("/beat", "").await.body, json!({"code": 200}));
    let reply = exec.client.run(trigger(1, 1, "demoJobHandler", "hi")).await;
    assert_eq!(reply.body, json!({"code": 200}));
    assert_eq!(admin.result_of(1).await, (200, "hi".to_owned()));
    // The executor sends the token to the admin too.
    let tokens = admin.recorded.lock().unwrap().tokens.clone();
    assert!(!tokens.is_empty());
    assert!(tokens.iter().all(|(_, t)| t.as_deref() == Some("s3cret")), "{tokens:?}");
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn malformed_requests_get_a_failure_reply_and_the_executor_carries_on() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    let c = &exec.client;

    for path in ["/run", "/kill", "/idleBeat", "/log"] {
        let reply = c.post(path, "{not json").await;
        assert_eq!((reply.status, reply.code()), (200, 500), "{path}: {:?}", reply.body);
        assert!(reply.msg().starts_with("request error:"), "{path}: {}", reply.msg());
    }
    let reply = c.post("/run", "[1,2]").await;
    assert_eq!(reply.code(), 500);

    let reply = c.run(trigger(1, 1, "nope", "")).await;
    assert_eq!(reply.body, json!({"code": 500, "msg": "job handler [nope] not found."}));

    let mut bad_glue = trigger(1, 2, "demoJobHandler", "");
    bad_glue["glueType"] = json!("XYZ");
    assert_eq!(
        c.run(bad_glue).await.body,
        json!({"code": 500, "msg": "glueType[XYZ] is not valid."})
    );

    let mut bad_block = trigger(1, 3, "demoJobHandler", "");
    bad_block["executorBlockStrategy"] = json!("RUN_TWICE");
    let reply = c.run(bad_block).await;
    assert_eq!(reply.code(), 500);
    assert!(
        reply.msg().contains("block strategy") && reply.msg().contains("RUN_TWICE"),
        "{}",
        reply.msg()
    );

    let mut groovy = trigger(1, 4, "", "");
    groovy["glueType"] = json!("GLUE_GROOVY");
    let reply = c.run(groovy).await;
    assert_eq!(reply.code(), 500);
    assert!(reply.msg().contains("not supported"), "{}", reply.msg());

    let mut shell = trigger(1, 5, "", "");
    shell["glueType"] = json!("GLUE_SHELL");
    shell["glueSource"] = json!("echo hi");
    let reply = c.run(shell).await;
    assert_eq!(reply.code(), 500);
    assert!(
        reply
            .msg()
            .starts_with("fail, current glue type [GLUE(Shell)] not supported."),
        "{}",
        reply.msg()
    );
    assert!(reply.msg().contains("--enable-scripts"), "{}", reply.msg());

    let reply = c.request(reqwest::Method::GET, "/run", String::new()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.body,
        json!({"code": 500, "msg": "invalid request, HttpMethod not support."})
    );

    let reply = c.post("/foo", "{}").await;
    assert_eq!(
        reply.body,
        json!({"code": 500, "msg": "invalid request, uri-mapping(/foo) not found."})
    );

    let reply = c.post("/kill", "").await;
    assert_eq!(reply.code(), 500, "empty body: {:?}", reply.body);

    // Nothing above was accepted, nothing was reported, and the executor still works.
    assert_eq!(c.post("/beat", "").await.body, json!({"code": 200}));
    assert_eq!(
        c.run(trigger(9, 9, "demoJobHandler", "after")).await.body,
        json!({"code": 200})
    );
    assert_eq!(admin.result_of(9).await, (200, "after".to_owned()));
    assert!(admin.callbacks_for(1).is_empty());
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn kill_and_idle_beat_without_a_runner() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    let reply = exec.client.post("/kill", json!({"jobId": 77}).to_string()).await;
    assert_eq!(reply.body, json!({"code": 200, "msg": "job thread already killed."}));
    let reply = exec.client.post("/idleBeat", json!({"jobId": 77}).to_string()).await;
    assert_eq!(reply.body, json!({"code": 200}));
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn registers_with_every_admin_at_start_with_the_advertised_address() {
    let first = FakeAdmin::start(true).await;
    let second = FakeAdmin::start(true).await;
    let second_base = second.base();
    let exec = start_executor(&first, None, move |b| {
        b.admin_addresses([second_base]).advertise("10.1.2.3:9999")
    })
    .await;
    for admin in [&first, &second] {
        let reg = wait_for(WAIT, || admin.recorded.lock().unwrap().registry.first().cloned())
            .await
            .expect("registered");
        assert_eq!(reg.registry_group, "EXECUTOR");
        assert_eq!(reg.registry_key, "chime-test");
        assert_eq!(reg.registry_value, "http://10.1.2.3:9999/");
    }
    assert_eq!(exec.handle.advertised_address(), "http://10.1.2.3:9999/");
    exec.handle.shutdown().await;
    for admin in [&first, &second] {
        let removed = admin.recorded.lock().unwrap().registry_remove.clone();
        assert_eq!(removed.len(), 1, "registryRemove sent once to each admin");
        assert_eq!(removed[0].registry_value, "http://10.1.2.3:9999/");
    }
}

#[tokio::test]
async fn log_pages_by_line_while_the_run_writes_then_says_end() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    let mut t = trigger(5, 500, "sleepJobHandler", "3");
    let log_date_time = t["logDateTime"].as_i64().unwrap();
    t["logDateTime"] = json!(log_date_time);
    assert_eq!(exec.client.run(t).await.body, json!({"code": 200}));

    let mut from = 1;
    let mut text = String::new();
    let mut saw_unfinished_with_content = false;
    let mut ended = false;
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        let page = exec.client.log(500, log_date_time, from).await;
        let to = page["toLineNum"].as_i64().unwrap();
        let content = page["logContent"].as_str().unwrap();
        let is_end = page["isEnd"].as_bool().unwrap();
        assert_eq!(page["fromLineNum"].as_i64().unwrap(), from);
        if content != "readLog fail, logFile not exists" {
            // Exactly the lines from..=to, each ending in a newline.
            assert_eq!(content.lines().count() as i64, (to - from + 1).max(0), "page {page}");
            text.push_str(content);
            if !content.is_empty() {
                from = to + 1;
                saw_unfinished_with_content |= !is_end;
            }
        } else {
            assert!(
                !is_end,
                "a queued or running run's log is not 'finished' before it exists"
            );
        }
        if is_end {
            ended = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(ended, "isEnd never became true; log so far:\n{text}");
    assert!(saw_unfinished_with_content, "never saw a partial log with isEnd false");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains("<br>----------- xxl-job job execute start -----------<br>----------- Param:3"),
        "{text}"
    );
    for s in 1..=3 {
        assert_eq!(
            lines.iter().filter(|l| l.ends_with(&format!("slept {s} s"))).count(),
            1,
            "no repeats:\n{text}"
        );
    }
    assert!(
        lines.last().unwrap().contains("xxl-job job execute end(finish)"),
        "{text}"
    );
    assert!(
        lines.last().unwrap().contains("handleCode=200, handleMsg = slept 3"),
        "{text}"
    );
    assert_eq!(admin.result_of(500).await.0, 200);

    // Once finished, a read from past the end is empty and ended; G2's toLineNum = last line.
    let page = exec.client.log(500, log_date_time, from).await;
    assert_eq!(page["logContent"], json!(""));
    assert_eq!(page["toLineNum"].as_i64().unwrap(), from - 1);
    assert_eq!(page["isEnd"], json!(true));

    let missing = exec.client.log(424242, log_date_time, 1).await;
    assert_eq!(
        missing,
        json!({"fromLineNum": 1, "toLineNum": 0, "logContent": "readLog fail, logFile not exists", "isEnd": true})
    );
    // The file is where XXL-JOB puts it.
    let path = chime_executor::run_log_path(exec.logdir.path(), log_date_time, 500);
    assert!(path.exists(), "{}", path.display());
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn every_run_has_its_own_log_file_by_default() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    let log_date_time = now_ms();
    let ids: Vec<i64> = (7_000..7_010).collect();
    for &id in &ids {
        let mut t = trigger(id, id, "demoJobHandler", &format!("p{id}"));
        t["logDateTime"] = json!(log_date_time);
        assert_eq!(exec.client.run(t).await.code(), 200);
    }
    for &id in &ids {
        assert_eq!(admin.result_of(id).await, (200, format!("p{id}")));
        // LOGDIR/yyyy-MM-dd/RUNID.log, holding exactly what /log pages.
        let path = chime_executor::run_log_path(exec.logdir.path(), log_date_time, id);
        assert_eq!(path.file_name().unwrap().to_str().unwrap(), format!("{id}.log"));
        let file = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let page = exec.client.log(id, log_date_time, 1).await;
        assert_eq!(page["logContent"], json!(file));
        assert_eq!(
            (page["toLineNum"].as_i64(), page["isEnd"].as_bool()),
            (Some(3), Some(true))
        );
        assert!(
            file.contains(&format!(" XXL-JOB, Hello World. param=p{id}\n")),
            "{file}"
        );
    }
    let day = chime_executor::run_log_path(exec.logdir.path(), log_date_time, 0)
        .parent()
        .unwrap()
        .to_owned();
    assert_eq!(
        day.file_name().unwrap().to_str().unwrap(),
        chime_executor::day_dir_name(log_date_time)
    );
    assert!(!day.join("packed").exists(), "nothing packed unless asked for");
    exec.handle.shutdown().await;
}

/// Runs `ids` (finishing in one go) on an executor and waits for their results.
async fn run_quick(admin: &FakeAdmin, client: &Client, ids: std::ops::Range<i64>, log_date_time: i64) {
    for id in ids.clone() {
        let mut t = trigger(id, id, "demoJobHandler", &format!("p{id}"));
        t["logDateTime"] = json!(log_date_time);
        assert_eq!(client.run(t).await.code(), 200);
    }
    for id in ids {
        assert_eq!(admin.result_of(id).await, (200, format!("p{id}")));
    }
}

#[tokio::test]
async fn a_restart_with_the_other_log_layout_still_serves_every_log() {
    let admin = FakeAdmin::start(true).await;
    let logdir = tempfile::tempdir().unwrap();
    let log_date_time = now_ms();
    // One file per run, then packed after a restart, then one file per run again.
    for (ids, pack) in [(1..4, false), (4..7, true), (7..10, false)] {
        let (handle, client) = start_executor_in(&admin, None, logdir.path(), |b| b.pack_run_logs(pack)).await;
        run_quick(&admin, &client, ids.clone(), log_date_time).await;
        for id in ids {
            let own_file = chime_executor::run_log_path(logdir.path(), log_date_time, id).exists();
            assert_eq!(own_file, !pack, "run {id}, packing {pack}");
        }
        // Every log written so far, under either setting, pages the same way.
        for id in (1..10).filter(|&id| !admin.callbacks_for(id).is_empty()) {
            let page = client.log(id, log_date_time, 2).await;
            assert_eq!(page["toLineNum"], json!(3), "run {id}: {page}");
            assert_eq!(page["isEnd"], json!(true));
            let lines: Vec<&str> = page["logContent"].as_str().unwrap().lines().collect();
            assert_eq!(lines.len(), 2, "run {id}: {page}");
            assert!(
                lines[0].ends_with(&format!(" XXL-JOB, Hello World. param=p{id}")),
                "{page}"
            );
        }
        handle.shutdown().await;
    }
    let day = chime_executor::run_log_path(logdir.path(), log_date_time, 0)
        .parent()
        .unwrap()
        .to_owned();
    assert!(day.join("packed").join("0.log").exists());
}

#[tokio::test]
async fn with_packing_short_runs_logs_are_packed_and_page_through_log_exactly_like_files() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b.pack_run_logs(true)).await;
    let log_date_time = now_ms();
    // Runs that finish in one go, in one bucket (ids 7000–7999), on different jobs.
    let ids: Vec<i64> = (7_000..7_040).collect();
    for &id in &ids {
        let mut t = trigger(id, id, "demoJobHandler", &format!("p{id}"));
        t["logDateTime"] = json!(log_date_time);
        assert_eq!(exec.client.run(t).await.code(), 200);
    }
    for &id in &ids {
        // The result is reported only once the log is written: no waiting or retrying here.
        assert_eq!(admin.result_of(id).await, (200, format!("p{id}")));
        let page = exec.client.log(id, log_date_time, 1).await;
        assert_eq!(page["fromLineNum"], json!(1));
        assert_eq!(page["toLineNum"], json!(3), "{page}");
        assert_eq!(page["isEnd"], json!(true));
        let lines: Vec<&str> = page["logContent"].as_str().unwrap().lines().collect();
        assert!(lines[0].ends_with(&format!(
            "xxl-job job execute start -----------<br>----------- Param:p{id}"
        )));
        assert!(lines[1].ends_with(&format!(" XXL-JOB, Hello World. param=p{id}")));
        assert!(lines[2].contains(&format!(
            "execute end(finish) -----------<br>----------- Result: handleCode=200, handleMsg = p{id}"
        )));
        // Paging from a later line, and past the end (G2: toLineNum is the last line).
        let page = exec.client.log(id, log_date_time, 3).await;
        assert_eq!(
            (page["toLineNum"].as_i64(), page["isEnd"].as_bool()),
            (Some(3), Some(true))
        );
        assert_eq!(page["logContent"].as_str().unwrap(), format!("{}\n", lines[2]));
        let page = exec.client.log(id, log_date_time, 4).await;
        assert_eq!(page["logContent"], json!(""));
        assert_eq!(page["toLineNum"], json!(3));
        // No file of its own: the log is a record in the day's bucket.
        assert!(!chime_executor::run_log_path(exec.logdir.path(), log_date_time, id).exists());
    }
    let day = chime_executor::run_log_path(exec.logdir.path(), log_date_time, 7_000)
        .parent()
        .unwrap()
        .to_owned();
    assert!(day.join("packed").join("7.log").exists());
    // An id of the same bucket that never ran is "not exists", as without packing.
    let missing = exec.client.log(7_999, log_date_time, 1).await;
    assert_eq!(
        missing,
        json!({"fromLineNum": 1, "toLineNum": 0, "logContent": "readLog fail, logFile not exists", "isEnd": true})
    );
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn callbacks_are_retried_until_an_admin_accepts_and_then_go_to_that_admin_first() {
    let refusing = FakeAdmin::start(false).await;
    let accepting = FakeAdmin::start(false).await;
    let second = accepting.base();
    let exec = start_executor(&refusing, None, move |b| b.admin_addresses([second])).await;
    assert_eq!(
        exec.client.run(trigger(1, 11, "demoJobHandler", "one")).await.code(),
        200
    );
    // Both refuse: the result stays spooled and is re-sent.
    let retried = wait_for(WAIT, || {
        let r = accepting.recorded.lock().unwrap();
        (r.refused_callback_requests >= 2).then_some(())
    })
    .await;
    assert_eq!(retried, Some(()), "re-sent while refused");
    accepting.set_accepting(true);
    assert_eq!(accepting.result_of(11).await, (200, "one".to_owned()));
    // The admin that accepted goes first from now on, even once the first admin accepts too.
    refusing.set_accepting(true);
    for (job, log_id) in [(2, 12), (3, 13)] {
        assert_eq!(
            exec.client
                .run(trigger(job, log_id, "demoJobHandler", "again"))
                .await
                .code(),
            200
        );
        assert_eq!(accepting.result_of(log_id).await, (200, "again".to_owned()));
        assert!(refusing.callbacks_for(log_id).is_empty());
    }
    // When it refuses, the others are tried in configured order, and the one that accepts
    // becomes the first choice.
    accepting.set_accepting(false);
    for (job, log_id) in [(4, 14), (5, 15)] {
        assert_eq!(
            exec.client
                .run(trigger(job, log_id, "demoJobHandler", "back"))
                .await
                .code(),
            200
        );
        assert_eq!(refusing.result_of(log_id).await, (200, "back".to_owned()));
    }
    let refused = accepting.recorded.lock().unwrap().refused_callback_requests;
    exec.handle.shutdown().await;
    assert_eq!(
        accepting.recorded.lock().unwrap().refused_callback_requests,
        refused,
        "once the first admin accepted again, the second was not asked first"
    );
}

#[tokio::test]
async fn a_hung_admin_costs_one_timeout_not_one_per_callback_batch() {
    let hung = FakeAdmin::start(true).await;
    hung.set_hanging(true);
    let good = FakeAdmin::start(true).await;
    let good_base = good.base();
    let exec = start_executor(&hung, None, move |b| {
        b.admin_addresses([good_base])
            .admin_timeout(std::time::Duration::from_millis(300))
    })
    .await;
    // One run at a time, so that every result travels in a batch of its own.
    for id in 1..=5 {
        assert_eq!(
            exec.client
                .run(trigger(id, 100 + id, "demoJobHandler", "x"))
                .await
                .code(),
            200
        );
        assert_eq!(good.result_of(100 + id).await, (200, "x".to_owned()));
    }
    assert_eq!(
        hung.recorded.lock().unwrap().hung_callback_requests,
        1,
        "after the failover, batches go to the admin that accepted"
    );
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn the_log_reply_carries_the_page_for_g2_and_g3_admins() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b).await;
    let log_date_time = now_ms();
    let mut t = trigger(1, 31, "demoJobHandler", "both");
    t["logDateTime"] = json!(log_date_time);
    assert_eq!(exec.client.run(t).await.code(), 200);
    admin.result_of(31).await;
    let reply = exec
        .client
        .post(
            "/log",
            json!({"logDateTim": log_date_time, "logId": 31, "fromLineNum": 1}).to_string(),
        )
        .await;
    // Exactly the Java 2.4 executor's reply plus `data`: G2 admins read `content`, G3 admins
    // (XXL-JOB 3.3–3.4) read `data`.
    let keys: Vec<&String> = reply.body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["code", "content", "data"], "{:?}", reply.body);
    assert_eq!(reply.body["code"], json!(200));
    assert_eq!(reply.body["content"], reply.body["data"]);
    assert!(
        reply.body["data"]["logContent"]
            .as_str()
            .unwrap()
            .contains("XXL-JOB, Hello World. param=both"),
        "{:?}",
        reply.body
    );
    assert_eq!(reply.body["data"]["isEnd"], json!(true));
    // Failures stay exactly the Java executor's.
    let reply = exec.client.post("/log", "{not json").await;
    let keys: Vec<&String> = reply.body.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["code", "msg"], "{:?}", reply.body);
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn works_against_a_g3_admin() {
    // XXL-JOB 3.4.1+: the admin at the root, `{"code","msg","data"}` replies.
    let admin = FakeAdmin::start_g3(false).await;
    let exec = start_executor(&admin, Some("g3-token"), |b| b).await;
    let reg = wait_for(WAIT, || admin.recorded.lock().unwrap().registry.first().cloned())
        .await
        .expect("registered with the G3 admin");
    assert_eq!(reg.registry_key, "chime-test");
    let log_date_time = now_ms();
    let mut t = trigger(1, 41, "demoJobHandler", "g3");
    t["logDateTime"] = json!(log_date_time);
    assert_eq!(exec.client.run(t).await.code(), 200);
    // A G3 refusal (code 500 under `data` style) keeps the result spooled and re-sent.
    let retried = wait_for(WAIT, || {
        (admin.recorded.lock().unwrap().refused_callback_requests >= 2).then_some(())
    })
    .await;
    assert_eq!(retried, Some(()));
    assert!(admin.callbacks_for(41).is_empty());
    admin.set_accepting(true);
    assert_eq!(admin.result_of(41).await, (200, "g3".to_owned()));
    // The console of a G3 admin reads the log from `data`.
    let page = exec.client.log(41, log_date_time, 1).await;
    assert!(page["logContent"].as_str().unwrap().contains("param=g3"), "{page}");
    exec.handle.shutdown().await;
    let r = admin.recorded.lock().unwrap();
    assert_eq!(r.registry_remove.len(), 1, "registryRemove accepted in G3 style");
    assert!(
        r.tokens.iter().all(|(_, t)| t.as_deref() == Some("g3-token")),
        "{:?}",
        r.tokens
    );
}

/// Registers the handler `counted`, which counts its runs in the returned counter.
fn counted(runs: &Arc<AtomicUsize>) -> impl FnOnce(chime_executor::ExecutorBuilder) -> chime_executor::ExecutorBuilder {
    let runs = runs.clone();
    move |b| {
        b.handler("counted", move |_ctx: JobContext| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
            }
        })
    }
}

const JSON_UTF8: (&str, &str) = ("Content-Type", "application/json;charset=UTF-8");

/// Bodies for every endpoint, well-formed: only the headers may decide the replies below.
fn bodies(job_id: i64, log_id: i64) -> [(&'static str, String); 5] {
    [
        ("/run", trigger(job_id, log_id, "counted", "").to_string()),
        ("/beat", String::new()),
        ("/idleBeat", json!({"jobId": job_id}).to_string()),
        ("/kill", json!({"jobId": job_id}).to_string()),
        (
            "/log",
            json!({"logDateTim": now_ms(), "logId": log_id, "fromLineNum": 1}).to_string(),
        ),
    ]
}

#[tokio::test]
async fn bodies_not_declared_json_are_refused_on_every_endpoint_and_run_nothing() {
    // A web page can make a browser POST a `text/plain` body to any address without a CORS
    // preflight; the executor has no token here, so the content type alone must stop it.
    let admin = FakeAdmin::start(true).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let exec = start_executor(&admin, None, counted(&runs)).await;
    let c = &exec.client;
    let refused_types = [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/json-seq"),
        Some("json"),
        None,
    ];
    for content_type in refused_types {
        let headers: Vec<(&str, &str)> = content_type.iter().map(|ct| ("Content-Type", *ct)).collect();
        for (path, body) in bodies(3, 30) {
            let reply = c.post_with(path, &headers, body).await;
            assert_eq!(
                (reply.status, reply.code()),
                (200, 500),
                "{path} with {content_type:?}: {:?}",
                reply.body
            );
            assert!(
                reply.msg().starts_with("request refused:") && reply.msg().contains("application/json"),
                "{path} with {content_type:?}: {}",
                reply.msg()
            );
        }
    }
    // The same trigger declared as JSON runs: the refusals above were for the header alone.
    assert_eq!(c.run(trigger(3, 31, "counted", "")).await.body, json!({"code": 200}));
    assert_eq!(admin.result_of(31).await.0, 200);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the JSON trigger ran");
    assert!(admin.callbacks_for(30).is_empty());
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn application_json_is_accepted_with_parameters_and_in_any_case() {
    let admin = FakeAdmin::start(true).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let exec = start_executor(&admin, Some("s3cret"), counted(&runs)).await;
    let accepted = [
        "application/json;charset=UTF-8", // XXL-JOB's admins and Chime's
        "application/json",
        "Application/JSON; Charset=utf-8",
    ];
    for (i, content_type) in accepted.into_iter().enumerate() {
        let log_id = 60 + i as i64;
        let headers = [("Content-Type", content_type)];
        let reply = exec
            .client
            .post_with("/run", &headers, trigger(6, log_id, "counted", "").to_string())
            .await;
        assert_eq!(reply.body, json!({"code": 200}), "{content_type}");
        assert_eq!(admin.result_of(log_id).await.0, 200, "{content_type}");
        assert_eq!(
            exec.client.post_with("/beat", &headers, "").await.body,
            json!({"code": 200}),
            "{content_type}"
        );
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn requests_a_browser_sent_are_refused_on_every_endpoint_and_change_nothing() {
    let admin = FakeAdmin::start(true).await;
    let runs = Arc::new(AtomicUsize::new(0));
    // No token: the browser headers alone must be enough to refuse.
    let exec = start_executor(&admin, None, counted(&runs)).await;
    let c = &exec.client;

    // A long run to try to kill from a page.
    assert_eq!(
        c.run(trigger(7, 70, "sleepJobHandler", "60")).await.body,
        json!({"code": 200})
    );
    let busy = wait_for_async(WAIT, || async {
        (c.post("/idleBeat", json!({"jobId": 7}).to_string()).await.code() == 500).then_some(())
    })
    .await;
    assert_eq!(busy, Some(()), "the sleep job never ran");

    let browser_headers = [
        ("Origin", "https://evil.example"),
        ("Origin", "null"),
        ("Sec-Fetch-Site", "cross-site"),
        ("Sec-Fetch-Site", "same-site"),
    ];
    for browser in browser_headers {
        for (path, body) in bodies(7, 71) {
            let reply = c.post_with(path, &[JSON_UTF8, browser], body).await;
            assert_eq!(
                (reply.status, reply.code()),
                (200, 500),
                "{path} with {browser:?}: {:?}",
                reply.body
            );
            assert!(
                reply.msg().starts_with("request refused:") && reply.msg().contains("web browser"),
                "{path} with {browser:?}: {}",
                reply.msg()
            );
        }
    }
    // Nothing ran, and the refused kills left the sleep job running.
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(c.post("/idleBeat", json!({"jobId": 7}).to_string()).await.code(), 500);
    assert!(admin.callbacks_for(70).is_empty());
    // The admin's own kill works.
    assert_eq!(c.post("/kill", json!({"jobId": 7}).to_string()).await.code(), 200);
    assert_eq!(
        admin.result_of(70).await,
        (500, "scheduling center kill job. [job running, killed]".to_owned())
    );
    assert!(admin.callbacks_for(71).is_empty());
    exec.handle.shutdown().await;
}

#[tokio::test]
async fn every_registration_names_the_process_with_a_stable_id_and_its_uptime() {
    let admin = FakeAdmin::start(true).await;
    let exec = start_executor(&admin, None, |b| b.registry_interval(Duration::from_millis(30))).await;
    let beats = wait_for(WAIT, || {
        let r = admin.recorded.lock().unwrap();
        (r.registry.len() >= 4).then(|| r.registry.clone())
    })
    .await
    .expect("four registry beats");
    exec.handle.shutdown().await;

    let instances: Vec<_> = beats
        .iter()
        .map(|b| b.instance.clone().expect("every registration carries the instance"))
        .collect();
    let id = instances[0].id.clone();
    assert!(!id.is_empty() && id.len() <= 64, "{id}");
    assert!(
        instances.iter().all(|i| i.id == id),
        "one id per process: {instances:?}"
    );
    for pair in instances.windows(2) {
        assert!(
            pair[1].uptime_ms > pair[0].uptime_ms,
            "the uptime is measured at each beat: {instances:?}"
        );
    }
    let removed = admin.recorded.lock().unwrap().registry_remove.clone();
    assert_eq!(removed.len(), 1);
    let last = removed[0]
        .instance
        .clone()
        .expect("registryRemove carries the instance");
    assert_eq!(last.id, id);
    assert!(last.uptime_ms >= instances.last().unwrap().uptime_ms);

    // Another process (here: another start) at the same admin is another instance.
    let again = start_executor(&admin, None, |b| b).await;
    let address = again.handle.advertised_address().to_owned();
    let second = wait_for(WAIT, || {
        let r = admin.recorded.lock().unwrap();
        r.registry
            .iter()
            .find(|b| b.registry_value == address)
            .and_then(|b| b.instance.clone())
    })
    .await
    .expect("the second executor registered");
    again.handle.shutdown().await;
    let ids: HashSet<_> = [id, second.id].into_iter().collect();
    assert_eq!(ids.len(), 2, "each start draws a new id");
}
