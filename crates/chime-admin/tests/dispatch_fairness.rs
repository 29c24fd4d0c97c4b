//! A slow executor must not hold up runs to other executors: runs queued for it wait for its
//! own permits, not the global ones. Real HTTP executors: one whose `/run` does not answer
//! until the test lets it, one that answers at once.

mod common;

use common::{Api, Db, TestDb};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// A G2 executor that counts `/run` calls and answers them only once `open` is true.
struct GatedExecutor {
    address: String,
    runs: Arc<AtomicUsize>,
    open: watch::Sender<bool>,
    stop: tokio_util::sync::CancellationToken,
}

impl GatedExecutor {
    async fn start(open: bool) -> GatedExecutor {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let runs = Arc::new(AtomicUsize::new(0));
        let (open_tx, open_rx) = watch::channel(open);
        let stop = tokio_util::sync::CancellationToken::new();
        let state = (runs.clone(), open_rx);
        let app = axum::Router::new()
            .route(
                "/{path}",
                axum::routing::post(
                    |axum::extract::State((runs, mut open)): axum::extract::State<(
                        Arc<AtomicUsize>,
                        watch::Receiver<bool>,
                    )>,
                     axum::extract::Path(path): axum::extract::Path<String>| async move {
                        if path == "run" {
                            runs.fetch_add(1, Ordering::SeqCst);
                            let _ = open.wait_for(|o| *o).await;
                        }
                        r#"{"code":200}"#
                    },
                ),
            )
            .with_state(state);
        let s = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { s.cancelled().await })
                .await;
        });
        GatedExecutor {
            address,
            runs,
            open: open_tx,
            stop,
        }
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

impl Drop for GatedExecutor {
    fn drop(&mut self) {
        let _ = self.open.send(true);
        self.stop.cancel();
    }
}

async fn wait_for<T>(what: &str, secs: u64, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn manual_group(api: &Api, app: &str, addresses: &[&str]) {
    api.ok("/v1/groups", json!({"app_name": app, "addresses": addresses}))
        .await;
}

async fn job(api: &Api, group: &str, route: &str) -> i64 {
    api.ok(
        "/v1/jobs",
        json!({"group": group, "handler": "h", "route_strategy": route}),
    )
    .await["id"]
        .as_i64()
        .unwrap()
}

async fn trigger(api: &Api, job: i64) -> i64 {
    api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await["run_id"]
        .as_i64()
        .unwrap()
}

async fn run(api: &Api, id: i64) -> Value {
    let (s, v) = api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200, "{v}");
    v
}

#[tokio::test]
async fn a_backlog_for_a_slow_executor_does_not_hold_up_other_executors() {
    let db = TestDb::new(Db::Sqlite).await;
    let mut config = common::config(&db.url);
    config.dispatch_concurrency = 4;
    config.per_executor_concurrency = 1;
    // Longer than the test: the slow executor's calls end only when the test opens it.
    config.executor_timeout = Duration::from_secs(120);
    let handle = chime_admin::start(config).await.expect("admin starts");
    let api = Api::new(handle.local_addr);
    let slow = GatedExecutor::start(false).await;
    let fast = GatedExecutor::start(true).await;
    manual_group(&api, "slow", &[&slow.address]).await;
    manual_group(&api, "fast", &[&fast.address]).await;
    let slow_job = job(&api, "slow", "FIRST").await;
    let fast_job = job(&api, "fast", "FIRST").await;
    let failover_job = job(&api, "fast", "FAILOVER").await;

    // Twice as many runs as there are global permits, all for the slow executor.
    let mut backlog = Vec::new();
    for _ in 0..8 {
        backlog.push(trigger(&api, slow_job).await);
    }
    wait_for("the slow executor's first run", 20, async || {
        (slow.runs() == 1).then_some(())
    })
    .await;

    let fast_runs = [trigger(&api, fast_job).await, trigger(&api, failover_job).await];
    for id in fast_runs {
        let r = wait_for("the fast executor's run to be sent and recorded", 30, async || {
            let r = run(&api, id).await;
            (r["trigger_code"] != 0).then_some(r)
        })
        .await;
        assert_eq!(r["trigger_code"], 200, "{r:#}");
        assert_eq!(r["executor_address"], fast.address.as_str());
    }
    assert_eq!(
        slow.runs(),
        1,
        "the slow executor is still busy with its first run: one call at a time reaches it"
    );
    for id in &backlog {
        assert_eq!(run(&api, *id).await["trigger_code"], 0, "the backlog is still waiting");
    }

    // Once the slow executor answers, its backlog goes out, one run at a time, none lost.
    slow.open.send(true).unwrap();
    for id in backlog {
        let r = wait_for("the slow executor's backlog", 60, async || {
            let r = run(&api, id).await;
            (r["trigger_code"] != 0).then_some(r)
        })
        .await;
        assert_eq!(r["trigger_code"], 200, "{r:#}");
    }
    assert_eq!(slow.runs(), 8);
    assert_eq!(fast.runs(), 2);
    drop((slow, fast));
    handle.shutdown().await;
    db.drop_db().await;
}
