//! Admin presence: each admin renews a row in `admin_node` with its partition leases, so the
//! admins that share the partitions know of each other — including one that just started and
//! holds no lease yet.

use super::bulk::Arg;
use super::rows;
use super::{Store, StoreResult};

/// An admin alive in `admin_node`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveAdmin {
    /// Its `--node-id`.
    pub node_id: String,
    /// Its base URL (`--advertise-url`); empty if it did not say.
    pub url: String,
}

impl Store {
    /// Announces `node`, reachable at `url`, as alive until `expires_at` and returns every
    /// admin alive at `now` (including `node`) with its URL.
    pub async fn announce_admin(
        &self,
        node: &str,
        url: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<Vec<LiveAdmin>> {
        self.update_or_insert(
            "UPDATE admin_node SET expires_at = ?, url = ? WHERE node_id = ?",
            &[Arg::Int(expires_at), Arg::Text(url), Arg::Text(node)],
            "admin_node (node_id, expires_at, url)",
            &[Arg::Text(node), Arg::Int(expires_at), Arg::Text(url)],
        )
        .await?;
        // Rows of admins gone for a while are removed, so the table stays small.
        let purge = self.sql("DELETE FROM admin_node WHERE expires_at < ?");
        sqlx::query(&purge).bind(now - 3_600_000).execute(&self.write).await?;
        let live = self.sql("SELECT node_id, url FROM admin_node WHERE expires_at > ?");
        let all = sqlx::query(&live).bind(now).fetch_all(&self.read).await?;
        all.iter()
            .map(|r| {
                Ok(LiveAdmin {
                    node_id: rows::text(r, "node_id")?,
                    url: rows::text(r, "url")?,
                })
            })
            .collect()
    }

    /// Withdraws `node` (graceful stop), so the others take its share at once.
    pub async fn withdraw_admin(&self, node: &str) -> StoreResult<()> {
        let q = self.sql("DELETE FROM admin_node WHERE node_id = ?");
        sqlx::query(&q).bind(node).execute(&self.write).await?;
        Ok(())
    }
}
