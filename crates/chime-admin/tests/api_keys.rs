//! API keys over real HTTP against a real admin on SQLite, MariaDB and PostgreSQL: a key is
//! shown once and stored as a hash; it is held to its role and groups, and to its maker's
//! rights as they are now; its requests are audited under its name and its last use is
//! recorded; revoked, expired and orphaned keys are refused; a key cannot make keys. A table-
//! driven test holds group-limited, viewer and admin keys to every route of the access table.

mod common;

use chime_admin::http::access::{Rule, Target};
use chime_admin::http::routes::ROUTES;
use common::caller::{refuses_read_only, Caller, Targets};
use common::{Db, TestDb};
use reqwest::Method;
use serde_json::{json, Value};
use sqlx::{Connection, Row};
use std::time::Duration;

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_sqlite() {
    api_keys(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_mysql() {
    api_keys(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_postgres() {
    api_keys(Db::Postgres).await;
}

async fn api_keys(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let ga = api.new_group("team-a").await;
    let gb = api.new_group("team-b").await;
    let (job_a, job_b) = (api.new_job(ga).await, api.new_job(gb).await);
    let alice_id = id(&api
        .ok(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "alice", "password": "alice-pass-1", "group_ids": [ga]})),
        )
        .await);
    api.ok(
        Method::POST,
        "/v1/users",
        Some(json!({"username": "rob", "password": "rob-pass-12", "group_ids": [ga], "can_write": false})),
    )
    .await;
    let alice = Caller::login(&base, "alice", "alice-pass-1").await;
    let rob = Caller::login(&base, "rob", "rob-pass-12").await;

    // A key is made within its maker's rights only.
    let refused = [
        (&alice, json!({"name": "k1", "role": "editor", "group_ids": [gb]}), 403),
        (&alice, json!({"name": "k2", "role": "admin"}), 403),
        (&rob, json!({"name": "k3", "role": "editor", "group_ids": [ga]}), 403),
        (&alice, json!({"name": "k4", "role": "editor", "group_ids": []}), 422),
        (
            &alice,
            json!({"name": "bad name", "role": "viewer", "group_ids": [ga]}),
            422,
        ),
        (&alice, json!({"name": "k5", "role": "root", "group_ids": [ga]}), 400),
        (
            &alice,
            json!({"name": "k6", "role": "viewer", "group_ids": [ga], "expires_at": 1}),
            422,
        ),
        (&api, json!({"name": "k7", "role": "viewer", "group_ids": [9999]}), 422),
    ];
    for (who, body, status) in refused {
        let (s, v) = who.call(Method::POST, "/v1/api-keys", Some(body.clone())).await;
        assert_eq!(s, status, "{body}: {v}");
    }
    let (rob_token, _) = rob
        .new_key(json!({"name": "rob-reader", "role": "viewer", "group_ids": [ga]}))
        .await;

    // Shown once: the answer holds the token; the list and the database do not.
    let made = alice
        .ok(
            Method::POST,
            "/v1/api-keys",
            Some(json!({"name": "alice-ci", "role": "editor", "group_ids": [ga]})),
        )
        .await;
    let token = made["token"].as_str().unwrap().to_owned();
    let key_id = made["key"]["id"].as_i64().unwrap();
    assert!(token.starts_with("chk_") && token.len() == 68, "{token}");
    assert_eq!(made["key"]["prefix"].as_str(), Some(&token[..12]));
    assert_eq!(made["key"]["owner_id"].as_i64(), Some(alice_id));
    assert_eq!(made["key"]["state"], "active");
    let (s, v) = alice
        .call(
            Method::POST,
            "/v1/api-keys",
            Some(json!({"name": "alice-ci", "role": "viewer", "group_ids": [ga]})),
        )
        .await;
    assert_eq!(s, 409, "a second key of the same name: {v}");
    let listed = alice.ok(Method::GET, "/v1/api-keys", None).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "alice sees her key only: {listed}");
    assert!(!listed.to_string().contains(&token[12..]), "{listed}");
    assert_eq!(
        api.ok(Method::GET, "/v1/api-keys", None)
            .await
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let mut conn = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    let row = sqlx::query("SELECT token_hash FROM api_key WHERE name = 'alice-ci'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let stored: String = row
        .try_get("token_hash")
        .unwrap_or_else(|_| String::from_utf8(row.try_get::<Vec<u8>, _>("token_hash").unwrap()).unwrap());
    assert_eq!(stored, chime_admin::token::sha256_hex(&token));

    // Used: its groups only, its role, audited under its name, its last use recorded.
    let key = Caller::with_key(&base, &token);
    let jobs = key.ok(Method::GET, "/v1/jobs", None).await;
    let ids: Vec<i64> = jobs.as_array().unwrap().iter().map(id).collect();
    assert_eq!(ids, vec![job_a]);
    let (s, _) = key.call(Method::GET, &format!("/v1/jobs/{job_b}"), None).await;
    assert_eq!(s, 403, "another group's job");
    let (s, _) = key.call(Method::POST, &format!("/v1/jobs/{job_b}/trigger"), None).await;
    assert_eq!(s, 403, "another group's job");
    key.ok(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None).await;
    key.ok(
        Method::PATCH,
        &format!("/v1/jobs/{job_a}"),
        Some(json!({"description": "by the key"})),
    )
    .await;
    let (s, _) = key.call(Method::GET, "/v1/users", None).await;
    assert_eq!(s, 403, "an editor key is no administrator");
    let (s, v) = key
        .call(
            Method::POST,
            "/v1/api-keys",
            Some(json!({"name": "child", "role": "viewer", "group_ids": [ga]})),
        )
        .await;
    assert_eq!(s, 403, "a key cannot make keys: {v}");
    let (s, _) = key
        .call(
            Method::POST,
            "/v1/me/password",
            Some(json!({"current_password": "alice-pass-1", "new_password": "x-1234567"})),
        )
        .await;
    assert_eq!(s, 403, "a key cannot change its maker's password");
    let audit = api.ok(Method::GET, "/v1/audit?username=key:alice-ci", None).await;
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert!(actions.contains(&"POST /v1/jobs/{id}/trigger"), "{audit}");
    assert!(actions.contains(&"PATCH /v1/jobs/{id}"), "{audit}");
    assert!(
        actions.contains(&"POST /v1/api-keys"),
        "the refused attempt is audited: {audit}"
    );
    let shown = alice.ok(Method::GET, &format!("/v1/api-keys/{key_id}"), None).await;
    assert!(shown["last_used_at"].as_i64().is_some_and(|t| t > 0), "{shown}");

    // A viewer key reads and cannot write.
    let reader = Caller::with_key(&base, &rob_token);
    reader.ok(Method::GET, &format!("/v1/jobs/{job_a}"), None).await;
    let (s, _) = reader
        .call(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None)
        .await;
    assert_eq!(s, 403);

    // The maker's rights now bound the key: read-only alice's editor key writes no more.
    api.ok(
        Method::PUT,
        &format!("/v1/users/{alice_id}"),
        Some(json!({"can_write": false})),
    )
    .await;
    let (s, _) = key.call(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None).await;
    assert_eq!(s, 403, "alice is read-only now");
    key.ok(Method::GET, &format!("/v1/jobs/{job_a}"), None).await;
    api.ok(
        Method::PUT,
        &format!("/v1/users/{alice_id}"),
        Some(json!({"can_write": true})),
    )
    .await;

    // Revoked: only by its maker or an administrator; refused at once, still listed.
    let (s, _) = rob.call(Method::DELETE, &format!("/v1/api-keys/{key_id}"), None).await;
    assert_eq!(s, 403, "not rob's key");
    let (s, _) = rob.call(Method::GET, &format!("/v1/api-keys/{key_id}"), None).await;
    assert_eq!(s, 403, "not rob's key");
    let revoked = alice.ok(Method::DELETE, &format!("/v1/api-keys/{key_id}"), None).await;
    assert_eq!(revoked["state"], "revoked", "{revoked}");
    let (s, v) = key.call(Method::GET, "/v1/jobs", None).await;
    assert_eq!(
        (s.as_u16(), v["error"].as_str()),
        (401, Some("this API key was revoked"))
    );
    let (s, v) = Caller::with_key(&base, "chk_0000")
        .call(Method::GET, "/v1/jobs", None)
        .await;
    assert_eq!((s.as_u16(), v["error"].as_str()), (401, Some("unknown API key")));

    // Expired: refused once its time has passed.
    let soon = chime_admin::model::now_ms() + 1_500;
    let (short, short_id) = alice
        .new_key(json!({"name": "short", "role": "viewer", "group_ids": [ga], "expires_at": soon}))
        .await;
    Caller::with_key(&base, &short).ok(Method::GET, "/v1/jobs", None).await;
    tokio::time::sleep(Duration::from_millis(1_700)).await;
    let (s, v) = Caller::with_key(&base, &short)
        .call(Method::GET, "/v1/jobs", None)
        .await;
    assert_eq!(
        (s.as_u16(), v["error"].as_str()),
        (401, Some("this API key has expired"))
    );
    let shown = alice.ok(Method::GET, &format!("/v1/api-keys/{short_id}"), None).await;
    assert_eq!(shown["state"], "expired");

    // Orphaned: a deleted user's keys stop working.
    let (other, _) = alice
        .new_key(json!({"name": "alice-2", "role": "viewer", "group_ids": [ga]}))
        .await;
    Caller::with_key(&base, &other).ok(Method::GET, "/v1/jobs", None).await;
    api.call(Method::DELETE, &format!("/v1/users/{alice_id}"), None).await;
    let (s, _) = Caller::with_key(&base, &other)
        .call(Method::GET, "/v1/jobs", None)
        .await;
    assert_eq!(s, 401, "alice was deleted");
    db.drop_db().await;
}

/// Every route of the access table, called with keys: an editor key of group A on group B's
/// objects, a viewer key on every change, an editor key on every administrator's route: each is
/// refused (403). An admin key passes where the API token does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_held_to_their_groups_and_role_on_every_route() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let ga = api.new_group("team-a").await;
    let gb = api.new_group("team-b").await;
    let (job_a, job_b) = (api.new_job(ga).await, api.new_job(gb).await);
    let (run_a, run_b) = (api.new_run(job_a).await, api.new_run(job_b).await);
    let (editor, editor_id) = api
        .new_key(json!({"name": "editor-a", "role": "editor", "group_ids": [ga]}))
        .await;
    let (viewer, _) = api
        .new_key(json!({"name": "viewer-a", "role": "viewer", "group_ids": [ga]}))
        .await;
    let (root, _) = api.new_key(json!({"name": "root", "role": "admin"})).await;
    let (editor, viewer, root) = (
        Caller::with_key(&base, &editor),
        Caller::with_key(&base, &viewer),
        Caller::with_key(&base, &root),
    );
    let mine = Targets {
        group: ga,
        job: job_a,
        run: run_a,
        other: editor_id,
    };
    let theirs = Targets {
        group: gb,
        job: job_b,
        run: run_b,
        other: editor_id,
    };
    let mut checked = 0;
    for route in ROUTES.iter().filter(|r| r.rule != Rule::Public) {
        let m = Method::from_bytes(route.method.as_bytes()).unwrap();
        let writes = route.method != "GET";
        let what = format!("{} {}", route.method, route.path);
        if route.rule == Rule::Admin {
            let (s, v) = editor.call(m.clone(), &mine.path(route.path), Some(json!({}))).await;
            assert_eq!(s, 403, "{what} with an editor key: {v}");
            checked += 1;
            if !writes {
                let (s, v) = root.call(m.clone(), &mine.path(route.path), None).await;
                assert!(s != 401 && s != 403, "{what} with an admin key: {s} {v}");
            }
        }
        let viewer_refused = refuses_read_only(route.rule);
        if writes && viewer_refused {
            let body = json!({"group_id": ga, "description": "x"});
            let (s, v) = viewer.call(m.clone(), &mine.path(route.path), Some(body)).await;
            assert_eq!(s, 403, "{what} with a viewer key: {v}");
            checked += 1;
        }
        if matches!(
            route.rule,
            Rule::Read(_) | Rule::Write(_) | Rule::Operate(_) | Rule::ManageGroup(_) | Rule::UpdateJob
        ) {
            let (s, v) = editor.call(m.clone(), &theirs.path(route.path), Some(json!({}))).await;
            assert_eq!(s, 403, "{what} on group B with a key of group A: {v}");
            checked += 1;
        }
        if let Rule::Read(Target::Job | Target::Run | Target::GroupKey) = route.rule {
            let (s, v) = viewer.call(m.clone(), &mine.path(route.path), None).await;
            assert!(
                s != 401 && s != 403,
                "{what} in its own group with a viewer key: {s} {v}"
            );
        }
    }
    assert!(checked > 40, "only {checked} refusals checked");
    // Creating a job in another group with a key of group A.
    let (s, _) = editor
        .call(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group_id": gb, "description": "x", "handler": "h"})),
        )
        .await;
    assert_eq!(s, 403);
    // Lists hold only the key's group.
    for path in ["/v1/jobs", "/v1/groups", "/v1/runs"] {
        let all = editor.ok(Method::GET, path, None).await;
        let field = if path == "/v1/groups" { "id" } else { "group_id" };
        assert!(
            !all.as_array().unwrap().is_empty() && all.as_array().unwrap().iter().all(|v| v[field] == ga),
            "{path}: {all}"
        );
    }
}
