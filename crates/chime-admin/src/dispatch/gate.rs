//! How many calls the admin makes to executors at once: at most `per_executor` to one address
//! and at most `global` over all of them.
//!
//! A call first waits for a permit of its own executor and only then for a global one. A run
//! queued behind a slow or hung executor therefore holds nothing while it waits: global
//! permits are held only by calls actually on the wire, at most `per_executor` of them per
//! executor, so one executor's backlog cannot keep another executor's runs from going out.
//! (Taking the global permit first would let runs waiting for one busy executor hold every
//! global permit.) Both semaphores are fair (first come, first served), so runs to one
//! executor go out in the order they became due.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Addresses remembered before idle ones are forgotten: executors that come and go (new
/// ports on every deploy) must not grow the map for ever.
const REMEMBERED_ADDRESSES: usize = 4096;

/// The permits of one call to an executor; dropping it lets the next call in.
#[derive(Debug)]
pub struct Pass {
    _executor: OwnedSemaphorePermit,
    _global: OwnedSemaphorePermit,
}

/// Bounds concurrent calls to executors, globally and per address.
#[derive(Debug)]
pub struct Gate {
    global: Arc<Semaphore>,
    per_executor: usize,
    executors: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl Gate {
    /// A gate letting `global` calls through at once, at most `per_executor` to one address.
    pub fn new(global: usize, per_executor: usize) -> Gate {
        Gate {
            global: Arc::new(Semaphore::new(global.max(1))),
            per_executor: per_executor.max(1),
            executors: Mutex::new(HashMap::new()),
        }
    }

    fn executor(&self, address: &str) -> Arc<Semaphore> {
        let key = chime_protocol::paths::normalize_address(address);
        let mut map = self.executors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = map.get(key) {
            return s.clone();
        }
        if map.len() >= REMEMBERED_ADDRESSES {
            // Only this map holds an idle address's semaphore: nobody waits for it or holds
            // one of its permits, so forgetting it changes nothing.
            map.retain(|_, s| Arc::strong_count(s) > 1);
        }
        let s = Arc::new(Semaphore::new(self.per_executor));
        map.insert(key.to_owned(), s.clone());
        s
    }

    /// Waits until a call to `address` may go out: first for a permit of that executor, then
    /// for a global one. `None` only if the gate was closed (it never is while the admin runs).
    pub async fn enter(&self, address: &str) -> Option<Pass> {
        let executor = self.executor(address).acquire_owned().await.ok()?;
        let global = self.global.clone().acquire_owned().await.ok()?;
        Some(Pass {
            _executor: executor,
            _global: global,
        })
    }

    /// Global permits free right now (for tests and diagnostics).
    pub fn available(&self) -> usize {
        self.global.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_busy_executor_leaves_global_permits_to_others() {
        let gate = Arc::new(Gate::new(2, 1));
        let held = gate.enter("http://slow:1").await.unwrap();
        // Many more calls queue for the busy executor; none of them may take a global permit.
        let mut waiting = Vec::new();
        for _ in 0..10 {
            let g = gate.clone();
            waiting.push(tokio::spawn(async move { g.enter("http://slow:1/").await.map(drop) }));
        }
        tokio::task::yield_now().await;
        let other = tokio::time::timeout(Duration::from_secs(5), gate.enter("http://fast:1"))
            .await
            .expect("a call to another executor is not held up by the busy one's queue");
        assert!(other.is_some());
        assert_eq!(
            gate.available(),
            0,
            "one global permit each for the two calls on the wire"
        );
        drop(other);
        drop(held);
        for w in waiting {
            assert!(w.await.unwrap().is_some(), "the queued calls go out in turn");
        }
        assert_eq!(gate.available(), 2);
    }

    #[test]
    fn idle_addresses_are_forgotten() {
        let gate = Gate::new(4, 1);
        for port in 0..REMEMBERED_ADDRESSES + 10 {
            gate.executor(&format!("http://h:{port}"));
        }
        assert!(gate.executors.lock().unwrap().len() <= REMEMBERED_ADDRESSES);
    }
}
