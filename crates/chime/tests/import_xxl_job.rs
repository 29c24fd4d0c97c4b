//! `chime import xxl-job` as a team moving off XXL-JOB runs it: against real XXL-JOB databases
//! on MariaDB (2.4, 3.4 and 3.5 schemas, written from XXL-JOB's schema description, with
//! realistic rows), into Chime on SQLite, PostgreSQL and MariaDB. Every field arrives; what
//! Chime cannot take is reported per object with a non-zero exit; a second run changes
//! nothing; edits made in XXL-JOB afterwards are carried over; users sign in with their
//! XXL-JOB passwords; new runs never reuse an XXL-JOB run id; and a job due while the
//! schedulers change hands fires once, by Chime's real scheduler with a real executor.

mod common;

use chrono::{TimeZone, Timelike};
use chrono_tz::Tz;
use common::admin::{drop_server_db, login, server_db, start_admin, start_admin_with, Admin, API_TOKEN};
use common::{free_port, Guard, BIN};
use serde_json::Value;
use sqlx::{AnyConnection, Connection, Row};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// XXL-JOB's zone in these tests (its admin's JVM's): its times are stored as wall times here.
const ZONE: &str = "Asia/Shanghai";
const MD5_123456: &str = "e10adc3949ba59abbe56e057f20f883e";
const SHA256_123456: &str = "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92";
const MD5_OPS: &str = "060312c355ca5fec2cf4a2d65a76b126";
const SHA256_OPS: &str = "c8416d5fe05500fa53646a4528d9505453d5d5f7854723c5a4e03b67e4a76fb9";

fn mysql_server() -> String {
    std::env::var("CHIME_TEST_MYSQL_URL").unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".to_owned())
}

fn postgres_server() -> String {
    std::env::var("CHIME_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".to_owned())
}

/// A scratch XXL-JOB database on MariaDB holding the schema of `version` (2.4, 3.4, 3.5).
struct XxlDb {
    url: String,
    name: String,
    version: &'static str,
}

impl XxlDb {
    async fn new(version: &'static str) -> XxlDb {
        let (url, name) = server_db(&mysql_server(), "mysql", "CREATE DATABASE NAME CHARACTER SET utf8mb4").await;
        let schema = std::fs::read_to_string(format!(
            "{}/tests/fixtures/xxl-job/{version}.sql",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let mut conn = AnyConnection::connect(&url).await.unwrap();
        sqlx::raw_sql(&schema).execute(&mut conn).await.unwrap();
        XxlDb { url, name, version }
    }

    async fn exec(&self, sql: &str) {
        let mut conn = AnyConnection::connect(&self.url).await.unwrap();
        sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
    }

    async fn drop_db(self) {
        drop_server_db(
            &mysql_server(),
            "mysql",
            &format!("DROP DATABASE IF EXISTS {}", self.name),
        )
        .await;
    }

    /// 2.x stores MD5 hashes, 3.x SHA-256 ones.
    fn hash(&self, md5: &'static str, sha256: &'static str) -> &'static str {
        if self.version == "2.4" {
            md5
        } else {
            sha256
        }
    }
}

fn zone() -> Tz {
    ZONE.parse().unwrap()
}

/// Epoch ms as a `DATETIME` literal in XXL-JOB's zone.
fn dt(ms: i64) -> String {
    let t = zone().timestamp_millis_opt(ms).unwrap();
    format!("'{}'", t.format("%Y-%m-%d %H:%M:%S"))
}

/// The same `DATETIME` read back, as the import reads it (whole seconds).
fn secs(ms: i64) -> i64 {
    ms - ms.rem_euclid(1000)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The next 02:00 in XXL-JOB's zone after `now`, as XXL-JOB would have computed `0 0 2 * * ?`.
fn next_two_am(now: i64) -> i64 {
    let local = zone().timestamp_millis_opt(now).unwrap();
    let mut day = local.date_naive();
    if local.hour() >= 2 {
        day = day.succ_opt().unwrap();
    }
    zone()
        .from_local_datetime(&day.and_hms_opt(2, 0, 0).unwrap())
        .unwrap()
        .timestamp_millis()
}

/// Times the seed uses, kept to check what arrived.
struct Seeded {
    now: i64,
    settle_next: i64,
    settle_last: i64,
    minute_next: i64,
    added: i64,
    glue_v1: i64,
    glue_v2: i64,
}

/// Realistic rows: three groups (one with an app name Chime refuses), six jobs (one with a cron
/// no scheduler accepts, one in the refused group), script versions, three users (one with a
/// password that is no hash) and runs in every state. `clean` leaves out the rows Chime refuses.
async fn seed(xxl: &XxlDb, clean: bool) -> Seeded {
    let now = now_ms();
    let s = Seeded {
        now,
        settle_next: next_two_am(now),
        settle_last: next_two_am(now) - 86_400_000,
        minute_next: (now / 60_000 + 1) * 60_000,
        added: secs(now - 30 * 86_400_000),
        glue_v1: secs(now - 2 * 86_400_000),
        glue_v2: secs(now - 86_400_000),
    };
    let v35 = xxl.version == "3.5";
    let (title, desc) = if v35 { ("name", "name") } else { ("title", "job_desc") };
    let token = if v35 { ", access_token" } else { "" };
    let token_value = |t: &str| if v35 { format!(", {t}") } else { String::new() };
    xxl.exec(&format!(
        "INSERT INTO xxl_job_group (id, app_name, {title}, address_type, address_list, update_time{token}) VALUES \
         (1, 'orders-executor', '订单执行器', 0, 'http://10.0.0.5:9999/,http://10.0.0.6:9999/', NOW(){}), \
         (2, 'report-executor', 'Reports', 1, 'http://127.0.0.1:9999,http://169.254.169.254:80', NOW(){})",
        token_value("'orders-group-token'"),
        token_value("NULL"),
    ))
    .await;
    let cols = format!(
        "id, job_group, {desc}, add_time, update_time, author, alarm_email, schedule_type, schedule_conf, \
         misfire_strategy, executor_route_strategy, executor_handler, executor_param, executor_block_strategy, \
         executor_timeout, executor_fail_retry_count, glue_type, glue_source, glue_remark, glue_updatetime, \
         child_jobid, trigger_status, trigger_last_time, trigger_next_time"
    );
    let added = dt(s.added);
    xxl.exec(&format!(
        "INSERT INTO xxl_job_info ({cols}) VALUES \
         (1, 1, 'Nightly settlement', {added}, {added}, 'alice', 'ops@example.com,bob@example.com', 'CRON', \
          '0 0 2 * * ?', 'FIRE_ONCE_NOW', 'ROUND', 'settleJob', 'a=1\\nb=2', 'DISCARD_LATER', 600, 3, 'BEAN', '', \
          'GLUE代码初始化', {added}, '2,3', 1, {}, {}), \
         (2, 1, 'Sync stock', {added}, {added}, 'bob', '', 'FIX_RATE', '30', 'DO_NOTHING', 'FIRST', '', 'warehouse=7', \
          'SERIAL_EXECUTION', 0, 0, 'GLUE_SHELL', '#!/bin/bash\\necho \"sync $1\"\\n', 'v2: pass the parameter', {}, \
          '', 0, 0, 0), \
         (3, 2, 'Monthly report', {added}, {added}, 'carol', 'carol@example.com', 'NONE', '', 'DO_NOTHING', \
          'SHARDING_BROADCAST', '', 'month=11', 'COVER_EARLY', 0, 1, 'GLUE_PYTHON', 'print(\"report\")', 'first', \
          {}, '{}', 0, 0, 0), \
         (5, 1, 'Every minute', {added}, {added}, 'dave', '', 'CRON', '0 * * * * ?', 'DO_NOTHING', 'FIRST', \
          'demoJobHandler', '', 'SERIAL_EXECUTION', 0, 0, 'BEAN', '', '', {added}, '', 1, {}, {})",
        s.settle_last,
        s.settle_next,
        dt(s.glue_v2),
        dt(s.glue_v1),
        if clean { "" } else { "4" },
        s.minute_next - 60_000,
        s.minute_next,
    ))
    .await;
    xxl.exec(&format!(
        "INSERT INTO xxl_job_logglue (job_id, glue_type, glue_source, glue_remark, add_time, update_time) VALUES \
         (2, 'GLUE_SHELL', 'echo first', 'v1: first', {v1}, {v1}), \
         (2, 'GLUE_SHELL', '#!/bin/bash\\necho \"sync $1\"\\n', 'v2: pass the parameter', {v2}, {v2}), \
         (3, 'GLUE_PYTHON', 'print(\"report\")', 'first', {v1}, {v1})",
        v1 = dt(s.glue_v1),
        v2 = dt(s.glue_v2),
    ))
    .await;
    xxl.exec(&format!(
        "INSERT INTO xxl_job_user (username, password, role, permission) VALUES \
         ('admin', '{}', 1, NULL), ('ops', '{}', 0, '1,2,3')",
        xxl.hash(MD5_123456, SHA256_123456),
        xxl.hash(MD5_OPS, SHA256_OPS),
    ))
    .await;
    let log_cols =
        "id, job_group, job_id, executor_address, executor_handler, executor_param, executor_sharding_param, \
                    executor_fail_retry_count, trigger_time, trigger_code, trigger_msg, handle_time, handle_code, \
                    handle_msg, alarm_status";
    let hour_ago = dt(now - 3_600_000);
    let done = dt(now - 3_595_000);
    let recent = dt(now - 600_000);
    xxl.exec(&format!(
        "INSERT INTO xxl_job_log ({log_cols}) VALUES \
         (50, 1, 1, 'http://10.0.0.5:9999/', 'settleJob', '', NULL, 0, {}, 200, 'old', {}, 200, 'old', 0), \
         (100, 1, 1, 'http://10.0.0.5:9999/', 'settleJob', 'a=1\\nb=2', NULL, 3, {hour_ago}, 200, \
          '任务触发类型：Cron触发<br>调度机器：10.0.0.1', {done}, 200, 'settled 42 invoices', 0), \
         (101, 1, 1, 'http://10.0.0.6:9999/', 'settleJob', 'a=1\\nb=2', NULL, 3, {hour_ago}, 200, \
          '任务触发类型：手动触发', {done}, 500, 'java.lang.IllegalStateException: ledger locked', 2), \
         (102, 1, 5, 'http://10.0.0.5:9999/', 'demoJobHandler', '', NULL, 0, {recent}, 200, 'Trigger Type：Cron trigger', \
          NULL, 0, NULL, 0), \
         (103, 1, 5, NULL, 'demoJobHandler', '', NULL, 0, {recent}, 0, NULL, NULL, 0, NULL, 0), \
         (104, 2, 3, 'http://127.0.0.1:9999', '', 'month=11', '1/2', 1, {hour_ago}, 200, \
          'Trigger Type：Parent job trigger', {done}, 200, 'ok', 0)",
        dt(now - 60 * 86_400_000),
        dt(now - 60 * 86_400_000),
    ))
    .await;
    if !clean {
        xxl.exec(&format!(
            "INSERT INTO xxl_job_group (id, app_name, {title}, address_type, address_list) VALUES (3, 'bad app', 'Bad', 0, NULL)"
        ))
        .await;
        xxl.exec(&format!(
            "INSERT INTO xxl_job_info ({cols}) VALUES \
             (4, 2, 'Broken cron', {added}, {added}, 'erin', '', 'CRON', '0 0 25 * * ?', 'DO_NOTHING', 'FIRST', \
              'reportJob', '', 'SERIAL_EXECUTION', 0, 0, 'BEAN', '', '', {added}, '', 0, 0, 0), \
             (6, 3, 'In the refused group', {added}, {added}, 'erin', '', 'NONE', '', 'DO_NOTHING', 'FIRST', \
              'x', '', 'SERIAL_EXECUTION', 0, 0, 'BEAN', '', '', {added}, '', 0, 0, 0)"
        ))
        .await;
        xxl.exec(
            "INSERT INTO xxl_job_user (username, password, role, permission) VALUES ('ghost', 'not-a-hash', 0, '')",
        )
        .await;
        xxl.exec(&format!(
            "INSERT INTO xxl_job_log ({log_cols}) VALUES \
             (105, 2, 4, NULL, 'reportJob', '', NULL, 0, {hour_ago}, 500, 'no address', NULL, 0, NULL, 0)"
        ))
        .await;
    }
    s
}

/// The arguments of an import of `xxl` into `db` with the last 30 days of runs.
fn from_into(xxl: &XxlDb, db: &str) -> Vec<String> {
    ["--from", &xxl.url, "--db", db, "--time-zone", ZONE, "--logs-days", "30"]
        .map(str::to_owned)
        .to_vec()
}

/// `chime import xxl-job ARGS`: exit code, standard output, standard error.
fn import<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(["import", "xxl-job"])
        .args(args)
        .env_remove("CHIME_DB")
        .env_remove("CHIME_IMPORT_FROM")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Chime's database, read the way the tests check it.
async fn chime(db: &str) -> AnyConnection {
    sqlx::any::install_default_drivers();
    AnyConnection::connect(db).await.unwrap()
}

/// Reads a text column whichever way the driver hands it over (MySQL's TEXT arrives as bytes).
fn text(row: &sqlx::any::AnyRow, col: &str) -> String {
    match row.try_get::<Option<String>, _>(col) {
        Ok(v) => v.unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(&row.try_get::<Vec<u8>, _>(col).unwrap()).into_owned(),
    }
}

fn int(row: &sqlx::any::AnyRow, col: &str) -> i64 {
    row.try_get::<i64, _>(col).unwrap()
}

/// Every row of the tables an import writes, as text: equal before and after a no-op import.
async fn snapshot(db: &str) -> BTreeMap<String, Vec<String>> {
    let mut conn = chime(db).await;
    let mut out = BTreeMap::new();
    for (table, cols) in [
        (
            "executor_group",
            "id, app_name, title, address_type, address_list, protocol, access_token, updated_at",
        ),
        (
            "job",
            "id, job_key, group_id, description, owner, alarm_contacts, schedule_type, schedule_expr, time_zone, \
             misfire_strategy, route_strategy, handler, param, block_strategy, timeout_secs, retry_count, \
             child_job_ids, glue_type, glue_source, glue_updated_at, running, anchor_at, next_fire_at, last_fire_at, \
             created_at, updated_at",
        ),
        (
            "glue_version",
            "id, job_id, glue_type, glue_source, author, remark, created_at",
        ),
        ("app_user", "id, username, password_hash, role, can_write, group_ids"),
        (
            "run",
            "id, job_id, trigger_code, trigger_msg, handle_code, handle_msg, handled_at, alarm_status",
        ),
        ("audit_log", "id, action"),
    ] {
        let rows = sqlx::query(&format!("SELECT {cols} FROM {table} ORDER BY id"))
            .fetch_all(&mut conn)
            .await
            .unwrap();
        let lines = rows
            .iter()
            .map(|r| {
                cols.split(',')
                    .map(|c| {
                        let c = c.trim();
                        r.try_get::<Option<i64>, _>(c)
                            .map(|v| format!("{v:?}"))
                            .unwrap_or_else(|_| text(r, c))
                    })
                    .collect::<Vec<_>>()
                    .join("|")
            })
            .collect();
        out.insert(table.to_owned(), lines);
    }
    out
}

/// A job's row by key.
async fn job(conn: &mut AnyConnection, key: &str) -> sqlx::any::AnyRow {
    sqlx::query(&format!("SELECT * FROM job WHERE job_key = '{key}'"))
        .fetch_one(conn)
        .await
        .unwrap_or_else(|e| panic!("no job {key}: {e}"))
}

async fn id_of(conn: &mut AnyConnection, table: &str, col: &str, value: &str) -> i64 {
    int(
        &sqlx::query(&format!("SELECT id FROM {table} WHERE {col} = '{value}'"))
            .fetch_one(conn)
            .await
            .unwrap(),
        "id",
    )
}

/// Every field of the seeded groups, jobs, script versions, users and runs, as Chime holds it.
async fn assert_round_trip(db: &str, s: &Seeded, protocol: &str) {
    let mut conn = chime(db).await;
    let orders = id_of(&mut conn, "executor_group", "app_name", "orders-executor").await;
    let reports = id_of(&mut conn, "executor_group", "app_name", "report-executor").await;
    let g = sqlx::query("SELECT * FROM executor_group WHERE app_name = 'orders-executor'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(text(&g, "title"), "订单执行器");
    assert_eq!(int(&g, "address_type"), 0, "automatic registration");
    assert_eq!(text(&g, "protocol"), protocol);
    let g = sqlx::query("SELECT * FROM executor_group WHERE app_name = 'report-executor'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(int(&g, "address_type"), 1);
    assert_eq!(
        text(&g, "address_list"),
        "http://127.0.0.1:9999",
        "the link-local address is left out"
    );

    let settle = job(&mut conn, "xxl-1").await;
    let sync = job(&mut conn, "xxl-2").await;
    let report = job(&mut conn, "xxl-3").await;
    let minute = job(&mut conn, "xxl-5").await;
    assert_eq!(int(&settle, "group_id"), orders);
    assert_eq!(text(&settle, "description"), "Nightly settlement");
    assert_eq!(text(&settle, "owner"), "alice");
    assert_eq!(text(&settle, "alarm_contacts"), "ops@example.com,bob@example.com");
    assert_eq!(text(&settle, "schedule_type"), "CRON");
    assert_eq!(text(&settle, "schedule_expr"), "0 0 2 * * ?");
    assert_eq!(text(&settle, "time_zone"), ZONE);
    assert_eq!(text(&settle, "misfire_strategy"), "FIRE_ONCE_NOW");
    assert_eq!(text(&settle, "route_strategy"), "ROUND");
    assert_eq!(text(&settle, "handler"), "settleJob");
    assert_eq!(text(&settle, "param"), "a=1\nb=2");
    assert_eq!(text(&settle, "block_strategy"), "DISCARD_LATER");
    assert_eq!(int(&settle, "timeout_secs"), 600);
    assert_eq!(int(&settle, "retry_count"), 3);
    assert_eq!(
        text(&settle, "child_job_ids"),
        format!("{},{}", int(&sync, "id"), int(&report, "id")),
        "children re-mapped to Chime's ids, across groups"
    );
    assert_eq!(text(&settle, "glue_type"), "BEAN");
    assert_eq!(int(&settle, "running"), 1);
    assert_eq!(
        int(&settle, "next_fire_at"),
        s.settle_next,
        "XXL-JOB's next trigger time"
    );
    assert_eq!(int(&settle, "last_fire_at"), s.settle_last);
    assert_eq!(int(&settle, "created_at"), s.added);
    assert_eq!(int(&minute, "next_fire_at"), s.minute_next);

    assert_eq!(text(&sync, "schedule_type"), "FIX_RATE");
    assert_eq!(text(&sync, "schedule_expr"), "30");
    assert_eq!(text(&sync, "glue_type"), "GLUE_SHELL");
    assert_eq!(text(&sync, "glue_source"), "#!/bin/bash\necho \"sync $1\"\n");
    assert_eq!(int(&sync, "glue_updated_at"), s.glue_v2);
    assert_eq!(text(&sync, "param"), "warehouse=7");
    assert_eq!(int(&sync, "running"), 0);
    assert_eq!(int(&sync, "next_fire_at"), 0);

    assert_eq!(int(&report, "group_id"), reports);
    assert_eq!(text(&report, "schedule_type"), "NONE");
    assert_eq!(text(&report, "route_strategy"), "SHARDING_BROADCAST");
    assert_eq!(text(&report, "block_strategy"), "COVER_EARLY");
    assert_eq!(text(&report, "glue_type"), "GLUE_PYTHON");
    assert_eq!(text(&report, "child_job_ids"), "");
    assert_eq!(int(&report, "retry_count"), 1);

    let versions = sqlx::query(&format!(
        "SELECT remark, glue_source, created_at FROM glue_version WHERE job_id = {} ORDER BY created_at",
        int(&sync, "id")
    ))
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let versions: Vec<(String, String, i64)> = versions
        .iter()
        .map(|v| (text(v, "remark"), text(v, "glue_source"), int(v, "created_at")))
        .collect();
    assert_eq!(
        versions,
        vec![
            ("v1: first".to_owned(), "echo first".to_owned(), s.glue_v1),
            (
                "v2: pass the parameter".to_owned(),
                "#!/bin/bash\necho \"sync $1\"\n".to_owned(),
                s.glue_v2
            ),
        ],
        "every GLUE version with its remark and time, the current one once"
    );

    let users = sqlx::query("SELECT username, password_hash, role, group_ids FROM app_user ORDER BY username")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let users: Vec<(String, String, String, String)> = users
        .iter()
        .map(|u| {
            (
                text(u, "username"),
                text(u, "password_hash"),
                text(u, "role"),
                text(u, "group_ids"),
            )
        })
        .collect();
    let prefix = if protocol == "G2" { "xxl-md5:" } else { "xxl-sha256:" };
    let (admin_hash, ops_hash) = if protocol == "G2" {
        (MD5_123456, MD5_OPS)
    } else {
        (SHA256_123456, SHA256_OPS)
    };
    assert!(users.contains(&(
        "admin".to_owned(),
        format!("{prefix}{admin_hash}"),
        "admin".to_owned(),
        String::new()
    )));
    let mut ops_groups = [orders, reports];
    ops_groups.sort_unstable();
    assert!(
        users.contains(&(
            "ops".to_owned(),
            format!("{prefix}{ops_hash}"),
            "user".to_owned(),
            format!("{},{}", ops_groups[0], ops_groups[1])
        )),
        "{users:?}"
    );

    let runs = sqlx::query(
        "SELECT id, job_id, group_id, scheduled_at, trigger_type, executor_address, handler, param, shard_index, \
         shard_total, retry_count, trigger_code, trigger_msg, handled_at, handle_code, handle_msg, alarm_status \
         FROM run ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let by_id: BTreeMap<i64, &sqlx::any::AnyRow> = runs.iter().map(|r| (int(r, "id"), r)).collect();
    assert_eq!(
        by_id.keys().copied().collect::<Vec<_>>(),
        vec![100, 101, 102, 103, 104],
        "the last 30 days' runs under their own ids"
    );
    let r = by_id[&100];
    assert_eq!(int(r, "job_id"), int(&settle, "id"));
    assert_eq!(int(r, "group_id"), orders);
    assert_eq!(int(r, "scheduled_at"), secs(s.now - 3_600_000));
    assert_eq!(text(r, "trigger_type"), "CRON");
    assert_eq!(text(r, "executor_address"), "http://10.0.0.5:9999");
    assert_eq!(text(r, "param"), "a=1\nb=2");
    assert_eq!(int(r, "retry_count"), 3);
    assert_eq!((int(r, "trigger_code"), int(r, "handle_code")), (200, 200));
    assert_eq!(text(r, "handle_msg"), "settled 42 invoices");
    assert_eq!(int(r, "handled_at"), secs(s.now - 3_595_000));
    assert_eq!(int(r, "alarm_status"), 1, "XXL-JOB's own alarm business is done");
    let r = by_id[&101];
    assert_eq!(text(r, "trigger_type"), "MANUAL");
    assert_eq!((int(r, "handle_code"), int(r, "alarm_status")), (500, 2));
    let r = by_id[&102];
    assert_eq!(
        (int(r, "trigger_code"), int(r, "handle_code"), int(r, "alarm_status")),
        (200, 0, 0),
        "still running: its executor reports to Chime now"
    );
    let r = by_id[&103];
    assert_eq!(int(r, "trigger_code"), 500, "never recorded as sent: not sent again");
    let r = by_id[&104];
    assert_eq!((int(r, "shard_index"), int(r, "shard_total")), (1, 2));
    assert_eq!(text(r, "trigger_type"), "PARENT");
}

/// 2.4 into SQLite: every field, the report and its exit code, a second run that changes
/// nothing, edits carried over, and the XXL-JOB password at the console.
#[tokio::test(flavor = "multi_thread")]
async fn xxl_job_2_4_into_sqlite() {
    let xxl = XxlDb::new("2.4").await;
    let s = seed(&xxl, false).await;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/chime.db", dir.path().display());
    let args = from_into(&xxl, &db);

    let (code, report, err) = import(&args);
    assert_eq!(code, 1, "objects were left out: {report}{err}");
    for line in [
        "source: XXL-JOB 2.x schema",
        "  + orders-executor  created",
        "  ! bad app  not imported: group 'bad app', field 'app_name': must not contain whitespace or commas",
        "  + orders-executor/xxl-1  created",
        "  ! report-executor/xxl-4  not imported:",
        "  ! 3/xxl-6  not imported: its group 3 was not imported",
        "      child job 4 was not imported",
        "      address 'http://169.254.169.254:80' left out",
        "  + admin  created",
        "  ! ghost  not imported: its password is not an MD5 or SHA-256 hex digest",
        "  ! run 105  not imported: its job 4 was not imported",
        "runs: 5 created, 0 updated, 0 unchanged, 1 not imported",
        "script versions: 1 added",
        "--access-token",
        // XXL-JOB's seed administrator, carried over with its password, is not kept quiet.
        "      its password is XXL-JOB's seed password (123456): change it at once",
        "note: users: 2 of 3 read, 1 of them administrators",
        "note: 1 user(s) with a well-known password, which anyone can sign in with: admin",
    ] {
        assert!(report.contains(line), "report lacks {line:?}:\n{report}");
    }
    assert!(err.contains("5 object(s) not imported"), "{err}");
    assert!(
        report.contains(&format!(
            "fires next at {}",
            zone()
                .timestamp_millis_opt(s.settle_next)
                .unwrap()
                .format("%Y-%m-%d %H:%M:%S")
        )),
        "{report}"
    );
    assert!(!report.contains("--from"), "no password or URL secrets echoed");
    assert_round_trip(&db, &s, "G2").await;

    // A second run finds everything as it is and writes nothing, not even an audit entry.
    let before = snapshot(&db).await;
    let (code, again, _) = import(&args);
    assert_eq!(code, 1);
    assert!(again.contains("  = orders-executor/xxl-1  unchanged"), "{again}");
    assert!(again.contains("  = admin  unchanged"), "{again}");
    assert!(again.contains("runs: 0 created, 0 updated, 5 unchanged"), "{again}");
    assert_eq!(snapshot(&db).await, before, "a second import changes nothing");

    // Edits in XXL-JOB afterwards are carried over.
    xxl.exec(
        "UPDATE xxl_job_info SET schedule_conf = '0 30 2 * * ?', executor_param = 'a=2' WHERE id = 1; \
         UPDATE xxl_job_log SET handle_code = 200, handle_time = NOW(), handle_msg = 'finished after the first import' \
         WHERE id = 102; \
         INSERT INTO xxl_job_user (username, password, role, permission) VALUES ('eve', 'e10adc3949ba59abbe56e057f20f883e', 0, '2')",
    )
    .await;
    let (_, third, _) = import(&args);
    assert!(
        third.contains("  ~ orders-executor/xxl-1  updated: schedule_expr, param"),
        "{third}"
    );
    assert!(third.contains("  + eve  created"), "{third}");
    assert!(third.contains("runs: 0 created, 1 updated, 4 unchanged"), "{third}");
    let mut conn = chime(&db).await;
    let settle = job(&mut conn, "xxl-1").await;
    assert_eq!(text(&settle, "schedule_expr"), "0 30 2 * * ?");
    let r = sqlx::query("SELECT handle_code, handle_msg FROM run WHERE id = 102")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        (int(&r, "handle_code"), text(&r, "handle_msg")),
        (200, "finished after the first import".to_owned())
    );
    drop(conn);

    // The team signs in with their XXL-JOB passwords; the MD5 hash is replaced at first use.
    let admin = start_admin(&db, "");
    assert_eq!(login(&admin.url, "admin", "wrong-password").await, Err(401));
    login(&admin.url, "admin", "123456").await.unwrap();
    let mut conn = chime(&db).await;
    let hash = text(
        &sqlx::query("SELECT password_hash FROM app_user WHERE username = 'admin'")
            .fetch_one(&mut conn)
            .await
            .unwrap(),
        "password_hash",
    );
    assert!(hash.starts_with("$argon2"), "re-hashed at login: {hash}");
    login(&admin.url, "admin", "123456").await.unwrap();
    login(&admin.url, "ops", "ops-secret-1").await.unwrap();
    // A run made now takes an id above every XXL-JOB run id.
    let run = trigger(&admin, id_of(&mut conn, "job", "job_key", "xxl-5").await).await;
    assert!(run > 105, "new run id {run} after XXL-JOB's 105");
    drop(admin);
    xxl.drop_db().await;
}

/// Triggers a job through the REST API; the new run's id.
async fn trigger(admin: &Admin, job: i64) -> i64 {
    let resp: Value = reqwest::Client::new()
        .post(format!("{}/v1/jobs/{job}/trigger", admin.url))
        .bearer_auth(API_TOKEN)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    resp["run_id"].as_i64().unwrap_or_else(|| panic!("no run id in {resp}"))
}

/// 3.5 (renamed columns, per-group tokens, SHA-256) into PostgreSQL, whose id sequence an
/// insert with its own id does not move: new runs still come after XXL-JOB's.
#[tokio::test(flavor = "multi_thread")]
async fn xxl_job_3_5_into_postgres() {
    let xxl = XxlDb::new("3.5").await;
    let s = seed(&xxl, true).await;
    let (db, name) = server_db(&postgres_server(), "postgres", "CREATE DATABASE NAME").await;
    let mut args = from_into(&xxl, &db);
    args.push("--json".to_owned());
    let (code, json, err) = import(&args);
    assert_eq!(code, 0, "{json}{err}");
    let report: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["version"], "3.5");
    assert_eq!(report["runs"]["created"], 5);
    assert!(report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "group" && e["name"] == "orders-executor" && e["result"] == "created"));
    assert_round_trip(&db, &s, "G4").await;
    let mut conn = chime(&db).await;
    let token = sqlx::query("SELECT access_token FROM executor_group WHERE app_name = 'orders-executor'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        text(&token, "access_token"),
        "orders-group-token",
        "executors keep their group's token"
    );
    assert!(!json.contains("orders-group-token"), "the token is never printed");
    let job5 = id_of(&mut conn, "job", "job_key", "xxl-5").await;
    drop(conn);

    let admin = start_admin(&db, "");
    login(&admin.url, "admin", "123456").await.unwrap();
    let run = trigger(&admin, job5).await;
    assert!(run > 104, "new run id {run} after XXL-JOB's 104");
    drop(admin);
    drop_server_db(
        &postgres_server(),
        "postgres",
        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
    )
    .await;
    xxl.drop_db().await;
}

/// 3.4 into MariaDB: a dry run reports everything and writes nothing; the import then exits 0
/// and new runs come after XXL-JOB's ids.
#[tokio::test(flavor = "multi_thread")]
async fn xxl_job_3_4_into_mariadb_with_a_dry_run() {
    let xxl = XxlDb::new("3.4").await;
    let s = seed(&xxl, true).await;
    let (db, name) = server_db(&mysql_server(), "mysql", "CREATE DATABASE NAME CHARACTER SET utf8mb4").await;
    let args = from_into(&xxl, &db);
    let (code, dry, err) = import(&[args.clone(), vec!["--dry-run".to_owned()]].concat());
    assert_eq!(code, 0, "{dry}{err}");
    assert!(dry.contains("source: XXL-JOB 3.4 schema"), "{dry}");
    assert!(dry.contains("  + orders-executor/xxl-1  created"), "{dry}");
    assert!(dry.contains("dry run, nothing written"), "{dry}");
    let mut conn = chime(&db).await;
    let n = int(
        &sqlx::query("SELECT COUNT(*) AS n FROM job")
            .fetch_one(&mut conn)
            .await
            .unwrap(),
        "n",
    );
    assert_eq!(n, 0, "a dry run writes nothing");
    drop(conn);

    let (code, report, err) = import(&args);
    assert_eq!(code, 0, "{report}{err}");
    assert!(report.contains("imported: 2 groups, 4 jobs, 2 users"), "{report}");
    assert_round_trip(&db, &s, "G3").await;
    let admin = start_admin(&db, "");
    login(&admin.url, "ops", "ops-secret-1").await.unwrap();
    let mut conn = chime(&db).await;
    let run = trigger(&admin, id_of(&mut conn, "job", "job_key", "xxl-5").await).await;
    assert!(run > 104, "new run id {run} after XXL-JOB's 104");
    drop(admin);
    drop_server_db(&mysql_server(), "mysql", &format!("DROP DATABASE IF EXISTS {name}")).await;
    xxl.drop_db().await;
}

/// Script history is bounded as it is read: the newest 30 versions of a job, none over 1 MiB,
/// none of a type Chime does not know; what is left out is reported on its job. A script job
/// whose own source is over 1 MiB is not imported. Administrators and well-known passwords are
/// counted in the report.
#[tokio::test(flavor = "multi_thread")]
async fn script_history_is_bounded_and_users_are_reported() {
    let xxl = XxlDb::new("3.5").await;
    xxl.exec("INSERT INTO xxl_job_group (id, app_name, name, address_type, address_list) VALUES (1, 'scripts', 'Scripts', 0, NULL)")
        .await;
    let cols = "id, job_group, name, author, schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, \
                executor_handler, executor_param, executor_block_strategy, glue_type, glue_source, glue_updatetime, \
                child_jobid, trigger_status, trigger_last_time, trigger_next_time";
    xxl.exec(&format!(
        "INSERT INTO xxl_job_info ({cols}) VALUES \
         (1, 1, 'long history', 'ops', 'NONE', '', 'DO_NOTHING', 'FIRST', '', '', 'SERIAL_EXECUTION', 'GLUE_SHELL', \
          'echo now', NOW(), '', 0, 0, 0), \
         (2, 1, 'huge script', 'ops', 'NONE', '', 'DO_NOTHING', 'FIRST', '', '', 'SERIAL_EXECUTION', 'GLUE_SHELL', \
          REPEAT('#', 2 * 1024 * 1024), NOW(), '', 0, 0, 0)"
    ))
    .await;
    // 40 versions of job 1, a minute apart; the newest but one of 2 MiB, the one before of a
    // type Chime does not know.
    let now = now_ms();
    let mut rows = Vec::new();
    for i in 0..40i64 {
        let at = dt(now - (40 - i) * 60_000);
        let (glue_type, source) = match i {
            38 => ("GLUE_SHELL", "REPEAT('x', 2 * 1024 * 1024)".to_owned()),
            37 => ("GLUE_COBOL", "'DISPLAY 1.'".to_owned()),
            _ => ("GLUE_SHELL", format!("'echo {i}'")),
        };
        rows.push(format!("(1, '{glue_type}', {source}, 'v{i}', {at}, {at})"));
    }
    xxl.exec(&format!(
        "INSERT INTO xxl_job_logglue (job_id, glue_type, glue_source, glue_remark, add_time, update_time) VALUES {}",
        rows.join(", ")
    ))
    .await;
    xxl.exec(&format!(
        "INSERT INTO xxl_job_user (username, password, role, permission) VALUES \
         ('admin', '{SHA256_123456}', 1, NULL), ('ops', '{SHA256_OPS}', 1, NULL), \
         ('intern', '{}', 0, '1')",
        "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/chime.db", dir.path().display());
    let (code, report, err) = import(&from_into(&xxl, &db));
    assert_eq!(code, 1, "the huge script job is left out: {report}{err}");
    for line in [
        "  ! scripts/xxl-2  not imported: its GLUE source is 2097152 bytes, over the 1024 KiB",
        "      10 older script version(s) left out: the newest 30 are imported",
        "left out: its source is 2097152 bytes, over the 1024 KiB a job's source may have",
        "left out: its type 'GLUE_COBOL' is not one Chime knows",
        "      its password is XXL-JOB's seed password (123456)",
        "      its password is a well-known password (password)",
        "note: users: 3 of 3 read, 2 of them administrators",
        "note: 2 user(s) with a well-known password, which anyone can sign in with: admin, intern",
    ] {
        assert!(report.contains(line), "report lacks {line:?}:\n{report}");
    }
    let mut conn = chime(&db).await;
    let kept: Vec<String> = sqlx::query(
        "SELECT g.remark AS remark FROM glue_version g JOIN job j ON j.id = g.job_id \
         WHERE j.job_key = 'xxl-1' ORDER BY g.created_at",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap()
    .iter()
    .map(|r| text(r, "remark"))
    // The job's current source, saved as a version when the job was created, has no remark.
    .filter(|r| !r.is_empty())
    .collect();
    let want: Vec<String> = (10..40)
        .filter(|i| *i != 37 && *i != 38)
        .map(|i| format!("v{i}"))
        .collect();
    assert_eq!(kept, want, "the newest 30, less the two left out");
    drop(conn);
    xxl.drop_db().await;
}

/// The cut-over: XXL-JOB stopped with one job's fire due while nothing scheduled, and another
/// job's next slot already taken by XXL-JOB. Chime's scheduler, with a real executor, fires
/// the due one once (or skips it, by its misfire policy), never re-fires what XXL-JOB fired,
/// and carries on from XXL-JOB's next trigger time.
#[tokio::test(flavor = "multi_thread")]
async fn a_job_due_during_the_cut_over_fires_once() {
    let xxl = XxlDb::new("2.4").await;
    xxl.exec("INSERT INTO xxl_job_group (id, app_name, title, address_type, address_list) VALUES (1, 'cutover', 'Cut-over', 0, NULL)")
        .await;
    // Slots of ten seconds; k is the current one.
    let k = now_ms() / 10_000;
    let slot = |i: i64| (k + i) * 10_000;
    let cols =
        "id, job_group, job_desc, author, schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, \
                executor_handler, executor_param, executor_block_strategy, glue_type, glue_source, glue_updatetime, \
                child_jobid, trigger_status, trigger_last_time, trigger_next_time";
    xxl.exec(&format!(
        "INSERT INTO xxl_job_info ({cols}) VALUES \
         (1, 1, 'due, fire once now', 'ops', 'CRON', '0/10 * * * * ?', 'FIRE_ONCE_NOW', 'FIRST', 'demoJobHandler', '', \
          'SERIAL_EXECUTION', 'BEAN', '', NOW(), '', 1, {}, {}), \
         (2, 1, 'due, do nothing', 'ops', 'CRON', '0/10 * * * * ?', 'DO_NOTHING', 'FIRST', 'demoJobHandler', '', \
          'SERIAL_EXECUTION', 'BEAN', '', NOW(), '', 1, {}, {}), \
         (3, 1, 'next slot fired by XXL-JOB', 'ops', 'CRON', '0/10 * * * * ?', 'DO_NOTHING', 'FIRST', 'demoJobHandler', \
          '', 'SERIAL_EXECUTION', 'BEAN', '', NOW(), '', 1, {}, {})",
        slot(-2),
        slot(-1),
        slot(-2),
        slot(-1),
        slot(1),
        slot(2),
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/chime.db", dir.path().display());
    let (code, report, err) = import(&["--from", &xxl.url, "--db", &db, "--time-zone", ZONE]);
    assert_eq!(code, 0, "{report}{err}");

    let token = "cut-over-test-token";
    let admin = start_admin_with(&db, "", &["--access-token", token]);
    let port = free_port();
    let _executor = Guard(
        Command::new(BIN)
            .args([
                "executor",
                "--demo-handlers",
                "--appname",
                "cutover",
                "--admin",
                &admin.url,
            ])
            .args(["--listen", &format!("127.0.0.1:{port}"), "--access-token", token])
            .args(["--logdir", &dir.path().join("logs").display().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Until slot 3 has fired and reported.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut conn = chime(&db).await;
    let runs = loop {
        let rows = sqlx::query(
            "SELECT j.job_key AS job_key, r.fire_key AS fire_key, r.trigger_type AS trigger_type, \
             r.handle_code AS handle_code, r.trigger_code AS trigger_code FROM run r JOIN job j ON j.id = r.job_id",
        )
        .fetch_all(&mut conn)
        .await
        .unwrap();
        let runs: Vec<(String, i64, String, i64, i64)> = rows
            .iter()
            .map(|r| {
                (
                    text(r, "job_key"),
                    r.try_get::<Option<i64>, _>("fire_key").unwrap().unwrap_or(0),
                    text(r, "trigger_type"),
                    int(r, "trigger_code"),
                    int(r, "handle_code"),
                )
            })
            .collect();
        let slot3_done = runs.iter().any(|r| r.0 == "xxl-3" && r.1 == slot(3) && r.4 == 200);
        if slot3_done || Instant::now() > deadline {
            break runs;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let count = |key: &str, fire: i64| runs.iter().filter(|r| r.0 == key && r.1 == fire).count();
    // Nothing XXL-JOB fired is fired again.
    for key in ["xxl-1", "xxl-2"] {
        assert!(
            runs.iter().all(|r| r.0 != key || r.1 > slot(-2)),
            "{key} re-fired: {runs:?}"
        );
    }
    assert!(
        runs.iter().all(|r| r.0 != "xxl-3" || r.1 > slot(1)),
        "xxl-3 re-fired XXL-JOB's slot: {runs:?}"
    );
    // The fire due during the cut-over: once for FIRE_ONCE_NOW, as a misfire.
    assert_eq!(count("xxl-1", slot(-1)), 1, "{runs:?}");
    assert!(
        runs.iter()
            .any(|r| r.0 == "xxl-1" && r.1 == slot(-1) && r.2 == "MISFIRE"),
        "{runs:?}"
    );
    // … and not run for DO_NOTHING (at most recorded as skipped).
    assert!(
        runs.iter().all(|r| !(r.0 == "xxl-2" && r.1 == slot(-1) && r.3 == 200)),
        "DO_NOTHING ran a misfire: {runs:?}"
    );
    // XXL-JOB's next trigger time, then the schedule: each slot once, run by the executor.
    assert_eq!(count("xxl-3", slot(2)), 1, "{runs:?}");
    assert_eq!(count("xxl-3", slot(3)), 1, "{runs:?}");
    assert!(
        runs.iter().any(|r| r.0 == "xxl-3" && r.1 == slot(3) && r.4 == 200),
        "slot 3 ran: {runs:?}"
    );
    drop(admin);
    xxl.drop_db().await;
}
