//! `chime calendar …`: business calendars through the REST API (see docs/admin.md, "Business
//! calendars"): the weekdays that are workdays, the holidays they exclude and the make-up
//! workdays they include, and `.ics` files in and out. A job or workflow names one with
//! `--calendar` and then fires on its business days only.

use super::output::{one_line, table, time};
use super::{query_value, Body, Client, Failure};
use chime_admin::api::calendar_ics::MAX_ICS_BYTES;
use chime_admin::api::{BusinessCalendar, BusinessCalendarSpec, CalendarDate};
use reqwest::Method;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// `chime calendar …`
#[derive(clap::Args, Debug)]
pub struct CalendarArgs {
    #[command(subcommand)]
    pub(super) cmd: CalendarCmd,
}

#[derive(clap::Subcommand, Debug)]
pub(super) enum CalendarCmd {
    /// List the business calendars, with how many jobs and workflows use each.
    List,
    /// Show a calendar: its workdays and each date it excludes or includes.
    Show {
        /// The calendar's name.
        name: String,
    },
    /// Create a calendar.
    #[command(visible_alias = "add")]
    Create {
        /// Its name: 1–64 of `A-Z a-z 0-9 . _ -`, what a job's `--calendar` names.
        name: String,
        /// The IANA zone its dates are read in (a fire's date is its date there).
        #[arg(long, value_name = "ZONE")]
        zone: String,
        #[command(flatten)]
        fields: CalendarFields,
    },
    /// Change a calendar: what is given replaces its value, the rest stays. The jobs and
    /// workflows using it are planned again.
    #[command(visible_alias = "edit")]
    Update {
        /// The calendar's name.
        name: String,
        /// The IANA zone its dates are read in.
        #[arg(long, value_name = "ZONE")]
        zone: Option<String>,
        #[command(flatten)]
        fields: CalendarFields,
    },
    /// Delete a calendar; refused while a job or workflow uses it.
    #[command(visible_alias = "rm")]
    Delete {
        /// The calendar's name.
        name: String,
    },
    /// Create a calendar from an iCalendar file, or replace it with the file's days: each
    /// all-day event is a holiday, or a make-up workday when its CATEGORIES hold WORKDAY.
    Import {
        /// The calendar's name.
        name: String,
        /// The `.ics` file (`-` for standard input).
        file: PathBuf,
        /// The IANA zone its dates are read in (default: the file's X-WR-TIMEZONE).
        #[arg(long, value_name = "ZONE")]
        zone: Option<String>,
    },
    /// Write a calendar as an iCalendar file (to standard output unless -o is given).
    Export {
        /// The calendar's name.
        name: String,
        /// The file to write.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Calendar fields shared by `calendar create` and `calendar update`.
#[derive(clap::Args, Debug, Default)]
pub(super) struct CalendarFields {
    /// The usual workdays of a week, comma-separated `MON` … `SUN` (default on create: MON to
    /// FRI).
    #[arg(long, value_delimiter = ',', value_name = "DAYS")]
    workdays: Option<Vec<String>>,
    /// A date that is not a business day although its weekday is (a holiday), as `YYYY-MM-DD`
    /// or `YYYY-MM-DD=NAME`. Repeat for more; on update the dates given replace the calendar's
    /// (`--exclude ''` removes them all).
    #[arg(long, value_name = "DATE[=NAME]")]
    exclude: Vec<String>,
    /// A date that is a business day although its weekday is not (a make-up workday), as
    /// `YYYY-MM-DD` or `YYYY-MM-DD=NAME`. Repeat for more; on update the dates given replace the
    /// calendar's (`--include ''` removes them all).
    #[arg(long, value_name = "DATE[=NAME]")]
    include: Vec<String>,
    /// What the calendar is for.
    #[arg(long)]
    description: Option<String>,
}

impl CalendarFields {
    /// `spec` with the fields given put in; those left out keep its value.
    fn applied_to(self, mut spec: BusinessCalendarSpec) -> BusinessCalendarSpec {
        if let Some(description) = self.description {
            spec.description = Some(description);
        }
        if let Some(days) = self.workdays {
            // `--workdays ''` is one empty value: a week without usual workdays.
            spec.workdays = Some(
                days.iter()
                    .map(|d| d.trim().to_owned())
                    .filter(|d| !d.is_empty())
                    .collect(),
            );
        }
        if !self.exclude.is_empty() {
            spec.excluded = dates(&self.exclude);
        }
        if !self.include.is_empty() {
            spec.included = dates(&self.include);
        }
        spec
    }
}

/// The dates of `--exclude` or `--include`, in the order given, so the admin's error for the
/// n-th (`excluded[1].date`) is the n-th flag's. The admin checks each date.
fn dates(given: &[String]) -> Vec<CalendarDate> {
    given
        .iter()
        .map(|g| g.trim())
        .filter(|g| !g.is_empty())
        .map(|g| {
            let (date, name) = g.split_once('=').unwrap_or((g, ""));
            CalendarDate {
                date: date.trim().to_owned(),
                name: name.trim().to_owned(),
            }
        })
        .collect()
}

/// The path of calendar `name`, which stays one path segment whatever it holds.
fn calendar_path(name: &str) -> String {
    format!("/v1/calendars/{}", query_value(name))
}

/// Runs one `chime calendar` command.
pub(super) async fn dispatch(c: &Client, cmd: CalendarCmd) -> Result<(), Failure> {
    let print_one = |cal: BusinessCalendar| print_calendars(&[cal]);
    match cmd {
        CalendarCmd::List => c.print(c.call(Method::GET, "/v1/calendars", None).await?, |all: Vec<_>| {
            print_calendars(&all)
        }),
        CalendarCmd::Show { name } => c.print(c.call(Method::GET, &calendar_path(&name), None).await?, print_calendar),
        CalendarCmd::Create { name, zone, fields } => {
            let spec = fields.applied_to(BusinessCalendarSpec {
                name: Some(name),
                time_zone: zone,
                ..BusinessCalendarSpec::default()
            });
            c.print(c.send(Method::POST, "/v1/calendars", &spec).await?, print_one)
        }
        CalendarCmd::Update { name, zone, fields } => {
            // The API replaces a calendar whole: what is not given is sent as it is now.
            let now: BusinessCalendar = c.get(&calendar_path(&name)).await?;
            let spec = fields.applied_to(BusinessCalendarSpec {
                name: None,
                description: Some(now.description),
                time_zone: zone.unwrap_or(now.time_zone),
                workdays: Some(now.workdays),
                excluded: now.excluded,
                included: now.included,
            });
            c.print(c.send(Method::PUT, &calendar_path(&name), &spec).await?, print_one)
        }
        CalendarCmd::Delete { name } => {
            c.call(Method::DELETE, &calendar_path(&name), None).await?;
            c.print(json!({ "deleted": name }), |_: Value| outln!("deleted calendar {name}"))
        }
        CalendarCmd::Import { name, file, zone } => {
            let text = read_ics(&file)?;
            let mut path = format!("{}/ics", calendar_path(&name));
            if let Some(zone) = zone {
                path.push_str(&format!("?time_zone={}", query_value(&zone)));
            }
            let body = Body::Text {
                content_type: "text/calendar",
                text,
            };
            let answer = c.call_text(Method::PUT, &path, Some(body)).await?;
            let answer: Value =
                serde_json::from_str(&answer).map_err(|e| Failure(format!("unexpected answer from the admin: {e}")))?;
            c.print(answer, print_one)
        }
        CalendarCmd::Export { name, output } => {
            let path = format!("{}/ics", calendar_path(&name));
            let text = c.call_text(Method::GET, &path, None).await?;
            match output {
                // The file is the output: `--json` changes nothing.
                None => {
                    out!("{text}");
                    Ok(())
                }
                Some(file) => {
                    std::fs::write(&file, text).map_err(|e| Failure(format!("{}: {e}", file.display())))?;
                    let shown = file.display().to_string();
                    c.print(json!({ "exported": name, "file": shown }), |_: Value| {
                        outln!("wrote calendar {name} to {shown}")
                    })
                }
            }
        }
    }
}

/// Reads an `.ics` file (`-`: standard input) of at most the size the admin takes.
fn read_ics(file: &Path) -> Result<String, Failure> {
    use std::io::Read;
    let name = file.display().to_string();
    let mut bytes = Vec::new();
    let limit = MAX_ICS_BYTES as u64 + 1;
    let read = if name == "-" {
        std::io::stdin().take(limit).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(limit).read_to_end(&mut bytes))
    };
    read.map_err(|e| Failure(format!("{name}: {e}")))?;
    if bytes.len() > MAX_ICS_BYTES {
        return Err(Failure(format!("{name}: larger than {} KiB", MAX_ICS_BYTES / 1024)));
    }
    String::from_utf8(bytes).map_err(|_| Failure(format!("{name}: not a text file (UTF-8)")))
}

fn print_calendars(all: &[BusinessCalendar]) {
    let rows = all
        .iter()
        .map(|cal| {
            vec![
                cal.name.clone(),
                cal.time_zone.clone(),
                cal.workdays.join(","),
                cal.excluded.len().to_string(),
                cal.included.len().to_string(),
                cal.jobs.to_string(),
                cal.workflows.to_string(),
                time(cal.updated_at),
                one_line(&cal.description, 40),
            ]
        })
        .collect();
    table(
        &[
            "NAME",
            "ZONE",
            "WORKDAYS",
            "EXCLUDED",
            "INCLUDED",
            "JOBS",
            "WORKFLOWS",
            "UPDATED",
            "DESCRIPTION",
        ],
        rows,
    );
}

/// A calendar's fields, then its dated exceptions in date order, each with its weekday (a
/// make-up workday is most often a Saturday or a Sunday).
fn print_calendar(cal: BusinessCalendar) {
    let updated = if cal.updated_by.is_empty() {
        time(cal.updated_at)
    } else {
        format!("{} by {}", time(cal.updated_at), cal.updated_by)
    };
    let fields = [
        ("name", cal.name.clone()),
        ("description", cal.description.clone()),
        ("time_zone", cal.time_zone.clone()),
        ("workdays", cal.workdays.join(",")),
        ("used_by", format!("{} jobs, {} workflows", cal.jobs, cal.workflows)),
        ("updated", updated),
    ];
    table(
        &["FIELD", "VALUE"],
        fields.into_iter().map(|(k, v)| vec![k.to_owned(), v]).collect(),
    );
    let mut days: Vec<(&CalendarDate, &str)> = cal
        .excluded
        .iter()
        .map(|d| (d, "excluded"))
        .chain(cal.included.iter().map(|d| (d, "included")))
        .collect();
    if days.is_empty() {
        return;
    }
    days.sort_by(|a, b| a.0.date.cmp(&b.0.date));
    outln!();
    let rows = days
        .into_iter()
        .map(|(d, kind)| vec![d.date.clone(), weekday(&d.date), kind.to_owned(), d.name.clone()])
        .collect();
    table(&["DATE", "DAY", "KIND", "NAME"], rows);
}

/// `MON` … `SUN` of a `YYYY-MM-DD` date, as the calendar's workdays are written.
fn weekday(date: &str) -> String {
    date.parse::<chrono::NaiveDate>()
        .map(|d| d.format("%a").to_string().to_uppercase())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dates_take_an_optional_name_and_keep_their_order() {
        let d = dates(&given(&[
            "2025-10-02",
            " 2025-10-01 = National Day ",
            "",
            "2025-10-03=a=b",
        ]));
        let pairs: Vec<(&str, &str)> = d.iter().map(|d| (d.date.as_str(), d.name.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("2025-10-02", ""),
                ("2025-10-01", "National Day"),
                ("2025-10-03", "a=b")
            ]
        );
    }

    #[test]
    fn an_update_replaces_only_what_is_given() {
        let now = BusinessCalendarSpec {
            description: Some("China".into()),
            time_zone: "Asia/Shanghai".into(),
            workdays: Some(given(&["MON", "TUE"])),
            excluded: dates(&given(&["2025-10-01"])),
            included: dates(&given(&["2025-10-11"])),
            ..Default::default()
        };
        let fields = CalendarFields {
            exclude: given(&["2026-01-01=New Year"]),
            ..Default::default()
        };
        let spec = fields.applied_to(now.clone());
        assert_eq!(spec.excluded, dates(&given(&["2026-01-01=New Year"])));
        assert_eq!((&spec.included, &spec.workdays), (&now.included, &now.workdays));
        assert_eq!(spec.description.as_deref(), Some("China"));
        // An empty value empties the list, or the week.
        let fields = CalendarFields {
            include: given(&[""]),
            workdays: Some(given(&[""])),
            ..Default::default()
        };
        let spec = fields.applied_to(now);
        assert!(spec.included.is_empty());
        assert_eq!(spec.workdays, Some(Vec::new()));
    }

    #[test]
    fn weekdays_are_named_as_workdays_are() {
        assert_eq!(weekday("2025-10-11"), "SAT");
        assert_eq!(weekday("not a date"), "");
    }
}
