//! Secrets the admins of one database share (`admin_secret`): made by whichever admin starts
//! first, then read by every admin, so a cluster agrees on them without anyone typing them in.

use super::bulk::Arg;
use super::rows;
use super::{Store, StoreResult};

/// Name of the executor access token kept when none is configured.
pub const EXECUTOR_ACCESS_TOKEN: &str = "executor_access_token";

/// Name of the secret that proves a relayed call comes from another admin of this database.
pub const CLUSTER_SECRET: &str = "cluster_secret";

/// A secret as this admin found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptSecret {
    /// Its value.
    pub value: String,
    /// True when this call made it (the first start): the one time it may be shown unasked.
    pub created: bool,
}

impl Store {
    /// The secret `name`, read from the database or, on the first call ever, made by `make`
    /// and kept. Admins starting at the same moment agree: each inserts only if no row is there
    /// and then reads the row that won.
    pub async fn kept_secret(&self, name: &str, make: impl FnOnce() -> String) -> StoreResult<KeptSecret> {
        if let Some(value) = self.secret(name).await? {
            return Ok(KeptSecret { value, created: false });
        }
        let candidate = make();
        self.insert_unless_present(
            "admin_secret (name, value, created_at)",
            &[Arg::Text(name), Arg::Text(&candidate), Arg::Int(crate::model::now_ms())],
        )
        .await?;
        // Read from the writing pool: on SQLite a reader might not see the commit yet.
        let q = self.sql("SELECT value FROM admin_secret WHERE name = ?");
        let row = sqlx::query(&q).bind(name).fetch_one(&self.write).await?;
        let value = rows::text(&row, "value")?;
        let created = value == candidate;
        Ok(KeptSecret { value, created })
    }

    /// The secret `name`, if one was made.
    pub async fn secret(&self, name: &str) -> StoreResult<Option<String>> {
        let q = self.sql("SELECT value FROM admin_secret WHERE name = ?");
        let row = sqlx::query(&q).bind(name).fetch_optional(&self.write).await?;
        Ok(row.map(|r| rows::text(&r, "value")).transpose()?)
    }
}
