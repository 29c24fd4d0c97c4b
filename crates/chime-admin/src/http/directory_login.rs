//! A console login checked by the directory (LDAP): the password is the directory's, the roles
//! come from the user's groups through `sso_roles`, and the user is kept (created at the first
//! login, their roles set again at each one) so sessions, keys and the audit log name them.

use super::access::{audit_login, forbidden};
use super::error::ApiError;
use crate::center::{Admin, OpError};
use crate::sso::{LdapFailure, LdapSettings};
use crate::store::User;
use axum::http::StatusCode;
use std::net::IpAddr;
use std::sync::Arc;

/// What a directory user is stored as (`app_user.source`).
pub const LDAP_SOURCE: &str = "ldap";

/// Logs `username` in through the directory: 401 for a wrong name or password (or an account
/// the directory refuses), 503 when the directory cannot be asked (local administrators can
/// still log in), 403 when the user's groups give no access. Every outcome is audited.
pub(super) async fn directory_login(
    admin: &Admin,
    ldap: &LdapSettings,
    tls: Option<Arc<rustls::ClientConfig>>,
    username: &str,
    password: &str,
    ip: IpAddr,
) -> Result<User, ApiError> {
    // None: the TLS set-up failed at start (said in the log then).
    let Some(tls) = tls else {
        return Err(unavailable(admin, username, ip, "TLS set-up failed at start").await);
    };
    let found = match ldap.authenticate(tls, username, password).await {
        Ok(found) => found,
        Err(LdapFailure::Refused) => {
            audit_login(admin, username, "login failed", StatusCode::UNAUTHORIZED, ip).await;
            return Err(ApiError::unauthorized("wrong user name or password"));
        }
        Err(LdapFailure::Unavailable(why)) => return Err(unavailable(admin, username, ip, &why).await),
    };
    let mapped = admin.config.sso_roles.apply(&found.groups);
    match admin.sync_directory_user(LDAP_SOURCE, username, &mapped).await {
        Ok(user) => Ok(user),
        Err(OpError::Forbidden(why)) => {
            tracing::info!(user = %username, groups = ?found.groups, "a directory user's groups give no access");
            audit_login(admin, username, "login refused", StatusCode::FORBIDDEN, ip).await;
            Err(forbidden(&why))
        }
        Err(e) => Err(e.into()),
    }
}

/// 503: the directory could not be asked. The reason goes to the log, not to the caller.
async fn unavailable(admin: &Admin, username: &str, ip: IpAddr, why: &str) -> ApiError {
    tracing::warn!(user = %username, reason = %why, "the directory could not check a login");
    audit_login(admin, username, "login failed", StatusCode::SERVICE_UNAVAILABLE, ip).await;
    ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        error: "the directory (LDAP) cannot be reached: try again later; local administrator accounts can still log in"
            .to_owned(),
        field: None,
    }
}
