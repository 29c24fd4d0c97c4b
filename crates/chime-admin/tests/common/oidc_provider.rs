//! An OpenID provider the test controls, on loopback: discovery, an authorization endpoint that
//! lets the next user in at once, a token endpoint that checks the PKCE verifier and issues an
//! ES256-signed ID token, the keys, user info and a logout endpoint. What it signs can be made
//! wrong on purpose (another key, expired, another audience, another nonce), and its key can be
//! rotated, to check that Chime refuses and follows what it should. (The browser test logs in
//! through a certified provider, the npm `oidc-provider`; this one exists for the tokens no
//! correct provider would issue.)

use axum::extract::{Form, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The client id Chime is registered with.
pub const CLIENT_ID: &str = "chime";
/// Its secret.
pub const CLIENT_SECRET: &str = "chime-client-secret";

/// What the next token is made wrong with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Signed by a key the provider does not publish (with the published key's id).
    ForeignKey,
    /// Expired an hour ago.
    Expired,
    /// Issued to another client.
    WrongAudience,
    /// With a nonce other than the login's.
    WrongNonce,
    /// Issued by another issuer.
    WrongIssuer,
}

/// Who the provider lets in next, and how.
#[derive(Debug, Clone)]
pub struct NextLogin {
    pub username: String,
    pub groups: Vec<String>,
    pub fault: Option<Fault>,
    /// Groups only from the user info endpoint, not in the ID token.
    pub groups_in_userinfo_only: bool,
}

struct Key {
    id: String,
    pair: EcdsaKeyPair,
}

impl Key {
    fn new(id: &str) -> Key {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        Key {
            id: id.to_owned(),
            pair: EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap(),
        }
    }

    fn jwk(&self) -> Value {
        // An uncompressed P-256 point: 0x04, then x and y of 32 bytes each.
        let public = self.pair.public_key().as_ref();
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.id,
            "x": B64.encode(&public[1..33]), "y": B64.encode(&public[33..65]),
        })
    }

    fn sign(&self, claims: &Value) -> String {
        let header = json!({ "alg": "ES256", "typ": "JWT", "kid": self.id });
        let input = format!("{}.{}", B64.encode(header.to_string()), B64.encode(claims.to_string()));
        let signature = self.pair.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", B64.encode(signature.as_ref()))
    }
}

/// A code handed out, and what its token will say.
struct Issued {
    login: NextLogin,
    nonce: String,
    challenge: String,
}

struct Inner {
    issuer: String,
    key: Key,
    next: Option<NextLogin>,
    codes: HashMap<String, Issued>,
    /// Who each access token names, for the user info endpoint.
    access: HashMap<String, NextLogin>,
    /// Requests for the keys, to see a rotation followed.
    jwks_fetches: usize,
    /// Token requests whose PKCE verifier did not match.
    bad_verifiers: usize,
}

/// The running provider.
#[derive(Clone)]
pub struct Provider {
    pub issuer: String,
    inner: Arc<Mutex<Inner>>,
}

impl Provider {
    /// Starts a provider on a free loopback port.
    pub async fn start() -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let inner = Arc::new(Mutex::new(Inner {
            issuer: issuer.clone(),
            key: Key::new("k1"),
            next: None,
            codes: HashMap::new(),
            access: HashMap::new(),
            jwks_fetches: 0,
            bad_verifiers: 0,
        }));
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/auth", get(authorize))
            .route("/token", post(token))
            .route("/userinfo", get(userinfo))
            .with_state(inner.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Provider { issuer, inner }
    }

    /// Who logs in next.
    pub fn next(&self, username: &str, groups: &[&str], fault: Option<Fault>) {
        self.inner.lock().unwrap().next = Some(NextLogin {
            username: username.to_owned(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            fault,
            groups_in_userinfo_only: false,
        });
    }

    /// The same, the groups given by the user info endpoint only.
    pub fn next_with_groups_in_userinfo(&self, username: &str, groups: &[&str]) {
        self.next(username, groups, None);
        if let Some(n) = self.inner.lock().unwrap().next.as_mut() {
            n.groups_in_userinfo_only = true;
        }
    }

    /// Replaces the signing key by a new one with another id (the old one is no longer
    /// published).
    pub fn rotate_key(&self, id: &str) {
        self.inner.lock().unwrap().key = Key::new(id);
    }

    /// How many times the keys were fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.inner.lock().unwrap().jwks_fetches
    }

    /// How many token requests came with a wrong PKCE verifier.
    pub fn bad_verifiers(&self) -> usize {
        self.inner.lock().unwrap().bad_verifiers
    }
}

type Shared = State<Arc<Mutex<Inner>>>;

async fn discovery(State(inner): Shared) -> Json<Value> {
    let issuer = inner.lock().unwrap().issuer.clone();
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/auth"),
        "token_endpoint": format!("{issuer}/token"),
        "userinfo_endpoint": format!("{issuer}/userinfo"),
        "jwks_uri": format!("{issuer}/jwks"),
        "end_session_endpoint": format!("{issuer}/logout"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

async fn jwks(State(inner): Shared) -> Json<Value> {
    let mut i = inner.lock().unwrap();
    i.jwks_fetches += 1;
    Json(json!({ "keys": [i.key.jwk()] }))
}

/// Lets the next user in at once: back to the redirect URI with a code and the state.
async fn authorize(State(inner): Shared, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut i = inner.lock().unwrap();
    let Some(login) = i.next.take() else {
        return (StatusCode::BAD_REQUEST, "nobody is set to log in").into_response();
    };
    assert_eq!(q.get("client_id").map(String::as_str), Some(CLIENT_ID));
    assert_eq!(q.get("response_type").map(String::as_str), Some("code"));
    assert_eq!(
        q.get("code_challenge_method").map(String::as_str),
        Some("S256"),
        "PKCE is used"
    );
    assert!(q.get("scope").is_some_and(|s| s.split(' ').any(|s| s == "openid")));
    let code = format!("code-{}", i.codes.len() + 1);
    let redirect = q["redirect_uri"].clone();
    let state = q["state"].clone();
    i.codes.insert(
        code.clone(),
        Issued {
            login,
            nonce: q["nonce"].clone(),
            challenge: q["code_challenge"].clone(),
        },
    );
    let location = format!("{redirect}?code={code}&state={state}");
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

async fn token(
    State(inner): Shared,
    headers: axum::http::HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Response {
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    if headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) != Some(basic.as_str()) {
        return (StatusCode::UNAUTHORIZED, Json(json!({ "error": "invalid_client" }))).into_response();
    }
    let mut i = inner.lock().unwrap();
    // A code is good once.
    let Some(issued) = f.get("code").and_then(|c| i.codes.remove(c)) else {
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": "invalid_grant" }))).into_response();
    };
    let verifier = f.get("code_verifier").cloned().unwrap_or_default();
    if B64.encode(Sha256::digest(verifier.as_bytes())) != issued.challenge {
        i.bad_verifiers += 1;
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": "invalid_grant" }))).into_response();
    }
    let now = chrono::Utc::now().timestamp();
    let login = &issued.login;
    let mut claims = json!({
        "iss": i.issuer, "sub": format!("sub-{}", login.username), "aud": CLIENT_ID,
        "iat": now, "exp": now + 300, "nonce": issued.nonce,
        "preferred_username": login.username,
    });
    if !login.groups_in_userinfo_only {
        claims["groups"] = json!(login.groups);
    }
    match login.fault {
        Some(Fault::Expired) => {
            claims["iat"] = json!(now - 7200);
            claims["exp"] = json!(now - 3600);
        }
        Some(Fault::WrongAudience) => claims["aud"] = json!("another-client"),
        Some(Fault::WrongNonce) => claims["nonce"] = json!("not-the-nonce"),
        Some(Fault::WrongIssuer) => claims["iss"] = json!("http://evil.example"),
        Some(Fault::ForeignKey) | None => {}
    }
    let id_token = if login.fault == Some(Fault::ForeignKey) {
        Key::new(&i.key.id).sign(&claims)
    } else {
        i.key.sign(&claims)
    };
    let access = format!("access-{}", login.username);
    i.access.insert(access.clone(), login.clone());
    Json(json!({ "access_token": access, "token_type": "Bearer", "expires_in": 300, "id_token": id_token }))
        .into_response()
}

async fn userinfo(State(inner): Shared, headers: axum::http::HeaderMap) -> Response {
    let i = inner.lock().unwrap();
    let access = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    let Some(login) = i.access.get(access) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    Json(json!({
        "sub": format!("sub-{}", login.username),
        "preferred_username": login.username,
        "groups": login.groups,
    }))
    .into_response()
}
