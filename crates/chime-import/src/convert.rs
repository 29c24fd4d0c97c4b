//! XXL-JOB's rows as Chime's import: groups and jobs as a jobs document (each job keyed
//! `xxl-<id>`, so a second import finds it again), their fire times and script history,
//! users with their password hashes, runs under their own ids. No I/O: every value is
//! interpreted here, and whatever Chime cannot take is left out with the reason, per object.

use crate::report::{Entry, Kind};
use crate::source::{Omitted, GLUE_HISTORY_BUDGET, GLUE_VERSIONS_KEPT, MAX_GLUE_SOURCE_BYTES, MAX_USERS};
use crate::source::{Source, Version, XxlGroup, XxlJob, XxlLog};
use chime_admin::address_policy::ExecutorNetworks;
use chime_admin::api::SchedulePatch;
use chime_admin::model::validate_manual_address;
use chime_admin::password::{legacy_hash, verify_password};
use chime_admin::store::{
    check_document, ApplyOptions, DocGroup, DocJob, ImportBundle, ImportedGlueVersion, ImportedRun, ImportedUser,
    JobHistory, JobsDocument, HANDLE_MSG_MAX,
};
use chime_protocol::{GlueType, ProtocolGeneration, ScheduleType, TriggerType};
use chrono::{NaiveDateTime, TimeZone};
use chrono_tz::Tz;
use std::collections::{BTreeMap, HashMap, HashSet};

/// How to read the source.
#[derive(Debug, Clone)]
pub struct Rules<'a> {
    /// XXL-JOB's zone: its `DATETIME` columns are wall times there, and its cron expressions
    /// were evaluated there (the zone of the XXL-JOB admin's JVM).
    pub zone: Tz,
    /// How Chime calls the groups' executors; `None`: the one the schema's version speaks.
    pub protocol: Option<ProtocolGeneration>,
    /// Import every job stopped (a trial import while XXL-JOB still schedules).
    pub stopped: bool,
    /// `--executor-networks` of the admin, for manual addresses.
    pub networks: &'a ExecutorNetworks,
}

/// The bundle to write and what was decided on the way.
#[derive(Debug, Default)]
pub struct Converted {
    /// What to write.
    pub bundle: ImportBundle,
    /// Objects left out (with why) and notes on objects imported, by object.
    pub entries: Vec<Entry>,
    /// Notes on the whole import.
    pub notes: Vec<String>,
}

/// The key a job imported from XXL-JOB has in Chime.
pub fn job_key(xxl_id: i64) -> String {
    format!("xxl-{xxl_id}")
}

/// The protocol generation XXL-JOB of `version` speaks to its executors.
pub fn protocol_of(version: Version) -> ProtocolGeneration {
    match version {
        Version::V2 | Version::V3_2 => ProtocolGeneration::G2,
        Version::V3_4 => ProtocolGeneration::G3,
        Version::V3_5 => ProtocolGeneration::G4,
    }
}

/// A `DATETIME` text in `zone` as epoch ms (0 for none or unreadable). In a repeated hour
/// (clocks going back) the earlier instant is taken; a time in a skipped hour is read an hour
/// later, as the JVM reads it.
pub fn epoch_ms(text: Option<&str>, zone: Tz) -> i64 {
    let Some(naive) = text.and_then(|t| NaiveDateTime::parse_from_str(t.trim(), "%Y-%m-%d %H:%M:%S").ok()) else {
        return 0;
    };
    match zone.from_local_datetime(&naive) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => t.timestamp_millis(),
        chrono::LocalResult::None => zone
            .from_local_datetime(&(naive + chrono::Duration::hours(1)))
            .earliest()
            .map_or(0, |t| t.timestamp_millis()),
    }
}

/// The trigger type XXL-JOB wrote into a run's trigger report (its title in any of its three
/// languages); `CRON` when it names none.
pub fn trigger_type_of(trigger_msg: &str) -> TriggerType {
    const TITLES: [(TriggerType, &[&str]); 5] = [
        (TriggerType::Manual, &["Manual trigger", "手动触发", "手動觸發"]),
        (
            TriggerType::Retry,
            &["Fail retry trigger", "失败重试触发", "失敗重試觸發"],
        ),
        (TriggerType::Parent, &["Parent job trigger", "父任务触发", "父任務觸發"]),
        (TriggerType::Api, &["Api trigger", "API触发", "API觸發"]),
        (
            TriggerType::Misfire,
            &["Misfire compensation trigger", "调度过期补偿", "調度過期補償"],
        ),
    ];
    TITLES
        .iter()
        .find(|(_, titles)| titles.iter().any(|t| trigger_msg.contains(t)))
        .map_or(TriggerType::Cron, |(t, _)| *t)
}

/// `s` cut to its first `max` characters.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max).collect()
    }
}

/// Checks one group, or one job of a group, as `apply` would.
fn check(group: &DocGroup, job: Option<&DocJob>, opts: &ApplyOptions<'_>) -> Result<(), String> {
    let mut g = group.clone();
    g.jobs = job.into_iter().cloned().collect();
    if let Some(j) = g.jobs.first_mut() {
        j.children = None;
    }
    let doc = JobsDocument {
        groups: vec![g],
        ..JobsDocument::default()
    };
    check_document(&doc, opts).map_err(|e| e.message)
}

/// Converts everything read from XXL-JOB.
pub fn convert(source: &Source, rules: &Rules<'_>, opts: &ApplyOptions<'_>) -> Converted {
    let mut out = Converted::default();
    let protocol = rules.protocol.unwrap_or_else(|| protocol_of(source.version));
    if source.version == Version::V3_2 && rules.protocol.is_none() {
        out.notes.push(
            "the schema is XXL-JOB 3.2 or 3.3: groups call their executors with the 2.4 protocol (G2); \
             for 3.3 executors import again with --protocol G3"
                .to_owned(),
        );
    }
    if source.version != Version::V3_5 {
        out.notes.push(format!(
            "XXL-JOB {} keeps its executor access token in its settings, not in the database: start \
             `chime admin` with --access-token set to its xxl.job.accessToken, and the executors keep theirs",
            source.version.label()
        ));
    }

    // Groups, by XXL-JOB id.
    let mut apps: HashMap<i64, String> = HashMap::new();
    let mut groups: BTreeMap<String, DocGroup> = BTreeMap::new();
    for g in &source.groups {
        let (doc, notes) = group_of(g, protocol, rules.networks);
        let name = g.app_name.trim().to_owned();
        if groups.contains_key(&name) {
            out.entries
                .push(Entry::skipped(Kind::Group, &name, "a second group with this app name"));
            continue;
        }
        if let Err(e) = check(&doc, None, opts) {
            out.entries.push(Entry::skipped(Kind::Group, &name, &e));
            continue;
        }
        if let Some(token) = g.access_token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            if token.len() > 255 {
                out.entries.push(Entry::noted(
                    Kind::Group,
                    &name,
                    "its access token is longer than 255 characters; not set",
                ));
            } else {
                out.bundle.group_tokens.push((name.clone(), token.to_owned()));
            }
        }
        out.entries
            .extend(notes.into_iter().map(|n| Entry::noted(Kind::Group, &name, &n)));
        apps.insert(g.id, name.clone());
        groups.insert(name, doc);
    }

    // Jobs, then their children once every job is known to be in or out.
    let mut jobs: HashMap<i64, (String, DocJob, Vec<i64>)> = HashMap::new();
    for j in &source.jobs {
        let Some(app) = apps.get(&j.job_group) else {
            out.entries.push(Entry::skipped(
                Kind::Job,
                &format!("{}/{}", j.job_group, job_key(j.id)),
                &format!("its group {} was not imported", j.job_group),
            ));
            continue;
        };
        let name = format!("{app}/{}", job_key(j.id));
        let (doc, notes) = job_of(j, source.version, rules);
        if j.glue_source_bytes > MAX_GLUE_SOURCE_BYTES {
            let size = format!(
                "its GLUE source is {} bytes, over the {} KiB a job's source may have",
                j.glue_source_bytes,
                MAX_GLUE_SOURCE_BYTES / 1024
            );
            if glue_type_of(&j.glue_type).is_some_and(|t| t != GlueType::Bean) {
                out.entries.push(Entry::skipped(Kind::Job, &name, &size));
                continue;
            }
            out.entries.push(Entry::noted(
                Kind::Job,
                &name,
                &format!("{size}; a BEAN job does not run it: left out"),
            ));
        }
        if let Err(e) = check(&groups[app], Some(&doc), opts) {
            out.entries.push(Entry::skipped(Kind::Job, &name, &e));
            continue;
        }
        out.entries
            .extend(notes.into_iter().map(|n| Entry::noted(Kind::Job, &name, &n)));
        let children = j
            .child_jobid
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .filter_map(|c| match c.parse::<i64>() {
                Ok(id) => Some(id),
                Err(_) => {
                    out.entries.push(Entry::noted(
                        Kind::Job,
                        &name,
                        &format!("child job '{c}' is not a job id; left out"),
                    ));
                    None
                }
            })
            .collect();
        jobs.insert(j.id, (app.clone(), doc, children));
    }
    let mut ids: Vec<i64> = jobs.keys().copied().collect();
    ids.sort_unstable();
    for id in &ids {
        let (app, _, children) = &jobs[id];
        let name = format!("{app}/{}", job_key(*id));
        let mut refs = Vec::new();
        for c in children {
            if *c == *id {
                out.entries.push(Entry::noted(
                    Kind::Job,
                    &name,
                    "names itself as a child (XXL-JOB skips that); left out",
                ));
            } else if let Some((capp, _, _)) = jobs.get(c) {
                refs.push(if capp == app {
                    job_key(*c)
                } else {
                    format!("{capp}/{}", job_key(*c))
                });
            } else {
                out.entries.push(Entry::noted(
                    Kind::Job,
                    &name,
                    &format!("child job {c} was not imported (missing in XXL-JOB or left out); left out"),
                ));
            }
        }
        let entry = jobs.get_mut(id).expect("listed above");
        entry.1.children = Some(refs);
    }
    for id in &ids {
        let (app, doc, _) = jobs.remove(id).expect("listed above");
        groups.get_mut(&app).expect("checked group").jobs.push(doc);
    }
    out.bundle.document = JobsDocument {
        groups: groups.into_values().collect(),
        ..JobsDocument::default()
    };

    // What the document does not carry: the script history read (bounded: see `source`), and
    // per job what of it was left out.
    let mut glues: HashMap<i64, Vec<ImportedGlueVersion>> = HashMap::new();
    let mut glue_notes: HashMap<i64, Vec<String>> = HashMap::new();
    for (job, n) in &source.older_glues {
        glue_notes.entry(*job).or_default().push(format!(
            "{n} older script version(s) left out: the newest {GLUE_VERSIONS_KEPT} are imported"
        ));
    }
    for g in &source.glues {
        let (Some(glue_type), Some(glue_source)) = (glue_type_of(&g.glue_type), &g.glue_source) else {
            let at = g.add_time.as_deref().unwrap_or("?");
            let why = match g.omitted {
                Some(Omitted::UnknownType) => format!("its type '{}' is not one Chime knows", g.glue_type.trim()),
                Some(Omitted::TooLarge) => format!(
                    "its source is {} bytes, over the {} KiB a job's source may have",
                    g.bytes,
                    MAX_GLUE_SOURCE_BYTES / 1024
                ),
                Some(Omitted::OverBudget) | None => format!(
                    "the import reads at most {} MiB of script history",
                    GLUE_HISTORY_BUDGET / (1024 * 1024)
                ),
            };
            glue_notes
                .entry(g.job_id)
                .or_default()
                .push(format!("script version of {at} left out: {why}"));
            continue;
        };
        glues.entry(g.job_id).or_default().push(ImportedGlueVersion {
            glue_type: glue_type.as_str().to_owned(),
            glue_source: glue_source.clone(),
            remark: g.glue_remark.clone(),
            created_at: epoch_ms(g.add_time.as_deref(), rules.zone),
        });
    }
    let in_document: HashSet<(&str, &str)> = out
        .bundle
        .document
        .groups
        .iter()
        .flat_map(|g| g.jobs.iter().map(|j| (g.app_name.as_str(), j.key.as_str())))
        .collect();
    let imported: HashMap<i64, &str> = source
        .jobs
        .iter()
        .filter_map(|j| {
            let app = apps.get(&j.job_group)?;
            in_document
                .contains(&(app.as_str(), job_key(j.id).as_str()))
                .then_some((j.id, app.as_str()))
        })
        .collect();
    for j in &source.jobs {
        let Some(app) = imported.get(&j.id) else { continue };
        let name = format!("{app}/{}", job_key(j.id));
        for note in glue_notes.remove(&j.id).unwrap_or_default() {
            out.entries.push(Entry::noted(Kind::Job, &name, &note));
        }
        out.bundle.jobs.push(JobHistory {
            group: (*app).to_owned(),
            key: job_key(j.id),
            created_at: epoch_ms(j.add_time.as_deref(), rules.zone),
            next_fire_at: j.trigger_next_time,
            last_fire_at: j.trigger_last_time,
            glue_updated_at: epoch_ms(j.glue_updatetime.as_deref(), rules.zone),
            glue_remark: j.glue_remark.clone(),
            glue_versions: glues.remove(&j.id).unwrap_or_default(),
        });
    }

    users_of(source, &apps, &mut out);

    for l in &source.logs {
        match run_of(l, &imported, rules.zone) {
            Ok(r) => out.bundle.runs.push(r),
            Err(why) => out.entries.push(Entry::skipped(Kind::Run, &l.id.to_string(), &why)),
        }
    }
    out.bundle.run_ids_above = source.max_log_id;
    out
}

/// Passwords so common that an account with one is as good as open: XXL-JOB's seed `123456`
/// first. An imported user's MD5 or SHA-256 hash is checked against each (cheap: no salt).
const WEAK_PASSWORDS: [&str; 10] = [
    "123456",
    "password",
    "admin",
    "12345678",
    "123456789",
    "111111",
    "000000",
    "admin123",
    "xxl-job",
    "qwerty",
];

/// The well-known password `hash` (a legacy hash) is of, if it is one.
fn weak_password(hash: &str) -> Option<&'static str> {
    WEAK_PASSWORDS.into_iter().find(|p| verify_password(p, hash))
}

/// The users, with what to know about them: those with a well-known password (XXL-JOB's seed
/// `admin`/`123456`, kept by many installations) and how many are administrators, said in the
/// report rather than carried over silently.
fn users_of(source: &Source, apps: &HashMap<i64, String>, out: &mut Converted) {
    let mut weak = Vec::new();
    for u in &source.users {
        let name = u.username.trim();
        if name.is_empty() || name.len() > 64 || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            out.entries.push(Entry::skipped(
                Kind::User,
                name,
                "a user name is 1 to 64 characters without spaces",
            ));
            continue;
        }
        let Some(hash) = legacy_hash(&u.password) else {
            out.entries.push(Entry::skipped(
                Kind::User,
                name,
                "its password is not an MD5 or SHA-256 hex digest, so nobody could sign in with it",
            ));
            continue;
        };
        let mut groups = Vec::new();
        if u.role != 1 {
            for p in u.permission.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                match p.parse::<i64>().ok().and_then(|id| apps.get(&id)) {
                    Some(app) => groups.push(app.clone()),
                    None => out.entries.push(Entry::noted(
                        Kind::User,
                        name,
                        &format!("permission for group '{p}', which was not imported; left out"),
                    )),
                }
            }
        }
        if let Some(p) = weak_password(&hash) {
            let seed = if name == "admin" && p == "123456" {
                "XXL-JOB's seed password"
            } else {
                "a well-known password"
            };
            out.entries.push(Entry::noted(
                Kind::User,
                name,
                &format!("its password is {seed} ({p}): change it at once (chime admin reset-password)"),
            ));
            weak.push(name.to_owned());
        }
        out.bundle.users.push(ImportedUser {
            username: name.to_owned(),
            password_hash: hash,
            admin: u.role == 1,
            groups,
        });
    }
    let users = &out.bundle.users;
    let admins = users.iter().filter(|u| u.admin).count();
    out.notes.push(format!(
        "users: {} of {} read, {admins} of them administrators (every group, users and settings)",
        users.len(),
        source.user_count
    ));
    if source.user_count > source.users.len() as i64 {
        out.notes.push(format!(
            "only the first {MAX_USERS} users (by id) were read; {} more were left out",
            source.user_count - source.users.len() as i64
        ));
    }
    if !weak.is_empty() {
        out.notes.push(format!(
            "{} user(s) with a well-known password, which anyone can sign in with: {}",
            weak.len(),
            weak.join(", ")
        ));
    }
}

/// A group as a document group, with notes on what was changed on the way.
fn group_of(g: &XxlGroup, protocol: ProtocolGeneration, networks: &ExecutorNetworks) -> (DocGroup, Vec<String>) {
    let mut notes = Vec::new();
    let manual = g.address_type == 1;
    let addresses = if manual {
        let mut kept = Vec::new();
        for a in g.address_list.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            match validate_manual_address(a, networks) {
                Ok(a) => kept.push(a),
                Err(e) => notes.push(format!("address '{a}' left out: {e}")),
            }
        }
        Some(kept)
    } else {
        None
    };
    let title = if g.title.trim().is_empty() {
        g.app_name.trim()
    } else {
        g.title.trim()
    };
    (
        DocGroup {
            app_name: g.app_name.trim().to_owned(),
            title: Some(cut(title, 128)),
            address_type: Some(if manual {
                chime_admin::model::AddressType::Manual
            } else {
                chime_admin::model::AddressType::Auto
            }),
            addresses,
            protocol: Some(protocol.as_str().to_owned()),
            ..DocGroup::default()
        },
        notes,
    )
}

/// XXL-JOB's GLUE type name as Chime's: the names are the same (2.x's `GLUE_PYTHON` ran
/// `python`, Chime's runs `python3`: noted per job).
fn glue_type_of(name: &str) -> Option<GlueType> {
    name.trim().parse::<GlueType>().ok()
}

/// A job as a document job, with notes on what was changed on the way.
fn job_of(j: &XxlJob, version: Version, rules: &Rules<'_>) -> (DocJob, Vec<String>) {
    let mut notes = Vec::new();
    let or_default = |value: &str, default: &str, field: &str, notes: &mut Vec<String>| -> String {
        let v = value.trim();
        if v.is_empty() {
            notes.push(format!("{field} was empty; {default}, as XXL-JOB reads it"));
            default.to_owned()
        } else {
            v.to_owned()
        }
    };
    let schedule_type = or_default(&j.schedule_type, "NONE", "schedule type", &mut notes);
    let misfire = match j.misfire_strategy.trim() {
        "FIRE_ONCE_NOW" => "FIRE_ONCE_NOW".to_owned(),
        "DO_NOTHING" => "DO_NOTHING".to_owned(),
        other => {
            notes.push(format!(
                "misfire strategy '{other}' is read as DO_NOTHING, as XXL-JOB reads it"
            ));
            "DO_NOTHING".to_owned()
        }
    };
    let route = or_default(&j.executor_route_strategy, "FIRST", "route strategy", &mut notes);
    let block = or_default(
        &j.executor_block_strategy,
        "SERIAL_EXECUTION",
        "block strategy",
        &mut notes,
    );
    let glue_type = match glue_type_of(&j.glue_type) {
        Some(t) => {
            if t == GlueType::GluePython && version == Version::V2 {
                notes.push(
                    "GLUE_PYTHON: XXL-JOB 2.x executors run `python`, Chime's executor runs `python3`".to_owned(),
                );
            }
            t.as_str().to_owned()
        }
        None => j.glue_type.trim().to_owned(),
    };
    let scheduled = schedule_type != ScheduleType::None.as_str();
    let mut running = j.trigger_status == 1 && scheduled;
    if j.trigger_status == 1 && !scheduled {
        notes.push("running without a schedule in XXL-JOB; imported stopped".to_owned());
    }
    if running && rules.stopped {
        notes.push("running in XXL-JOB; imported stopped (--stopped)".to_owned());
        running = false;
    }
    (
        DocJob {
            key: job_key(j.id),
            description: Some(j.job_desc.clone()),
            // Descriptive fields added later are left out (`..`): they take their default.
            #[allow(clippy::needless_update)]
            info: chime_admin::api::JobInfoPatch {
                owner: Some(j.author.clone()),
                alarm_contacts: Some(j.alarm_email.clone()),
                ..Default::default()
            },
            // XXL-JOB has no flow control: no priority, no concurrency key.
            flow: Default::default(),
            more_schedules: None,
            schedule: SchedulePatch {
                schedule_type: Some(schedule_type),
                schedule_expr: Some(j.schedule_conf.trim().to_owned()),
                time_zone: Some(rules.zone.name().to_owned()),
                misfire_strategy: Some(misfire),
                // XXL-JOB has no business calendars: every day.
                calendar: None,
            },
            task: chime_admin::api::JobTaskPatch {
                route_strategy: Some(route),
                handler: Some(j.executor_handler.trim().to_owned()),
                param: Some(j.executor_param.clone()),
                block_strategy: Some(block),
                timeout_secs: Some(j.executor_timeout),
                retry_count: Some(j.executor_fail_retry_count),
                glue_type: Some(glue_type),
                glue_source: Some(j.glue_source.clone()),
            },
            children: None,
            running: Some(running),
        },
        notes,
    )
}

/// A log row as a run, or why it cannot be one.
fn run_of(l: &XxlLog, imported: &HashMap<i64, &str>, zone: Tz) -> Result<ImportedRun, String> {
    let Some(app) = imported.get(&l.job_id) else {
        return Err(format!("its job {} was not imported", l.job_id));
    };
    let scheduled_at = epoch_ms(l.trigger_time.as_deref(), zone);
    if scheduled_at == 0 {
        return Err("it has no trigger time".to_owned());
    }
    let (shard_index, shard_total) = l
        .executor_sharding_param
        .split_once('/')
        .and_then(|(i, n)| Some((i.trim().parse::<i64>().ok()?, n.trim().parse::<i64>().ok()?)))
        .filter(|(i, n)| *n > 0 && (0..*n).contains(i))
        .unwrap_or((0, 1));
    let waiting = l.handle_code == 0 && matches!(l.trigger_code, 0 | 200);
    let (mut trigger_code, mut trigger_msg) = (l.trigger_code, l.trigger_msg.clone());
    if waiting && l.trigger_code == 0 {
        // XXL-JOB wrote the run but not whether it reached an executor: Chime does not send
        // it (it may have run), and records it as failed to trigger.
        trigger_code = 500;
        trigger_msg.push_str("<br>Imported from XXL-JOB without a trigger result: not sent again.");
    }
    let still_waiting = waiting && trigger_code == 200;
    // A finished run's alarm was XXL-JOB's to send: pending (0) or locked (-1) ones are done.
    let alarm_status = if !still_waiting && matches!(l.alarm_status, 0 | -1) {
        1
    } else {
        l.alarm_status
    };
    Ok(ImportedRun {
        id: l.id,
        group: (*app).to_owned(),
        key: job_key(l.job_id),
        scheduled_at,
        trigger_type: trigger_type_of(&l.trigger_msg),
        executor_address: cut(l.executor_address.trim().trim_end_matches('/'), 255),
        handler: cut(&l.executor_handler, 255),
        param: cut(&l.executor_param, 65_535),
        shard_index,
        shard_total,
        retry_count: l.executor_fail_retry_count.clamp(0, 100),
        trigger_code,
        trigger_msg: cut(&trigger_msg, HANDLE_MSG_MAX),
        handled_at: epoch_ms(l.handle_time.as_deref(), zone),
        handle_code: l.handle_code,
        handle_msg: cut(&l.handle_msg, HANDLE_MSG_MAX),
        alarm_status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_are_read_in_the_zone_of_xxl_job() {
        let shanghai: Tz = "Asia/Shanghai".parse().unwrap();
        assert_eq!(epoch_ms(Some("2026-11-26 08:00:00"), shanghai), 1_795_651_200_000);
        assert_eq!(epoch_ms(Some("2026-11-26 00:00:00"), Tz::UTC), 1_795_651_200_000);
        assert_eq!(epoch_ms(None, Tz::UTC), 0);
        assert_eq!(epoch_ms(Some("yesterday"), Tz::UTC), 0);
        // Berlin skips 02:00-03:00 on 2026-03-29: read an hour later.
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        assert_eq!(
            epoch_ms(Some("2026-03-29 02:30:00"), berlin),
            epoch_ms(Some("2026-03-29 03:30:00"), berlin)
        );
    }

    #[test]
    fn trigger_types_from_the_report_in_each_language() {
        assert_eq!(trigger_type_of("任务触发类型：手动触发<br>"), TriggerType::Manual);
        assert_eq!(
            trigger_type_of("Trigger Type：Fail retry trigger<br>"),
            TriggerType::Retry
        );
        assert_eq!(trigger_type_of("任務觸發類型：父任務觸發"), TriggerType::Parent);
        assert_eq!(trigger_type_of("任务触发类型：Cron触发"), TriggerType::Cron);
        assert_eq!(trigger_type_of(""), TriggerType::Cron);
    }

    #[test]
    fn unsent_runs_are_not_sent_again_and_old_alarms_are_done() {
        let imported: HashMap<i64, &str> = [(7, "app")].into_iter().collect();
        let log = XxlLog {
            id: 90,
            job_id: 7,
            trigger_time: Some("2026-11-26 00:00:00".into()),
            executor_sharding_param: "1/3".into(),
            ..XxlLog::default()
        };
        let r = run_of(&log, &imported, Tz::UTC).unwrap();
        assert_eq!((r.id, r.trigger_code, r.shard_index, r.shard_total), (90, 500, 1, 3));
        assert!(r.trigger_msg.contains("not sent again"));
        let waiting = run_of(
            &XxlLog {
                trigger_code: 200,
                ..log.clone()
            },
            &imported,
            Tz::UTC,
        )
        .unwrap();
        assert_eq!((waiting.trigger_code, waiting.alarm_status), (200, 0));
        let failed = run_of(
            &XxlLog {
                trigger_code: 200,
                handle_code: 500,
                ..log.clone()
            },
            &imported,
            Tz::UTC,
        )
        .unwrap();
        assert_eq!(failed.alarm_status, 1);
        assert!(run_of(&XxlLog { job_id: 8, ..log }, &imported, Tz::UTC).is_err());
    }
}
