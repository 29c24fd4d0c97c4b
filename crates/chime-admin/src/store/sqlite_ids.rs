//! The ids SQLite gives the rows of a multi-row insert, known without reading the rows back.
//!
//! An `AUTOINCREMENT` table gives a new row one more than the largest id it ever had (kept in
//! `sqlite_sequence`) or than the largest id it has now, whichever is larger. The counter can
//! be ahead of every row: an import raises it past the ids it brought, and deleting the newest
//! rows leaves it where it was. Inside a write transaction the connection is SQLite's only
//! writer, so a multi-row insert's rows take consecutive ids in `VALUES` order after that;
//! [`Store::insert_known_ids`] checks them against the counter after the insert rather than
//! trusting it, and says when the rows must be read back instead.
//!
//! The driver hands each result row from its worker thread to the async side on its own:
//! `RETURNING` on a busy insert cost more than the insert itself.
//!
//! Several inserts into one table in one transaction (the chunks of a large insert) carry an
//! [`IdCursor`]: once an insert's ids are confirmed, the counter stands at its last row, so the
//! next insert's rows are numbered from there without reading it again. That is one statement
//! per chunk instead of two; a workflow step writes its runs and node rows in several chunks,
//! each a round trip to the database's thread.

use super::rows;
use super::{Store, StoreResult};
use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::Transaction;
use std::ops::RangeInclusive;

/// What [`Store::insert_known_ids`] did.
pub(super) struct Inserted {
    /// Where the table's ids stood before the insert: the new rows' ids are above it.
    pub(super) before: i64,
    /// How many rows went in.
    pub(super) written: usize,
    /// Their ids, in `VALUES` order, when every row went in and the counter confirms them;
    /// `None`: read the rows with ids above `before`.
    pub(super) ids: Option<RangeInclusive<i64>>,
}

/// Where a table's ids stand between the inserts into it of one write transaction.
///
/// Made for one series of inserts (the chunks of one list of rows) and handed to each; nothing
/// else may insert into the table between them. After an insert whose ids were confirmed, the
/// next one's rows follow them. After any other, the next insert reads the counter again.
pub(super) struct IdCursor {
    table: &'static str,
    /// The last id of the previous insert, when it was confirmed.
    last: Option<i64>,
}

impl IdCursor {
    /// A cursor for inserts into `table`, one of the store's own `AUTOINCREMENT` tables.
    pub(super) fn new(table: &'static str) -> IdCursor {
        IdCursor { table, last: None }
    }
}

impl Store {
    /// Runs `insert`, a multi-row insert of `rows` rows into `cursor`'s table, and says which
    /// ids the rows took when that is known without reading them back.
    pub(super) async fn insert_known_ids<'q>(
        &self,
        tx: &mut Transaction<'static, Any>,
        cursor: &mut IdCursor,
        insert: Query<'q, Any, AnyArguments<'q>>,
        rows: usize,
    ) -> StoreResult<Inserted> {
        // Confirmed by the counter after the last insert (`ids_taken`): it still stands there,
        // as this transaction is the only writer and wrote nothing else to the table since.
        let before = match cursor.last.take() {
            Some(last) => last,
            None => self.ids_before(tx, cursor.table).await?,
        };
        let written = insert.execute(&mut **tx).await?.rows_affected() as usize;
        let ids = if written == rows {
            self.ids_taken(tx, cursor.table, before, written).await?
        } else {
            None
        };
        cursor.last = ids.as_ref().map(|ids| *ids.end());
        Ok(Inserted { before, written, ids })
    }

    /// The id after which `table`'s next rows are numbered (0 for a table never written).
    /// `table` is one of the store's own `AUTOINCREMENT` tables, never input.
    async fn ids_before(&self, tx: &mut Transaction<'static, Any>, table: &'static str) -> StoreResult<i64> {
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
    async fn ids_taken(
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
