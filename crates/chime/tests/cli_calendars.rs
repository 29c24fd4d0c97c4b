//! `chime calendar` against `chime demo`: a business calendar made from flags, changed field by
//! field, imported from an `.ics` file and exported again; a job that names one with
//! `--calendar` (shown by `job show` and `job list`, its next fires leaving out the excluded
//! day); a calendar in use that cannot be deleted; bad dates refused naming their field.

use serde_json::Value;

mod common;

/// A holiday feed as published: a week-long all-day holiday (DTEND exclusive) and a make-up
/// workday marked by its category only (its summary says nothing of work), without a zone.
const HOLIDAYS_ICS: &str = "BEGIN:VCALENDAR\r\n\
VERSION:2.0\r\n\
PRODID:-//chime tests//holidays//CN\r\n\
BEGIN:VEVENT\r\n\
UID:national-day-2025@chime-tests\r\n\
DTSTAMP:20250101T000000Z\r\n\
DTSTART;VALUE=DATE:20251001\r\n\
DTEND;VALUE=DATE:20251009\r\n\
SUMMARY:国庆节 休\r\n\
END:VEVENT\r\n\
BEGIN:VEVENT\r\n\
UID:make-up-2025-10-11@chime-tests\r\n\
DTSTAMP:20250101T000000Z\r\n\
DTSTART;VALUE=DATE:20251011\r\n\
DTEND;VALUE=DATE:20251012\r\n\
SUMMARY:Make-up day\r\n\
CATEGORIES:WORKDAY\r\n\
END:VEVENT\r\n\
END:VCALENDAR\r\n";

/// The `(date, name)` pairs of a calendar's `excluded` or `included`.
fn dates(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list of dates: {list}"))
        .iter()
        .map(|d| {
            (
                d["date"].as_str().unwrap_or_default().to_owned(),
                d["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pair(date: &str, name: &str) -> (String, String) {
    (date.to_owned(), name.to_owned())
}

#[test]
fn calendars_are_made_changed_imported_exported_and_used_by_jobs_from_the_command_line() {
    let demo = common::demo("cli-calendars");

    // Made from flags: dates in order whatever order they were given in, MON to FRI by default.
    let made = demo.json(&[
        "calendar",
        "create",
        "CN",
        "--zone",
        "Asia/Shanghai",
        "--exclude",
        "2025-10-02",
        "--exclude",
        "2025-10-01=National Day",
        "--include",
        "2025-10-11=make-up",
        "--description",
        "China, by hand",
    ]);
    assert_eq!(made["name"], "CN", "{made}");
    assert_eq!(made["time_zone"], "Asia/Shanghai", "{made}");
    assert_eq!(made["workdays"], serde_json::json!(["MON", "TUE", "WED", "THU", "FRI"]));
    assert_eq!(
        dates(&made["excluded"]),
        [pair("2025-10-01", "National Day"), pair("2025-10-02", "")]
    );
    assert_eq!(dates(&made["included"]), [pair("2025-10-11", "make-up")]);

    // Shown for people: each date with its weekday and what it is.
    let shown = demo.ok(&["calendar", "show", "CN"]);
    let row = |date: &str| {
        shown
            .lines()
            .find(|l| l.starts_with(date))
            .unwrap_or_else(|| panic!("no row for {date}: {shown}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row("2025-10-01"), "2025-10-01 WED excluded National Day");
    assert_eq!(row("2025-10-11"), "2025-10-11 SAT included make-up");
    assert!(
        shown.contains("China, by hand") && shown.contains("Asia/Shanghai"),
        "{shown}"
    );

    // An update changes what it is given and keeps the rest.
    let changed = demo.json(&["calendar", "update", "CN", "--workdays", "mon,tue,wed,thu,fri,sat"]);
    assert_eq!(
        changed["workdays"],
        serde_json::json!(["MON", "TUE", "WED", "THU", "FRI", "SAT"]),
        "{changed}"
    );
    assert_eq!(changed["excluded"], made["excluded"]);
    assert_eq!(changed["included"], made["included"]);
    assert_eq!(changed["description"], "China, by hand");
    assert_eq!(changed["time_zone"], "Asia/Shanghai");

    // A bad date is refused naming the entry it is in, and nothing is changed or made.
    let err = demo.fails(&["calendar", "update", "CN", "--include", "2025-02-30"]);
    assert!(err.contains("included[0].date") && err.contains("2025-02-30"), "{err}");
    assert_eq!(demo.json(&["calendar", "show", "CN"])["included"], made["included"]);
    let err = demo.fails(&[
        "calendar",
        "create",
        "Bad",
        "--zone",
        "UTC",
        "--exclude",
        "2025-10-01",
        "--exclude",
        "2025-13-01=Nope",
    ]);
    assert!(err.contains("excluded[1].date") && err.contains("2025-13-01"), "{err}");
    let err = demo.fails(&["calendar", "show", "Bad"]);
    assert!(err.contains("404"), "{err}");
    // A calendar needs its zone (clap's usage error).
    let out = demo.run(&["calendar", "create", "NoZone"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    // Imported from a file that names no zone: the zone is given; each day of the holiday is
    // excluded under its summary, the WORKDAY event included.
    let ics = demo.dir.join("holidays.ics");
    std::fs::write(&ics, HOLIDAYS_ICS).unwrap();
    let ics = ics.display().to_string();
    let err = demo.fails(&["calendar", "import", "CN2025", &ics]);
    assert!(err.contains("time_zone"), "{err}");
    let imported = demo.json(&["calendar", "import", "CN2025", &ics, "--zone", "Asia/Shanghai"]);
    let holiday: Vec<(String, String)> = (1..=8).map(|d| pair(&format!("2025-10-0{d}"), "国庆节 休")).collect();
    assert_eq!(dates(&imported["excluded"]), holiday, "{imported}");
    assert_eq!(dates(&imported["included"]), [pair("2025-10-11", "Make-up day")]);
    assert_eq!(imported["time_zone"], "Asia/Shanghai");

    // Exported to standard output and to a file, the same text; imported again without a zone,
    // the file gives the same calendar.
    let exported = demo.ok(&["calendar", "export", "CN2025"]);
    for expected in [
        "BEGIN:VCALENDAR",
        "X-WR-TIMEZONE:Asia/Shanghai",
        "CATEGORIES:WORKDAY",
        "国庆节 休",
    ] {
        assert!(exported.contains(expected), "no {expected}: {exported}");
    }
    let copy = demo.dir.join("copy.ics");
    let wrote = demo.ok(&["calendar", "export", "CN2025", "-o", &copy.display().to_string()]);
    assert!(wrote.contains("copy.ics"), "{wrote}");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), exported);
    let again = demo.json(&["calendar", "import", "CN2025-copy", &copy.display().to_string()]);
    assert_eq!(again["time_zone"], "Asia/Shanghai", "{again}");
    assert_eq!(again["excluded"], imported["excluded"]);
    assert_eq!(again["included"], imported["included"]);

    // A job on a calendar: shown by `job show` and `job list`.
    let job = demo.add_job(
        "demoJobHandler",
        &["--cron", "0 0 9 * * ?", "--tz", "Asia/Shanghai", "--calendar", "CN2025"],
    );
    assert_eq!(job["calendar"], "CN2025", "{job}");
    let id = job["id"].as_i64().unwrap().to_string();
    let shown = demo.ok(&["job", "show", &id]);
    let line = shown
        .lines()
        .find(|l| l.starts_with("calendar "))
        .unwrap_or_else(|| panic!("no calendar in: {shown}"));
    assert_eq!(line.split_whitespace().collect::<Vec<_>>(), ["calendar", "CN2025"]);
    let listed = demo.ok(&["job", "list"]);
    assert!(listed.contains("CRON 0 0 9 * * ? (calendar CN2025)"), "{listed}");
    assert_eq!(demo.json(&["calendar", "show", "CN2025"])["jobs"], 1);
    // A calendar that does not exist is refused naming the field.
    let err = demo.fails(&["job", "update", &id, "--calendar", "Nowhere"]);
    assert!(err.contains("calendar"), "{err}");

    // In use, the calendar cannot be deleted; once the job leaves it, it can.
    let err = demo.fails(&["calendar", "delete", "CN2025"]);
    assert!(err.contains("is used by") && err.contains("HTTP 409"), "{err}");
    assert_eq!(demo.json(&["calendar", "show", "CN2025"])["name"], "CN2025");
    let left = demo.json(&["job", "update", &id, "--calendar", ""]);
    assert_eq!(left["calendar"], "", "{left}");
    assert_eq!(
        demo.ok(&["calendar", "delete", "CN2025"]).trim(),
        "deleted calendar CN2025"
    );
    let err = demo.fails(&["calendar", "show", "CN2025"]);
    assert!(err.contains("404"), "{err}");

    // A started job keeps to its calendar: tomorrow (in UTC) excluded, its next fires skip it.
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .date_naive()
        .to_string();
    demo.ok(&[
        "calendar",
        "update",
        "CN",
        "--zone",
        "UTC",
        "--workdays",
        "MON,TUE,WED,THU,FRI,SAT,SUN",
        "--exclude",
        &format!("{tomorrow}=Day off"),
    ]);
    let daily = demo.add_job(
        "demoJobHandler",
        &["--cron", "0 0 12 * * ?", "--tz", "UTC", "--calendar", "CN", "--start"],
    );
    let daily_id = daily["id"].as_i64().unwrap().to_string();
    let next = demo.json(&["job", "next", &daily_id, "--count", "3"]);
    let days: Vec<String> = next["next"]
        .as_array()
        .unwrap_or_else(|| panic!("next fires: {next}"))
        .iter()
        .map(|n| {
            chrono::DateTime::from_timestamp_millis(n["at"].as_i64().unwrap())
                .unwrap()
                .date_naive()
                .to_string()
        })
        .collect();
    assert_eq!(days.len(), 3, "{next}");
    assert!(!days.contains(&tomorrow), "{tomorrow} is excluded: {days:?}");
    // And both `job next` and `job show` say which day was left out, and why.
    let next_table = demo.ok(&["job", "next", &daily_id, "--count", "3"]);
    assert!(next_table.contains("skipped by calendar CN"), "{next_table}");
    let skipped_line = next_table.lines().find(|l| l.contains("Day off")).unwrap_or_default();
    assert!(skipped_line.contains(&tomorrow), "{next_table}");
    let shown = demo.ok(&["job", "show", &daily_id]);
    assert!(
        shown.contains("skipped by calendar CN") && shown.contains("Day off"),
        "{shown}"
    );

    // Listed with the jobs that use each.
    let list = demo.json(&["calendar", "list"]);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["CN", "CN2025-copy"], "{list}");
    assert_eq!(list[0]["jobs"], 1, "{list}");
    let table = demo.ok(&["calendar", "list"]);
    assert!(table.lines().next().unwrap_or_default().starts_with("NAME"), "{table}");
    assert_eq!(table.lines().count(), 3, "{table}");
}
