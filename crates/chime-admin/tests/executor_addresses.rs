//! The admin sends every executor its access token, so it calls only addresses of the form
//! `http(s)://host:port[/path-prefix]` inside the networks it is allowed to call
//! (`--executor-networks`, by default everything but link-local). Registrations and manual
//! addresses outside them are refused with a reason, and a host name that resolves outside them
//! is refused when the admin connects, before the token leaves.

mod common;

use common::{Api, Db, TestDb};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Registers `address` for `app` as an executor does; returns XXL-JOB's reply envelope.
async fn register(base: &str, app: &str, address: &str) -> Value {
    common::post_registration(base, app, address).await
}

/// Addresses that must never be called, with a word the refusal must contain.
const REFUSED: &[(&str, &str)] = &[
    ("http://169.254.169.254/latest/meta-data/", "networks"),
    ("http://169.254.169.254:80", "networks"),
    ("http://[fe80::1]:9999/", "networks"),
    ("http://[::ffff:169.254.169.254]:9999/", "networks"),
    ("http://user:secret@127.0.0.1:9999/", "user name"),
    ("http://127.0.0.1:9999/?next=http://169.254.169.254/", "query"),
    ("http://127.0.0.1:9999/#", "fragment"),
    ("gopher://127.0.0.1:9999/", "http"),
    ("http://127.0.0.1:99999/", "host:port"),
];

#[tokio::test]
async fn registrations_and_manual_addresses_outside_the_rules_are_refused() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}", handle.local_addr);
    api.ok("/v1/groups", json!({"app_name": "auto"})).await;

    for (address, word) in REFUSED {
        let v = register(&base, "auto", address).await;
        assert_eq!(v["code"], 500, "registration of {address}: {v}");
        let msg = v["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(word), "registration of {address}: {msg}");
        let (s, v) = api
            .post("/v1/groups", json!({"app_name": "manual", "addresses": [address]}))
            .await;
        assert_eq!(s, 422, "manual group with {address}: {v}");
        assert_eq!(v["field"], "addresses", "{v}");
        assert!(v["error"].as_str().unwrap().contains(word), "{v}");
    }
    // Nothing of that was kept: the group has no executor, the registry table no row.
    handle.admin.directory.refresh().await.unwrap();
    let (_, listed) = api.get("/v1/executors?group=auto").await;
    assert_eq!(listed[0]["executors"], json!([]), "{listed}");

    // Loopback and private addresses, with or without a path prefix, are fine by default.
    for address in [
        "http://127.0.0.1:9999/",
        "http://10.1.2.3:9999",
        "http://executor-1:9999/chime/",
    ] {
        let v = register(&base, "auto", address).await;
        assert_eq!(v["code"], 200, "registration of {address}: {v}");
    }
    api.wait_executors("auto", 3).await;
    handle.shutdown().await;
    db.drop_db().await;
}

/// A fake executor that counts the requests it receives and answers every one with success.
async fn counting_executor() -> (u16, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let app = axum::Router::new().fallback(move || {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            axum::Json(json!({"code": 200, "msg": null}))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, seen)
}

#[tokio::test]
async fn an_allow_list_tightens_registration_and_dispatch() {
    let db = TestDb::new(Db::Sqlite).await;
    let mut config = common::config(&db.url);
    config.executor_networks = "10.0.0.0/8".parse().unwrap();
    let handle = chime_admin::start(config).await.expect("admin starts");
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}", handle.local_addr);
    api.ok("/v1/groups", json!({"app_name": "auto"})).await;

    let v = register(&base, "auto", "http://127.0.0.1:9999/").await;
    assert_eq!(v["code"], 500, "loopback is outside 10.0.0.0/8: {v}");
    assert!(v["msg"].as_str().unwrap().contains("--executor-networks"), "{v}");
    let v = register(&base, "auto", "http://10.9.8.7:9999/").await;
    assert_eq!(v["code"], 200, "{v}");

    // A name passes the shape check, but it resolves to loopback: the admin refuses to connect,
    // the run fails with the reason, and the executor listening there never hears of it.
    let (port, seen) = counting_executor().await;
    let group = api
        .ok(
            "/v1/groups",
            json!({"app_name": "named", "addresses": [format!("http://localhost:{port}")]}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    handle.admin.directory.refresh().await.unwrap();
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group_id": group, "handler": "h", "schedule_type": "NONE"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let run = api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    let failed = common::eventually(30, "the run's trigger is recorded", || {
        let api = api.clone();
        async move {
            let (_, r) = api.get(&format!("/v1/runs/{run}")).await;
            if r["trigger_code"] != 0 {
                Ok(r)
            } else {
                Err(r.to_string())
            }
        }
    })
    .await;
    assert_eq!(failed["trigger_code"], 500, "{failed}");
    assert!(
        failed["trigger_msg"].as_str().unwrap().contains("outside the networks"),
        "{failed}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "the executor outside the networks was called"
    );
    handle.shutdown().await;
    db.drop_db().await;
}

/// A manual address has no heartbeat: the executor list asks each one (`/beat`) and says
/// whether it answered; a registered one carries no such answer.
#[tokio::test]
async fn manual_addresses_say_whether_they_answer() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}", handle.local_addr);
    let (port, seen) = counting_executor().await;
    let live = format!("http://127.0.0.1:{port}");
    // Nothing listens on the discard port.
    let silent = "http://127.0.0.1:9".to_owned();
    api.ok("/v1/groups", json!({"app_name": "pair", "addresses": [live, silent]}))
        .await;
    api.ok("/v1/groups", json!({"app_name": "auto"})).await;
    assert_eq!(register(&base, "auto", "http://127.0.0.1:9999/").await["code"], 200);
    api.wait_executors("auto", 1).await;

    let (status, listed) = api.get("/v1/executors").await;
    assert_eq!(status, 200, "{listed}");
    let entries = |app: &str| -> Vec<(String, Value)> {
        let group = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["app_name"] == app)
            .unwrap();
        group["executors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["address"].as_str().unwrap().to_owned(), e["answers"].clone()))
            .collect()
    };
    let mut pair = entries("pair");
    pair.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        pair,
        vec![(live.clone(), json!(true)), (silent.clone(), json!(false))],
        "{listed}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 1, "one /beat to the live address");
    assert_eq!(
        entries("auto"),
        vec![("http://127.0.0.1:9999".to_owned(), Value::Null)],
        "{listed}"
    );
    handle.shutdown().await;
    db.drop_db().await;
}
