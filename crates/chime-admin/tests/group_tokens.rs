//! A group's own access token (XXL-JOB 3.5 keeps one per group): sent to the group's executors
//! and required from them, instead of the admin's token, which still serves the other groups.

mod common;

use common::{Api, Db, TestDb, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const GROUP_TOKEN: &str = "g4-group-secret";

/// What a G4 executor saw: the token and app name of each `/trigger`, and the run ids.
#[derive(Default)]
struct Seen {
    triggers: Vec<(String, String, i64)>,
}

/// The executor's state: the token it expects, and what it saw.
type ExecutorState = (Arc<Mutex<String>>, Arc<Mutex<Seen>>);

/// A G4 (XXL-JOB 3.5) executor: `/trigger` with `XXL-JOB-ACCESS-TOKEN` and `XXL-JOB-APPNAME`;
/// it refuses calls whose token is not `token`, as the real one does.
async fn g4_executor(
    token: Arc<Mutex<String>>,
    seen: Arc<Mutex<Seen>>,
) -> (String, tokio_util::sync::CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let stop = tokio_util::sync::CancellationToken::new();
    let app = axum::Router::new()
        .route(
            "/{path}",
            axum::routing::post(
                |axum::extract::State((token, seen)): axum::extract::State<ExecutorState>,
                 axum::extract::Path(path): axum::extract::Path<String>,
                 headers: axum::http::HeaderMap,
                 body: axum::body::Bytes| async move {
                    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                    let (given, app) = (header("XXL-JOB-ACCESS-TOKEN"), header("XXL-JOB-APPNAME"));
                    if path == "trigger" {
                        let log_id = serde_json::from_slice::<Value>(&body).unwrap_or_default()["logId"]
                            .as_i64()
                            .unwrap_or(0);
                        seen.lock().unwrap().triggers.push((given.clone(), app, log_id));
                    }
                    if given != *token.lock().unwrap() {
                        return r#"{"code":500,"msg":"invalid request, accessToken or appname invalid."}"#;
                    }
                    r#"{"code":200,"msg":"Success"}"#
                },
            ),
        )
        .with_state((token, seen));
    let s = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { s.cancelled().await })
            .await;
    });
    (address, stop)
}

fn registry(app: &str, address: &str) -> Value {
    json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": address})
}

/// A G4 callback body for `run` sent at `at`.
fn callback(run: i64, at: i64) -> Value {
    json!({"callbackList": [{"logId": run, "logDateTime": at, "handleCode": 200, "handleMsg": "done"}]})
}

async fn wait_run(api: &Api, id: i64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, r) = api.get(&format!("/v1/runs/{id}")).await;
        if pred(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {r:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_group_token_replaces_the_admin_token_for_that_group() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}", handle.local_addr);
    let token = Arc::new(Mutex::new(GROUP_TOKEN.to_owned()));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (address, stop) = g4_executor(token.clone(), seen.clone()).await;

    let g = api
        .ok(
            "/v1/groups",
            json!({"app_name": "g4app", "protocol": "G4", "access_token": GROUP_TOKEN}),
        )
        .await;
    assert_eq!(g["access_token_set"], true, "{g}");
    let (_, shown) = api.get("/v1/groups/g4app").await;
    assert!(
        !shown.to_string().contains(GROUP_TOKEN),
        "the token is never shown: {shown}"
    );
    api.ok("/v1/groups", json!({"app_name": "plain"})).await;

    // Registration: the group's own token for its app, the admin's for the others.
    let wrong = (500, "The access token is wrong.".to_owned());
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "registry",
            ACCESS_TOKEN,
            registry("g4app", &address)
        )
        .await,
        wrong
    );
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "registry",
            GROUP_TOKEN,
            registry("plain", "http://127.0.0.1:1")
        )
        .await,
        wrong
    );
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "registry",
            "nonsense",
            registry("g4app", &address)
        )
        .await,
        wrong
    );
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "registry",
            GROUP_TOKEN,
            registry("g4app", &address)
        )
        .await
        .0,
        200
    );
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "registry",
            ACCESS_TOKEN,
            registry("plain", "http://127.0.0.1:1")
        )
        .await
        .0,
        200
    );
    api.wait_executors("g4app", 1).await;

    // Calls to the group's executors carry its token.
    let job = api.ok("/v1/jobs", json!({"group": "g4app", "handler": "h"})).await["id"]
        .as_i64()
        .unwrap();
    let run = api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    let r = wait_run(&api, run, "the trigger result", |r| r["trigger_code"] != 0).await;
    assert_eq!(r["trigger_code"], 200, "{r:#}");
    assert_eq!(
        seen.lock().unwrap().triggers,
        [(GROUP_TOKEN.to_owned(), "g4app".to_owned(), run)]
    );

    // Results for the group's runs need its token; the admin's is not enough.
    let at = r["triggered_at"].as_i64().unwrap();
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "callback",
            ACCESS_TOKEN,
            callback(run, at)
        )
        .await,
        wrong
    );
    assert_eq!(wait_run(&api, run, "", |_| true).await["status"], "running");
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "callback",
            GROUP_TOKEN,
            callback(run, at)
        )
        .await
        .0,
        200
    );
    assert_eq!(wait_run(&api, run, "", |_| true).await["status"], "success");

    // ... and that token cannot report on another group's runs.
    let plain_job = api.ok("/v1/jobs", json!({"group": "plain", "handler": "h"})).await["id"]
        .as_i64()
        .unwrap();
    let plain_run = api.ok(&format!("/v1/jobs/{plain_job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    wait_run(&api, plain_run, "the plain run's trigger result", |r| {
        r["trigger_code"] != 0
    })
    .await;
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "callback",
            GROUP_TOKEN,
            callback(plain_run, at)
        )
        .await,
        wrong
    );

    // Without its own token the group falls back to the admin's.
    *token.lock().unwrap() = ACCESS_TOKEN.to_owned();
    let (s, g) = api
        .call(
            reqwest::Method::PUT,
            "/v1/groups/g4app",
            Some(json!({"access_token": ""})),
        )
        .await;
    assert_eq!((s, &g["access_token_set"]), (200, &json!(false)), "{g}");
    assert_eq!(
        common::executor_api(
            &reqwest::Client::new(),
            &base,
            "registry",
            ACCESS_TOKEN,
            registry("g4app", &address)
        )
        .await
        .0,
        200
    );
    let run = api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap();
    let r = wait_run(&api, run, "the trigger result", |r| r["trigger_code"] != 0).await;
    assert_eq!(r["trigger_code"], 200, "{r:#}");
    assert_eq!(seen.lock().unwrap().triggers.last().unwrap().0, ACCESS_TOKEN);

    stop.cancel();
    handle.shutdown().await;
    db.drop_db().await;
}
