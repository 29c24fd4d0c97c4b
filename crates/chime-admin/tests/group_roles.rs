//! Roles per executor group over real HTTP against a real admin: every route of the access
//! table is called by a viewer, an operator, an editor and a group admin of one group, and each
//! is refused (403) exactly where the route needs more than the role (the role-by-route
//! table); group admins manage their group's members (SQLite, MariaDB, PostgreSQL); keys hold
//! at most their maker's role; users written before roles per group keep what they had.

mod common;

use chime_admin::api::GroupRole;
use chime_admin::http::access::Rule;
use chime_admin::http::routes::ROUTES;
use common::caller::{needed, Caller, Targets};
use common::{Db, TestDb};
use reqwest::Method;
use serde_json::{json, Value};

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap()
}

/// A user holding `role` in group `group`, logged in.
async fn member(api: &Caller, base: &str, name: &str, group: i64, role: GroupRole) -> Caller {
    let password = format!("{name}-password");
    api.ok(
        Method::POST,
        "/v1/users",
        Some(json!({"username": name, "password": password, "group_roles": [{"group_id": group, "role": role}]})),
    )
    .await;
    Caller::login(base, name, &password).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_is_refused_exactly_where_a_route_needs_more() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let ga = api.new_group("team-a").await;
    let job_a = api.new_job(ga).await;
    let run_a = api.new_run(job_a).await;
    let mut callers = Vec::new();
    for role in GroupRole::ALL {
        callers.push((role, member(&api, &base, role.as_str(), ga, role).await));
    }
    let mut table = Vec::new();
    for route in ROUTES {
        // Logging out would end the caller's session for the routes after it.
        if route.rule == Rule::Public || route.path == "/console/api/logout" {
            continue;
        }
        let m = Method::from_bytes(route.method.as_bytes()).unwrap();
        let what = format!("{} {}", route.method, route.path);
        for (role, caller) in &callers {
            // A job of its own for each delete, so one role's delete leaves the next one's target.
            let job = if route.method == "DELETE" && route.path == "/v1/jobs/{id}" {
                api.new_job(ga).await
            } else {
                job_a
            };
            let path = Targets {
                group: ga,
                job,
                run: run_a,
                other: 999_999,
            }
            .path(route.path);
            let body = match (route.method, route.path) {
                ("GET", _) => None,
                ("POST", "/v1/jobs") => {
                    Some(json!({"group_id": ga, "description": "x", "handler": "h", "schedule_type": "NONE"}))
                }
                (_, "/v1/jobs/{id}") => Some(json!({"description": "changed"})),
                (_, "/v1/runs/clear") => Some(json!({"group_id": ga, "older_than_days": 36500})),
                _ => Some(json!({})),
            };
            let (s, v) = caller.call(m.clone(), &path, body).await;
            let allowed = needed(route.rule).is_some_and(|n| *role >= n);
            if allowed {
                assert!(s != 401 && s != 403, "{what} as {role}: allowed, got {s} {v}");
            } else {
                assert_eq!(s, 403, "{what} as {role}: refused, got {v}");
            }
            table.push((what.clone(), *role, allowed));
        }
    }
    // The table covers each kind of need, each with refusals and passes.
    for need in [GroupRole::Operator, GroupRole::Editor, GroupRole::GroupAdmin] {
        let routes = ROUTES.iter().filter(|r| needed(r.rule) == Some(need)).count();
        assert!(routes > 0, "a route needs {need}");
    }
    let refused = table.iter().filter(|(_, _, ok)| !ok).count();
    assert!(
        refused > 60 && table.len() - refused > 60,
        "{refused} of {}",
        table.len()
    );

    // An operator runs jobs but does not edit them, and is told why.
    let operator = &callers[1].1;
    let (s, v) = operator
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{job_a}"),
            Some(json!({"description": "x"})),
        )
        .await;
    assert_eq!(
        (s.as_u16(), v["error"].as_str()),
        (
            403,
            Some("your role in this executor group is operator: this needs editor or above")
        )
    );
    let (s, v) = callers[0]
        .1
        .call(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None)
        .await;
    assert_eq!(
        (s.as_u16(), v["error"].as_str()),
        (403, Some("your account is read-only"))
    );
    // What the console is told of the caller.
    let me = operator.ok(Method::GET, "/console/api/me", None).await;
    assert_eq!(me["group_roles"], json!([{"group_id": ga, "role": "operator"}]), "{me}");
    assert_eq!(me["can_write"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_admins_manage_their_groups_members_sqlite() {
    group_admins_manage_their_groups_members(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_admins_manage_their_groups_members_mysql() {
    group_admins_manage_their_groups_members(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_admins_manage_their_groups_members_postgres() {
    group_admins_manage_their_groups_members(Db::Postgres).await;
}

async fn group_admins_manage_their_groups_members(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let ga = api.new_group("team-a").await;
    let gb = api.new_group("team-b").await;
    let job_a = api.new_job(ga).await;
    let lead = member(&api, &base, "lead", ga, GroupRole::GroupAdmin).await;
    // Sam is a viewer of B (made the way users were before roles per group).
    let sam_id = id(&api
        .ok(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "sam", "password": "sam-password", "group_ids": [gb], "can_write": false})),
        )
        .await);
    let sam = Caller::login(&base, "sam", "sam-password").await;
    let shown = api.ok(Method::GET, &format!("/v1/users/{sam_id}"), None).await;
    assert_eq!(
        shown["group_roles"],
        json!([{"group_id": gb, "role": "viewer"}]),
        "{shown}"
    );
    let (s, _) = sam.call(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None).await;
    assert_eq!(s, 403, "sam has no access to A yet");

    // Lead makes sam an operator of A: sam now triggers A's job, and still only reads B.
    let members = lead
        .ok(
            Method::PUT,
            &format!("/v1/groups/{ga}/members"),
            Some(json!({"username": "sam", "role": "operator"})),
        )
        .await;
    let names: Vec<(&str, &str)> = members
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["username"].as_str().unwrap(), m["role"].as_str().unwrap()))
        .collect();
    assert_eq!(names, vec![("lead", "group_admin"), ("sam", "operator")]);
    sam.ok(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None).await;
    let shown = api.ok(Method::GET, &format!("/v1/users/{sam_id}"), None).await;
    assert_eq!(
        shown["group_roles"],
        json!([{"group_id": ga, "role": "operator"}, {"group_id": gb, "role": "viewer"}]),
        "{shown}"
    );
    // Not another group's members, not an administrator, not themself; unknown users are 404.
    let (s, _) = lead.call(Method::GET, &format!("/v1/groups/{gb}/members"), None).await;
    assert_eq!(s, 403);
    let refusals = [
        ("admin", "viewer", 409),
        ("lead", "viewer", 409),
        ("nobody", "viewer", 404),
        ("sam", "owner", 400),
    ];
    for (who, role, status) in refusals {
        let body = json!({"username": who, "role": role});
        let (s, v) = lead
            .call(Method::PUT, &format!("/v1/groups/{ga}/members"), Some(body))
            .await;
        assert_eq!(s, status, "{who} as {role}: {v}");
    }
    // A key of sam's: an operator key of A works, an editor key of A is more than sam holds.
    let (s, v) = sam
        .call(
            Method::POST,
            "/v1/api-keys",
            Some(json!({"name": "sam-ed", "role": "editor", "group_ids": [ga]})),
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let made = sam
        .ok(
            Method::POST,
            "/v1/api-keys",
            Some(json!({"name": "sam-op", "role": "operator", "group_ids": [ga]})),
        )
        .await;
    let key = Caller::with_key(&base, made["token"].as_str().unwrap());
    key.ok(Method::POST, &format!("/v1/jobs/{job_a}/trigger"), None).await;
    // Taken away: sam, and sam's key, lose A at once.
    lead.ok(
        Method::PUT,
        &format!("/v1/groups/{ga}/members"),
        Some(json!({"username": "sam", "role": null})),
    )
    .await;
    for who in [&sam, &key] {
        let (s, _) = who.call(Method::GET, &format!("/v1/jobs/{job_a}"), None).await;
        assert_eq!(s, 403);
    }
    // Lead, group admin of A, manages the keys limited to A (sam's operator key), not one of
    // B's; and revokes sam's key of A.
    let key_b = sam
        .ok(
            Method::POST,
            "/v1/api-keys",
            Some(json!({"name": "sam-b", "role": "viewer", "group_ids": [gb]})),
        )
        .await;
    let listed = lead.ok(Method::GET, "/v1/api-keys", None).await;
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["sam-op"], "{listed}");
    let (s, _) = lead
        .call(Method::DELETE, &format!("/v1/api-keys/{}", id(&key_b["key"])), None)
        .await;
    assert_eq!(s, 403, "not a key of B's");
    lead.ok(Method::DELETE, &format!("/v1/api-keys/{}", id(&made["key"])), None)
        .await;
    let (s, v) = key.call(Method::GET, "/v1/groups", None).await;
    assert_eq!(s, 401, "revoked by the group admin: {v}");
    let audit = api.ok(Method::GET, "/v1/audit?username=lead", None).await;
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "PUT /v1/groups/{key}/members"),
        "{audit}"
    );
    db.drop_db().await;
}

/// A workflow runs jobs of several groups: a user sees it when they see every node's group,
/// runs it as an operator of each, changes it as an editor of each; an instance's node action
/// follows the node's own group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_follow_the_groups_of_their_nodes() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let (ga, gb) = (api.new_group("team-a").await, api.new_group("team-b").await);
    let (job_a, job_b) = (api.new_job(ga).await, api.new_job(gb).await);
    let workflow = |name: &str, nodes: Value| json!({"name": name, "definition": {"nodes": nodes, "edges": []}});
    let only_a = id(&api
        .ok(
            Method::POST,
            "/v1/workflows",
            Some(workflow("only-a", json!([{"key": "a", "job_id": job_a}]))),
        )
        .await);
    let both = id(&api
        .ok(
            Method::POST,
            "/v1/workflows",
            Some(workflow(
                "both",
                json!([{"key": "a", "job_id": job_a}, {"key": "b", "job_id": job_b}]),
            )),
        )
        .await);
    let names = |list: Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap().to_owned())
            .collect()
    };

    // An editor of A: sees and changes only-a, not both; makes workflows of A's jobs only.
    let ed = member(&api, &base, "ed", ga, GroupRole::Editor).await;
    assert_eq!(names(ed.ok(Method::GET, "/v1/workflows", None).await), ["only-a"]);
    let (s, v) = ed.call(Method::GET, &format!("/v1/workflows/{both}"), None).await;
    assert_eq!(s, 403, "{v}");
    assert!(v["error"].as_str().unwrap().starts_with("node b: "), "{v}");
    ed.ok(
        Method::PATCH,
        &format!("/v1/workflows/{only_a}"),
        Some(json!({"description": "edited by ed"})),
    )
    .await;
    let (s, _) = ed
        .call(
            Method::PATCH,
            &format!("/v1/workflows/{only_a}"),
            Some(json!({"definition": {"nodes": [{"key": "b", "job_id": job_b}], "edges": []}})),
        )
        .await;
    assert_eq!(s, 403, "a change may not bring in another group's job");
    let (s, _) = ed
        .call(
            Method::POST,
            "/v1/workflows",
            Some(workflow("sneak", json!([{"key": "b", "job_id": job_b}]))),
        )
        .await;
    assert_eq!(s, 403);
    ed.ok(
        Method::POST,
        "/v1/workflows",
        Some(workflow("ed-own", json!([{"key": "a", "job_id": job_a}]))),
    )
    .await;
    let (s, _) = ed
        .call(Method::POST, &format!("/v1/workflows/{both}/trigger"), None)
        .await;
    assert_eq!(s, 403);

    // Olly operates A and views B: he sees every workflow, runs only-a, changes nothing.
    api.ok(
        Method::POST,
        "/v1/users",
        Some(json!({"username": "olly", "password": "olly-password", "group_roles": [
            {"group_id": ga, "role": "operator"}, {"group_id": gb, "role": "viewer"}]})),
    )
    .await;
    let olly = Caller::login(&base, "olly", "olly-password").await;
    assert_eq!(names(olly.ok(Method::GET, "/v1/workflows", None).await).len(), 3);
    let (s, _) = olly
        .call(Method::POST, &format!("/v1/workflows/{both}/trigger"), None)
        .await;
    assert_eq!(s, 403, "a viewer of B does not run B's node");
    let instance = olly
        .ok(Method::POST, &format!("/v1/workflows/{only_a}/trigger"), None)
        .await["instance_id"]
        .as_i64()
        .unwrap();
    olly.ok(Method::GET, &format!("/v1/workflow-instances/{instance}"), None)
        .await;
    let (s, _) = olly
        .call(
            Method::PATCH,
            &format!("/v1/workflows/{only_a}"),
            Some(json!({"description": "x"})),
        )
        .await;
    assert_eq!(s, 403, "an operator does not edit");

    // An instance of both, started by the API token: olly may act on node a (group A, where he
    // operates), not on node b (group B, where he views).
    let both_instance = api
        .ok(Method::POST, &format!("/v1/workflows/{both}/trigger"), None)
        .await["instance_id"]
        .as_i64()
        .unwrap();
    let listed = olly.ok(Method::GET, "/v1/workflow-instances", None).await;
    assert!(
        listed.as_array().unwrap().iter().any(|i| i["id"] == both_instance),
        "olly sees every node of both: {listed}"
    );
    let (s, v) = olly
        .call(
            Method::POST,
            &format!("/v1/workflow-instances/{both_instance}/nodes/b/skip"),
            None,
        )
        .await;
    assert_eq!(s, 403, "{v}");
    let (s, v) = olly
        .call(
            Method::POST,
            &format!("/v1/workflow-instances/{both_instance}/nodes/a/skip"),
            None,
        )
        .await;
    assert!(s != 401 && s != 403, "node a is in olly's group A: {s} {v}");
    let (s, _) = olly
        .call(
            Method::POST,
            &format!("/v1/workflow-instances/{both_instance}/stop"),
            None,
        )
        .await;
    assert_eq!(s, 403, "stopping the whole instance needs every group");
    // Ed sees neither instance of both.
    let listed = ed.ok(Method::GET, "/v1/workflow-instances", None).await;
    assert!(
        listed.as_array().unwrap().iter().all(|i| i["workflow_id"] != both),
        "{listed}"
    );
}
