//! Jobs as code: the desired-state document of groups and their jobs (`GET /v1/export`) and
//! applying one (`POST /v1/apply`) as a plan of creates, updates and deletes executed in one
//! transaction, all or nothing. Jobs are matched by their key within their group, so applying
//! a document twice changes nothing the second time.

use super::apply_workflows::{DocWorkflow, WorkflowChange};
use super::job_columns::JOB_COLUMNS;
use super::plan_fields::differing;
use super::rows::{self, GROUP_COLUMNS};
use super::{Store, StoreError, StoreResult};
use crate::address_policy::ExecutorNetworks;
use crate::api::{JobFlowPatch, JobInfoPatch, JobTaskPatch, MoreSchedule, SchedulePatch};
use crate::model::{
    now_ms, validate_job_key, AddressType, Group, GroupDraft, GroupSpec, Invalid, Job, JobDraft, JobSpec,
};
use serde::{Deserialize, Serialize};
use sqlx::any::Any;
use sqlx::Transaction;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most groups one document may hold.
pub const MAX_DOC_GROUPS: usize = 1_000;
/// Most jobs one document may hold (over all its groups).
pub const MAX_DOC_JOBS: usize = 10_000;

/// The desired state of some groups and their jobs. No ids and no secrets: jobs are known by
/// their key, children by `key` (same group) or `app_name/key`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct JobsDocument {
    /// The groups, each with its jobs.
    #[serde(default)]
    pub groups: Vec<DocGroup>,
    /// Workflows, their nodes naming jobs by `app_name/key` (exported for admins only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workflows: Vec<DocWorkflow>,
    /// Alarm channels, without their URLs and secrets (exported for admins only; see
    /// `apply_channels`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alarm_channels: Vec<crate::model::AlarmChannelSpec>,
    /// Business calendars the jobs and workflows keep to (exported for admins only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<crate::api::BusinessCalendarSpec>,
}

/// A group of a [`JobsDocument`]. Fields left out keep their value (or take the default when
/// the group is created); its own executor access token is never exported nor set here.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct DocGroup {
    /// App name: what the group is known by.
    pub app_name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `auto` or `manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_type: Option<AddressType>,
    /// Manual addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<String>>,
    /// `G2`, `G3` or `G4`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Keep the group's run logs in the admin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_logs: Option<bool>,
    /// Alarm channels of the group's jobs that name none (comma-separated names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alarm_channels: Option<String>,
    /// Whether the group has its own access token (exported for information; ignored on apply:
    /// the token is a secret and is set through the group API only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token_set: Option<bool>,
    /// Whether the group's executors work without any access token (exported for information;
    /// ignored on apply: that is an operator's explicit choice, made through the group API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_no_token: Option<bool>,
    /// The group's jobs.
    #[serde(default)]
    pub jobs: Vec<DocJob>,
}

/// A job of a [`JobsDocument`]: the fields of the job API, with the key required and children
/// named by key. A field left out takes its default (the document is the whole definition).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct DocJob {
    /// Stable name within the group.
    pub key: String,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Descriptive fields (owner, alarm contacts, …).
    #[serde(flatten)]
    pub info: JobInfoPatch,
    /// Priority and concurrency key (flow control).
    #[serde(flatten)]
    pub flow: JobFlowPatch,
    /// Schedule type, expression, zone and misfire strategy.
    #[serde(flatten)]
    pub schedule: SchedulePatch,
    /// Further schedules (left out: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_schedules: Option<Vec<MoreSchedule>>,
    /// What the executor is asked to do: route, handler, parameter, block strategy, timeout,
    /// retries and script.
    #[serde(flatten)]
    pub task: JobTaskPatch,
    /// Child jobs: `key` (same group) or `app_name/key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Vec<String>>,
    /// Scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
}

/// What applying does, or did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ApplyPlan {
    /// Groups and jobs created.
    pub create: Vec<PlanEntry>,
    /// Groups and jobs changed, with the fields that change.
    pub update: Vec<PlanEntry>,
    /// Jobs deleted (with `prune`).
    pub delete: Vec<PlanEntry>,
    /// Whether it was written (false for a dry run).
    pub applied: bool,
}

impl ApplyPlan {
    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }
}

/// One step of an [`ApplyPlan`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanEntry {
    /// `alarm_channel`, `group`, `job` or `workflow`.
    pub kind: String,
    /// The group's app name.
    pub group: String,
    /// The job's key (`None` for a group).
    pub key: Option<String>,
    /// The fields that change (updates only).
    pub fields: Vec<String>,
}

/// How to apply: the rules validation needs, who applies, and the flags.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions<'a> {
    /// `--executor-networks`, for manual addresses.
    pub networks: &'a ExecutorNetworks,
    /// The admin's default zone.
    pub default_zone: &'a str,
    /// Who applies (audit log, GLUE versions).
    pub author: &'a str,
    /// Work out the plan, write nothing.
    pub dry_run: bool,
    /// Delete the jobs of the document's groups that it does not list.
    pub prune: bool,
}

/// What [`Store::apply_in`] did, with the ids the document's names now have.
pub(super) struct Applied {
    /// The plan, as executed.
    pub plan: ApplyPlan,
    /// Every group's id by app name (existing and created).
    pub group_ids: HashMap<String, i64>,
    /// The ids of the document's jobs (and of the children it names) by `(app name, key)`.
    pub job_ids: HashMap<(String, String), i64>,
}

/// A job of the document after validation.
pub(super) struct Wanted {
    app: String,
    draft: JobDraft,
    children: Vec<(String, String)>,
}

impl Wanted {
    /// The job's name: `(app name, key)`.
    fn name(&self) -> (String, String) {
        (self.app.clone(), self.draft.key.clone().unwrap_or_default())
    }
}

/// The jobs an apply knows by name: the document's groups' jobs, the jobs it creates, and the
/// other jobs its children name.
struct JobNames {
    /// Ids by `(app name, key)`.
    ids: HashMap<(String, String), i64>,
    /// Names by id.
    names: HashMap<i64, (String, String)>,
}

impl JobNames {
    /// The names of `jobs`.
    fn of(jobs: &HashMap<(String, String), Job>) -> JobNames {
        let mut known = JobNames {
            ids: HashMap::new(),
            names: HashMap::new(),
        };
        for (name, job) in jobs {
            known.add(name.clone(), job.id);
        }
        known
    }

    fn add(&mut self, name: (String, String), id: i64) {
        self.ids.insert(name.clone(), id);
        self.names.insert(id, name);
    }
}

/// Refuses a job whose child the prune deletes.
fn refuse_doomed_children(wanted: &[Wanted], doomed: &[(String, String)]) -> Result<(), Invalid> {
    for w in wanted {
        if let Some(c) = w.children.iter().find(|c| doomed.contains(c)) {
            return Err(job_err(
                &w.app,
                w.draft.key.as_deref().unwrap_or_default(),
                Invalid::new("children", format!("child '{}/{}' is deleted by prune", c.0, c.1)),
            ));
        }
    }
    Ok(())
}

/// A document after validation: each group with its input as the group API takes it, and
/// every job.
pub(super) type Checked = (Vec<(DocGroup, GroupSpec)>, Vec<Wanted>);

/// An error about one job's field, naming the group, the key and the field.
fn job_err(app: &str, key: &str, e: Invalid) -> Invalid {
    Invalid {
        field: format!("groups[{app}].jobs[{key}].{}", e.field),
        message: format!("group '{app}', job '{key}', field '{}': {}", e.field, e.message),
    }
}

fn group_err(app: &str, e: Invalid) -> Invalid {
    Invalid {
        field: format!("groups[{app}].{}", e.field),
        message: format!("group '{app}', field '{}': {}", e.field, e.message),
    }
}

/// A child reference: `key` in `app`, or `other_app/key`.
fn child_ref(app: &str, r: &str) -> Result<(String, String), String> {
    let (g, k) = match r.rsplit_once('/') {
        Some((g, k)) => (g.trim(), k.trim()),
        None => (app, r.trim()),
    };
    validate_job_key(k)?;
    if g.is_empty() {
        return Err(format!("'{r}' names no group before '/'"));
    }
    Ok((g.to_owned(), k.to_owned()))
}

/// How a child is written in an export: its key alone in the same group.
fn child_name(app: &str, (g, k): &(String, String)) -> String {
    if g == app {
        k.clone()
    } else {
        format!("{g}/{k}")
    }
}

/// The fields of `draft` (with `children` resolved to names) that differ from `job`.
fn changed_fields(
    job: &Job,
    draft: &JobDraft,
    children_now: &[(String, String)],
    children: &[(String, String)],
) -> Vec<String> {
    let mut f = differing!(job, draft; description);
    f.extend(job.info.differing(&draft.info).into_iter().map(str::to_owned));
    f.extend(differing!(job.flow, draft.flow; priority, concurrency_key));
    f.extend(differing!(job, draft;
        schedule_type, schedule_expr, time_zone, misfire_strategy, more_schedules, route_strategy, handler, param,
        block_strategy, timeout_secs, retry_count));
    if children_now != children {
        f.push("children".to_owned());
    }
    f.extend(differing!(job, draft; glue_type, glue_source, running));
    f
}

fn group_fields(g: &Group, d: &GroupDraft) -> Vec<String> {
    differing!(g, d; title, address_type, addresses, protocol, keep_logs, alarm_channels)
}

fn entry(kind: &str, group: &str, key: Option<&str>, fields: Vec<String>) -> PlanEntry {
    PlanEntry {
        kind: kind.to_owned(),
        group: group.to_owned(),
        key: key.map(str::to_owned),
        fields,
    }
}

/// Checks the document on its own (no database): bounds, names, every job's fields.
pub(super) fn validate_document(doc: &JobsDocument, opts: &ApplyOptions<'_>) -> Result<Checked, Invalid> {
    super::apply_workflows::check(&doc.workflows)?;
    if doc.groups.len() > MAX_DOC_GROUPS {
        return Err(Invalid::new(
            "groups",
            format!("at most {MAX_DOC_GROUPS} groups per document"),
        ));
    }
    let total: usize = doc.groups.iter().map(|g| g.jobs.len()).sum();
    if total > MAX_DOC_JOBS {
        return Err(Invalid::new(
            "groups",
            format!("at most {MAX_DOC_JOBS} jobs per document"),
        ));
    }
    let mut apps = HashSet::new();
    let mut groups = Vec::new();
    let mut wanted = Vec::new();
    for g in &doc.groups {
        let app = g.app_name.trim().to_owned();
        if !apps.insert(app.clone()) {
            return Err(Invalid::new(
                format!("groups[{app}]"),
                format!("group '{app}' appears twice in the document"),
            ));
        }
        let spec = GroupSpec {
            app_name: Some(app.clone()),
            title: g.title.clone(),
            address_type: g.address_type,
            addresses: g.addresses.clone(),
            protocol: g.protocol.clone(),
            access_token: None,
            insecure_no_token: None,
            keep_logs: g.keep_logs,
            alarm_channels: g.alarm_channels.clone(),
        };
        spec.validate(None, opts.networks).map_err(|e| group_err(&app, e))?;
        let mut keys = HashSet::new();
        for j in &g.jobs {
            let key = validate_job_key(&j.key).map_err(|m| job_err(&app, &j.key, Invalid::new("key", m)))?;
            if !keys.insert(key.clone()) {
                return Err(job_err(
                    &app,
                    &key,
                    Invalid::new("key", format!("key '{key}' appears twice in group '{app}'")),
                ));
            }
            let children = j
                .children
                .iter()
                .flatten()
                .map(|r| child_ref(&app, r))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| job_err(&app, &key, Invalid::new("children", m)))?;
            if children.iter().any(|(cg, ck)| *cg == app && *ck == key) {
                return Err(job_err(
                    &app,
                    &key,
                    Invalid::new("children", "a job cannot be its own child"),
                ));
            }
            let mut seen = HashSet::new();
            let children: Vec<_> = children.into_iter().filter(|c| seen.insert(c.clone())).collect();
            let spec = JobSpec {
                key: Some(key.clone()),
                description: j.description.clone(),
                info: j.info.clone(),
                flow: j.flow.clone(),
                schedule: j.schedule.clone(),
                // The document is the whole definition: none listed, none kept.
                more_schedules: Some(j.more_schedules.clone().unwrap_or_default()),
                task: j.task.clone(),
                running: j.running,
                ..JobSpec::default()
            };
            // The group id is filled in once the group is known (or created).
            let draft = spec
                .validate(None, opts.default_zone, 0)
                .map_err(|e| job_err(&app, &key, e))?;
            wanted.push(Wanted {
                app: app.clone(),
                draft,
                children,
            });
        }
        groups.push((g.clone(), spec));
    }
    Ok((groups, wanted))
}

/// Checks a document as `apply` would before touching the database (bounds, names, keys,
/// every field), naming the group, job key and field of the first error.
pub fn check_document(doc: &JobsDocument, opts: &ApplyOptions<'_>) -> Result<(), Invalid> {
    validate_document(doc, opts).map(drop)
}

impl Store {
    /// The document of every group (or the one with app name `only`) among `scope` (`None`:
    /// all groups), their jobs ordered by key; children outside `scope` are left out.
    pub async fn export_jobs(&self, only: Option<&str>, scope: Option<&[i64]>) -> StoreResult<JobsDocument> {
        let mut groups = self.list_groups().await?;
        groups.retain(|g| scope.is_none_or(|s| s.contains(&g.id)));
        if let Some(app) = only {
            groups.retain(|g| g.app_name == app);
            if groups.is_empty() {
                return Err(StoreError::NotFound(format!("group '{app}'")));
            }
        }
        let mut names: HashMap<i64, (String, String)> = HashMap::new();
        let mut by_group: Vec<(Group, Vec<Job>)> = Vec::new();
        let apps: HashMap<i64, String> = self
            .list_groups()
            .await?
            .into_iter()
            .map(|g| (g.id, g.app_name))
            .collect();
        for g in groups {
            let q = self.sql_text(format!("SELECT {JOB_COLUMNS} FROM job WHERE group_id = ?"));
            let mut jobs: Vec<Job> = sqlx::query(&q)
                .bind(g.id)
                .fetch_all(&self.read)
                .await?
                .iter()
                .map(rows::job)
                .collect::<Result<_, _>>()?;
            jobs.sort_by(|a, b| a.key.cmp(&b.key));
            for j in &jobs {
                names.insert(j.id, (g.app_name.clone(), j.key.clone()));
            }
            by_group.push((g, jobs));
        }
        // Children in groups outside the export are named too, when the caller may see them:
        // a child in a group outside `scope` is left out, so a group-limited user's export
        // names no job, and no group, they cannot read.
        let missing: Vec<i64> = by_group
            .iter()
            .flat_map(|(_, jobs)| jobs.iter().flat_map(|j| j.child_job_ids.iter().copied()))
            .filter(|id| !names.contains_key(id))
            .collect();
        let visible = self.jobs_by_ids(&missing).await?.into_iter();
        for j in visible.filter(|j| scope.is_none_or(|s| s.contains(&j.group_id))) {
            let app = apps.get(&j.group_id).cloned().unwrap_or_default();
            names.insert(j.id, (app, j.key));
        }
        let groups = by_group
            .into_iter()
            .map(|(g, jobs)| DocGroup {
                jobs: jobs
                    .into_iter()
                    .map(|mut j| DocJob {
                        // Read before the fields below are moved out of `j`.
                        task: JobTaskPatch::of(&j),
                        schedule: SchedulePatch::of(j.schedule()),
                        more_schedules: Some(std::mem::take(&mut j.more_schedules)).filter(|m| !m.is_empty()),
                        children: Some(
                            j.child_job_ids
                                .iter()
                                .filter_map(|c| names.get(c))
                                .map(|n| child_name(&g.app_name, n))
                                .collect(),
                        ),
                        key: j.key,
                        description: Some(j.description),
                        info: JobInfoPatch::of(&j.info),
                        flow: JobFlowPatch::of(&j.flow),
                        running: Some(j.running),
                    })
                    .collect(),
                app_name: g.app_name,
                title: Some(g.title),
                address_type: Some(g.address_type),
                addresses: Some(g.addresses),
                protocol: Some(g.protocol.as_str().to_owned()),
                keep_logs: Some(g.keep_logs),
                alarm_channels: Some(g.alarm_channels),
                access_token_set: Some(g.access_token.is_some()),
                insecure_no_token: Some(g.insecure_no_token),
            })
            .collect();
        // Workflows span groups, and channels are an administrator's: in the whole document
        // of an admin only.
        let (workflows, alarm_channels, calendars) = if only.is_none() && scope.is_none() {
            (
                self.export_workflows().await?,
                self.export_channels().await?,
                self.export_calendars().await?,
            )
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        Ok(JobsDocument {
            groups,
            workflows,
            alarm_channels,
            calendars,
        })
    }

    /// Applies `doc`: validates all of it first, then works out and executes the plan in one
    /// transaction (rolled back for a dry run, or at the first error: all or nothing), with one
    /// audit entry (`apply`) in the same transaction.
    pub async fn apply_jobs(&self, doc: &JobsDocument, opts: ApplyOptions<'_>) -> StoreResult<ApplyPlan> {
        let checked = validate_document(doc, &opts)?;
        let now = now_ms();
        let mut tx = self.write.begin().await?;
        let mut channels_plan = ApplyPlan::default();
        // Channels first: the groups and jobs that follow may name them.
        self.apply_channels(&mut tx, &doc.alarm_channels, now, &mut channels_plan)
            .await?;
        // Calendars too: the jobs and workflows that follow may keep to them.
        self.apply_calendars(&mut tx, &doc.calendars, (opts.author, now), &mut channels_plan)
            .await?;
        let Applied { mut plan, .. } = self.apply_in(&mut tx, checked, &doc.workflows, &opts, now).await?;
        plan.create.splice(0..0, channels_plan.create);
        plan.update.splice(0..0, channels_plan.update);
        if opts.dry_run || plan.is_empty() {
            tx.rollback().await?;
            return Ok(plan);
        }
        let detail = serde_json::json!({
            "create": plan.create.len(),
            "update": plan.update.len(),
            "delete": plan.delete.len(),
            "prune": opts.prune,
            "groups": doc.groups.iter().map(|g| g.app_name.trim()).collect::<Vec<_>>(),
        })
        .to_string();
        self.insert_audit_on(&mut *tx, now, opts.author, "apply", "/v1/apply", &detail)
            .await?;
        tx.commit().await?;
        plan.applied = true;
        Ok(plan)
    }

    /// Works out and executes the plan of a checked document in `tx`, leaving the commit (and
    /// the audit entry) to the caller: `apply_jobs`, or an import that writes more in the same
    /// transaction. Groups first, then new jobs (without children, which may be new too), then
    /// every change, the prune, and the workflows naming the jobs.
    pub(super) async fn apply_in(
        &self,
        tx: &mut Transaction<'static, Any>,
        (doc_groups, wanted): Checked,
        workflows: &[DocWorkflow],
        opts: &ApplyOptions<'_>,
        now: i64,
    ) -> StoreResult<Applied> {
        let mut plan = ApplyPlan::default();
        let (group_ids, apps) = self.apply_groups(tx, &doc_groups, opts, now, &mut plan).await?;
        let mut by_name = self.jobs_of(tx, &doc_groups, &group_ids, &apps).await?;
        let listed: HashSet<(String, String)> = wanted.iter().map(Wanted::name).collect();
        let doomed: Vec<(String, String)> = if opts.prune {
            let mut d: Vec<_> = by_name.keys().filter(|n| !listed.contains(*n)).cloned().collect();
            d.sort();
            d
        } else {
            Vec::new()
        };
        let mut known = JobNames::of(&by_name);
        self.resolve_children(tx, &wanted, &listed, &group_ids, &mut known)
            .await?;
        refuse_doomed_children(&wanted, &doomed)?;
        let created = self
            .create_jobs(tx, &wanted, &by_name, &group_ids, &mut known, (opts, now, &mut plan))
            .await?;
        for (i, w) in wanted.iter().enumerate() {
            let child_ids: Vec<i64> = w.children.iter().map(|c| known.ids[c]).collect();
            match created.iter().find(|(ci, _)| *ci == i) {
                Some(&(_, id)) => self.set_children(tx, id, &child_ids).await?,
                None => {
                    let Some(old) = by_name.remove(&w.name()) else { continue };
                    self.change_job(tx, w, &old, child_ids, &known, (opts, now, &mut plan))
                        .await?;
                }
            }
        }
        self.prune(tx, &doomed, &known, &mut plan).await?;
        self.refuse_cycles(tx, &known).await?;
        for change in self
            .apply_workflows_in(tx, workflows, &known.ids, opts.default_zone, now)
            .await?
        {
            match change {
                WorkflowChange::Created(name) => plan.create.push(entry("workflow", "", Some(&name), Vec::new())),
                WorkflowChange::Updated(name, fields) => plan.update.push(entry("workflow", "", Some(&name), fields)),
            }
        }
        Ok(Applied {
            plan,
            group_ids,
            job_ids: known.ids,
        })
    }

    /// Creates the document's missing groups and changes those that differ; answers every
    /// group's id by app name, and app names by id.
    async fn apply_groups(
        &self,
        tx: &mut Transaction<'static, Any>,
        doc_groups: &[(DocGroup, GroupSpec)],
        opts: &ApplyOptions<'_>,
        now: i64,
        plan: &mut ApplyPlan,
    ) -> StoreResult<(HashMap<String, i64>, HashMap<i64, String>)> {
        let q = format!("SELECT {GROUP_COLUMNS} FROM executor_group");
        let existing_groups: Vec<Group> = sqlx::query(&q)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(rows::group)
            .collect::<Result<_, _>>()?;
        let mut group_ids: HashMap<String, i64> = existing_groups.iter().map(|g| (g.app_name.clone(), g.id)).collect();
        let apps: HashMap<i64, String> = existing_groups.iter().map(|g| (g.id, g.app_name.clone())).collect();
        for (dg, spec) in doc_groups {
            let app = dg.app_name.trim();
            let base = existing_groups.iter().find(|g| g.app_name == app);
            let draft = spec.validate(base, opts.networks).map_err(|e| group_err(app, e))?;
            match base {
                None => {
                    // `validate` without a base sets no access token: apply never sets one.
                    let id = self.insert_group_row(tx, &draft, now).await?;
                    group_ids.insert(app.to_owned(), id);
                    plan.create.push(entry("group", app, None, Vec::new()));
                }
                Some(g) => {
                    let fields = group_fields(g, &draft);
                    if !fields.is_empty() {
                        // The draft keeps the group's app name and its own access token.
                        self.update_group_row(tx, g.id, &draft, now).await?;
                        plan.update.push(entry("group", app, None, fields));
                    }
                }
            }
        }
        Ok((group_ids, apps))
    }

    /// The jobs of the document's groups as they are, locked for the change, by name.
    async fn jobs_of(
        &self,
        tx: &mut Transaction<'static, Any>,
        doc_groups: &[(DocGroup, GroupSpec)],
        group_ids: &HashMap<String, i64>,
        apps: &HashMap<i64, String>,
    ) -> StoreResult<HashMap<(String, String), Job>> {
        let doc_group_ids: Vec<i64> = doc_groups
            .iter()
            .filter_map(|(g, _)| group_ids.get(g.app_name.trim()).copied())
            .collect();
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM job WHERE group_id IN ({{in}}){}",
            self.backend.for_update()
        );
        let current: Vec<Job> = self
            .fetch_in(tx, &sql, &doc_group_ids, &[])
            .await?
            .iter()
            .map(rows::job)
            .collect::<Result<_, _>>()?;
        Ok(current
            .into_iter()
            .map(|j| ((apps.get(&j.group_id).cloned().unwrap_or_default(), j.key.clone()), j))
            .collect())
    }

    /// Adds to `known` every job outside the document that a child names, refusing a child
    /// that names no job.
    async fn resolve_children(
        &self,
        tx: &mut Transaction<'static, Any>,
        wanted: &[Wanted],
        listed: &HashSet<(String, String)>,
        group_ids: &HashMap<String, i64>,
        known: &mut JobNames,
    ) -> StoreResult<()> {
        for w in wanted {
            for c in &w.children {
                if known.ids.contains_key(c) || listed.contains(c) {
                    continue;
                }
                let key = w.draft.key.as_deref().unwrap_or_default();
                let Some(gid) = group_ids.get(&c.0) else {
                    let message = format!("no group '{}' for child '{}'", c.0, c.1);
                    return Err(job_err(&w.app, key, Invalid::new("children", message)).into());
                };
                let q = self.sql("SELECT id FROM job WHERE group_id = ? AND job_key = ?");
                let row = sqlx::query(&q).bind(*gid).bind(&c.1).fetch_optional(&mut **tx).await?;
                let Some(r) = row else {
                    let message = format!("no job '{}' in group '{}'", c.1, c.0);
                    return Err(job_err(&w.app, key, Invalid::new("children", message)).into());
                };
                known.add(c.clone(), rows::int(&r, "id")?);
            }
        }
        Ok(())
    }

    /// Creates the document's new jobs, without children; answers `(index in wanted, id)`.
    async fn create_jobs(
        &self,
        tx: &mut Transaction<'static, Any>,
        wanted: &[Wanted],
        by_name: &HashMap<(String, String), Job>,
        group_ids: &HashMap<String, i64>,
        known: &mut JobNames,
        (opts, now, plan): (&ApplyOptions<'_>, i64, &mut ApplyPlan),
    ) -> StoreResult<Vec<(usize, i64)>> {
        let mut created = Vec::new();
        for (i, w) in wanted.iter().enumerate() {
            let name = w.name();
            if by_name.contains_key(&name) {
                continue;
            }
            let gid = group_ids[&w.app];
            let mut draft = w.draft.clone();
            draft.group_id = gid;
            draft.child_job_ids = Vec::new();
            let id = self.insert_job_tx(tx, gid, &draft, opts.author, now).await?;
            known.add(name.clone(), id);
            created.push((i, id));
            plan.create.push(entry("job", &name.0, Some(&name.1), Vec::new()));
        }
        Ok(created)
    }

    /// Gives a job created by this apply its children.
    async fn set_children(&self, tx: &mut Transaction<'static, Any>, id: i64, child_ids: &[i64]) -> StoreResult<()> {
        if !child_ids.is_empty() {
            let q = self.sql("UPDATE job SET child_job_ids = ? WHERE id = ?");
            sqlx::query(&q)
                .bind(rows::join_ids(child_ids))
                .bind(id)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }

    /// Changes the existing job `old` as `w` wants it, when anything differs.
    async fn change_job(
        &self,
        tx: &mut Transaction<'static, Any>,
        w: &Wanted,
        old: &Job,
        child_ids: Vec<i64>,
        known: &JobNames,
        (opts, now, plan): (&ApplyOptions<'_>, i64, &mut ApplyPlan),
    ) -> StoreResult<()> {
        let name = w.name();
        let children_now: Vec<(String, String)> = old
            .child_job_ids
            .iter()
            .map(|c| {
                known
                    .names
                    .get(c)
                    .cloned()
                    .unwrap_or_else(|| (String::new(), c.to_string()))
            })
            .collect();
        let fields = changed_fields(old, &w.draft, &children_now, &w.children);
        if fields.is_empty() {
            return Ok(());
        }
        let mut draft = w.draft.clone();
        draft.group_id = old.group_id;
        draft.child_job_ids = child_ids;
        self.update_job_tx(tx, old, old.group_id, &draft, opts.author, now)
            .await
            .map_err(|e| match e {
                StoreError::Invalid(i) => StoreError::Invalid(job_err(&name.0, &name.1, i)),
                other => other,
            })?;
        plan.update.push(entry("job", &name.0, Some(&name.1), fields));
        Ok(())
    }

    /// Deletes the `doomed` jobs (with their runs and scripts); a job another remaining job
    /// names as a child cannot go.
    async fn prune(
        &self,
        tx: &mut Transaction<'static, Any>,
        doomed: &[(String, String)],
        known: &JobNames,
        plan: &mut ApplyPlan,
    ) -> StoreResult<()> {
        let doomed_ids: Vec<i64> = doomed.iter().filter_map(|n| known.ids.get(n).copied()).collect();
        if doomed_ids.is_empty() {
            return Ok(());
        }
        let edges = self.edges(tx).await?;
        for (parent, children) in &edges {
            if doomed_ids.contains(parent) {
                continue;
            }
            if let Some(c) = children.iter().find(|c| doomed_ids.contains(c)) {
                let (g, k) = &known.names[c];
                return Err(StoreError::Conflict(format!(
                    "prune would delete job '{k}' of group '{g}', a child of job {parent}; remove it there first"
                )));
            }
        }
        for (table, column) in super::jobs::JOB_DEPENDENTS {
            let sql = format!("DELETE FROM {table} WHERE {column} IN ({{in}})");
            self.execute_in(tx, &sql, &doomed_ids, &[]).await?;
        }
        self.execute_in(tx, "DELETE FROM job WHERE id IN ({in})", &doomed_ids, &[])
            .await?;
        for (g, k) in doomed {
            plan.delete.push(entry("job", g, Some(k), Vec::new()));
        }
        Ok(())
    }

    /// Refuses the change when, everything written, the children form a cycle anywhere.
    async fn refuse_cycles(&self, tx: &mut Transaction<'static, Any>, known: &JobNames) -> StoreResult<()> {
        let edges = self.edges(tx).await?;
        let Some(id) = find_cycle(&edges) else { return Ok(()) };
        let (g, k) = known
            .names
            .get(&id)
            .cloned()
            .unwrap_or_else(|| (String::new(), id.to_string()));
        Err(job_err(
            &g,
            &k,
            Invalid::new("children", "the children form a cycle back to this job"),
        )
        .into())
    }

    /// Every job's children, read in `tx`.
    async fn edges(&self, tx: &mut Transaction<'static, Any>) -> StoreResult<BTreeMap<i64, Vec<i64>>> {
        let all = sqlx::query("SELECT id, child_job_ids FROM job WHERE child_job_ids <> ''")
            .fetch_all(&mut **tx)
            .await?;
        let mut edges = BTreeMap::new();
        for r in &all {
            edges.insert(rows::int(r, "id")?, rows::id_list(&rows::text(r, "child_job_ids")?));
        }
        Ok(edges)
    }
}

/// A job on a cycle of `edges`, if there is one (iterative depth-first search).
fn find_cycle(edges: &BTreeMap<i64, Vec<i64>>) -> Option<i64> {
    // 1: on the current path, 2: done.
    let mut state: HashMap<i64, u8> = HashMap::new();
    for &start in edges.keys() {
        if state.contains_key(&start) {
            continue;
        }
        let mut stack: Vec<(i64, usize)> = vec![(start, 0)];
        state.insert(start, 1);
        while let Some((node, next)) = stack.last_mut() {
            let children = edges.get(node).map(Vec::as_slice).unwrap_or(&[]);
            if let Some(&c) = children.get(*next) {
                *next += 1;
                match state.get(&c) {
                    Some(1) => return Some(c),
                    Some(_) => {}
                    None => {
                        state.insert(c, 1);
                        stack.push((c, 0));
                    }
                }
            } else {
                state.insert(*node, 2);
                stack.pop();
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_are_found() {
        let mut e = BTreeMap::new();
        e.insert(1, vec![2]);
        e.insert(2, vec![3]);
        assert_eq!(find_cycle(&e), None);
        e.insert(3, vec![1]);
        assert!(find_cycle(&e).is_some());
    }

    #[test]
    fn child_references() {
        assert_eq!(child_ref("a", "x").unwrap(), ("a".into(), "x".into()));
        assert_eq!(child_ref("a", "b/x").unwrap(), ("b".into(), "x".into()));
        assert!(child_ref("a", "b/x y").is_err());
        assert!(child_ref("a", "/x").is_err());
    }
}
