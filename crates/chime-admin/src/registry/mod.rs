//! Executor heartbeats and each group's current address list.
//!
//! Addresses are kept as the executor registered them (`http://ip:port/` from Java executors,
//! `http://ip:port` from pyxxl): XXL-JOB's CONSISTENT_HASH hashes, and FIRST/LAST sort, those
//! exact strings, so the same job lands on the same executor as under XXL-JOB. Two spellings of
//! one executor (with and without the slash) count once. Calls use the address without slash.
//!
//! Heartbeats (`/api/registry`) are written to the `registry` table and applied to an
//! in-memory directory at once. A refresh loop reloads groups and live heartbeats from the
//! database every few seconds (so several admins share what executors told any of them) and
//! deletes heartbeats older than the dead timeout: an executor that stopped beating leaves its
//! group's list after at most `dead_timeout` plus one refresh.
//!
//! Chime's executors also say in each registration which process they are (an instance id and
//! its uptime). The directory remembers, per app name and address, the process last heard
//! and when it started by this admin's clock ([`Directory::executor_process`]): a run sent to
//! that address before then was accepted by an earlier process, which is gone. This is kept in
//! memory only: every executor registers with every admin it knows (XXL-JOB's executors do the
//! same), so each admin hears it for itself; an admin that just started knows nothing yet and
//! so fails nothing on this ground until the next heartbeat.

use crate::model::{now_ms, AddressType, ExecutorEntry, Group};
use crate::store::{Store, StoreResult};
use chime_protocol::link::is_link_address;
use chime_protocol::paths::normalize_address;
use chime_protocol::ExecutorInstance;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// app name → address → last heartbeat (epoch ms).
type Live = HashMap<String, BTreeMap<String, i64>>;

/// Adds to a database `snapshot` the heartbeats in `memory` received at or after `since` (when
/// the snapshot was started). Such a heartbeat may have been written after the snapshot was
/// read; without this, a freshly registered executor would vanish from its group until the
/// next refresh, and runs in between would be routed as if it did not exist.
fn keep_heartbeats_since(snapshot: &mut Live, memory: &Live, since: i64) {
    for (app, addresses) in memory {
        for (address, at) in addresses.iter().filter(|(_, at)| **at >= since) {
            let slot = snapshot
                .entry(app.clone())
                .or_default()
                .entry(address.clone())
                .or_insert(*at);
            *slot = (*slot).max(*at);
        }
    }
}

/// A group with the addresses a run may be sent to right now.
#[derive(Debug, Clone)]
pub struct GroupView {
    /// The group.
    pub group: Group,
    /// The manual list, or the live registered executors: as registered (or typed), sorted,
    /// one entry per executor.
    pub addresses: Vec<String>,
}

/// One spelling per executor: of addresses that differ only by a trailing slash, the one with
/// the newest heartbeat (an executor upgraded to send the other spelling keeps its old row
/// until it expires). Returns `(registered address, last heartbeat)` sorted by address.
fn one_per_executor<'a>(live: impl Iterator<Item = (&'a String, &'a i64)>) -> Vec<(String, i64)> {
    let mut newest: HashMap<&str, (&String, i64)> = HashMap::new();
    for (address, at) in live {
        let slot = newest.entry(normalize_address(address)).or_insert((address, *at));
        if *at > slot.1 || (*at == slot.1 && address < slot.0) {
            *slot = (address, *at);
        }
    }
    let mut out: Vec<(String, i64)> = newest.into_values().map(|(a, at)| (a.clone(), at)).collect();
    out.sort();
    out
}

/// A manual group's list, one entry per executor (the first spelling in sorted order).
fn manual_addresses(group: &Group) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out: Vec<String> = group.addresses.clone();
    out.sort();
    out.retain(|a| seen.insert(normalize_address(a).to_owned()));
    out
}

/// The executor process behind an address, as this admin heard of it (see
/// [`Directory::executor_process`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutorProcess {
    /// When the process started serving, epoch ms by this admin's clock: the arrival of a
    /// registration minus the uptime it carried, the earliest of these estimates. Network delay
    /// only makes it later than the truth, never earlier.
    pub started_at: i64,
    /// When this admin first heard of the process, epoch ms.
    pub first_seen: i64,
}

/// One process as remembered: its id, and what [`ExecutorProcess`] says of it.
#[derive(Debug, Clone)]
struct KnownProcess {
    id: String,
    process: ExecutorProcess,
    /// Its last registration, epoch ms: a process silent for the dead timeout is forgotten.
    last_seen: i64,
    /// The handler names its last registration listed.
    handlers: Vec<String>,
}

/// Processes by app name and address (without trailing slash).
type Processes = HashMap<(String, String), KnownProcess>;

/// Records that `instance` registered at `key` at `arrived` (epoch ms): a new id replaces what
/// was known (the executor at that address restarted); the same id keeps the earliest start
/// estimate (the registration with the least delay on the way comes closest to the truth).
fn note_process(processes: &mut Processes, key: (String, String), instance: &ExecutorInstance, arrived: i64) {
    let uptime = i64::try_from(instance.uptime_ms).unwrap_or(i64::MAX);
    let started_at = arrived.saturating_sub(uptime);
    match processes.get_mut(&key) {
        Some(known) if known.id == instance.id => {
            known.process.started_at = known.process.started_at.min(started_at);
            known.last_seen = known.last_seen.max(arrived);
            if known.handlers != instance.handlers {
                known.handlers.clone_from(&instance.handlers);
            }
        }
        _ => {
            processes.insert(
                key,
                KnownProcess {
                    id: instance.id.clone(),
                    process: ExecutorProcess {
                        started_at,
                        first_seen: arrived,
                    },
                    last_seen: arrived,
                    handlers: instance.handlers.clone(),
                },
            );
        }
    }
}

#[derive(Debug, Default)]
struct State {
    groups: HashMap<i64, Group>,
    /// app name → address → last heartbeat.
    live: Live,
}

/// A computed [`GroupView`] and how long it holds.
#[derive(Debug)]
struct CachedView {
    /// [`Directory::version`] when it was computed.
    version: u64,
    /// Epoch ms at which its oldest heartbeat turns dead and the list would change.
    valid_until: i64,
    view: Arc<GroupView>,
}

/// The admin's view of groups and their live executors.
#[derive(Debug)]
pub struct Directory {
    store: Store,
    dead_timeout: Duration,
    state: RwLock<State>,
    /// Bumped (under the state's write lock) by every change to groups or heartbeats.
    version: AtomicU64,
    /// Views by group id. Every run sent asks for its group's view; building it (cloning the
    /// group, filtering, de-duplicating and sorting the addresses) for each one was measurable
    /// at tens of thousands of runs a second, and the answer changes only when the state does
    /// or a heartbeat in it grows too old.
    views: Mutex<HashMap<i64, CachedView>>,
    /// The process last heard at each address (Chime executors only). Apart from `state`: it
    /// changes on heartbeats, and the group views do not depend on it.
    processes: Mutex<Processes>,
}

impl Directory {
    /// An empty directory; call [`Directory::refresh`] to load it.
    pub fn new(store: Store, dead_timeout: Duration) -> Directory {
        Directory {
            store,
            dead_timeout,
            state: RwLock::new(State::default()),
            version: AtomicU64::new(0),
            views: Mutex::new(HashMap::new()),
            processes: Mutex::new(Processes::new()),
        }
    }

    fn dead_ms(&self) -> i64 {
        self.dead_timeout.as_millis() as i64
    }

    /// Records a heartbeat, and the executor process that sent it when it says
    /// (`instance`, Chime's executors).
    pub async fn heartbeat(
        &self,
        app_name: &str,
        address: &str,
        instance: Option<&ExecutorInstance>,
    ) -> StoreResult<()> {
        // The uptime is subtracted from the arrival, taken before the write: the time the write
        // takes would otherwise count as network delay and put the start later than it was.
        let arrived = now_ms();
        self.store.upsert_registry(app_name, address, arrived).await?;
        let key = (app_name.to_owned(), normalize_address(address).to_owned());
        let mut processes = self.processes.lock().unwrap_or_else(|p| p.into_inner());
        match instance {
            Some(instance) => note_process(&mut processes, key, instance, arrived),
            // Whatever serves the address now does not say which process it is (an executor
            // of another kind took it over): what the last one said no longer holds.
            None => {
                processes.remove(&key);
            }
        }
        drop(processes);
        // Stamped after the write committed, not before: a refresh that began while the write
        // was in flight may have read a snapshot without this row, and it keeps only memory
        // entries stamped at or after its start. A stamp taken before the write would be older
        // than such a refresh, and the executor would drop out of its group until the next one.
        let committed_at = now_ms();
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        self.version.fetch_add(1, Ordering::Release);
        s.live
            .entry(app_name.to_owned())
            .or_default()
            .insert(address.to_owned(), committed_at);
        Ok(())
    }

    /// Removes an address (graceful executor shutdown), in either spelling.
    pub async fn remove(&self, app_name: &str, address: &str) -> StoreResult<()> {
        let bare = normalize_address(address);
        self.store.remove_registry(app_name, bare).await?;
        self.store.remove_registry(app_name, &format!("{bare}/")).await?;
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        self.version.fetch_add(1, Ordering::Release);
        if let Some(m) = s.live.get_mut(app_name) {
            m.retain(|a, _| normalize_address(a) != bare);
        }
        drop(s);
        // A process that leaves is gone; whatever registers here next is a new one, known by
        // its own uptime.
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(app_name.to_owned(), bare.to_owned()));
        Ok(())
    }

    /// The executor process last heard at `address` (either spelling) for `app_name`, if it
    /// said which it is (Chime's executors do) within the dead timeout.
    pub fn executor_process(&self, app_name: &str, address: &str) -> Option<ExecutorProcess> {
        let processes = self.processes.lock().unwrap_or_else(|p| p.into_inner());
        let known = processes.get(&(app_name.to_owned(), normalize_address(address).to_owned()))?;
        (known.last_seen > now_ms() - self.dead_ms()).then_some(known.process)
    }

    /// Reloads groups and live heartbeats; deletes dead heartbeats.
    pub async fn refresh(&self) -> StoreResult<()> {
        let now = now_ms();
        let cutoff = now - self.dead_ms();
        self.store.delete_dead_registry(cutoff).await?;
        let groups = self.store.list_groups().await?;
        let live_rows = self.store.live_registry(cutoff).await?;
        let mut live = Live::new();
        for (app, addr, at) in live_rows {
            live.entry(app).or_default().insert(addr, at);
        }
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        self.version.fetch_add(1, Ordering::Release);
        // Deleted groups must not linger here.
        self.views.lock().unwrap_or_else(|p| p.into_inner()).clear();
        keep_heartbeats_since(&mut live, &s.live, now);
        s.groups = groups.into_iter().map(|g| (g.id, g)).collect();
        s.live = live;
        drop(s);
        // Bounded by the addresses heard within the dead timeout.
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, known| known.last_seen >= cutoff);
        Ok(())
    }

    /// A group and its current addresses.
    pub fn view(&self, group_id: i64) -> Option<Arc<GroupView>> {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        // Read under the state lock: a writer bumps it while holding the write lock, so the
        // version and the state read here belong together.
        let version = self.version.load(Ordering::Acquire);
        let now = now_ms();
        let mut views = self.views.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = views.get(&group_id) {
            if c.version == version && now < c.valid_until {
                return Some(c.view.clone());
            }
        }
        let group = s.groups.get(&group_id)?.clone();
        let mut valid_until = i64::MAX;
        let addresses = match group.address_type {
            AddressType::Manual => manual_addresses(&group),
            AddressType::Auto => {
                let dead_ms = self.dead_ms();
                let cutoff = now - dead_ms;
                s.live
                    .get(&group.app_name)
                    .map(|m| {
                        one_per_executor(m.iter().filter(|(_, at)| **at > cutoff))
                            .into_iter()
                            .map(|(a, at)| {
                                valid_until = valid_until.min(at + dead_ms);
                                a
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            }
        };
        let view = Arc::new(GroupView { group, addresses });
        views.insert(
            group_id,
            CachedView {
                version,
                valid_until,
                view: view.clone(),
            },
        );
        Some(view)
    }

    /// A group by id, as last loaded.
    pub fn group(&self, id: i64) -> Option<Group> {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        s.groups.get(&id).cloned()
    }

    /// A group by app name, as last loaded.
    pub fn group_by_app(&self, app_name: &str) -> Option<Group> {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        s.groups.values().find(|g| g.app_name == app_name).cloned()
    }

    /// True when `check` holds for some group's own access token.
    pub fn any_group_token(&self, check: impl Fn(&str) -> bool) -> bool {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        s.groups.values().filter_map(|g| g.access_token.as_deref()).any(check)
    }

    /// True when some group works without an access token (`insecure_no_token`).
    pub fn any_tokenless_group(&self) -> bool {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        s.groups.values().any(|g| g.insecure_no_token)
    }

    /// The executors (any app name, without trailing slash) that heart-beat within the dead
    /// timeout.
    pub fn alive_addresses(&self) -> HashSet<String> {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        let cutoff = now_ms() - self.dead_ms();
        s.live
            .values()
            .flat_map(|m| m.iter())
            .filter(|(_, at)| **at > cutoff)
            .map(|(a, _)| normalize_address(a).to_owned())
            .collect()
    }

    /// The executors of a group (or of every group), with their last heartbeat.
    pub fn executors(&self, group_id: Option<i64>) -> Vec<(Group, Vec<ExecutorEntry>)> {
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        let cutoff = now_ms() - self.dead_ms();
        // Locked after the state, as nowhere the other way round (a heartbeat lets go of the
        // processes before it takes the state).
        let processes = self.processes.lock().unwrap_or_else(|p| p.into_inner());
        let handlers = |app: &str, address: &str| -> Vec<String> {
            processes
                .get(&(app.to_owned(), address.to_owned()))
                .filter(|known| known.last_seen > cutoff)
                .map(|known| known.handlers.clone())
                .unwrap_or_default()
        };
        let mut groups: Vec<&Group> = s
            .groups
            .values()
            .filter(|g| group_id.is_none_or(|id| g.id == id))
            .collect();
        groups.sort_by_key(|g| g.id);
        groups
            .into_iter()
            .map(|g| {
                let live = s.live.get(&g.app_name);
                let entries = match g.address_type {
                    AddressType::Manual => manual_addresses(g)
                        .iter()
                        .map(|a| ExecutorEntry {
                            app_name: g.app_name.clone(),
                            address: normalize_address(a).to_owned(),
                            handlers: handlers(&g.app_name, normalize_address(a)),
                            answers: None,
                            linked: is_link_address(a),
                            last_heartbeat: live
                                .and_then(|m| {
                                    m.iter()
                                        .filter(|(r, _)| normalize_address(r) == normalize_address(a))
                                        .map(|(_, at)| *at)
                                        .max()
                                })
                                .unwrap_or(0),
                            source: "manual".to_owned(),
                        })
                        .collect(),
                    AddressType::Auto => live
                        .map(|m| {
                            one_per_executor(m.iter().filter(|(_, at)| **at > cutoff))
                                .into_iter()
                                .map(|(a, at)| ExecutorEntry {
                                    app_name: g.app_name.clone(),
                                    address: normalize_address(&a).to_owned(),
                                    handlers: handlers(&g.app_name, normalize_address(&a)),
                                    answers: None,
                                    linked: is_link_address(&a),
                                    last_heartbeat: at,
                                    source: "registry".to_owned(),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                (g.clone(), entries)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(entries: &[(&str, &str, i64)]) -> Live {
        let mut live = Live::new();
        for (app, address, at) in entries {
            live.entry((*app).to_owned())
                .or_default()
                .insert((*address).to_owned(), *at);
        }
        live
    }

    #[test]
    fn addresses_keep_their_spelling_once_per_executor() {
        let m = live(&[
            ("app", "http://b:1/", 10),
            ("app", "http://a:1", 5),
            ("app", "http://a:1/", 7),
            ("app", "http://c:1", 3),
        ]);
        assert_eq!(
            one_per_executor(m["app"].iter()),
            [
                ("http://a:1/".to_owned(), 7),
                ("http://b:1/".to_owned(), 10),
                ("http://c:1".to_owned(), 3)
            ],
            "the spelling with the newest heartbeat wins; the others are kept as registered"
        );
    }

    #[test]
    fn a_process_starts_at_its_earliest_estimate_until_another_replaces_it() {
        let mut processes = Processes::new();
        let key = || ("app".to_owned(), "http://a:1".to_owned());
        let beat = |id: &str, uptime_ms| ExecutorInstance {
            id: id.to_owned(),
            uptime_ms,
            handlers: Vec::new(),
        };
        // Started at 1,000: the first registration was 50 ms on the way, a later one 10 ms.
        note_process(&mut processes, key(), &beat("one", 0), 1_050);
        note_process(&mut processes, key(), &beat("one", 30_000), 31_010);
        note_process(&mut processes, key(), &beat("one", 60_000), 61_200);
        let known = &processes[&key()];
        assert_eq!(
            (known.process, known.last_seen),
            (
                ExecutorProcess {
                    started_at: 1_010,
                    first_seen: 1_050
                },
                61_200
            )
        );
        // A restart: a new id with a short uptime.
        note_process(&mut processes, key(), &beat("two", 500), 70_000);
        assert_eq!(
            processes[&key()].process,
            ExecutorProcess {
                started_at: 69_500,
                first_seen: 70_000
            }
        );
        // An uptime beyond any clock does not wrap around.
        note_process(&mut processes, key(), &beat("three", u64::MAX), 80_000);
        assert_eq!(processes[&key()].process.started_at, 80_000 - i64::MAX);
    }

    #[test]
    fn the_handlers_are_those_of_the_last_registration() {
        let mut processes = Processes::new();
        let key = || ("app".to_owned(), "http://a:1".to_owned());
        let beat = |id: &str, handlers: &[&str]| ExecutorInstance {
            id: id.to_owned(),
            uptime_ms: 0,
            handlers: handlers.iter().map(|h| (*h).to_owned()).collect(),
        };
        note_process(&mut processes, key(), &beat("one", &["a", "b"]), 1_000);
        assert_eq!(processes[&key()].handlers, ["a", "b"]);
        // The same process with a handler more (registered at run time), then a new process.
        note_process(&mut processes, key(), &beat("one", &["a", "b", "c"]), 2_000);
        assert_eq!(processes[&key()].handlers, ["a", "b", "c"]);
        note_process(&mut processes, key(), &beat("two", &["z"]), 3_000);
        assert_eq!(processes[&key()].handlers, ["z"]);
    }

    #[test]
    fn a_heartbeat_during_the_snapshot_survives_the_refresh() {
        // The snapshot was read at 1,000 and has two executors; a third registered at 1,005,
        // after its row was read, and the first beat again at 1,010.
        let mut snapshot = live(&[("app", "http://a", 990), ("app", "http://b", 995)]);
        let memory = live(&[
            ("app", "http://a", 1_010),
            ("app", "http://b", 995),
            ("app", "http://c", 1_005),
            ("other", "http://old", 400),
        ]);
        keep_heartbeats_since(&mut snapshot, &memory, 1_000);
        assert_eq!(
            snapshot,
            live(&[
                ("app", "http://a", 1_010),
                ("app", "http://b", 995),
                ("app", "http://c", 1_005)
            ]),
            "new and newer heartbeats kept; an address only memory remembers from before the \
             snapshot (removed by another admin, or dead) is not resurrected"
        );
    }
}
