//! Bad input to the console's endpoints changes nothing and is answered with a clear 4xx, on
//! every database: a user update with one invalid field applies none of the others, and
//! dashboard time ranges at the ends of the integer range are refused instead of wrapping.

mod common;

use common::{login, Api, Db, TestDb};
use reqwest::Method;
use serde_json::{json, Value};

/// Status of `GET /console/api/me` with `cookie`.
async fn me(base: &str, cookie: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{base}/console/api/me"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn user_update_is_all_or_nothing(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}", handle.local_addr);
    let group = api.ok("/v1/groups", json!({"app_name": "team"})).await["id"]
        .as_i64()
        .unwrap();
    let user = api
        .ok(
            "/v1/users",
            json!({"username": "dana", "password": "first-password", "role": "user", "can_write": false, "group_ids": []}),
        )
        .await;
    let id = user["id"].as_i64().unwrap();
    let session = login(&base, "dana", "first-password").await;
    assert_eq!(me(&base, &session).await, 200);
    let put = |body: Value| {
        let api = api.clone();
        async move { api.call(Method::PUT, &format!("/v1/users/{id}"), Some(body)).await }
    };
    let unchanged = |what: &str, v: &Value| {
        assert_eq!(
            (&v["role"], &v["can_write"], &v["group_ids"]),
            (&json!("user"), &json!(false), &json!([])),
            "{what}: nothing was applied: {v}"
        );
    };

    // A valid role, write permission and groups with a password that is too short.
    let (s, v) = put(json!({"role": "admin", "can_write": true, "group_ids": [group], "password": "short"})).await;
    assert_eq!((s, &v["field"]), (422, &json!("password")), "{v}");
    let (_, now) = api.get(&format!("/v1/users/{id}")).await;
    unchanged("invalid password", &now);
    assert_eq!(me(&base, &session).await, 200, "the session was not ended");

    // A new password with a group that does not exist.
    let (s, v) = put(json!({"role": "admin", "password": "second-password", "group_ids": [group + 1000]})).await;
    assert_eq!((s, &v["field"]), (422, &json!("group_ids")), "{v}");
    let (_, now) = api.get(&format!("/v1/users/{id}")).await;
    unchanged("unknown group", &now);
    assert_eq!(me(&base, &session).await, 200, "the session was not ended");
    login(&base, "dana", "first-password").await;

    // All valid: everything is applied, and the new password ends the user's sessions.
    let (s, v) =
        put(json!({"role": "user", "can_write": true, "group_ids": [group], "password": "second-password"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (&v["can_write"], &v["group_ids"]),
        (&json!(true), &json!([group])),
        "{v}"
    );
    assert_eq!(me(&base, &session).await, 401, "a reset password ends the sessions");
    login(&base, "dana", "second-password").await;

    // A user that does not exist.
    let (s, v) = api
        .call(Method::PUT, "/v1/users/99999", Some(json!({"role": "user"})))
        .await;
    assert_eq!(s, 404, "{v}");
    handle.shutdown().await;
    db.drop_db().await;
}

async fn stats_ranges_do_not_overflow(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let (min, max) = (i64::MIN, i64::MAX);
    for (query, field) in [
        (format!("from={min}&to={max}"), "to"),
        (format!("from={min}&to=86400000"), "from"),
        (format!("to={min}"), "to"),
        (format!("from={}&to={max}", max - 86_400_000), "to"),
        ("from=-86400000&to=86400000".to_owned(), "from"),
        (format!("from=0&to={max}"), "to"),
        // Inside the allowed times, but not 1 to 366 days long.
        ("from=0&to=253402300799999".to_owned(), "from"),
        ("from=86400000&to=86400000".to_owned(), "from"),
    ] {
        let (s, v) = api.get(&format!("/v1/stats?{query}")).await;
        assert_eq!(s, 400, "{query}: {v}");
        assert_eq!(v["field"], field, "{query}: {v}");
        assert!(!v["error"].as_str().unwrap_or("").is_empty(), "{query}: {v}");
    }
    // The last day the range may reach, and an ordinary week.
    let last = 253_402_300_799_999_i64;
    let (s, v) = api
        .get(&format!("/v1/stats?from={}&to={last}", last - 7 * 86_400_000))
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["days"].as_array().map(Vec::len), Some(8), "{v}");
    let (s, v) = api.get("/v1/stats").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["days"].as_array().map(Vec::len), Some(7), "{v}");
    let (s, _) = api.get("/healthz").await;
    assert_eq!(s, 200, "the admin is up");
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_update_is_all_or_nothing_sqlite() {
    user_update_is_all_or_nothing(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_update_is_all_or_nothing_mysql() {
    user_update_is_all_or_nothing(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_update_is_all_or_nothing_postgres() {
    user_update_is_all_or_nothing(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_ranges_do_not_overflow_sqlite() {
    stats_ranges_do_not_overflow(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_ranges_do_not_overflow_mysql() {
    stats_ranges_do_not_overflow(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_ranges_do_not_overflow_postgres() {
    stats_ranges_do_not_overflow(Db::Postgres).await;
}
