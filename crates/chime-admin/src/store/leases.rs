//! Partition leases: which admin schedules which partition of the jobs.

use super::rows;
use super::{Store, StoreResult};

/// A lease row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Partition number.
    pub partition: i64,
    /// Holder (admin node id), empty when free.
    pub owner: String,
    /// Expiry, epoch ms.
    pub expires_at: i64,
}

impl Store {
    /// Every lease.
    pub async fn leases(&self) -> StoreResult<Vec<Lease>> {
        let all = sqlx::query("SELECT partition_no, owner, expires_at FROM partition_lease ORDER BY partition_no")
            .fetch_all(&self.read)
            .await?;
        all.iter()
            .map(|r| {
                Ok(Lease {
                    partition: rows::int(r, "partition_no")?,
                    owner: rows::text(r, "owner")?,
                    expires_at: rows::int(r, "expires_at")?,
                })
            })
            .collect()
    }

    /// Takes or renews `partition` for `owner` until `expires_at`, if it is free, expired or
    /// already `owner`'s (compare-and-set). `force` takes it whatever its state (single-admin
    /// SQLite start-up). True when `owner` holds it afterwards.
    pub async fn acquire_lease(
        &self,
        partition: i64,
        owner: &str,
        now: i64,
        expires_at: i64,
        force: bool,
    ) -> StoreResult<bool> {
        let q = if force {
            self.sql("UPDATE partition_lease SET owner = ?, expires_at = ? WHERE partition_no = ? AND (1 = 1 OR owner = ? OR expires_at < ?)")
        } else {
            self.sql("UPDATE partition_lease SET owner = ?, expires_at = ? WHERE partition_no = ? AND (owner = ? OR expires_at < ?)")
        };
        let done = sqlx::query(&q)
            .bind(owner)
            .bind(expires_at)
            .bind(partition)
            .bind(owner)
            .bind(now)
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Gives a partition back (shutdown, or rebalancing to another admin).
    pub async fn release_lease(&self, partition: i64, owner: &str) -> StoreResult<()> {
        let q = self.sql("UPDATE partition_lease SET owner = '', expires_at = 0 WHERE partition_no = ? AND owner = ?");
        sqlx::query(&q).bind(partition).bind(owner).execute(&self.write).await?;
        Ok(())
    }
}
