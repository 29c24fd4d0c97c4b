//! Statements over many ids: an `IN (…)` list split into chunks, each run as its own statement
//! on one connection, and rows that SQLite hands over packed into one value.
//!
//! Every engine limits the values one statement may bind (SQLite 32,766), and a list of
//! thousands of placeholders is slow to parse, so a statement over an unbounded list of ids is
//! run once per [`IN_CHUNK`] ids. The statement is written once with an `{in}` marker where the
//! list goes.
//!
//! On SQLite the list is one bound JSON array read through `json_each`, so the statement's text
//! is the same for every list and the driver's statement cache keeps it prepared: with one
//! placeholder per id, each new list length was a new statement to parse and plan, and the
//! workflow engine's steps, whose lists are as long as the results that came in, prepared
//! almost every statement anew (about 5 µs per node run went to SQLite's parser). The planner
//! looks each listed id up through the column's index as it does a literal list.

use super::rows;
use super::{placeholders, Backend, Store, StoreError, StoreResult};
use sqlx::any::{Any, AnyArguments, AnyRow};
use sqlx::query::Query;
use sqlx::AnyConnection;

/// Ids per `IN (…)` list.
pub(super) const IN_CHUNK: usize = 500;

/// Where the id list goes in a chunked statement.
const MARKER: &str = "{in}";

/// A statement for `values` bound values, their room made at once: a multi-row statement binds
/// thousands, and grown bind by bind the list was copied a dozen times into memory not touched
/// before.
pub(super) fn sized_query(sql: &str, values: usize) -> Query<'_, Any, AnyArguments<'_>> {
    let mut args = AnyArguments::default();
    sqlx::Arguments::reserve(&mut args, values, 0);
    sqlx::query_with(sql, args)
}

/// A value a chunked statement binds besides its ids.
#[derive(Debug, Clone, Copy)]
pub(super) enum Arg<'a> {
    /// An integer.
    Int(i64),
    /// A text.
    Text(&'a str),
}

impl Store {
    /// Rows of `sql` for all of `ids`: one statement per chunk of ids, the chunk in place of
    /// `sql`'s `{in}` marker and `args` bound to its other `?`s in the order they appear. Rows
    /// come chunk after chunk (an `ORDER BY` orders each chunk's rows only). `conn` is a
    /// transaction's or one taken from a pool (see [`Store::read_in`]).
    pub(super) async fn fetch_in(
        &self,
        conn: &mut AnyConnection,
        sql: &str,
        ids: &[i64],
        args: &[Arg<'_>],
    ) -> StoreResult<Vec<AnyRow>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(IN_CHUNK) {
            let q = self.in_sql(sql, chunk.len());
            out.extend(self.in_query(&q, sql, chunk, args).fetch_all(&mut *conn).await?);
        }
        Ok(out)
    }

    /// [`Store::fetch_in`], each row made an item by `decode`, collected.
    pub(super) async fn fetch_in_as<T, C: FromIterator<T>>(
        &self,
        conn: &mut AnyConnection,
        sql: &str,
        ids: &[i64],
        args: &[Arg<'_>],
        decode: impl FnMut(&AnyRow) -> Result<T, sqlx::Error>,
    ) -> StoreResult<C> {
        let rows = self.fetch_in(conn, sql, ids, args).await?;
        Ok(rows.iter().map(decode).collect::<Result<C, _>>()?)
    }

    /// Runs the statement `sql` for all of `ids` as [`Store::fetch_in`] does, and returns how
    /// many rows it changed in all.
    pub(super) async fn execute_in(
        &self,
        conn: &mut AnyConnection,
        sql: &str,
        ids: &[i64],
        args: &[Arg<'_>],
    ) -> StoreResult<u64> {
        let mut changed = 0;
        for chunk in ids.chunks(IN_CHUNK) {
            let q = self.in_sql(sql, chunk.len());
            changed += self
                .in_query(&q, sql, chunk, args)
                .execute(&mut *conn)
                .await?
                .rows_affected();
        }
        Ok(changed)
    }

    /// [`Store::fetch_in`] on a connection of the reading pool (none is taken when `ids` is
    /// empty).
    pub(super) async fn read_in(&self, sql: &str, ids: &[i64], args: &[Arg<'_>]) -> StoreResult<Vec<AnyRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.read.acquire().await?;
        self.fetch_in(&mut conn, sql, ids, args).await
    }

    /// [`Store::read_in`], each row made an item by `decode`, collected.
    pub(super) async fn read_in_as<T, C: FromIterator<T>>(
        &self,
        sql: &str,
        ids: &[i64],
        args: &[Arg<'_>],
        decode: impl FnMut(&AnyRow) -> Result<T, sqlx::Error>,
    ) -> StoreResult<C> {
        let rows = self.read_in(sql, ids, args).await?;
        Ok(rows.iter().map(decode).collect::<Result<C, _>>()?)
    }

    /// [`Store::execute_in`] outside a transaction, on a connection of the writing pool (none is
    /// taken when `ids` is empty): each chunk commits on its own.
    pub(super) async fn write_in(&self, sql: &str, ids: &[i64], args: &[Arg<'_>]) -> StoreResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let mut conn = self.write.acquire().await?;
        self.execute_in(&mut conn, sql, ids, args).await
    }

    /// [`Store::int_rows`] of `sql` for all of `ids`, chunk by chunk as [`Store::fetch_in`]
    /// does; `sql` binds nothing but the ids.
    pub(super) async fn int_rows_in<const N: usize>(
        &self,
        conn: &mut AnyConnection,
        sql: &str,
        cols: [&str; N],
        ids: &[i64],
    ) -> StoreResult<Vec<[i64; N]>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_CHUNK) {
            let q = self.in_sql(sql, chunk.len());
            out.extend(self.int_rows_bound(conn, &q, cols, |q| self.bind_ids(q, chunk)).await?);
        }
        Ok(out)
    }

    /// Runs `sql`, a query of the integer columns `cols` (in that order) with integer `binds`,
    /// and returns its rows.
    ///
    /// On SQLite the rows come back packed into one text value (`group_concat`) and are split
    /// here: the driver hands each result row from its worker thread to the async side on its
    /// own, which for the twenty thousand rows of a busy claim cost more than the query itself
    /// (65 ms against 25 ms per round).
    pub(super) async fn int_rows<const N: usize>(
        &self,
        conn: &mut AnyConnection,
        sql: &str,
        cols: [&str; N],
        binds: &[i64],
    ) -> StoreResult<Vec<[i64; N]>> {
        self.int_rows_bound(conn, sql, cols, |mut query| {
            for b in binds {
                query = query.bind(*b);
            }
            query
        })
        .await
    }

    /// [`Store::int_rows`] with the values bound by `bind`.
    async fn int_rows_bound<const N: usize>(
        &self,
        conn: &mut AnyConnection,
        sql: &str,
        cols: [&str; N],
        bind: impl for<'q> FnOnce(Query<'q, Any, AnyArguments<'q>>) -> Query<'q, Any, AnyArguments<'q>>,
    ) -> StoreResult<Vec<[i64; N]>> {
        if self.backend != Backend::Sqlite {
            let mut out = Vec::new();
            for r in bind(sqlx::query(sql)).fetch_all(&mut *conn).await? {
                let mut row = [0i64; N];
                for (i, v) in row.iter_mut().enumerate() {
                    *v = rows::int(&r, i)?;
                }
                out.push(row);
            }
            return Ok(out);
        }
        let packed = format!(
            "SELECT group_concat({}, ';') FROM ({sql})",
            cols.map(|c| format!("IFNULL({c}, 0)")).join(" || ',' || ")
        );
        let row = bind(sqlx::query(&packed)).fetch_one(&mut *conn).await?;
        let text = rows::text(&row, 0)?;
        unpack_int_rows(&text).map_err(|e| StoreError::from(sqlx::Error::Protocol(e)))
    }

    /// Rows of `sql` (a query with an `{in}` marker and nothing else to bind) for all of `ids`,
    /// chunk by chunk as [`Store::fetch_in`] does, each made a `T`. On SQLite each chunk's rows
    /// come back packed into one JSON array of arrays (`json_group_array` of its columns
    /// `cols`, in order) that `T` deserializes from, for the reason [`Store::int_rows`] packs
    /// integers; elsewhere row by row through `decode`.
    pub(super) async fn packed_rows_in<T: serde::de::DeserializeOwned>(
        &self,
        conn: &mut AnyConnection,
        sql: &str,
        cols: &[&str],
        ids: &[i64],
        decode: impl Fn(&AnyRow) -> Result<T, sqlx::Error>,
    ) -> StoreResult<Vec<T>> {
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(IN_CHUNK) {
            let q = self.in_sql(sql, chunk.len());
            if self.backend != Backend::Sqlite {
                for r in self.in_query(&q, sql, chunk, &[]).fetch_all(&mut *conn).await? {
                    out.push(decode(&r)?);
                }
                continue;
            }
            let packed = format!("SELECT json_group_array(json_array({})) FROM ({q})", cols.join(", "));
            let row = self.in_query(&packed, sql, chunk, &[]).fetch_one(&mut *conn).await?;
            let rows: Vec<T> = serde_json::from_str(&rows::text(&row, 0)?)
                .map_err(|e| StoreError::from(sqlx::Error::Protocol(format!("packed rows: {e}"))))?;
            out.extend(rows);
        }
        Ok(out)
    }

    /// `sql` with its `{in}` marker replaced by a list of `n` ids, in this backend's syntax: `n`
    /// placeholders, or on SQLite the one JSON array [`Store::in_query`] binds.
    fn in_sql(&self, sql: &str, n: usize) -> String {
        debug_assert_eq!(sql.matches(MARKER).count(), 1, "one {MARKER} in {sql}");
        let list = match self.backend {
            Backend::Sqlite => JSON_LIST.to_owned(),
            Backend::MySql | Backend::Postgres => placeholders(n),
        };
        self.sql(&sql.replacen(MARKER, &list, 1)).into_owned()
    }

    /// The statement `q` (a chunk's SQL from [`Store::in_sql`]) with its values bound: the
    /// `args` written before the marker in `sql`, the chunk's ids, then the other `args`.
    fn in_query<'q>(&self, q: &'q str, sql: &str, ids: &[i64], args: &[Arg<'q>]) -> Query<'q, Any, AnyArguments<'q>> {
        let before = sql.find(MARKER).map_or(0, |at| sql[..at].matches('?').count());
        debug_assert_eq!(args.len(), sql.matches('?').count(), "one arg per ? in {sql}");
        let (head, tail) = args.split_at(before.min(args.len()));
        let mut query = sqlx::query(q);
        for a in head {
            query = bind(query, *a);
        }
        query = self.bind_ids(query, ids);
        for a in tail {
            query = bind(query, *a);
        }
        query
    }

    /// Binds the ids of an `{in}` list as [`Store::in_sql`] wrote it: one JSON array on
    /// SQLite, one value per id elsewhere.
    fn bind_ids<'q>(
        &self,
        mut query: Query<'q, Any, AnyArguments<'q>>,
        ids: &[i64],
    ) -> Query<'q, Any, AnyArguments<'q>> {
        if self.backend == Backend::Sqlite {
            return query.bind(json_ids(ids));
        }
        for id in ids {
            query = query.bind(*id);
        }
        query
    }
}

/// What an `{in}` marker becomes on SQLite: the elements of one bound JSON array.
const JSON_LIST: &str = "SELECT value FROM json_each(?)";

/// `ids` as a JSON array (`[1,2,3]`), for [`JSON_LIST`].
fn json_ids(ids: &[i64]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(2 + ids.len() * 8);
    s.push('[');
    for (k, id) in ids.iter().enumerate() {
        if k > 0 {
            s.push(',');
        }
        // Into the one buffer: every id list of a SQLite statement passes here.
        let _ = write!(s, "{id}");
    }
    s.push(']');
    s
}

pub(super) fn bind<'q>(query: Query<'q, Any, AnyArguments<'q>>, arg: Arg<'q>) -> Query<'q, Any, AnyArguments<'q>> {
    match arg {
        Arg::Int(v) => query.bind(v),
        Arg::Text(v) => query.bind(v),
    }
}

/// The statement `q` with `args` bound to its `?`s in order.
pub(super) fn bound<'q>(q: &'q str, args: &[Arg<'q>]) -> Query<'q, Any, AnyArguments<'q>> {
    args.iter().fold(sqlx::query(q), |query, a| bind(query, *a))
}

/// Splits `group_concat` output of `N` integer columns (`1,2,3;4,5,6`) into rows.
fn unpack_int_rows<const N: usize>(text: &str) -> Result<Vec<[i64; N]>, String> {
    text.split(';')
        .filter(|r| !r.is_empty())
        .map(|r| {
            let mut row = [0i64; N];
            let mut fields = r.split(',');
            for v in row.iter_mut() {
                let f = fields
                    .next()
                    .ok_or_else(|| format!("packed row {r:?} has fewer than {N} values"))?;
                *v = f.parse().map_err(|e| format!("packed row {r:?}: {e}"))?;
            }
            if fields.next().is_some() {
                return Err(format!("packed row {r:?} has more than {N} values"));
            }
            Ok(row)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn packed_rows_unpack() {
        assert_eq!(super::unpack_int_rows::<3>("").unwrap(), Vec::<[i64; 3]>::new());
        assert_eq!(
            super::unpack_int_rows::<3>("1,2,3;-4,5,0").unwrap(),
            vec![[1, 2, 3], [-4, 5, 0]]
        );
        assert!(super::unpack_int_rows::<3>("1,2").is_err());
        assert!(super::unpack_int_rows::<3>("1,2,3,4").is_err());
        assert!(super::unpack_int_rows::<3>("1,x,3").is_err());
    }

    #[test]
    fn ids_as_json() {
        assert_eq!(super::json_ids(&[]), "[]");
        assert_eq!(super::json_ids(&[7]), "[7]");
        assert_eq!(super::json_ids(&[1, -2, i64::MAX]), format!("[1,-2,{}]", i64::MAX));
    }
}
