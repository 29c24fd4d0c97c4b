//! Console logins through a real OpenLDAP server (`slapd`, started by the test): search-then-
//! bind as OpenLDAP setups do it, and a direct bind with the groups read from `memberOf` as
//! Active Directory gives them. Directory groups map to roles per executor group (and to the
//! administrator role), again at each login; wrong passwords, unknown and locked accounts,
//! empty passwords and filter injection are refused alike; a user whose groups give nothing is
//! refused with a reason; with the directory down the login says so and the local break-glass
//! administrator still logs in; local login can be limited to administrators.

mod common;

use chime_admin::config::LocalLogin;
use chime_admin::AdminConfig;
use common::caller::Caller;
use common::slapd::{Slapd, ADMIN_DN, ADMIN_PASSWORD, SUFFIX};
use common::{Db, TestDb};
use reqwest::Method;
use serde_json::{json, Value};

const RULES: &str = "chime-admins => admin; billing-ops => billing:operator; \
                     cn=billing-devs,ou=groups,dc=example,dc=org => billing:editor";

/// A directory with alice (billing-ops), bob (chime-admins), carol (no mapped group) and a
/// locked account.
fn directory() -> Slapd {
    let slapd = Slapd::start();
    for (user, password) in [
        ("alice", "alice-ldap-pw"),
        ("bob", "bob-ldap-pw"),
        ("carol", "carol-ldap-pw"),
        ("locked", "locked-ldap-pw"),
    ] {
        slapd.add_user(user, password);
    }
    slapd.add_group("billing-ops", &["alice", "locked"]);
    slapd.add_group("billing-devs", &["bob"]);
    slapd.add_group("chime-admins", &["bob"]);
    slapd.add_group("other", &["carol"]);
    slapd.lock("locked");
    slapd
}

/// Logs in; answers the status and the body.
async fn login(base: &str, user: &str, password: &str) -> (u16, Value) {
    let (s, v) = Caller::anonymous(base)
        .call(
            Method::POST,
            "/console/api/login",
            Some(json!({"username": user, "password": password})),
        )
        .await;
    (s.as_u16(), v)
}

fn search_then_bind(c: &mut AdminConfig, slapd: &Slapd) {
    c.ldap_url = Some(slapd.url.clone());
    c.ldap_bind_dn = Some(ADMIN_DN.to_owned());
    c.ldap_bind_password = Some(ADMIN_PASSWORD.to_owned());
    c.ldap_user_base = Some(format!("ou=people,{SUFFIX}"));
    c.ldap_group_base = Some(format!("ou=groups,{SUFFIX}"));
    c.sso_roles = RULES.parse().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_users_log_in_with_the_roles_their_groups_give_sqlite() {
    directory_users_log_in_with_the_roles_their_groups_give(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_users_log_in_with_the_roles_their_groups_give_postgres() {
    directory_users_log_in_with_the_roles_their_groups_give(Db::Postgres).await;
}

async fn directory_users_log_in_with_the_roles_their_groups_give(kind: Db) {
    let mut slapd = directory();
    let db = TestDb::new(kind).await;
    let mut config = common::config(&db.url);
    search_then_bind(&mut config, &slapd);
    config.local_login = LocalLogin::Admins;
    let handle = chime_admin::start(config).await.expect("admin starts");
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let billing = api.new_group("billing").await;
    let job = api.new_job(billing).await;

    // Alice: an operator of billing, from billing-ops; kept as a directory user.
    let (s, me) = login(&base, "alice", "alice-ldap-pw").await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(
        (me["admin"].as_bool(), me["role"].as_str()),
        (Some(false), Some("user"))
    );
    assert_eq!(
        me["group_roles"],
        json!([{"group_id": billing, "role": "operator"}]),
        "{me}"
    );
    let alice = Caller::login(&base, "alice", "alice-ldap-pw").await;
    alice.ok(Method::POST, &format!("/v1/jobs/{job}/trigger"), None).await;
    let (s, _) = alice
        .call(
            Method::PATCH,
            &format!("/v1/jobs/{job}"),
            Some(json!({"description": "x"})),
        )
        .await;
    assert_eq!(s, 403, "an operator does not edit");
    let users = api.ok(Method::GET, "/v1/users", None).await;
    let stored = users
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["username"] == "alice")
        .unwrap();
    assert_eq!(stored["source"], "ldap", "{stored}");
    let (s, v) = alice
        .call(
            Method::POST,
            "/v1/me/password",
            Some(json!({"current_password": "alice-ldap-pw", "new_password": "something-new"})),
        )
        .await;
    assert_eq!(s, 409, "the directory keeps her password: {v}");

    // Bob: an administrator, from chime-admins.
    let (s, me) = login(&base, "bob", "bob-ldap-pw").await;
    assert_eq!((s, me["admin"].as_bool()), (200, Some(true)), "{me}");

    // Refused alike: wrong password, unknown user, locked account, empty password, injection.
    for (user, password) in [
        ("alice", "wrong"),
        ("nobody", "whatever"),
        ("locked", "locked-ldap-pw"),
        ("alice", ""),
        ("*", "alice-ldap-pw"),
        ("alice)(uid=*", "alice-ldap-pw"),
    ] {
        let (s, v) = login(&base, user, password).await;
        assert_eq!(
            (s, v["error"].as_str()),
            (401, Some("wrong user name or password")),
            "{user}/{password}"
        );
    }
    // Carol's groups give nothing: refused, and told why.
    let (s, v) = login(&base, "carol", "carol-ldap-pw").await;
    assert_eq!(s, 403, "{v}");
    assert!(v["error"].as_str().unwrap().contains("no access"), "{v}");

    // Groups are read again at each login: alice moves to billing-devs and is an editor.
    slapd.move_user("alice", "billing-ops", "billing-devs");
    let (s, me) = login(&base, "alice", "alice-ldap-pw").await;
    assert_eq!(s, 200);
    assert_eq!(
        me["group_roles"],
        json!([{"group_id": billing, "role": "editor"}]),
        "{me}"
    );

    // Local passwords are for administrators only: a local user is refused, the local admin
    // (break-glass) is not.
    api.ok(
        Method::POST,
        "/v1/users",
        Some(json!({"username": "dana", "password": "dana-password", "group_ids": [billing]})),
    )
    .await;
    let (s, v) = login(&base, "dana", "dana-password").await;
    assert_eq!(s, 403, "{v}");
    let (s, _) = login(&base, "admin", "test-password").await;
    assert_eq!(s, 200);

    // The directory down: a clear answer, and the break-glass administrator still gets in.
    slapd.kill();
    // Not counted as failures: more tries than the login limit allows still get the reason.
    for _ in 0..7 {
        let (s, v) = login(&base, "alice", "alice-ldap-pw").await;
        assert_eq!(s, 503, "{v}");
        assert!(v["error"].as_str().unwrap().contains("cannot be reached"), "{v}");
    }
    let (s, _) = login(&base, "admin", "test-password").await;
    assert_eq!(s, 200, "local admins log in without the directory");

    // Every outcome is in the audit log.
    let audit = api.ok(Method::GET, "/v1/audit?username=alice", None).await;
    let statuses: Vec<i64> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().is_some_and(|a| a.starts_with("login")))
        .filter_map(|e| {
            // The detail is JSON, kept as text or given as an object.
            let detail = match &e["detail"] {
                Value::String(text) => serde_json::from_str(text).ok()?,
                other => other.clone(),
            };
            detail["status"].as_i64()
        })
        .collect();
    for status in [200, 401, 503] {
        assert!(statuses.contains(&status), "{status} in {statuses:?}: {audit}");
    }
    db.drop_db().await;
}

/// Active Directory's way: bind as `{username}@domain`-like names (here a DN template), groups
/// from the user's `memberOf`, no group search.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_bind_reads_the_groups_from_member_of() {
    let slapd = directory();
    let db = TestDb::new(Db::Sqlite).await;
    let mut config = common::config(&db.url);
    config.ldap_url = Some(slapd.url.clone());
    config.ldap_user_dn = Some(format!("uid={{username}},ou=people,{SUFFIX}"));
    config.ldap_group_attribute = "memberOf".to_owned();
    config.sso_roles = RULES.parse().unwrap();
    let handle = chime_admin::start(config).await.expect("admin starts");
    let base = format!("http://{}", handle.local_addr);
    let api = Caller::api(&base);
    let billing = api.new_group("billing").await;
    let (s, me) = login(&base, "alice", "alice-ldap-pw").await;
    assert_eq!(s, 200, "{me}");
    assert_eq!(
        me["group_roles"],
        json!([{"group_id": billing, "role": "operator"}]),
        "{me}"
    );
    let (s, me) = login(&base, "bob", "bob-ldap-pw").await;
    assert_eq!((s, me["admin"].as_bool()), (200, Some(true)), "{me}");
    // A name that would change the DN is escaped, so it binds as nobody.
    let (s, _) = login(&base, "alice,ou=people", "alice-ldap-pw").await;
    assert_eq!(s, 401);
    // Without local_login = admins, local users still log in beside the directory.
    let (s, _) = login(&base, "admin", "test-password").await;
    assert_eq!(s, 200);
}
