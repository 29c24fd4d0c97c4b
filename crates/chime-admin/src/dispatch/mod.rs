//! Sending runs to executors: route → `POST /run` → the trigger result goes to the results
//! writer.
//!
//! Each run is sent from its own task. Routing holds no permit; its probes (FAILOVER,
//! BUSYOVER) take one each from a gate of their own. The send then waits for a permit of the
//! chosen executor and only after that for a global one ([`gate::Gate`]). So runs queued for a
//! slow or hung executor wait without holding anything another executor could use: at most
//! `--per-executor-concurrency` sends are on the wire to one executor and at most
//! `--dispatch-concurrency` in total (and as many probes).
//!
//! Where admins share a database, each run is marked in it as being sent just before it goes
//! out ([`fence`]), so that an admin which lost a partition's lease cannot send its runs too.

pub mod client;
pub mod fence;
pub mod gate;
pub mod network_guard;
pub mod route;

use crate::metrics::Metrics;
use crate::model::{now_ms, Job};
use crate::pipeline::flow_limits::FlowLimits;
use crate::pipeline::partitions::Partitions;
use crate::pipeline::results_queue::ResultMsg;
use crate::pipeline::results_queue::ResultsQueue;
use crate::pipeline::run_ids::RunIds;
use crate::registry::{Directory, GroupView};
use crate::run::WheelEntry;
use crate::store::{NewRun, RunPayload, RunTicket, Slots, Store, TriggerOutcome};
use chime_protocol::paths::normalize_address;
use chime_protocol::{RouteStrategy, TriggerParam, TriggerType};
use client::{ExecutorClient, Target};
use fence::{Mark, SendFence};
use gate::{Gate, Pass};
use route::Router;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What sending runs works with: shared by every send task.
#[derive(Debug)]
pub struct Dispatcher {
    /// Where broadcast shards are created.
    pub(crate) store: Store,
    /// Each group's current executors.
    pub(crate) directory: Arc<Directory>,
    /// Sends, failures and lateness are counted here.
    pub(crate) metrics: Arc<Metrics>,
    /// The executor client.
    pub(crate) client: ExecutorClient,
    /// The state of the stateful route strategies.
    pub(crate) router: Router,
    /// Bounds concurrent sends, per executor and in total.
    pub(crate) gate: Gate,
    /// The same bounds for the probes of routing (`/beat`, `/idleBeat`), shared with the
    /// lost-run sweep and kept apart from sends, so that a probe, a quick question, never queues
    /// behind a slow executor's backlog of sends.
    pub(crate) probe_gate: Arc<Gate>,
    /// The partitions this admin schedules: a scheduled run of another is not sent.
    pub(crate) partitions: Arc<Partitions>,
    /// Runs in flight: broadcast shards join them, runs left unsent leave them.
    pub(crate) inflight: Arc<RunIds>,
    /// Runs withdrawn before their send (a stopped workflow instance's, a retry whose failed
    /// run succeeded after all): not sent.
    pub(crate) withdrawn: Arc<RunIds>,
    /// Where trigger results go.
    pub(crate) results: ResultsQueue,
    /// Marks each run as being sent before it goes out; `None` on SQLite, whose single admin
    /// shares its runs with no other.
    pub(crate) fence: Option<SendFence>,
    /// This admin's name (`--node-id`), for the trigger report.
    pub(crate) node_id: String,
    /// The limits on running runs: a run a limit applies to takes a slot of it before it is
    /// sent, or waits in the queue.
    pub(crate) flow: Arc<FlowLimits>,
    /// Cancelled when the admin stops: runs still waiting for a permit stay pending.
    pub(crate) shutdown: CancellationToken,
}

impl Dispatcher {
    /// Counts a send (a failed one also as a failure).
    fn counted(&self, trigger_type: TriggerType, success: bool) {
        self.metrics.fired(trigger_type);
        if !success {
            self.metrics.dispatch_failures.inc();
        }
    }
}

/// Sends a run from its own task.
pub fn spawn(dispatcher: &Arc<Dispatcher>, entry: WheelEntry) {
    let dispatcher = dispatcher.clone();
    tokio::spawn(async move { dispatch(&dispatcher, entry).await });
}

/// Sends one run: checks it is still this admin's to send, finds its group's executors,
/// chooses the executor (`choose_executor`), waits for a permit and the send's mark
/// (`clear_to_send`), sends it and hands the trigger result to the results writer (`send`).
///
/// The steps that hold large futures (the HTTP call's state in `send`, routing's and the
/// limits' database reads) are boxed, each only while it runs: a second's burst leaves
/// thousands of these tasks waiting for a permit at once, and each then holds about a third
/// of what it would with those futures inline (1.2 against 3.5 KB measured in a debug build).
async fn dispatch(dispatcher: &Arc<Dispatcher>, entry: WheelEntry) {
    let WheelEntry {
        job, ticket, address, ..
    } = entry;
    // The executor asked for (a run sent to one address), kept for sending the run again.
    let requested = address.clone();
    // A partition given up since the claim belongs to another admin now, which recovers the
    // pending run: sending it here as well could run it twice.
    let scheduled = matches!(ticket.trigger_type, TriggerType::Cron | TriggerType::Misfire);
    if scheduled && let_go_unless_held(dispatcher, job.partition, ticket.id) {
        return;
    }
    let Some(view) = view_for(dispatcher, job.group_id, address.as_deref()).await else {
        let why = format!("executor group {} not found", job.group_id);
        fail(dispatcher, &ticket, ticket.payload.shard_total, String::new(), why);
        return;
    };
    // A broadcast takes its slots before it fans out into shards (queued after, its first
    // shard would fan out again when it leaves the queue); executors' own limits do not apply
    // to it. Any other run takes them once its executor is chosen.
    let broadcast = job.route_strategy == RouteStrategy::ShardingBroadcast;
    let app_name = view.group.app_name.as_str();
    if broadcast && !Box::pin(within_limits(dispatcher, &job, &ticket, app_name, None)).await {
        return;
    }
    let Some(chosen) = Box::pin(choose_executor(dispatcher, &job, &ticket, address, &view)).await else {
        return;
    };
    if !broadcast
        && !Box::pin(within_limits(
            dispatcher,
            &job,
            &ticket,
            app_name,
            Some(&chosen.address),
        ))
        .await
    {
        return;
    }
    let cleared = match clear_to_send(dispatcher, &job, &ticket, scheduled, &chosen.address).await {
        Cleared::Send(cleared) => cleared,
        Cleared::Drop => return,
        Cleared::HoldBack(token) => return Box::pin(hold_back(dispatcher, job, ticket, requested, token)).await,
    };
    Box::pin(send(dispatcher, &job, ticket, &view, chosen, cleared)).await;
}

/// The executor a run goes to.
struct Chosen {
    /// Its address without a trailing slash: for the call, the run row and the permits.
    address: String,
    /// How many shards the run has (a broadcast fans out over the executors alive now).
    shard_total: i64,
    /// What routing reported (for the trigger message).
    report: String,
}

/// Chooses the executor for `ticket`: the one it names (`address`), its shard's for a sharding
/// broadcast (creating the other shards the first time), or the route strategy's pick. `None`
/// when there is none: the run was failed.
async fn choose_executor(
    dispatcher: &Arc<Dispatcher>,
    job: &Arc<Job>,
    ticket: &RunTicket,
    address: Option<String>,
    view: &GroupView,
) -> Option<Chosen> {
    let mut shard_total = ticket.payload.shard_total;
    let mut report = String::new();
    let chosen: Option<String> = if let Some(a) = address {
        let wanted = normalize_address(&a);
        view.addresses.iter().find(|r| normalize_address(r) == wanted).cloned()
    } else if job.route_strategy == RouteStrategy::ShardingBroadcast {
        if ticket.payload.shard_total <= 1 && view.addresses.len() > 1 {
            shard_total = fan_out_shards(dispatcher, job, ticket, view.addresses.len() as i64).await?;
        }
        route::sharding_broadcast::shard_address(&view.addresses, ticket.payload.shard_index).cloned()
    } else {
        let (address, routed) = route_pick(dispatcher, job, view).await;
        report = routed;
        address
    };
    let Some(registered) = chosen else {
        let why = if report.is_empty() {
            "Trigger Fail：registry address is empty".to_owned()
        } else {
            report
        };
        fail(dispatcher, ticket, shard_total, String::new(), why);
        return None;
    };
    // Routes work on the addresses as registered (XXL-JOB hashes and sorts those strings); the
    // call, the run row and the permits use the address without a trailing slash.
    let address = normalize_address(&registered).to_owned();
    Some(Chosen {
        address,
        shard_total,
        report,
    })
}

/// Takes the run's slots of the limits that apply to it (its concurrency key, its group,
/// and the executor chosen, `address`); true when it may be sent. A full limit puts it in the
/// queue, pending: it leaves the runs in flight, and the queue's loop (`schedule/queue.rs`)
/// sends it when a slot frees. With no limit configured this reads an empty map, nothing more.
async fn within_limits(
    dispatcher: &Dispatcher,
    job: &Job,
    ticket: &RunTicket,
    app_name: &str,
    address: Option<&str>,
) -> bool {
    // A workflow node's run may carry its own priority and key over its job's.
    let (priority, key) = ticket.payload.flow.over(&job.flow);
    let names = (dispatcher.flow).names_for(key, app_name, address);
    if names.is_empty() {
        return true;
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let taken = (dispatcher.store)
        .take_slots(ticket.id, job.id, priority, &names, now_ms())
        .await;
    match taken {
        Ok(Slots::Taken) => true,
        Ok(Slots::Queued { name, why }) => {
            tracing::debug!(run = ticket.id, limit = %name, %why, "queued: its limit has no room");
            dispatcher.inflight.remove(ticket.id);
            false
        }
        Err(e) => {
            let why = format!("could not take a slot of its limits ({}): {e}", names.join(", "));
            let address = address.unwrap_or_default().to_owned();
            fail(dispatcher, ticket, ticket.payload.shard_total, address, why);
            false
        }
    }
}

/// The route strategy's pick among `view`'s executors, and what it reported.
async fn route_pick(dispatcher: &Dispatcher, job: &Job, view: &GroupView) -> (Option<String>, String) {
    let routed = dispatcher
        .router
        .pick(
            job.route_strategy,
            job.id,
            &view.addresses,
            &dispatcher.client,
            &dispatcher.probe_gate,
            &view.group,
            now_ms(),
        )
        .await;
    (routed.address, routed.report)
}

/// A sharding broadcast's first send: creates shards 1.. of `shard_total` and sends each to
/// its own address by index; this run is shard 0. Returns the shard count, or `None` when the
/// shards could not be created (the run was failed).
async fn fan_out_shards(
    dispatcher: &Arc<Dispatcher>,
    job: &Arc<Job>,
    ticket: &RunTicket,
    shard_total: i64,
) -> Option<i64> {
    let extra = shard_runs(job, ticket, shard_total);
    match dispatcher.store.insert_runs(&extra).await {
        Ok(tickets) => {
            let due = now_ms();
            for t in tickets {
                dispatcher.inflight.insert(t.id);
                let job = job.clone();
                spawn(
                    dispatcher,
                    WheelEntry {
                        due,
                        job,
                        ticket: t,
                        address: None,
                    },
                );
            }
            Some(shard_total)
        }
        Err(e) => {
            let why = format!("could not create broadcast shards: {e}");
            fail(dispatcher, ticket, 1, String::new(), why);
            None
        }
    }
}

/// Shards 1.. of `shard_total` of a broadcast whose shard 0 is `ticket`.
fn shard_runs(job: &Job, ticket: &RunTicket, shard_total: i64) -> Vec<NewRun> {
    (1..shard_total)
        .map(|i| NewRun {
            job_id: ticket.job_id,
            group_id: job.group_id,
            fire_key: None,
            scheduled_at: ticket.scheduled_at,
            trigger_type: ticket.trigger_type,
            payload: RunPayload {
                shard_index: i,
                shard_total,
                ..ticket.payload.clone()
            },
            trigger_code: 0,
            trigger_msg: String::new(),
        })
        .collect()
}

/// A run cleared to go out: its executor's permit, and its mark's stamp (with a send fence).
struct Clear {
    pass: Pass,
    marked_at: Option<i64>,
    /// A scheduled run (cron, misfire): its lateness is observed.
    scheduled: bool,
}

/// Whether a run may go out now.
enum Cleared {
    /// Yes.
    Send(Clear),
    /// No, and it is not this admin's to settle (it stays pending, or was withdrawn).
    Drop,
    /// Marked under the lease token given, which this admin no longer holds: held back.
    HoldBack(i64),
}

/// Whether a run cleared to go out is still this admin's to send: its partition still held
/// (a scheduled run), and not withdrawn. A run that is not leaves the runs in flight.
fn still_to_send(dispatcher: &Dispatcher, job: &Job, ticket: &RunTicket, scheduled: bool) -> bool {
    if scheduled && let_go_unless_held(dispatcher, job.partition, ticket.id) {
        return false;
    }
    // Checked last, just before the send: the run's result is recorded already. (Where admins
    // share a database, the send's mark, `fenced`, refuses a withdrawn run too, whichever
    // admin holds it.)
    let withdrawable = matches!(ticket.trigger_type, TriggerType::Workflow | TriggerType::Retry);
    if withdrawable && dispatcher.withdrawn.remove(ticket.id) {
        dispatcher.inflight.remove(ticket.id);
        return false;
    }
    true
}

/// Waits for a permit to send to `address`, then checks, in this order, that the run is still
/// to be sent by this admin and marks it as being sent (with a send fence).
async fn clear_to_send(
    dispatcher: &Dispatcher,
    job: &Job,
    ticket: &RunTicket,
    scheduled: bool,
    address: &str,
) -> Cleared {
    let pass = dispatcher.gate.enter(address).await;
    // Waiting for a permit can take a while. A run that did not go out before the admin began
    // to stop stays pending for the next start; one whose partition was given up meanwhile
    // belongs to the new owner.
    let Some(pass) = pass.filter(|_| !dispatcher.shutdown.is_cancelled()) else {
        dispatcher.inflight.remove(ticket.id);
        return Cleared::Drop;
    };
    if !still_to_send(dispatcher, job, ticket, scheduled) {
        return Cleared::Drop;
    }
    let mut marked_at = None;
    if let Some(fence) = &dispatcher.fence {
        let Some(mark) = fenced(dispatcher, fence, job.partition, ticket.id, scheduled, address).await else {
            dispatcher.inflight.remove(ticket.id);
            return Cleared::Drop;
        };
        // Sent only while this admin's deadline for the mark's lease holds: the next holder
        // asks the executor about runs marked before it took over, once those sends ended.
        if scheduled && dispatcher.partitions.token(job.partition) != Some(mark.token) {
            return Cleared::HoldBack(mark.token);
        }
        marked_at = Some(mark.at);
    }
    let clear = Clear {
        pass,
        marked_at,
        scheduled,
    };
    Cleared::Send(clear)
}

/// Sends the run to its chosen executor and hands the trigger result to the results writer.
async fn send(dispatcher: &Dispatcher, job: &Job, ticket: RunTicket, view: &GroupView, chosen: Chosen, clear: Clear) {
    let sent_at = now_ms();
    // A marked run's trigger time is its mark's: the time its executor files its log under.
    let triggered_at = clear.marked_at.unwrap_or(sent_at);
    if clear.scheduled {
        (dispatcher.metrics.lateness).observe((sent_at - ticket.scheduled_at).max(0) as f64 / 1000.0);
    }
    let param = trigger_param(job, &ticket, triggered_at, chosen.shard_total);
    let target = Target::of(&view.group, &chosen.address);
    let reply = dispatcher.client.run(target, &param).await;
    drop(clear.pass);
    dispatcher.counted(ticket.trigger_type, reply.is_success());
    let (code, reply_msg) = (reply.code, reply.msg.as_deref());
    let msg = trigger_msg(dispatcher, job, &ticket, &view.addresses, &chosen, code, reply_msg);
    let outcome = TriggerOutcome {
        run_id: ticket.id,
        job_id: ticket.job_id,
        triggered_at,
        address: chosen.address,
        code: i64::from(code),
        msg,
        shard_total: chosen.shard_total,
        trigger_type: ticket.trigger_type,
    };
    dispatcher.results.send(ResultMsg::Trigger(outcome));
}

/// The `/run` call's body for `ticket`, sent at `triggered_at` as one of `shard_total` shards.
fn trigger_param(job: &Job, ticket: &RunTicket, triggered_at: i64, shard_total: i64) -> TriggerParam {
    TriggerParam {
        job_id: job.id,
        executor_handler: ticket.payload.handler.clone(),
        executor_params: ticket.payload.param.clone(),
        executor_block_strategy: job.block_strategy,
        executor_timeout: job.timeout_secs.clamp(0, i32::MAX as i64) as i32,
        log_id: ticket.id,
        log_date_time: triggered_at,
        glue_type: job.glue_type,
        glue_source: job.glue_source.clone(),
        glue_updatetime: job.glue_updated_at,
        broadcast_index: ticket.payload.shard_index as i32,
        broadcast_total: shard_total as i32,
        upstream_results: upstream_results(&ticket.payload.upstream),
    }
}

/// A node run's upstream results as sent: the run row holds them as JSON (empty for other
/// runs), written by the workflow step, so they parse; if they did not, the run goes out
/// without them rather than not at all.
fn upstream_results(stored: &str) -> std::collections::BTreeMap<String, String> {
    if stored.is_empty() {
        return Default::default();
    }
    serde_json::from_str(stored).unwrap_or_default()
}

/// The view of group `group_id` for a send (to `requested`, if the run names its executor). When
/// this admin does not know the group, or knows no executor the run could go to, the group or
/// the executor may have been created or registered through another admin a moment ago: the
/// directory is reloaded from the database (one reload shared by every send that waits, at
/// most one a second: [`Directory::reload_for_unknown`]) before the run is failed for it.
async fn view_for(
    dispatcher: &Dispatcher,
    group_id: i64,
    requested: Option<&str>,
) -> Option<Arc<crate::registry::GroupView>> {
    let usable = |view: &Option<Arc<crate::registry::GroupView>>| {
        view.as_ref().is_some_and(|v| match requested {
            Some(a) => v.addresses.iter().any(|r| normalize_address(r) == normalize_address(a)),
            None => !v.addresses.is_empty(),
        })
    };
    let met = std::time::Instant::now();
    let view = dispatcher.directory.view(group_id);
    if usable(&view) {
        return view;
    }
    let directory = &dispatcher.directory;
    directory.reload_for_unknown(met, |d| usable(&d.view(group_id))).await;
    directory.view(group_id)
}

/// Lets a scheduled run go (out of the in-flight set, pending in the database) if this admin
/// does not schedule its partition now: the partition's next holder sends it — this admin too,
/// should it take the partition again, since its recovery then finds the run no longer in
/// flight (`Partitions::let_go_unless_held`). True when let go.
fn let_go_unless_held(dispatcher: &Dispatcher, partition: i64, run_id: i64) -> bool {
    dispatcher.partitions.let_go_unless_held(partition, || {
        dispatcher.inflight.remove(run_id);
    })
}

/// A mark the database took ([`fenced`]).
struct Marked {
    /// Its token.
    token: i64,
    /// Its stamp (see [`Mark::Marked`]).
    at: i64,
}

/// Marks a run as being sent ([`fence`]) and says whether it is this admin's to send (with
/// the mark). A scheduled run is marked with its partition's lease epoch, the others with this
/// process's token. When the database cannot be asked, it is asked again while this admin may
/// still send the run (a scheduled run's lease holds by this process's deadline; the others
/// until shutdown): a run not sent stays pending and is this admin's to send, or, once the
/// lease lapsed, the next holder's.
async fn fenced(
    dispatcher: &Dispatcher,
    fence: &SendFence,
    partition: i64,
    run_id: i64,
    scheduled: bool,
    address: &str,
) -> Option<Marked> {
    let mut pause = std::time::Duration::from_millis(100);
    loop {
        let token = if scheduled {
            match dispatcher.partitions.token(partition) {
                Some(epoch) => epoch,
                None if let_go_unless_held(dispatcher, partition, run_id) => return None,
                // Scheduled again since the line above (recovered): ask for the new epoch.
                None => continue,
            }
        } else {
            fence.own_token()
        };
        match fence.mark(run_id, token, address).await {
            Mark::Marked { at } => return Some(Marked { token, at }),
            // The lease changed while the database was asked (lost, or lapsed and taken again
            // by this admin, whose recovery left this run to this send): ask again under the
            // lease as it is now, or let the run go.
            Mark::Refused if scheduled && dispatcher.partitions.token(partition) != Some(token) => continue,
            Mark::Refused => return None,
            Mark::Failed if dispatcher.shutdown.is_cancelled() => return None,
            Mark::Failed => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(std::time::Duration::from_secs(2));
    }
}

/// A scheduled run marked under a lease epoch this admin no longer holds: the database took
/// the mark while the lease held, but its answer came after this admin's deadline (a slow
/// database, a pause). Sending it now could overlap the partition's next holder, which by then
/// may be asking the executor about this very run (`monitor::possibly_sent`). So it is not
/// sent under that mark. If this admin holds the partition again, under a newer epoch, it
/// takes the mark back and sends the run under the new one; otherwise the run stays marked,
/// and the holder settles it with its executor.
async fn hold_back(
    dispatcher: &Arc<Dispatcher>,
    job: Arc<Job>,
    ticket: RunTicket,
    requested: Option<String>,
    token: i64,
) {
    let epoch = loop {
        match dispatcher.partitions.token(job.partition) {
            Some(epoch) => break epoch,
            None if let_go_unless_held(dispatcher, job.partition, ticket.id) => return,
            // Scheduled again since the line above, with this run still in flight: recovery
            // left it to this send, so it is this admin's to settle.
            None => continue,
        }
    };
    match dispatcher.store.unmark(ticket.id, token, epoch).await {
        Ok(true) => {
            let due = now_ms();
            let entry = WheelEntry {
                due,
                job,
                ticket,
                address: requested,
            };
            spawn(dispatcher, entry);
            return;
        }
        // The run has a result, or the lease lapsed by the database's clock after all: the
        // run is left as it is, for the lost-run sweep or the partition's next recovery.
        Ok(false) => {}
        Err(e) => {
            tracing::warn!(error = %e, run_id = ticket.id, "could not take back a stale mark; the run is left to the lost-run sweep")
        }
    }
    dispatcher.inflight.remove(ticket.id);
}

fn fail(dispatcher: &Dispatcher, ticket: &crate::store::RunTicket, shard_total: i64, address: String, why: String) {
    dispatcher.counted(ticket.trigger_type, false);
    dispatcher.results.send(ResultMsg::Trigger(TriggerOutcome {
        run_id: ticket.id,
        job_id: ticket.job_id,
        triggered_at: now_ms(),
        address,
        code: 500,
        msg: format!("Trigger type：{}<br>{why}", ticket.trigger_type.title()),
        shard_total,
        trigger_type: ticket.trigger_type,
    }));
}

/// The trigger report stored on the run, in XXL-JOB's layout (HTML line breaks).
#[allow(clippy::too_many_arguments)]
fn trigger_msg(
    dispatcher: &Dispatcher,
    job: &Job,
    ticket: &RunTicket,
    addresses: &[String],
    chosen: &Chosen,
    code: i32,
    msg: Option<&str>,
) -> String {
    let shard_total = chosen.shard_total;
    let mut route = job.route_strategy.title().to_owned();
    if shard_total > 1 {
        route.push_str(&format!("({}/{})", ticket.payload.shard_index, shard_total));
    }
    format!(
        "Trigger type：{}<br>Admin：{}<br>Executors：{}<br>Route strategy：{}<br>\
         Block strategy：{}<br>Timeout：{}<br>Retry count：{}<br><br>>>>>>>>>>>>Trigger Job<<<<<<<<<<<{}<br>address：{}<br>code：{}<br>msg：{}",
        ticket.trigger_type.title(),
        dispatcher.node_id,
        // The full list is useful for small groups; for large ones the count is enough.
        if addresses.len() <= 5 { addresses.join(",") } else { format!("{} addresses", addresses.len()) },
        route,
        job.block_strategy.title(),
        job.timeout_secs,
        ticket.payload.retry_count,
        chosen.report,
        chosen.address,
        code,
        msg.unwrap_or("null"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns.
    fn future_size<A, B, F: std::future::Future>(_: impl FnOnce(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn a_send_waiting_for_its_permit_holds_none_of_the_large_steps() {
        let waiting = future_size(|d: &'static Arc<Dispatcher>, e: WheelEntry| dispatch(d, e));
        let send = future_size(
            |d: &'static Dispatcher, x: (&'static Job, RunTicket, &'static GroupView, Chosen, Clear)| {
                send(d, x.0, x.1, x.2, x.3, x.4)
            },
        );
        let choose = future_size(
            |d: &'static Arc<Dispatcher>, x: (&'static Arc<Job>, &'static RunTicket, &'static GroupView)| {
                choose_executor(d, x.0, x.1, None, x.2)
            },
        );
        let limits = future_size(|d: &'static Dispatcher, x: (&'static Job, &'static RunTicket)| {
            within_limits(d, x.0, x.1, "app", None)
        });
        for (step, size) in [("send", send), ("choose_executor", choose), ("within_limits", limits)] {
            assert!(
                waiting < size,
                "dispatch's future ({waiting} bytes) holds {step}'s ({size} bytes) inline"
            );
        }
    }
}
