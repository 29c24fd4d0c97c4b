//! The few places where SQLite, MySQL/MariaDB and PostgreSQL spell SQL differently.
//!
//! Every query in `store/` is written once, with `?` placeholders; [`Backend::sql`] rewrites
//! them to `$1, $2, …` for PostgreSQL. The remaining differences (insert-or-ignore, row locks)
//! are methods here, so a reader sees one query per operation, not three.

use std::borrow::Cow;

/// Which database engine a [`super::Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite (the default): one admin process.
    Sqlite,
    /// MySQL 8 or MariaDB 10.5+ (`INSERT … RETURNING` is needed).
    MySql,
    /// PostgreSQL 12+.
    Postgres,
}

impl Backend {
    /// The backend named by a database URL's scheme.
    pub fn from_url(url: &str) -> Option<Backend> {
        let scheme = url.split(':').next()?.to_ascii_lowercase();
        match scheme.as_str() {
            "sqlite" => Some(Backend::Sqlite),
            "mysql" | "mariadb" => Some(Backend::MySql),
            "postgres" | "postgresql" => Some(Backend::Postgres),
            _ => None,
        }
    }

    /// The query with placeholders in this backend's syntax.
    ///
    /// `?` inside single-quoted literals is left alone; Chime's queries never put one there,
    /// but a rewrite that breaks literals would be a trap for the next query someone writes.
    pub fn sql(self, query: &str) -> Cow<'_, str> {
        if self != Backend::Postgres || !query.contains('?') {
            return Cow::Borrowed(query);
        }
        let mut out = String::with_capacity(query.len() + 16);
        let mut n = 0;
        let mut in_literal = false;
        for c in query.chars() {
            match c {
                '\'' => {
                    in_literal = !in_literal;
                    out.push(c);
                }
                '?' if !in_literal => {
                    n += 1;
                    out.push('$');
                    out.push_str(&n.to_string());
                }
                _ => out.push(c),
            }
        }
        Cow::Owned(out)
    }

    /// The database server's clock, epoch milliseconds, as an SQL expression. Partition leases
    /// are stamped and judged by it alone, so admins whose clocks disagree agree on expiry.
    pub fn now_ms_sql(self) -> &'static str {
        match self {
            Backend::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
            Backend::MySql => "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
            Backend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        }
    }

    /// `INSERT` that silently skips rows violating a unique key: `(prefix, suffix)` around
    /// `INTO table (…) VALUES …`.
    pub fn insert_ignore(self) -> (&'static str, &'static str) {
        match self {
            Backend::MySql => ("INSERT IGNORE", ""),
            Backend::Sqlite | Backend::Postgres => ("INSERT", " ON CONFLICT DO NOTHING"),
        }
    }

    /// The row-lock suffix for a `SELECT` inside a write transaction (SQLite has one writer).
    pub fn for_update(self) -> &'static str {
        match self {
            Backend::Sqlite => "",
            Backend::MySql | Backend::Postgres => " FOR UPDATE",
        }
    }

    /// A hint after a table's name (and alias) in `FROM` to read it through `index`, for a
    /// query whose best index does not depend on the data: SQLite's `INDEXED BY` (it plans
    /// without statistics, and may pick an index that leaves it to sort what a page of a list
    /// needs in order), MySQL/MariaDB's `FORCE INDEX` (which may intersect two indexes and sort
    /// the result instead); nothing on PostgreSQL, which has no hints and weighs each index by
    /// the table's statistics.
    pub fn use_index(self, index: &str) -> String {
        match self {
            Backend::Sqlite => format!(" INDEXED BY {index}"),
            Backend::MySql => format!(" FORCE INDEX ({index})"),
            Backend::Postgres => String::new(),
        }
    }

    /// A short name for logs and docs.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::MySql => "mysql",
            Backend::Postgres => "postgres",
        }
    }

    /// An `UPDATE` of `table` that sets `cols` row by row from `rows` tuples of bound values,
    /// each `(id, value of cols[0], value of cols[1], …)`, bound row after row, as
    /// [`Backend::padded`] hands them out. `guard`, if not empty, is a further condition on the
    /// updated row (its columns qualified with `table`).
    ///
    /// On SQLite the statement has room for a power of two of rows, the last row repeated in
    /// the rest ([`Backend::padded`]): so there are a few statements per table to prepare once
    /// and keep in the driver's cache, not one per batch length, each parsed anew (parsing was
    /// a fifth of a busy SQLite connection's time in the workflow engine). A row repeated
    /// changes nothing more: the join updates each row of `table` once, and counts it once.
    ///
    /// SQLite and PostgreSQL join a `VALUES` list (`UPDATE … FROM`); MySQL/MariaDB, which have
    /// no `VALUES` table there, a `UNION ALL` of one-row `SELECT`s. Both look each row up by
    /// primary key once. (The `CASE id WHEN … THEN …` form used before compares every row with
    /// every id of the batch, once per column: quadratic, and most of SQLite's time at
    /// tens of thousands of updates a second.)
    pub fn update_by_id(self, table: &str, cols: &[&str], rows: usize, guard: &str) -> String {
        let rows = self.padded_len(rows);
        let width = cols.len() + 1;
        let set: Vec<String> = cols
            .iter()
            .enumerate()
            .map(|(i, c)| match self {
                Backend::MySql => format!("{table}.{c} = v.column{}", i + 2),
                Backend::Sqlite | Backend::Postgres => format!("{c} = v.column{}", i + 2),
            })
            .collect();
        let set = set.join(", ");
        let guard = if guard.is_empty() {
            String::new()
        } else {
            format!(" AND {guard}")
        };
        let mut sql = String::with_capacity(64 + rows * width * 3);
        match self {
            Backend::MySql => {
                sql.push_str(&format!("UPDATE {table} JOIN ("));
                for r in 0..rows {
                    if r == 0 {
                        sql.push_str("SELECT ");
                        let named: Vec<String> = (1..=width).map(|k| format!("? AS column{k}")).collect();
                        sql.push_str(&named.join(", "));
                    } else {
                        sql.push_str(" UNION ALL SELECT ");
                        sql.push_str(&placeholders(width));
                    }
                }
                sql.push_str(&format!(
                    ") AS v ON {table}.id = v.column1 SET {set} WHERE 1 = 1{guard}"
                ));
            }
            Backend::Sqlite | Backend::Postgres => {
                sql.push_str(&format!("UPDATE {table} SET {set} FROM (VALUES "));
                for r in 0..rows {
                    if r > 0 {
                        sql.push_str(", ");
                    }
                    sql.push('(');
                    sql.push_str(&placeholders(width));
                    sql.push(')');
                }
                sql.push_str(&format!(") AS v WHERE {table}.id = v.column1{guard}"));
            }
        }
        self.sql(&sql).into_owned()
    }

    /// How many rows [`Backend::update_by_id`] binds for `n`.
    fn padded_len(self, n: usize) -> usize {
        match self {
            Backend::Sqlite => n.next_power_of_two(),
            Backend::MySql | Backend::Postgres => n,
        }
    }

    /// `rows` in slices of at most `most`, each with its offset in `rows`, for multi-row
    /// inserts of one statement each. On SQLite, what is left after the full slices comes in
    /// slices of powers of two, largest first: the statement for each length is prepared once
    /// and kept in the driver's cache, where each new length was a new statement to parse (see
    /// [`Backend::update_by_id`]); a remainder of 300 rows is four statements, of 256, 32, 8
    /// and 4 rows.
    pub fn insert_slices<T>(self, rows: &[T], most: usize) -> Vec<(usize, &[T])> {
        let most = most.max(1);
        let mut out = Vec::new();
        let mut at = 0;
        while at < rows.len() {
            let left = rows.len() - at;
            let len = match self {
                Backend::Sqlite if left < most => 1 << left.ilog2(),
                _ => left.min(most),
            };
            out.push((at, &rows[at..at + len]));
            at += len;
        }
        out
    }

    /// The rows of `chunk` as [`Backend::update_by_id`] binds them: each once, then on SQLite
    /// the last again up to the statement's room.
    pub fn padded<T>(self, chunk: &[T]) -> impl Iterator<Item = &T> {
        let pad = self.padded_len(chunk.len()) - chunk.len();
        chunk.iter().chain(chunk.last().into_iter().cycle().take(pad))
    }
}

/// `?, ?, …` with `n` placeholders (for `IN (…)` lists and multi-row `VALUES`).
pub fn placeholders(n: usize) -> String {
    let mut s = String::with_capacity(n * 3);
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('?');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_placeholders_are_numbered_and_literals_kept() {
        assert_eq!(
            Backend::Postgres.sql("SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)"),
            "SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)"
        );
        assert_eq!(Backend::Sqlite.sql("x = ?"), "x = ?");
        assert_eq!(Backend::MySql.sql("x = ?"), "x = ?");
    }

    #[test]
    fn update_by_id_per_backend() {
        assert_eq!(
            Backend::Sqlite.update_by_id("run", &["a", "b"], 2, "run.c = 0"),
            "UPDATE run SET a = v.column2, b = v.column3 FROM (VALUES (?, ?, ?), (?, ?, ?)) AS v \
             WHERE run.id = v.column1 AND run.c = 0"
        );
        // Room for four rows: three and the last again.
        assert_eq!(
            Backend::Sqlite.update_by_id("job", &["a"], 3, ""),
            "UPDATE job SET a = v.column2 FROM (VALUES (?, ?), (?, ?), (?, ?), (?, ?)) AS v WHERE job.id = v.column1"
        );
        assert_eq!(
            Backend::Postgres.update_by_id("job", &["a"], 2, ""),
            "UPDATE job SET a = v.column2 FROM (VALUES ($1, $2), ($3, $4)) AS v WHERE job.id = v.column1"
        );
        assert_eq!(
            Backend::MySql.update_by_id("run", &["a"], 2, "run.c = 0"),
            "UPDATE run JOIN (SELECT ? AS column1, ? AS column2 UNION ALL SELECT ?, ?) AS v \
             ON run.id = v.column1 SET run.a = v.column2 WHERE 1 = 1 AND run.c = 0"
        );
    }

    #[test]
    fn padded_rows_repeat_the_last_on_sqlite_only() {
        let rows = [1, 2, 3, 4, 5];
        let sqlite: Vec<i32> = Backend::Sqlite.padded(&rows).copied().collect();
        assert_eq!(sqlite, [1, 2, 3, 4, 5, 5, 5, 5]);
        assert_eq!(Backend::Sqlite.padded(&rows[..4]).count(), 4);
        assert_eq!(Backend::Sqlite.padded(&rows[..1]).count(), 1);
        assert_eq!(Backend::Sqlite.padded::<i32>(&[]).count(), 0);
        assert_eq!(Backend::Postgres.padded(&rows).count(), 5);
        assert_eq!(Backend::MySql.padded(&rows).count(), 5);
    }

    #[test]
    fn insert_slices_of_cached_lengths_on_sqlite() {
        let rows: Vec<usize> = (0..1300).collect();
        let lengths = |b: Backend, n: usize, most: usize| -> Vec<usize> {
            let slices = b.insert_slices(&rows[..n], most);
            // Every row once, in order, each slice at its offset.
            let joined: Vec<usize> = slices.iter().flat_map(|(_, s)| s.iter().copied()).collect();
            assert_eq!(joined, rows[..n]);
            assert!(slices.iter().all(|(at, s)| s.first().is_none_or(|f| f == at)));
            slices.iter().map(|(_, s)| s.len()).collect()
        };
        assert_eq!(lengths(Backend::Sqlite, 1300, 400), [400, 400, 400, 64, 32, 4]);
        assert_eq!(lengths(Backend::Sqlite, 300, 400), [256, 32, 8, 4]);
        assert_eq!(lengths(Backend::Sqlite, 1, 400), [1]);
        assert_eq!(lengths(Backend::Sqlite, 0, 400), Vec::<usize>::new());
        assert_eq!(lengths(Backend::Postgres, 1300, 400), [400, 400, 400, 100]);
        assert_eq!(lengths(Backend::MySql, 300, 400), [300]);
    }

    #[test]
    fn backend_from_url() {
        assert_eq!(Backend::from_url("sqlite://chime.db"), Some(Backend::Sqlite));
        assert_eq!(Backend::from_url("mysql://root@127.0.0.1/test"), Some(Backend::MySql));
        assert_eq!(
            Backend::from_url("postgres://postgres@localhost/test"),
            Some(Backend::Postgres)
        );
        assert_eq!(Backend::from_url("redis://x"), None);
    }
}
