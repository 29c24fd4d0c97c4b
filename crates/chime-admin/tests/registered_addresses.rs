//! Routes work on executor addresses exactly as registered, as XXL-JOB's do: Java executors
//! register `http://ip:port/`, pyxxl `http://ip:port`, and CONSISTENT_HASH hashes those strings.
//! Calls and run rows use the address without the slash.

mod common;

use common::{Api, Db, TestDb};
use serde_json::json;
use std::time::{Duration, Instant};

/// Registers `address` for `app` through the executor API, as an executor does.
async fn register(base: &str, app: &str, address: &str) {
    let v = common::post_registration(base, app, address).await;
    assert_eq!(v["code"], 200, "{v}");
}

/// Registers the executors on `ports` for `app` again, spelt as its executors spell them
/// (Java with a trailing slash, pyxxl without). Registrations last the test admin's dead
/// timeout of a few seconds, which a loaded machine may spend on a few sends: each send is
/// preceded by a renewal, so every route sees all three.
async fn renew(base: &str, app: &str, ports: [u16; 3]) {
    for p in ports {
        let slash = if app == "java" { "/" } else { "" };
        register(base, app, &format!("http://127.0.0.1:{p}{slash}")).await;
    }
}

/// Where a run of `job` is sent (nothing listens there: the send fails, the address is recorded).
async fn routed_to(api: &Api, job: i64) -> String {
    sent_to(api, job, json!({})).await
}

/// Where a run of `job` triggered with `body` is sent.
async fn sent_to(api: &Api, job: i64, body: serde_json::Value) -> String {
    let run = api.ok(&format!("/v1/jobs/{job}/trigger"), body).await["run_id"]
        .as_i64()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, r) = api.get(&format!("/v1/runs/{run}")).await;
        if r["trigger_code"] != 0 {
            return r["executor_address"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "run {run} was never sent: {r}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn consistent_hash_lands_where_xxl_job_would() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}/xxl-job-admin", handle.local_addr);
    // Ports nothing listens on: connections are refused at once.
    let ports = [1, 2, 3];
    api.ok("/v1/groups", json!({"app_name": "java"})).await;
    api.ok("/v1/groups", json!({"app_name": "python"})).await;
    for p in ports {
        register(&base, "java", &format!("http://127.0.0.1:{p}/")).await;
        register(&base, "python", &format!("http://127.0.0.1:{p}")).await;
    }
    api.wait_executors("java", 3).await;
    api.wait_executors("python", 3).await;
    let (_, listed) = api.get("/v1/executors?group=java").await;
    assert_eq!(
        listed[0]["executors"][0]["address"], "http://127.0.0.1:1",
        "listed as called, without the slash: {listed}"
    );

    // Jobs 1–6 in the Java group, 7–12 in the pyxxl group. Expected executors from a Python
    // transcription of XXL-JOB's ExecutorRouteConsistentHash over the registered strings; jobs
    // 1, 2, 5, 6 would land elsewhere if the slash were dropped before hashing.
    let expected = [
        (1, "java", 1),
        (2, "java", 3),
        (3, "java", 3),
        (4, "java", 2),
        (5, "java", 2),
        (6, "java", 3),
        (7, "python", 1),
        (8, "python", 3),
        (9, "python", 3),
        (10, "python", 2),
        (11, "python", 1),
        (12, "python", 1),
    ];
    for (id, group, _) in expected {
        let job = api
            .ok(
                "/v1/jobs",
                json!({"group": group, "handler": "h", "route_strategy": "CONSISTENT_HASH"}),
            )
            .await;
        assert_eq!(job["id"], id, "a fresh database numbers jobs from 1");
    }
    for (id, group, port) in expected {
        renew(&base, group, ports).await;
        assert_eq!(
            routed_to(&api, id).await,
            format!("http://127.0.0.1:{port}"),
            "job {id} of group {group}"
        );
    }

    // FIRST and LAST sort the registered strings; a manual trigger may name an address in
    // either spelling.
    let first = api
        .ok(
            "/v1/jobs",
            json!({"group": "java", "handler": "h", "route_strategy": "FIRST"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    renew(&base, "java", ports).await;
    assert_eq!(routed_to(&api, first).await, "http://127.0.0.1:1");
    for address in ["http://127.0.0.1:3/", "http://127.0.0.1:3"] {
        renew(&base, "java", ports).await;
        assert_eq!(
            sent_to(&api, first, json!({ "address": address })).await,
            "http://127.0.0.1:3"
        );
    }

    handle.shutdown().await;
    db.drop_db().await;
}
