//! Access control of the REST API and the console, over real HTTP against a real admin: every
//! route in the access table is checked for unauthenticated (401), wrong role (403), read-only
//! (403 on writes) and other group (403); the table must list exactly the routes and methods
//! the real router serves; group changes are the admins', child jobs stay in the user's groups;
//! lists page within the caller's groups and runs filter by time (SQLite, MariaDB, PostgreSQL);
//! CSRF, login limits per user and per address, logout, sessions surviving a restart, the audit
//! log with refused attempts and its filters, security headers and stored XSS attempts (job
//! description, parameter, run result and log).

mod common;

use chime_admin::http::access::{Rule, Target};
use chime_admin::http::routes::ROUTES;
use common::caller::{refuses_read_only, Caller, Targets};
use common::{Db, TestDb};
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::BTreeSet;

const XSS: &str = "<img src=x onerror=alert(1)>";

fn method(m: &str) -> Method {
    Method::from_bytes(m.as_bytes()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_control() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);

    // Two groups, a job in each, a run of B's job (no executor: it fails, but it exists).
    let ga = api
        .ok(Method::POST, "/v1/groups", Some(json!({"app_name": "team-a"})))
        .await["id"]
        .as_i64()
        .unwrap();
    let gb = api
        .ok(Method::POST, "/v1/groups", Some(json!({"app_name": "team-b"})))
        .await["id"]
        .as_i64()
        .unwrap();
    let job_a = api
        .ok(Method::POST, "/v1/jobs", Some(json!({"group_id": ga, "description": XSS, "param": XSS, "handler": "h", "schedule_type": "CRON", "schedule_expr": "0 0 * * * ?"})))
        .await["id"]
        .as_i64()
        .unwrap();
    let job_b = api
        .ok(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group_id": gb, "description": "b", "handler": "h", "schedule_type": "NONE"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let run_b = api.ok(Method::POST, &format!("/v1/jobs/{job_b}/trigger"), None).await["run_id"]
        .as_i64()
        .unwrap();
    let run_a = api.ok(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None).await["run_id"]
        .as_i64()
        .unwrap();

    // Console users: alice writes in A, rob reads A.
    let admin = Caller::login(&base, "admin", "test-password").await;
    let alice_id = admin
        .ok(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "alice", "password": "alice-pass-1", "group_ids": [ga]})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    admin
        .ok(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "rob", "password": "rob-pass-12", "group_ids": [ga], "can_write": false})),
        )
        .await;
    let alice = Caller::login(&base, "alice", "alice-pass-1").await;
    let rob = Caller::login(&base, "rob", "rob-pass-12").await;
    let anon = Caller::anonymous(&base);

    // Each route of the table answers over HTTP as the table says (the guard found its rule: no
    // 404 or 405, no "no access rule"); routes and methods the router does not serve are refused.
    let ids = Targets {
        group: ga,
        job: job_a,
        run: run_a,
        other: alice_id,
    };
    for route in ROUTES {
        let (s, v) = anon
            .call(method(route.method), &ids.path(route.path), Some(json!({})))
            .await;
        // A 404 of the router is its JSON "route not found"; a served route may answer 404 of
        // its own (an unknown login provider's page).
        let unserved = s == 404 && v["error"] == "route not found";
        assert!(
            !unserved && s != 405 && v["error"] != "this route has no access rule",
            "{} {} is in the table but not served: {s} {v}",
            route.method,
            route.path
        );
    }
    let paths: BTreeSet<&str> = ROUTES.iter().map(|r| r.path).collect();
    for path in paths {
        for m in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
            if ROUTES.iter().any(|r| r.path == path && r.method == m) {
                continue;
            }
            // 405 from the router, or the guard's refusal of a route it has no rule for.
            let (s, v) = api.call(method(m), &ids.path(path), None).await;
            assert!(
                s == 405 || (s == 403 && v["error"] == "this route has no access rule"),
                "{m} {path} is not in the table, so it must not be served: {s} {v}"
            );
        }
    }
    for path in ["/v1/nothing", "/v1/jobs/1/nothing", "/console/api/nothing"] {
        let (s, _) = api.call(Method::GET, path, None).await;
        assert_eq!(s, 404, "{path} is no route");
    }
    // A route given to a guarded router without a rule is refused (fail closed), not served.
    let extra = axum::Router::new()
        .route("/v1/unlisted", axum::routing::get(|| async { "served" }))
        .route_layer(axum::middleware::from_fn_with_state(
            handle.admin.clone(),
            chime_admin::http::access::guard,
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let extra_base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, extra).await });
    let (s, v) = Caller::api(&extra_base).call(Method::GET, "/v1/unlisted", None).await;
    server.abort();
    assert_eq!(
        (s.as_u16(), v["error"].as_str()),
        (403, Some("this route has no access rule"))
    );

    let mine = Targets {
        group: ga,
        job: job_a,
        run: run_a,
        other: alice_id,
    };
    let theirs = Targets {
        group: gb,
        job: job_b,
        run: run_b,
        other: alice_id,
    };
    for route in ROUTES {
        let m = method(route.method);
        let writes = route.method != "GET";
        // Unauthenticated.
        let (s, _) = anon.call(m.clone(), &mine.path(route.path), Some(json!({}))).await;
        if route.rule == Rule::Public {
            assert_ne!(s, 401, "{} {} is public", route.method, route.path);
        } else {
            assert_eq!(s, 401, "{} {} without credentials", route.method, route.path);
        }
        // Wrong role.
        if route.rule == Rule::Admin {
            let (s, _) = alice.call(m.clone(), &mine.path(route.path), Some(json!({}))).await;
            assert_eq!(s, 403, "{} {} as a user", route.method, route.path);
        }
        // Read-only user on writes.
        let rob_refused = refuses_read_only(route.rule);
        if writes && rob_refused {
            let body = json!({"group_id": ga, "description": "x"});
            let (s, v) = rob.call(m.clone(), &mine.path(route.path), Some(body)).await;
            assert_eq!(s, 403, "{} {} as read-only: {v}", route.method, route.path);
        }
        // Another group's target.
        if matches!(
            route.rule,
            Rule::Read(_) | Rule::Write(_) | Rule::Operate(_) | Rule::ManageGroup(_) | Rule::UpdateJob
        ) {
            let (s, v) = alice.call(m.clone(), &theirs.path(route.path), Some(json!({}))).await;
            assert_eq!(s, 403, "{} {} on group B as alice: {v}", route.method, route.path);
        }
        if let Rule::Read(Target::Job) | Rule::Read(Target::Run) | Rule::Read(Target::GroupKey) = route.rule {
            let (s, v) = rob.call(m.clone(), &mine.path(route.path), None).await;
            assert!(
                s != 401 && s != 403,
                "{} {} in own group as read-only: {s} {v}",
                route.method,
                route.path
            );
        }
    }

    // Lists are filtered; an explicit other group is refused.
    for path in ["/v1/jobs", "/v1/groups", "/v1/runs", "/v1/executors"] {
        let all = alice.ok(Method::GET, path, None).await;
        let field = if path == "/v1/groups" { "id" } else { "group_id" };
        assert!(all.as_array().unwrap().iter().all(|v| v[field] == ga), "{path}: {all}");
    }
    assert_eq!(
        alice.ok(Method::GET, "/v1/jobs", None).await.as_array().unwrap().len(),
        1
    );
    assert_eq!(api.ok(Method::GET, "/v1/jobs", None).await.as_array().unwrap().len(), 2);
    let (s, _) = alice.call(Method::GET, &format!("/v1/runs?group_id={gb}"), None).await;
    assert_eq!(s, 403);
    let (s, _) = alice.call(Method::GET, "/v1/jobs?group=team-b", None).await;
    assert_eq!(s, 403);
    // The dashboard counts only the caller's groups; lateness is a number of seconds.
    let stats = alice.ok(Method::GET, "/v1/stats", None).await;
    assert_eq!(
        (stats["groups"].as_i64(), stats["jobs"].as_i64()),
        (Some(1), Some(1)),
        "{stats}"
    );
    assert!(
        stats["lateness"]["current_seconds"].as_f64().is_some_and(|s| s >= 0.0),
        "{stats}"
    );
    let all = api.ok(Method::GET, "/v1/stats", None).await;
    assert_eq!(all["jobs"].as_i64(), Some(2), "{all}");
    // Creating a job in another group, moving one there, or writing GLUE source: refused.
    let (s, _) = alice
        .call(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group_id": gb, "description": "x", "handler": "h"})),
        )
        .await;
    assert_eq!(s, 403);
    let (s, _) = alice
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"group_id": gb})),
        )
        .await;
    assert_eq!(s, 403);
    let (s, v) = alice
        .call(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group_id": ga, "description": "x", "glue_type": "GLUE_SHELL", "glue_source": "echo hi"})),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let (s, _) = alice
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"glue_source": "x"})),
        )
        .await;
    assert_eq!(s, 403);

    // Groups are changed by admins only: a user of group A who could point A's addresses at a
    // listener of their own would receive the executor access token, which every group shares.
    for m in [Method::PUT, Method::PATCH] {
        let (s, v) = alice
            .call(
                m.clone(),
                &format!("/v1/groups/{ga}"),
                Some(json!({"address_type": "manual", "addresses": ["http://127.0.0.1:9"]})),
            )
            .await;
        assert_eq!(s, 403, "{m} of her own group as alice: {v}");
    }
    let (s, _) = alice.call(Method::DELETE, &format!("/v1/groups/{ga}"), None).await;
    assert_eq!(s, 403);
    let (s, _) = alice
        .call(Method::POST, "/v1/groups", Some(json!({"app_name": "alice-own"})))
        .await;
    assert_eq!(s, 403);
    let group = api.ok(Method::GET, &format!("/v1/groups/{ga}"), None).await;
    assert_eq!(group["address_type"], "auto", "the group is unchanged: {group}");
    let (s, _) = admin
        .call(
            Method::PATCH,
            &format!("/v1/groups/{ga}"),
            Some(json!({"title": "Team A"})),
        )
        .await;
    assert_eq!(s, 200, "admins edit groups");

    // Child jobs run in their own group: linking one is operating that group. A job of A with
    // a child in B is refused on create and on update, with the reason; a child in A is fine.
    let (s, v) = alice
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"child_job_ids": [job_b]})),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains(&format!("child job {job_b}")),
        "the refusal names the child: {v}"
    );
    let (s, v) = alice
        .call(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group_id": ga, "description": "x", "handler": "h", "child_job_ids": [job_b]})),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    // A job id that does not exist gets the same answer: no telling which ids exist elsewhere.
    let (s, v2) = alice
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"child_job_ids": [999_999]})),
        )
        .await;
    assert_eq!(s, 403, "{v2}");
    let child_a = alice
        .ok(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group_id": ga, "description": "child", "handler": "h", "schedule_type": "NONE"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    alice
        .ok(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"child_job_ids": [child_a]})),
        )
        .await;
    // A cross-group link an admin made may stay when alice saves her job, but not grow.
    admin
        .ok(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"child_job_ids": [child_a, job_b]})),
        )
        .await;
    alice
        .ok(
            Method::PUT,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"description": XSS, "child_job_ids": [child_a, job_b]})),
        )
        .await;
    let job_b2 = api
        .ok(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group_id": gb, "description": "b2", "handler": "h", "schedule_type": "NONE"})),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let (s, _) = alice
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"child_job_ids": [child_a, job_b, job_b2]})),
        )
        .await;
    assert_eq!(s, 403);
    alice
        .ok(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"child_job_ids": []})),
        )
        .await;
    admin.ok(Method::DELETE, &format!("/v1/jobs/{job_b2}"), None).await;
    alice.ok(Method::DELETE, &format!("/v1/jobs/{child_a}"), None).await;

    // CSRF: a cookie-authenticated change needs the session's token in X-CSRF-Token.
    let no_csrf = Caller {
        csrf: None,
        ..alice.clone()
    };
    let (s, _) = no_csrf
        .call(Method::POST, &format!("/v1/jobs/{job_a}/stop"), None)
        .await;
    assert_eq!(s, 403);
    let wrong = Caller {
        csrf: Some("0".repeat(64)),
        ..alice.clone()
    };
    let (s, _) = wrong.call(Method::POST, &format!("/v1/jobs/{job_a}/stop"), None).await;
    assert_eq!(s, 403);
    let other = Caller {
        csrf: rob.csrf.clone(),
        ..alice.clone()
    };
    let (s, _) = other.call(Method::POST, &format!("/v1/jobs/{job_a}/stop"), None).await;
    assert_eq!(s, 403, "another session's CSRF token is wrong");
    let (s, _) = alice.call(Method::POST, &format!("/v1/jobs/{job_a}/stop"), None).await;
    assert_eq!(s, 200);
    // GET needs none; the bearer token needs none.
    let (s, _) = no_csrf.call(Method::GET, "/console/api/me", None).await;
    assert_eq!(s, 200);

    // Audit log: who changed what.
    let audit = admin.ok(Method::GET, "/v1/audit?limit=500", None).await;
    let entries = audit.as_array().unwrap();
    assert!(entries.iter().any(|e| e["username"] == "alice"
        && e["action"] == "POST /v1/jobs/{id}/stop"
        && e["target"] == format!("/v1/jobs/{job_a}/stop")));
    assert!(entries
        .iter()
        .any(|e| e["username"] == "api-token" && e["action"] == "POST /v1/jobs"));
    // A create's entry is written in the create's own transaction: exactly one for job B,
    // with its answer's status and the request it made.
    let job_b_entries: Vec<&serde_json::Value> = entries
        .iter()
        .filter(|e| e["action"] == "POST /v1/jobs" && e["detail"]["request"]["description"] == "b")
        .collect();
    assert_eq!(job_b_entries.len(), 1, "{job_b_entries:?}");
    assert_eq!(job_b_entries[0]["username"], "api-token");
    assert_eq!(job_b_entries[0]["target"], "/v1/jobs");
    assert_eq!(job_b_entries[0]["detail"]["status"], 201);
    let created = entries
        .iter()
        .find(|e| e["action"] == "POST /v1/users" && e["detail"]["status"] == 201)
        .unwrap();
    assert_eq!(
        created["detail"]["request"]["password"], "***",
        "passwords never reach the audit log"
    );
    assert!(entries.iter().any(|e| e["action"] == "login" && e["username"] == "rob"));
    // Refused attempts to change something are recorded too, with the reason.
    let refused = entries
        .iter()
        .find(|e| e["username"] == "alice" && e["action"] == "PUT /v1/groups/{key}")
        .unwrap_or_else(|| panic!("alice's refused group change is audited: {audit}"));
    assert_eq!(refused["detail"]["status"], 403);
    assert_eq!(refused["detail"]["error"], "only admins may do this");
    assert_eq!(refused["detail"]["request"]["addresses"][0], "http://127.0.0.1:9");
    assert!(entries.iter().any(|e| e["username"] == "alice"
        && e["action"] == "PATCH /v1/jobs/{id}"
        && e["detail"]["status"] == 403
        && e["detail"]["error"].as_str().is_some_and(|m| m.contains("child job"))));
    assert!(
        entries
            .iter()
            .any(|e| e["username"] == "alice" && e["detail"]["error"] == "missing or wrong X-CSRF-Token header"),
        "a change without the CSRF token is audited"
    );
    // Reads are not audited, refused or not.
    assert!(!entries
        .iter()
        .any(|e| e["action"].as_str().unwrap().starts_with("GET ")));
    // Filters: user, action (contains, any case), time range; paging by id.
    let only = |q: &str| {
        let admin = admin.clone();
        let q = q.to_owned();
        async move {
            admin
                .ok(Method::GET, &format!("/v1/audit?{q}"), None)
                .await
                .as_array()
                .unwrap()
                .clone()
        }
    };
    let alices = only("username=alice&limit=1000").await;
    assert!(!alices.is_empty() && alices.iter().all(|e| e["username"] == "alice"));
    let groups = only("action=V1%2FGROUPS&limit=1000").await;
    assert!(!groups.is_empty());
    assert!(groups
        .iter()
        .all(|e| e["action"].as_str().unwrap().contains("/v1/groups")));
    assert!(only("action=%25").await.is_empty(), "'%' is no wildcard");
    assert!(only("action=_").await.is_empty(), "'_' is no wildcard");
    let newest = entries[0]["at"].as_i64().unwrap();
    let oldest = entries.last().unwrap()["at"].as_i64().unwrap();
    assert!(only(&format!("from={}", newest + 1)).await.is_empty());
    let until_first = only(&format!("to={}&limit=1000", oldest + 1)).await;
    assert!(!until_first.is_empty() && until_first.iter().all(|e| e["at"].as_i64().unwrap() <= oldest));
    let page1 = only("limit=2").await;
    let page2 = only(&format!("limit=2&before_id={}", page1[1]["id"])).await;
    assert_eq!(
        [&page1[0]["id"], &page1[1]["id"], &page2[0]["id"], &page2[1]["id"]],
        [
            &entries[0]["id"],
            &entries[1]["id"],
            &entries[2]["id"],
            &entries[3]["id"]
        ],
        "paging continues where the previous page ended"
    );
    let (s, v) = admin
        .call(Method::GET, &format!("/v1/audit?from={newest}&to={newest}"), None)
        .await;
    assert_eq!((s.as_u16(), v["field"].as_str()), (400, Some("to")));

    // Stored XSS attempt: returned as JSON text (never HTML), with nosniff.
    let r = alice.raw(Method::GET, &format!("/v1/jobs/{job_a}"), None).await;
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    let job: Value = r.json().await.unwrap();
    assert_eq!(job["description"], XSS);
    assert_eq!(job["param"], XSS);
    let page = anon.raw(Method::GET, "/console/", None).await;
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(
        csp.contains("script-src 'self'")
            && csp.contains("object-src 'none'")
            && csp.contains("frame-ancestors 'none'")
    );
    assert_eq!(page.headers()["referrer-policy"], "no-referrer");
    let js = anon
        .raw(Method::GET, "/console/app.js", None)
        .await
        .text()
        .await
        .unwrap();
    assert!(!js.contains("innerHTML"), "the console never writes HTML from data");

    // An XSS attempt in a run's parameter comes back in the executor's result and is served
    // as JSON text, like the executor's log.
    let _executor = common::executor::TestExecutor::start(&base, "team-a", common::ACCESS_TOKEN).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let live = alice.ok(Method::GET, "/v1/executors", None).await;
        if live
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["group_id"] == ga && !g["executors"].as_array().unwrap().is_empty())
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the test executor never registered: {live}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let run = alice
        .ok(
            Method::POST,
            &format!("/v1/jobs/{job_a}/trigger"),
            Some(json!({"param": XSS})),
        )
        .await["run_id"]
        .as_i64()
        .unwrap();
    let done = loop {
        let r = alice.ok(Method::GET, &format!("/v1/runs/{run}"), None).await;
        if r["status"] == "success" {
            break r;
        }
        assert!(std::time::Instant::now() < deadline, "the run never succeeded: {r}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(done["param"], XSS);
    assert!(done["handle_msg"].as_str().unwrap().contains(XSS), "{done}");
    let r = alice.raw(Method::GET, &format!("/v1/runs/{run}/log"), None).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    let log: Value = r.json().await.unwrap();
    assert!(log["content"].is_string(), "{log}");
    for file in ["app.js", "pages.js", "i18n.js", "workflows.js"] {
        let js = anon
            .raw(Method::GET, &format!("/console/{file}"), None)
            .await
            .text()
            .await
            .unwrap();
        assert!(
            !js.contains("innerHTML") && !js.contains("outerHTML") && !js.contains("insertAdjacentHTML"),
            "{file} never writes HTML from data"
        );
    }

    // Schedule preview: fire times with a DST flag, or the field at fault.
    let (s, v) = alice
        .call(
            Method::GET,
            "/v1/schedule/preview?type=CRON&expr=0+0+12+*+*+%3F&count=400",
            None,
        )
        .await;
    assert_eq!((s.as_u16(), v["field"].as_str()), (400, Some("count")));
    let (s, v) = alice
        .call(Method::GET, "/v1/schedule/preview?type=CRON&expr=nope", None)
        .await;
    assert_eq!(s, 422);
    assert_eq!(v["field"], "schedule_expr");
    let p = alice
        .ok(
            Method::GET,
            "/v1/schedule/preview?type=CRON&expr=0+0+12+*+*+%3F&tz=Europe%2FBerlin&count=100",
            None,
        )
        .await;
    let shifts = p["next"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["dst_shift"] == true)
        .count();
    assert!(shifts <= 1, "at most one DST change within 100 days: {p}");

    // Self password change; the old password stops working.
    let (s, _) = rob
        .call(
            Method::POST,
            "/v1/me/password",
            Some(json!({"current_password": "rob-pass-12", "new_password": "rob-pass-34"})),
        )
        .await;
    assert_eq!(s, 204, "read-only users may still change their own password");
    Caller::login(&base, "rob", "rob-pass-34").await;

    // Logout revokes the session server-side: the old cookie no longer works.
    let extra = Caller::login(&base, "alice", "alice-pass-1").await;
    let (s, _) = extra.call(Method::POST, "/console/api/logout", None).await;
    assert_eq!(s, 204);
    let (s, _) = extra.call(Method::GET, "/console/api/me", None).await;
    assert_eq!(s, 401);

    // Login rate limit: five failures, then 429 even with the right password.
    for _ in 0..5 {
        let (s, _) = anon
            .call(
                Method::POST,
                "/console/api/login",
                Some(json!({"username": "alice", "password": "wrong"})),
            )
            .await;
        assert_eq!(s, 401);
    }
    let r = anon
        .raw(
            Method::POST,
            "/console/api/login",
            Some(json!({"username": "alice", "password": "alice-pass-1"})),
        )
        .await;
    assert_eq!(r.status(), 429);
    assert!(r.headers().contains_key("retry-after"));
    // Other users are not locked out by it.
    Caller::login(&base, "rob", "rob-pass-34").await;

    // Sessions live in the database: they survive a restart.
    handle.shutdown().await;
    let handle = common::start_admin(&db.url).await;
    let base2 = format!("http://{}", handle.local_addr);
    let alice2 = Caller {
        base: base2,
        ..alice.clone()
    };
    let me = alice2.ok(Method::GET, "/console/api/me", None).await;
    assert_eq!(me["username"], "alice");
    assert_eq!(me["can_write"], true);
    handle.shutdown().await;
    db.drop_db().await;
}

/// The ids of a JSON list of runs or jobs.
fn ids_of(list: &Value) -> Vec<i64> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|v| v["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_within_the_callers_groups_sqlite() {
    lists_page_within_the_callers_groups(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_within_the_callers_groups_mysql() {
    lists_page_within_the_callers_groups(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_page_within_the_callers_groups_postgres() {
    lists_page_within_the_callers_groups(Db::Postgres).await;
}

/// Lists of a user limited to some groups are limited in the query, so `limit` and paging count
/// only what they may see: many newer runs (and older jobs) of another group hide nothing. Runs
/// filter by scheduled time on the server, paged with `before_id`; the audit log filters by
/// user, action and time (the same SQL on every database).
async fn lists_page_within_the_callers_groups(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let group = |app: &str| {
        let api = api.clone();
        let body = json!({ "app_name": app });
        async move {
            api.ok(Method::POST, "/v1/groups", Some(body)).await["id"]
                .as_i64()
                .unwrap()
        }
    };
    let (ga, gb) = (group("mine").await, group("theirs").await);
    let job = |g: i64| {
        let api = api.clone();
        let body = json!({"group_id": g, "description": "j", "handler": "h", "schedule_type": "NONE"});
        async move {
            api.ok(Method::POST, "/v1/jobs", Some(body)).await["id"]
                .as_i64()
                .unwrap()
        }
    };
    // B's job is older than A's: a first page of one job, taken before filtering, holds only B's.
    let job_b = job(gb).await;
    let job_a = job(ga).await;
    let trigger = |j: i64| {
        let api = api.clone();
        async move {
            let id = api.ok(Method::POST, &format!("/v1/jobs/{j}/trigger"), None).await["run_id"]
                .as_i64()
                .unwrap();
            // Distinct scheduled times, so time ranges can tell the runs apart.
            tokio::time::sleep(std::time::Duration::from_millis(15)).await;
            id
        }
    };
    let mut runs_a = Vec::new();
    for _ in 0..3 {
        runs_a.push(trigger(job_a).await);
    }
    // More runs of B than a page holds, all newer than A's.
    for _ in 0..6 {
        trigger(job_b).await;
    }
    let admin = Caller::login(&base, "admin", "test-password").await;
    admin
        .ok(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "ann", "password": "ann-password", "group_ids": [ga]})),
        )
        .await;
    let ann = Caller::login(&base, "ann", "ann-password").await;

    assert_eq!(ids_of(&ann.ok(Method::GET, "/v1/jobs?limit=1", None).await), [job_a]);
    assert_eq!(
        ids_of(
            &ann.ok(Method::GET, &format!("/v1/jobs?limit=1&after_id={job_a}"), None)
                .await
        ),
        Vec::<i64>::new()
    );
    let newest_first: Vec<i64> = runs_a.iter().rev().copied().collect();
    assert_eq!(
        ids_of(&ann.ok(Method::GET, "/v1/runs?limit=5", None).await),
        newest_first,
        "a page of 5 holds all 3 of ann's runs, not 5 of the 6 newer runs of the other group"
    );
    let first = ids_of(&ann.ok(Method::GET, "/v1/runs?limit=2", None).await);
    assert_eq!(first, newest_first[..2]);
    let next = ids_of(
        &ann.ok(Method::GET, &format!("/v1/runs?limit=2&before_id={}", first[1]), None)
            .await,
    );
    assert_eq!(next, newest_first[2..], "paging continues within ann's groups");
    assert_eq!(ids_of(&api.ok(Method::GET, "/v1/runs?limit=5", None).await).len(), 5);

    // Time range on scheduled_at: from ≤ scheduled_at < to, with paging inside the range.
    let mut at = Vec::new();
    for id in &runs_a {
        at.push(
            api.ok(Method::GET, &format!("/v1/runs/{id}"), None).await["scheduled_at"]
                .as_i64()
                .unwrap(),
        );
    }
    assert!(at[0] < at[1] && at[1] < at[2], "distinct scheduled times: {at:?}");
    let range = |q: String| {
        let ann = ann.clone();
        async move { ids_of(&ann.ok(Method::GET, &format!("/v1/runs?{q}"), None).await) }
    };
    assert_eq!(range(format!("from={}&to={}", at[1], at[2])).await, [runs_a[1]]);
    assert_eq!(range(format!("from={}", at[1])).await, [runs_a[2], runs_a[1]]);
    assert_eq!(range(format!("to={}", at[1])).await, [runs_a[0]]);
    assert_eq!(
        range(format!(
            "from={}&to={}&limit=1&before_id={}",
            at[0],
            at[2] + 1,
            runs_a[2]
        ))
        .await,
        [runs_a[1]]
    );
    let everything = range(format!("from={}&limit=100", at[0])).await;
    assert_eq!(
        everything, newest_first,
        "the other group's newer runs stay out of ann's range"
    );
    let all = ids_of(
        &api.ok(Method::GET, &format!("/v1/runs?from={}&limit=100", at[0]), None)
            .await,
    );
    assert_eq!(all.len(), 9, "the API token sees every group's runs in the range");
    for (q, field) in [
        (format!("from={}&to={}", at[1], at[1]), "to"),
        ("from=yesterday".to_owned(), "from"),
    ] {
        let (s, v) = ann.call(Method::GET, &format!("/v1/runs?{q}"), None).await;
        assert_eq!((s.as_u16(), v["field"].as_str()), (400, Some(field)), "{q}: {v}");
    }

    // Audit filters.
    let (s, _) = ann.call(Method::DELETE, &format!("/v1/jobs/{job_b}"), None).await;
    assert_eq!(s, 403);
    let audit = |q: &str| {
        let admin = admin.clone();
        let q = q.to_owned();
        async move {
            let v = admin.ok(Method::GET, &format!("/v1/audit?{q}"), None).await;
            v.as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["username"].as_str().unwrap().to_owned(),
                        e["action"].as_str().unwrap().to_owned(),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let anns = audit("username=ann").await;
    assert_eq!(
        anns,
        [
            ("ann".to_owned(), "DELETE /v1/jobs/{id}".to_owned()),
            ("ann".to_owned(), "login".to_owned())
        ]
    );
    assert_eq!(
        audit("action=v1%2FUSERS").await,
        [("admin".to_owned(), "POST /v1/users".to_owned())],
        "action filter: any part, any case"
    );
    assert!(audit("action=%25").await.is_empty(), "'%' is no wildcard");
    assert!(audit("action=_").await.is_empty(), "'_' is no wildcard");
    assert_eq!(audit("username=ann&action=LOGIN").await.len(), 1);
    let newest = admin.ok(Method::GET, "/v1/audit?limit=1", None).await[0]["at"]
        .as_i64()
        .unwrap();
    assert!(audit(&format!("from={}", newest + 1)).await.is_empty());
    assert_eq!(
        audit(&format!("from={newest}&to={}&username=ann", newest + 1))
            .await
            .len(),
        1
    );
    handle.shutdown().await;
    db.drop_db().await;
}

/// Failed logins are limited per user name and address and per user name, never per address
/// alone: one person's failures do not lock out the others behind the same address (a NAT, a
/// proxy). Once a budget is spent no attempt reaches the password check, even when many arrive
/// at once. Behind a trusted proxy the client is the one `X-Forwarded-For` names; from anyone
/// else the header is ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_failures_are_limited_per_user() {
    use chime_admin::http::console_api::{MAX_FAILURES, MAX_USER_FAILURES};
    let db = TestDb::new(Db::Sqlite).await;
    let mut config = common::config(&db.url);
    // 127.0.0.9 plays the reverse proxy.
    config.trusted_proxies = "127.0.0.9".parse().unwrap();
    let handle = chime_admin::start(config).await.expect("admin starts");
    let base = format!("http://{}", handle.local_addr);
    let admin = Caller::login(&base, "admin", "test-password").await;
    admin
        .ok(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "bob", "password": "bob-pass-123", "role": "admin"})),
        )
        .await;
    // Clients from distinct loopback addresses (all of 127.0.0.0/8 is local on Linux).
    let from = |last: u8| {
        reqwest::Client::builder()
            .local_address(std::net::IpAddr::from([127, 0, 0, last]))
            .build()
            .unwrap()
    };
    let login = |c: &reqwest::Client, user: &str, password: &str, forwarded_for: Option<&str>| {
        let mut req = c
            .post(format!("{base}/console/api/login"))
            .json(&json!({"username": user, "password": password}));
        if let Some(xff) = forwarded_for {
            req = req.header("X-Forwarded-For", xff);
        }
        async move { req.send().await.unwrap().status().as_u16() }
    };

    // One address shared by several people: bob mistypes until his pair is refused, others
    // fail too, many times over what an address once had; admin still logs in from it.
    let nat = from(2);
    for i in 0..MAX_FAILURES {
        assert_eq!(login(&nat, "bob", "typo", None).await, 401, "bob's failure {i}");
    }
    assert_eq!(
        login(&nat, "bob", "bob-pass-123", None).await,
        429,
        "bob's pair is spent"
    );
    // 11 failures from the address: over the 10 that once refused an address whole.
    for i in 0..6 {
        assert_eq!(login(&nat, &format!("someone{i}"), "x", None).await, 401);
    }
    assert_eq!(
        login(&nat, "admin", "test-password", None).await,
        200,
        "others behind the same address are not locked out"
    );

    // One user's name, guessed from many addresses: refused everywhere once its budget is
    // spent (bob has MAX_FAILURES already).
    let pairs = MAX_USER_FAILURES / MAX_FAILURES;
    for last in 3..2 + pairs as u8 {
        let c = from(last);
        for _ in 0..MAX_FAILURES {
            assert_eq!(login(&c, "bob", "guess", None).await, 401);
        }
    }
    let r = from(20)
        .post(format!("{base}/console/api/login"))
        .json(&json!({"username": "bob", "password": "bob-pass-123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429, "bob's name is spent, from a new address too");
    let wait: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=300).contains(&wait), "Retry-After is within the lockout: {wait}");

    // Many guesses at once from a fresh address: exactly the pair's budget is checked (a 401
    // means the password hash was computed); the rest are refused before any hash work.
    let burst = from(21);
    let attempts: Vec<_> = (0..3 * MAX_FAILURES)
        .map(|_| tokio::spawn(login(&burst, "carol", "guess", None)))
        .collect();
    let mut statuses = Vec::new();
    for a in attempts {
        statuses.push(a.await.unwrap());
    }
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(
        (checked, refused),
        (MAX_FAILURES as usize, 2 * MAX_FAILURES as usize),
        "{statuses:?}"
    );

    // Behind the trusted proxy, each client is its own: one's spent pair is not another's.
    let proxy = from(9);
    for _ in 0..MAX_FAILURES {
        assert_eq!(login(&proxy, "dave", "guess", Some("203.0.113.1")).await, 401);
    }
    assert_eq!(login(&proxy, "dave", "guess", Some("203.0.113.1")).await, 429);
    assert_eq!(
        login(&proxy, "admin", "test-password", Some("198.51.100.7, 203.0.113.2")).await,
        200
    );
    assert_eq!(
        login(&proxy, "dave", "guess", Some("203.0.113.2")).await,
        401,
        "another client"
    );
    // From anyone else the header is ignored: a new made-up address each time does not
    // renew the budget.
    let liar = from(22);
    for i in 0..MAX_FAILURES {
        let xff = format!("192.0.2.{i}");
        assert_eq!(login(&liar, "erin", "guess", Some(&xff)).await, 401);
    }
    assert_eq!(login(&liar, "erin", "guess", Some("192.0.2.99")).await, 429);
    handle.shutdown().await;
    db.drop_db().await;
}

/// A group-limited user's export names no job and no group outside their groups: a child in
/// another group is left out; an admin's export names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_names_only_what_its_caller_may_see() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let group = |app: &'static str| {
        let api = api.clone();
        async move {
            api.ok(Method::POST, "/v1/groups", Some(json!({"app_name": app}))).await["id"]
                .as_i64()
                .unwrap()
        }
    };
    let (ga, gb) = (group("team-a").await, group("hidden-team").await);
    let job = |body: Value| {
        let api = api.clone();
        async move {
            api.ok(Method::POST, "/v1/jobs", Some(body)).await["id"]
                .as_i64()
                .unwrap()
        }
    };
    let sibling = job(json!({"group_id": ga, "key": "sibling", "handler": "h"})).await;
    let secret = job(json!({"group_id": gb, "key": "secret-payroll", "handler": "h"})).await;
    job(json!({"group_id": ga, "key": "parent", "handler": "h", "child_job_ids": [sibling, secret]})).await;
    let admin = Caller::login(&base, "admin", "test-password").await;
    admin
        .ok(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "alice", "password": "alice-pass-1", "group_ids": [ga]})),
        )
        .await;
    let alice = Caller::login(&base, "alice", "alice-pass-1").await;
    let children = |doc: &Value| -> Vec<String> {
        let groups = doc["groups"].as_array().unwrap();
        let a = groups.iter().find(|g| g["app_name"] == "team-a").unwrap();
        let parent = a["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["key"] == "parent")
            .unwrap();
        serde_json::from_value(parent["children"].clone()).unwrap()
    };
    let mine = alice.ok(Method::GET, "/v1/export", None).await;
    assert_eq!(children(&mine), ["sibling"]);
    let text = mine.to_string();
    assert!(
        !text.contains("secret-payroll") && !text.contains("hidden-team"),
        "nothing of another group: {text}"
    );
    let all = admin.ok(Method::GET, "/v1/export", None).await;
    assert_eq!(children(&all), ["sibling", "hidden-team/secret-payroll"]);
    handle.shutdown().await;
    db.drop_db().await;
}
