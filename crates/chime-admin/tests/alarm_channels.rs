//! Named alarm channels against receivers that check each request as the vendors do
//! (`common::receivers`): DingTalk and Feishu with their signatures, WeCom, Slack, Teams
//! Workflows and Chime's signed webhook each get exactly one verified message per run that
//! fails for good, carrying the job, the run, the failure and the link; a group's channels
//! serve its jobs that name none; secrets and URL tokens are never shown; the REST API refuses
//! what it cannot send; a receiver that fails once gets the message on the next attempt, one
//! that hangs ends the delivery as failed on the time limit; a test message says whether it
//! arrived; a delivery left pending by an admin killed with SIGKILL is sent once by the next
//! start. The module `receivers` proves the receivers themselves first.

mod common;

use common::demo_executor::DemoExecutor;
use common::executor::TestExecutor;
use common::receivers::{self as rx, Behaviour, Receiver, Recorded, Vendor};
use common::{eventually, Db, Env, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const PUBLIC_URL: &str = "https://chime.example.test";

/// Sets the alarm settings of `config` from `settings` (the TOML keys as JSON), through the
/// configuration's own (de)serialisation: the settings the contract names, whatever their Rust
/// types.
fn with_settings(config: &mut chime_admin::AdminConfig, settings: Value) {
    let mut all = serde_json::to_value(&*config).expect("the settings serialise");
    for (k, v) in settings.as_object().expect("an object of settings") {
        all[k] = v.clone();
    }
    *config = serde_json::from_value(all).unwrap_or_else(|e| panic!("settings {settings}: {e}"));
}

/// An admin on SQLite with fast alarm settings (`extra` overrides them), linking to
/// [`PUBLIC_URL`].
async fn admin(extra: Value) -> Env {
    let mut settings = json!({
        "alarm_attempts": 3,
        "alarm_retry_pause": "100ms",
        "alarm_timeout": "2s",
        "public_url": PUBLIC_URL,
    });
    for (k, v) in extra.as_object().unwrap() {
        settings[k] = v.clone();
    }
    Env::start_with(Db::Sqlite, |c| with_settings(c, settings)).await
}

/// Creates channel `name` of the receiver's kind, pointing at it, with `secret`; returns the
/// answer (checked: 201, no secret, no token).
async fn channel(env: &Env, name: &str, r: &Receiver, secret: Option<&str>) -> Value {
    let mut body = json!({"name": name, "kind": r.vendor().kind(), "url": r.url()});
    if let Some(s) = secret {
        body["secret"] = json!(s);
    }
    let (s, v) = env.api.post("/v1/alarm-channels", body).await;
    assert_eq!(s, 201, "create channel {name}: {v}");
    assert_eq!(v["name"], name, "{v}");
    assert_eq!(v["kind"], r.vendor().kind(), "{v}");
    assert_eq!(v["secret_set"], secret.is_some(), "{v}");
    assert_no_secrets(&v, r, secret);
    v
}

/// Neither the secret nor the URL's token nor its path appears anywhere in `answer`; its `url`
/// (when it is one channel) shows the receiver's origin at most.
fn assert_no_secrets(answer: &Value, r: &Receiver, secret: Option<&str>) {
    let text = answer.to_string();
    assert!(!text.contains(r.token()), "the URL's token is shown: {text}");
    if let Some(s) = secret {
        assert!(!text.contains(s), "the secret is shown: {text}");
    }
    for part in [
        "robot/send",
        "bot/v2/hook",
        "webhook/send",
        "/services/",
        "/workflows/",
        "/hooks/",
    ] {
        assert!(!text.contains(part), "the URL's path ({part}) is shown: {text}");
    }
    if let Some(url) = answer.get("url").and_then(Value::as_str) {
        assert!(
            url.starts_with(&r.origin()),
            "redacted URL keeps scheme://host:port: {url}"
        );
    }
}

/// A group `app` served by a test executor (its `fail` handler fails with "failed on …").
async fn group_with_executor(env: &Env, app: &str, extra: Value) -> TestExecutor {
    let mut body = json!({"app_name": app, "title": format!("{app} title")});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    env.api.ok("/v1/groups", body).await;
    let ex = TestExecutor::start(&env.prefix, app, ACCESS_TOKEN).await;
    env.api.wait_executors(app, 1).await;
    ex
}

/// A group `app` served by a real `chime executor --demo-handlers` process: its
/// `failJobHandler` fails, its `demoJobHandler` succeeds. The admin must allow its 30 s beats
/// (`admin(json!({"dead_timeout": "90s"}))`).
async fn group_with_real_executor(env: &Env, app: &str) -> DemoExecutor {
    env.api
        .ok("/v1/groups", json!({"app_name": app, "title": format!("{app} title")}))
        .await;
    let ex = DemoExecutor::start(&env.prefix, app);
    env.api.wait_executors(app, 1).await;
    ex
}

/// A job of `app` that fails for good (handler `fail`, no retry), naming `channels`.
async fn failing_job(env: &Env, app: &str, description: &str, channels: Option<&str>) -> i64 {
    let mut body = json!({"group": app, "handler": "fail", "schedule_type": "NONE", "retry_count": 0,
                          "description": description});
    if let Some(c) = channels {
        body["alarm_channels"] = json!(c);
    }
    env.job(body).await
}

/// Triggers `job` and waits until its run failed; returns the run id.
async fn fail_once(env: &Env, job: i64) -> i64 {
    let run = env.trigger(job, json!({})).await;
    env.run_with_status(run, "failed").await;
    run
}

/// The run's deliveries (`GET /v1/runs/{id}/alarms`).
async fn deliveries(api: &common::Api, run: i64) -> Vec<Value> {
    let (s, v) = api.get(&format!("/v1/runs/{run}/alarms")).await;
    assert_eq!(s, 200, "GET /v1/runs/{run}/alarms: {v}");
    v.as_array().cloned().unwrap_or_default()
}

/// Waits until the delivery of `run` through `channel` has `state`; returns it.
async fn delivery_in_state(api: &common::Api, run: i64, channel: &str, state: &str, secs: u64) -> Value {
    eventually(
        secs,
        &format!("delivery of run {run} via {channel} {state}"),
        || async {
            let all = deliveries(api, run).await;
            match all.iter().find(|d| d["channel"] == channel) {
                Some(d) if d["state"] == state => Ok(d.clone()),
                _ => Err(format!("{all:?}")),
            }
        },
    )
    .await
}

/// Waits until the run's alarm is `wanted` ("sent" or "failed": alarm_status 2 or 3).
async fn run_alarm(api: &common::Api, run: i64, wanted: &str, secs: u64) -> Value {
    eventually(secs, &format!("run {run} alarm {wanted}"), || async {
        let (s, v) = api.get(&format!("/v1/runs/{run}")).await;
        if s == 200 && v["alarm"] == wanted {
            Ok(v)
        } else {
            Err(format!("{s} {v}"))
        }
    })
    .await
}

/// The numbers written in `text` (each maximal run of digits).
fn numbers(text: &str) -> Vec<i64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty() && s.len() < 18)
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// The message carries the job (id and description), the group, the run (in the link), and
/// the failure's message.
fn assert_message(req: &Recorded, job: i64, run: i64, description: &str, app: &str) {
    let text = req.text();
    assert!(text.contains(description), "job description missing: {text}");
    assert!(text.contains(app), "group missing: {text}");
    assert!(
        text.contains("failed on http://127.0.0.1"),
        "failure message missing: {text}"
    );
    assert!(
        text.contains(&format!("{PUBLIC_URL}/#/runs/{run}")),
        "link to the run missing: {text}"
    );
    let found = numbers(&text);
    assert!(found.contains(&job), "job id {job} missing: {text}");
    assert!(found.contains(&run), "run id {run} missing: {text}");
}

/// One vendor end to end: channel created, job names it, run fails for good → exactly one
/// request, verified when signed, accepted, carrying the message; the delivery `sent` after
/// one attempt and the run's alarm sent (2).
async fn end_to_end(vendor: Vendor, admin_secret: Option<&str>) -> (Env, Receiver, i64) {
    let r = Receiver::start(vendor, Behaviour::Normal).await;
    let kind = r.vendor().kind();
    let env = admin(json!({})).await;
    let name = format!("{kind}-ops");
    channel(&env, &name, &r, admin_secret).await;
    let app = format!("app-{kind}");
    let _ex = group_with_executor(&env, &app, json!({})).await;
    let description = format!("nightly {kind} report 7f3a");
    let job = failing_job(&env, &app, &description, Some(&name)).await;
    let run = fail_once(&env, job).await;

    let got = r.wait_accepted(1, 20).await;
    let d = delivery_in_state(&env.api, run, &name, "sent", 20).await;
    assert_eq!(d["kind"], kind, "{d}");
    assert_eq!(d["attempts"], 1, "{d}");
    assert!(d["sent_at"].as_i64().is_some() || d["sent_at"].is_string(), "{d}");
    run_alarm(&env.api, run, "sent", 20).await;
    let status = env.admin.admin.store.alarm_statuses(&[run]).await.unwrap();
    assert_eq!(status, vec![(run, 2)], "alarm_status 2 (sent)");
    // Nothing more arrives.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let all = r.requests();
    assert_eq!(all.len(), 1, "exactly one request: {all:#?}");
    let req = &got[0];
    assert_eq!(req.method, "POST");
    assert!(
        req.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "{req:?}"
    );
    if admin_secret.is_some() {
        assert_eq!(req.verified, Some(true), "signature verified: {req:#?}");
        assert_eq!(r.verified_count(), 1);
    }
    assert_message(req, job, run, &description, &app);
    (env, r, run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dingtalk_signed_markdown_is_delivered_once() {
    let secret = "SECd1n6741k5ecre7";
    let (env, r, _) = end_to_end(
        Vendor::DingTalk {
            secret: Some(secret.into()),
        },
        Some(secret),
    )
    .await;
    let req = &r.requests()[0];
    let body = req.json.as_ref().unwrap();
    assert_eq!(body["msgtype"], "markdown", "{body}");
    assert!(
        req.param("timestamp").is_some() && req.param("sign").is_some(),
        "{req:?}"
    );
    // Counted by kind and outcome.
    let sent = env
        .api
        .metric(r#"chime_alarm_deliveries_total{kind="dingtalk",outcome="sent"}"#)
        .await;
    assert!(sent.is_some_and(|n| n >= 1.0), "metric: {sent:?}");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn feishu_signed_message_is_delivered_once() {
    let secret = "f3i5hu-secret";
    let (env, r, _) = end_to_end(
        Vendor::Feishu {
            secret: Some(secret.into()),
        },
        Some(secret),
    )
    .await;
    let body = r.requests()[0].json.clone().unwrap();
    assert!(
        matches!(body["msg_type"].as_str(), Some("interactive" | "text")),
        "{body}"
    );
    assert!(body["timestamp"].is_string() && body["sign"].is_string(), "{body}");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wecom_markdown_is_delivered_once() {
    let (env, r, _) = end_to_end(Vendor::WeCom, None).await;
    let body = r.requests()[0].json.clone().unwrap();
    assert_eq!(body["msgtype"], "markdown", "{body}");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slack_message_is_delivered_once() {
    let (env, r, _) = end_to_end(Vendor::Slack, None).await;
    let body = r.requests()[0].json.clone().unwrap();
    assert!(body["text"].as_str().is_some_and(|t| !t.is_empty()), "{body}");
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn teams_adaptive_card_is_delivered_once() {
    let (env, r, _) = end_to_end(Vendor::Teams, None).await;
    assert_eq!(r.requests()[0].status, 202);
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn signed_webhook_is_delivered_once() {
    let secret = "hook-secret-99";
    let (env, r, run) = end_to_end(
        Vendor::Webhook {
            secret: Some(secret.into()),
        },
        Some(secret),
    )
    .await;
    let req = &r.requests()[0];
    let body = req.json.as_ref().unwrap();
    // The default body: Chime's alarm JSON, as the global webhook sends it.
    assert_eq!(body["run_id"], run, "{body}");
    assert!(body["job_id"].as_i64().is_some(), "{body}");
    assert!(req
        .header("x-chime-signature")
        .is_some_and(|s| s.starts_with("sha256=")));
    env.close().await;
}

/// A job naming no channel alarms through its group's; a job naming its own goes there only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_channels_serve_jobs_naming_none() {
    let group_rx = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    let own_rx = Receiver::start(Vendor::WeCom, Behaviour::Normal).await;
    let env = admin(json!({})).await;
    channel(&env, "team-slack", &group_rx, None).await;
    channel(&env, "own-wecom", &own_rx, None).await;
    let app = "grouped";
    let _ex = group_with_executor(&env, app, json!({"alarm_channels": "team-slack"})).await;
    let (_, g) = env.api.get(&format!("/v1/groups/{app}")).await;
    assert_eq!(g["alarm_channels"], "team-slack", "{g}");

    let inherits = failing_job(&env, app, "inherits the group's channel", None).await;
    let run = fail_once(&env, inherits).await;
    let got = group_rx.wait_accepted(1, 20).await;
    assert!(
        got[0].text().contains("inherits the group's channel"),
        "{}",
        got[0].text()
    );
    delivery_in_state(&env.api, run, "team-slack", "sent", 20).await;
    run_alarm(&env.api, run, "sent", 20).await;

    let own = failing_job(&env, app, "names its own channel", Some("own-wecom")).await;
    let run2 = fail_once(&env, own).await;
    own_rx.wait_accepted(1, 20).await;
    delivery_in_state(&env.api, run2, "own-wecom", "sent", 20).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        group_rx.requests().len(),
        1,
        "the group's channel is not used for job {own}"
    );
    assert_eq!(own_rx.requests().len(), 1);
    let names: Vec<Value> = deliveries(&env.api, run2)
        .await
        .iter()
        .map(|d| d["channel"].clone())
        .collect();
    assert!(!names.contains(&json!("team-slack")), "{names:?}");
    env.close().await;
}

/// Create, get, list and update never show the secret nor the URL's token or path; an update
/// without `url` and `secret` keeps both, so the next message still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn secrets_are_never_returned_and_kept_on_update() {
    let secret = "SECkeep-me-4242";
    let ding = Receiver::start(
        Vendor::DingTalk {
            secret: Some(secret.into()),
        },
        Behaviour::Normal,
    )
    .await;
    let feishu_secret = "feishu-keep-77";
    let feishu = Receiver::start(
        Vendor::Feishu {
            secret: Some(feishu_secret.into()),
        },
        Behaviour::Normal,
    )
    .await;
    let env = admin(json!({})).await;
    let created = channel(&env, "ding", &ding, Some(secret)).await;
    let id = created["id"].as_i64().expect("an id");
    let fid = channel(&env, "fei", &feishu, Some(feishu_secret)).await["id"]
        .as_i64()
        .unwrap();

    let (s, got) = env.api.get(&format!("/v1/alarm-channels/{id}")).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(got["secret_set"], true);
    assert_no_secrets(&got, &ding, Some(secret));
    let (s, list) = env.api.get("/v1/alarm-channels").await;
    assert_eq!(s, 200, "{list}");
    assert_eq!(list.as_array().map(Vec::len), Some(2), "{list}");
    assert_no_secrets(&list, &ding, Some(secret));
    assert_no_secrets(&list, &feishu, Some(feishu_secret));

    // Renamed, url and secret omitted (DingTalk) or null (Feishu): both kept.
    let (s, put) = env
        .api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/alarm-channels/{id}"),
            Some(json!({"name": "ding-renamed", "kind": "dingtalk"})),
        )
        .await;
    assert_eq!(s, 200, "{put}");
    assert_eq!(put["name"], "ding-renamed");
    assert_eq!(put["secret_set"], true, "{put}");
    assert_no_secrets(&put, &ding, Some(secret));
    let (s, put) = env
        .api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/alarm-channels/{fid}"),
            Some(json!({"name": "fei", "kind": "feishu", "url": null, "secret": null})),
        )
        .await;
    assert_eq!(s, 200, "{put}");
    assert_eq!(put["secret_set"], true, "{put}");
    assert_no_secrets(&put, &feishu, Some(feishu_secret));

    // The kept URL and secret still reach and satisfy the receivers.
    for (cid, r) in [(id, &ding), (fid, &feishu)] {
        let (s, v) = env.api.post(&format!("/v1/alarm-channels/{cid}/test"), json!({})).await;
        assert_eq!(s, 200, "test send: {v}");
        assert_eq!(v["delivered"], true, "{v}");
        let reqs = r.wait_accepted(1, 10).await;
        assert_eq!(reqs[0].verified, Some(true), "{:#?}", reqs[0]);
    }
    // The audit trail does not keep them either.
    let (_, audit) = env.api.get("/v1/audit").await;
    let audit = audit.to_string();
    assert!(
        !audit.contains(secret) && !audit.contains(ding.token()),
        "audit: {audit}"
    );
    env.close().await;
}

/// What the REST API refuses: unknown kinds, bad URLs, secrets where a kind takes none, e-mail
/// without recipients or with a URL, bad or duplicate names, unknown fields, a job or group
/// naming an unknown channel, deleting a channel in use.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_channels_and_references_are_refused() {
    let env = admin(json!({})).await;
    let ok_url = "http://127.0.0.1:9/hooks/x";
    let refused = [
        (json!({"name": "a", "kind": "pagerduty", "url": ok_url}), "kind"),
        (
            json!({"name": "a", "kind": "webhook", "url": "ftp://example.com/x"}),
            "url",
        ),
        (json!({"name": "a", "kind": "webhook", "url": "not a url"}), "url"),
        (json!({"name": "a", "kind": "webhook", "url": "http://"}), "url"),
        (json!({"name": "a", "kind": "slack"}), "url"),
        (
            json!({"name": "a", "kind": "slack", "url": ok_url, "secret": "s"}),
            "secret",
        ),
        (
            json!({"name": "a", "kind": "teams", "url": ok_url, "secret": "s"}),
            "secret",
        ),
        (
            json!({"name": "a", "kind": "wecom", "url": ok_url, "secret": "s"}),
            "secret",
        ),
        (json!({"name": "a", "kind": "email"}), "recipients"),
        (
            json!({"name": "a", "kind": "email", "recipients": "ops@example.com", "url": ok_url}),
            "url",
        ),
        (
            json!({"name": "a", "kind": "slack", "url": ok_url, "template": "{\"a\":\"${job}\"}"}),
            "template",
        ),
        (json!({"name": "bad name!", "kind": "webhook", "url": ok_url}), "name"),
        (
            json!({"name": "x".repeat(65), "kind": "webhook", "url": ok_url}),
            "name",
        ),
        (json!({"name": "", "kind": "webhook", "url": ok_url}), "name"),
    ];
    for (body, field) in refused {
        let (s, v) = env.api.post("/v1/alarm-channels", body.clone()).await;
        // A kind that is not one is malformed JSON for the body's type (400), like any unknown
        // enum value of the API; every other refusal is a value the type reads but the admin
        // cannot accept (422). Both name the field.
        assert!(s == 422 || (s == 400 && field == "kind"), "{body} → {s} {v}");
        assert!(v.to_string().contains(field), "{body}: the answer names {field}: {v}");
    }
    let (s, v) = env
        .api
        .post(
            "/v1/alarm-channels",
            json!({"name": "a", "kind": "webhook", "url": ok_url, "colour": "red"}),
        )
        .await;
    assert!(s == 400 || s == 422, "unknown field: {s} {v}");
    let (s, v) = env.api.get("/v1/alarm-channels").await;
    assert_eq!(v, json!([]), "nothing was stored: {s} {v}");

    // Accepted: each kind with what it needs.
    let hook = env
        .api
        .ok(
            "/v1/alarm-channels",
            json!({"name": "hook.main_1", "kind": "webhook", "url": ok_url, "secret": "s",
                   "template": "{\"text\":\"job ${job_id} failed: ${result}\"}"}),
        )
        .await;
    env.api
        .ok(
            "/v1/alarm-channels",
            json!({"name": "mail", "kind": "email", "recipients": "ops@example.com, dev@example.com"}),
        )
        .await;
    let (s, v) = env
        .api
        .post(
            "/v1/alarm-channels",
            json!({"name": "hook.main_1", "kind": "slack", "url": ok_url}),
        )
        .await;
    assert_eq!(s, 409, "duplicate name: {v}");

    // Jobs and groups may name only channels that exist.
    env.api.ok("/v1/groups", json!({"app_name": "refs"})).await;
    let (s, v) = env
        .api
        .post(
            "/v1/jobs",
            json!({"group": "refs", "handler": "h", "schedule_type": "NONE", "alarm_channels": "hook.main_1,nope"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("alarm_channels"), "names the field: {v}");
    let (s, v) = env
        .api
        .post("/v1/groups", json!({"app_name": "refs2", "alarm_channels": "nope"}))
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("alarm_channels"), "names the field: {v}");

    // In use by a job, then by a group: not deleted.
    let job = env
        .job(json!({"group": "refs", "handler": "h", "schedule_type": "NONE", "alarm_channels": "hook.main_1"}))
        .await;
    let (_, shown) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(shown["alarm_channels"], "hook.main_1", "{shown}");
    let hook_id = hook["id"].as_i64().unwrap();
    let (s, v) = env
        .api
        .call(reqwest::Method::DELETE, &format!("/v1/alarm-channels/{hook_id}"), None)
        .await;
    assert_eq!(s, 409, "in use by job {job}: {v}");
    let (s, v) = env
        .api
        .call(reqwest::Method::DELETE, &format!("/v1/jobs/{job}"), None)
        .await;
    assert!((200..300).contains(&s), "{v}");
    env.api
        .ok(
            "/v1/groups",
            json!({"app_name": "refs3", "alarm_channels": "hook.main_1"}),
        )
        .await;
    let (s, v) = env
        .api
        .call(reqwest::Method::DELETE, &format!("/v1/alarm-channels/{hook_id}"), None)
        .await;
    assert_eq!(s, 409, "in use by group refs3: {v}");
    let (s, v) = env
        .api
        .call(
            reqwest::Method::PUT,
            "/v1/groups/refs3",
            Some(json!({"app_name": "refs3", "alarm_channels": ""})),
        )
        .await;
    assert!((200..300).contains(&s), "{v}");
    let (s, v) = env
        .api
        .call(reqwest::Method::DELETE, &format!("/v1/alarm-channels/{hook_id}"), None)
        .await;
    assert_eq!(s, 204, "no longer in use: {v}");
    let (s, _) = env.api.get(&format!("/v1/alarm-channels/{hook_id}")).await;
    assert_eq!(s, 404);
    env.close().await;
}

/// A receiver that answers 500 once: the second attempt delivers; two requests, the second
/// accepted; the delivery `sent` after 2 attempts, the retry counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_attempt_is_retried() {
    let r = Receiver::start(
        Vendor::Webhook {
            secret: Some("retry-secret".into()),
        },
        Behaviour::FailFirst(1),
    )
    .await;
    let env = admin(json!({})).await;
    channel(&env, "flaky", &r, Some("retry-secret")).await;
    let _ex = group_with_executor(&env, "retry", json!({})).await;
    let job = failing_job(&env, "retry", "retried alarm", Some("flaky")).await;
    let run = fail_once(&env, job).await;
    let d = delivery_in_state(&env.api, run, "flaky", "sent", 20).await;
    assert_eq!(d["attempts"], 2, "{d}");
    run_alarm(&env.api, run, "sent", 10).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let all = r.requests();
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!((all[0].status, all[1].status), (500, 200));
    assert!(all.iter().all(|q| q.verified == Some(true)), "both signed: {all:#?}");
    assert_eq!(r.accepted_count(), 1);
    let retried = env
        .api
        .metric(r#"chime_alarm_deliveries_total{kind="webhook",outcome="retried"}"#)
        .await;
    assert!(retried.is_some_and(|n| n >= 1.0), "{retried:?}");
    env.close().await;
}

/// A receiver that never answers, `alarm_timeout` 1 s and 2 attempts: the delivery fails
/// within seconds, saying it timed out, and the run's alarm is failed (3).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hanging_receiver_times_out() {
    let r = Receiver::start(Vendor::Webhook { secret: None }, Behaviour::Hang).await;
    let env = admin(json!({"alarm_timeout": "1s", "alarm_attempts": 2})).await;
    channel(&env, "black-hole", &r, None).await;
    let _ex = group_with_executor(&env, "hang", json!({})).await;
    let job = failing_job(&env, "hang", "alarm into the void", Some("black-hole")).await;
    let run = fail_once(&env, job).await;
    let started = Instant::now();
    let d = delivery_in_state(&env.api, run, "black-hole", "failed", 10).await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(d["attempts"], 2, "{d}");
    let error = d["error"].as_str().unwrap_or_default().to_ascii_lowercase();
    assert!(error.contains("timeout") || error.contains("timed out"), "error: {d}");
    assert!(!error.contains(r.token()), "no URL token in the error: {d}");
    let shown = run_alarm(&env.api, run, "failed", 10).await;
    assert!(
        shown["alarm_msg"].as_str().unwrap_or("").contains("black-hole"),
        "{shown}"
    );
    assert_eq!(
        env.admin.admin.store.alarm_statuses(&[run]).await.unwrap(),
        vec![(run, 3)]
    );
    assert_eq!(r.requests().len(), 2, "one request per attempt");
    env.close().await;
}

/// The test button: 200 delivered for a receiver that accepts; 502 with the vendor's reason
/// (without URL or secret) for one that refuses the signature or the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn test_send_reports_delivery() {
    let good = Receiver::start(
        Vendor::DingTalk {
            secret: Some("SECright".into()),
        },
        Behaviour::Normal,
    )
    .await;
    let bad = Receiver::start(
        Vendor::DingTalk {
            secret: Some("SECright".into()),
        },
        Behaviour::Normal,
    )
    .await;
    let wecom = Receiver::start(Vendor::WeCom, Behaviour::Normal).await;
    let env = admin(json!({})).await;
    let good_id = channel(&env, "good", &good, Some("SECright")).await["id"]
        .as_i64()
        .unwrap();
    let bad_id = channel(&env, "bad", &bad, Some("SECwrong")).await["id"]
        .as_i64()
        .unwrap();
    let (s, wrong_key) = env
        .api
        .post(
            "/v1/alarm-channels",
            json!({"name": "wrong-key", "kind": "wecom", "url": wecom.url_with_wrong_token()}),
        )
        .await;
    assert_eq!(s, 201, "{wrong_key}");

    let (s, v) = env
        .api
        .post(&format!("/v1/alarm-channels/{good_id}/test"), json!({}))
        .await;
    assert_eq!((s, &v["delivered"]), (200, &json!(true)), "{v}");
    let got = good.wait_accepted(1, 5).await;
    assert_eq!(got[0].verified, Some(true));

    let (s, v) = env
        .api
        .post(&format!("/v1/alarm-channels/{bad_id}/test"), json!({}))
        .await;
    assert_eq!(s, 502, "{v}");
    let why = v["error"].as_str().unwrap_or_default();
    assert!(why.contains("310000"), "the vendor's errcode: {v}");
    assert!(!why.contains("SECwrong") && !why.contains(bad.token()), "{v}");
    let seen = bad.wait_requests(1, 5).await;
    assert_eq!(seen.len(), 1, "one attempt, no retry");
    assert_eq!(seen[0].verified, Some(false));

    let wid = wrong_key["id"].as_i64().unwrap();
    let (s, v) = env.api.post(&format!("/v1/alarm-channels/{wid}/test"), json!({})).await;
    assert_eq!(s, 502, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("93000"), "{v}");
    assert_eq!(wecom.requests().len(), 1);
    let (s, _) = env.api.post("/v1/alarm-channels/999999/test", json!({})).await;
    assert_eq!(s, 404);
    env.close().await;
}

/// A delivery pending at a receiver that is down when the admin is killed with SIGKILL: the
/// restarted admin sends it once the receiver is up, exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pending_delivery_survives_kill_9() {
    use common::admin_process::AdminProcess;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/chime.db", dir.path().display());
    let mut admin = AdminProcess::start(
        &db,
        "alarm-k9",
        &[
            "--alarm-attempts",
            "1000",
            "--alarm-retry-pause",
            "200ms",
            "--alarm-timeout",
            "1s",
        ],
        dir.path(),
        false,
    );
    admin.wait_ready().await;
    let api = admin.api();
    let secret = "k9-secret";
    let r = Receiver::start(
        Vendor::Webhook {
            secret: Some(secret.into()),
        },
        Behaviour::Down,
    )
    .await;
    let (s, v) = api
        .post(
            "/v1/alarm-channels",
            json!({"name": "k9", "kind": "webhook", "url": r.url(), "secret": secret}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    // No executor in the group: the trigger fails, a failure for good.
    api.ok("/v1/groups", json!({"app_name": "k9"})).await;
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": "k9", "handler": "x", "schedule_type": "NONE", "alarm_channels": "k9"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.ok(&format!("/v1/jobs/{job}/trigger"), json!({})).await;
    let runs = api
        .wait_runs(job, 30, "the run failed", |r| {
            r.len() == 1 && common::status(&r[0]) == "failed"
        })
        .await;
    let run = runs[0]["id"].as_i64().unwrap();
    // An attempt is counted when its lease is taken, and its error written when it ends: wait
    // for a failed attempt's error, not only for the count.
    let pending = eventually(20, "a pending delivery with a failed attempt", || async {
        let all = deliveries(&api, run).await;
        match all.iter().find(|d| d["channel"] == "k9") {
            Some(d)
                if d["state"] == "pending"
                    && d["attempts"].as_i64().unwrap_or(0) >= 1
                    && d["error"].as_str().is_some_and(|e| !e.is_empty()) =>
            {
                Ok(d.clone())
            }
            _ => Err(format!("{all:?}")),
        }
    })
    .await;
    assert_eq!(pending["sent_at"], 0, "{pending}");
    assert!(r.requests().is_empty(), "the receiver was down");

    admin.kill_9();
    r.up().await;
    admin.spawn();
    admin.wait_ready().await;
    let got = r.wait_accepted(1, 30).await;
    assert_eq!(got[0].verified, Some(true), "{:#?}", got[0]);
    assert_eq!(got[0].json.as_ref().unwrap()["run_id"], run);
    delivery_in_state(&api, run, "k9", "sent", 15).await;
    run_alarm(&api, run, "sent", 15).await;
    // Nothing more: the restarted admin does not send it again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let all = r.requests();
    assert_eq!(all.len(), 1, "exactly one request after the restart: {all:#?}");
}

/// `alarm_policy`: with `after_failures=2` only the 2nd failure in a row (and the 4th, …)
/// alarms, the others say why on the run; with `on_recovery` the first success after the
/// alarmed failure is told to the same channel, once; a policy that does not read is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_policy_waits_for_failures_in_a_row_and_tells_the_recovery() {
    let env = admin(json!({"dead_timeout": "90s"})).await;
    let slack = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    channel(&env, "team", &slack, None).await;
    let _ex = group_with_real_executor(&env, "policy").await;
    let (s, v) = env
        .api
        .post(
            "/v1/jobs",
            json!({"group": "policy", "handler": "failJobHandler", "schedule_type": "NONE", "alarm_policy": "after_failures=zero"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "alarm_policy", "{v}");
    let job = env
        .job(
            json!({"group": "policy", "handler": "failJobHandler", "schedule_type": "NONE", "retry_count": 0,
                    "description": "flaky import", "alarm_channels": "team",
                    "alarm_policy": " on_recovery, after_failures = 2 "}),
        )
        .await;
    let (_, shown) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(
        shown["alarm_policy"], "after_failures=2,on_recovery",
        "stored as written back: {shown}"
    );

    let first = fail_once(&env, job).await;
    let quiet = run_alarm(&env.api, first, "not_needed", 20).await;
    assert!(
        quiet["alarm_msg"].as_str().unwrap().contains("failure 1 in a row"),
        "{quiet}"
    );
    assert!(deliveries(&env.api, first).await.is_empty());
    let second = fail_once(&env, job).await;
    delivery_in_state(&env.api, second, "team", "sent", 20).await;
    run_alarm(&env.api, second, "sent", 20).await;
    let third = fail_once(&env, job).await;
    let quiet = run_alarm(&env.api, third, "not_needed", 20).await;
    assert!(
        quiet["alarm_msg"].as_str().unwrap().contains("failure 3 in a row"),
        "{quiet}"
    );
    assert_eq!(slack.accepted_count(), 1, "only the 2nd failure alarmed");

    // The job works again: its first success is told, once.
    let (s, v) = env
        .api
        .call(
            reqwest::Method::PUT,
            &format!("/v1/jobs/{job}"),
            Some(json!({"handler": "demoJobHandler"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let ok = env.trigger(job, json!({})).await;
    env.run_with_status(ok, "success").await;
    let told = delivery_in_state(&env.api, ok, "team", "sent", 30).await;
    assert_eq!(told["event"], "recovered", "{told}");
    let got = slack.wait_accepted(2, 10).await;
    let text = got[1].text();
    assert!(text.contains("recovered") && text.contains(&ok.to_string()), "{text}");
    let again = env.trigger(job, json!({})).await;
    env.run_with_status(again, "success").await;
    // Two recovery looks later, still one recovery message.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(slack.accepted_count(), 2, "one recovery, not one per success");
    assert!(deliveries(&env.api, again).await.is_empty());
}

/// `alarm_language`: a job's alarms are written in its language (Chinese here) and carry the
/// end of the run's log (read from the executor), a job naming
/// none in the admin's (English by default), an unknown language is refused; `at_most_every`:
/// a second failure within the window is recorded on its run as rate-limited, naming the run
/// that was alarmed, counted, and not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn alarms_speak_the_jobs_language_and_are_rate_limited() {
    let env = admin(json!({"dead_timeout": "90s"})).await;
    let slack = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    channel(&env, "team", &slack, None).await;
    let _ex = group_with_real_executor(&env, "lang").await;
    let (s, v) = env
        .api
        .post(
            "/v1/jobs",
            json!({"group": "lang", "handler": "failJobHandler", "schedule_type": "NONE", "alarm_language": "fr"}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "alarm_language", "{v}");
    let zh = env
        .job(
            json!({"group": "lang", "handler": "failJobHandler", "schedule_type": "NONE", "retry_count": 0,
                    "description": "日终对账", "alarm_channels": "team", "alarm_language": " zh ",
                    "alarm_policy": "at_most_every=1h"}),
        )
        .await;
    let (_, shown) = env.api.get(&format!("/v1/jobs/{zh}")).await;
    assert_eq!(shown["alarm_language"], "zh", "stored trimmed: {shown}");
    assert_eq!(shown["alarm_policy"], "at_most_every=1h", "{shown}");

    let first = fail_once(&env, zh).await;
    delivery_in_state(&env.api, first, "team", "sent", 20).await;
    let got = slack.wait_accepted(1, 10).await;
    let text = got[0].text();
    assert!(
        text.contains("Chime 告警") && text.contains("执行失败"),
        "Chinese subject: {text}"
    );
    assert!(
        text.contains("执行结果") && text.contains("日终对账"),
        "Chinese labels: {text}"
    );
    assert!(!text.contains("Chime alarm"), "no English subject: {text}");
    assert!(
        text.contains("日志（末尾）") && text.contains("failing: failJobHandler failed"),
        "the end of the run's log: {text}"
    );

    let second = fail_once(&env, zh).await;
    let limited = run_alarm(&env.api, second, "not_needed", 20).await;
    let why = limited["alarm_msg"].as_str().unwrap();
    assert!(
        why.contains("rate-limited") && why.contains(&first.to_string()),
        "{limited}"
    );
    assert!(deliveries(&env.api, second).await.is_empty());
    assert_eq!(env.api.metric("chime_alarms_rate_limited_total").await, Some(1.0));

    let en = env
        .job(
            json!({"group": "lang", "handler": "failJobHandler", "schedule_type": "NONE", "retry_count": 0,
                    "description": "nightly export", "alarm_channels": "team"}),
        )
        .await;
    let run = fail_once(&env, en).await;
    delivery_in_state(&env.api, run, "team", "sent", 20).await;
    let got = slack.wait_accepted(2, 10).await;
    let text = got[1].text();
    assert!(
        text.contains("Chime alarm") && text.contains("failed"),
        "English by default: {text}"
    );
    assert_eq!(slack.accepted_count(), 2, "the rate-limited failure was not sent");
}

/// Failures that come together are told in a digest: with `alarm_digest_at` 3, five jobs
/// failing at once reach their channel in fewer messages than failures, one of them a digest
/// listing several, every failure told exactly once, each delivery `sent`, the digest counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failures_that_come_together_are_told_in_one_digest() {
    let env = admin(json!({"alarm_digest_at": 3})).await;
    let slack = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    channel(&env, "burst", &slack, None).await;
    let _ex = group_with_executor(&env, "burst", json!({})).await;
    let mut jobs = Vec::new();
    for i in 0..5 {
        jobs.push(failing_job(&env, "burst", &format!("burst job {i}"), Some("burst")).await);
    }
    let mut runs = Vec::new();
    for job in &jobs {
        runs.push(env.trigger(*job, json!({})).await);
    }
    for run in &runs {
        env.run_with_status(*run, "failed").await;
        delivery_in_state(&env.api, *run, "burst", "sent", 30).await;
        run_alarm(&env.api, *run, "sent", 20).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let got = slack.requests();
    let texts: Vec<String> = got.iter().map(Recorded::text).collect();
    for run in &runs {
        let told = format!(") failed, run {run}\n");
        let messages = texts.iter().filter(|t| t.contains(&told)).count();
        assert_eq!(messages, 1, "run {run} told in exactly one message: {texts:#?}");
    }
    assert!(got.len() < 5, "fewer messages than failures: {texts:#?}");
    assert!(
        texts.iter().any(|t| t.contains("alarms at once")),
        "one is a digest: {texts:#?}"
    );
    assert!(env.api.metric("chime_alarm_digests_total").await.unwrap_or(0.0) >= 1.0);
}

/// `longer_than`: a run still running past it is told once, as `slow`, while it runs; the
/// run's own failure alarm stays its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_longer_than_expected_is_told_once() {
    let env = admin(json!({})).await;
    let slack = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    channel(&env, "team", &slack, None).await;
    let _ex = group_with_executor(&env, "slow", json!({})).await;
    let job = env
        .job(json!({"group": "slow", "handler": "hang", "schedule_type": "NONE",
                    "description": "long import", "alarm_channels": "team", "alarm_policy": "longer_than=1s"}))
        .await;
    let run = env.trigger(job, json!({})).await;
    let told = delivery_in_state(&env.api, run, "team", "sent", 30).await;
    assert_eq!(told["event"], "slow", "{told}");
    let got = slack.wait_accepted(1, 10).await;
    let text = got[0].text();
    assert!(
        text.contains("taking long") && text.contains(&run.to_string()),
        "{text}"
    );
    let (_, shown) = env.api.get(&format!("/v1/runs/{run}")).await;
    assert_eq!(shown["status"], "running", "told while it runs: {shown}");
    // Two looks later, still told once.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(slack.accepted_count(), 1, "{:#?}", slack.requests());
    assert_eq!(deliveries(&env.api, run).await.len(), 1);
}

/// `late_after`: the admin's scheduler falls behind (the process is stopped with SIGSTOP for
/// longer than the policy allows, then continued) and the fires it makes late are told as
/// `late`, each once; a job without the policy is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fires_the_scheduler_made_late_are_told() {
    use common::admin_process::AdminProcess;
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}/chime.db", dir.path().display());
    let admin = AdminProcess::start(&db, "alarm-late", &[], dir.path(), false);
    admin.wait_ready().await;
    let api = admin.api();
    let slack = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    let (s, v) = api
        .post(
            "/v1/alarm-channels",
            json!({"name": "team", "kind": "slack", "url": slack.url()}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    api.ok("/v1/groups", json!({"app_name": "late"})).await;
    let _ex = DemoExecutor::start(&admin.base(), "late");
    api.wait_executors("late", 1).await;
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": "late", "handler": "demoJobHandler", "schedule_type": "CRON", "schedule_expr": "* * * * * ?",
                   "misfire_strategy": "FIRE_ONCE_NOW", "running": true,
                   "alarm_channels": "team", "alarm_policy": "late_after=2s"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    api.wait_runs(job, 30, "the job fires", |r| r.len() >= 2).await;
    assert_eq!(slack.accepted_count(), 0, "fires on time are not late");
    admin.signal(libc::SIGSTOP);
    tokio::time::sleep(Duration::from_secs(5)).await;
    admin.signal(libc::SIGCONT);
    let got = slack.wait_accepted(1, 40).await;
    let text = got[0].text();
    assert!(text.contains("is late"), "{text}");
    let runs = api.wait_runs(job, 10, "runs after the stop", |r| !r.is_empty()).await;
    let late: Vec<i64> = runs
        .iter()
        .filter(|r| r["triggered_at"].as_i64().unwrap_or(0) > r["scheduled_at"].as_i64().unwrap_or(0) + 2000)
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert!(!late.is_empty(), "a fire was made late: {runs:#?}");
    // Each late run is told once (two looks later).
    tokio::time::sleep(Duration::from_secs(11)).await;
    let told: Vec<i64> = slack
        .accepted()
        .iter()
        .map(|r| r.text())
        .filter_map(|t| {
            late.iter()
                .copied()
                .find(|id| t.contains(&format!("run {id} did not start")))
        })
        .collect();
    let mut unique = told.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(told.len(), unique.len(), "each late run told once: {told:?}");
    assert!(!told.is_empty(), "late runs told: {told:?} of {late:?}");
}

/// The receivers themselves, proven against the vendors' documented algorithms (and values
/// computed with the vendors' own sample code) before they judge the admin.
mod receivers {
    use super::*;

    async fn post(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut req = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_owned());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("the receiver answers");
        (resp.status().as_u16(), resp.text().await.unwrap())
    }

    #[test]
    fn hmac_matches_rfc_4231() {
        // RFC 4231, test case 2.
        assert_eq!(
            rx::hmac_sha256_hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn signatures_match_the_vendors_sample_code() {
        // Values printed by the vendors' Python samples (hmac, base64, urllib.parse.quote_plus).
        assert_eq!(
            rx::dingtalk_sign("SEC0123456789abcdef", 1_700_000_000_002),
            "VGvd0brDJp/nMZtR+XnA3yBIlhowT+TwkRPua0q1/jg="
        );
        assert_eq!(
            rx::dingtalk_query("SEC0123456789abcdef", 1_700_000_000_002),
            "timestamp=1700000000002&sign=VGvd0brDJp%2FnMZtR%2BXnA3yBIlhowT%2BTwkRPua0q1%2Fjg%3D"
        );
        assert_eq!(
            rx::feishu_sign("feishu-secret-42", 1_700_000_003),
            "MFNrzScpXy+Nw0mvs74gjSblDs6LqBS42/TGKj/XJKs="
        );
        assert_eq!(
            rx::chime_signature("hook-secret", 1_700_000_000_000, br#"{"run_id":7}"#),
            "sha256=115b8917d62e4435bdfa728eae87dfdf8b0ec315d0e24f94d24eb3beddff4295"
        );
    }

    const MARKDOWN: &str = r#"{"msgtype":"markdown","markdown":{"title":"t","text":"job 1 failed"}}"#;

    #[tokio::test]
    async fn dingtalk_checks_sign_timestamp_token_and_payload() {
        let secret = "SEC0123456789abcdef";
        let r = Receiver::start(
            Vendor::DingTalk {
                secret: Some(secret.into()),
            },
            Behaviour::Normal,
        )
        .await;
        let ts = 1_700_000_000_002;
        r.set_clock(Some(ts + 60_000));
        let signed = format!("{}&{}", r.url(), rx::dingtalk_query(secret, ts));
        let (s, b) = post(&signed, &[], MARKDOWN).await;
        assert_eq!((s, b.as_str()), (200, r#"{"errcode":0,"errmsg":"ok"}"#));
        // The sign without URL encoding: its `+` arrive as spaces.
        let raw = format!("{}&timestamp={ts}&sign={}", r.url(), rx::dingtalk_sign(secret, ts));
        let (s, b) = post(&raw, &[], MARKDOWN).await;
        assert_eq!(s, 200);
        assert!(b.contains("310000"), "{b}");
        // Another secret.
        let wrong = format!("{}&{}", r.url(), rx::dingtalk_query("SECother", ts));
        assert!(post(&wrong, &[], MARKDOWN).await.1.contains("310000"));
        // No signature at all.
        assert!(post(&r.url(), &[], MARKDOWN).await.1.contains("310000"));
        // More than an hour old.
        r.set_clock(Some(ts + 3_600_001));
        assert!(post(&signed, &[], MARKDOWN).await.1.contains("310000"));
        r.set_clock(Some(ts + 3_599_000));
        assert!(post(&signed, &[], MARKDOWN).await.1.contains("\"errcode\":0"));
        // Unknown token; payloads missing a field or of an unknown type.
        let other = format!("{}&{}", r.url_with_wrong_token(), rx::dingtalk_query(secret, ts));
        assert!(post(&other, &[], MARKDOWN).await.1.contains("300005"));
        let no_title = r#"{"msgtype":"markdown","markdown":{"text":"x"}}"#;
        let b = post(&signed, &[], no_title).await.1;
        assert!(b.contains("40035") && b.contains("markdown.title"), "{b}");
        assert!(post(&signed, &[], r#"{"msgtype":"video"}"#).await.1.contains("40008"));
        assert!(post(&signed, &[], r#"{"text":{"content":"x"}}"#)
            .await
            .1
            .contains("40035"));
        let text = r#"{"msgtype":"text","text":{"content":"hello"}}"#;
        assert!(post(&signed, &[], text).await.1.contains("\"errcode\":0"));
        let all = r.requests();
        assert_eq!(all.len(), 11);
        assert_eq!(r.verified_count(), 6, "{all:#?}");
        assert_eq!(r.accepted_count(), 3);
        assert_eq!(all[0].param("sign"), Some(rx::dingtalk_sign(secret, ts).as_str()));
        assert_eq!(all[0].verified, Some(true));
        assert_eq!(all[1].verified, Some(false));
    }

    #[tokio::test]
    async fn feishu_checks_sign_in_body_token_and_payload() {
        let secret = "feishu-secret-42";
        let r = Receiver::start(
            Vendor::Feishu {
                secret: Some(secret.into()),
            },
            Behaviour::Normal,
        )
        .await;
        let ts = 1_700_000_003_i64;
        r.set_clock(Some(ts * 1000 + 5_000));
        let sign = rx::feishu_sign(secret, ts);
        let good = json!({"timestamp": ts.to_string(), "sign": sign, "msg_type": "text",
                          "content": {"text": "job 1 failed"}});
        let (s, b) = post(&r.url(), &[], &good.to_string()).await;
        assert_eq!(s, 200);
        let v: Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["code"], 0, "{b}");
        let card = json!({"timestamp": ts.to_string(), "sign": sign, "msg_type": "interactive",
                          "card": {"elements": [{"tag": "markdown", "content": "**x**"}]}});
        assert!(post(&r.url(), &[], &card.to_string()).await.1.contains("\"code\":0"));
        // DingTalk's algorithm (key = secret) does not pass.
        let ding_style = rx::dingtalk_sign(secret, ts);
        let bad = json!({"timestamp": ts.to_string(), "sign": ding_style, "msg_type": "text",
                         "content": {"text": "x"}});
        assert!(post(&r.url(), &[], &bad.to_string()).await.1.contains("19021"));
        // Milliseconds instead of seconds; a timestamp more than an hour away.
        let ms = json!({"timestamp": (ts * 1000).to_string(), "sign": rx::feishu_sign(secret, ts * 1000),
                        "msg_type": "text", "content": {"text": "x"}});
        assert!(post(&r.url(), &[], &ms.to_string()).await.1.contains("19021"));
        r.set_clock(Some((ts + 3601) * 1000));
        assert!(post(&r.url(), &[], &good.to_string()).await.1.contains("19021"));
        r.set_clock(Some(ts * 1000));
        // Wrong token; missing msg_type; interactive without a card.
        assert!(post(&r.url_with_wrong_token(), &[], &good.to_string())
            .await
            .1
            .contains("19001"));
        let no_type = json!({"timestamp": ts.to_string(), "sign": sign, "content": {"text": "x"}});
        assert!(post(&r.url(), &[], &no_type.to_string()).await.1.contains("19002"));
        let no_card = json!({"timestamp": ts.to_string(), "sign": sign, "msg_type": "interactive"});
        assert!(post(&r.url(), &[], &no_card.to_string()).await.1.contains("19002"));
        assert_eq!(r.accepted_count(), 2);
        assert_eq!(r.requests()[2].verified, Some(false));
    }

    #[tokio::test]
    async fn wecom_slack_and_teams_check_token_and_payload() {
        let w = Receiver::start(Vendor::WeCom, Behaviour::Normal).await;
        let md = |c: &str| json!({"msgtype": "markdown", "markdown": {"content": c}}).to_string();
        assert!(post(&w.url(), &[], &md("**job 1**")).await.1.contains("\"errcode\":0"));
        assert!(post(&w.url_with_wrong_token(), &[], &md("x")).await.1.contains("93000"));
        assert!(post(&w.url(), &[], &md("")).await.1.contains("44004"));
        assert!(post(&w.url(), &[], &md(&"x".repeat(4097))).await.1.contains("40058"));
        assert!(post(&w.url(), &[], &md(&"x".repeat(4096)))
            .await
            .1
            .contains("\"errcode\":0"));
        assert!(post(&w.url(), &[], r#"{"msgtype":"card"}"#).await.1.contains("40008"));
        assert_eq!(w.accepted_count(), 2);

        let s = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
        assert_eq!(post(&s.url(), &[], r#"{"text":"job 1"}"#).await, (200, "ok".into()));
        let blocks = r#"{"blocks":[{"type":"section","text":{"type":"mrkdwn","text":"*x*"}}]}"#;
        assert_eq!(post(&s.url(), &[], blocks).await, (200, "ok".into()));
        assert_eq!(
            post(&s.url(), &[], r#"{"username":"x"}"#).await,
            (400, "no_text".into())
        );
        assert_eq!(post(&s.url(), &[], "not json").await, (400, "invalid_payload".into()));
        assert_eq!(post(&s.url(), &[], r#"{"text":"x","blocks":[{}]}"#).await.0, 400);
        assert_eq!(post(&s.url_with_wrong_token(), &[], r#"{"text":"x"}"#).await.0, 404);

        let t = Receiver::start(Vendor::Teams, Behaviour::Normal).await;
        let card = json!({"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": {"type": "AdaptiveCard", "version": "1.4",
                        "body": [{"type": "TextBlock", "text": "job 1 failed"}]}}]});
        assert_eq!(post(&t.url(), &[], &card.to_string()).await, (202, String::new()));
        let mut no_version = card.clone();
        no_version["attachments"][0]["content"]["version"] = Value::Null;
        assert_eq!(post(&t.url(), &[], &no_version.to_string()).await.0, 400);
        let legacy = json!({"@type": "MessageCard", "text": "x"});
        assert_eq!(post(&t.url(), &[], &legacy.to_string()).await.0, 400);
        assert_eq!(post(&t.url_with_wrong_token(), &[], &card.to_string()).await.0, 401);
        assert_eq!(t.accepted_count(), 1);
        assert!(t.requests()[0].text().contains("job 1 failed"));
    }

    #[tokio::test]
    async fn webhook_checks_chime_signature() {
        let r = Receiver::start(
            Vendor::Webhook {
                secret: Some("hook-secret".into()),
            },
            Behaviour::Normal,
        )
        .await;
        let ts = 1_700_000_000_000_i64;
        r.set_clock(Some(ts + 1_000));
        let body = r#"{"run_id":7}"#;
        let sig = rx::chime_signature("hook-secret", ts, body.as_bytes());
        let tss = ts.to_string();
        let h = [("X-Chime-Timestamp", tss.as_str()), ("X-Chime-Signature", sig.as_str())];
        assert_eq!(post(&r.url(), &h, body).await, (200, "ok".into()));
        // The body changed after signing; another timestamp; no headers; too old.
        assert_eq!(post(&r.url(), &h, r#"{"run_id":8}"#).await.0, 401);
        let later = (ts + 1).to_string();
        let h2 = [
            ("X-Chime-Timestamp", later.as_str()),
            ("X-Chime-Signature", sig.as_str()),
        ];
        assert_eq!(post(&r.url(), &h2, body).await.0, 401);
        assert_eq!(post(&r.url(), &[], body).await.0, 401);
        r.set_clock(Some(ts + 300_001));
        assert_eq!(post(&r.url(), &h, body).await.0, 401);
        assert_eq!(r.verified_count(), 1);
        assert_eq!(r.requests()[0].json.as_ref().unwrap()["run_id"], 7);
    }

    #[tokio::test]
    async fn behaviours_fail_first_hang_and_down_up() {
        let hook = Vendor::Webhook { secret: None };
        let r = Receiver::start(hook.clone(), Behaviour::FailFirst(2)).await;
        let codes = [
            post(&r.url(), &[], "{}").await.0,
            post(&r.url(), &[], "{}").await.0,
            post(&r.url(), &[], "{}").await.0,
        ];
        assert_eq!(codes, [500, 500, 200]);
        assert_eq!(r.accepted_count(), 1);

        // Hang: recorded, never answered, until the client's own limit.
        let h = Receiver::start(hook.clone(), Behaviour::Hang).await;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(500))
            .build()
            .unwrap();
        let t0 = Instant::now();
        let err = client.post(h.url()).body("{}").send().await.expect_err("no answer");
        assert!(err.is_timeout(), "{err}");
        assert!(t0.elapsed() >= Duration::from_millis(450));
        assert_eq!(h.requests().len(), 1);
        assert_eq!(h.requests()[0].status, 0);

        // Down: the port is held and refuses; up: answers on the same port; down again drops
        // kept-alive connections and refuses; up again answers.
        let d = Receiver::start(hook, Behaviour::Down).await;
        let port = d.port();
        let probe = tokio::net::TcpSocket::new_v4().unwrap();
        assert!(
            probe.bind(([127, 0, 0, 1], port).into()).is_err(),
            "the port is reserved while down"
        );
        let e = reqwest::Client::new()
            .post(d.url())
            .body("{}")
            .send()
            .await
            .expect_err("refused");
        assert!(e.is_connect(), "{e}");
        d.up().await;
        let keep_alive = reqwest::Client::new();
        let resp = keep_alive.post(d.url()).body("{}").send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(d.port(), port);
        d.down().await;
        let e = keep_alive
            .post(d.url())
            .body("{}")
            .send()
            .await
            .expect_err("down again");
        assert!(e.is_connect() || e.is_request(), "{e}");
        d.up().await;
        let resp = keep_alive.post(d.url()).body("{}").send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(d.requests().len(), 2);
    }
}

/// Jobs as code: a document defines a channel and a job naming it; the export lists the channel
/// without its URL or secret, and applying that export back changes nothing (the stored URL and
/// secret are kept, and an alarm still verifies at the receiver). A document naming a channel
/// that neither exists nor is defined is refused whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn channels_are_applied_and_exported_without_secrets() {
    let env = admin(json!({})).await;
    let ding = Receiver::start(
        Vendor::DingTalk {
            secret: Some("SECapply-123".into()),
        },
        Behaviour::Normal,
    )
    .await;
    let _ex = group_with_executor(&env, "coded", json!({})).await;
    let doc = json!({
        "alarm_channels": [{"name": "ops-ding", "kind": "dingtalk", "url": ding.url(), "secret": "SECapply-123"}],
        "groups": [{"app_name": "coded", "jobs": [
            {"key": "nightly", "handler": "fail", "schedule_type": "NONE", "alarm_channels": "ops-ding"}
        ]}],
    });
    let plan = env.api.ok("/v1/apply", doc).await;
    let created: Vec<String> = plan["create"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}:{}", e["kind"].as_str().unwrap(), e["key"].as_str().unwrap_or("")))
        .collect();
    assert!(created.contains(&"alarm_channel:ops-ding".to_owned()), "{plan}");
    assert!(created.contains(&"job:nightly".to_owned()), "{plan}");

    let (s, exported) = env.api.get("/v1/export").await;
    assert_eq!(s, 200, "{exported}");
    let text = exported.to_string();
    assert!(
        !text.contains("SECapply-123") && !text.contains(ding.token()),
        "no secrets exported: {text}"
    );
    let listed = &exported["alarm_channels"][0];
    assert_eq!(
        (listed["name"].as_str(), listed["kind"].as_str()),
        (Some("ops-ding"), Some("dingtalk")),
        "{exported}"
    );
    assert!(listed["url"].is_null() && listed["secret"].is_null(), "{listed}");
    let job = &exported["groups"][0]["jobs"][0];
    assert_eq!(job["alarm_channels"], "ops-ding", "{exported}");

    // The export applied back: nothing to do, and the URL and secret are still there.
    let mut again = exported.clone();
    again.as_object_mut().unwrap().remove("workflows");
    let plan = env.api.ok("/v1/apply", again).await;
    assert!(
        plan["create"].as_array().unwrap().is_empty() && plan["update"].as_array().unwrap().is_empty(),
        "{plan}"
    );
    let (_, jobs) = env.api.get("/v1/jobs?group=coded").await;
    let job_id = jobs["items"]
        .as_array()
        .or(jobs.as_array())
        .and_then(|a| a.first())
        .and_then(|j| j["id"].as_i64())
        .unwrap_or_else(|| panic!("the applied job: {jobs}"));
    let run = fail_once(&env, job_id).await;
    delivery_in_state(&env.api, run, "ops-ding", "sent", 20).await;
    assert_eq!(ding.verified_count(), 1, "signed with the kept secret");

    let (s, v) = env
        .api
        .post(
            "/v1/apply",
            json!({"groups": [{"app_name": "coded", "jobs": [
                {"key": "other", "handler": "fail", "schedule_type": "NONE", "alarm_channels": "nowhere"}
            ]}]}),
        )
        .await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("nowhere"), "{v}");
    let (_, after) = env.api.get("/v1/export").await;
    assert_eq!(
        after["groups"][0]["jobs"].as_array().map(Vec::len),
        Some(1),
        "nothing applied: {after}"
    );
}
