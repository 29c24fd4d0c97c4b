//! The ids SQLite gives the rows of a multi-row insert, known without reading the rows back.
//!
//! An `AUTOINCREMENT` table gives a new row one more than the largest id it ever had (kept in
//! `sqlite_sequence`) or than the largest id it has now, whichever is larger. The counter can
//! be ahead of every row: an import raises it past the ids it brought, and deleting the newest
//! rows leaves it where it was. Inside a write transaction the connection is SQLite's only
//! writer, so a multi-row insert's rows take consecutive ids in `VALUES` order after that;
//! [`Store::insert_known_ids`] checks them rather than trusting it: the insert is followed, in
//! the same query (one round trip), by `SELECT changes(), last_insert_rowid()`, and the last
//! row's id must be the counter plus the rows written. When it is not (a row was skipped, and a
//! skipped row may still use up an id), the rows are read back instead. (The driver's own
//! result would name the last id too, but its `Any` layer drops it.)
//!
//! The driver hands each result row from its worker thread to the async side on its own:
//! `RETURNING` on a busy insert cost more than the insert itself.
//!
//! Several inserts into one table in one transaction (the chunks of a large insert) carry an
//! [`IdCursor`]: once an insert's ids are confirmed, the counter stands at its last row, so the
//! next insert's rows are numbered from there without reading it again. A series of inserts
//! reads the counter once, before the first: each statement is a round trip to the database's
//! thread, and a workflow step writes its runs and node rows in several chunks.

use super::rows;
use super::{Store, StoreResult};
use sqlx::any::{Any, AnyArguments};
use sqlx::query::Query;
use sqlx::Transaction;
use std::ops::RangeInclusive;

/// Ends the SQL of an insert given to [`Store::insert_known_ids`]: SQLite runs the statements
/// of one query in turn, and this one reports how many rows the insert wrote and the last one's
/// id.
pub(super) const KNOWN_IDS: &str = "; SELECT changes(), last_insert_rowid()";

/// What [`Store::insert_known_ids`] did.
pub(super) struct Inserted {
    /// Where the table's ids stood before the insert: the new rows' ids are above it.
    pub(super) before: i64,
    /// How many rows went in.
    pub(super) written: usize,
    /// Their ids, in `VALUES` order, when every row went in and the last one's id confirms them;
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
    /// Runs `insert`, a multi-row insert of `rows` rows into `cursor`'s table whose SQL ends in
    /// [`KNOWN_IDS`], and says which ids the rows took when that is known without reading them
    /// back.
    pub(super) async fn insert_known_ids<'q>(
        &self,
        tx: &mut Transaction<'static, Any>,
        cursor: &mut IdCursor,
        insert: Query<'q, Any, AnyArguments<'q>>,
        rows: usize,
    ) -> StoreResult<Inserted> {
        // Confirmed by the last insert (its last row's id): the counter still stands there, as
        // this transaction is the only writer and wrote nothing else to the table since.
        let before = match cursor.last.take() {
            Some(last) => last,
            None => self.ids_before(tx, cursor.table).await?,
        };
        // The insert, then its `KNOWN_IDS` tail's one row (`fetch_one` of the `Any` driver
        // would stop at the insert's result, before the row).
        let done = insert.fetch_all(&mut **tx).await?;
        let done = done.first().ok_or(sqlx::Error::RowNotFound)?;
        let written = rows::int(done, 0)? as usize;
        // The connection's last inserted row: this insert's last when it wrote any (an insert
        // that wrote none leaves the previous one's, hence `written > 0` first).
        let last = rows::int(done, 1)?;
        let ids = Some(before + written as i64)
            .filter(|end| written == rows && written > 0 && last == *end)
            .map(|end| before + 1..=end);
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
}
