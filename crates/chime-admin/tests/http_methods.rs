//! HTTP semantics of the REST API over real HTTP against a real admin: a method a route does
//! not have is answered 405 with an `Allow` header listing the methods it has (from the access
//! table), a JSON error body, before authentication, and without an error in the log; the
//! OpenAPI document lists exactly those methods; a route with no rule at all is still refused
//! (403) and logged as the programming error it is; request bodies over the limit are refused
//! with a JSON 413; integer query values must be integers.
//!
//! The admin runs in this test process, so its log events are captured by a subscriber
//! installed here (nextest runs each test in a process of its own).

mod common;

use chime_admin::http::routes::ROUTES;
use common::{Db, TestDb, API_TOKEN};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// Log events seen by this process: level, target and fields.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<(Level, String, String)>>>);

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }
}

impl<S: Subscriber> Layer<S> for Captured {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let meta = event.metadata();
        // Every warning and error, whoever logs it; Chime's own events at every level.
        if *meta.level() > Level::WARN && !meta.target().starts_with("chime_admin") {
            return;
        }
        let mut fields = String::new();
        event.record(&mut Fields(&mut fields));
        self.0
            .lock()
            .unwrap()
            .push((*meta.level(), meta.target().to_owned(), fields));
    }
}

impl Captured {
    /// Installs the capture for the whole process (once).
    fn install() -> Captured {
        static LOGS: OnceLock<Captured> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Captured::default();
            let subscriber = tracing_subscriber::registry().with(logs.clone());
            tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
            logs
        })
        .clone()
    }

    fn take(&self) -> Vec<(Level, String, String)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// The methods the access table gives each `/v1` route, as `Allow` lists them (HEAD with GET).
fn table_methods() -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut out: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    for r in ROUTES.iter().filter(|r| r.path.starts_with("/v1/")) {
        let methods = out.entry(r.path).or_default();
        methods.insert(r.method.to_owned());
        if r.method == "GET" {
            methods.insert("HEAD".to_owned());
        }
    }
    out
}

/// A concrete path for a route pattern (the ids need not exist: the method is checked first).
fn concrete(pattern: &str) -> String {
    pattern.replace("{id}", "1").replace("{key}", "1")
}

fn allow_of(resp: &reqwest::Response) -> BTreeSet<String> {
    let values: Vec<&str> = resp
        .headers()
        .get_all(reqwest::header::ALLOW)
        .iter()
        .map(|v| v.to_str().expect("Allow is ASCII"))
        .collect();
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_methods_are_405_with_allow_and_no_error_log() {
    let logs = Captured::install();
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let http = reqwest::Client::new();
    logs.take();

    let routes = table_methods();
    assert!(routes.len() > 20, "the table has the /v1 routes: {routes:?}");
    let mut asked = 0;
    for (pattern, allowed) in &routes {
        let path = concrete(pattern);
        // OPTIONS (which no route has), and a method this route does not have.
        let other = ["PATCH", "PUT", "DELETE", "POST", "GET"]
            .into_iter()
            .find(|m| !allowed.contains(*m))
            .expect("no route has every method");
        for method in [Method::OPTIONS, Method::from_bytes(other.as_bytes()).unwrap()] {
            for token in [None, Some(API_TOKEN)] {
                let mut rq = http.request(method.clone(), format!("{base}{path}"));
                if let Some(t) = token {
                    rq = rq.bearer_auth(t);
                }
                let resp = rq.send().await.unwrap();
                asked += 1;
                assert_eq!(
                    resp.status(),
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} (token: {})",
                    token.is_some()
                );
                assert_eq!(&allow_of(&resp), allowed, "Allow of {method} {path}");
                assert_eq!(
                    resp.headers()[reqwest::header::CONTENT_TYPE],
                    "application/json",
                    "{method} {path}"
                );
                let body: Value = resp.json().await.unwrap();
                let error = body["error"].as_str().unwrap_or_default();
                assert!(
                    error.contains(method.as_str()) && error.contains(pattern),
                    "{method} {path}: {body}"
                );
            }
        }
    }
    // The methods that Allow lists are served: none of them answers 405.
    for (pattern, allowed) in &routes {
        for m in allowed {
            let method = Method::from_bytes(m.as_bytes()).unwrap();
            let resp = http
                .request(method.clone(), format!("{base}{}", concrete(pattern)))
                .send()
                .await
                .unwrap();
            assert_ne!(resp.status(), StatusCode::METHOD_NOT_ALLOWED, "{m} {pattern}");
        }
    }

    // Refusing a method is not an error of the admin: nothing at error (or warn) level, and
    // each refusal is logged at debug.
    let events = logs.take();
    let loud: Vec<_> = events.iter().filter(|(l, _, _)| *l <= Level::WARN).collect();
    assert!(loud.is_empty(), "405s must not log errors or warnings: {loud:?}");
    let refusals = events
        .iter()
        .filter(|(l, t, f)| *l == Level::DEBUG && t == "chime_admin::http::access" && f.contains("method not allowed"))
        .count();
    assert_eq!(refusals, asked, "one debug line per refused method");

    // The OpenAPI document lists, for each path, exactly the methods the router has (HEAD
    // aside, which comes with GET).
    let doc: Value = http
        .get(format!("{base}/v1/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let described: BTreeMap<String, BTreeSet<String>> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, ops)| {
            let methods = ops
                .as_object()
                .unwrap()
                .keys()
                .map(|m| m.to_ascii_uppercase())
                .collect();
            (path.clone(), methods)
        })
        .collect();
    let served: BTreeMap<String, BTreeSet<String>> = routes
        .iter()
        .map(|(p, ms)| {
            let ms = ms.iter().filter(|m| *m != "HEAD").cloned().collect();
            ((*p).to_owned(), ms)
        })
        .collect();
    assert_eq!(described, served, "OpenAPI paths and methods");

    handle.shutdown().await;
    db.drop_db().await;
}

/// A route the router serves but the access table does not know at all is a programming
/// error: it stays refused (fail closed, 403) and is logged as an error, not answered 405.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_without_any_rule_is_refused_and_logged_as_an_error() {
    let logs = Captured::install();
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let router = axum::Router::new()
        .route("/v1/unlisted", axum::routing::get(|| async { "served" }))
        .route_layer(axum::middleware::from_fn_with_state(
            handle.admin.clone(),
            chime_admin::http::access::guard,
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    logs.take();

    for method in [Method::GET, Method::OPTIONS] {
        let resp = reqwest::Client::new()
            .request(method.clone(), format!("{base}/v1/unlisted"))
            .bearer_auth(API_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::FORBIDDEN, "{method}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"], "this route has no access rule");
    }
    let errors = logs
        .take()
        .into_iter()
        .filter(|(l, _, f)| *l == Level::ERROR && f.contains("route without an access rule"))
        .count();
    assert_eq!(errors, 2, "each refusal is logged as an error");

    server.abort();
    handle.shutdown().await;
    db.drop_db().await;
}

/// Bodies up to the limit reach the handler (which judges them), bodies beyond it are refused
/// with 413 and the usual JSON error: never axum's plain-text refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_over_the_limit_are_refused_with_json_413() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let base = format!("http://{}", handle.local_addr);
    let http = reqwest::Client::new();
    let limit = chime_admin::http::access::MAX_BODY;

    // Larger than axum's own default (2 MB), within Chime's limit: the handler reads it and
    // refuses the unknown key by name.
    let within = format!("{{\"padding\": \"{}\"}}", "x".repeat(3 << 20));
    assert!(within.len() < limit);
    let resp = http
        .post(format!("{base}/v1/groups"))
        .bearer_auth(API_TOKEN)
        .header("content-type", "application/json")
        .body(within)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["field"], "padding", "{body}");

    let over = format!("{{\"padding\": \"{}\"}}", "x".repeat(limit));
    let resp = http
        .post(format!("{base}/v1/groups"))
        .bearer_auth(API_TOKEN)
        .header("content-type", "application/json")
        .body(over)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(resp.headers()[reqwest::header::CONTENT_TYPE], "application/json");
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap_or_default().contains("too large"),
        "{body}"
    );

    handle.shutdown().await;
    db.drop_db().await;
}

/// An integer query parameter that is given must be an integer in its range: an empty value is
/// refused, not taken as left out (the OpenAPI document declares integers, and `limit` from 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integer_query_values_must_be_integers_in_range() {
    let db = TestDb::new(Db::Sqlite).await;
    let handle = common::start_admin(&db.url).await;
    let api = common::Api::new(handle.local_addr);
    for (query, field) in [
        ("/v1/jobs?limit=", "limit"),
        ("/v1/jobs?limit=0", "limit"),
        ("/v1/jobs?after_id=", "after_id"),
        ("/v1/runs?before_id=&job_id=1", "before_id"),
        ("/v1/runs?job_id=", "job_id"),
        ("/v1/runs?limit=10001", "limit"),
        ("/v1/audit?limit=", "limit"),
        ("/v1/audit?from=x", "from"),
        ("/v1/schedule/preview?count=", "count"),
    ] {
        let (status, body) = api.get(query).await;
        assert_eq!((status, body["field"].as_str()), (400, Some(field)), "{query}: {body}");
    }
    for query in [
        "/v1/jobs?limit=1",
        "/v1/runs?job_id=1&limit=10000",
        "/v1/audit?limit=1000",
    ] {
        let (status, body) = api.get(query).await;
        assert_eq!(status, 200, "{query}: {body}");
    }
    handle.shutdown().await;
    db.drop_db().await;
}
