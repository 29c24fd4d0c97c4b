//! Registrations are bounded: an app name longer than 64 characters, an address longer than
//! 255, control characters, a malformed instance id or a body over 64 KiB are refused with
//! XXL-JOB's envelope (`code` 500 and the reason), on every database, before anything is stored
//! in the `registry` table or kept in the admin's directory. And a real `chime admin` process
//! sent twenty 10 MB registrations comes back to about the memory it had before.

mod common;

use common::process::{free_port, OwnedProcess};
use common::{Api, Db, TestDb, ACCESS_TOKEN, API_TOKEN};
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

/// Posts `body` to `/api/{uri}` with the access token; returns the envelope.
async fn post(base: &str, uri: &str, body: String) -> Value {
    let text = reqwest::Client::new()
        .post(format!("{base}/api/{uri}"))
        .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .expect("the admin answers")
        .text()
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not an envelope ({e}): {text:.300}"))
}

/// Posts a body too large to be read: the admin refuses it from its declared length and closes
/// the connection without reading the rest, so the sender may see its reply (`code` 500) or,
/// still writing, a closed connection. Either way nothing was read: returns the reply if any.
async fn post_oversized(base: &str, uri: &str, body: String) -> Option<Value> {
    let sent = reqwest::Client::new()
        .post(format!("{base}/api/{uri}"))
        .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await;
    let text = sent.ok()?.text().await.ok()?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("not an envelope ({e}): {text:.300}")))
}

/// The start of `v`, for failure messages: a reply might carry a whole refused value.
fn short(v: &Value) -> String {
    v.to_string().chars().take(300).collect()
}

fn registration(key: &str, value: &str, instance: Option<Value>) -> String {
    let mut body = json!({"registryGroup": "EXECUTOR", "registryKey": key, "registryValue": value});
    if let Some(i) = instance {
        body["instance"] = i;
    }
    body.to_string()
}

async fn refused_registrations_leave_no_trace(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}/xxl-job-admin", handle.local_addr);
    api.ok("/v1/groups", json!({"app_name": "bounded"})).await;
    let address = "http://127.0.0.1:9999/";
    let chime = |id: &str| Some(json!({"id": id, "uptimeMs": 5}));
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "a 10 MB app name",
            registration(&"k".repeat(10 << 20), address, None),
            "registration body is larger than 64 KiB",
        ),
        (
            "a 100 KiB address",
            registration("bounded", &format!("http://{}", "h".repeat(100 << 10)), None),
            "registration body is larger than 64 KiB",
        ),
        (
            "an app name of 65 characters",
            registration(&"b".repeat(65), address, None),
            "registryKey is longer than 64 characters",
        ),
        (
            "an address of 256 characters",
            registration("bounded", &format!("http://{}", "h".repeat(249)), None),
            "registryValue is longer than 255 characters",
        ),
        (
            "a line break in the app name",
            registration("bound\ned", address, None),
            "registryKey must not contain control characters",
        ),
        (
            "a NUL in the address",
            registration("bounded", "http://127.0.0.1:9999\u{0}/", None),
            "registryValue must not contain control characters",
        ),
        (
            "an instance id with a slash",
            registration("bounded", address, chime("../../etc")),
            "instance.id must be 1 to 64 characters",
        ),
        (
            "an instance id of 65 characters",
            registration("bounded", address, chime(&"i".repeat(65))),
            "instance.id must be 1 to 64 characters",
        ),
    ];
    for (what, body, reason) in &cases {
        for uri in ["registry", "registryRemove"] {
            let reply = post(&base, uri, body.clone()).await;
            let msg = reply["msg"].as_str().unwrap_or_default();
            assert_eq!(reply["code"], 500, "{uri} with {what}: {}", short(&reply));
            assert!(
                msg.starts_with("Illegal Argument.") && msg.contains(reason),
                "{uri} with {what}: {msg:.300}"
            );
            assert!(msg.len() < 200, "the value is not echoed back: {msg:.300}");
        }
    }
    let stored = handle.admin.store.live_registry(0).await.unwrap();
    assert!(stored.is_empty(), "nothing in the registry table: {stored:?}");
    let (_, listed) = api.get("/v1/executors?group=bounded").await;
    assert_eq!(listed[0]["executors"], json!([]), "nothing in the directory: {listed}");
    assert!(handle
        .admin
        .directory
        .executor_process("bounded", "http://127.0.0.1:9999")
        .is_none());

    // The largest valid values, and a valid instance, are accepted and kept.
    let long_address = format!("http://127.0.0.1:9999/{}", "p".repeat(255 - 22));
    assert_eq!(long_address.len(), 255);
    let reply = post(
        &base,
        "registry",
        registration("bounded", &long_address, chime(&format!("{}_-", "a1".repeat(31)))),
    )
    .await;
    assert_eq!(reply["code"], 200, "{reply}");
    let stored = handle.admin.store.live_registry(0).await.unwrap();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        (stored[0].0.as_str(), stored[0].1.as_str()),
        ("bounded", long_address.as_str())
    );
    assert!(handle
        .admin
        .directory
        .executor_process("bounded", &long_address)
        .is_some());
    // Whatever registers there next without saying which process it is replaces what was said.
    let reply = post(&base, "registry", registration("bounded", &long_address, None)).await;
    assert_eq!(reply["code"], 200, "{reply}");
    assert!(handle
        .admin
        .directory
        .executor_process("bounded", &long_address)
        .is_none());
    let name_64 = "n".repeat(64);
    assert_eq!(
        post(&base, "registry", registration(&name_64, address, None)).await["code"],
        200
    );
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test]
async fn refused_registrations_leave_no_trace_sqlite() {
    refused_registrations_leave_no_trace(Db::Sqlite).await;
}

#[tokio::test]
async fn refused_registrations_leave_no_trace_mariadb() {
    refused_registrations_leave_no_trace(Db::MySql).await;
}

#[tokio::test]
async fn refused_registrations_leave_no_trace_postgres() {
    refused_registrations_leave_no_trace(Db::Postgres).await;
}

/// The resident memory of process `pid` in bytes (`VmRSS` in `/proc/PID/status`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc is readable");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kb * 1024
}

/// Twenty registrations with a 10 MB app name, sent to a real `chime admin` process on SQLite
/// (which does not enforce `VARCHAR(64)`), are refused, and the admin's resident memory comes
/// back near where it was.
///
/// A registration body is read only up to 64 KiB (a callback's 16 MB limit does not apply to
/// it), and one that declares more is refused unread, so neither the peak nor what stays grows
/// with the bodies. Stored and kept in the directory, the twenty names used to leave 210–280 MB
/// more resident than before (from 163 MB to 375–440 MB); read whole and then refused, they
/// still left 40–80 MB behind in the allocator. The limit of baseline + 20 MB leaves room for
/// the machine's load and allocator noise only; the exact figures are printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_registrations_do_not_stay_in_memory() {
    let db = TestDb::new(Db::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut command = Command::new(common::chime_binary());
    command
        .args(["admin", "--db", &db.url, "--listen", &format!("127.0.0.1:{port}")])
        .args(["--context-path", "/xxl-job-admin", "--default-tz", "UTC"])
        .env("CHIME_API_TOKEN", API_TOKEN)
        .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
        .env("CHIME_ADMIN_PASSWORD", "registry-bounds-test")
        .env("RUST_LOG", "info,sqlx=warn");
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("CHIME_") && !matches!(key.as_str(), "CHIME_API_TOKEN" | "CHIME_ACCESS_TOKEN") {
            command.env_remove(key);
        }
    }
    let admin = OwnedProcess::spawn("chime admin", &mut command, Some(&dir.path().join("admin.log")));
    let api = Api::new(format!("127.0.0.1:{port}").parse().unwrap());
    common::eventually(60, "the admin to answer /healthz", || async {
        match reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await {
            Ok(r) if r.status() == 200 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    api.ok("/v1/groups", json!({"app_name": "bounded"})).await;
    let base = format!("http://127.0.0.1:{port}/xxl-job-admin");
    // Warm up what every registration uses (connections, the directory, the database), so the
    // baseline is that of an admin at work rather than one that just started.
    for _ in 0..20 {
        let reply = post(
            &base,
            "registry",
            registration("bounded", "http://127.0.0.1:9999/", None),
        )
        .await;
        assert_eq!(reply["code"], 200, "{reply}");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let baseline = rss(admin.id());

    // Twenty different names, as twenty executors (or one caller) would send them.
    let name = "k".repeat(10 << 20);
    let mut peak = baseline;
    for i in 0..20 {
        let huge = registration(&format!("{i:02}{name}"), "http://127.0.0.1:9998/", None);
        if let Some(reply) = post_oversized(&base, "registry", huge).await {
            assert_eq!(reply["code"], 500, "{}", short(&reply));
        }
        peak = peak.max(rss(admin.id()));
    }
    // Settle: the refresh loop and the allocator hand back what they are done with.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = rss(admin.id());
    let mb = |b: u64| b / (1 << 20);
    println!(
        "chime admin RSS: baseline {} MB, highest seen {} MB, after {} MB",
        mb(baseline),
        mb(peak),
        mb(after)
    );
    assert!(
        after < baseline + (20 << 20) && peak < baseline + (20 << 20),
        "resident memory grew: baseline {} MB, highest {} MB, after {} MB",
        mb(baseline),
        mb(peak),
        mb(after)
    );
    let (_, listed) = api.get("/v1/executors?group=bounded").await;
    assert_eq!(
        listed[0]["executors"].as_array().map(Vec::len),
        Some(1),
        "only the valid executor is listed: {}",
        short(&listed)
    );
    drop(admin);
    db.drop_db().await;
}
