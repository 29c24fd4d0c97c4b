//! Operations on API keys. A key never has more rights than the one who makes it: its role in
//! each of its groups is at most the maker's there, and when it is used its maker's roles at
//! that moment bound it again (`http::principal`), so a demoted or deleted user's keys lose
//! what the user lost.

use crate::api::{ApiKeySpec, GroupGrant, GroupRole, KeyRole, NewApiKey, TOKEN_PREFIX};
use crate::center::{Admin, OpError};
use crate::model::now_ms;
use crate::store::{KeyMaker, StoredKey};
use crate::token::{random_hex, sha256_hex};

/// How many characters of a token its key shows, to be recognised: the prefix and 8 hex digits
/// (32 of its 256 bits).
const SHOWN_CHARS: usize = TOKEN_PREFIX.len() + 8;

/// Who makes or manages keys: a console user, or the bootstrap API token.
#[derive(Debug, Clone, Copy)]
pub struct KeyManager<'a> {
    /// The user; `None` for the bootstrap API token.
    pub user_id: Option<i64>,
    /// Their name, recorded as the key's maker.
    pub username: &'a str,
    /// An administrator: any role and group, and every key.
    pub admin: bool,
    /// The role of a user below admin in each of their groups.
    pub roles: &'a [GroupGrant],
}

impl KeyManager<'_> {
    /// Whether this manager may see and revoke `key`: an administrator any key, a user their
    /// own, and a group admin the keys limited to groups they administer (every group of the
    /// key: a key reaching into another group is that group's business too).
    fn manages(&self, key: &StoredKey) -> bool {
        let administers = |group: &i64| {
            self.roles
                .iter()
                .any(|g| g.group_id == *group && g.role == GroupRole::GroupAdmin)
        };
        self.admin
            || self.user_id == Some(key.owner_id)
            || (!key.draft.group_ids.is_empty() && key.draft.group_ids.iter().all(administers))
    }

    /// 403 unless `key` is this manager's to see or revoke.
    fn check_manages(&self, key: &StoredKey) -> Result<(), OpError> {
        if self.manages(key) {
            Ok(())
        } else {
            Err(OpError::Forbidden(
                "this API key is neither yours nor limited to groups you administer".into(),
            ))
        }
    }
}

impl Admin {
    /// Makes a key for `maker`: checks the body, that the maker may give its role and groups,
    /// and that the groups exist; answers the key with its token, which is shown this once.
    pub async fn create_api_key(&self, spec: &ApiKeySpec, maker: KeyManager<'_>) -> Result<NewApiKey, OpError> {
        let now = now_ms();
        let draft = spec.validate(now)?;
        if !maker.admin {
            if draft.role == KeyRole::Admin {
                return Err(OpError::Forbidden("only administrators make admin keys".into()));
            }
            let wanted = draft.role.in_group().unwrap_or(GroupRole::GroupAdmin);
            for &group in &draft.group_ids {
                match maker.roles.iter().find(|g| g.group_id == group) {
                    None => {
                        return Err(OpError::Forbidden(format!(
                            "you have no access to executor group {group}, so a key of yours cannot have it"
                        )))
                    }
                    Some(held) if held.role < wanted => {
                        return Err(OpError::Forbidden(format!(
                            "your role in executor group {group} is {}: a key of yours can be at most that",
                            held.role
                        )))
                    }
                    Some(_) => {}
                }
            }
        }
        self.check_groups(&draft.group_ids).await?;
        let token = format!("{TOKEN_PREFIX}{}", random_hex());
        let row = KeyMaker {
            owner_id: maker.user_id.unwrap_or(0),
            created_by: maker.username,
            token_hash: &sha256_hex(&token),
            prefix: &token[..SHOWN_CHARS],
        };
        let key = self.store.insert_api_key(&draft, row, now).await?;
        Ok(NewApiKey {
            token,
            key: key.shown(now),
        })
    }

    /// The keys `manager` may see: every key for an administrator; their own, and for a group
    /// admin those limited to the groups they administer.
    pub async fn api_keys(&self, manager: KeyManager<'_>) -> Result<Vec<StoredKey>, OpError> {
        let group_admin = manager.roles.iter().any(|g| g.role == GroupRole::GroupAdmin);
        if manager.admin || !group_admin {
            let owner = (!manager.admin).then(|| manager.user_id.unwrap_or(0));
            return Ok(self.store.api_keys(owner).await?);
        }
        let mut keys = self.store.api_keys(None).await?;
        keys.retain(|k| manager.manages(k));
        Ok(keys)
    }

    /// Key `id`, when `manager` may see it.
    pub async fn api_key(&self, id: i64, manager: KeyManager<'_>) -> Result<StoredKey, OpError> {
        let key = self.store.api_key(id).await?;
        manager.check_manages(&key)?;
        Ok(key)
    }

    /// Revokes key `id` (one `manager` manages): it stops working at once.
    pub async fn revoke_api_key(&self, id: i64, manager: KeyManager<'_>) -> Result<StoredKey, OpError> {
        manager.check_manages(&self.store.api_key(id).await?)?;
        Ok(self.store.revoke_api_key(id, now_ms()).await?)
    }
}
