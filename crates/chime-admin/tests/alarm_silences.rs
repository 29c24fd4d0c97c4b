//! Silence windows of alarms against a real admin, a real executor (`chime executor` with its
//! demo handlers, `failJobHandler`) and a real receiver (`common::receivers`): while a window covers a run's group or
//! job, a run that fails for good sends nothing, its alarm is `not_needed` and its `alarm_msg`
//! names the window; deleting the window lets the next failure through; a window of another
//! job silences nothing; a recurring window silences while in force and not otherwise; the
//! REST API refuses what is not a window, naming the field; and the table, its query and the
//! silenced claim work on PostgreSQL and MySQL as on SQLite.

mod common;

use common::demo_executor::{DemoExecutor, REAL_EXECUTOR_DEAD_TIMEOUT};
use common::receivers::{Behaviour, Receiver, Vendor};
use common::{eventually, Db, Env};
use serde_json::{json, Value};
use std::time::Duration;

fn now_ms() -> i64 {
    chime_admin::model::now_ms()
}

/// An admin on `db` with fast alarm retries.
async fn admin(db: Db) -> Env {
    Env::start_with(db, |c| {
        c.alarm_attempts = 3;
        c.alarm_retry_pause = Duration::from_millis(100);
        c.alarm_timeout = Duration::from_secs(2);
        // The executor is a real process, which beats every 30 s.
        c.dead_timeout = REAL_EXECUTOR_DEAD_TIMEOUT;
    })
    .await
}

/// A Slack receiver and channel `ops` pointing at it.
async fn slack_channel(env: &Env) -> Receiver {
    let r = Receiver::start(Vendor::Slack, Behaviour::Normal).await;
    let (s, v) = env
        .api
        .post(
            "/v1/alarm-channels",
            json!({"name": "ops", "kind": "slack", "url": r.url()}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    r
}

/// Group `app` (alarming to `channels`, if any) served by a real `chime executor
/// --demo-handlers` process; returns its id and the executor.
async fn group_with_executor(env: &Env, app: &str, channels: Option<&str>) -> (i64, DemoExecutor) {
    let mut body = json!({"app_name": app, "title": "silences"});
    if let Some(c) = channels {
        body["alarm_channels"] = json!(c);
    }
    let id = env.api.ok("/v1/groups", body).await["id"].as_i64().expect("a group id");
    let ex = DemoExecutor::start(&env.prefix, app);
    env.api.wait_executors(app, 1).await;
    (id, ex)
}

/// A job of `app` that fails for good (handler `failJobHandler`, no retry).
async fn failing_job(env: &Env, app: &str, description: &str) -> i64 {
    env.job(
        json!({"group": app, "handler": "failJobHandler", "schedule_type": "NONE", "retry_count": 0,
                   "description": description}),
    )
    .await
}

/// Creates a silence; returns the answer (checked: 201).
async fn silence(env: &Env, body: Value) -> Value {
    let (s, v) = env.api.post("/v1/alarm-silences", body.clone()).await;
    assert_eq!(s, 201, "create silence {body}: {v}");
    v
}

/// Triggers `job`, waits until its run failed and its alarm reached `wanted`; returns the run.
async fn fail_until_alarm(env: &Env, job: i64, wanted: &str) -> Value {
    let run = env.trigger(job, json!({})).await;
    env.run_with_status(run, "failed").await;
    eventually(20, &format!("run {run} alarm {wanted}"), || async {
        let (s, v) = env.api.get(&format!("/v1/runs/{run}")).await;
        if s == 200 && v["alarm"] == wanted {
            Ok(v)
        } else {
            Err(format!("{s} {v}"))
        }
    })
    .await
}

/// The run's alarm deliveries.
async fn deliveries(env: &Env, run: &Value) -> Vec<Value> {
    let (s, v) = env.api.get(&format!("/v1/runs/{}/alarms", run["id"])).await;
    assert_eq!(s, 200, "{v}");
    v.as_array().cloned().unwrap_or_default()
}

/// A silenced run: `not_needed`, the message naming window `id` and what it covers, and no
/// delivery stored.
async fn assert_silenced(env: &Env, run: &Value, id: i64, covers: &str) {
    let msg = run["alarm_msg"].as_str().unwrap_or_default();
    assert!(
        msg.starts_with(&format!("silenced by window {id}")) && msg.contains(covers) && msg.contains(" until "),
        "alarm_msg names window {id} ({covers}): {run}"
    );
    assert_eq!(deliveries(env, run).await, Vec::<Value>::new(), "no delivery stored");
}

/// A one-off silence of a group in force now: its job's failure sends nothing; once the silence
/// is deleted, the next failure is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_silence_in_force_sends_nothing_until_deleted() {
    let env = admin(Db::Sqlite).await;
    let rx = slack_channel(&env).await;
    let app = "orders";
    let (gid, _ex) = group_with_executor(&env, app, Some("ops")).await;
    let job = failing_job(&env, app, "nightly orders export").await;

    let ends_at = now_ms() + 3_600_000;
    let created = silence(
        &env,
        json!({"group_id": gid, "name": "db upgrade", "reason": "moving the orders database",
               "ends_at": ends_at, "time_zone": "UTC"}),
    )
    .await;
    let id = created["id"].as_i64().expect("an id");
    assert_eq!(created["active_now"], true, "{created}");
    assert_eq!(created["active_until"], ends_at, "{created}");
    assert_eq!(created["next_start"], Value::Null, "started already: {created}");
    assert_eq!((&created["group_id"], &created["job_id"]), (&json!(gid), &Value::Null));
    assert_eq!(created["cron"], Value::Null, "{created}");
    assert_eq!(created["created_by"], "api-token", "{created}");
    assert!(
        created["starts_at"].as_i64().is_some_and(|s| s <= now_ms()),
        "{created}"
    );
    let (s, shown) = env.api.get(&format!("/v1/alarm-silences/{id}")).await;
    assert_eq!((s, shown["name"].clone()), (200, json!("db upgrade")), "{shown}");
    let (_, active) = env.api.get("/v1/alarm-silences?active=true").await;
    assert_eq!(active.as_array().map(Vec::len), Some(1), "{active}");
    let (_, inactive) = env.api.get("/v1/alarm-silences?active=false").await;
    assert_eq!(inactive, json!([]), "{inactive}");

    let run = fail_until_alarm(&env, job, "not_needed").await;
    assert_silenced(&env, &run, id, &format!("'db upgrade' (group {app})")).await;
    let msg = run["alarm_msg"].as_str().unwrap_or_default();
    let until = chrono::DateTime::from_timestamp_millis(ends_at)
        .unwrap()
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    assert!(msg.ends_with(&format!("until {until}")), "{msg}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(rx.requests().len(), 0, "nothing reaches the channel while silenced");
    let counted = env.api.metric("chime_alarms_silenced_total").await;
    assert_eq!(counted, Some(1.0), "one silenced alarm counted");

    let (s, v) = env
        .api
        .call(reqwest::Method::DELETE, &format!("/v1/alarm-silences/{id}"), None)
        .await;
    assert_eq!(s, 204, "{v}");
    let (s, _) = env.api.get(&format!("/v1/alarm-silences/{id}")).await;
    assert_eq!(s, 404);
    let (s, _) = env
        .api
        .call(reqwest::Method::DELETE, &format!("/v1/alarm-silences/{id}"), None)
        .await;
    assert_eq!(s, 404, "deleted already");

    let run = fail_until_alarm(&env, job, "sent").await;
    let got = rx.wait_accepted(1, 20).await;
    assert!(got[0].text().contains("nightly orders export"), "{}", got[0].text());
    assert_eq!(deliveries(&env, &run).await.len(), 1);
    env.close().await;
}

/// A silence of one job silences that job only: another job of the same group alarms.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_silence_of_another_job_does_not_silence_this_one() {
    let env = admin(Db::Sqlite).await;
    let rx = slack_channel(&env).await;
    let app = "billing";
    let (_, _ex) = group_with_executor(&env, app, Some("ops")).await;
    let quiet = failing_job(&env, app, "silenced job").await;
    let loud = failing_job(&env, app, "job that still alarms").await;
    let id = silence(&env, json!({"job_id": quiet, "ends_at": now_ms() + 600_000})).await["id"]
        .as_i64()
        .unwrap();

    let run = fail_until_alarm(&env, loud, "sent").await;
    assert_eq!(run["alarm_msg"], "", "{run}");
    let got = rx.wait_accepted(1, 20).await;
    assert!(got[0].text().contains("job that still alarms"), "{}", got[0].text());

    let run = fail_until_alarm(&env, quiet, "not_needed").await;
    assert_silenced(&env, &run, id, &format!("(job {quiet})")).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(rx.requests().len(), 1, "only the other job's alarm arrived");
    env.close().await;
}

/// A recurring window in force now silences; one whose next start is 12 hours away does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recurring_window_silences_while_in_force_only() {
    let env = admin(Db::Sqlite).await;
    let rx = slack_channel(&env).await;
    let app = "reports";
    let (_, _ex) = group_with_executor(&env, app, Some("ops")).await;
    let covered = failing_job(&env, app, "covered by a window every minute").await;
    let outside = failing_job(&env, app, "outside its window").await;

    // A window starts every minute and lasts two: always in force.
    let always = silence(
        &env,
        json!({"job_id": covered, "name": "every minute", "cron": "0 * * * * ?", "duration_secs": 120,
               "time_zone": "Europe/Berlin"}),
    )
    .await;
    assert_eq!(always["active_now"], true, "{always}");
    assert_eq!((&always["starts_at"], &always["ends_at"]), (&Value::Null, &Value::Null));
    let until = always["active_until"].as_i64().expect("in force until");
    assert!(until > now_ms() && until <= now_ms() + 120_000, "{always}");
    assert!(
        always["next_start"]
            .as_i64()
            .is_some_and(|s| s > now_ms() && s <= now_ms() + 60_000),
        "{always}"
    );

    // A one-minute window starting at the same time of day, 12 hours from now (UTC).
    let later = chrono::DateTime::from_timestamp_millis(now_ms() + 12 * 3_600_000).unwrap();
    let cron = later.format("0 %M %H * * ?").to_string();
    let daily = silence(
        &env,
        json!({"job_id": outside, "cron": cron, "duration_secs": 60, "time_zone": "UTC"}),
    )
    .await;
    assert_eq!(daily["active_now"], false, "{daily}");
    assert_eq!(daily["active_until"], Value::Null, "{daily}");
    let next = daily["next_start"].as_i64().expect("a next start");
    let in_12h = now_ms() + 12 * 3_600_000;
    assert!((in_12h - 61_000..=in_12h).contains(&next), "{daily}");
    let (_, active) = env.api.get("/v1/alarm-silences?active=true").await;
    let ids: Vec<&Value> = active.as_array().unwrap().iter().map(|s| &s["id"]).collect();
    assert_eq!(ids, vec![&always["id"]], "{active}");

    let run = fail_until_alarm(&env, covered, "not_needed").await;
    assert_silenced(&env, &run, always["id"].as_i64().unwrap(), "'every minute'").await;
    let msg = run["alarm_msg"].as_str().unwrap_or_default();
    assert!(
        msg.ends_with(" CET") || msg.ends_with(" CEST"),
        "shown in its zone: {msg}"
    );

    fail_until_alarm(&env, outside, "sent").await;
    let got = rx.wait_accepted(1, 20).await;
    assert!(got[0].text().contains("outside its window"), "{}", got[0].text());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(rx.requests().len(), 1, "the covered job sent nothing");
    env.close().await;
}

/// What the REST API refuses, naming the field (422; an unknown field or a malformed value
/// is 400), and stores nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_silences_are_refused() {
    let env = admin(Db::Sqlite).await;
    let gid = env.group("refusals").await;
    let job = env
        .job(json!({"group": "refusals", "handler": "failJobHandler", "schedule_type": "NONE"}))
        .await;
    let now = now_ms();
    let hour = now + 3_600_000;
    let refused = [
        (json!({"group_id": gid, "job_id": job, "ends_at": hour}), "group_id"),
        (json!({"ends_at": hour}), "group_id"),
        (json!({"group_id": 0, "ends_at": hour}), "group_id"),
        (json!({"group_id": gid}), "ends_at"),
        (
            json!({"group_id": gid, "starts_at": now + 60_000, "ends_at": now + 30_000}),
            "ends_at",
        ),
        (json!({"group_id": gid, "starts_at": now, "ends_at": now}), "ends_at"),
        (
            json!({"group_id": gid, "starts_at": now, "ends_at": now + 367 * 86_400_000_i64}),
            "ends_at",
        ),
        (
            json!({"group_id": gid, "starts_at": now - 7_200_000, "ends_at": now - 3_600_000}),
            "ends_at",
        ),
        (
            json!({"group_id": gid, "ends_at": hour, "duration_secs": 60}),
            "duration_secs",
        ),
        (json!({"group_id": gid, "cron": "0 0 2 * * ?"}), "duration_secs"),
        (
            json!({"group_id": gid, "cron": "0 0 2 * * ?", "duration_secs": 0}),
            "duration_secs",
        ),
        (
            json!({"group_id": gid, "cron": "0 0 2 * * ?", "duration_secs": 604_801}),
            "duration_secs",
        ),
        (
            json!({"group_id": gid, "cron": "0 0 2 * * ?", "duration_secs": 60, "starts_at": now}),
            "starts_at",
        ),
        (
            json!({"group_id": gid, "cron": "0 0 25 * * ?", "duration_secs": 60}),
            "cron",
        ),
        (
            json!({"group_id": gid, "cron": "0 0 2 * *", "duration_secs": 60}),
            "cron",
        ),
        (
            json!({"group_id": gid, "cron": "0 0 2 * * ? 2020", "duration_secs": 60}),
            "cron",
        ),
        (
            json!({"group_id": gid, "ends_at": hour, "time_zone": "Mars/Olympus"}),
            "time_zone",
        ),
        (
            json!({"group_id": gid, "cron": "0 0 2 * * ?", "duration_secs": 60, "time_zone": "CEST"}),
            "time_zone",
        ),
        (json!({"group_id": 987_654, "ends_at": hour}), "group_id"),
        (json!({"job_id": 987_654, "ends_at": hour}), "job_id"),
        (
            json!({"group_id": gid, "ends_at": hour, "name": "n".repeat(65)}),
            "name",
        ),
        (
            json!({"group_id": gid, "ends_at": hour, "reason": "r".repeat(501)}),
            "reason",
        ),
    ];
    for (body, field) in refused {
        let (s, v) = env.api.post("/v1/alarm-silences", body.clone()).await;
        assert_eq!(s, 422, "{body} → {s} {v}");
        assert!(v.to_string().contains(field), "{body}: the answer names {field}: {v}");
    }
    let malformed = [
        (json!({"group_id": gid, "ends_at": hour, "colour": "red"}), "colour"),
        (json!({"group_id": "orders", "ends_at": hour}), "group_id"),
        (json!({"group_id": gid, "ends_at": "tomorrow"}), "ends_at"),
    ];
    for (body, field) in malformed {
        let (s, v) = env.api.post("/v1/alarm-silences", body.clone()).await;
        assert_eq!(s, 400, "{body} → {s} {v}");
        assert!(v.to_string().contains(field), "{body}: the answer names {field}: {v}");
    }
    let (s, v) = env.api.get("/v1/alarm-silences").await;
    assert_eq!((s, v.clone()), (200, json!([])), "nothing was stored: {v}");
    let (s, v) = env.api.get("/v1/alarm-silences?active=maybe").await;
    assert_eq!(s, 400, "{v}");
    let (s, v) = env.api.get("/v1/alarm-silences/x").await;
    assert_eq!(s, 400, "{v}");
    let (s, v) = env.api.get("/v1/alarm-silences/42").await;
    assert_eq!(s, 404, "{v}");

    // The OpenAPI document describes the routes and both schemas.
    let (_, doc) = env.api.get("/v1/openapi.json").await;
    assert!(
        doc["paths"]["/v1/alarm-silences"]["post"].is_object(),
        "{}",
        doc["paths"]
    );
    assert!(doc["paths"]["/v1/alarm-silences/{id}"]["delete"].is_object());
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["AlarmSilence"]["additionalProperties"], false);
    assert_eq!(schemas["AlarmSilenceSpec"]["additionalProperties"], false);
    env.close().await;
}

/// The table, the query of a run's silences and the silenced claim on PostgreSQL and MySQL.
async fn silenced_on(db: Db) {
    let env = admin(db).await;
    let app = "dialects";
    let (gid, _ex) = group_with_executor(&env, app, None).await;
    let job = failing_job(&env, app, "fails on every database").await;
    let recurring = silence(
        &env,
        json!({"job_id": job, "cron": "0 0 3 1 1 ?", "duration_secs": 60, "reason": "not now"}),
    )
    .await;
    assert_eq!(recurring["active_now"], false, "{recurring}");
    let one_off = silence(
        &env,
        json!({"group_id": gid, "name": "maintenance", "ends_at": now_ms() + 600_000}),
    )
    .await;
    let (_, all) = env.api.get("/v1/alarm-silences").await;
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
    assert_eq!(all[0]["reason"], "not now", "{all}");
    let covering = env
        .admin
        .admin
        .store
        .silences_covering(job, gid, now_ms())
        .await
        .unwrap();
    assert_eq!(covering.len(), 2, "{covering:?}");

    let run = fail_until_alarm(&env, job, "not_needed").await;
    assert_silenced(
        &env,
        &run,
        one_off["id"].as_i64().unwrap(),
        "'maintenance' (group dialects)",
    )
    .await;
    env.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silenced_on_postgres() {
    silenced_on(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silenced_on_mysql() {
    silenced_on(Db::MySql).await;
}
