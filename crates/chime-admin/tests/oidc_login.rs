//! Console logins through an OpenID Connect provider, with a provider the test controls
//! (`common::oidc_provider`) and a real admin over HTTP: the groups claim maps to roles, again
//! at each login; the login is accepted once and only from the browser that started it; tokens
//! signed by another key, expired, for another audience, another issuer or with another nonce
//! are refused; a rotated key is fetched again; groups missing from the ID token are read from
//! the user info endpoint; logout goes on to the provider's. (The browser walk through the npm
//! `oidc-provider` is `tests/browser/oidc-login.test.mjs`.)

mod common;

use common::oidc_provider::{Fault, Provider, CLIENT_ID, CLIENT_SECRET};
use common::{Db, TestDb};
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::redirect::Policy;
use serde_json::Value;
use std::time::Duration;

const PUBLIC_URL: &str = "https://chime.example.com";
const RULES: &str = "chime-admins => admin; billing-ops => billing:operator";

/// A browser of its own: no redirects followed, cookies kept by hand.
struct Browser {
    base: String,
    http: reqwest::Client,
    login_cookie: Option<String>,
}

/// Where a login ended: the status, the page, the session cookie when one was set.
struct Landing {
    status: u16,
    page: String,
    session: Option<String>,
    /// The callback's path and query, to replay it.
    callback: String,
}

impl Browser {
    fn new(base: &str) -> Browser {
        Browser {
            base: base.to_owned(),
            http: reqwest::Client::builder().redirect(Policy::none()).build().unwrap(),
            login_cookie: None,
        }
    }

    /// Starts a login at Chime; answers the provider's authorization URL.
    async fn start(&mut self, provider: &str) -> String {
        let r = self
            .http
            .get(format!("{}/console/oidc/{provider}/login", self.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303, "{}", r.text().await.unwrap());
        let set = r.headers()[SET_COOKIE].to_str().unwrap().to_owned();
        for attr in ["HttpOnly", "SameSite=Lax", "Path=/console/oidc"] {
            assert!(set.contains(attr), "login cookie has {attr}: {set}");
        }
        self.login_cookie = Some(set.split(';').next().unwrap().to_owned());
        r.headers()[LOCATION].to_str().unwrap().to_owned()
    }

    /// Goes to the provider, which lets the next user in and sends the browser back; answers
    /// the way back's path and query on Chime.
    async fn at_provider(&self, authorize: &str) -> String {
        let r = self.http.get(authorize).send().await.unwrap();
        assert_eq!(r.status(), 302, "{}", r.text().await.unwrap());
        let back = r.headers()[LOCATION].to_str().unwrap().to_owned();
        let path = back.strip_prefix(PUBLIC_URL).expect("back to the public URL");
        assert!(path.starts_with("/console/oidc/corp/callback?"), "{back}");
        path.to_owned()
    }

    /// Comes back to Chime with the login cookie (when `with_cookie`).
    async fn back(&self, callback: &str, with_cookie: bool) -> Landing {
        let mut req = self.http.get(format!("{}{callback}", self.base));
        if let (true, Some(c)) = (with_cookie, &self.login_cookie) {
            req = req.header(COOKIE, c);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let session = r
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| v.starts_with("chime_session=") && !v.starts_with("chime_session=;"))
            .map(|v| {
                assert!(v.contains("SameSite=Strict") && v.contains("HttpOnly"), "{v}");
                v.split(';').next().unwrap().to_owned()
            });
        assert!(
            r.headers()["content-type"].to_str().unwrap().starts_with("text/html"),
            "a page for the browser"
        );
        Landing {
            status,
            page: r.text().await.unwrap(),
            session,
            callback: callback.to_owned(),
        }
    }

    /// A whole login: start, the provider, back.
    async fn login(&mut self) -> Landing {
        let authorize = self.start("corp").await;
        let callback = self.at_provider(&authorize).await;
        self.back(&callback, true).await
    }
}

/// `/console/api/me` with a session cookie.
async fn me(base: &str, session: &str) -> Value {
    let r = reqwest::Client::new()
        .get(format!("{base}/console/api/me"))
        .header(COOKIE, session)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_users_log_in_with_the_roles_their_groups_give_sqlite() {
    provider_users_log_in_with_the_roles_their_groups_give(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_users_log_in_with_the_roles_their_groups_give_mysql() {
    provider_users_log_in_with_the_roles_their_groups_give(Db::MySql).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_users_log_in_with_the_roles_their_groups_give_postgres() {
    provider_users_log_in_with_the_roles_their_groups_give(Db::Postgres).await;
}

async fn provider_users_log_in_with_the_roles_their_groups_give(kind: Db) {
    let provider = Provider::start().await;
    let db = TestDb::new(kind).await;
    let mut config = common::config(&db.url);
    config.public_url = Some(PUBLIC_URL.to_owned());
    config.sso_roles = RULES.parse().unwrap();
    config.oidc = format!(
        "corp issuer={} client_id={CLIENT_ID} client_secret={CLIENT_SECRET}; \
         down issuer=http://127.0.0.1:9 client_id={CLIENT_ID}",
        provider.issuer
    )
    .parse()
    .unwrap();
    let handle = chime_admin::start(config).await.expect("admin starts");
    let base = format!("http://{}", handle.local_addr);
    let api = common::caller::Caller::api(&base);
    api.new_group("billing").await;

    // The login page learns which providers there are.
    let options: Value = reqwest::get(format!("{base}/console/api/login-options"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(options["oidc"], serde_json::json!(["corp", "down"]));

    // alice's groups make her an operator of billing.
    let mut browser = Browser::new(&base);
    provider.next("alice", &["billing-ops", "unmapped"], None);
    let landed = browser.login().await;
    assert_eq!(landed.status, 200, "{}", landed.page);
    assert!(
        landed.page.contains("url=/console/"),
        "the page moves on: {}",
        landed.page
    );
    let session = landed.session.clone().expect("a session");
    let alice = me(&base, &session).await;
    assert_eq!(alice["username"], "alice");
    assert_eq!(alice["admin"], false);
    assert_eq!(alice["group_roles"].as_array().unwrap().len(), 1, "{alice}");
    assert_eq!(alice["group_roles"][0]["role"], "operator", "{alice}");
    assert_eq!(provider.bad_verifiers(), 0, "the PKCE verifier matched its challenge");

    // The same answer again (a replayed state) is refused, with or without the cookie.
    let again = browser.back(&landed.callback, true).await;
    assert_eq!(again.status, 400, "{}", again.page);
    assert!(again.page.contains("used already"), "{}", again.page);
    assert!(again.session.is_none());

    // An answer brought by another browser than the one that left is refused (login CSRF).
    provider.next("alice", &["billing-ops"], None);
    let authorize = browser.start("corp").await;
    let callback = browser.at_provider(&authorize).await;
    let elsewhere = browser.back(&callback, false).await;
    assert_eq!(elsewhere.status, 400, "{}", elsewhere.page);
    assert!(elsewhere.page.contains("another browser"), "{}", elsewhere.page);

    // Tokens that fail a check are refused, and nothing is logged in.
    for fault in [
        Fault::ForeignKey,
        Fault::Expired,
        Fault::WrongAudience,
        Fault::WrongNonce,
        Fault::WrongIssuer,
    ] {
        provider.next("mallory", &["chime-admins"], Some(fault));
        let landed = browser.login().await;
        assert_eq!(landed.status, 401, "{fault:?}: {}", landed.page);
        assert!(landed.session.is_none(), "{fault:?}");
        assert!(landed.page.contains("did not pass its checks"), "{}", landed.page);
    }
    let users: Value = api.call(reqwest::Method::GET, "/v1/users", None).await.1;
    assert!(
        !users.to_string().contains("mallory"),
        "no user made from a refused token: {users}"
    );

    // The provider rotates its key: Chime fetches the keys again and lets bob in.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let fetches = provider.jwks_fetches();
    provider.rotate_key("k2");
    provider.next("bob", &["chime-admins"], None);
    let bob = browser.login().await;
    assert_eq!(bob.status, 200, "{}", bob.page);
    assert!(provider.jwks_fetches() > fetches, "the keys were fetched again");
    assert_eq!(me(&base, &bob.session.unwrap()).await["admin"], true);

    // Groups only in the user info endpoint's answer count too; roles follow the groups at
    // each login (alice lost billing-ops: she is refused, with the reason).
    provider.next_with_groups_in_userinfo("carol", &["billing-ops"]);
    let carol = browser.login().await;
    assert_eq!(carol.status, 200, "{}", carol.page);
    provider.next("alice", &["unmapped"], None);
    let refused = browser.login().await;
    assert_eq!(refused.status, 403, "{}", refused.page);
    assert!(refused.page.contains("no access"), "{}", refused.page);

    // The provider says no (the user cancelled): the page says why.
    let authorize = browser.start("corp").await;
    let state = authorize.split("state=").nth(1).unwrap().split('&').next().unwrap();
    let denied = browser
        .back(
            &format!(
                "/console/oidc/corp/callback?error=access_denied&error_description=cancelled+by+user&state={state}"
            ),
            true,
        )
        .await;
    assert_eq!(denied.status, 401);
    assert!(denied.page.contains("cancelled by user"), "{}", denied.page);

    // A local user of the same name is not taken over.
    api.ok(
        reqwest::Method::POST,
        "/v1/users",
        Some(serde_json::json!({"username": "dave", "password": "dave-local-pw-1", "role": "admin"})),
    )
    .await;
    provider.next("dave", &["chime-admins"], None);
    let dave = browser.login().await;
    assert_eq!(dave.status, 409, "{}", dave.page);
    assert!(dave.session.is_none());

    // Logging out sends the browser on to the provider's logout.
    let r = reqwest::Client::new()
        .post(format!("{base}/console/api/logout"))
        .header(COOKIE, &session)
        .header("x-csrf-token", alice["csrf_token"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let out: Value = r.json().await.unwrap();
    let redirect = out["redirect"].as_str().unwrap();
    assert!(
        redirect.starts_with(&format!("{}/logout?", provider.issuer)),
        "{redirect}"
    );
    assert!(redirect.contains("client_id=chime"), "{redirect}");
    assert!(
        redirect.contains("post_logout_redirect_uri=https%3A%2F%2Fchime.example.com%2Fconsole%2F"),
        "{redirect}"
    );

    // Unknown providers, a provider that cannot be reached, and oversized answers.
    let http = reqwest::Client::builder().redirect(Policy::none()).build().unwrap();
    let r = http
        .get(format!("{base}/console/oidc/nope/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = http
        .get(format!("{base}/console/oidc/down/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert!(r
        .text()
        .await
        .unwrap()
        .contains("Local administrator accounts can still log in"));
    let r = http
        .get(format!(
            "{base}/console/oidc/corp/callback?code=x&state={}",
            "s".repeat(5000)
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);

    // One address cannot fill the table of logins under way: its starts are limited.
    let mut started = 0;
    let mut limited = 0;
    for _ in 0..40 {
        let r = http
            .get(format!("{base}/console/oidc/corp/login"))
            .send()
            .await
            .unwrap();
        match r.status().as_u16() {
            303 => started += 1,
            429 => limited += 1,
            other => panic!("a login start answered {other}"),
        }
    }
    assert!(limited > 0 && started < 30, "started {started}, limited {limited}");

    // Every login is in the audit log, under the user or the provider.
    let audit: Value = api.call(reqwest::Method::GET, "/v1/audit?limit=200", None).await.1;
    let text = audit.to_string();
    assert!(text.contains("\"username\":\"alice\""), "{text}");
    assert!(
        text.contains("\"username\":\"oidc:corp\""),
        "failed logins under the provider: {text}"
    );

    handle.shutdown().await;
    db.drop_db().await;
}
