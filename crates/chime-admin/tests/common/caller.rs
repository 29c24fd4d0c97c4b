//! A REST caller for access tests: the API token, a console session (cookie and CSRF token), or
//! nobody.

use super::API_TOKEN;
use chime_admin::api::GroupRole;
use chime_admin::http::access::Rule;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// A caller: the API token, a console session, or nobody.
#[derive(Clone)]
pub struct Caller {
    pub base: String,
    pub http: reqwest::Client,
    pub bearer: Option<String>,
    pub cookie: Option<String>,
    pub csrf: Option<String>,
}

impl Caller {
    pub fn anonymous(base: &str) -> Caller {
        Caller {
            base: base.to_owned(),
            http: reqwest::Client::new(),
            bearer: None,
            cookie: None,
            csrf: None,
        }
    }

    pub fn api(base: &str) -> Caller {
        Caller {
            bearer: Some(API_TOKEN.to_owned()),
            ..Caller::anonymous(base)
        }
    }

    pub async fn login(base: &str, user: &str, password: &str) -> Caller {
        let anon = Caller::anonymous(base);
        let r = anon
            .raw(
                Method::POST,
                "/console/api/login",
                Some(json!({"username": user, "password": password})),
            )
            .await;
        assert_eq!(r.status(), 200, "login of {user}");
        let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
        for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(set.contains(attr), "cookie has {attr}: {set}");
        }
        let token = set.split(';').next().unwrap().to_owned();
        assert!(
            token.len() >= "chime_session=".len() + 32,
            "token has at least 128 bits"
        );
        let body: Value = r.json().await.unwrap();
        Caller {
            cookie: Some(token),
            csrf: body["csrf_token"].as_str().map(str::to_owned),
            ..anon
        }
    }

    pub async fn raw(&self, method: Method, path: &str, body: Option<Value>) -> reqwest::Response {
        let mut rq = self.http.request(method, format!("{}{}", self.base, path));
        if let Some(b) = &self.bearer {
            rq = rq.bearer_auth(b);
        }
        if let Some(c) = &self.cookie {
            rq = rq.header("cookie", c);
        }
        if let Some(t) = &self.csrf {
            rq = rq.header("x-csrf-token", t);
        }
        if let Some(b) = body {
            rq = rq.json(&b);
        }
        rq.send().await.unwrap()
    }

    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let r = self.raw(method, path, body).await;
        let s = r.status();
        let text = r.text().await.unwrap();
        (s, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    pub async fn ok(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let (s, v) = self.call(method.clone(), path, body).await;
        assert!(s.is_success(), "{method} {path}: {s} {v}");
        v
    }

    /// A caller authenticated by API key `token`.
    pub fn with_key(base: &str, token: &str) -> Caller {
        Caller {
            bearer: Some(token.to_owned()),
            ..Caller::anonymous(base)
        }
    }

    /// Creates an executor group; its id.
    pub async fn new_group(&self, app_name: &str) -> i64 {
        let made = self
            .ok(Method::POST, "/v1/groups", Some(json!({ "app_name": app_name })))
            .await;
        made["id"].as_i64().unwrap()
    }

    /// Creates an unscheduled job of group `group`; its id.
    pub async fn new_job(&self, group: i64) -> i64 {
        let body = json!({"group_id": group, "description": "j", "handler": "h", "schedule_type": "NONE"});
        self.ok(Method::POST, "/v1/jobs", Some(body)).await["id"]
            .as_i64()
            .unwrap()
    }

    /// Triggers job `job`; the run's id.
    pub async fn new_run(&self, job: i64) -> i64 {
        let made = self.ok(Method::POST, &format!("/v1/jobs/{job}/trigger"), None).await;
        made["run_id"].as_i64().unwrap()
    }

    /// Makes an API key from `body`; its token and id.
    pub async fn new_key(&self, body: Value) -> (String, i64) {
        let made = self.ok(Method::POST, "/v1/api-keys", Some(body)).await;
        (
            made["token"].as_str().unwrap().to_owned(),
            made["key"]["id"].as_i64().unwrap(),
        )
    }
}

/// The targets a route's path parameter is filled with: `{key}` the group, `{id}` the job of a
/// `/v1/jobs/…` route, the run of a `/v1/runs/…` one, else `other` (a user, a key); a second
/// parameter (`{backfill}`) some id, as the access check comes before it is looked up.
pub struct Targets {
    pub group: i64,
    pub job: i64,
    pub run: i64,
    pub other: i64,
}

impl Targets {
    /// `path` with its parameters filled in.
    pub fn path(&self, path: &str) -> String {
        let id = if path.starts_with("/v1/jobs/") {
            self.job
        } else if path.starts_with("/v1/runs/") {
            self.run
        } else {
            self.other
        };
        path.replace("{key}", &self.group.to_string())
            .replace("{id}", &id.to_string())
            .replace("{backfill}", "1")
    }
}

/// What a route of the access table needs of a caller in the target's group; `None`:
/// administrators only.
pub fn needed(rule: Rule) -> Option<GroupRole> {
    match rule {
        Rule::Public | Rule::Authenticated | Rule::List { .. } | Rule::Read(_) => Some(GroupRole::Viewer),
        Rule::Operate(_) => Some(GroupRole::Operator),
        Rule::Write(_) | Rule::Writer | Rule::CreateJob | Rule::UpdateJob => Some(GroupRole::Editor),
        Rule::ManageGroup(_) => Some(GroupRole::GroupAdmin),
        Rule::Needs(role) => Some(role),
        Rule::Admin => None,
    }
}

/// Whether a caller who is read-only (a viewer everywhere) is refused the route.
pub fn refuses_read_only(rule: Rule) -> bool {
    needed(rule).is_none_or(|role| role > GroupRole::Viewer)
}
