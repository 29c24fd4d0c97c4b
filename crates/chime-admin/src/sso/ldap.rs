//! Console logins checked against an LDAP directory (OpenLDAP, Active Directory, …), with
//! `ldap3`: bind as the user (a DN made from the login name, or found first by a service
//! account's search), then read the user's groups from the entry's `memberOf` and, when a group
//! base is set, from a search for groups that name the user. The password is sent only over
//! LDAPS or after StartTLS unless the operator chose a plain `ldap://` URL.

use ldap3::{dn_escape, ldap_escape, LdapConnAsync, LdapConnSettings, LdapError, Scope, SearchEntry};
use std::sync::Arc;
use std::time::Duration;

/// LDAP result code of a refused bind: wrong password, unknown DN, locked or expired account.
const INVALID_CREDENTIALS: u32 = 49;

/// How Chime finds and checks a user in the directory (the admin's `ldap_*` settings).
#[derive(Debug, Clone)]
pub struct LdapSettings {
    /// `ldap://host:389` or `ldaps://host:636`.
    pub url: String,
    /// StartTLS on an `ldap://` connection before anything else is sent.
    pub starttls: bool,
    /// Bind directly as this DN, `{username}` replaced (escaped as a DN value); `None`: search.
    pub user_dn: Option<String>,
    /// The service account that searches for users.
    pub bind_dn: Option<String>,
    /// Its password.
    pub bind_password: Option<String>,
    /// Where users are searched (and, after a direct bind, read back for their groups).
    pub user_base: Option<String>,
    /// The filter that finds a user, `{username}` replaced (escaped as a filter value).
    pub user_filter: String,
    /// The user entry's attribute listing its groups.
    pub group_attribute: String,
    /// Where groups naming the user are searched (none: only `group_attribute`).
    pub group_base: Option<String>,
    /// The filter of those groups, `{dn}` and `{username}` replaced.
    pub group_filter: String,
    /// Time limit of the connection and of each operation.
    pub timeout: Duration,
}

/// A user the directory accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryUser {
    /// The user's entry.
    pub dn: String,
    /// The groups the user is in (DNs, as the directory names them).
    pub groups: Vec<String>,
}

/// Why a directory login failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LdapFailure {
    /// Wrong name or password, or an account the directory refuses (locked, expired): the user
    /// is told no more than that.
    #[error("wrong user name or password")]
    Refused,
    /// The directory could not be asked (down, TLS failure, the service account refused).
    #[error("{0}")]
    Unavailable(String),
}

impl LdapSettings {
    /// Checks `username` and `password` against the directory; answers the user's entry and
    /// groups.
    pub async fn authenticate(
        &self,
        tls: Arc<rustls::ClientConfig>,
        username: &str,
        password: &str,
    ) -> Result<DirectoryUser, LdapFailure> {
        // An empty password would be an "unauthenticated bind", which servers accept as
        // anonymous: it must never count as a login.
        if password.is_empty() || username.is_empty() || username.chars().any(char::is_control) {
            return Err(LdapFailure::Refused);
        }
        let settings = LdapConnSettings::new()
            .set_conn_timeout(self.timeout)
            .set_starttls(self.starttls)
            .set_config(tls);
        let (conn, mut ldap) = LdapConnAsync::with_settings(settings, &self.url)
            .await
            .map_err(|e| unavailable("cannot connect", &e))?;
        ldap3::drive!(conn);
        ldap.with_timeout(self.timeout);
        let dn = match &self.user_dn {
            Some(template) => template.replace("{username}", &dn_escape(username)),
            None => self.find_user(&mut ldap, username).await?,
        };
        let bound = ldap.with_timeout(self.timeout).simple_bind(&dn, password).await;
        match bound {
            Ok(r) if r.rc == 0 => {}
            Ok(r) if r.rc == INVALID_CREDENTIALS => return Err(LdapFailure::Refused),
            Ok(r) => {
                tracing::warn!(rc = r.rc, text = %r.text, "the directory refused a user's bind");
                return Err(LdapFailure::Refused);
            }
            Err(e) => return Err(unavailable("the user's bind failed", &e)),
        }
        let user = self.read_groups(&mut ldap, &dn, username).await;
        let _ = ldap.unbind().await;
        user
    }

    /// Search-then-bind: the DN of the one entry `user_filter` finds, searched as the service
    /// account.
    async fn find_user(&self, ldap: &mut ldap3::Ldap, username: &str) -> Result<String, LdapFailure> {
        let (Some(bind_dn), Some(base)) = (&self.bind_dn, &self.user_base) else {
            return Err(LdapFailure::Unavailable(
                "set ldap_user_dn, or ldap_bind_dn and ldap_user_base to search for users".into(),
            ));
        };
        let service = ldap
            .with_timeout(self.timeout)
            .simple_bind(bind_dn, self.bind_password.as_deref().unwrap_or(""))
            .await
            .map_err(|e| unavailable("the service account's bind failed", &e))?;
        if service.rc != 0 {
            return Err(LdapFailure::Unavailable(format!(
                "the directory refused the service account ({}): check ldap_bind_dn and ldap_bind_password",
                service.rc
            )));
        }
        let filter = self.user_filter.replace("{username}", &ldap_escape(username));
        let entries = self.search(ldap, base, &filter, &["1.1"]).await?;
        match entries.as_slice() {
            [one] => Ok(one.dn.clone()),
            // No such user, or a name that is not unique: no login either way.
            _ => Err(LdapFailure::Refused),
        }
    }

    /// The user's groups: the entry's `group_attribute`, and the groups `group_filter` finds.
    async fn read_groups(
        &self,
        ldap: &mut ldap3::Ldap,
        dn: &str,
        username: &str,
    ) -> Result<DirectoryUser, LdapFailure> {
        let mut groups = Vec::new();
        let attribute = self.group_attribute.as_str();
        // The entry itself: by its DN, or (a direct bind with a name that is no DN, as AD's
        // `user@domain`) by the user filter under the user base.
        let own = match (&self.user_dn, &self.user_base) {
            (Some(_), Some(base)) => {
                let filter = self.user_filter.replace("{username}", &ldap_escape(username));
                self.search(ldap, base, &filter, &[attribute]).await?
            }
            _ => self.search_base(ldap, dn, &[attribute]).await?,
        };
        let dn = own.first().map(|e| e.dn.clone()).unwrap_or_else(|| dn.to_owned());
        for entry in &own {
            for (name, values) in &entry.attrs {
                if name.eq_ignore_ascii_case(attribute) {
                    groups.extend(values.iter().cloned());
                }
            }
        }
        if let Some(base) = &self.group_base {
            let filter = self
                .group_filter
                .replace("{dn}", &ldap_escape(dn.as_str()))
                .replace("{username}", &ldap_escape(username));
            groups.extend(
                self.search(ldap, base, &filter, &["1.1"])
                    .await?
                    .into_iter()
                    .map(|e| e.dn),
            );
        }
        groups.sort();
        groups.dedup();
        Ok(DirectoryUser { dn, groups })
    }

    async fn search(
        &self,
        ldap: &mut ldap3::Ldap,
        base: &str,
        filter: &str,
        attrs: &[&str],
    ) -> Result<Vec<SearchEntry>, LdapFailure> {
        self.search_in(ldap, base, Scope::Subtree, filter, attrs).await
    }

    async fn search_base(
        &self,
        ldap: &mut ldap3::Ldap,
        dn: &str,
        attrs: &[&str],
    ) -> Result<Vec<SearchEntry>, LdapFailure> {
        self.search_in(ldap, dn, Scope::Base, "(objectClass=*)", attrs).await
    }

    async fn search_in(
        &self,
        ldap: &mut ldap3::Ldap,
        base: &str,
        scope: Scope,
        filter: &str,
        attrs: &[&str],
    ) -> Result<Vec<SearchEntry>, LdapFailure> {
        let found = ldap
            .with_timeout(self.timeout)
            .search(base, scope, filter, attrs.to_vec())
            .await
            .map_err(|e| unavailable("a search failed", &e))?;
        // 32 (no such object): nothing there, which is an answer, not a failure.
        if found.1.rc != 0 && found.1.rc != 32 {
            return Err(LdapFailure::Unavailable(format!(
                "a search under {base} failed ({}): {}",
                found.1.rc, found.1.text
            )));
        }
        // `construct` panics on an entry it cannot parse: a broken answer is a failed search.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            found.0.into_iter().map(SearchEntry::construct).collect()
        }))
        .map_err(|_| LdapFailure::Unavailable(format!("the directory's answer under {base} could not be read")))
    }
}

fn unavailable(what: &str, e: &LdapError) -> LdapFailure {
    LdapFailure::Unavailable(format!("{what}: {e}"))
}
