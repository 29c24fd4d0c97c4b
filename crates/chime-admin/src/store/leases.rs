//! Partition leases: which admin schedules which partition of the jobs.

use super::bulk::Arg;
use super::rows::{self, from_row};
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
    /// The fencing token: raised whenever the lease changes holder or is taken after it
    /// lapsed, kept while one holder renews it. A run sent under the lease is marked with it
    /// (`Store::mark_sending`), which the database allows only while the lease holds.
    pub epoch: i64,
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
            "SELECT partition_no, owner, expires_at, epoch, {} AS db_now FROM partition_lease ORDER BY partition_no",
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
            .map(|r| Ok(from_row!(r => Lease { partition: rows::int(r, "partition_no")?, owner, expires_at, epoch })))
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

    /// Takes or renews `lease` (as read at `now`, the database's clock) for `owner` until
    /// `expires_at`, if it is free, expired or already `owner`'s, and nobody changed it since it
    /// was read (compare-and-set on its epoch). `force` takes it whatever its state
    /// (single-admin SQLite start-up). Returns the lease's epoch when `owner` holds it
    /// afterwards: the same when `owner` renewed a lease that had not lapsed, one more
    /// otherwise.
    pub async fn acquire_lease(
        &self,
        lease: &Lease,
        owner: &str,
        now: i64,
        expires_at: i64,
        force: bool,
    ) -> StoreResult<Option<i64>> {
        let kept = lease.owner == owner && lease.expires_at > now;
        let epoch = if kept { lease.epoch } else { lease.epoch + 1 };
        // The epoch is compared with the one read, so the new one is known without reading
        // again: whoever changed the row in between made this update match nothing.
        let q = if force {
            self.sql(
                "UPDATE partition_lease SET epoch = ?, owner = ?, expires_at = ? \
                 WHERE partition_no = ? AND epoch = ? AND (1 = 1 OR owner = ? OR expires_at <= ?)",
            )
        } else {
            self.sql(
                "UPDATE partition_lease SET epoch = ?, owner = ?, expires_at = ? \
                 WHERE partition_no = ? AND epoch = ? AND (owner = ? OR owner = '' OR expires_at <= ?)",
            )
        };
        let done = sqlx::query(&q)
            .bind(epoch)
            .bind(owner)
            .bind(expires_at)
            .bind(lease.partition)
            .bind(lease.epoch)
            .bind(owner)
            .bind(now)
            .execute(&self.write)
            .await?;
        Ok((done.rows_affected() == 1).then_some(epoch))
    }

    /// Gives a partition back (shutdown, or rebalancing to another admin).
    pub async fn release_lease(&self, partition: i64, owner: &str) -> StoreResult<()> {
        let q = self.sql("UPDATE partition_lease SET owner = '', expires_at = 0 WHERE partition_no = ? AND owner = ?");
        sqlx::query(&q).bind(partition).bind(owner).execute(&self.write).await?;
        Ok(())
    }
}
