//! Partition leases: which admin schedules which partition of the jobs.

use super::bulk::Arg;
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

/// Every lease, with the database's clock when they were read.
#[derive(Debug, Clone)]
pub struct LeaseTable {
    /// The leases, by partition.
    pub leases: Vec<Lease>,
    /// The database server's time at the read, epoch ms (SQLite: this process's).
    pub now: i64,
}

impl Store {
    /// Every lease, and the database's clock. Leases are stamped and judged by the database's
    /// clock only, so admins whose own clocks disagree still agree on when a lease has lapsed
    /// (`docs/admin.md`, "Several admins").
    pub async fn lease_table(&self) -> StoreResult<LeaseTable> {
        let q = format!(
            "SELECT partition_no, owner, expires_at, {} AS db_now FROM partition_lease ORDER BY partition_no",
            self.backend.now_ms_sql()
        );
        let all = sqlx::query(&q).fetch_all(&self.read).await?;
        let now = match all.first() {
            Some(r) => rows::int(r, "db_now")?,
            None => {
                let q = format!("SELECT {} AS db_now", self.backend.now_ms_sql());
                rows::int(&sqlx::query(&q).fetch_one(&self.read).await?, "db_now")?
            }
        };
        let leases = all
            .iter()
            .map(|r| {
                Ok(Lease {
                    partition: rows::int(r, "partition_no")?,
                    owner: rows::text(r, "owner")?,
                    expires_at: rows::int(r, "expires_at")?,
                })
            })
            .collect::<StoreResult<Vec<Lease>>>()?;
        Ok(LeaseTable { leases, now })
    }

    /// Renews the leases `owner` holds among `partitions` until `expires_at`, in one statement.
    /// Returns how many were renewed: fewer than asked when one was taken over meanwhile.
    pub async fn renew_leases(&self, partitions: &[i64], owner: &str, expires_at: i64) -> StoreResult<u64> {
        self.write_in(
            "UPDATE partition_lease SET expires_at = ? WHERE owner = ? AND partition_no IN ({in})",
            partitions,
            &[Arg::Int(expires_at), Arg::Text(owner)],
        )
        .await
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
