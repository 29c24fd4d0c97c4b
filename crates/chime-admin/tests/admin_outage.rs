//! The admin's own outage fails no run. Real `chime admin` processes and real executors — Chime's
//! (`chime executor --demo-handlers`) and pyxxl 0.4.8 — with runs in progress while the admin:
//!
//! - is down (SIGKILL) for longer than twice the dead timeout, and started again;
//! - is frozen (SIGSTOP) as long, and let go on (SIGCONT);
//! - has its wall clock stepped five minutes forward (libfaketime, `FAKETIME_TIMESTAMP_FILE`
//!   rewritten while it runs; its monotonic clock is left alone).
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

use common::demo_executor::DemoExecutor;
use common::process::{free_port, OwnedProcess};
use common::pyxxl_executor::PyExecutor;
use common::{Api, Db, TestDb, ACCESS_TOKEN, API_TOKEN};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// libfaketime as Debian installs it.
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// What happens to the admin while runs are in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outage {
    /// SIGKILL, then started again after the outage.
    Down,
    /// SIGSTOP, then SIGCONT after the outage.
    Frozen,
    /// Its wall clock stepped five minutes forward.
    WallStepped,
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

/// One `chime admin` process on a test database, at a fixed port (kept across restarts: the
/// executors know it), optionally under libfaketime.
struct AdminProcess {
    process: Option<OwnedProcess>,
    port: u16,
    db_url: String,
    dead_timeout: Duration,
    dir: PathBuf,
    /// The file libfaketime reads the clock's offset from, when the admin runs under it.
    faketime: Option<PathBuf>,
}

impl AdminProcess {
    fn start(db_url: &str, dead_timeout: Duration, dir: &Path, faketime: bool) -> AdminProcess {
        let faketime = faketime.then(|| {
            assert!(
                Path::new(LIBFAKETIME).exists(),
                "libfaketime is not installed at {LIBFAKETIME} (apt-get install faketime)"
            );
            let file = dir.join("faketime");
            std::fs::write(&file, "+0\n").unwrap();
            file
        });
        let mut admin = AdminProcess {
            process: None,
            port: free_port(),
            db_url: db_url.to_owned(),
            dead_timeout,
            dir: dir.to_path_buf(),
            faketime,
        };
        admin.spawn();
        admin
    }

    /// Starts the process (again).
    fn spawn(&mut self) {
        let mut command = Command::new(common::chime_binary());
        command
            .args([
                "admin",
                "--db",
                &self.db_url,
                "--listen",
                &format!("127.0.0.1:{}", self.port),
            ])
            .args([
                "--context-path",
                "/xxl-job-admin",
                "--node-id",
                "outage",
                "--default-tz",
                "UTC",
            ])
            .args(["--tick", "200ms", "--lookahead", "2s", "--registry-refresh", "500ms"])
            // Swept often: a run taken for lost would be taken at once.
            .args(["--lost-sweep", "100ms", "--executor-timeout", "2s"])
            .arg("--dead-timeout")
            .arg(format!("{}s", self.dead_timeout.as_secs()))
            .env("CHIME_API_TOKEN", API_TOKEN)
            .env("CHIME_ACCESS_TOKEN", ACCESS_TOKEN)
            .env("CHIME_ADMIN_PASSWORD", "outage-test")
            .env("RUST_LOG", "info,sqlx=warn");
        if let Some(file) = &self.faketime {
            // The wall clock (CLOCK_REALTIME) follows the offset in `file`, read at every call;
            // the monotonic clock stays the machine's.
            command
                .env("LD_PRELOAD", LIBFAKETIME)
                .env("FAKETIME_TIMESTAMP_FILE", file)
                .env("FAKETIME_NO_CACHE", "1")
                .env("DONT_FAKE_MONOTONIC", "1");
        }
        let log = self.dir.join("admin.log");
        self.process = Some(OwnedProcess::spawn("chime admin", &mut command, Some(&log)));
    }

    fn api(&self) -> Api {
        Api::new(([127, 0, 0, 1], self.port).into())
    }

    /// Its executor API base, as executors are given it.
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}/xxl-job-admin", self.port)
    }

    fn signal(&self, signal: libc::c_int) {
        let pid = self.process.as_ref().expect("the admin runs").id();
        // SAFETY: kill(2) with the pid of a child this test started and has not reaped.
        let rc = unsafe { libc::kill(pid as libc::pid_t, signal) };
        assert_eq!(rc, 0, "signal {signal}: {}", std::io::Error::last_os_error());
    }

    /// Waits until the admin answers `/healthz`.
    async fn wait_ready(&self) {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        let url = format!("http://127.0.0.1:{}/healthz", self.port);
        common::eventually(60, "the admin to answer", || async {
            match http.get(&url).send().await {
                Ok(r) if r.status() == 200 => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }

    /// Puts the admin through `outage`, lasting `length` where it lasts.
    async fn disturb(&mut self, outage: Outage, length: Duration) {
        match outage {
            Outage::Down => {
                self.process.as_mut().expect("the admin runs").kill_9();
                tokio::time::sleep(length).await;
                self.spawn();
                self.wait_ready().await;
            }
            Outage::Frozen => {
                self.signal(libc::SIGSTOP);
                tokio::time::sleep(length).await;
                self.signal(libc::SIGCONT);
            }
            Outage::WallStepped => {
                let file = self.faketime.as_ref().expect("the admin runs under libfaketime");
                std::fs::write(file, "+300\n").unwrap();
            }
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
    let mut admin = AdminProcess::start(&db.url, timing.dead_timeout, dir.path(), outage == Outage::WallStepped);
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
    admin.disturb(outage, timing.outage).await;
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
