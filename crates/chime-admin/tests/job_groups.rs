//! A job body may name its group by id (`group_id`), by app name (`group`), or both. The group
//! is resolved once and that one group is both authorised and stored: a console user with write
//! access to one group can neither create a job in another group nor move one there, whichever
//! of the two fields carries the other group, and a body naming two different groups is refused
//! (422). Every combination is sent over real HTTP, through the REST token and through a console
//! session.

mod common;

use common::caller::Caller;
use common::{Db, TestDb};
use reqwest::Method;
use serde_json::{json, Value};

/// How a body names a group: one field, the other, or both.
#[derive(Debug, Clone, Copy)]
enum Naming {
    Id(Side),
    AppName(Side),
    Both { id: Side, app_name: Side },
}

/// The user's own group, or the group it has no access to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    Own,
    Other,
}

const ALL_NAMINGS: [Naming; 7] = [
    Naming::Id(Side::Own),
    Naming::AppName(Side::Own),
    Naming::Both {
        id: Side::Own,
        app_name: Side::Own,
    },
    Naming::Id(Side::Other),
    Naming::AppName(Side::Other),
    Naming::Both {
        id: Side::Other,
        app_name: Side::Other,
    },
    Naming::Both {
        id: Side::Own,
        app_name: Side::Other,
    },
];

/// Both mixed orders are checked; the seventh entry above is one, this is the other.
const MIXED_OTHER_FIRST: Naming = Naming::Both {
    id: Side::Other,
    app_name: Side::Own,
};

struct Groups {
    own: (i64, &'static str),
    other: (i64, &'static str),
}

impl Groups {
    fn of(&self, side: Side) -> (i64, &'static str) {
        match side {
            Side::Own => self.own,
            Side::Other => self.other,
        }
    }

    /// The fields of `naming` added to `body`.
    fn name(&self, naming: Naming, mut body: Value) -> Value {
        match naming {
            Naming::Id(s) => body["group_id"] = json!(self.of(s).0),
            Naming::AppName(s) => body["group"] = json!(self.of(s).1),
            Naming::Both { id, app_name } => {
                body["group_id"] = json!(self.of(id).0);
                body["group"] = json!(self.of(app_name).1);
            }
        }
        body
    }

    /// The one group a naming names, or `None` when it names two.
    fn single(&self, naming: Naming) -> Option<i64> {
        match naming {
            Naming::Id(s) | Naming::AppName(s) => Some(self.of(s).0),
            Naming::Both { id, app_name } => (id == app_name).then(|| self.of(id).0),
        }
    }
}

fn job_body() -> Value {
    json!({"handler": "h", "schedule_type": "NONE", "description": "cross-group"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_body_names_one_group_and_that_group_is_authorised_sqlite() {
    a_job_body_names_one_group_and_that_group_is_authorised(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_body_names_one_group_and_that_group_is_authorised_mysql() {
    a_job_body_names_one_group_and_that_group_is_authorised(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_body_names_one_group_and_that_group_is_authorised_postgres() {
    a_job_body_names_one_group_and_that_group_is_authorised(Db::Postgres).await;
}

async fn a_job_body_names_one_group_and_that_group_is_authorised(kind: Db) {
    let db = TestDb::new(kind).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let group = |app: &'static str| {
        let api = &api;
        async move {
            let (s, g) = api
                .call(Method::POST, "/v1/groups", Some(json!({"app_name": app})))
                .await;
            assert_eq!(s, 201, "{g}");
            (g["id"].as_i64().unwrap(), app)
        }
    };
    let groups = Groups {
        own: group("team-own").await,
        other: group("team-other").await,
    };
    let admin = Caller::login(&base, "admin", "test-password").await;
    let (s, v) = admin
        .call(
            Method::POST,
            "/v1/users",
            Some(json!({"username": "alice", "password": "alice-pass-1", "group_ids": [groups.own.0]})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    let alice = Caller::login(&base, "alice", "alice-pass-1").await;

    let mut namings = ALL_NAMINGS.to_vec();
    namings.push(MIXED_OTHER_FIRST);

    // Creating, as alice (write access to her own group only).
    for &naming in &namings {
        let (s, v) = alice
            .call(Method::POST, "/v1/jobs", Some(groups.name(naming, job_body())))
            .await;
        match groups.single(naming) {
            None => {
                assert_eq!(s, 422, "alice creates with {naming:?}: {v}");
                assert_eq!(v["field"], "group", "{v}");
            }
            Some(g) if g == groups.own.0 => {
                assert_eq!(s, 201, "alice creates with {naming:?}: {v}");
                assert_eq!(v["group_id"], groups.own.0, "alice creates with {naming:?}: {v}");
            }
            Some(_) => assert_eq!(s, 403, "alice creates with {naming:?}: {v}"),
        }
    }
    let (s, v) = alice.call(Method::POST, "/v1/jobs", Some(job_body())).await;
    assert_eq!(
        (s.as_u16(), &v["field"]),
        (422, &json!("group_id")),
        "no group named: {v}"
    );

    // Moving her job, as alice: every naming of the other group is refused, and the job stays.
    let (_, mine) = alice
        .call(
            Method::POST,
            "/v1/jobs",
            Some(groups.name(Naming::Id(Side::Own), job_body())),
        )
        .await;
    let mine = mine["id"].as_i64().unwrap();
    for &naming in &namings {
        let (s, v) = alice
            .call(
                Method::PUT,
                &format!("/v1/jobs/{mine}"),
                Some(groups.name(naming, json!({}))),
            )
            .await;
        match groups.single(naming) {
            None => assert_eq!(s, 422, "alice updates with {naming:?}: {v}"),
            Some(g) if g == groups.own.0 => {
                assert_eq!(s, 200, "alice updates with {naming:?}: {v}");
                assert_eq!(v["group_id"], groups.own.0, "{v}");
            }
            Some(_) => assert_eq!(s, 403, "alice updates with {naming:?}: {v}"),
        }
        let (_, stored) = api.call(Method::GET, &format!("/v1/jobs/{mine}"), None).await;
        assert_eq!(
            stored["group_id"], groups.own.0,
            "after {naming:?} the job is still in alice's group"
        );
    }

    // Nothing alice sent ended up in the other group.
    let (_, theirs) = api
        .call(Method::GET, &format!("/v1/jobs?group_id={}", groups.other.0), None)
        .await;
    assert_eq!(theirs, json!([]), "jobs in the group alice may not write");

    // The API token may use any group, but two different groups in one body are still refused,
    // on create and on update; one group, by either field, is what is stored.
    for &naming in &namings {
        let (s, v) = api
            .call(Method::POST, "/v1/jobs", Some(groups.name(naming, job_body())))
            .await;
        match groups.single(naming) {
            None => assert_eq!(
                (s.as_u16(), &v["field"]),
                (422, &json!("group")),
                "token creates with {naming:?}: {v}"
            ),
            Some(g) => {
                assert_eq!(s, 201, "token creates with {naming:?}: {v}");
                assert_eq!(v["group_id"], g, "token creates with {naming:?}: {v}");
            }
        }
    }
    for &naming in &namings {
        let (s, v) = api
            .call(
                Method::PUT,
                &format!("/v1/jobs/{mine}"),
                Some(groups.name(naming, json!({}))),
            )
            .await;
        let (_, stored) = api.call(Method::GET, &format!("/v1/jobs/{mine}"), None).await;
        match groups.single(naming) {
            None => assert_eq!(s, 422, "token updates with {naming:?}: {v}"),
            Some(g) => {
                assert_eq!(s, 200, "token updates with {naming:?}: {v}");
                assert_eq!(stored["group_id"], g, "token updates with {naming:?}: {stored}");
            }
        }
    }

    // An app name that names no group is a 422 on the field, not a 500 or a silent default.
    let (s, v) = api
        .call(
            Method::POST,
            "/v1/jobs",
            Some(json!({"group": "no-such-app", "handler": "h"})),
        )
        .await;
    assert_eq!((s.as_u16(), &v["field"]), (422, &json!("group")), "{v}");

    handle.shutdown().await;
    db.drop_db().await;
}
