//! What an import did, per object: created, updated (which fields), unchanged, kept as Chime
//! has it, or not imported and why; printed for people or as JSON.

use crate::source::Version;
use chime_admin::store::{ImportOutcome, Imported, JobsDocument};
use chrono::TimeZone;
use chrono_tz::Tz;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write;

/// What kind of object an [`Entry`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An executor group, by app name.
    Group,
    /// A job, as `app_name/key`.
    Job,
    /// A console user.
    User,
    /// A run, by id.
    Run,
}

/// One object and what became of it.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// What it is.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// What became of it.
    #[serde(flatten)]
    pub result: Imported,
    /// The fields that changed (updates).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// What else to know about it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Entry {
    /// An object left out, and why.
    pub fn skipped(kind: Kind, name: &str, why: &str) -> Entry {
        Entry {
            kind,
            name: name.to_owned(),
            result: Imported::Skipped(why.to_owned()),
            fields: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A note on an object that is imported (its result is filled in after the import).
    pub fn noted(kind: Kind, name: &str, note: &str) -> Entry {
        Entry {
            kind,
            name: name.to_owned(),
            result: Imported::Unchanged,
            fields: Vec::new(),
            notes: vec![note.to_owned()],
        }
    }
}

/// Runs by what became of them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunSummary {
    /// Inserted under their own ids.
    pub created: usize,
    /// Given the result XXL-JOB recorded since an earlier import.
    pub updated: usize,
    /// Already there.
    pub unchanged: usize,
    /// Not imported (each is an entry).
    pub skipped: usize,
}

/// The report of one import.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The source, its password removed.
    pub source: String,
    /// The schema version found.
    pub version: Version,
    /// XXL-JOB's zone, as given.
    pub time_zone: String,
    /// Nothing was written.
    pub dry_run: bool,
    /// Every group, job and user, each run not imported.
    pub entries: Vec<Entry>,
    /// The runs.
    pub runs: RunSummary,
    /// Script versions added.
    pub glue_versions: usize,
    /// Notes on the whole import.
    pub notes: Vec<String>,
}

impl Report {
    /// Puts together what conversion decided and what the store did.
    pub fn build(
        source: String,
        version: Version,
        zone: Tz,
        document: &JobsDocument,
        decided: Vec<Entry>,
        notes: Vec<String>,
        outcome: &ImportOutcome,
    ) -> Report {
        let mut extra: HashMap<(Kind, String), Vec<String>> = HashMap::new();
        let mut entries = Vec::new();
        for e in decided {
            if matches!(e.result, Imported::Skipped(_)) {
                entries.push(e);
            } else {
                extra.entry((e.kind, e.name)).or_default().extend(e.notes);
            }
        }
        let plan_result = |kind: &str, group: &str, key: Option<&str>| -> (Imported, Vec<String>) {
            let hit = |list: &[chime_admin::store::PlanEntry]| {
                list.iter()
                    .find(|p| p.kind == kind && p.group == group && p.key.as_deref() == key)
                    .map(|p| p.fields.clone())
            };
            if hit(&outcome.plan.create).is_some() {
                (Imported::Created, Vec::new())
            } else if let Some(fields) = hit(&outcome.plan.update) {
                (Imported::Updated, fields)
            } else {
                (Imported::Unchanged, Vec::new())
            }
        };
        let fire_times: HashMap<(&str, &str), i64> = outcome
            .fire_times
            .iter()
            .map(|(g, k, at)| ((g.as_str(), k.as_str()), *at))
            .collect();
        for g in &document.groups {
            let (result, fields) = plan_result("group", &g.app_name, None);
            let mut notes = extra.remove(&(Kind::Group, g.app_name.clone())).unwrap_or_default();
            if outcome.tokens.contains(&g.app_name) {
                notes.push("its executor access token was set (as XXL-JOB had it)".to_owned());
            }
            entries.push(Entry {
                kind: Kind::Group,
                name: g.app_name.clone(),
                result,
                fields,
                notes,
            });
            for j in &g.jobs {
                let name = format!("{}/{}", g.app_name, j.key);
                let (result, fields) = plan_result("job", &g.app_name, Some(&j.key));
                let mut notes = extra.remove(&(Kind::Job, name.clone())).unwrap_or_default();
                if let Some(desc) = j.description.as_deref().filter(|d| !d.is_empty()) {
                    notes.insert(0, format!("\"{desc}\""));
                }
                if let Some(at) = fire_times.get(&(g.app_name.as_str(), j.key.as_str())) {
                    notes.push(format!(
                        "fires next at {} (XXL-JOB's next trigger time)",
                        local(*at, zone)
                    ));
                }
                entries.push(Entry {
                    kind: Kind::Job,
                    name,
                    result,
                    fields,
                    notes,
                });
            }
        }
        for (name, result) in &outcome.users {
            let notes = extra.remove(&(Kind::User, name.clone())).unwrap_or_default();
            entries.push(Entry {
                kind: Kind::User,
                name: name.clone(),
                result: result.clone(),
                fields: Vec::new(),
                notes,
            });
        }
        for (id, why) in &outcome.runs.skipped {
            entries.push(Entry::skipped(Kind::Run, &id.to_string(), why));
        }
        entries.sort_by_key(|e| e.kind);
        let mut notes = notes;
        if outcome
            .users
            .iter()
            .any(|(_, r)| matches!(r, Imported::Created | Imported::Updated))
        {
            notes.push(
                "users keep their XXL-JOB passwords: the MD5 (2.x) or SHA-256 (3.x) hash is accepted at their \
                 next console login and replaced there by an Argon2 hash"
                    .to_owned(),
            );
        }
        Report {
            source,
            version,
            time_zone: zone.name().to_owned(),
            dry_run: !outcome.applied,
            runs: RunSummary {
                created: outcome.runs.created,
                updated: outcome.runs.updated,
                unchanged: outcome.runs.unchanged,
                skipped: entries.iter().filter(|e| e.kind == Kind::Run).count(),
            },
            glue_versions: outcome.glue_versions,
            entries,
            notes,
        }
    }

    /// How many objects were not imported: the import's errors.
    pub fn errors(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.result, Imported::Skipped(_)))
            .count()
    }

    /// The report for people: one line per object (runs only when not imported), notes
    /// indented beneath, and a summary.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "source: XXL-JOB {} schema at {} (times and cron expressions in {})",
            self.version.label(),
            self.source,
            self.time_zone
        );
        let mut last = None;
        for e in &self.entries {
            if last != Some(e.kind) {
                let title = match e.kind {
                    Kind::Group => "groups",
                    Kind::Job => "jobs",
                    Kind::User => "users",
                    Kind::Run => "runs not imported",
                };
                let _ = writeln!(s, "{title}:");
                last = Some(e.kind);
            }
            let (mark, what) = match &e.result {
                Imported::Created => ("+", "created".to_owned()),
                Imported::Updated => ("~", format!("updated: {}", e.fields.join(", "))),
                Imported::Unchanged => ("=", "unchanged".to_owned()),
                Imported::Kept(why) => ("=", format!("kept: {why}")),
                Imported::Skipped(why) => ("!", format!("not imported: {why}")),
            };
            let name = if e.kind == Kind::Run {
                format!("run {}", e.name)
            } else {
                e.name.clone()
            };
            let _ = writeln!(s, "  {mark} {name}  {what}");
            for n in &e.notes {
                let _ = writeln!(s, "      {n}");
            }
        }
        let _ = writeln!(
            s,
            "runs: {} created, {} updated, {} unchanged, {} not imported",
            self.runs.created, self.runs.updated, self.runs.unchanged, self.runs.skipped
        );
        let _ = writeln!(s, "script versions: {} added", self.glue_versions);
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        let count = |kind: Kind, r: fn(&Imported) -> bool| {
            self.entries.iter().filter(|e| e.kind == kind && r(&e.result)).count()
        };
        let changed = |r: &Imported| matches!(r, Imported::Created | Imported::Updated);
        let _ = writeln!(
            s,
            "{}: {} groups, {} jobs, {} users created or updated; {} not imported",
            if self.dry_run {
                "dry run, nothing written"
            } else {
                "imported"
            },
            count(Kind::Group, changed),
            count(Kind::Job, changed),
            count(Kind::User, changed),
            self.errors()
        );
        s
    }
}

/// `at` as a wall time in `zone`.
fn local(at: i64, zone: Tz) -> String {
    zone.timestamp_millis_opt(at).single().map_or_else(
        || at.to_string(),
        |t| format!("{} {}", t.format("%Y-%m-%d %H:%M:%S"), zone.name()),
    )
}
