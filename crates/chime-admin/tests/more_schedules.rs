//! A job with several schedules, through the REST API on SQLite, MariaDB and PostgreSQL: its
//! next fire times are the merged times of all of them, each in its own zone, one where two
//! meet; a job's further schedules fire at a real executor over HTTP, once per instant; they
//! are stored, shown, changed and removed with the job; bad ones are refused naming the entry.

mod common;

use chrono::{NaiveTime, TimeZone, Utc};
use common::executor::TestExecutor;
use common::{Db, Env, ACCESS_TOKEN};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

const APP: &str = "more-schedules";

/// The next `n` times (epoch ms) after `after` at which `hour:00` falls in any of `zones`,
/// computed day by day with chrono: what the merged calendar must give.
fn daily_times_in_zones(after: i64, slots: &[(u32, chrono_tz::Tz)], n: usize) -> Vec<i64> {
    let start = Utc.timestamp_millis_opt(after).unwrap().date_naive();
    let mut times = BTreeSet::new();
    for day in 0..(n as i64 + 2) {
        let date = start - chrono::Days::new(1) + chrono::Days::new(day as u64);
        for (hour, zone) in slots {
            let local = date.and_time(NaiveTime::from_hms_opt(*hour, 0, 0).unwrap());
            if let Some(t) = zone.from_local_datetime(&local).earliest() {
                times.insert(t.timestamp_millis());
            }
        }
    }
    times.into_iter().filter(|t| *t > after).take(n).collect()
}

fn next_times(answer: &Value) -> Vec<i64> {
    answer["next"]
        .as_array()
        .expect("next fire times")
        .iter()
        .map(|n| n["at"].as_i64().unwrap())
        .collect()
}

async fn scenario(kind: Db) {
    let env = Env::start(kind, Duration::from_secs(5)).await;
    env.group(APP).await;

    // 1. 09:00 in Shanghai on its own schedule, 18:00 in Berlin and 01:00 UTC (which is 09:00 in
    //    Shanghai: it meets the first) as further ones.
    let job = env
        .job(
            json!({"group": APP, "handler": "ok", "schedule_type": "CRON", "schedule_expr": "0 0 9 * * ?",
                    "time_zone": "Asia/Shanghai", "running": true,
                    "more_schedules": [
                        {"schedule_type": "CRON", "schedule_expr": " 0 0 18 * * ? ", "time_zone": "Europe/Berlin"},
                        {"schedule_type": "CRON", "schedule_expr": "0 0 1 * * ?", "time_zone": "UTC"}]}),
        )
        .await;
    let (s, stored) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(s, 200, "{stored}");
    assert_eq!(
        stored["more_schedules"],
        json!([{"schedule_type": "CRON", "schedule_expr": "0 0 18 * * ?", "time_zone": "Europe/Berlin"},
               {"schedule_type": "CRON", "schedule_expr": "0 0 1 * * ?", "time_zone": "UTC"}]),
        "stored trimmed, in order"
    );
    let slots = [
        (9, chrono_tz::Asia::Shanghai),
        (18, chrono_tz::Europe::Berlin),
        (1, chrono_tz::UTC),
    ];
    let asked_at = chime_admin::model::now_ms();
    let (_, next) = env.api.get(&format!("/v1/jobs/{job}/next?count=6")).await;
    let want = daily_times_in_zones(asked_at, &slots, 6);
    assert_eq!(next_times(&next), want, "merged, one per instant: {next}");
    // The first fire claimed is the earliest of them all.
    assert_eq!(stored["next_fire_at"].as_i64(), want.first().copied(), "{stored}");

    // The console's preview of a form not saved yet merges them the same way.
    let more = json!([{"schedule_type": "CRON", "schedule_expr": "0 0 18 * * ?", "time_zone": "Europe/Berlin"},
                      {"schedule_type": "CRON", "schedule_expr": "0 0 1 * * ?", "time_zone": "UTC"}]);
    let url = reqwest::Url::parse_with_params(
        "http://admin/v1/schedule/preview",
        [
            ("type", "CRON"),
            ("expr", "0 0 9 * * ?"),
            ("tz", "Asia/Shanghai"),
            ("count", "6"),
            ("more", &more.to_string()),
        ],
    )
    .unwrap();
    let (s, preview) = env.api.get(&format!("{}?{}", url.path(), url.query().unwrap())).await;
    assert_eq!(s, 200, "{preview}");
    let again = daily_times_in_zones(chime_admin::model::now_ms(), &slots, 6);
    assert_eq!(next_times(&preview), again, "{preview}");

    // 2. Refused, naming the entry: a bad expression, a bad zone, a type that is no grid, too
    //    many, and further schedules on a job whose own is a fixed delay. Nothing is changed.
    for (body, field) in [
        (
            json!({"more_schedules": [{"schedule_type": "CRON", "schedule_expr": "0 0 18 * * ?"},
                                   {"schedule_type": "CRON", "schedule_expr": "0 0 25 * * ?"}]}),
            "more_schedules[1].schedule_expr",
        ),
        (
            json!({"more_schedules": [{"schedule_type": "CRON", "schedule_expr": "0 0 18 * * ?", "time_zone": "Mars/Olympus"}]}),
            "more_schedules[0].time_zone",
        ),
        (
            json!({"more_schedules": [{"schedule_type": "FIX_DELAY", "schedule_expr": "30"}]}),
            "more_schedules[0].schedule_type",
        ),
        (
            json!({"more_schedules": vec![json!({"schedule_type": "FIX_RATE", "schedule_expr": "60"}); 9]}),
            "more_schedules",
        ),
        (
            json!({"schedule_type": "FIX_DELAY", "schedule_expr": "30"}),
            "more_schedules",
        ),
    ] {
        let (s, answer) = put(&env, &format!("/v1/jobs/{job}"), body.clone()).await;
        assert_eq!(s, 422, "{body} -> {answer}");
        assert_eq!(answer["field"], field, "{body} -> {answer}");
    }
    let (s, answer) = put(
        &env,
        &format!("/v1/jobs/{job}"),
        json!({"more_schedules": [{"schedule_type": "CRON"}]}),
    )
    .await;
    assert_eq!(s, 400, "a further schedule without its expression: {answer}");
    let (_, unchanged) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(unchanged["more_schedules"], stored["more_schedules"]);

    // A change of another field keeps them; `[]` removes them, and the job fires on its own
    // schedule again.
    let (s, answer) = put(&env, &format!("/v1/jobs/{job}"), json!({"description": "renamed"})).await;
    assert_eq!(s, 200, "{answer}");
    let (_, kept) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(kept["more_schedules"], stored["more_schedules"]);
    let (s, answer) = put(&env, &format!("/v1/jobs/{job}"), json!({"more_schedules": []})).await;
    assert_eq!(s, 200, "{answer}");
    let (_, alone) = env.api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(alone["more_schedules"], json!([]));
    let (_, next) = env.api.get(&format!("/v1/jobs/{job}/next?count=3")).await;
    let own = daily_times_in_zones(chime_admin::model::now_ms(), &[(9, chrono_tz::Asia::Shanghai)], 3);
    assert_eq!(next_times(&next), own, "{next}");

    // 3. At a real executor: a job whose own schedule fires once a year and whose further ones
    //    fire every second and every two seconds. It runs every second, once each, and its
    //    runs are scheduled exactly on the second.
    let ex = TestExecutor::start(&env.prefix, APP, ACCESS_TOKEN).await;
    env.api.wait_executors(APP, 1).await;
    let busy = env
        .job(
            json!({"group": APP, "handler": "ok", "schedule_type": "CRON", "schedule_expr": "0 0 0 1 1 ?",
                    "time_zone": "UTC", "running": true,
                    "more_schedules": [{"schedule_type": "CRON", "schedule_expr": "* * * * * ?"},
                                       {"schedule_type": "CRON", "schedule_expr": "*/2 * * * * ?"}]}),
        )
        .await;
    let runs = env
        .api
        .wait_runs(busy, 60, "six successful runs", |r| {
            r.iter().filter(|r| r["status"] == "success").count() >= 6
        })
        .await;
    env.api.ok(&format!("/v1/jobs/{busy}/stop"), json!({})).await;
    let mut per_second: BTreeMap<i64, usize> = BTreeMap::new();
    for r in &runs {
        assert_eq!(r["trigger_type"], "CRON", "{r}");
        *per_second.entry(r["scheduled_at"].as_i64().unwrap()).or_default() += 1;
    }
    assert!(
        per_second.values().all(|n| *n == 1),
        "one run per instant: {per_second:?}"
    );
    assert!(per_second.keys().all(|at| at % 1000 == 0), "{per_second:?}");
    let seconds: Vec<i64> = per_second.keys().copied().collect();
    assert!(
        seconds.windows(2).all(|w| w[1] - w[0] == 1000),
        "every second, none left out: {seconds:?}"
    );
    // The executor got each run once.
    let delivered: Vec<i64> = ex.seen.lock().unwrap().runs.iter().map(|t| t.log_id).collect();
    let ids: BTreeSet<i64> = delivered.iter().copied().collect();
    assert_eq!(ids.len(), delivered.len(), "a run delivered twice: {delivered:?}");
    for r in runs.iter().filter(|r| r["status"] == "success") {
        assert!(
            ids.contains(&r["id"].as_i64().unwrap()),
            "{r} never reached the executor"
        );
    }
    env.close().await;
}

async fn put(env: &Env, path: &str, body: Value) -> (u16, Value) {
    env.api.call(reqwest::Method::PUT, path, Some(body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_schedules_sqlite() {
    scenario(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_schedules_mysql() {
    scenario(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn more_schedules_postgres() {
    scenario(Db::Postgres).await;
}
