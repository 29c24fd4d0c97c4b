//! The ids SQLite gives the rows of a multi-row insert, known without reading the rows back.
//!
//! An `AUTOINCREMENT` table gives a new row one more than the largest id it ever had (kept in
//! `sqlite_sequence`) or than the largest id it has now, whichever is larger. The counter can
//! be ahead of every row: an import raises it past the ids it brought, and deleting the newest
//! rows leaves it where it was. Inside a write transaction the connection is SQLite's only
//! writer, so a multi-row insert's rows take consecutive ids in `VALUES` order after
//! [`Store::ids_before`]; [`Store::ids_taken`] checks that against the counter after the insert
//! rather than trusting it, and says when the rows must be read back instead.
//!
//! The driver hands each result row from its worker thread to the async side on its own:
//! `RETURNING` on a busy insert cost more than the insert itself.

use super::rows;
use super::{Store, StoreResult};
use sqlx::any::Any;
use sqlx::Transaction;
use std::ops::RangeInclusive;

impl Store {
    /// The id after which `table`'s next rows are numbered (0 for a table never written).
    /// `table` is one of the store's own `AUTOINCREMENT` tables, never input.
    pub(super) async fn ids_before(&self, tx: &mut Transaction<'static, Any>, table: &'static str) -> StoreResult<i64> {
        let q = format!(
            "SELECT MAX(IFNULL((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), \
             IFNULL((SELECT MAX(id) FROM {table}), 0))"
        );
        Ok(rows::int(&sqlx::query(&q).bind(table).fetch_one(&mut **tx).await?, 0)?)
    }

    /// The ids the `inserted` rows just written to `table` took, in order, when they are
    /// `before + 1 ..= before + inserted` (`before` from [`Store::ids_before`]); `None` when
    /// the table's counter says otherwise: the rows with ids above `before` are the new ones,
    /// to be read back.
    pub(super) async fn ids_taken(
        &self,
        tx: &mut Transaction<'static, Any>,
        table: &'static str,
        before: i64,
        inserted: usize,
    ) -> StoreResult<Option<RangeInclusive<i64>>> {
        let q = "SELECT IFNULL((SELECT seq FROM sqlite_sequence WHERE name = ?), 0)";
        let last = rows::int(&sqlx::query(q).bind(table).fetch_one(&mut **tx).await?, 0)?;
        Ok((last == before + inserted as i64).then_some(before + 1..=last))
    }
}
