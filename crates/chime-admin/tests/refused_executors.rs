//! Executor API requests refused for their access token are visible: each is counted in
//! `/metrics` by endpoint, and a warning names the endpoint, the caller's address and a
//! registration's app name — at most one a minute per endpoint and address, never with the
//! token. All three refusals are covered: a token nothing accepts, a registration with a token
//! not its group's, and a callback about runs of a group whose token it does not carry.

mod common;

use common::{Api, Db, TestDb, ACCESS_TOKEN};
use serde_json::json;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

const GROUP_TOKEN: &str = "refused-test-group-token";
const WRONG_TOKEN: &str = "guessed-token-0123456789";

/// Everything the admins in this process log, as text.
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .with_writer(move || Sink(sink.clone()))
            .finish();
        // Global: the admin logs from tasks on every worker thread.
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
        buffer
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log lines that mention `needle`.
fn lines_with(needle: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    text.lines().filter(|l| l.contains(needle)).map(str::to_owned).collect()
}

/// The value of `chime_executor_requests_refused_total{endpoint="…"}` (0 when absent).
async fn refused(api: &Api, endpoint: &str) -> u64 {
    api.metric(&format!(
        "chime_executor_requests_refused_total{{endpoint=\"{endpoint}\"}}"
    ))
    .await
    .map_or(0, |v| v as u64)
}

async fn refusals_are_logged_and_counted(kind: Db, source: Ipv4Addr) {
    let logs = logs();
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}", handle.local_addr);
    // Each database's test calls from its own loopback address, so its warnings are its own.
    let http = reqwest::Client::builder()
        .local_address(IpAddr::V4(source))
        .build()
        .unwrap();
    let peer = format!("peer={source}:");
    let wrong = (500, "The access token is wrong.".to_owned());
    api.ok(
        "/v1/groups",
        json!({"app_name": "guarded", "access_token": GROUP_TOKEN}),
    )
    .await;
    assert_eq!(refused(&api, "registry").await, 0);

    // A token nothing accepts, with an app name that tries to forge a log line.
    let forged = format!("evil\n{} WARN forged line {}", "x", "y".repeat(500));
    let registration =
        json!({"registryGroup": "EXECUTOR", "registryKey": forged, "registryValue": "http://127.0.0.1:1"});
    for _ in 0..3 {
        assert_eq!(
            common::executor_api(&http, &base, "registry", WRONG_TOKEN, registration.clone()).await,
            wrong
        );
    }
    // The admin's token, but not the group's own: refused after the app name is known.
    let guarded = json!({"registryGroup": "EXECUTOR", "registryKey": "guarded", "registryValue": "http://127.0.0.1:1"});
    assert_eq!(
        common::executor_api(&http, &base, "registryRemove", ACCESS_TOKEN, guarded).await,
        wrong
    );
    // A callback with a token nothing accepts, and one about a run of the guarded group
    // carrying the admin's token.
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": "guarded", "handler": "h", "schedule_type": "NONE"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let run = api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    let callback = json!([{"logId": run, "logDateTim": 1, "handleCode": 200, "handleMsg": "done"}]);
    assert_eq!(
        common::executor_api(&http, &base, "callback", WRONG_TOKEN, callback.clone()).await,
        wrong
    );
    assert_eq!(
        common::executor_api(&http, &base, "callback", ACCESS_TOKEN, callback).await,
        wrong
    );
    // An unknown path is counted under one name, not under whatever was asked for.
    assert_eq!(
        common::executor_api(&http, &base, "no-such-endpoint", WRONG_TOKEN, json!({})).await,
        wrong
    );

    assert_eq!(refused(&api, "registry").await, 3);
    assert_eq!(refused(&api, "registryRemove").await, 1);
    assert_eq!(refused(&api, "callback").await, 2);
    assert_eq!(refused(&api, "other").await, 1);
    let (_, runs) = api.get(&format!("/v1/runs/{run}")).await;
    assert_ne!(
        runs["status"], "success",
        "the refused callback was not recorded: {runs:#}"
    );

    // One warning per endpoint and address, however many refusals within the minute.
    let ours: Vec<String> = lines_with(&peer);
    let with = |endpoint: &str| -> Vec<&String> {
        ours.iter()
            .filter(|l| l.contains("executor request refused") && l.contains(&format!("endpoint=\"{endpoint}\"")))
            .collect()
    };
    let registry = with("registry");
    assert_eq!(
        registry.len(),
        1,
        "one warning for three refused registrations: {ours:#?}"
    );
    assert!(
        registry[0].contains(r#"app="evil\nx WARN forged line yyy"#) && registry[0].contains('…'),
        "the app name is quoted, escaped and cut: {}",
        registry[0]
    );
    assert!(registry[0].len() < 400, "the warning is short: {}", registry[0]);
    let remove = with("registryRemove");
    assert_eq!(remove.len(), 1, "{ours:#?}");
    assert!(remove[0].contains(r#"app="guarded""#), "{}", remove[0]);
    assert_eq!(with("callback").len(), 1, "{ours:#?}");
    assert_eq!(with("other").len(), 1, "{ours:#?}");
    assert!(
        !lines_with("forged line").iter().any(|l| l.starts_with("x WARN")),
        "no forged line in the log"
    );

    // No token in the log, refused or accepted.
    let all = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    for token in [WRONG_TOKEN, ACCESS_TOKEN, GROUP_TOKEN] {
        assert!(!all.contains(token), "the log shows a token ({token})");
    }

    // The admin still takes the right token.
    let ok = json!({"registryGroup": "EXECUTOR", "registryKey": "guarded", "registryValue": "http://127.0.0.1:1"});
    assert_eq!(
        common::executor_api(&http, &base, "registry", GROUP_TOKEN, ok).await.0,
        200
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_logged_and_counted_sqlite() {
    refusals_are_logged_and_counted(Db::Sqlite, Ipv4Addr::new(127, 0, 0, 11)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_logged_and_counted_mysql() {
    refusals_are_logged_and_counted(Db::MySql, Ipv4Addr::new(127, 0, 0, 12)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_logged_and_counted_postgres() {
    refusals_are_logged_and_counted(Db::Postgres, Ipv4Addr::new(127, 0, 0, 13)).await;
}
