//! The admin's own outage fails no run. Real `chime admin` processes and real executors — Chime's
//! (`chime executor --demo-handlers`) and pyxxl 0.4.8 — with runs in progress while the admin:
//!
//! - is down (SIGKILL) for longer than twice the dead timeout, and started again;
//! - is frozen (SIGSTOP) as long, and let go on (SIGCONT);
//! - has its wall clock stepped five minutes forward (libfaketime, `FAKETIME_TIMESTAMP_FILE`
//!   rewritten while it runs; its monotonic clock is left alone);
//! - loses its database (PostgreSQL, MariaDB, reached through a forwarder the test closes) for
//!   as long, and gets it back.
//!
//! An admin that judged executors by the wall clock took every executor for dead the moment it
//! was back (it had heard no heartbeat for longer than the dead timeout, because it could not),
//! failed their runs as "Job result lost", retried them, and then dropped the executors'
//! results as late. Here every run must end in success with its own result, no retry may be
//! made, and in the wall-clock case the executor must stay listed all along.
//!
//! The dead timeout and the Chime executor's heartbeat are shortened (`--dead-timeout`,
//! `--beat-interval`) so that the outages last seconds, not minutes, while still being longer
//! than twice the dead timeout — the property tested is the same. pyxxl beats every 10 s (not
//! configurable), so its dead timeout is longer. pyxxl sends a result once and drops it if no
//! admin takes it, so its runs here end after the admin is back; Chime's executor keeps results
//! on disk until an admin accepts them, so some of its runs end during the outage.
//!
//! Needs `python3 -m pip install pyxxl==0.4.8` and libfaketime (Debian's `faketime`).

mod common;

use common::admin_process::AdminProcess;
use common::cluster::Forwarder;
use common::demo_executor::DemoExecutor;
use common::pyxxl_executor::PyExecutor;
use common::{Api, Db, TestDb};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

/// What happens to the admin while runs are in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outage {
    /// SIGKILL, then started again after the outage.
    Down,
    /// SIGSTOP, then SIGCONT after the outage.
    Frozen,
    /// Its wall clock stepped five minutes forward.
    WallStepped,
    /// Its database out of reach (every connection through a forwarder the test closes), then
    /// back.
    DatabaseAway,
}

/// Which executor runs the jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Chime,
    Pyxxl,
}

/// The timings of one scenario.
struct Timing {
    /// The admin's `--dead-timeout`.
    dead_timeout: Duration,
    /// How long the admin is away (down or frozen): more than twice the dead timeout.
    outage: Duration,
}

impl Timing {
    fn of(kind: Kind, outage: Outage) -> Timing {
        match (kind, outage) {
            // The Chime executor beats every 3 s here (`--beat-interval`).
            (Kind::Chime, _) => Timing {
                dead_timeout: Duration::from_secs(9),
                outage: Duration::from_secs(20),
            },
            // pyxxl beats every 10 s; a heartbeat held up by a frozen admin fails after pyxxl's
            // 10 s HTTP timeout and is tried again 10 s later: 25 s cover that.
            (Kind::Pyxxl, Outage::Frozen) => Timing {
                dead_timeout: Duration::from_secs(25),
                outage: Duration::from_secs(52),
            },
            // Refused connections: pyxxl tries again every 5 s, and 10 s after five tries.
            (Kind::Pyxxl, _) => Timing {
                dead_timeout: Duration::from_secs(15),
                outage: Duration::from_secs(32),
            },
        }
    }
}

/// Starts the admin of a scenario: swept often (a run taken for lost would be taken at once).
fn start_admin(db_url: &str, timing: &Timing, dir: &Path, faketime: bool) -> AdminProcess {
    let dead_timeout = format!("{}s", timing.dead_timeout.as_secs());
    let args = [
        "--tick",
        "200ms",
        "--lookahead",
        "2s",
        "--registry-refresh",
        "500ms",
        "--lost-sweep",
        "100ms",
        "--executor-timeout",
        "2s",
        "--dead-timeout",
        &dead_timeout,
    ];
    AdminProcess::start(db_url, "outage", &args, dir, faketime)
}

/// The admin's way to its database: a TCP forwarder in the test, replaced while the database is
/// away by a listener at the same address that closes every connection at once — a server gone
/// that a connection attempt learns of at once, rather than one the pool would wait 30 s for.
struct DatabaseLink {
    target: String,
    at: SocketAddr,
    forwarder: Option<Forwarder>,
    closer: Option<tokio::task::JoinHandle<()>>,
}

impl DatabaseLink {
    /// A link to the server of `db` (MariaDB or PostgreSQL); returns it and the URL through it.
    async fn to(db: &TestDb) -> (DatabaseLink, String) {
        let mut url = reqwest::Url::parse(&db.url).expect("database URL");
        let default_port = if db.kind == Db::Postgres { 5432 } else { 3306 };
        let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(default_port));
        let forwarder = Forwarder::start(SocketAddr::from(([127, 0, 0, 1], 0)), target.clone()).await;
        let at = forwarder.addr;
        url.set_port(Some(at.port())).unwrap();
        let link = DatabaseLink {
            target,
            at,
            forwarder: Some(forwarder),
            closer: None,
        };
        (link, url.to_string())
    }

    /// Closes every connection, and closes new ones as they come.
    async fn cut(&mut self) {
        self.forwarder = None;
        // The forwarder's task lets go of the address once it has seen its abort.
        let listener = common::eventually(10, "the forwarder's address free", || async {
            tokio::net::TcpListener::bind(self.at).await.map_err(|e| e.to_string())
        })
        .await;
        self.closer = Some(tokio::spawn(async move {
            while let Ok((connection, _)) = listener.accept().await {
                drop(connection);
            }
        }));
    }

    async fn restore(&mut self) {
        if let Some(closer) = self.closer.take() {
            closer.abort();
            let _ = closer.await;
        }
        self.forwarder = Some(Forwarder::start(self.at, self.target.clone()).await);
    }
}

/// Puts `admin` through `outage`, lasting `length` where it lasts.
async fn disturb(admin: &mut AdminProcess, link: Option<&mut DatabaseLink>, outage: Outage, length: Duration) {
    match outage {
        Outage::Down => {
            admin.kill_9();
            tokio::time::sleep(length).await;
            admin.spawn();
            admin.wait_ready().await;
        }
        Outage::Frozen => {
            admin.signal(libc::SIGSTOP);
            tokio::time::sleep(length).await;
            admin.signal(libc::SIGCONT);
        }
        Outage::WallStepped => admin.step_wall_clock("+300"),
        Outage::DatabaseAway => {
            let link = link.expect("the admin reaches its database through a link");
            link.cut().await;
            tokio::time::sleep(length).await;
            link.restore().await;
        }
    }
}

/// A job of `handler` with one retry in `app`, triggered once with `param`: `(job, run)`.
async fn triggered(api: &Api, app: &str, handler: &str, param: &str) -> (i64, i64) {
    let job = api
        .ok("/v1/jobs", json!({"group": app, "handler": handler, "retry_count": 1}))
        .await["id"]
        .as_i64()
        .unwrap();
    let run = api
        .ok(&format!("/v1/jobs/{job}/trigger"), json!({"param": param}))
        .await["run_id"]
        .as_i64()
        .unwrap();
    (job, run)
}

async fn run(api: &Api, id: i64) -> Value {
    let (s, v) = api.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(s, 200, "{v}");
    v
}

/// Whether the executor at `address` is listed in `app` now.
async fn listed(api: &Api, app: &str, address: &str) -> bool {
    let (_, v) = api.get(&format!("/v1/executors?group={app}")).await;
    v[0]["executors"]
        .as_array()
        .is_some_and(|list| list.iter().any(|e| e["address"] == address))
}

/// Runs of `kind`'s executor across `outage` of the admin, on `db`: every run succeeds with its
/// own result, once, and nothing is retried.
async fn runs_survive(db: Db, kind: Kind, outage: Outage) {
    let timing = Timing::of(kind, outage);
    let db = TestDb::new(db).await;
    let dir = tempfile::tempdir().unwrap();
    let (mut link, url) = match outage {
        Outage::DatabaseAway => {
            let (link, url) = DatabaseLink::to(&db).await;
            (Some(link), url)
        }
        _ => (None, db.url.clone()),
    };
    let mut admin = start_admin(&url, &timing, dir.path(), outage == Outage::WallStepped);
    admin.wait_ready().await;
    let api = admin.api();
    let app = "outage";
    api.ok("/v1/groups", json!({"app_name": app})).await;
    let (address, _executor): (String, Box<dyn std::any::Any>) = match kind {
        Kind::Chime => {
            let ex = DemoExecutor::start_with(&admin.base(), app, &["--beat-interval", "3s"]);
            (ex.address.clone(), Box::new(ex))
        }
        Kind::Pyxxl => {
            let ex = PyExecutor::start(&admin.base(), app);
            (ex.address.clone(), Box::new(ex))
        }
    };
    api.wait_executors(app, 1).await;

    // Runs that end during the outage (Chime's executor keeps their results until an admin
    // takes them) and runs that end after it, with a margin for a slow start of the admin.
    let outage_secs = timing.outage.as_secs_f64();
    let mut runs = Vec::new();
    match kind {
        Kind::Chime => {
            for param in ["4", "6"] {
                runs.push(triggered(&api, app, "sleepJobHandler", param).await);
            }
            for extra in [8.0, 10.0] {
                let param = format!("{}", outage_secs + extra);
                runs.push(triggered(&api, app, "sleepJobHandler", &param).await);
            }
        }
        Kind::Pyxxl => {
            for extra in [8.0, 10.0] {
                let param = format!("{}", outage_secs + extra);
                runs.push(triggered(&api, app, "slowJob", &param).await);
            }
        }
    }
    for (_, id) in &runs {
        common::eventually(30, "the run accepted", || async {
            let r = run(&api, *id).await;
            (r["trigger_code"] == 200).then_some(()).ok_or(format!("{r:#}"))
        })
        .await;
    }

    let started = Instant::now();
    disturb(&mut admin, link.as_mut(), outage, timing.outage).await;
    if outage == Outage::WallStepped {
        // The executor stays listed while the runs go on: nothing took it for dead.
        while started.elapsed() < timing.outage {
            assert!(
                listed(&api, app, &address).await,
                "{kind:?}: the executor dropped out of its group after the wall clock stepped"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    eprintln!(
        "{kind:?} {outage:?}: the admin was away {} ms",
        started.elapsed().as_millis()
    );

    for (job, id) in &runs {
        let r = common::eventually(120, "the run to end", || async {
            let r = run(&api, *id).await;
            if matches!(r["status"].as_str(), Some("pending" | "running")) {
                Err(format!("{r:#}"))
            } else {
                Ok(r)
            }
        })
        .await;
        let msg = r["handle_msg"].as_str().unwrap_or_default();
        assert_eq!(
            r["status"], "success",
            "{kind:?} {outage:?}: run {id} failed although its executor ran it: {r:#}"
        );
        assert!(msg.contains("slept"), "its own result: {r:#}");
        let all = api.runs(*job).await;
        assert_eq!(all.len(), 1, "{kind:?} {outage:?}: nothing retried: {all:#?}");
    }
    drop(admin);
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_the_admin_down_sqlite() {
    runs_survive(Db::Sqlite, Kind::Chime, Outage::Down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_the_admin_down_mariadb() {
    runs_survive(Db::MySql, Kind::Chime, Outage::Down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_the_admin_down_postgres() {
    runs_survive(Db::Postgres, Kind::Chime, Outage::Down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_the_admin_frozen_sqlite() {
    runs_survive(Db::Sqlite, Kind::Chime, Outage::Frozen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_the_admin_frozen_postgres() {
    runs_survive(Db::Postgres, Kind::Chime, Outage::Frozen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_a_wall_clock_step_sqlite() {
    runs_survive(Db::Sqlite, Kind::Chime, Outage::WallStepped).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_a_wall_clock_step_postgres() {
    runs_survive(Db::Postgres, Kind::Chime, Outage::WallStepped).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_runs_survive_the_admin_down() {
    runs_survive(Db::Sqlite, Kind::Pyxxl, Outage::Down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_runs_survive_the_admin_frozen() {
    runs_survive(Db::Postgres, Kind::Pyxxl, Outage::Frozen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pyxxl_runs_survive_a_wall_clock_step() {
    runs_survive(Db::MySql, Kind::Pyxxl, Outage::WallStepped).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_the_database_away_postgres() {
    runs_survive(Db::Postgres, Kind::Chime, Outage::DatabaseAway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chime_executor_runs_survive_the_database_away_mariadb() {
    runs_survive(Db::MySql, Kind::Chime, Outage::DatabaseAway).await;
}
