//! A job without a schedule (schedule type NONE) keeps no schedule expression, whether it is
//! created with one or switched to NONE from a cron, so nothing shows a schedule that never
//! fires nor brings an old one back; and starting it is refused with the reason, on the REST API.

mod common;

use common::{start_admin, Api, Db, TestDb};
use reqwest::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_without_schedule_keeps_no_expression_and_cannot_be_started() {
    let db = TestDb::new(Db::Sqlite).await;
    let admin = start_admin(&db.url).await;
    let api = Api::new(admin.local_addr);
    api.ok("/v1/groups", json!({"app_name": "by-hand"})).await;

    // Created as NONE with an expression (as a form or an XXL-JOB client may send it).
    let job = api
        .ok(
            "/v1/jobs",
            json!({"group": "by-hand", "handler": "h", "schedule_type": "NONE", "schedule_expr": "0 0 * * * ?"}),
        )
        .await;
    assert_eq!(job["schedule_type"], "NONE");
    assert_eq!(job["schedule_expr"], "", "{job}");
    let id = job["id"].as_i64().unwrap();

    let (status, refused) = api.post(&format!("/v1/jobs/{id}/start"), json!({})).await;
    assert_eq!(status, 422, "{refused}");
    let why = refused["error"].as_str().unwrap();
    assert!(why.contains("NONE") && why.contains("trigger"), "{why}");
    let (_, shown) = api.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(shown["running"], false, "{shown}");
    assert_eq!(shown["next_fire_at"], 0, "{shown}");

    // A cron job switched to NONE forgets its expression, and a switch back needs a new one.
    let cron = api
        .ok(
            "/v1/jobs",
            json!({"group": "by-hand", "handler": "h", "schedule_type": "CRON", "schedule_expr": "0 0 9 * * ?"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let (status, switched) = api
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{cron}"),
            Some(json!({"schedule_type": "NONE"})),
        )
        .await;
    assert_eq!(status, 200, "{switched}");
    assert_eq!(switched["schedule_expr"], "", "{switched}");
    let (status, back) = api
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{cron}"),
            Some(json!({"schedule_type": "CRON"})),
        )
        .await;
    assert_eq!(status, 422, "{back}");
    assert_eq!(back["field"], "schedule_expr", "{back}");
    let (status, refused) = api.post(&format!("/v1/jobs/{cron}/start"), json!({})).await;
    assert_eq!(status, 422, "{refused}");

    admin.shutdown().await;
    db.drop_db().await;
}
