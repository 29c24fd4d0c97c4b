//! The executor access token an admin always has, and the groups an operator lets work without
//! one.
//!
//! An admin started without `--access-token` makes a token at its first start, keeps it in its
//! database, hands it out once (and again through `chime admin show-token`), and requires it
//! from then on. Before, such an admin took any registration, any link, and passed any relayed
//! call to a linked executor — which put its own token on it: a `GLUE_SHELL` run reached a
//! script executor from anyone who could reach the admin. Links and relays are now never open
//! without a token to check, relays need the cluster's secret, and a group that must keep
//! working without tokens (legacy executors) says so explicitly.

mod common;

use common::linked::{wait_linked, LinkedExecutor};
use common::process::{free_port, OwnedProcess};
use common::{eventually, Api, Db, Env, TestDb, ACCESS_TOKEN, API_TOKEN};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A `chime admin` on `db_url` with no executor token configured (no `--access-token`, no
/// `CHIME_ACCESS_TOKEN`), its output appended to `log`; waits for `/healthz`.
async fn admin_without_token(db_url: &str, addr: SocketAddr, log: &Path, extra: &[&str]) -> OwnedProcess {
    let mut command = Command::new(common::chime_binary());
    command
        .args([
            "admin",
            "--db",
            db_url,
            "--listen",
            &addr.to_string(),
            "--default-tz",
            "UTC",
        ])
        .args(["--tick", "200ms", "--lookahead", "2s", "--registry-refresh", "500ms"])
        .args(extra);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CHIME_") {
            command.env_remove(key);
        }
    }
    command
        .env("CHIME_API_TOKEN", API_TOKEN)
        .env("CHIME_ADMIN_PASSWORD", "executor-token-test")
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info,sqlx=warn");
    let mut process = OwnedProcess::spawn("chime admin", &mut command, Some(log));
    let http = reqwest::Client::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = process.exited() {
            panic!("chime admin exited ({status}):\n{}", process.output_tail(4000));
        }
        if http
            .get(format!("http://{addr}/healthz"))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the admin did not answer /healthz in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    process
}

/// What `chime admin show-token --db DB` prints, and whether it succeeded.
fn show_token(db_url: &str) -> (bool, String) {
    let out = Command::new(common::chime_binary())
        .args(["admin", "show-token", "--db", db_url])
        .env_remove("CHIME_ACCESS_TOKEN")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
    )
}

/// The token the first start printed: the one line of 64 hex digits in its output.
fn printed_token(output: &str) -> Option<String> {
    output
        .lines()
        .map(str::trim)
        .find(|l| l.len() == 64 && l.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned)
}

/// A registration of `address` in `app` with `token`, as an executor sends it: the reply's code.
async fn register(base: &str, app: &str, address: &str, token: &str) -> i64 {
    let body = json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": address});
    common::executor_api(&reqwest::Client::new(), base, "registry", token, body)
        .await
        .0
}

/// A `GLUE_SHELL` trigger whose script creates `marker`: what an attacker sends.
fn shell_trigger(marker: &Path) -> Value {
    json!({
        "jobId": 9_999, "executorHandler": "", "executorParams": "", "executorBlockStrategy": "SERIAL_EXECUTION",
        "executorTimeout": 0, "logId": 424_242, "logDateTime": 1_700_000_000_000i64, "glueType": "GLUE_SHELL",
        "glueSource": format!("#!/bin/bash\ntouch {}\n", marker.display()), "glueUpdatetime": 1,
        "broadcastIndex": 0, "broadcastTotal": 1
    })
}

/// The whole story on one SQLite database, with real processes: the first start makes and
/// prints a token and `show-token` prints it again; executors without it are refused, a link
/// included; the relay that once ran a shell script for anyone is closed to callers without the
/// cluster secret, even ones holding the executor token; a restart keeps the token and prints
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_admin_without_a_token_makes_one_and_the_relay_runs_nothing_for_outsiders() {
    let dir = tempfile::tempdir().unwrap();
    let db_url = format!("sqlite://{}", dir.path().join("chime.db").display());
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let log = dir.path().join("admin.log");
    let mut admin = admin_without_token(&db_url, addr, &log, &[]).await;
    let base = format!("http://{addr}");
    let api = Api::new(addr);

    let output = std::fs::read_to_string(&log).unwrap();
    let token = printed_token(&output).unwrap_or_else(|| panic!("the first start prints the token:\n{output}"));
    assert!(output.contains("chime admin show-token"), "{output}");
    assert_eq!(
        show_token(&db_url),
        (true, token.clone()),
        "show-token prints the kept token"
    );
    assert_eq!(
        output.matches(&token).count(),
        1,
        "the token is printed once, never logged:\n{output}"
    );

    api.ok("/v1/groups", json!({"app_name": "scripts"})).await;
    api.ok("/v1/groups", json!({"app_name": "plain"})).await;
    assert_eq!(
        register(&base, "plain", "http://127.0.0.1:9", "").await,
        500,
        "no token: refused"
    );
    assert_eq!(register(&base, "plain", "http://127.0.0.1:9", "guess").await, 500);
    assert_eq!(register(&base, "plain", "http://127.0.0.1:9", &token).await, 200);

    // An executor with another token cannot link; one with the admin's can.
    let _stranger = LinkedExecutor::start_with_token(
        std::slice::from_ref(&base),
        "scripts",
        "stranger",
        None,
        "not-the-token",
    );
    eventually(30, "the stranger's link refused", || async {
        let refused = api
            .metric("chime_executor_requests_refused_total{endpoint=\"link\"}")
            .await
            .unwrap_or(0.0);
        if refused >= 1.0 {
            Ok(())
        } else {
            Err(format!("{refused} refusals"))
        }
    })
    .await;
    let executor = LinkedExecutor::start_with_token(std::slice::from_ref(&base), "scripts", "runner", None, &token);
    let listed = wait_linked(&api, "scripts", &["runner"]).await;
    assert_eq!(listed.len(), 1, "{listed:?}");

    // The relay: the executor token alone, or nothing, runs nothing.
    let marker = dir.path().join("pwned");
    let http = reqwest::Client::new();
    for presented in ["", token.as_str()] {
        let answer = http
            .post(format!("{base}/api/linkRelay"))
            .header("XXL-JOB-ACCESS-TOKEN", presented)
            .header("XXL-JOB-APPNAME", "scripts")
            .header("Chime-Link-Address", executor.address())
            .header("Chime-Link-Path", "/run")
            .json(&shell_trigger(&marker))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 401, "relay with token {presented:?}");
    }
    // Had the call gone down, the script would have run by the time a beat round-trips.
    let beat = http
        .post(format!("{base}/api/linkRelay"))
        .header("XXL-JOB-APPNAME", "scripts")
        .header("Chime-Link-Address", executor.address())
        .header("Chime-Link-Path", "/beat")
        .body("\"\"")
        .send()
        .await
        .unwrap();
    assert_eq!(beat.status(), 401);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !marker.exists(),
        "a relayed call from outside ran a script on the executor"
    );

    // A restart keeps the token, says nothing of it, and the executor links again with it.
    drop(admin);
    admin = admin_without_token(&db_url, addr, &log, &[]).await;
    eventually(60, "the executor linked again", || async {
        let (_, v) = api.get("/v1/executors?group=scripts").await;
        let linked = v[0]["executors"]
            .as_array()
            .is_some_and(|e| e.iter().any(|x| x["linked"] == true));
        if linked {
            Ok(())
        } else {
            Err(v.to_string())
        }
    })
    .await;
    let output = std::fs::read_to_string(&log).unwrap();
    assert_eq!(output.matches(&token).count(), 1, "printed at the first start only");
    assert_eq!(show_token(&db_url), (true, token.clone()));
    drop(executor);
    drop(admin);
}

/// A database that was run without a token, upgraded: the start that makes the token says
/// loudly that tokenless executors are refused from now on; such an executor is refused until
/// an operator marks its group with `chime group update --insecure-no-token`, after which every
/// start warns of that group.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upgraded_tokenless_installation_works_only_through_the_explicit_opt_out() {
    let dir = tempfile::tempdir().unwrap();
    let db_url = format!("sqlite://{}", dir.path().join("chime.db").display());
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let base = format!("http://{addr}");
    let api = Api::new(addr);
    // The installation as it was: groups made while the admin ran with a token given by flag,
    // and no token kept in the database.
    let log = dir.path().join("before.log");
    let before = admin_without_token(&db_url, addr, &log, &["--access-token", "given-by-flag"]).await;
    api.ok("/v1/groups", json!({"app_name": "legacy"})).await;
    assert!(!show_token(&db_url).0, "a token given by flag is not kept");
    drop(before);

    let log = dir.path().join("upgraded.log");
    let upgraded = admin_without_token(&db_url, addr, &log, &[]).await;
    // The token's banner and the warnings may reach the log a moment after the admin answers.
    let output = common::eventually(10, "the new token printed in the log", || async {
        let output = std::fs::read_to_string(&log).unwrap_or_default();
        match printed_token(&output) {
            Some(_) if output.contains("REFUSED") => Ok(output),
            _ => Err(output),
        }
    })
    .await;
    assert!(printed_token(&output).is_some(), "{output}");
    assert!(output.contains("REFUSED"), "the upgrade is said loudly:\n{output}");
    assert_eq!(register(&base, "legacy", "http://127.0.0.1:9", "").await, 500);

    let cli = Command::new(common::chime_binary())
        .args(["group", "update", "legacy", "--insecure-no-token"])
        .env("CHIME_ADMIN_URL", &base)
        .env("CHIME_API_TOKEN", API_TOKEN)
        .output()
        .unwrap();
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    assert!(String::from_utf8_lossy(&cli.stdout).contains("NONE (insecure)"));
    eventually(10, "the tokenless registration accepted", || async {
        match register(&base, "legacy", "http://127.0.0.1:9", "").await {
            200 => Ok(()),
            code => Err(code.to_string()),
        }
    })
    .await;
    drop(upgraded);

    let log = dir.path().join("after.log");
    let again = admin_without_token(&db_url, addr, &log, &[]).await;
    let output = std::fs::read_to_string(&log).unwrap();
    assert!(
        output.contains("WITHOUT an executor access token") && output.contains("legacy"),
        "every start warns of a tokenless group:\n{output}"
    );
    assert!(
        printed_token(&output).is_none(),
        "the token is not shown again:\n{output}"
    );
    drop(again);
}

/// Every admin of one database reads the same secrets, whoever made them; a start with no
/// token configured uses the kept one.
async fn secrets_are_made_once_and_shared(kind: Db) {
    let db = TestDb::new(kind).await;
    let (a, b) = (
        chime_admin::store::Store::connect(&db.url).await.unwrap(),
        chime_admin::store::Store::connect(&db.url).await.unwrap(),
    );
    let name = chime_admin::store::CLUSTER_SECRET;
    let (x, y) = tokio::join!(
        a.kept_secret(name, || "made-by-a".to_owned()),
        b.kept_secret(name, || "made-by-b".to_owned())
    );
    let (x, y) = (x.unwrap(), y.unwrap());
    assert_eq!(x.value, y.value, "both admins read one secret");
    assert!(x.created != y.created, "exactly one of them made it: {x:?} {y:?}");
    assert!(!a.kept_secret(name, || "later".into()).await.unwrap().created);
    a.close().await;
    b.close().await;

    let mut config = common::config(&db.url);
    config.access_token = None;
    let first = chime_admin::start(config.clone()).await.unwrap();
    let made = first.new_access_token.clone().expect("the first start makes a token");
    assert_eq!(first.admin.config.access_token.as_deref(), Some(made.as_str()));
    first.shutdown().await;
    let second = chime_admin::start(config).await.unwrap();
    assert_eq!(second.new_access_token, None, "made once");
    assert_eq!(second.admin.config.access_token.as_deref(), Some(made.as_str()));
    second.shutdown().await;
    db.drop_db().await;
}

#[tokio::test]
async fn secrets_are_made_once_and_shared_sqlite() {
    secrets_are_made_once_and_shared(Db::Sqlite).await;
}

#[tokio::test]
async fn secrets_are_made_once_and_shared_mysql() {
    secrets_are_made_once_and_shared(Db::MySql).await;
}

#[tokio::test]
async fn secrets_are_made_once_and_shared_postgres() {
    secrets_are_made_once_and_shared(Db::Postgres).await;
}

/// The token headers an executor received on `/run`, in order (`None`: no header).
type Received = Arc<Mutex<Vec<Option<String>>>>;

/// An executor at a free port that answers every call with success and records the token of
/// each `/run`.
async fn recording_executor() -> (String, Received) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let received = Received::default();
    let seen = received.clone();
    let app = axum::Router::new().route(
        "/{path}",
        axum::routing::post(
            move |axum::extract::Path(path): axum::extract::Path<String>, headers: axum::http::HeaderMap| {
                let seen = seen.clone();
                async move {
                    if path == "run" {
                        let token = headers
                            .get("XXL-JOB-ACCESS-TOKEN")
                            .map(|v| v.to_str().unwrap_or_default().to_owned());
                        seen.lock().unwrap().push(token);
                    }
                    r#"{"code":200,"msg":null}"#
                }
            },
        ),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (address, received)
}

/// A callback reporting success of `run`: its reply's code.
async fn report(prefix: &str, run: i64, token: &str) -> i64 {
    let body = json!([{"logId": run, "logDateTim": 1, "handleCode": 200, "handleMsg": "done"}]);
    common::executor_api(&reqwest::Client::new(), prefix, "callback", token, body)
        .await
        .0
}

/// A group marked `insecure_no_token` takes its executors' registrations and results without a
/// token and is sent none (the admin's token never reaches an address anyone could register);
/// every other group still needs the token for each of these; the mark is stored, shown and
/// exported, cannot go with a token of the group's own, and keeps the group off links.
async fn a_tokenless_group_is_the_only_open_one(kind: Db) {
    let e = Env::start(kind, Duration::from_secs(30)).await;
    let (status, refused) = e
        .api
        .post(
            "/v1/groups",
            json!({"app_name": "both", "access_token": "own", "insecure_no_token": true}),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    let (status, legacy) = e
        .api
        .post("/v1/groups", json!({"app_name": "legacy", "insecure_no_token": true}))
        .await;
    assert_eq!(status, 201, "{legacy}");
    assert_eq!(legacy["insecure_no_token"], true);
    e.group("modern").await;

    let (legacy_at, legacy_seen) = recording_executor().await;
    let (modern_at, modern_seen) = recording_executor().await;
    eventually(10, "the tokenless registration of the legacy group", || async {
        match register(&e.prefix, "legacy", &legacy_at, "").await {
            200 => Ok(()),
            code => Err(code.to_string()),
        }
    })
    .await;
    assert_eq!(register(&e.prefix, "modern", &modern_at, "").await, 500);
    assert_eq!(register(&e.prefix, "modern", &modern_at, ACCESS_TOKEN).await, 200);
    e.api.wait_executors("legacy", 1).await;
    e.api.wait_executors("modern", 1).await;

    let legacy_job = e.job(json!({"group": "legacy", "handler": "h"})).await;
    let modern_job = e.job(json!({"group": "modern", "handler": "h"})).await;
    let legacy_run = e.trigger(legacy_job, json!({})).await;
    let modern_run = e.trigger(modern_job, json!({})).await;
    e.wait_run(legacy_run, 20, "the legacy run sent", |r| r["trigger_code"] == 200)
        .await;
    e.wait_run(modern_run, 20, "the modern run sent", |r| r["trigger_code"] == 200)
        .await;
    assert_eq!(
        *legacy_seen.lock().unwrap(),
        vec![None],
        "no token to a tokenless group"
    );
    assert_eq!(*modern_seen.lock().unwrap(), vec![Some(ACCESS_TOKEN.to_owned())]);

    // Results: without a token for the legacy run only.
    assert_eq!(
        report(&e.prefix, modern_run, "").await,
        500,
        "a secure group's run needs the token"
    );
    assert_eq!(report(&e.prefix, legacy_run, "").await, 200);
    assert_eq!(report(&e.prefix, modern_run, ACCESS_TOKEN).await, 200);
    assert_eq!(e.run_with_status(legacy_run, "success").await["handle_code"], 200);
    assert_eq!(e.run_with_status(modern_run, "success").await["handle_code"], 200);

    // No link for a group nobody's token guards.
    let url = format!("{}/api/link", e.prefix.replacen("http://", "ws://", 1));
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("XXL-JOB-APPNAME", "legacy".parse().unwrap());
    request
        .headers_mut()
        .insert("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN.parse().unwrap());
    request
        .headers_mut()
        .insert("Chime-Executor-Id", "ex-1".parse().unwrap());
    match tokio_tungstenite::connect_async(request).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => assert_eq!(resp.status(), 403),
        other => panic!("a link for a tokenless group must be refused: {:?}", other.map(|_| ())),
    }

    // Shown in the export, and turned off again through the API.
    let (_, doc) = e.api.get("/v1/export").await;
    let exported = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["app_name"] == "legacy")
        .unwrap();
    assert_eq!(exported["insecure_no_token"], true, "{doc}");
    let (status, secured) = e
        .api
        .call(
            reqwest::Method::PUT,
            "/v1/groups/legacy",
            Some(json!({"insecure_no_token": false})),
        )
        .await;
    assert_eq!(
        (status, &secured["insecure_no_token"]),
        (200, &json!(false)),
        "{secured}"
    );
    eventually(10, "the legacy group closed", || async {
        match register(&e.prefix, "legacy", &legacy_at, "").await {
            500 => Ok(()),
            code => Err(code.to_string()),
        }
    })
    .await;
    e.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tokenless_group_is_the_only_open_one_sqlite() {
    a_tokenless_group_is_the_only_open_one(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tokenless_group_is_the_only_open_one_mysql() {
    a_tokenless_group_is_the_only_open_one(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tokenless_group_is_the_only_open_one_postgres() {
    a_tokenless_group_is_the_only_open_one(Db::Postgres).await;
}
