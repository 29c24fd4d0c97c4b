//! The job list's filters, order and pages (`GET /v1/jobs`), and the enum values the console
//! builds its selects from (`GET /v1/options`), on every database: text filters match any part
//! in any case and take LIKE's wildcards literally, pages by offset neither repeat nor skip a
//! job, a console user's pages hold only their groups' jobs, and every bound is enforced.

mod common;

use common::{login, Api, Db, TestDb};
use reqwest::Method;
use serde_json::{json, Value};

/// The ids of a job list answer.
fn ids(v: &Value) -> Vec<i64> {
    v.as_array()
        .unwrap_or_else(|| panic!("a list: {v}"))
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect()
}

async fn list(api: &Api, query: &str) -> Vec<i64> {
    let (s, v) = api.get(&format!("/v1/jobs?{query}")).await;
    assert_eq!(s, 200, "{query}: {v}");
    ids(&v)
}

async fn job_list_filters_sorts_and_pages(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let base = format!("http://{}", handle.local_addr);
    let team = api.ok("/v1/groups", json!({"app_name": "team"})).await["id"]
        .as_i64()
        .unwrap();
    let other = api.ok("/v1/groups", json!({"app_name": "other"})).await["id"]
        .as_i64()
        .unwrap();
    // (group, description, owner, handler)
    let specs = [
        (team, "Nightly report", "Alice", "reportHandler"),
        (team, "backup 100%", "bob", "backupHandler"),
        (team, "cleanup", "Alice", "cleanHandler"),
        (other, "billing", "Carol", "billHandler"),
        (other, "Archive_old", "dave", "archiveHandler"),
    ];
    let mut made = Vec::new();
    for (g, d, o, h) in specs {
        let v = api
            .ok(
                "/v1/jobs",
                json!({"group_id": g, "description": d, "owner": o, "handler": h, "schedule_type": "NONE"}),
            )
            .await;
        made.push(v["id"].as_i64().unwrap());
    }
    let [report, backup, cleanup, billing, archive] = made[..] else {
        unreachable!()
    };
    let (s, v) = api
        .call(
            Method::PUT,
            &format!("/v1/jobs/{cleanup}"),
            Some(json!({"schedule_type": "CRON", "schedule_expr": "0 0 0 1 1 ?"})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = api.call(Method::POST, &format!("/v1/jobs/{cleanup}/start"), None).await;
    assert_eq!(s, 200, "{v}");

    // Without the new parameters the answer is what it always was: every job by id.
    assert_eq!(list(&api, "").await, made);
    assert_eq!(
        list(&api, &format!("after_id={backup}&limit=2")).await,
        [cleanup, billing]
    );

    // Text filters: any part, any case; `q` looks in description, handler and owner.
    assert_eq!(list(&api, "owner=alice").await, [report, cleanup]);
    assert_eq!(list(&api, "q=ALICE").await, [report, cleanup]);
    assert_eq!(list(&api, "q=billhand").await, [billing]);
    assert_eq!(list(&api, "description=RE").await, [report]);
    assert_eq!(
        list(&api, &format!("handler=Handler&group_id={other}")).await,
        [billing, archive]
    );
    // LIKE's wildcards are literal characters of the filter.
    assert_eq!(list(&api, "description=100%25").await, [backup]);
    assert_eq!(list(&api, "description=e_o").await, [archive]);
    assert_eq!(list(&api, "q=%25").await, [backup]);
    assert_eq!(list(&api, "running=true").await, [cleanup]);
    assert_eq!(list(&api, "running=false").await, [report, backup, billing, archive]);

    // Order by a field, both ways, in any case (the same on every database); ties keep the id
    // order of the direction.
    assert_eq!(
        list(&api, "sort=owner").await,
        [report, cleanup, backup, billing, archive]
    );
    assert_eq!(
        list(&api, "sort=description&order=desc&limit=2").await,
        [report, cleanup]
    );
    assert_eq!(
        list(&api, "sort=id&order=desc").await,
        made.iter().rev().copied().collect::<Vec<_>>()
    );
    assert_eq!(
        list(&api, "sort=group_id&order=desc").await,
        [archive, billing, cleanup, backup, report]
    );

    // Pages by offset cover the list once.
    let mut paged = Vec::new();
    for offset in (0..6).step_by(2) {
        paged.extend(list(&api, &format!("sort=description&limit=2&offset={offset}")).await);
    }
    assert_eq!(paged, list(&api, "sort=description").await);
    assert_eq!(paged.len(), 5);

    // Bounds: each bad parameter is refused, naming it.
    for (query, field) in [
        ("offset=-1", "offset"),
        ("offset=100001", "offset"),
        ("offset=x", "offset"),
        ("sort=password", "sort"),
        ("order=up", "order"),
        ("running=yes", "running"),
        ("limit=0", "limit"),
    ] {
        let (s, v) = api.get(&format!("/v1/jobs?{query}")).await;
        assert_eq!((s, &v["field"]), (400, &json!(field)), "{query}: {v}");
    }
    let long = "a".repeat(201);
    for name in ["q", "owner", "handler", "description"] {
        let (s, v) = api.get(&format!("/v1/jobs?{name}={long}")).await;
        assert_eq!((s, &v["field"]), (400, &json!(name)), "{name}: {v}");
        assert_eq!(list(&api, &format!("{name}={}", &long[..200])).await, Vec::<i64>::new());
    }

    // A console user limited to `team` pages through team's jobs only, whatever the filter.
    api.ok(
        "/v1/users",
        json!({"username": "erin", "password": "erin-password", "role": "user", "can_write": false, "group_ids": [team]}),
    )
    .await;
    let cookie = login(&base, "erin", "erin-password").await;
    let as_erin = |query: String| {
        let (base, cookie) = (base.clone(), cookie.clone());
        async move {
            let resp = reqwest::Client::new()
                .get(format!("{base}/v1/jobs?{query}"))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            ids(&resp.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(as_erin("sort=owner&order=desc".into()).await, [backup, cleanup, report]);
    assert_eq!(as_erin("q=a".into()).await, [report, backup, cleanup]);
    assert_eq!(as_erin("owner=carol".into()).await, Vec::<i64>::new());
    assert_eq!(as_erin("sort=description&limit=1&offset=1".into()).await, [cleanup]);

    handle.shutdown().await;
    db.drop_db().await;
}

/// `/v1/options` lists exactly the values the job API accepts: each one saves and reads back
/// unchanged (so a form built from it never turns one value into another), and the enums'
/// neighbours are refused.
async fn options_are_what_jobs_accept(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let api = Api::new(handle.local_addr);
    let (s, o) = api.get("/v1/options").await;
    assert_eq!(s, 200, "{o}");
    let values = |key: &str| -> Vec<String> {
        o[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key}: {o}"))
            .iter()
            .map(|c| c["value"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        values("misfire_strategies"),
        ["DO_NOTHING", "FIRE_ONCE_NOW", "CATCH_UP"]
    );
    assert_eq!(values("schedule_types"), ["NONE", "CRON", "FIX_RATE", "FIX_DELAY"]);
    assert_eq!(
        values("block_strategies"),
        ["SERIAL_EXECUTION", "DISCARD_LATER", "COVER_EARLY"]
    );
    assert_eq!(values("route_strategies").len(), 10);
    assert!(values("glue_types").contains(&"GLUE_PYTHON2".to_owned()));
    assert_eq!(o["misfire_strategies"][2]["title"], "Catch up");
    assert_eq!(o["alarm_email"], false, "no SMTP server is configured");
    let group = api.ok("/v1/groups", json!({"app_name": "opts"})).await["id"]
        .as_i64()
        .unwrap();
    for (field, key) in [
        ("misfire_strategy", "misfire_strategies"),
        ("route_strategy", "route_strategies"),
        ("block_strategy", "block_strategies"),
    ] {
        for value in values(key) {
            let job = api
                .ok(
                    "/v1/jobs",
                    json!({"group_id": group, "handler": "h", "schedule_type": "NONE", field: value}),
                )
                .await;
            let id = job["id"].as_i64().unwrap();
            // An edit that does not name the field keeps it.
            let (s, v) = api
                .call(Method::PUT, &format!("/v1/jobs/{id}"), Some(json!({"param": "x"})))
                .await;
            assert_eq!((s, &v[field]), (200, &json!(value)), "{field}={value}: {v}");
        }
        let (s, v) = api
            .post(
                "/v1/jobs",
                json!({"group_id": group, "handler": "h", "schedule_type": "NONE", field: "NOT_A_VALUE"}),
            )
            .await;
        assert_eq!((s, &v["field"]), (422, &json!(field)), "{v}");
    }
    // Options are for signed-in callers only.
    let anon = reqwest::get(format!("http://{}/v1/options", handle.local_addr))
        .await
        .unwrap();
    assert_eq!(anon.status(), 401);
    handle.shutdown().await;
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_list_filters_sorts_and_pages_sqlite() {
    job_list_filters_sorts_and_pages(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_list_filters_sorts_and_pages_mysql() {
    job_list_filters_sorts_and_pages(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_list_filters_sorts_and_pages_postgres() {
    job_list_filters_sorts_and_pages(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_are_what_jobs_accept_sqlite() {
    options_are_what_jobs_accept(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_are_what_jobs_accept_postgres() {
    options_are_what_jobs_accept(Db::Postgres).await;
}
