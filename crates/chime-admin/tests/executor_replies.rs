//! Executor replies are read only up to a limit, on every database: an executor that answers
//! `/run`, `/beat`, `/idleBeat`, `/kill` or `/log` with a huge body fails the call with a clear
//! message instead of growing the admin by the size of the body, and a long `msg` is stored cut,
//! as a run's result message is. The executors here are real HTTP servers on loopback that
//! stream their replies, so the test never holds the gigabytes it would take to hurt.

mod common;

use axum::body::Body;
use bytes::Bytes;
use common::{Db, Env};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Bytes a streamed reply would have had, had it been read to the end.
const STREAMED: u64 = 50 * 1024 * 1024;
/// Bytes of the `msg` in a reply that is valid JSON but far too large.
const BIG_MSG: usize = 30 * 1024 * 1024;
/// Characters of the `msg` in a reply under the limit but longer than a run keeps.
const LONG_MSG: usize = 500_000;
/// Characters of a trigger message the admin keeps (XXL-JOB's limit for messages).
const KEPT_CHARS: usize = 15_000;

/// What a fake executor did (bytes of streamed replies it produced), and its ready-made replies.
struct Fake {
    streamed: AtomicU64,
    /// Answer `/beat` and `/idleBeat` with a streamed body too.
    huge_probes: bool,
    /// Built before serving, so that answering takes no time the admin would count.
    big_msg: Bytes,
    long_msg: Bytes,
}

/// A reply body that starts like an envelope and goes on for `total` bytes, produced in 64 KiB
/// chunks only as fast as the admin reads them.
fn streamed(fake: Arc<Fake>, total: u64) -> Body {
    let head = Bytes::from_static(br#"{"code":200,"msg":""#);
    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
    let stream = futures::stream::unfold((0u64, true), move |(sent, first)| {
        let (fake, head, chunk) = (fake.clone(), head.clone(), chunk.clone());
        async move {
            if sent >= total {
                return None;
            }
            let piece = if first { head } else { chunk };
            fake.streamed.fetch_add(piece.len() as u64, Ordering::Relaxed);
            Some((
                Ok::<_, std::io::Error>(piece.clone()),
                (sent + piece.len() as u64, false),
            ))
        }
    });
    Body::from_stream(stream)
}

/// An XXL-JOB G2 executor whose replies are chosen by the handler name of `/run`:
/// `stream` (a 50 MB body, chunked), `big_msg` (valid JSON with a 30 MB `msg`, with its
/// length declared), `long_msg` (a failure whose `msg` has 500,000 characters), anything else
/// succeeds. `/kill` and `/log` always stream 50 MB.
async fn fake_executor(huge_probes: bool) -> (String, Arc<Fake>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let fake = Arc::new(Fake {
        streamed: AtomicU64::new(0),
        huge_probes,
        big_msg: Bytes::from(format!(r#"{{"code":200,"msg":"{}"}}"#, "m".repeat(BIG_MSG))),
        long_msg: Bytes::from(format!(r#"{{"code":500,"msg":"{}"}}"#, "y".repeat(LONG_MSG))),
    });
    let app = axum::Router::new()
        .route(
            "/{path}",
            axum::routing::post(
                |axum::extract::State(fake): axum::extract::State<Arc<Fake>>,
                 axum::extract::Path(path): axum::extract::Path<String>,
                 body: Bytes| async move {
                    let param: Value = serde_json::from_slice(&body).unwrap_or_default();
                    match path.as_str() {
                        "beat" | "idleBeat" if fake.huge_probes => streamed(fake, STREAMED),
                        "beat" | "idleBeat" => Body::from(r#"{"code":200}"#),
                        "kill" | "log" => streamed(fake, STREAMED),
                        "run" => match param["executorHandler"].as_str().unwrap_or("") {
                            "stream" => streamed(fake, STREAMED),
                            "big_msg" => Body::from(fake.big_msg.clone()),
                            "long_msg" => Body::from(fake.long_msg.clone()),
                            _ => Body::from(r#"{"code":200}"#),
                        },
                        _ => Body::from(r#"{"code":500,"msg":"unknown path"}"#),
                    }
                },
            ),
        )
        .with_state(fake.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (address, fake)
}

/// Triggers a new job of `group` with `handler` and `route`; returns the run once its trigger
/// result is recorded.
async fn trigger(env: &Env, group: i64, handler: &str, route: &str) -> Value {
    let job = env
        .job(json!({"group_id": group, "handler": handler, "route_strategy": route, "schedule_type": "NONE"}))
        .await;
    let run = env.trigger(job, json!({})).await;
    common::eventually(30, &format!("the trigger result of the {handler} run"), || async move {
        let r = env.run(run).await;
        if r["trigger_code"] != 0 {
            Ok(r)
        } else {
            Err(r.to_string())
        }
    })
    .await
}

fn trigger_msg(run: &Value) -> &str {
    run["trigger_msg"].as_str().unwrap_or_default()
}

/// Checks that the run's trigger failed because the reply was over the 1 MiB limit.
fn refused_as_too_large(run: &Value, what: &str) {
    assert_eq!(run["trigger_code"], 500, "{what}: {run:#}");
    assert_eq!(common::status(run), "failed", "{what}: {run:#}");
    assert!(
        trigger_msg(run).contains("executor reply larger than 1 MiB"),
        "{what}: the trigger message says why: {run:#}"
    );
    assert!(trigger_msg(run).chars().count() <= KEPT_CHARS, "{what}: {run:#}");
}

async fn huge_replies_are_refused(kind: Db) {
    let env = Env::start(kind, Duration::from_secs(30)).await;
    let (good, good_fake) = fake_executor(false).await;
    let (probes, probes_fake) = fake_executor(true).await;
    let group = env
        .api
        .ok("/v1/groups", json!({"app_name": "big-replies", "addresses": [good]}))
        .await["id"]
        .as_i64()
        .unwrap();
    let probe_group = env
        .api
        .ok("/v1/groups", json!({"app_name": "big-probes", "addresses": [probes]}))
        .await["id"]
        .as_i64()
        .unwrap();

    // /run: a streamed body is read up to the limit and no further.
    let run = trigger(&env, group, "stream", "FIRST").await;
    refused_as_too_large(&run, "streamed /run reply");
    let produced = good_fake.streamed.load(Ordering::Relaxed);
    assert!(
        produced < STREAMED,
        "the admin stopped reading the streamed reply ({produced} of {STREAMED} bytes produced)"
    );

    // /run: valid JSON with a 30 MB message, its length declared.
    let run = trigger(&env, group, "big_msg", "FIRST").await;
    refused_as_too_large(&run, "/run reply with a 30 MB msg");

    // /run: a message under the limit but longer than a run keeps is stored cut.
    let run = trigger(&env, group, "long_msg", "FIRST").await;
    assert_eq!(run["trigger_code"], 500, "{run:#}");
    let msg = trigger_msg(&run);
    assert!(msg.contains(&"y".repeat(1000)), "the message is kept, cut: {run:#}");
    assert_eq!(
        msg.chars().count(),
        KEPT_CHARS,
        "the trigger message is cut to the length a result message is"
    );

    // /beat (FAILOVER probes it) and /idleBeat (BUSYOVER).
    let run = trigger(&env, probe_group, "ok", "FAILOVER").await;
    refused_as_too_large(&run, "FAILOVER with a huge /beat reply");
    let run = trigger(&env, probe_group, "ok", "BUSYOVER").await;
    refused_as_too_large(&run, "BUSYOVER with a huge /idleBeat reply");
    assert!(probes_fake.streamed.load(Ordering::Relaxed) < 2 * STREAMED);

    // /kill and /log of a running run: the REST call fails and says why.
    let running = trigger(&env, group, "ok", "FIRST").await;
    assert_eq!(running["trigger_code"], 200, "{running:#}");
    let id = running["id"].as_i64().unwrap();
    let (s, v) = env.api.post(&format!("/v1/runs/{id}/kill"), json!({})).await;
    assert_eq!(s, 502, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap_or("")
            .contains("executor reply larger than 1 MiB"),
        "{v}"
    );
    let (s, v) = env.api.get(&format!("/v1/runs/{id}/log?from_line=1")).await;
    assert_eq!(s, 502, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap_or("")
            .contains("executor reply larger than 16 MiB"),
        "{v}"
    );

    // The admin is up and still sends runs to the same executor.
    let (s, health) = env.api.get("/healthz").await;
    assert_eq!(s, 200, "{health}");
    let run = trigger(&env, group, "ok", "FIRST").await;
    assert_eq!(run["trigger_code"], 200, "{run:#}");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_replies_are_refused_sqlite() {
    huge_replies_are_refused(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_replies_are_refused_mysql() {
    huge_replies_are_refused(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_replies_are_refused_postgres() {
    huge_replies_are_refused(Db::Postgres).await;
}
