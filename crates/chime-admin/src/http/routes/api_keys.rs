//! The routes of API keys. Any logged-in user may make keys within their own rights; the
//! handlers check the one key they act on (its maker, or an administrator).

use super::Route;
use crate::http::access::Rule;
use crate::http::api_keys as keys;
use crate::http::openapi::{arr, body, id, op, r};
use serde_json::json;

/// The routes of API keys.
pub(super) const ROUTES: &[Route] = &[
    api!("GET" "/v1/api-keys", Rule::Authenticated, keys::list, op(
        "List your API keys (administrators: every key), never with their tokens",
        "api-keys", json!([]), None, (200, Some(arr(r("ApiKey")))), &[403],
    )),
    api!("POST" "/v1/api-keys", Rule::Authenticated, keys::create, op(
        "Make an API key: a role (viewer, editor, admin) within your own rights, its groups, an expiry; the token is in this answer only",
        "api-keys", json!([]), Some(body(r("ApiKeySpec"), true)), (201, Some(r("NewApiKey"))), &[400, 403, 409, 413, 422],
    )),
    api!("GET" "/v1/api-keys/{id}", Rule::Authenticated, keys::show, op(
        "Show one of your API keys (administrators: any)",
        "api-keys", json!([id()]), None, (200, Some(r("ApiKey"))), &[400, 403, 404],
    )),
    api!("DELETE" "/v1/api-keys/{id}", Rule::Authenticated, keys::revoke, op(
        "Revoke an API key: it stops working at once and stays listed as revoked",
        "api-keys", json!([id()]), None, (200, Some(r("ApiKey"))), &[400, 403, 404, 413],
    )),
];
