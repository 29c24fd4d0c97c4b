//! Every route of `/v1` and `/console/api`, each declared once: its method and path, who may
//! use it, the handler that serves it and its OpenAPI operation. The router
//! ([`super::router`]), the access middleware (which finds a route's [`Rule`] on the request,
//! put there by the router from this table) and the OpenAPI document ([`openapi_document`])
//! are all built from [`ROUTES`], so a route is added in one place and the three cannot
//! disagree.
//!
//! The table is declared by resource, one file each, in the order the document lists them, and
//! put together into [`ROUTES`] when the admin is compiled.
//!
//! The executor API (the XXL-JOB protocol at `/api/…`), `/metrics`, `/healthz`, the console's
//! static files and `/v1/openapi.json` itself are not here: they are open or authenticated by
//! the executor token, not by users, and are not part of the REST API.

/// A documented route of the REST API, in the resource files: `api!("GET" "/v1/jobs/{id}",
/// rule, handler, operation)`, the operation an expression (of `serde_json::Value`) evaluated
/// when the document is built. See [`api`].
macro_rules! api {
    ($method:literal $path:literal, $rule:expr, $handler:path, $operation:expr $(,)?) => {
        super::api($method, $path, $rule, |m| axum::routing::on(m, $handler), || $operation)
    };
}

mod alarm_channels;
mod alarm_silences;
mod api_keys;
mod calendars;
mod executors;
mod flow;
mod groups;
mod jobs;
mod runs;
mod session;
mod users;
mod workflows;

use super::access::Rule;
use crate::center::Admin;
use axum::routing::{MethodFilter, MethodRouter};
use serde_json::Value;
use std::sync::Arc;

/// One route: method, path, access rule, handler and documentation.
#[derive(Clone, Copy)]
pub struct Route {
    /// HTTP method, upper case.
    pub method: &'static str,
    /// Route pattern, as the router matches it (`/v1/jobs/{id}`).
    pub path: &'static str,
    /// Who may use it.
    pub rule: Rule,
    /// The handler, on the method it is given.
    serve: Serve,
    /// The OpenAPI operation; `None` for the console's session routes, which are for the web
    /// console only and not part of the REST API.
    operation: Option<fn() -> Value>,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("rule", &self.rule)
            .finish_non_exhaustive()
    }
}

impl Route {
    /// The handler, answering this route's method only.
    pub fn method_router(&self) -> MethodRouter<Arc<Admin>> {
        (self.serve)(self.method_filter())
    }

    /// The route's OpenAPI operation, if it is part of the REST API.
    pub fn operation(&self) -> Option<Value> {
        self.operation.map(|describe| describe())
    }

    fn method_filter(&self) -> MethodFilter {
        match self.method {
            "GET" => MethodFilter::GET,
            "POST" => MethodFilter::POST,
            "PUT" => MethodFilter::PUT,
            "PATCH" => MethodFilter::PATCH,
            "DELETE" => MethodFilter::DELETE,
            // The table is a constant of this file; the unit test below builds every entry,
            // and every admin builds them all at start-up, before it serves anything.
            other => panic!("route table: unsupported method {other} for {}", self.path),
        }
    }
}

/// The handler of a route, given the method it answers.
type Serve = fn(MethodFilter) -> MethodRouter<Arc<Admin>>;

/// A documented route of the REST API.
const fn api(method: &'static str, path: &'static str, rule: Rule, serve: Serve, describe: fn() -> Value) -> Route {
    let mut route = console_only(method, path, rule, serve);
    route.operation = Some(describe);
    route
}

/// A route of the web console's session, outside the REST API's document.
const fn console_only(method: &'static str, path: &'static str, rule: Rule, serve: Serve) -> Route {
    Route {
        method,
        path,
        rule,
        serve,
        operation: None,
    }
}

/// The routes of each resource, in the order of the document.
const BY_RESOURCE: &[&[Route]] = &[
    workflows::ROUTES,
    groups::ROUTES,
    jobs::ROUTES,
    runs::ROUTES,
    executors::ROUTES,
    alarm_channels::ROUTES,
    alarm_silences::ROUTES,
    calendars::ROUTES,
    flow::ROUTES,
    users::ROUTES,
    api_keys::ROUTES,
    session::ROUTES,
];

/// How many routes there are.
const COUNT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < BY_RESOURCE.len() {
        n += BY_RESOURCE[i].len();
        i += 1;
    }
    n
};

/// The routes of every resource in one table, built at compile time.
const fn concatenated() -> [Route; COUNT] {
    let mut out = [BY_RESOURCE[0][0]; COUNT];
    let (mut at, mut i) = (0, 0);
    while i < BY_RESOURCE.len() {
        let mut j = 0;
        while j < BY_RESOURCE[i].len() {
            out[at] = BY_RESOURCE[i][j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Every route of `/v1` and `/console/api`.
pub const ROUTES: &[Route] = &concatenated();

/// The OpenAPI 3.1 document of the REST API, served at `/v1/openapi.json`.
pub fn openapi_document() -> Value {
    super::openapi::document(
        ROUTES
            .iter()
            .filter_map(|route| Some((route.method, route.path, route.operation()?))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Every entry builds (its method is one the router knows), and no method and path is
    /// declared twice.
    #[test]
    fn every_route_builds_once() {
        let mut seen = BTreeSet::new();
        for route in ROUTES {
            let _ = route.method_router();
            assert!(
                seen.insert((route.method, route.path)),
                "{} {} twice",
                route.method,
                route.path
            );
        }
    }

    /// The document describes the routes of `/v1`, and only they are documented.
    #[test]
    fn the_rest_api_and_only_it_is_documented() {
        for route in ROUTES {
            assert_eq!(
                route.operation().is_some(),
                route.path.starts_with("/v1/"),
                "{} {}",
                route.method,
                route.path
            );
        }
        let doc = openapi_document();
        let described: usize = doc["paths"]
            .as_object()
            .unwrap()
            .values()
            .map(|ops| ops.as_object().unwrap().len())
            .sum();
        assert_eq!(described, ROUTES.iter().filter(|r| r.path.starts_with("/v1/")).count());
    }

    /// Every reference points at something defined, every operation answers 401 and 503, and
    /// each has exactly one success status (204 without a body).
    #[test]
    fn references_resolve_and_common_statuses_are_listed() {
        let doc = openapi_document();
        let text = doc.to_string();
        for piece in text.split("\"$ref\":\"#/components/").skip(1) {
            let target = piece.split('"').next().unwrap();
            let (kind, name) = target.split_once('/').unwrap();
            assert!(
                doc["components"][kind][name].is_object(),
                "#/components/{target} is not defined"
            );
        }
        for (path, ops) in doc["paths"].as_object().unwrap() {
            for (method, op) in ops.as_object().unwrap() {
                for code in ["401", "503"] {
                    assert!(op["responses"][code].is_object(), "{method} {path} lacks {code}");
                }
                let ok: Vec<&String> = op["responses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .filter(|c| c.starts_with('2'))
                    .collect();
                assert_eq!(ok.len(), 1, "{method} {path}: one success status");
                if ok[0] == "204" {
                    assert!(
                        op["responses"]["204"].get("content").is_none(),
                        "{method} {path}: 204 has no body"
                    );
                }
            }
        }
    }
}
