//! Business calendars through the REST API on SQLite, MariaDB and PostgreSQL, at a real
//! executor over HTTP: a job firing every second that keeps to a calendar excluding today
//! sends nothing, and its next fire is tomorrow; an edit of the calendar that frees today
//! re-plans it, and the executor receives its runs within seconds, `${bizdate}` being the last
//! business day of the calendar; an edit that excludes today again stops them. The preview
//! shows the skipped day; a calendar in use is not deleted; bad calendars are refused naming
//! the field; calendars go to and come from `.ics` files, and round-trip through jobs as code.

mod common;

use chrono::{Days, Utc};
use common::{eventually, Db, Env};
use serde_json::{json, Value};
use std::time::Duration;

const APP: &str = "calendars";

/// A Chinese holiday feed: the National Day week of 2025 as one event, two make-up workdays.
const CN_FEED: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//holidays//CN\r\n\
    BEGIN:VEVENT\r\nUID:a\r\nDTSTAMP:20250101T000000Z\r\nDTSTART;VALUE=DATE:20251001\r\n\
    DTEND;VALUE=DATE:20251009\r\nSUMMARY:国庆节 休\r\nEND:VEVENT\r\n\
    BEGIN:VEVENT\r\nUID:b\r\nDTSTAMP:20250101T000000Z\r\nDTSTART;VALUE=DATE:20250928\r\n\
    SUMMARY:国庆节 补班\r\nEND:VEVENT\r\n\
    BEGIN:VEVENT\r\nUID:c\r\nDTSTAMP:20250101T000000Z\r\nDTSTART;VALUE=DATE:20251011\r\n\
    CATEGORIES:WORKDAY\r\nSUMMARY:make-up\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

/// A calendar body of every day but `excluded` (UTC).
fn every_day_but(excluded: &[&str]) -> Value {
    let dates: Vec<Value> = excluded
        .iter()
        .map(|d| json!({"date": d, "name": "maintenance"}))
        .collect();
    json!({"time_zone": "UTC", "workdays": ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"], "excluded": dates})
}

async fn put(env: &Env, path: &str, body: Value) -> (u16, Value) {
    env.api.call(reqwest::Method::PUT, path, Some(body)).await
}

async fn put_ics(env: &Env, path: &str, text: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .put(format!("{}{}", env.api.base, path))
        .bearer_auth(common::API_TOKEN)
        .header("content-type", "text/calendar")
        .body(text.to_owned())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn scenario(kind: Db) {
    // Today must stay today for the length of the test.
    let seconds_left = 86_400 - Utc::now().timestamp() % 86_400;
    if seconds_left < 120 {
        tokio::time::sleep(Duration::from_secs(seconds_left as u64 + 2)).await;
    }
    let today = Utc::now().date_naive();
    let yesterday = today.checked_sub_days(Days::new(1)).unwrap().to_string();
    let day_before = today.checked_sub_days(Days::new(2)).unwrap().to_string();
    let today = today.to_string();
    let (env, ex, _) = Env::with_executor(kind, Duration::from_secs(5), APP).await;

    // Bad calendars are refused, naming what is wrong.
    let mut bad = every_day_but(&["2026-02-30"]);
    bad["name"] = json!("ops");
    let (s, v) = env.api.post("/v1/calendars", bad).await;
    assert_eq!((s, v["field"].as_str()), (422, Some("excluded[0].date")), "{v}");
    let (s, v) = env
        .api
        .post("/v1/calendars", json!({"name": "ops", "time_zone": "Mars/Base"}))
        .await;
    assert_eq!((s, v["field"].as_str()), (422, Some("time_zone")), "{v}");
    let (s, _) = env
        .api
        .post(
            "/v1/calendars",
            json!({"name": "ops", "time_zone": "UTC", "holidays": []}),
        )
        .await;
    assert_eq!(s, 400, "an unknown field");

    let mut ops = every_day_but(&[&today]);
    ops["name"] = json!("ops");
    let (s, v) = env.api.post("/v1/calendars", ops.clone()).await;
    assert_eq!(s, 201, "{v}");
    let (s, _) = env.api.post("/v1/calendars", ops).await;
    assert_eq!(s, 409, "a name taken");

    // A job of every second keeping to it: nothing today.
    let (s, v) = env
        .api
        .post(
            "/v1/jobs",
            json!({"group": APP, "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?",
                   "time_zone": "UTC", "calendar": "nowhere", "running": true}),
        )
        .await;
    assert_eq!(
        (s, v["field"].as_str()),
        (422, Some("calendar")),
        "an unknown calendar: {v}"
    );
    let job = env
        .job(
            json!({"group": APP, "handler": "ok", "schedule_type": "CRON", "schedule_expr": "* * * * * ?",
                    "time_zone": "UTC", "calendar": "ops", "param": "${bizdate:yyyy-MM-dd}", "running": true}),
        )
        .await;
    let (_, shown) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(shown["calendar"], "ops");
    let tomorrow_ms = (Utc::now().timestamp() / 86_400 + 1) * 86_400_000;
    assert_eq!(shown["next_fire_at"].as_i64(), Some(tomorrow_ms), "{shown}");
    let (_, next) = env.api.get(&format!("/v1/jobs/{job}/next?count=2")).await;
    assert_eq!(next["next"][0]["at"].as_i64(), Some(tomorrow_ms), "{next}");
    assert_eq!(next["skipped"][0]["why"], "maintenance", "{next}");
    let (_, preview) = env
        .api
        .get("/v1/schedule/preview?type=CRON&expr=0%200%2012%20*%20*%20%3F&tz=UTC&calendar=ops&count=1")
        .await;
    assert_eq!(
        preview["next"][0]["at"].as_i64(),
        Some(tomorrow_ms + 12 * 3_600_000),
        "{preview}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(ex.params_of(job).len(), 0, "nothing on an excluded day");

    // Today freed, yesterday excluded: the job fires within seconds, its business date the
    // day before yesterday.
    let (s, v) = put(&env, "/v1/calendars/ops", every_day_but(&[&yesterday])).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["jobs"], 1, "{v}");
    let params = eventually(20, "runs once today is a business day", || async {
        let got = ex.params_of(job);
        if got.len() >= 2 {
            Ok(got)
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
    assert!(
        params.iter().all(|p| *p == day_before),
        "{params:?} (expected {day_before})"
    );

    // Today excluded again: the runs stop (fires already claimed, 2 s ahead at most, go out).
    let (s, _) = put(&env, "/v1/calendars/ops", every_day_but(&[&today])).await;
    assert_eq!(s, 200);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let settled = ex.params_of(job).len();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        ex.params_of(job).len(),
        settled,
        "no run after today was excluded again"
    );

    // In use: not deleted.
    let (s, v) = env.api.call(reqwest::Method::DELETE, "/v1/calendars/ops", None).await;
    assert_eq!(s, 409, "{v}");

    // A workflow keeps to a calendar too.
    let (s, wf) = env
        .api
        .post(
            "/v1/workflows",
            json!({"name": "nightly", "schedule_type": "CRON", "schedule_expr": "0 0 1 * * ?", "time_zone": "UTC",
                   "calendar": "ops", "running": true, "definition": {"nodes": [{"key": "a", "job_id": job}], "edges": []}}),
        )
        .await;
    assert_eq!(s, 201, "{wf}");
    assert_eq!(wf["calendar"], "ops");
    assert_eq!(wf["next_fire_at"].as_i64(), Some(tomorrow_ms + 3_600_000), "{wf}");

    // .ics: a Chinese feed imported (created, then replaced), and exported back.
    let (s, cn) = put_ics(&env, "/v1/calendars/CN/ics?time_zone=Asia/Shanghai", CN_FEED).await;
    assert_eq!(s, 201, "{cn}");
    assert_eq!(cn["excluded"].as_array().unwrap().len(), 8, "{cn}");
    let included: Vec<&str> = cn["included"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["date"].as_str().unwrap())
        .collect();
    assert_eq!(included, ["2025-09-28", "2025-10-11"]);
    let (s, _) = put_ics(&env, "/v1/calendars/CN/ics?time_zone=Asia/Shanghai", CN_FEED).await;
    assert_eq!(s, 200, "a second import replaces");
    let (s, v) = put_ics(&env, "/v1/calendars/bad/ics", "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n").await;
    assert_eq!((s, v["field"].as_str()), (422, Some("time_zone")), "no zone: {v}");
    let exported = reqwest::Client::new()
        .get(format!("{}/v1/calendars/CN/ics", env.api.base))
        .bearer_auth(common::API_TOKEN)
        .send()
        .await
        .unwrap();
    assert!(exported.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/calendar"));
    let text = exported.text().await.unwrap();
    assert!(text.contains("X-WR-TIMEZONE:Asia/Shanghai"), "{text}");
    assert_eq!(text.matches("CATEGORIES:WORKDAY").count(), 2, "{text}");

    // Jobs as code: exported with its calendars, applied back unchanged.
    let (s, doc) = env.api.get("/v1/export").await;
    assert_eq!(s, 200);
    let names: Vec<&str> = doc["calendars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["CN", "ops"], "{doc}");
    let listed = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["app_name"] == APP)
        .unwrap();
    assert_eq!(listed["jobs"][0]["calendar"], "ops", "{listed}");
    let mut again = doc.clone();
    again["dry_run"] = json!(true);
    let (s, plan) = env.api.post("/v1/apply", again).await;
    assert_eq!(s, 200, "{plan}");
    assert!(plan["update"].as_array().unwrap().is_empty(), "{plan}");
    assert!(plan["create"].as_array().unwrap().is_empty(), "{plan}");
    let mut changed = doc;
    changed["calendars"][1]["excluded"] = json!([]);
    changed["dry_run"] = json!(true);
    let (_, plan) = env.api.post("/v1/apply", changed).await;
    assert_eq!(plan["update"][0]["kind"], "calendar", "{plan}");
    env.close().await;
}

#[tokio::test]
async fn a_calendar_keeps_fires_to_its_business_days_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test]
async fn a_calendar_keeps_fires_to_its_business_days_mariadb() {
    scenario(Db::MySql).await;
}

#[tokio::test]
async fn a_calendar_keeps_fires_to_its_business_days_postgres() {
    scenario(Db::Postgres).await;
}
