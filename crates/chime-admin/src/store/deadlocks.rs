//! A change that loses a deadlock is made again. On MySQL/MariaDB and PostgreSQL the claim loop
//! locks the job rows it claims through the due-time index while a user's change (stop, update,
//! pause) locks the same row through its primary key; the database breaks the cycle by rolling
//! one transaction back whole. When the loser is the user's change nothing of it was written, so
//! making it again is what the user asked for, and answering 503 would hand them a race they
//! cannot see.

use super::{StoreError, StoreResult};
use std::future::Future;
use std::time::Duration;

/// Attempts at a change before its deadlock is answered (503, "try again").
const ATTEMPTS: u32 = 4;

impl StoreError {
    /// The database rolled the whole transaction back to break a deadlock, or to keep
    /// transactions serializable (SQLSTATE 40001: MySQL/MariaDB error 1213, PostgreSQL's
    /// serialization failure; 40P01: PostgreSQL's deadlock). A lock wait that timed out is not
    /// one: MySQL undoes only the statement, and the wait was long already.
    pub fn is_deadlock(&self) -> bool {
        match self {
            StoreError::Db(sqlx::Error::Database(e)) => matches!(e.code().as_deref(), Some("40001" | "40P01")),
            _ => false,
        }
    }
}

/// Runs `change`, a function that makes one whole transaction, and runs it again (up to
/// [`ATTEMPTS`] in all) while the database rolls it back as a deadlock's victim. The other side
/// of such a deadlock, a claim round, holds its locks for milliseconds, so the waits are short:
/// 10, 20, 40 ms.
pub async fn retry_deadlocked<T, F, Fut>(mut change: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<T>>,
{
    let mut attempt = 1;
    loop {
        match change().await {
            Err(e) if e.is_deadlock() && attempt < ATTEMPTS => {
                tracing::debug!(attempt, "a change was rolled back in a deadlock; making it again");
                tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                attempt += 1;
            }
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A database error with the SQLSTATE `code`, as a driver reports it.
    #[derive(Debug)]
    struct Refusal(&'static str);

    impl std::fmt::Display for Refusal {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "refused with {}", self.0)
        }
    }

    impl std::error::Error for Refusal {}

    impl sqlx::error::DatabaseError for Refusal {
        fn message(&self) -> &str {
            "refused"
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.0))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    fn refused(code: &'static str) -> StoreError {
        StoreError::Db(sqlx::Error::Database(Box::new(Refusal(code))))
    }

    /// Calls that fail with `code` `failures` times, then answer their attempt number.
    async fn attempts_until_done(code: &'static str, failures: u32) -> (StoreResult<u32>, u32) {
        let calls = AtomicU32::new(0);
        let done = retry_deadlocked(|| async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n <= failures {
                Err(refused(code))
            } else {
                Ok(n)
            }
        })
        .await;
        (done, calls.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn a_deadlock_victim_is_made_again_until_it_goes_through() {
        for code in ["40001", "40P01"] {
            let (done, calls) = attempts_until_done(code, 2).await;
            assert_eq!(done.unwrap(), 3, "{code}");
            assert_eq!(calls, 3);
        }
    }

    #[tokio::test]
    async fn deadlocks_in_every_attempt_are_answered_as_the_last_one() {
        let (done, calls) = attempts_until_done("40001", 10).await;
        let e = done.unwrap_err();
        assert!(e.is_deadlock() && e.is_transient(), "{e}");
        assert_eq!(calls, ATTEMPTS);
    }

    #[tokio::test]
    async fn other_failures_are_answered_at_once() {
        // 23000: a constraint, which says something about the request; 5: SQLite busy, which
        // already waited its busy timeout.
        for code in ["23000", "5"] {
            let (done, calls) = attempts_until_done(code, 1).await;
            assert!(done.is_err() && !done.unwrap_err().is_deadlock());
            assert_eq!(calls, 1, "{code}");
        }
    }
}
