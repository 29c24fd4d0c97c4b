//! Alarms with real servers on loopback: an SMTP server written here (a real SMTP conversation
//! over TCP: EHLO, AUTH PLAIN, MAIL, RCPT, DATA) and an HTTP webhook receiver. A run that fails
//! for good sends exactly one e-mail and one webhook call with the right content; a failure
//! that is retried and a success send none; a restart sends nothing twice; a failure left
//! unclaimed before a stop is alarmed by the next start; a webhook that keeps failing ends as
//! `alarm_status` 3 (failed); two admins claiming the same alarms on PostgreSQL or MariaDB
//! never both win.

mod common;

use common::executor::TestExecutor;
use common::{Api, Db, TestDb, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One message the SMTP server accepted.
#[derive(Debug, Clone, Default)]
struct Mail {
    auth: Option<String>,
    from: String,
    to: Vec<String>,
    data: String,
}

/// A minimal SMTP server: enough of RFC 5321 for a real client to deliver through it.
#[derive(Clone, Default)]
struct SmtpServer {
    mails: Arc<Mutex<Vec<Mail>>>,
}

impl SmtpServer {
    async fn start() -> (SmtpServer, u16) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = SmtpServer::default();
        let s = server.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = s.session(conn).await;
                });
            }
        });
        (server, port)
    }

    async fn session(&self, conn: tokio::net::TcpStream) -> std::io::Result<()> {
        let (r, mut w) = conn.into_split();
        let mut r = BufReader::new(r);
        w.write_all(b"220 test.local ESMTP ready\r\n").await?;
        let mut mail = Mail::default();
        let mut auth = None;
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let cmd = line.trim_end().to_owned();
            let upper = cmd.to_ascii_uppercase();
            let reply: &[u8] = if upper.starts_with("EHLO") {
                b"250-test.local\r\n250-AUTH PLAIN\r\n250 8BITMIME\r\n"
            } else if upper.starts_with("HELO") {
                b"250 test.local\r\n"
            } else if upper.starts_with("AUTH PLAIN ") {
                auth = Some(cmd[11..].trim().to_owned());
                b"235 2.7.0 Authentication successful\r\n"
            } else if upper.starts_with("MAIL FROM:") {
                mail = Mail {
                    auth: auth.clone(),
                    from: cmd[10..].to_owned(),
                    ..Mail::default()
                };
                b"250 2.1.0 Ok\r\n"
            } else if upper.starts_with("RCPT TO:") {
                mail.to.push(cmd[8..].trim().to_owned());
                b"250 2.1.5 Ok\r\n"
            } else if upper == "DATA" {
                w.write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n").await?;
                let mut data = String::new();
                loop {
                    line.clear();
                    if r.read_line(&mut line).await? == 0 {
                        return Ok(());
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    let l = line.strip_prefix('.').unwrap_or(&line);
                    data.push_str(l);
                }
                mail.data = data;
                self.mails.lock().unwrap().push(std::mem::take(&mut mail));
                b"250 2.0.0 Ok: queued\r\n"
            } else if upper == "QUIT" {
                w.write_all(b"221 2.0.0 Bye\r\n").await?;
                return Ok(());
            } else if upper == "RSET" || upper == "NOOP" {
                b"250 2.0.0 Ok\r\n"
            } else {
                b"502 5.5.2 Command not recognized\r\n"
            };
            w.write_all(reply).await?;
        }
    }

    fn mails(&self) -> Vec<Mail> {
        self.mails.lock().unwrap().clone()
    }
}

/// An HTTP server that records JSON POSTs to `/hook` and answers with `status`.
#[derive(Clone)]
struct Webhook {
    calls: Arc<Mutex<Vec<Value>>>,
}

impl Webhook {
    async fn start(status: u16) -> (Webhook, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let hook = Webhook {
            calls: Arc::new(Mutex::new(Vec::new())),
        };
        let calls = hook.calls.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |body: axum::Json<Value>| {
                let calls = calls.clone();
                async move {
                    calls.lock().unwrap().push(body.0);
                    axum::http::StatusCode::from_u16(status).unwrap()
                }
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (hook, url)
    }

    fn calls(&self) -> Vec<Value> {
        self.calls.lock().unwrap().clone()
    }
}

/// Undoes quoted-printable (soft line breaks and `=XX`), which the mail builder uses for long
/// lines, so the test can look for the text.
fn unquote(data: &str) -> String {
    let joined = data.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&joined[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn wait_until(secs: u64, what: &str, mut pred: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !pred() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn statuses(admin: &chime_admin::AdminHandle, ids: &[i64]) -> Vec<i64> {
    admin
        .admin
        .store
        .alarm_statuses(ids)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, s)| s)
        .collect()
}

fn alarm_config(db: &str, smtp_port: u16, webhook: &str) -> chime_admin::AdminConfig {
    let mut c = common::config(db);
    c.smtp_url = Some(format!("smtp://alarm:s3cret@127.0.0.1:{smtp_port}"));
    c.alarm_from = "Chime <chime@test.local>".to_owned();
    c.alarm_webhook = Some(webhook.to_owned());
    c
}

/// A failing job with one retry: the first failure makes a retry and no alarm; the retry's
/// failure sends one e-mail to both contacts and one webhook call. A succeeding job with
/// contacts sends nothing. A restart sends nothing again; a failure recorded without its
/// alarm being claimed (the admin stopped in between) is alarmed once by the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn final_failure_sends_one_mail_and_one_webhook() {
    let (smtp, smtp_port) = SmtpServer::start().await;
    let (hook, hook_url) = Webhook::start(200).await;
    let db = TestDb::new(Db::Sqlite).await;
    let admin = chime_admin::start(alarm_config(&db.url, smtp_port, &hook_url))
        .await
        .unwrap();
    let api = Api::new(admin.local_addr);
    let prefix = format!("http://{}/xxl-job-admin", admin.local_addr);
    api.ok("/v1/groups", json!({"app_name": "alarm", "title": "Alarm tests"}))
        .await;
    let ex = TestExecutor::start(&prefix, "alarm", ACCESS_TOKEN).await;
    api.wait_executors("alarm", 1).await;

    let failing = api
        .ok(
            "/v1/jobs",
            json!({"group": "alarm", "handler": "fail", "schedule_type": "NONE", "retry_count": 1,
                   "description": "<b>Nightly & co</b>",
                   "alarm_contacts": "ops@example.com, dev@example.com"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let fine = api
        .ok(
            "/v1/jobs",
            json!({"group": "alarm", "handler": "ok", "schedule_type": "NONE", "description": "fine",
                   "alarm_contacts": "ops@example.com"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.ok(&format!("/v1/jobs/{fine}/trigger"), json!({})).await;
    api.ok(&format!("/v1/jobs/{failing}/trigger"), json!({})).await;
    let runs = api
        .wait_runs(failing, 30, "the run and its retry failed", |r| {
            r.len() == 2 && r.iter().all(|r| common::status(r) == "failed")
        })
        .await;
    let (last, first) = (runs[0]["id"].as_i64().unwrap(), runs[1]["id"].as_i64().unwrap());
    assert_eq!(runs[0]["trigger_type"], "RETRY");
    api.wait_runs(fine, 30, "the good run succeeded", |r| {
        r.len() == 1 && common::status(&r[0]) == "success"
    })
    .await;
    let fine_run = api.runs(fine).await[0]["id"].as_i64().unwrap();

    wait_until(30, "one e-mail and one webhook call", || {
        !smtp.mails().is_empty() && !hook.calls().is_empty()
    })
    .await;
    // Both alarms are recorded as sent; nothing more arrives for the other runs.
    let deadline = Instant::now() + Duration::from_secs(20);
    while statuses(&admin, &[last]).await != vec![2] {
        assert!(Instant::now() < deadline, "alarm of run {last} not recorded as sent");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mails = smtp.mails();
    assert_eq!(mails.len(), 1, "exactly one e-mail: {mails:?}");
    let m = &mails[0];
    assert_eq!(
        m.auth.as_deref(),
        Some("AGFsYXJtAHMzY3JldA=="),
        "AUTH PLAIN alarm/s3cret"
    );
    assert!(m.from.contains("chime@test.local"), "{}", m.from);
    let mut to = m.to.clone();
    to.sort();
    assert_eq!(to, vec!["<dev@example.com>", "<ops@example.com>"]);
    let body = unquote(&m.data);
    assert!(
        body.contains(&format!("Subject: Chime alarm: job {failing} (")),
        "{body}"
    );
    assert!(body.contains(&format!("run {last}")), "{body}");
    assert!(body.contains("text/html") && body.contains("text/plain"), "{body}");
    // The description is escaped in the HTML part: no markup from a job reaches the mail.
    assert!(body.contains("&lt;b&gt;Nightly &amp; co&lt;/b&gt;"), "{body}");
    let html = body.split("Content-Type: text/html").nth(1).expect("an HTML part");
    assert!(html.contains("<td>") && !html.contains("<b>Nightly"), "{html}");
    assert!(body.contains("failed on http://127.0.0.1"), "handle message: {body}");
    assert!(body.contains("alarm (Alarm tests)"), "group: {body}");
    assert!(body.contains("RETRY"), "trigger type: {body}");

    let calls = hook.calls();
    assert_eq!(calls.len(), 1, "exactly one webhook call: {calls:?}");
    let c = &calls[0];
    assert_eq!(c["run_id"], last);
    assert_eq!(c["job_id"], failing);
    assert_eq!(c["group"], "alarm");
    assert_eq!(c["job_description"], "<b>Nightly & co</b>");
    assert_eq!(c["handle_code"], 500);
    assert!(c["handle_msg"].as_str().unwrap().contains("failed on"), "{c}");
    assert!(c["text"].as_str().unwrap().contains(&format!("job {failing}")), "{c}");
    // First failure: retried (1, no alarm needed), never alarmed; the last: sent (2); the
    // success: untouched.
    let by_id: std::collections::HashMap<i64, i64> = admin
        .admin
        .store
        .alarm_statuses(&[first, last, fine_run])
        .await
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!((by_id[&first], by_id[&last], by_id[&fine_run]), (1, 2, 0));

    // A failure recorded while no admin claimed its alarm (as after a crash between the commit
    // and the claim): the next start's sweep sends it, once.
    let store = admin.admin.store.clone();
    ex.kill();
    admin.shutdown().await;
    drop(store);
    {
        use sqlx::Connection;
        let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
        let now = chime_admin::model::now_ms();
        sqlx::query(
            "INSERT INTO run (job_id, group_id, scheduled_at, trigger_type, triggered_at, trigger_code, trigger_msg, \
             handled_at, handle_code, handle_msg, alarm_status, created_at) \
             VALUES (?, 1, ?, 'CRON', ?, 200, 'sent', ?, 500, 'crashed <script>', 0, ?)",
        )
        .bind(failing)
        .bind(now)
        .bind(now)
        .bind(now)
        .bind(now)
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    let admin = chime_admin::start(alarm_config(&db.url, smtp_port, &hook_url))
        .await
        .unwrap();
    wait_until(30, "the swept alarm", || {
        smtp.mails().len() >= 2 && hook.calls().len() >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mails = smtp.mails();
    assert_eq!(mails.len(), 2, "one more e-mail, for the unclaimed failure only");
    let body = unquote(&mails[1].data);
    assert!(body.contains("crashed &lt;script&gt;"), "{body}");
    assert_eq!(hook.calls().len(), 2);
    assert_ne!(hook.calls()[1]["run_id"], last, "the earlier alarm is not sent again");
    admin.shutdown().await;
    db.drop_db().await;
}

/// A webhook that keeps answering 500 and an SMTP server that is not there: delivery is tried
/// several times, then the run's `alarm_status` is 3 (failed), and the run says why, without
/// the SMTP password or the webhook's URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_webhook_is_retried_then_recorded_as_failed() {
    let (hook, hook_url) = Webhook::start(500).await;
    let db = TestDb::new(Db::Sqlite).await;
    let mut c = common::config(&db.url);
    c.alarm_webhook = Some(hook_url.clone());
    // A port nobody listens on (bound, then freed).
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    c.smtp_url = Some(format!("smtp://alarm:s3cret@127.0.0.1:{closed}"));
    let admin = chime_admin::start(c).await.unwrap();
    let api = Api::new(admin.local_addr);
    // No executor in the group: the send fails, which is a final failure without retries.
    api.ok("/v1/groups", json!({"app_name": "nobody"})).await;
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": "nobody", "handler": "x", "schedule_type": "NONE", "alarm_contacts": "ops@example.com"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await;
    let runs = api
        .wait_runs(job, 30, "the run failed to send", |r| {
            r.len() == 1 && common::status(&r[0]) == "failed"
        })
        .await;
    let run = runs[0]["id"].as_i64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while statuses(&admin, &[run]).await != vec![3] {
        assert!(Instant::now() < deadline, "alarm not recorded as failed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let calls = hook.calls();
    assert!(calls.len() > 1, "delivery was retried: {} call(s)", calls.len());
    assert!(
        calls.iter().all(|c| c["run_id"] == run && c["trigger_code"] != 200),
        "{calls:?}"
    );
    let (_, shown) = api.get(&format!("/v1/runs/{run}")).await;
    assert_eq!(shown["alarm"], "failed", "{shown}");
    let why = shown["alarm_msg"].as_str().unwrap();
    assert!(why.contains("webhook: answered HTTP 500 (after 4 attempts)"), "{why}");
    assert!(why.contains("e-mail: "), "{why}");
    assert!(!why.contains("s3cret") && !why.contains(&hook_url), "no secrets: {why}");
    // Counted for the alert on alarms not delivered (deploy/monitoring/alerts.yml).
    assert_eq!(api.metric(r#"chime_alarms_total{outcome="failed"}"#).await, Some(1.0));
    assert_eq!(api.metric(r#"chime_alarms_total{outcome="sent"}"#).await, None);
    admin.shutdown().await;
    db.drop_db().await;
}

/// Two admins (two stores) claim the same failed runs at the same time: every alarm is claimed
/// by exactly one of them; successes and runs that made a retry by neither.
async fn two_admins_claim_each_alarm_once(kind: Db) {
    let db = TestDb::new(kind).await;
    let backend = chime_admin::store::Backend::from_url(&db.url).unwrap();
    let a = chime_admin::store::Store::connect(&db.url).await.unwrap();
    let b = chime_admin::store::Store::connect(&db.url).await.unwrap();
    let now = chime_admin::model::now_ms();
    let mut failed = Vec::new();
    let mut other = Vec::new();
    let pool = sqlx::AnyPool::connect(&db.url).await.unwrap();
    let insert = backend
        .sql(
            "INSERT INTO run (job_id, group_id, scheduled_at, trigger_type, trigger_code, handle_code, alarm_status, \
             created_at, param, trigger_msg, handle_msg) VALUES (?, 1, ?, 'CRON', ?, ?, ?, ?, '', '', '') RETURNING id",
        )
        .into_owned();
    for i in 0..200_i64 {
        // Kinds: handler failure, send failure, success, failure that made a retry.
        let (trigger, handle, alarm) = match i % 4 {
            0 => (200, 500, 0),
            1 => (500, 0, 0),
            2 => (200, 200, 0),
            _ => (200, 500, 1),
        };
        let id: i64 = sqlx::Row::get(
            &sqlx::query(&insert)
                .bind(i)
                .bind(now)
                .bind(trigger)
                .bind(handle)
                .bind(alarm)
                .bind(now)
                .fetch_one(&pool)
                .await
                .unwrap(),
            0,
        );
        if i % 4 < 2 {
            failed.push(id);
        } else {
            other.push(id);
        }
    }
    pool.close().await;
    let all: Vec<i64> = failed.iter().chain(&other).copied().collect();
    let mut reversed = all.clone();
    reversed.reverse();
    let (ca, cb) = tokio::join!(a.claim_alarms(&all), b.claim_alarms(&reversed));
    let (ca, cb) = (ca.unwrap(), cb.unwrap());
    let mut union: Vec<i64> = ca.iter().chain(&cb).copied().collect();
    union.sort_unstable();
    let total = union.len();
    union.dedup();
    assert_eq!(total, union.len(), "a run was claimed by both admins");
    let mut expected = failed.clone();
    expected.sort_unstable();
    assert_eq!(union, expected, "exactly the final failures are claimed");
    // The sweep sees nothing left to claim.
    assert!(a.unclaimed_alarms(now - 1000, 1000).await.unwrap().is_empty());
    a.close().await;
    b.close().await;
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_claim_each_alarm_once_postgres() {
    two_admins_claim_each_alarm_once(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_admins_claim_each_alarm_once_mariadb() {
    two_admins_claim_each_alarm_once(Db::MySql).await;
}
