//! API keys on the wire: a key as the API shows it ([`ApiKey`], never with its token), the
//! answer to creating one ([`NewApiKey`], the only time the token is shown), and the body that
//! creates one ([`ApiKeySpec`]).
//!
//! Checking a body ([`ApiKeySpec::validate`]) gives the [`KeyDraft`] the store writes: a name,
//! a role, the groups of a key below admin, an expiry. Whether the caller may give those rights
//! (a key never has more than its maker) is the caller's check ([`crate::center::Admin`]).

use super::{is_plain_name, GroupRole, Invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest name, in characters: the audit log names a key's requests `key:<name>` in a column
/// of 64.
pub const KEY_NAME_CHARS: usize = 60;
/// Most groups one key may be limited to.
const MAX_KEY_GROUPS: usize = 1_000;
/// Longest life of a key: a year, leap years included. A key that never expires is a secret
/// nobody remembers to rotate.
pub const MAX_KEY_LIFE_MS: i64 = 366 * 24 * 3600 * 1000;
/// Life of a key created without `expires_at`: 90 days.
pub const DEFAULT_KEY_LIFE_MS: i64 = 90 * 24 * 3600 * 1000;
/// What every key's token starts with, so a bearer token is known for a key (not the admin's
/// API token) before any lookup, and a leaked one is easy to find in a scan.
pub const TOKEN_PREFIX: &str = "chk_";

/// What a key may do, within its groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyRole {
    /// Read the jobs, runs, logs and executors of its groups.
    Viewer,
    /// Also run them: trigger, kill, start and stop the jobs of its groups.
    Operator,
    /// Also change them: create, edit and delete jobs of its groups.
    Editor,
    /// Everything an administrator may do, in every group (no groups are given).
    Admin,
}

impl KeyRole {
    /// Its wire name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyRole::Viewer => "viewer",
            KeyRole::Operator => "operator",
            KeyRole::Editor => "editor",
            KeyRole::Admin => "admin",
        }
    }

    /// The role named `name` (as stored).
    pub fn parse(name: &str) -> Option<KeyRole> {
        [KeyRole::Viewer, KeyRole::Operator, KeyRole::Editor, KeyRole::Admin]
            .into_iter()
            .find(|r| r.as_str() == name)
    }

    /// The role it holds in each of its groups; `None` for an admin key (every group).
    pub fn in_group(self) -> Option<GroupRole> {
        match self {
            KeyRole::Viewer => Some(GroupRole::Viewer),
            KeyRole::Operator => Some(GroupRole::Operator),
            KeyRole::Editor => Some(GroupRole::Editor),
            KeyRole::Admin => None,
        }
    }
}

/// Whether a key can be used now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyState {
    /// It authenticates requests.
    Active,
    /// Its expiry has passed.
    Expired,
    /// It was revoked.
    Revoked,
}

/// An API key as the API shows it: everything but its token, which is shown once, when it is
/// created, and kept only as a hash.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct ApiKey {
    /// Key id.
    pub id: i64,
    /// Its name, unique among all keys; its requests are audited as `key:<name>`.
    pub name: String,
    /// The first characters of its token, to recognise it.
    pub prefix: String,
    /// What it may do.
    pub role: KeyRole,
    /// The groups it is limited to (empty for an admin key).
    pub group_ids: Vec<i64>,
    /// The user who made it and whose current rights also bound it; `null` when it was made
    /// with the bootstrap API token.
    pub owner_id: Option<i64>,
    /// Who made it.
    pub created_by: String,
    /// Creation time, epoch ms.
    pub created_at: i64,
    /// When it stops working, epoch ms.
    pub expires_at: i64,
    /// When it was revoked, epoch ms; `null` while it is not.
    pub revoked_at: Option<i64>,
    /// When it was last used, epoch ms, to the minute; `null` before its first use.
    pub last_used_at: Option<i64>,
    /// Whether it can be used now.
    pub state: KeyState,
}

/// The answer to creating a key: the key, and its token, shown this once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct NewApiKey {
    /// The token to send as `Authorization: Bearer <token>`. It is not stored and cannot be
    /// shown again.
    pub token: String,
    /// The key.
    pub key: ApiKey,
}

/// Input to create a key.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeySpec {
    /// 1–60 letters, digits, `.`, `_` or `-`, unique among all keys.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,60}$"))]
    pub name: String,
    /// What it may do; at most what its maker may do.
    pub role: KeyRole,
    /// The groups it is limited to: one or more for a viewer, operator or editor key, each one
    /// where its maker holds that role or more; none for an admin key.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub group_ids: Vec<i64>,
    /// When it stops working, epoch ms: in the future and at most 366 days ahead (default:
    /// 90 days from now).
    #[serde(default)]
    pub expires_at: Option<i64>,
}

/// A checked [`ApiKeySpec`], as the store writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyDraft {
    /// Its name.
    pub name: String,
    /// Its role.
    pub role: KeyRole,
    /// Its groups, sorted, each once (empty for an admin key).
    pub group_ids: Vec<i64>,
    /// Its expiry, epoch ms.
    pub expires_at: i64,
}

impl ApiKeySpec {
    /// Checks the body at `now` (epoch ms): the name's form, the groups against the role, the
    /// expiry's range.
    pub fn validate(&self, now: i64) -> Result<KeyDraft, Invalid> {
        let name = self.name.trim();
        if !is_plain_name(name, KEY_NAME_CHARS) {
            return Err(Invalid::new(
                "name",
                format!("1 to {KEY_NAME_CHARS} letters, digits, '.', '_' or '-'"),
            ));
        }
        if self.group_ids.len() > MAX_KEY_GROUPS {
            return Err(Invalid::new("group_ids", format!("at most {MAX_KEY_GROUPS} groups")));
        }
        if let Some(bad) = self.group_ids.iter().find(|id| **id < 1) {
            return Err(Invalid::new("group_ids", format!("{bad} is not a group id")));
        }
        let mut group_ids = self.group_ids.clone();
        group_ids.sort_unstable();
        group_ids.dedup();
        match (self.role, group_ids.is_empty()) {
            (KeyRole::Admin, false) => {
                return Err(Invalid::new(
                    "group_ids",
                    "an admin key reaches every group: give no groups, or choose the role viewer, operator or editor",
                ))
            }
            (KeyRole::Viewer | KeyRole::Operator | KeyRole::Editor, true) => {
                return Err(Invalid::new(
                    "group_ids",
                    "a viewer, operator or editor key needs the groups it may reach",
                ))
            }
            _ => {}
        }
        let expires_at = self.expires_at.unwrap_or(now + DEFAULT_KEY_LIFE_MS);
        if expires_at <= now {
            return Err(Invalid::new("expires_at", "must be in the future (epoch ms)"));
        }
        if expires_at > now + MAX_KEY_LIFE_MS {
            return Err(Invalid::new(
                "expires_at",
                "at most 366 days ahead: rotate keys rather than keep one for ever",
            ));
        }
        Ok(KeyDraft {
            name: name.to_owned(),
            role: self.role,
            group_ids,
            expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(role: KeyRole, groups: &[i64]) -> ApiKeySpec {
        ApiKeySpec {
            name: "deploy-bot".into(),
            role,
            group_ids: groups.to_vec(),
            expires_at: None,
        }
    }

    #[test]
    fn a_key_below_admin_names_its_groups_and_an_admin_key_none() {
        let now = 1_000_000;
        let d = spec(KeyRole::Editor, &[3, 1, 3]).validate(now).unwrap();
        assert_eq!(d.group_ids, vec![1, 3]);
        assert_eq!(d.expires_at, now + DEFAULT_KEY_LIFE_MS);
        assert_eq!(spec(KeyRole::Viewer, &[]).validate(now).unwrap_err().field, "group_ids");
        assert_eq!(spec(KeyRole::Admin, &[1]).validate(now).unwrap_err().field, "group_ids");
        assert!(spec(KeyRole::Admin, &[]).validate(now).is_ok());
        assert_eq!(
            spec(KeyRole::Editor, &[0]).validate(now).unwrap_err().field,
            "group_ids"
        );
    }

    #[test]
    fn names_and_expiries_are_bounded() {
        let now = 1_000_000;
        for bad in ["", "a b", "é", &"x".repeat(KEY_NAME_CHARS + 1)] {
            let s = ApiKeySpec {
                name: bad.to_owned(),
                ..spec(KeyRole::Admin, &[])
            };
            assert_eq!(s.validate(now).unwrap_err().field, "name", "{bad:?}");
        }
        for (at, ok) in [
            (now, false),
            (now + 1, true),
            (now + MAX_KEY_LIFE_MS, true),
            (now + MAX_KEY_LIFE_MS + 1, false),
        ] {
            let s = ApiKeySpec {
                expires_at: Some(at),
                ..spec(KeyRole::Admin, &[])
            };
            assert_eq!(s.validate(now).is_ok(), ok, "{at}");
        }
    }

    #[test]
    fn roles_are_named_as_stored() {
        for r in [KeyRole::Viewer, KeyRole::Operator, KeyRole::Editor, KeyRole::Admin] {
            assert_eq!(KeyRole::parse(r.as_str()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        assert_eq!(KeyRole::parse("root"), None);
    }
}
