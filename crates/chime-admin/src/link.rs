//! Executors linked to this admin: each holds one WebSocket it opened to the admin
//! (`chime_protocol::link`), and the admin calls it down that socket instead of dialing its
//! address. A linked executor is known by the address `link://<executor id>` in its group, so
//! routing, sharding broadcasts and block strategies treat it like any registered executor.
//!
//! [`LinkHub`] is the table of live links, keyed by app name and executor id (a link of one group
//! can never answer for another's), and the one place a call goes down a link: it numbers the
//! call, queues the frame for the socket's writer and waits for the answer with the same number.
//! The socket itself — reading, writing, pings — is `http/link.rs`.
//!
//! Bounded on purpose: each link queues at most [`OUTBOX_FRAMES`] frames and waits for at most
//! [`MAX_PENDING_CALLS`] answers. A call beyond either fails at once, like a send to an executor
//! that cannot be reached (so `FAILOVER` moves on), instead of growing the admin's memory for an
//! executor that reads slowly or never answers.
//!
//! Several admins: an executor links to each admin it is given, but a run claimed by one admin
//! may be for an executor linked to another only. The hub also knows the other live admins'
//! base URLs (from `admin_node`, kept current by the lease loop); the executor client relays a
//! call for a link not held here to them (`POST <peer>/api/linkRelay`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Frames queued for one link's writer. A trigger is a few hundred bytes, so a full outbox is
/// far more than any executor takes in one burst; a link that lets it fill is not reading.
pub const OUTBOX_FRAMES: usize = 1024;

/// Calls one link may have sent and not yet had answered.
pub const MAX_PENDING_CALLS: usize = 4096;

/// Path of the relay endpoint other admins call to reach an executor linked here.
pub const RELAY_PATH: &str = "/api/linkRelay";

/// Header of a relayed call: the link address it is for.
pub const RELAY_ADDRESS_HEADER: &str = "Chime-Link-Address";

/// Header of a relayed call: the executor endpoint it stands for (`/run`, …).
pub const RELAY_PATH_HEADER: &str = "Chime-Link-Path";

/// Header of a relayed call: the cluster secret (`admin_secret`), which every admin of one
/// database reads and nobody else has. An executor's token alone does not open the relay: an
/// executor, or anyone who learnt a group's token, could otherwise reach every other linked
/// executor through it.
pub const CLUSTER_SECRET_HEADER: &str = "Chime-Cluster-Secret";

/// Why a call did not go down a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkCallError {
    /// This admin holds no link of that executor (another admin may).
    NotHere,
    /// The link is there but the call failed; the text says why.
    Failed(String),
}

/// One live link: the writer's queue and the calls waiting for their answer.
#[derive(Debug)]
pub struct Link {
    /// The executor's app name (its group).
    pub app_name: String,
    /// The executor's id.
    pub executor_id: String,
    outbox: mpsc::Sender<String>,
    pending: Mutex<HashMap<u64, oneshot::Sender<String>>>,
    next_id: AtomicU64,
    /// Cancelled when the link closes, or is replaced by a newer link of the same executor.
    pub closed: CancellationToken,
    /// Told when a call went unanswered: the socket's reader then pings at once and drops the
    /// link if nothing comes back soon (see `http/link.rs`), instead of waiting out the idle
    /// timeout while every call on a dead link waits its own timeout.
    pub unanswered: tokio::sync::Notify,
    /// `/log` calls waiting for their answer: only then may the executor send a message larger
    /// than `chime_protocol::link::MAX_MESSAGE_BYTES` (see `http/link_socket.rs`).
    log_calls: AtomicUsize,
}

/// One `/log` call in flight on a link, until dropped.
struct LogCall<'a>(&'a AtomicUsize);

impl Drop for LogCall<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Link {
    /// A link whose frames go to `outbox` (drained by the socket's writer).
    pub fn new(app_name: String, executor_id: String, outbox: mpsc::Sender<String>) -> Link {
        Link {
            app_name,
            executor_id,
            outbox,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
            unanswered: tokio::sync::Notify::new(),
            log_calls: AtomicUsize::new(0),
        }
    }

    /// Whether a `/log` call waits for its answer: the one large message an executor sends.
    pub fn awaits_log(&self) -> bool {
        self.log_calls.load(Ordering::Acquire) > 0
    }

    /// The address this executor is known by.
    pub fn address(&self) -> String {
        chime_protocol::link::address(&self.executor_id)
    }

    /// Hands the answer to call `id` to its caller; `false` if no call waits for it (answered
    /// after its caller gave up, or never made).
    pub fn answer(&self, id: u64, body: String) -> bool {
        let waiting = self.lock_pending().remove(&id);
        waiting.is_some_and(|tx| tx.send(body).is_ok())
    }

    /// Queues a frame the socket's writer sends (an answer to the executor's own call);
    /// waits while the outbox is full.
    pub async fn send(&self, frame: String) -> bool {
        self.outbox.send(frame).await.is_ok()
    }

    /// Ends the link: every call waiting for an answer fails now instead of at its timeout.
    pub fn close(&self) {
        self.closed.cancel();
        self.lock_pending().clear();
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<String>>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends a call of `path` with `body`, presenting the access token `token`, and waits up to
    /// `timeout` for its answer.
    async fn call(&self, path: &str, body: &str, token: Option<&str>, timeout: Duration) -> Result<String, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Written out rather than through `LinkFrame`: the body is JSON this admin made (or a
        // relayed one, checked by the relay), and copying it into a `RawValue` first would be
        // one more allocation per fire. The path is one of the executor endpoints; the token is
        // quoted as JSON (a group's token may hold any printable character).
        debug_assert!(!path.contains(['"', '\\']));
        let frame = match token {
            Some(token) => {
                let token = serde_json::to_string(token).map_err(|e| e.to_string())?;
                format!(r#"{{"id":{id},"path":"{path}","token":{token},"body":{body}}}"#)
            }
            None => format!(r#"{{"id":{id},"path":"{path}","body":{body}}}"#),
        };
        // Counted from before the call goes out until its answer is in or given up.
        let _log_call = (path == chime_protocol::paths::LOG).then(|| {
            self.log_calls.fetch_add(1, Ordering::AcqRel);
            LogCall(&self.log_calls)
        });
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.lock_pending();
            if self.closed.is_cancelled() {
                return Err("link closed".to_owned());
            }
            if pending.len() >= MAX_PENDING_CALLS {
                return Err(format!("link busy: {MAX_PENDING_CALLS} calls unanswered"));
            }
            pending.insert(id, tx);
        }
        if let Err(e) = self.outbox.try_send(frame) {
            self.lock_pending().remove(&id);
            return Err(match e {
                mpsc::error::TrySendError::Full(_) => format!("link busy: {OUTBOX_FRAMES} frames not yet sent"),
                mpsc::error::TrySendError::Closed(_) => "link closed".to_owned(),
            });
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(body)) => Ok(body),
            Ok(Err(_)) => Err("link closed before the executor answered".to_owned()),
            Err(_) => {
                self.lock_pending().remove(&id);
                self.unanswered.notify_one();
                Err("operation timed out".to_owned())
            }
        }
    }
}

/// The links this admin holds, and the other admins a call can be relayed to.
#[derive(Debug, Default)]
pub struct LinkHub {
    /// App name → executor id → link: looked up by borrowed names on every call.
    links: RwLock<HashMap<String, HashMap<String, Arc<Link>>>>,
    peers: RwLock<Vec<String>>,
}

impl LinkHub {
    /// Enters a new link, replacing (and closing) an earlier link of the same executor: the
    /// executor dials again when it believes its link is gone, and the newest link is the one it
    /// reads.
    pub fn attach(&self, link: Arc<Link>) {
        let earlier = self
            .write_links()
            .entry(link.app_name.clone())
            .or_default()
            .insert(link.executor_id.clone(), link);
        if let Some(earlier) = earlier {
            earlier.close();
        }
    }

    /// Removes `link` if it is still the executor's current one, and closes it.
    pub fn detach(&self, link: &Arc<Link>) {
        let mut links = self.write_links();
        if let Some(group) = links.get_mut(&link.app_name) {
            if group
                .get(&link.executor_id)
                .is_some_and(|current| Arc::ptr_eq(current, link))
            {
                group.remove(&link.executor_id);
            }
            if group.is_empty() {
                links.remove(&link.app_name);
            }
        }
        drop(links);
        link.close();
    }

    /// The link of executor `executor_id` of `app_name`, if held here.
    pub fn get(&self, app_name: &str, executor_id: &str) -> Option<Arc<Link>> {
        let links = self.links.read().unwrap_or_else(|p| p.into_inner());
        links.get(app_name)?.get(executor_id).cloned()
    }

    /// Calls `path` on the executor linked as `executor_id` in `app_name` and returns its answer
    /// (the body its HTTP endpoint would have answered). `token` is the access token the call
    /// presents, as the `XXL-JOB-ACCESS-TOKEN` header of an HTTP call would: the executor checks
    /// it, and never puts its own on a call it did not make.
    pub async fn call(
        &self,
        app_name: &str,
        executor_id: &str,
        path: &str,
        body: &str,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<String, LinkCallError> {
        let link = self.get(app_name, executor_id).ok_or(LinkCallError::NotHere)?;
        link.call(path, body, token, timeout)
            .await
            .map_err(LinkCallError::Failed)
    }

    /// How many executors are linked here.
    pub fn count(&self) -> usize {
        self.links
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(HashMap::len)
            .sum()
    }

    /// Replaces the other live admins' base URLs (not this admin's own).
    pub fn set_peers(&self, urls: Vec<String>) {
        *self.peers.write().unwrap_or_else(|p| p.into_inner()) = urls;
    }

    /// The other live admins' base URLs, to relay a call for a link not held here.
    pub fn peers(&self) -> Vec<String> {
        self.peers.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn write_links(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, HashMap<String, Arc<Link>>>> {
        self.links.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(outbox: usize) -> (Arc<Link>, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::channel(outbox);
        (Arc::new(Link::new("app".into(), "e1".into(), tx)), rx)
    }

    #[tokio::test]
    async fn a_call_gets_the_answer_with_its_number() {
        let hub = LinkHub::default();
        let (l, mut rx) = link(4);
        hub.attach(l.clone());
        let answering = tokio::spawn(async move {
            let frame: chime_protocol::link::LinkFrame = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
            assert_eq!(frame.path.as_deref(), Some("/beat"));
            assert_eq!(frame.token.as_deref(), Some("t\"1"), "the caller's token, quoted");
            assert!(l.answer(frame.id, r#"{"code":200}"#.into()));
            assert!(!l.answer(frame.id, "{}".into()), "a second answer finds no caller");
        });
        let got = hub
            .call("app", "e1", "/beat", "\"\"", Some("t\"1"), Duration::from_secs(5))
            .await;
        assert_eq!(got.unwrap(), r#"{"code":200}"#);
        answering.await.unwrap();
        assert_eq!(
            hub.call("other-app", "e1", "/beat", "{}", None, Duration::from_secs(1))
                .await,
            Err(LinkCallError::NotHere),
            "a link answers only for its own group"
        );
    }

    #[tokio::test]
    async fn a_full_outbox_and_a_closed_link_fail_at_once() {
        let hub = LinkHub::default();
        let (l, _rx) = link(1);
        hub.attach(l.clone());
        // The first frame fills the outbox; its call waits (and times out).
        let first = hub
            .call("app", "e1", "/run", "{}", None, Duration::from_millis(50))
            .await;
        assert_eq!(first, Err(LinkCallError::Failed("operation timed out".into())));
        let second = hub.call("app", "e1", "/run", "{}", None, Duration::from_secs(60)).await;
        assert!(matches!(second, Err(LinkCallError::Failed(m)) if m.starts_with("link busy")));
        assert_eq!(l.lock_pending().len(), 0, "no caller left waiting");
        hub.detach(&l);
        assert_eq!(hub.count(), 0);
        assert!(l.closed.is_cancelled());
    }

    #[tokio::test]
    async fn a_newer_link_replaces_and_closes_the_older_one() {
        let hub = LinkHub::default();
        let (old, _rx1) = link(4);
        let (new, _rx2) = link(4);
        hub.attach(old.clone());
        hub.attach(new.clone());
        assert!(old.closed.is_cancelled());
        // The old socket's end must not remove the new link.
        hub.detach(&old);
        assert_eq!(hub.count(), 1);
        assert!(Arc::ptr_eq(&hub.get("app", "e1").unwrap(), &new));
    }
}
