//! The database restarts under load: three real `chime admin` processes share PostgreSQL (or
//! MariaDB) and fire 100 jobs every second when the database server is restarted — at once, or
//! kept stopped for 8 s, longer than the lease time and the misfire threshold. Every admin
//! must survive it (its process still running) and resume on its own: all 16 partitions held
//! again and every admin sending runs. At the executor, every second of every job is received
//! exactly once — or, when the outage was longer than the 5 s misfire threshold, exactly as the
//! jobs' misfire policy (`DO_NOTHING`) says: seconds of the outage may be skipped (recorded,
//! never sent), and none is received twice.
//!
//! This stops the server every other test uses, so it never runs beside them: nextest's default
//! filter leaves it out (`.config/nextest.toml`), and `scripts/test` runs it alone, after the
//! rest, with `--ignore-default-filter`. It needs root (it runs `pg_ctlcluster` and
//! `start-stop-daemon`) and a local server on 127.0.0.1 — the one `scripts/test` starts.

mod common;

use common::cluster::{now_ms, shared_by_all, Check, Cluster, MISFIRE_THRESHOLD_MS};
use common::Db;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Longest wait for the server to stop or to answer again.
const WAIT: Duration = Duration::from_secs(60);
/// The MariaDB server binary, as `scripts/test` starts it.
const MARIADBD: &str = "/usr/sbin/mariadbd";

/// The local database server of `kind`, controlled as an operator would. Started again when
/// dropped if it does not answer then, so a failing test leaves it running for the tests after.
struct Server {
    kind: Db,
    /// The commands' output goes here (never a pipe: the server they start would inherit it).
    log: PathBuf,
}

impl Server {
    /// Restarts the server, keeping it stopped for `down` first (zero: starts it again at once),
    /// and returns once it answers again.
    async fn restart(&self, down: Duration) {
        match self.kind {
            // `restart` returns once the new server is started; fast shutdown (the default) ends
            // the admins' sessions at once.
            Db::Postgres if down.is_zero() => self.pg_ctlcluster("restart").await,
            Db::Postgres => {
                self.pg_ctlcluster("stop").await;
                tokio::time::sleep(down).await;
                self.pg_ctlcluster("start").await;
            }
            Db::MySql => {
                self.run("mariadb-admin", &["-h", "127.0.0.1", "-u", "root", "shutdown"])
                    .await;
                // Started while the old one still runs, start-stop-daemon would do nothing.
                let deadline = Instant::now() + WAIT;
                while mariadbd_running().await {
                    assert!(Instant::now() < deadline, "MariaDB still running 60 s after shutdown");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                tokio::time::sleep(down).await;
                self.run(
                    "start-stop-daemon",
                    &["--start", "--oknodo", "--background", "--exec", MARIADBD],
                )
                .await;
            }
            Db::Sqlite => unreachable!("SQLite has no server"),
        }
        let deadline = Instant::now() + WAIT;
        while !answers(self.kind).await {
            assert!(
                Instant::now() < deadline,
                "the {:?} server did not answer within 60 s",
                self.kind
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `pg_ctlcluster VERSION main ACTION`, as root and without systemd.
    async fn pg_ctlcluster(&self, action: &str) {
        let version = pg_version();
        self.run(
            "pg_ctlcluster",
            &["--skip-systemctl-redirect", &version, "main", action],
        )
        .await;
    }

    /// Runs `program args`, which must succeed within 60 s.
    async fn run(&self, program: &str, args: &[&str]) {
        let out = log_file(&self.log);
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let status = tokio::time::timeout(WAIT, command.status())
            .await
            .unwrap_or_else(|_| panic!("{program} {args:?} did not finish within 60 s"))
            .unwrap_or_else(|e| panic!("{program} does not run: {e}"));
        assert!(
            status.success(),
            "{program} {args:?}: {status}; output:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let answers = |kind| match kind {
            Db::Postgres => command_ok("pg_isready", &["-q", "-h", "127.0.0.1", "-p", "5432"]),
            _ => command_ok("mariadb-admin", &["ping", "-h", "127.0.0.1", "-u", "root", "--silent"]),
        };
        if answers(self.kind) {
            return;
        }
        eprintln!("the {:?} server does not answer; starting it again", self.kind);
        let start: (&str, Vec<String>) = match self.kind {
            Db::Postgres => (
                "pg_ctlcluster",
                ["--skip-systemctl-redirect", &pg_version(), "main", "start"]
                    .map(str::to_owned)
                    .to_vec(),
            ),
            _ => (
                "start-stop-daemon",
                ["--start", "--oknodo", "--background", "--exec", MARIADBD]
                    .map(str::to_owned)
                    .to_vec(),
            ),
        };
        let out = log_file(&self.log);
        let _ = std::process::Command::new(start.0)
            .args(&start.1)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .status();
        let deadline = Instant::now() + WAIT;
        while !answers(self.kind) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The PostgreSQL version whose cluster `main` runs: the one directory under /etc/postgresql.
fn pg_version() -> String {
    let mut versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
        .expect("/etc/postgresql (the PostgreSQL server's configuration)")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    versions.sort();
    versions
        .into_iter()
        .next()
        .expect("a PostgreSQL version under /etc/postgresql")
}

fn log_file(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
}

/// True if `program args` exits 0.
fn command_ok(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True if the server of `kind` accepts connections on 127.0.0.1.
async fn answers(kind: Db) -> bool {
    let (program, args): (&str, &[&str]) = match kind {
        Db::Postgres => ("pg_isready", &["-q", "-h", "127.0.0.1", "-p", "5432"]),
        _ => ("mariadb-admin", &["ping", "-h", "127.0.0.1", "-u", "root", "--silent"]),
    };
    quietly(program, args).await
}

/// True while a MariaDB server process runs (exit status 0 of `start-stop-daemon --status`).
async fn mariadbd_running() -> bool {
    quietly("start-stop-daemon", &["--status", "--exec", MARIADBD]).await
}

/// True if `program args` exits 0 within 10 s.
async fn quietly(program: &str, args: &[&str]) -> bool {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    matches!(
        tokio::time::timeout(Duration::from_secs(10), command.status()).await,
        Ok(Ok(status)) if status.success()
    )
}

/// Restarts the database server under load, keeping it stopped for `down`.
async fn a_database_restart_under_load(kind: Db, down: Duration, scenario: &'static str) {
    let mut cluster = Cluster::start(kind).await;
    let server = Server {
        kind,
        log: cluster.log_path("database-restart.log"),
    };
    // A few seconds of steady load, so the restart meets claimed runs, sends and results.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let down_at = now_ms();
    server.restart(down).await;
    let up_at = now_ms();
    let outage = up_at - down_at;
    eprintln!("{kind:?}: the database did not answer for at most {outage} ms (restart issued to answering again)");
    for admin in &mut cluster.admins {
        admin.assert_running();
    }
    cluster
        .wait_shares(&[0, 1, 2], "the admins to hold every partition again", shared_by_all)
        .await;
    let back_at = now_ms();
    eprintln!(
        "{kind:?}: the three admins shared every partition again {} ms after the database answered",
        back_at - up_at
    );
    // `/healthz` counts the partitions an admin scheduled before the outage until its next
    // lease round: runs sent again are what shows it resumed.
    cluster
        .wait_every_admin_sends(&[0, 1, 2], back_at, "after the database restart")
        .await;
    let resumed_at = now_ms();
    eprintln!(
        "{kind:?}: every admin sent runs again {} ms after the database answered",
        resumed_at - up_at
    );
    for admin in &mut cluster.admins {
        admin.assert_running();
    }
    // Up to the misfire threshold, every fire is sent, however late; beyond it DO_NOTHING may
    // skip the seconds of the outage, up to when every admin sends again.
    let may_skip = (outage > MISFIRE_THRESHOLD_MS).then_some((down_at, resumed_at));
    let outcome = cluster
        .finish(Check {
            scenario,
            from: down_at,
            to: resumed_at,
            may_skip,
            silent: None,
        })
        .await;
    eprintln!(
        "{kind:?}: database outage {outage} ms, longest delay {} ms, {} seconds skipped",
        outcome.longest_delay, outcome.skipped
    );
}

/// How long the second scenario keeps the server stopped: longer than the misfire threshold, so
/// the admins' leases lapse and the seconds of the outage become misfires.
const LONG_OUTAGE: Duration = Duration::from_secs(8);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_restart_postgres() {
    a_database_restart_under_load(Db::Postgres, Duration::ZERO, "database restart").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_restart_mysql() {
    a_database_restart_under_load(Db::MySql, Duration::ZERO, "database restart").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_down_8s_postgres() {
    a_database_restart_under_load(Db::Postgres, LONG_OUTAGE, "database down 8 s").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn database_down_8s_mysql() {
    a_database_restart_under_load(Db::MySql, LONG_OUTAGE, "database down 8 s").await;
}
