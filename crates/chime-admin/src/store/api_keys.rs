//! API keys (`api_key`). The table holds a SHA-256 of each token, never the token, so reading
//! the database (a backup, a dump) does not let anyone call the API. A key is found by that
//! hash, with its owner's current rights in the same query.

use super::users::{user_of_columns, User};
use super::{rows, Store, StoreError, StoreResult};
use crate::api::{ApiKey, KeyDraft, KeyRole, KeyState};
use sqlx::any::AnyRow;

/// A stored key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// Key id.
    pub id: i64,
    /// Its name, role, groups and expiry.
    pub draft: KeyDraft,
    /// The first characters of its token.
    pub prefix: String,
    /// The user who made it; 0 when the bootstrap API token did.
    pub owner_id: i64,
    /// Who made it (user name, or `api-token`).
    pub created_by: String,
    /// Creation time, epoch ms.
    pub created_at: i64,
    /// When it was revoked, epoch ms; 0 while it is not.
    pub revoked_at: i64,
    /// When it was last used, epoch ms; 0 before its first use.
    pub last_used_at: i64,
}

impl StoredKey {
    /// Whether it can be used at `now` (epoch ms).
    pub fn state(&self, now: i64) -> KeyState {
        if self.revoked_at > 0 {
            KeyState::Revoked
        } else if self.draft.expires_at <= now {
            KeyState::Expired
        } else {
            KeyState::Active
        }
    }

    /// The key as the API shows it at `now`.
    pub fn shown(&self, now: i64) -> ApiKey {
        let set = |ms: i64| (ms > 0).then_some(ms);
        ApiKey {
            id: self.id,
            name: self.draft.name.clone(),
            prefix: self.prefix.clone(),
            role: self.draft.role,
            group_ids: self.draft.group_ids.clone(),
            owner_id: set(self.owner_id),
            created_by: self.created_by.clone(),
            created_at: self.created_at,
            expires_at: self.draft.expires_at,
            revoked_at: set(self.revoked_at),
            last_used_at: set(self.last_used_at),
            state: self.state(now),
        }
    }
}

/// A key found by its token, with its owner as stored now (`None` when the bootstrap API token
/// made it, or when its owner was deleted: see [`KeyUse::owner_gone`]).
#[derive(Debug, Clone)]
pub struct KeyUse {
    /// The key.
    pub key: StoredKey,
    /// Its owner.
    pub owner: Option<User>,
}

impl KeyUse {
    /// True when a user made the key and no longer exists: the key is dead with them.
    pub fn owner_gone(&self) -> bool {
        self.key.owner_id > 0 && self.owner.is_none()
    }
}

const KEY_COLUMNS: &str =
    "id, name, prefix, owner_id, role, group_ids, created_by, created_at, expires_at, revoked_at, last_used_at";

fn key_row(row: &AnyRow) -> Result<StoredKey, sqlx::Error> {
    let role = rows::text(row, "role")?;
    Ok(StoredKey {
        id: rows::int(row, "id")?,
        draft: KeyDraft {
            name: rows::text(row, "name")?,
            // An unknown role (a row written by a newer version) reads as the least one.
            role: KeyRole::parse(&role).unwrap_or(KeyRole::Viewer),
            group_ids: rows::id_list(&rows::text(row, "group_ids")?),
            expires_at: rows::int(row, "expires_at")?,
        },
        prefix: rows::text(row, "prefix")?,
        owner_id: rows::int(row, "owner_id")?,
        created_by: rows::text(row, "created_by")?,
        created_at: rows::int(row, "created_at")?,
        revoked_at: rows::int(row, "revoked_at")?,
        last_used_at: rows::int(row, "last_used_at")?,
    })
}

/// A failed insert of `draft`: 409 when another key has its name.
fn name_taken(e: sqlx::Error, draft: &KeyDraft) -> StoreError {
    StoreError::unique_violation_as(e, || {
        StoreError::Conflict(format!("an API key named '{}' already exists", draft.name))
    })
}

/// A new key's row: who made it and the token's hash and prefix.
#[derive(Debug, Clone, Copy)]
pub struct KeyMaker<'a> {
    /// The user making it; 0 for the bootstrap API token.
    pub owner_id: i64,
    /// Their name.
    pub created_by: &'a str,
    /// SHA-256 of the token, lower-case hex.
    pub token_hash: &'a str,
    /// The token's first characters.
    pub prefix: &'a str,
}

impl Store {
    /// Creates a key at `now`; answers it as stored.
    pub async fn insert_api_key(&self, draft: &KeyDraft, maker: KeyMaker<'_>, now: i64) -> StoreResult<StoredKey> {
        let q = self.sql(
            "INSERT INTO api_key (name, prefix, token_hash, owner_id, role, group_ids, created_by, created_at, \
             expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        );
        let mut conn = self.write.acquire().await?;
        let row = sqlx::query(&q)
            .bind(&draft.name)
            .bind(maker.prefix)
            .bind(maker.token_hash)
            .bind(maker.owner_id)
            .bind(draft.role.as_str())
            .bind(rows::join_ids(&draft.group_ids))
            .bind(crate::model::cut_chars(maker.created_by, 64))
            .bind(now)
            .bind(draft.expires_at)
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| name_taken(e, draft))?;
        let id = rows::int(&row, 0)?;
        let select = format!("SELECT {KEY_COLUMNS} FROM api_key WHERE id = ?");
        self.row_by_id(&mut conn, &select, id, "API key", key_row).await
    }

    /// Every key, or with `owner_id` those its user made, by id.
    pub async fn api_keys(&self, owner_id: Option<i64>) -> StoreResult<Vec<StoredKey>> {
        let Some(owner) = owner_id else {
            return self
                .read_all(&format!("SELECT {KEY_COLUMNS} FROM api_key ORDER BY id"), key_row)
                .await;
        };
        let q = self.sql_text(format!(
            "SELECT {KEY_COLUMNS} FROM api_key WHERE owner_id = ? ORDER BY id"
        ));
        let found = sqlx::query(&q).bind(owner).fetch_all(&self.read).await?;
        Ok(found.iter().map(key_row).collect::<Result<_, _>>()?)
    }

    /// The key `id`.
    pub async fn api_key(&self, id: i64) -> StoreResult<StoredKey> {
        let select = format!("SELECT {KEY_COLUMNS} FROM api_key WHERE id = ?");
        self.read_by_id(&select, id, "API key", key_row).await
    }

    /// The key whose token hashes to `token_hash`, with its owner as stored now. Revoked and
    /// expired keys are found too: the caller says which it was.
    pub async fn api_key_by_token(&self, token_hash: &str) -> StoreResult<Option<KeyUse>> {
        let key_cols: Vec<String> = KEY_COLUMNS.split(", ").map(|c| format!("k.{c}")).collect();
        // The owner's columns under other names (both tables have an `id`); not the password.
        let user_cols: Vec<String> = OWNER_COLUMNS.iter().map(|c| format!("u.{c} AS u_{c}")).collect();
        let q = self.sql_text(format!(
            "SELECT {}, {} FROM api_key k LEFT JOIN app_user u ON u.id = k.owner_id WHERE k.token_hash = ?",
            key_cols.join(", "),
            user_cols.join(", ")
        ));
        let Some(row) = sqlx::query(&q).bind(token_hash).fetch_optional(&self.read).await? else {
            return Ok(None);
        };
        let key = key_row(&row)?;
        // No owner row: the left join gives NULLs, read as 0.
        let owner = if rows::int(&row, "u_id")? > 0 {
            Some(user_of_columns(&row, "u_")?)
        } else {
            None
        };
        Ok(Some(KeyUse { key, owner }))
    }

    /// Records that key `id` was used at `now`, unless a use was recorded within the last
    /// `resolution_ms`: a key polled every second writes once a minute, not every time.
    pub async fn touch_api_key(&self, id: i64, now: i64, resolution_ms: i64) -> StoreResult<()> {
        let q = self.sql("UPDATE api_key SET last_used_at = ? WHERE id = ? AND last_used_at < ?");
        sqlx::query(&q)
            .bind(now)
            .bind(id)
            .bind(now - resolution_ms)
            .execute(&self.write)
            .await?;
        Ok(())
    }

    /// Revokes key `id` at `now`: it stops working at once and stays listed. 404 when there is
    /// no such key; revoking a revoked key changes nothing.
    pub async fn revoke_api_key(&self, id: i64, now: i64) -> StoreResult<StoredKey> {
        let q = self.sql("UPDATE api_key SET revoked_at = ? WHERE id = ? AND revoked_at = 0");
        let mut conn = self.write.acquire().await?;
        sqlx::query(&q).bind(now).bind(id).execute(&mut *conn).await?;
        let select = format!("SELECT {KEY_COLUMNS} FROM api_key WHERE id = ?");
        self.row_by_id(&mut conn, &select, id, "API key", key_row).await
    }
}

/// The owner's columns [`Store::api_key_by_token`] reads (not the password).
const OWNER_COLUMNS: [&str; 7] = [
    "id",
    "username",
    "role",
    "can_write",
    "group_ids",
    "group_roles",
    "source",
];
