//! Executor heartbeats and each group's current address list.
//!
//! Addresses are kept as the executor registered them (`http://ip:port/` from Java executors,
//! `http://ip:port` from pyxxl): XXL-JOB's CONSISTENT_HASH hashes, and FIRST/LAST sort, those
//! exact strings, so the same job lands on the same executor as under XXL-JOB. Two spellings of
//! one executor (with and without the slash) count once. Calls use the address without slash.
//!
//! Heartbeats (`/api/registry`) are written to the `registry` table and applied to an
//! in-memory directory at once. A refresh loop reloads groups and heartbeats from the database
//! every few seconds (so several admins share what executors told any of them). Groups are
//! reloaded sooner when their version in the database moves (`store::groups`, read every
//! [`GROUP_CHANGE_POLL`]), and a send that meets a group or an executor this admin does not know
//! reloads both before it fails the run ([`Directory::reload_for_unknown`]).
//!
//! Whether an executor is alive is judged by this admin's up-clock ([`clock`]), never by the
//! wall clock: an executor is dead once the dead timeout of *up time* has passed since the
//! admin last heard of it — a heartbeat it received, or the executor's row in the database seen
//! changed by a refresh (another admin received one) — or since the admin's last disruption
//! (its start, a pause, the database back, a wall-clock step), whichever is later. So an
//! executor is never taken for dead because the admin itself could not hear it. Rows the
//! database holds at start count as heard at start. The refresh deletes the rows it judged dead,
//! each only as it read it (app name, address and `updated_at`): a heartbeat written meanwhile
//! (by any admin) keeps its row. An executor that stopped beating leaves its group's list after
//! at most `dead_timeout` of up time plus one refresh.
//!
//! Chime's executors also say in each registration which process they are (an instance id and
//! its uptime). The directory remembers, per app name and address, the process last heard
//! and when it started by this admin's clock ([`Directory::executor_process`]): a run sent to
//! that address before then was accepted by an earlier process, which is gone. This is kept in
//! memory only: every executor registers with every admin it knows (XXL-JOB's executors do the
//! same), so each admin hears it for itself; an admin that just started knows nothing yet and
//! so fails nothing on this ground until the next heartbeat. A step of the wall clock makes
//! the start estimates incomparable with run times stamped before it: they are forgotten, and
//! learnt again from the next registrations.

pub mod clock;

use crate::model::{now_ms, AddressType, ExecutorEntry, Group};
use crate::store::{Store, StoreError, StoreResult};
use chime_protocol::link::is_link_address;
use chime_protocol::paths::normalize_address;
use chime_protocol::ExecutorInstance;
use clock::{alive, alive_until, TickEvent, UpClock, UpTime};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// What the directory knows of one registered address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Heard {
    /// Its row's `updated_at`: the wall-clock time (of the admin that received it) of the last
    /// heartbeat the database holds. Shown as the last heartbeat, and compared from one refresh
    /// to the next to tell a new heartbeat from an old one — never with a clock.
    updated_at: i64,
    /// When this admin last heard of the executor, up-clock ms: it received a heartbeat, or saw
    /// the row's `updated_at` changed.
    seen: i64,
    /// The number of the local heartbeat that recorded it ([`Directory::beats`]), 0 when the
    /// database told.
    beat: u64,
}

/// app name → address → what was heard.
type Live = HashMap<String, BTreeMap<String, Heard>>;

/// A registry row: `(app name, address, updated_at)`.
type Row = (String, String, i64);

/// The live set a refresh leaves, from the rows the database holds (`rows`) and what memory
/// knew (`memory`), at up time `up`; and the rows to delete, judged dead.
///
/// A row whose `updated_at` is what memory knew keeps the time it was heard; one that changed
/// (another admin recorded a heartbeat) or is new counts as heard now. An address only memory
/// knows stays if a heartbeat recorded it after the snapshot was started (`beats_before`: the
/// count of local heartbeats then) — its row may have been written after the snapshot was
/// read; without this, a freshly registered executor would vanish from its group until the
/// next refresh. Otherwise it is gone (removed, or deleted as dead by another admin).
fn merge_refresh(
    rows: Vec<Row>,
    memory: &Live,
    beats_before: u64,
    up: UpTime,
    dead_timeout: Duration,
) -> (Live, Vec<Row>) {
    let mut live = Live::new();
    for (app, address, updated_at) in rows {
        let known = memory.get(&app).and_then(|m| m.get(&address));
        let heard = match known {
            // Recorded here after the snapshot was started: newer than the row read.
            Some(h) if h.beat > beats_before => *h,
            Some(h) if h.updated_at == updated_at => *h,
            Some(h) => Heard {
                updated_at,
                seen: h.seen.max(up.now),
                beat: 0,
            },
            None => Heard {
                updated_at,
                seen: up.now,
                beat: 0,
            },
        };
        live.entry(app).or_default().insert(address, heard);
    }
    for (app, addresses) in memory {
        for (address, h) in addresses.iter().filter(|(_, h)| h.beat > beats_before) {
            live.entry(app.clone())
                .or_default()
                .entry(address.clone())
                .or_insert(*h);
        }
    }
    let mut dead = Vec::new();
    for (app, addresses) in &mut live {
        addresses.retain(|address, h| {
            let keep = alive(h.seen, up.now, up.disrupted, dead_timeout);
            if !keep {
                dead.push((app.clone(), address.clone(), h.updated_at));
            }
            keep
        });
    }
    live.retain(|_, addresses| !addresses.is_empty());
    (live, dead)
}

/// Applies a list of groups read under `version`, unless a list read under a newer version was
/// applied already (two loads may finish in either order).
fn set_groups(s: &mut State, version: i64, groups: Vec<Group>) {
    if version >= s.groups_version {
        s.groups = groups.into_iter().map(|g| (g.id, g)).collect();
        s.groups_version = version;
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

/// One spelling per executor: of addresses that differ only by a trailing slash, the one heard
/// last (an executor upgraded to send the other spelling keeps its old row until it expires).
/// Returns `(registered address, what was heard)` sorted by address.
fn one_per_executor<'a>(live: impl Iterator<Item = (&'a String, &'a Heard)>) -> Vec<(String, Heard)> {
    let mut newest: HashMap<&str, (&String, Heard)> = HashMap::new();
    for (address, h) in live {
        let slot = newest.entry(normalize_address(address)).or_insert((address, *h));
        let order = |h: &Heard| (h.seen, h.updated_at);
        if order(h) > order(&slot.1) || (order(h) == order(&slot.1) && address < slot.0) {
            *slot = (address, *h);
        }
    }
    let mut out: Vec<(String, Heard)> = newest.into_values().map(|(a, h)| (a.clone(), h)).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
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
    /// only makes it later than the truth, never earlier. Comparable with the times runs were
    /// sent at ([`Directory::wall_stepped_at`] says since when).
    pub started_at: i64,
    /// When this admin first heard of the process, up-clock ms ([`Directory::up_time`]).
    pub first_seen: i64,
}

/// One process as remembered: its id, and what [`ExecutorProcess`] says of it.
#[derive(Debug, Clone)]
struct KnownProcess {
    id: String,
    process: ExecutorProcess,
    /// Its last registration, up-clock ms: a process silent for the dead timeout is forgotten.
    last_seen: i64,
    /// The handler names its last registration listed.
    handlers: Vec<String>,
}

/// Processes by app name and address (without trailing slash).
type Processes = HashMap<(String, String), KnownProcess>;

/// Records that `instance` registered at `key`, arriving at `arrived` (epoch ms) and up-clock
/// time `seen`: a new id replaces what was known (the executor at that address restarted); the
/// same id keeps the earliest start estimate (the registration with the least delay on the way
/// comes closest to the truth).
fn note_process(
    processes: &mut Processes,
    key: (String, String),
    instance: &ExecutorInstance,
    arrived: i64,
    seen: i64,
) {
    let uptime = i64::try_from(instance.uptime_ms).unwrap_or(i64::MAX);
    let started_at = arrived.saturating_sub(uptime);
    match processes.get_mut(&key) {
        Some(known) if known.id == instance.id => {
            known.process.started_at = known.process.started_at.min(started_at);
            known.last_seen = known.last_seen.max(seen);
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
                        first_seen: seen,
                    },
                    last_seen: seen,
                    handlers: instance.handlers.clone(),
                },
            );
        }
    }
}

#[derive(Debug)]
struct State {
    groups: HashMap<i64, Group>,
    /// The version of the groups (`Store::group_change_version`) read before `groups` were:
    /// a list read under an older version than this is not applied (it may miss a change
    /// another load has applied already).
    groups_version: i64,
    /// app name → address → what was heard.
    live: Live,
}

impl Default for State {
    fn default() -> State {
        State {
            groups: HashMap::new(),
            groups_version: i64::MIN,
            live: Live::new(),
        }
    }
}

/// Fewest time between two reloads for a group or an executor a send met and this admin did
/// not know ([`Directory::reload_for_unknown`]): runs of a group that does not exist (or of a
/// group without executors) cost the database at most one reload a second, however many.
pub const UNKNOWN_RELOAD_GAP: Duration = Duration::from_secs(1);

/// How often the version of the groups is read (`monitor::run_registry_refresh`).
pub const GROUP_CHANGE_POLL: Duration = Duration::from_millis(500);

/// A read of the version of the groups still unanswered after this counts as the database
/// failing, for the up-clock: connections that hang (a server gone without a word, connections
/// refused while the pool keeps retrying them for its 30 s) return no error for a long time, and
/// heartbeats wait as long. Far above the round trip of that one-row read on a busy database.
pub const DATABASE_STALL: Duration = Duration::from_secs(2);

/// A computed [`GroupView`] and how long it holds.
#[derive(Debug)]
struct CachedView {
    /// [`Directory::version`] when it was computed.
    version: u64,
    /// Up-clock ms at which its oldest heartbeat turns dead and the list would change.
    valid_until: i64,
    view: Arc<GroupView>,
}

/// The admin's view of groups and their live executors.
#[derive(Debug)]
pub struct Directory {
    store: Store,
    dead_timeout: Duration,
    state: RwLock<State>,
    /// Bumped (under the state's write lock) by every change to groups or heartbeats, and by a
    /// disruption of the up-clock (which makes executors live longer).
    version: AtomicU64,
    /// Views by group id. Every run sent asks for its group's view; building it (cloning the
    /// group, filtering, de-duplicating and sorting the addresses) for each one was measurable
    /// at tens of thousands of runs a second, and the answer changes only when the state does
    /// or a heartbeat in it grows too old.
    views: Mutex<HashMap<i64, CachedView>>,
    /// The process last heard at each address (Chime executors only). Apart from `state`: it
    /// changes on heartbeats, and the group views do not depend on it.
    processes: Mutex<Processes>,
    /// This admin's up time ([`clock`]), ticked by [`Directory::tick`].
    clock: Mutex<UpClock>,
    /// The monotonic clock's origin for the up-clock.
    origin: Instant,
    /// Local heartbeats recorded so far: a refresh keeps what those after its start recorded.
    beats: AtomicU64,
    /// When the last reload for an unknown group or executor started; held during one, so
    /// that sends meeting the same unknown wait for it instead of reloading too.
    unknown: tokio::sync::Mutex<Option<Instant>>,
    /// Reloads made for unknown groups or executors.
    unknown_reloads: AtomicU64,
    /// When the read of the version of the groups now under way started, if one is.
    probe_since: Mutex<Option<Instant>>,
}

impl Directory {
    /// An empty directory; call [`Directory::refresh`] to load it. Its up-clock starts now.
    pub fn new(store: Store, dead_timeout: Duration) -> Directory {
        Directory {
            store,
            dead_timeout,
            state: RwLock::new(State::default()),
            version: AtomicU64::new(0),
            views: Mutex::new(HashMap::new()),
            processes: Mutex::new(Processes::new()),
            clock: Mutex::new(UpClock::new(0, now_ms())),
            origin: Instant::now(),
            beats: AtomicU64::new(0),
            unknown: tokio::sync::Mutex::new(None),
            unknown_reloads: AtomicU64::new(0),
            probe_since: Mutex::new(None),
        }
    }

    fn clock(&self) -> std::sync::MutexGuard<'_, UpClock> {
        self.clock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// This admin's up time now and at its last disruption ([`clock`]).
    pub fn up_time(&self) -> UpTime {
        self.clock().read()
    }

    /// The wall-clock time at which this admin last saw its wall clock step, 0 if never: run
    /// times stamped before it are not comparable with [`ExecutorProcess::started_at`].
    pub fn wall_stepped_at(&self) -> i64 {
        self.clock().wall_stepped_at()
    }

    /// Advances the up-clock; called every [`clock::TICK`] (`monitor::run_registry_refresh`).
    pub fn tick(&self) {
        let stalled = self
            .probe_since
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|since| since.elapsed() > DATABASE_STALL);
        if stalled {
            self.clock().database_failed();
        }
        let mono = self.origin.elapsed().as_millis() as i64;
        let event = self.clock().tick(mono, now_ms());
        match event {
            TickEvent::Counted => return,
            TickEvent::Paused => {
                tracing::warn!(
                    "this admin was paused or stalled: every executor gets a full dead timeout to be heard again"
                );
            }
            TickEvent::WallStepped(by_ms) => {
                tracing::warn!(
                    by_ms,
                    "the wall clock stepped: every executor gets a full dead timeout to be heard again, and \
                     executor start times are learnt anew"
                );
                self.processes.lock().unwrap_or_else(|p| p.into_inner()).clear();
            }
        }
        // Executors live longer now: cached views must be computed again.
        let _s = self.state.write().unwrap_or_else(|p| p.into_inner());
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Records that the database could not be reached (`e` says whether that was it): no up
    /// time counts until it answers again.
    fn database_failed(&self, e: &StoreError) {
        if e.is_unreachable() {
            self.clock().database_failed();
        }
    }

    /// Passes on the result of a read of the registry or the groups, recording whether the
    /// database failed ([`Directory::database_failed`]) or answered again.
    fn database_read<T>(&self, read: StoreResult<T>) -> StoreResult<T> {
        let read = read.inspect_err(|e| self.database_failed(e))?;
        if self.clock().database_answered() {
            tracing::info!("the database answers again: every executor gets a full dead timeout to be heard again");
        }
        Ok(read)
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
        if let Err(e) = self.store.upsert_registry(app_name, address, arrived).await {
            self.database_failed(&e);
            return Err(e);
        }
        // Numbered after the write committed, not before: a refresh that began while the write
        // was in flight may have read a snapshot without this row, and it keeps only memory
        // entries numbered after its start. A number taken before the write could be older
        // than such a refresh, and the executor would drop out of its group until the next one.
        let beat = self.beats.fetch_add(1, Ordering::AcqRel) + 1;
        let seen = self.up_time().now;
        let key = (app_name.to_owned(), normalize_address(address).to_owned());
        let mut processes = self.processes.lock().unwrap_or_else(|p| p.into_inner());
        match instance {
            Some(instance) => note_process(&mut processes, key, instance, arrived, seen),
            // Whatever serves the address now does not say which process it is (an executor
            // of another kind took it over): what the last one said no longer holds.
            None => {
                processes.remove(&key);
            }
        }
        drop(processes);
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        self.version.fetch_add(1, Ordering::Release);
        s.live.entry(app_name.to_owned()).or_default().insert(
            address.to_owned(),
            Heard {
                updated_at: arrived,
                seen,
                beat,
            },
        );
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
    /// said which it is (Chime's executors do) and is alive by the rule of [`clock::alive`].
    pub fn executor_process(&self, app_name: &str, address: &str) -> Option<ExecutorProcess> {
        let up = self.up_time();
        let processes = self.processes.lock().unwrap_or_else(|p| p.into_inner());
        let known = processes.get(&(app_name.to_owned(), normalize_address(address).to_owned()))?;
        alive(known.last_seen, up.now, up.disrupted, self.dead_timeout).then_some(known.process)
    }

    /// Reloads groups and heartbeats; deletes the heartbeats of executors judged dead.
    pub async fn refresh(&self) -> StoreResult<()> {
        let beats_before = self.beats.load(Ordering::Acquire);
        let read = async {
            // Every row, whatever its wall-clock age: only this admin's up-clock says which
            // are dead (a bounded set: rows judged dead are deleted).
            let rows = self.store.live_registry(i64::MIN).await?;
            // Read before the groups: a change committed in between raises it past this, and
            // is loaded by the next look at it.
            let version = self.store.group_change_version().await?;
            let groups = self.store.list_groups().await?;
            Ok((rows, version, groups))
        };
        let (rows, version, groups) = self.database_read(read.await)?;
        let up = self.up_time();
        let dead = {
            let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
            let (live, dead) = merge_refresh(rows, &s.live, beats_before, up, self.dead_timeout);
            self.version.fetch_add(1, Ordering::Release);
            // Deleted groups must not linger here.
            self.views.lock().unwrap_or_else(|p| p.into_inner()).clear();
            set_groups(&mut s, version, groups);
            s.live = live;
            dead
        };
        // Bounded by the addresses heard within the dead timeout.
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, known| alive(known.last_seen, up.now, up.disrupted, self.dead_timeout));
        for (app, address, updated_at) in dead {
            // Only the row as read: a heartbeat written since (by any admin) keeps it.
            if self.store.delete_registry_row(&app, &address, updated_at).await? {
                tracing::info!(app, address, "executor left its group: not heard for the dead timeout");
            }
        }
        Ok(())
    }

    /// Reloads the groups if their version in the database moved since they were last loaded
    /// (a group was created, changed or deleted, through any admin); true if it did. Read every
    /// [`GROUP_CHANGE_POLL`]: one small query.
    pub async fn reload_groups_if_changed(&self) -> StoreResult<bool> {
        *self.probe_since.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        let read = self.store.group_change_version().await;
        *self.probe_since.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let version = self.database_read(read)?;
        let known = self.state.read().unwrap_or_else(|p| p.into_inner()).groups_version;
        if version == known {
            return Ok(false);
        }
        let groups = self.store.list_groups().await?;
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        self.version.fetch_add(1, Ordering::Release);
        self.views.lock().unwrap_or_else(|p| p.into_inner()).clear();
        set_groups(&mut s, version, groups);
        Ok(true)
    }

    /// Reloads groups and heartbeats because a send met a group or an executor this admin did
    /// not know at `met` — one created, or registered, through another admin a moment ago —
    /// before the run is failed for it. One reload at a time, and at most one every
    /// [`UNKNOWN_RELOAD_GAP`]: a caller that waited for another's reload returns without one
    /// when `known` now holds (that reload found what it needed), or when that reload started
    /// after `met` (it read whatever was committed before). A flood of unknown ids is a few
    /// reloads, not a flood of queries.
    pub async fn reload_for_unknown(&self, met: Instant, known: impl Fn(&Directory) -> bool) {
        let mut last = self.unknown.lock().await;
        if known(self) {
            return;
        }
        if let Some(started) = *last {
            if started >= met {
                return;
            }
            tokio::time::sleep_until((started + UNKNOWN_RELOAD_GAP).into()).await;
        }
        *last = Some(Instant::now());
        self.unknown_reloads.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.refresh().await {
            tracing::warn!(error = %e, "reloading groups and executors for a send failed");
        }
    }

    /// How many reloads [`Directory::reload_for_unknown`] made.
    pub fn unknown_reloads(&self) -> u64 {
        self.unknown_reloads.load(Ordering::Relaxed)
    }

    /// A group by id, reloaded from the database first ([`Directory::reload_for_unknown`]) if
    /// this admin does not know it.
    pub async fn group_or_reload(&self, id: i64) -> Option<Group> {
        let met = Instant::now();
        if let Some(g) = self.group(id) {
            return Some(g);
        }
        self.reload_for_unknown(met, |d| d.group(id).is_some()).await;
        self.group(id)
    }

    /// A group and its current addresses.
    pub fn view(&self, group_id: i64) -> Option<Arc<GroupView>> {
        let up = self.up_time();
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        // Read under the state lock: a writer bumps it while holding the write lock, so the
        // version and the state read here belong together.
        let version = self.version.load(Ordering::Acquire);
        let mut views = self.views.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = views.get(&group_id) {
            if c.version == version && up.now < c.valid_until {
                return Some(c.view.clone());
            }
        }
        let group = s.groups.get(&group_id)?.clone();
        let mut valid_until = i64::MAX;
        let addresses = match group.address_type {
            AddressType::Manual => manual_addresses(&group),
            AddressType::Auto => {
                let dead_timeout = self.dead_timeout;
                s.live
                    .get(&group.app_name)
                    .map(|m| {
                        one_per_executor(
                            m.iter()
                                .filter(|(_, h)| alive(h.seen, up.now, up.disrupted, dead_timeout)),
                        )
                        .into_iter()
                        .map(|(a, h)| {
                            valid_until = valid_until.min(alive_until(h.seen, up.disrupted, dead_timeout));
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

    /// Whether this admin has been up, with its database and without a pause or a wall-clock
    /// step, for a dead timeout: before that, a group without a live executor may simply not
    /// have been heard yet.
    pub fn settled(&self) -> bool {
        self.up_time().settled_for(self.dead_timeout)
    }

    /// How long an executor may go unheard (up time) before it is taken for gone.
    pub fn dead_timeout(&self) -> Duration {
        self.dead_timeout
    }

    /// The registered executors (any app name, without trailing slash) alive by the rule of
    /// [`clock::alive`] — or `None` while this admin has not been up, with its database and
    /// without a pause or a wall-clock step, for a dead timeout: until then an executor it has
    /// not heard of may simply not have been heard yet, so none may be taken for gone.
    pub fn alive_addresses(&self) -> Option<HashSet<String>> {
        let up = self.up_time();
        if !up.settled_for(self.dead_timeout) {
            return None;
        }
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        Some(
            s.live
                .values()
                .flat_map(|m| m.iter())
                .filter(|(_, h)| alive(h.seen, up.now, up.disrupted, self.dead_timeout))
                .map(|(a, _)| normalize_address(a).to_owned())
                .collect(),
        )
    }

    /// The executors of a group (or of every group), with their last heartbeat.
    pub fn executors(&self, group_id: Option<i64>) -> Vec<(Group, Vec<ExecutorEntry>)> {
        let up = self.up_time();
        let dead_timeout = self.dead_timeout;
        let is_alive = |seen: i64| alive(seen, up.now, up.disrupted, dead_timeout);
        let s = self.state.read().unwrap_or_else(|p| p.into_inner());
        // Locked after the state, as nowhere the other way round (a heartbeat lets go of the
        // processes before it takes the state).
        let processes = self.processes.lock().unwrap_or_else(|p| p.into_inner());
        let handlers = |app: &str, address: &str| -> Vec<String> {
            processes
                .get(&(app.to_owned(), address.to_owned()))
                .filter(|known| is_alive(known.last_seen))
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
                                        .map(|(_, h)| h.updated_at)
                                        .max()
                                })
                                .unwrap_or(0),
                            source: "manual".to_owned(),
                        })
                        .collect(),
                    AddressType::Auto => live
                        .map(|m| {
                            one_per_executor(m.iter().filter(|(_, h)| is_alive(h.seen)))
                                .into_iter()
                                .map(|(a, h)| ExecutorEntry {
                                    app_name: g.app_name.clone(),
                                    address: normalize_address(&a).to_owned(),
                                    handlers: handlers(&g.app_name, normalize_address(&a)),
                                    answers: None,
                                    linked: is_link_address(&a),
                                    last_heartbeat: h.updated_at,
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

    const DEAD: Duration = Duration::from_secs(90);

    fn heard(updated_at: i64, seen: i64) -> Heard {
        heard_beat(updated_at, seen, 0)
    }

    fn heard_beat(updated_at: i64, seen: i64, beat: u64) -> Heard {
        Heard { updated_at, seen, beat }
    }

    fn live(entries: &[(&str, &str, Heard)]) -> Live {
        let mut live = Live::new();
        for (app, address, h) in entries {
            live.entry((*app).to_owned())
                .or_default()
                .insert((*address).to_owned(), *h);
        }
        live
    }

    fn rows(entries: &[(&str, &str, i64)]) -> Vec<Row> {
        entries
            .iter()
            .map(|(app, address, at)| ((*app).to_owned(), (*address).to_owned(), *at))
            .collect()
    }

    #[test]
    fn addresses_keep_their_spelling_once_per_executor() {
        let m = live(&[
            ("app", "http://b:1/", heard(10, 10)),
            ("app", "http://a:1", heard(5, 5)),
            ("app", "http://a:1/", heard(7, 7)),
            ("app", "http://c:1", heard(3, 3)),
        ]);
        let one: Vec<(String, i64)> = one_per_executor(m["app"].iter())
            .into_iter()
            .map(|(a, h)| (a, h.updated_at))
            .collect();
        assert_eq!(
            one,
            [
                ("http://a:1/".to_owned(), 7),
                ("http://b:1/".to_owned(), 10),
                ("http://c:1".to_owned(), 3)
            ],
            "the spelling heard last wins; the others are kept as registered"
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
        // Up-clock times (the last argument) are apart from the wall clock's.
        note_process(&mut processes, key(), &beat("one", 0), 1_050, 50);
        note_process(&mut processes, key(), &beat("one", 30_000), 31_010, 30_010);
        note_process(&mut processes, key(), &beat("one", 60_000), 61_200, 60_200);
        let known = &processes[&key()];
        assert_eq!(
            (known.process, known.last_seen),
            (
                ExecutorProcess {
                    started_at: 1_010,
                    first_seen: 50
                },
                60_200
            )
        );
        // A restart: a new id with a short uptime.
        note_process(&mut processes, key(), &beat("two", 500), 70_000, 69_000);
        assert_eq!(
            processes[&key()].process,
            ExecutorProcess {
                started_at: 69_500,
                first_seen: 69_000
            }
        );
        // An uptime beyond any clock does not wrap around.
        note_process(&mut processes, key(), &beat("three", u64::MAX), 80_000, 79_000);
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
        note_process(&mut processes, key(), &beat("one", &["a", "b"]), 1_000, 1);
        assert_eq!(processes[&key()].handlers, ["a", "b"]);
        // The same process with a handler more (registered at run time), then a new process.
        note_process(&mut processes, key(), &beat("one", &["a", "b", "c"]), 2_000, 2);
        assert_eq!(processes[&key()].handlers, ["a", "b", "c"]);
        note_process(&mut processes, key(), &beat("two", &["z"]), 3_000, 3);
        assert_eq!(processes[&key()].handlers, ["z"]);
    }

    #[test]
    fn a_heartbeat_during_the_snapshot_survives_the_refresh() {
        // The snapshot was started after local heartbeat 7 and has two executors; a third
        // registered here (heartbeat 8) after its row was read, and the first beat again (9).
        let up = UpTime {
            now: 100_000,
            disrupted: 0,
        };
        let snapshot = rows(&[("app", "http://a", 990), ("app", "http://b", 995)]);
        let memory = live(&[
            ("app", "http://a", heard_beat(1_010, 100_000, 9)),
            ("app", "http://b", heard(995, 95_000)),
            ("app", "http://c", heard_beat(1_005, 99_000, 8)),
            ("other", "http://old", heard_beat(400, 20_000, 3)),
        ]);
        let (merged, dead) = merge_refresh(snapshot, &memory, 7, up, DEAD);
        assert_eq!(
            merged,
            live(&[
                ("app", "http://a", heard_beat(1_010, 100_000, 9)),
                ("app", "http://b", heard(995, 95_000)),
                ("app", "http://c", heard_beat(1_005, 99_000, 8)),
            ]),
            "new and newer heartbeats kept; an address only memory remembers from before the \
             snapshot (removed by another admin, or dead) is not resurrected"
        );
        assert!(dead.is_empty());
    }

    #[test]
    fn a_row_counts_as_heard_when_its_heartbeat_changed() {
        let up = UpTime {
            now: 200_000,
            disrupted: 0,
        };
        let memory = live(&[
            ("app", "http://same", heard(1_000, 150_000)),
            ("app", "http://beat-elsewhere", heard(1_000, 150_000)),
        ]);
        // Another admin recorded a heartbeat of the second (with a wall clock behind this
        // admin's: only the change counts); the third is new here.
        let snapshot = rows(&[
            ("app", "http://same", 1_000),
            ("app", "http://beat-elsewhere", 900),
            ("app", "http://new", 5),
        ]);
        let (merged, dead) = merge_refresh(snapshot, &memory, 0, up, DEAD);
        assert_eq!(
            merged,
            live(&[
                ("app", "http://same", heard(1_000, 150_000)),
                ("app", "http://beat-elsewhere", heard(900, 200_000)),
                ("app", "http://new", heard(5, 200_000)),
            ])
        );
        assert!(dead.is_empty());
    }

    #[test]
    fn a_row_not_heard_for_the_dead_timeout_of_up_time_is_deleted_as_read() {
        let memory = live(&[
            ("app", "http://quiet", heard(1_000, 10_000)),
            ("app", "http://beating", heard(1_000, 10_000)),
        ]);
        let snapshot = || rows(&[("app", "http://quiet", 1_000), ("app", "http://beating", 2_000)]);
        // 90 s of up time after it was heard: dead, and deleted with the `updated_at` read.
        let up = UpTime {
            now: 100_000,
            disrupted: 0,
        };
        let (merged, dead) = merge_refresh(snapshot(), &memory, 0, up, DEAD);
        assert_eq!(merged, live(&[("app", "http://beating", heard(2_000, 100_000))]));
        assert_eq!(dead, rows(&[("app", "http://quiet", 1_000)]));
        // The same silence across a disruption 30 s ago (the admin paused, its database away,
        // or restarted — a new admin heard it at its start): alive for a dead timeout more.
        let up = UpTime {
            now: 100_000,
            disrupted: 70_000,
        };
        let (merged, dead) = merge_refresh(snapshot(), &memory, 0, up, DEAD);
        assert_eq!(merged["app"].len(), 2, "{merged:?}");
        assert!(dead.is_empty());
    }
}
