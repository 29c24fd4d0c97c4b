//! Shared pieces of the scheduling center's end-to-end tests: fresh databases on SQLite,
//! MariaDB and PostgreSQL, an in-process admin, a REST client, Chime's demo executor as a real
//! process, child processes that die with the test, a small in-test XXL-JOB G2 executor
//! for what a real one cannot be made to do on cue, several admin processes sharing one
//! database (`cluster`), executors in link mode, behind NAT too (`linked`), pyxxl
//! (`pyxxl_executor`), and one admin process started, stopped and frozen at will, under
//! libfaketime too (`admin_process`), and alarm receivers playing DingTalk, Feishu, WeCom,
//! Slack, Teams and Chime's signed webhook (`receivers`).

#![allow(dead_code)]

pub mod admin_process;
pub mod caller;
pub mod cluster;
pub mod demo_executor;
pub mod executor;
pub mod linked;
pub mod oidc_provider;
pub mod process;
pub mod pyxxl_executor;
pub mod receivers;
pub mod slapd;

use chime_admin::{AdminConfig, AdminHandle};
use serde_json::Value;
use std::time::{Duration, Instant};

pub const API_TOKEN: &str = "test-api-token";
pub const ACCESS_TOKEN: &str = "test-access-token";

/// Stores a group named `app_name` with one manual address that nothing listens on, for tests
/// of the store alone (no executor is ever called).
pub async fn insert_manual_group(store: &chime_admin::store::Store, app_name: &str) -> chime_admin::model::Group {
    let draft = chime_admin::model::GroupSpec {
        app_name: Some(app_name.into()),
        addresses: Some(vec!["http://127.0.0.1:1".into()]),
        ..Default::default()
    }
    .validate(None, &Default::default())
    .unwrap();
    store.insert_group(&draft).await.unwrap()
}

/// `n` running fixed-rate jobs in a new group named `group_name` (see
/// [`insert_manual_group`]), and every partition's lease taken by `owner`: what a test needs to
/// claim fires through the store alone. Returns the jobs' ids.
pub async fn leased_jobs(store: &chime_admin::store::Store, group_name: &str, owner: &str, n: usize) -> Vec<i64> {
    let group = insert_manual_group(store, group_name).await;
    let draft = chime_admin::model::JobSpec {
        group_id: Some(group.id),
        task: chime_admin::api::JobTaskPatch {
            handler: Some("h".into()),
            ..Default::default()
        },
        schedule: chime_admin::api::SchedulePatch {
            schedule_type: Some("FIX_RATE".into()),
            schedule_expr: Some("1".into()),
            ..Default::default()
        },
        running: Some(true),
        ..Default::default()
    }
    .validate(None, "UTC", group.id)
    .unwrap();
    let jobs = store.insert_jobs_bulk(&vec![draft; n], group.id).await.unwrap();
    let now = chime_admin::model::now_ms();
    for lease in store.lease_table().await.unwrap().leases {
        let epoch = store
            .acquire_lease(&lease, owner, now, now + 60_000, true)
            .await
            .unwrap();
        assert_eq!(epoch, Some(lease.epoch + 1), "lease {lease:?} taken: a new epoch");
    }
    jobs
}

/// Makes every job of the database at `url` due (`next_fire_at` 1), wherever a claim moved it
/// on to, so that the next claim takes each again.
pub async fn make_every_job_due(url: &str) {
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    sqlx::query("UPDATE job SET next_fire_at = 1")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    MySql,
    Postgres,
}

/// A database created for one test and dropped by [`TestDb::drop_db`].
pub struct TestDb {
    pub kind: Db,
    pub url: String,
    name: String,
    _dir: Option<tempfile::TempDir>,
}

fn mysql_server() -> String {
    std::env::var("CHIME_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned())
}

fn postgres_server() -> String {
    std::env::var("CHIME_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned())
}

impl TestDb {
    pub async fn new(kind: Db) -> TestDb {
        sqlx::any::install_default_drivers();
        let name = format!("chime_t_{}_{:08x}", std::process::id(), rand::random::<u32>());
        match kind {
            Db::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!("sqlite://{}/chime.db", dir.path().display());
                TestDb {
                    kind,
                    url,
                    name,
                    _dir: Some(dir),
                }
            }
            Db::MySql => {
                let server = mysql_server();
                let mut conn = connect(&format!("{server}/mysql")).await;
                sqlx::raw_sql(&format!("CREATE DATABASE {name} CHARACTER SET utf8mb4"))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                TestDb {
                    kind,
                    url: format!("{server}/{name}"),
                    name,
                    _dir: None,
                }
            }
            Db::Postgres => {
                let server = postgres_server();
                let mut conn = connect(&format!("{server}/postgres")).await;
                sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .unwrap();
                TestDb {
                    kind,
                    url: format!("{server}/{name}"),
                    name,
                    _dir: None,
                }
            }
        }
    }

    /// A connection to this database with the admin's migrations applied below `version`:
    /// the schema an older admin left, for a test of the upgrade.
    pub async fn migrated_before(&self, version: i64) -> sqlx::AnyConnection {
        use sqlx::migrate::Migrator;
        use sqlx::Connection;
        let all: Migrator = match self.kind {
            Db::Sqlite => sqlx::migrate!("./migrations/sqlite"),
            Db::MySql => sqlx::migrate!("./migrations/mysql"),
            Db::Postgres => sqlx::migrate!("./migrations/postgres"),
        };
        let before = Migrator {
            migrations: all
                .migrations
                .iter()
                .filter(|m| m.version < version)
                .cloned()
                .collect::<Vec<_>>()
                .into(),
            ..all
        };
        // A new SQLite file is made on first connect, as the admin makes it.
        let url = match self.kind {
            Db::Sqlite => format!("{}?mode=rwc", self.url),
            _ => self.url.clone(),
        };
        let mut conn = sqlx::AnyConnection::connect(&url).await.unwrap();
        before.run(&mut conn).await.unwrap();
        conn
    }

    pub async fn drop_db(self) {
        match self.kind {
            Db::Sqlite => {}
            Db::MySql => {
                let mut conn = connect(&format!("{}/mysql", mysql_server())).await;
                let _ = sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {}", self.name))
                    .execute(&mut conn)
                    .await;
            }
            Db::Postgres => {
                let mut conn = connect(&format!("{}/postgres", postgres_server())).await;
                let _ = sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name))
                    .execute(&mut conn)
                    .await;
            }
        }
    }
}

async fn connect(url: &str) -> sqlx::AnyConnection {
    use sqlx::Connection;
    match sqlx::AnyConnection::connect(url).await {
        Ok(c) => c,
        Err(e) => panic!("cannot reach the test database at {url} ({e}); scripts/test starts MariaDB and PostgreSQL"),
    }
}

/// Logs the console user `user` in at the admin at `base`; returns the session cookie
/// (`name=value`).
pub async fn login(base: &str, user: &str, password: &str) -> String {
    let resp = reqwest::Client::new()
        .post(format!("{base}/console/api/login"))
        .json(&serde_json::json!({"username": user, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "login of {user}");
    let cookie = resp
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie");
    cookie.split(';').next().unwrap().to_owned()
}

/// Test settings: short timers so failures and recoveries happen within seconds.
pub fn config(db_url: &str) -> AdminConfig {
    let mut c = AdminConfig::new(db_url);
    c.listen = "127.0.0.1:0".parse().unwrap();
    c.api_token = Some(API_TOKEN.to_owned());
    c.access_token = Some(ACCESS_TOKEN.to_owned());
    c.context_path = Some("/xxl-job-admin".to_owned());
    c.tick = Duration::from_millis(200);
    c.lookahead = Duration::from_secs(2);
    c.registry_refresh = Duration::from_millis(300);
    c.lost_sweep = Duration::from_millis(500);
    c.dead_timeout = Duration::from_secs(4);
    c.executor_timeout = Duration::from_secs(2);
    c.default_time_zone = "UTC".to_owned();
    c.admin_password = Some("test-password".to_owned());
    c
}

pub async fn start_admin(db_url: &str) -> AdminHandle {
    chime_admin::start(config(db_url)).await.expect("admin starts")
}

/// A REST client for `/v1`.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    http: reqwest::Client,
}

impl Api {
    pub fn new(addr: std::net::SocketAddr) -> Api {
        Api {
            base: format!("http://{addr}"),
            http: reqwest::Client::new(),
        }
    }

    /// The admin's `/metrics` as it prints them (no token: the endpoint is open).
    pub async fn metrics_text(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// The value of `series` (a metric's name with its labels, as `/metrics` prints them) in the
    /// admin's `/metrics`; `None` when it is not there.
    pub async fn metric(&self, series: &str) -> Option<f64> {
        let prefix = format!("{series} ");
        self.metrics_text()
            .await
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|v| v.trim().parse().unwrap())
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{}", self.base, path))
            .bearer_auth(API_TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// POST that must succeed; returns the body. No 503 is asked again: a change that meets the
    /// scheduler's claim in a deadlock is made again by the admin itself.
    pub async fn ok(&self, path: &str, body: Value) -> Value {
        let (s, v) = self.post(path, body).await;
        assert!((200..300).contains(&s), "POST {path} -> {s} {v}");
        v
    }

    pub async fn runs(&self, job_id: i64) -> Vec<Value> {
        let (s, v) = self.get(&format!("/v1/runs?job_id={job_id}&limit=10000")).await;
        assert_eq!(s, 200, "{v}");
        v.as_array().cloned().unwrap_or_default()
    }

    /// Waits until `pred` holds for the job's runs (newest first) or panics after `secs`.
    pub async fn wait_runs(&self, job_id: i64, secs: u64, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let runs = self.runs(job_id).await;
            if pred(&runs) {
                return runs;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; runs of job {job_id}: {}",
                    serde_json::to_string_pretty(&runs).unwrap()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the group lists `n` executors; returns their addresses, sorted as the
    /// routes see them. Generous deadline: executor processes start slowly on a loaded machine.
    pub async fn wait_executors(&self, app: &str, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (_, v) = self.get(&format!("/v1/executors?group={app}")).await;
            let count = v[0]["executors"].as_array().map(|a| a.len()).unwrap_or(0);
            if count == n {
                let mut addresses: Vec<String> = v[0]["executors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e["address"].as_str().map(str::to_owned))
                    .collect();
                addresses.sort();
                return addresses;
            }
            assert!(
                Instant::now() < deadline,
                "group {app} has {count} executors, expected {n}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

pub fn status(run: &Value) -> &str {
    run["status"].as_str().unwrap_or("")
}

/// True for a run that succeeded and whose trigger result is recorded too (see [`finished`]).
pub fn succeeded(run: &Value) -> bool {
    status(run) == "success" && run["trigger_code"] != 0
}

/// Runs whose result and trigger result are both recorded. They are written independently, and
/// a fast executor's callback can be committed before the trigger result it answers.
pub fn finished(runs: &[Value]) -> usize {
    runs.iter()
        .filter(|r| matches!(status(r), "success" | "failed") && r["trigger_code"] != 0)
        .count()
}

/// The `chime` binary of this build (see [`workspace_binary`]).
pub fn chime_binary() -> std::path::PathBuf {
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| workspace_binary("chime")).clone()
}

/// Binary `bin` of the workspace, (re)built first so a test never runs a stale one: the admin
/// crate's tests do not get `CARGO_BIN_EXE_…` for binaries of other packages.
pub fn workspace_binary(bin: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target profile directory");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut build = std::process::Command::new(cargo);
    // The whole workspace's binaries and examples, as `scripts/test` and a workspace test run
    // build them: the same feature set, so in CI this is a no-op. `-p PACKAGE` alone would
    // resolve features for that one package and build the dependency tree a second time.
    build.args(["build", "--quiet", "--workspace", "--bins", "--examples"]);
    // Cargo runs this test with the variables of the admin crate (CARGO_PKG_NAME,
    // CARGO_MANIFEST_DIR, …). Passed on, build scripts that watch them (ring's) see a changed
    // environment and rebuild — and then the next `cargo test` rebuilds again: a minute of
    // compiling on every run.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        let per_crate = [
            "CARGO_PKG_",
            "CARGO_MANIFEST_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
            "CARGO_PRIMARY_",
        ]
        .iter()
        .any(|p| key.starts_with(p));
        if per_crate || key == "CARGO_TARGET_TMPDIR" || key == "OUT_DIR" {
            build.env_remove(key.as_ref());
        }
    }
    if dir.ends_with("release") {
        build.arg("--release");
    }
    let status = build.status().expect("cargo runs");
    assert!(status.success(), "building the {bin} binary failed");
    let path = dir.join(bin);
    assert!(path.exists(), "{bin} binary not found at {}", path.display());
    path
}

/// Checks the runs of a one-second cron job across an outage: no scheduled time has two runs,
/// and every second from the first run to the last has one, where the first must be more than
/// 2 s before `outage_start` and the last more than 1 s after `outage_end`.
pub fn assert_every_second_ran_once(
    job_id: i64,
    scheduled: impl IntoIterator<Item = i64>,
    outage_start: i64,
    outage_end: i64,
) {
    let mut seen: std::collections::BTreeMap<i64, usize> = std::collections::BTreeMap::new();
    for at in scheduled {
        *seen.entry(at).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "job {job_id}: scheduled times with more than one run: {twice:?}"
    );
    let first = *seen.keys().next().expect("the job has runs");
    let last = *seen.keys().next_back().expect("the job has runs");
    assert!(
        first < outage_start - 2000 && last > outage_end + 1000,
        "job {job_id}: runs only from {first} to {last}, outage {outage_start}..{outage_end}"
    );
    let missing: Vec<i64> = (0..)
        .map(|k| first + k * 1000)
        .take_while(|t| *t <= last)
        .filter(|t| !seen.contains_key(t))
        .collect();
    assert!(missing.is_empty(), "job {job_id}: seconds without a run: {missing:?}");
}

/// An admin running in the test process on a fresh database, with a REST client: what the
/// end-to-end scenarios start from.
pub struct Env {
    pub db: TestDb,
    pub admin: AdminHandle,
    pub api: Api,
    /// The admin's base for executors, with XXL-JOB's context path.
    pub prefix: String,
}

impl Env {
    /// A fresh database and an admin on it whose executors count as dead after `dead_timeout`
    /// without a heartbeat (real executors beat only every 10–30 s: see
    /// [`demo_executor::REAL_EXECUTOR_DEAD_TIMEOUT`]).
    pub async fn start(kind: Db, dead_timeout: Duration) -> Env {
        Env::start_with(kind, |config| config.dead_timeout = dead_timeout).await
    }

    /// A fresh database and an admin on it with the test settings as `adjust` changes them.
    pub async fn start_with(kind: Db, adjust: impl FnOnce(&mut AdminConfig)) -> Env {
        let db = TestDb::new(kind).await;
        let mut config = config(&db.url);
        adjust(&mut config);
        let admin = chime_admin::start(config).await.expect("admin starts");
        let api = Api::new(admin.local_addr);
        let prefix = format!("http://{}/xxl-job-admin", admin.local_addr);
        Env { db, admin, api, prefix }
    }

    /// [`Env::start`], with a group registering under `app` and a test executor in it that the
    /// admin lists; the env, the executor and the group's id.
    pub async fn with_executor(kind: Db, dead_timeout: Duration, app: &str) -> (Env, executor::TestExecutor, i64) {
        let env = Env::start(kind, dead_timeout).await;
        let group = env.group(app).await;
        let ex = executor::TestExecutor::start(&env.prefix, app, ACCESS_TOKEN).await;
        env.api.wait_executors(app, 1).await;
        (env, ex, group)
    }

    /// Stops the admin and drops the database.
    pub async fn close(self) {
        self.admin.shutdown().await;
        self.db.drop_db().await;
    }

    /// Workflow instance `id` once it has reached a final state; panics after `secs`.
    pub async fn finished_instance(&self, id: i64, secs: u64) -> Value {
        eventually(secs, &format!("instance {id} finished"), || async {
            let (s, v) = self.api.get(&format!("/v1/workflow-instances/{id}")).await;
            assert_eq!(s, 200, "{v}");
            match v["state"].as_str() {
                Some("succeeded" | "failed" | "stopped") => Ok(v),
                _ => Err(v.to_string()),
            }
        })
        .await
    }

    /// Creates a group registering executors under `app`; returns its id.
    pub async fn group(&self, app: &str) -> i64 {
        self.api
            .ok("/v1/groups", serde_json::json!({"app_name": app, "title": "test"}))
            .await["id"]
            .as_i64()
            .unwrap()
    }

    /// Creates a job; returns its id.
    pub async fn job(&self, body: Value) -> i64 {
        self.api.ok("/v1/jobs", body).await["id"].as_i64().unwrap()
    }

    /// Triggers `job` by hand; returns the run id.
    pub async fn trigger(&self, job: i64, body: Value) -> i64 {
        self.api.ok(&format!("/v1/jobs/{job}/trigger"), body).await["run_id"]
            .as_i64()
            .unwrap()
    }

    /// Triggers `job` `n` times and returns the executor address of each run once all are
    /// finished, checking that every run was accepted and succeeded.
    pub async fn trigger_n(&self, job: i64, n: usize) -> Vec<String> {
        for _ in 0..n {
            self.trigger(job, serde_json::json!({})).await;
        }
        let runs = self
            .api
            .wait_runs(job, 60, "triggered runs finished", |r| finished(r) == n)
            .await;
        runs.iter()
            .map(|r| {
                assert_eq!(r["trigger_code"], 200, "every trigger was sent: {r:#}");
                assert_eq!(status(r), "success", "{r:#}");
                address_of(r)
            })
            .collect()
    }

    /// The run's log once the admin serves it from its stored copy.
    pub async fn stored_log(&self, run: i64) -> Value {
        eventually(30, "the run's log stored by the admin", || async {
            let (s, v) = self.api.get(&format!("/v1/runs/{run}/log")).await;
            if s == 200 && v["stored"] == true {
                Ok(v)
            } else {
                Err(format!("{s} {v}"))
            }
        })
        .await
    }

    /// Waits until run `run_id` has status `wanted` and its trigger result is recorded too
    /// (the two are written independently); returns it.
    pub async fn run_with_status(&self, run_id: i64, wanted: &str) -> Value {
        eventually(20, &format!("run {run_id} {wanted}"), || async {
            let r = self.run(run_id).await;
            if status(&r) == wanted && r["trigger_code"] != 0 {
                Ok(r)
            } else {
                Err(r.to_string())
            }
        })
        .await
    }

    /// One run.
    pub async fn run(&self, run_id: i64) -> Value {
        let (s, v) = self.api.get(&format!("/v1/runs/{run_id}")).await;
        assert_eq!(s, 200, "{v}");
        v
    }

    /// Waits up to `secs` until run `run_id` satisfies `pred`; returns it.
    pub async fn wait_run(&self, run_id: i64, secs: u64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        eventually(secs, what, || async {
            let r = self.run(run_id).await;
            if pred(&r) {
                Ok(r)
            } else {
                Err(format!("{r:#}"))
            }
        })
        .await
    }

    /// Starts `n` demo executors registering in `app` and waits until the admin lists exactly
    /// them. Sorted by address: the order FIRST, LAST, FAILOVER, BUSYOVER and the shards use.
    pub async fn demo_executors(&self, app: &str, n: usize) -> Vec<demo_executor::DemoExecutor> {
        let mut executors: Vec<demo_executor::DemoExecutor> = (0..n)
            .map(|_| demo_executor::DemoExecutor::start(&self.prefix, app))
            .collect();
        executors.sort_by(|a, b| a.address.cmp(&b.address));
        let listed = self.api.wait_executors(app, n).await;
        let started: Vec<&str> = executors.iter().map(|x| x.address.as_str()).collect();
        assert_eq!(
            listed, started,
            "the admin lists the executors at the addresses they listen on (registered as \
             `http://host:port/`, stored without the slash)"
        );
        executors
    }
}

/// The executor a run was sent to.
pub fn address_of(run: &Value) -> String {
    run["executor_address"].as_str().unwrap_or_default().to_owned()
}

/// Waits until `check` returns `Ok`, or panics after `secs` naming `what` and the last `Err`.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match check().await {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => panic!("timed out waiting for {what}; last seen: {last}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Sends an XXL-JOB registration of `address` for `app` to the executor API at `base` (with
/// or without the context path), as an executor does, with the test access token; returns the
/// reply envelope.
pub async fn post_registration(base: &str, app: &str, address: &str) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/api/registry"))
        .header("XXL-JOB-ACCESS-TOKEN", ACCESS_TOKEN)
        .json(&serde_json::json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": address}))
        .send()
        .await
        .expect("the admin answers")
        .json()
        .await
        .expect("a JSON envelope")
}

/// Posts `body` to the admin's executor API (`{base}/api/{path}`) with `token`, from `http`
/// (a test may bind it to a source address); returns the reply's `code` and `msg`.
pub async fn executor_api(http: &reqwest::Client, base: &str, path: &str, token: &str, body: Value) -> (i64, String) {
    let v: Value = http
        .post(format!("{base}/api/{path}"))
        .header("XXL-JOB-ACCESS-TOKEN", token)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    (v["code"].as_i64().unwrap(), v["msg"].as_str().unwrap_or("").to_owned())
}
