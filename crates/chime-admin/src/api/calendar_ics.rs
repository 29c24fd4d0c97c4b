//! Business calendars as iCalendar (`.ics`) files, the form holiday lists are published in.
//!
//! Each dated exception is an all-day event. A make-up workday is an event whose `CATEGORIES`
//! holds `WORKDAY`, or whose summary says it is one (`补班`, `上班`, "workday", as Chinese
//! holiday feeds write it); every other event is a holiday. An event over several days (its
//! `DTEND` is exclusive, as RFC 5545 says) covers each of them. The calendar's zone is
//! `X-WR-TIMEZONE` and its weekly workdays `X-CHIME-WORKDAYS`, both written on export; a file
//! without them takes the zone the import names and Monday to Friday.

use super::calendars::{CalendarDate, CalendarDays};
use super::Invalid;
use chrono::{Days, NaiveDate};
use icalendar::{Calendar, CalendarComponent, Component, DatePerhapsTime, EventLike};

/// Longest `.ics` file an import reads.
pub const MAX_ICS_BYTES: usize = 1024 * 1024;
/// Most days one event covers (a holiday of a year is a mistake in the file).
const MAX_EVENT_DAYS: u64 = 366;
/// The property carrying a calendar's weekly workdays.
const WORKDAYS_PROPERTY: &str = "X-CHIME-WORKDAYS";
/// The category marking a make-up workday.
const WORKDAY_CATEGORY: &str = "WORKDAY";
/// The category written on holidays.
const HOLIDAY_CATEGORY: &str = "HOLIDAY";

/// The calendar `name`, last changed at `changed_at` (epoch ms), as an `.ics` file. Each
/// event's `DTSTAMP` is that change, not the time of the export: RFC 5545 reads it as the
/// event's last modification when the file has no `METHOD`, and two exports of one calendar
/// give the same file.
pub fn to_ics(name: &str, description: &str, days: &CalendarDays, changed_at: i64) -> String {
    let stamp = chrono::DateTime::from_timestamp_millis(changed_at).unwrap_or_default();
    let mut cal = Calendar::new();
    cal.name(name).timezone(days.time_zone.as_str());
    if !description.is_empty() {
        cal.description(description);
    }
    cal.append_property((WORKDAYS_PROPERTY, days.workdays.join(",").as_str()));
    let kinds = [
        (&days.excluded, HOLIDAY_CATEGORY, "Holiday"),
        (&days.included, WORKDAY_CATEGORY, "Workday"),
    ];
    for (dates, category, default_summary) in kinds {
        for d in dates {
            let Ok(day) = d.date.parse::<NaiveDate>() else {
                continue;
            };
            let summary = if d.name.is_empty() { default_summary } else { &d.name };
            let mut event = icalendar::Event::new();
            event
                .uid(&format!("{}-{}@chime", d.date, name))
                .timestamp(stamp)
                .summary(summary)
                .starts(day)
                .ends(day.checked_add_days(Days::new(1)).unwrap_or(day))
                .add_property("CATEGORIES", category);
            cal.push(event.done());
        }
    }
    cal.done().to_string()
}

/// The definition an `.ics` file gives, in `zone` when the import names one, else in the zone
/// the file names; checked as a calendar body is.
pub fn from_ics(text: &str, zone: Option<&str>) -> Result<CalendarDays, Invalid> {
    if text.len() > MAX_ICS_BYTES {
        return Err(Invalid::new(
            "ics",
            format!("the file is over {} KiB", MAX_ICS_BYTES / 1024),
        ));
    }
    let parsed: Calendar = text
        .parse()
        .map_err(|e: String| Invalid::new("ics", format!("not an iCalendar file: {}", first_line(&e))))?;
    let time_zone = zone
        .map(str::to_owned)
        .or_else(|| parsed.get_timezone().map(str::to_owned))
        .ok_or_else(|| {
            Invalid::new(
                "time_zone",
                "the file names no zone (X-WR-TIMEZONE): give one with the import",
            )
        })?;
    let workdays = match parsed.property_value(WORKDAYS_PROPERTY) {
        Some(list) => list
            .split(',')
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty())
            .collect(),
        None => ["MON", "TUE", "WED", "THU", "FRI"].map(str::to_owned).to_vec(),
    };
    let mut excluded = Vec::new();
    let mut included = Vec::new();
    for (i, component) in parsed.components.iter().enumerate() {
        let CalendarComponent::Event(event) = component else {
            continue;
        };
        let summary = event.get_summary().unwrap_or("").trim().to_owned();
        let what = || format!("event {} ('{summary}')", i + 1);
        if event.property_value("RRULE").is_some() {
            return Err(Invalid::new(
                "ics",
                format!("{} repeats (RRULE); list its dates one by one", what()),
            ));
        }
        let start = event
            .get_start()
            .map(date_of)
            .ok_or_else(|| Invalid::new("ics", format!("{} has no start date (DTSTART)", what())))?;
        let end = event.get_end().map(date_of).filter(|end| *end > start);
        let span = end.map_or(1, |end| (end - start).num_days().max(1) as u64);
        if span > MAX_EVENT_DAYS {
            return Err(Invalid::new(
                "ics",
                format!("{} covers {span} days (at most {MAX_EVENT_DAYS})", what()),
            ));
        }
        let list = if is_workday(event) {
            &mut included
        } else {
            &mut excluded
        };
        for n in 0..span {
            if let Some(day) = start.checked_add_days(Days::new(n)) {
                list.push(CalendarDate {
                    date: day.to_string(),
                    name: summary.chars().take(100).collect(),
                });
            }
        }
    }
    // A feed lists a day twice when two holidays meet (or a file was merged): once is enough.
    for list in [&mut excluded, &mut included] {
        list.sort_by(|a, b| a.date.cmp(&b.date));
        list.dedup_by(|a, b| a.date == b.date);
    }
    CalendarDays {
        time_zone,
        workdays,
        excluded,
        included,
    }
    .checked()
}

/// The date an event starts or ends on: its date, or a time's date as written.
fn date_of(at: DatePerhapsTime) -> NaiveDate {
    match at {
        DatePerhapsTime::Date(d) => d,
        DatePerhapsTime::DateTime(t) => match t {
            icalendar::CalendarDateTime::Floating(n) => n.date(),
            icalendar::CalendarDateTime::Utc(u) => u.date_naive(),
            icalendar::CalendarDateTime::WithTimezone { date_time, .. } => date_time.date(),
        },
    }
}

/// Whether an event marks a make-up workday.
fn is_workday(event: &icalendar::Event) -> bool {
    // CATEGORIES may be given more than once: the parser keeps it among the repeatable ones.
    let categories = event.property_value("CATEGORIES").into_iter().chain(
        event
            .multi_properties()
            .get("CATEGORIES")
            .into_iter()
            .flatten()
            .map(|p| p.value()),
    );
    let category = categories
        .flat_map(|c| c.split(','))
        .any(|c| c.trim().eq_ignore_ascii_case(WORKDAY_CATEGORY));
    let summary = event.get_summary().unwrap_or("");
    category || summary.contains('补') || summary.contains("上班") || summary.to_ascii_lowercase().contains("workday")
}

fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(200) {
        Some((i, _)) => &line[..i],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A feed as Chinese holiday calendars publish it: the holiday as one event over several
    /// days, make-up workdays as their own events, no zone.
    const CN_FEED: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//holidays//CN\r\n\
        BEGIN:VEVENT\r\nUID:a\r\nDTSTAMP:20250101T000000Z\r\nDTSTART;VALUE=DATE:20251001\r\n\
        DTEND;VALUE=DATE:20251009\r\nSUMMARY:国庆节、中秋节 休\r\nEND:VEVENT\r\n\
        BEGIN:VEVENT\r\nUID:b\r\nDTSTAMP:20250101T000000Z\r\nDTSTART;VALUE=DATE:20250928\r\n\
        SUMMARY:国庆节 补班\r\nEND:VEVENT\r\n\
        BEGIN:VEVENT\r\nUID:c\r\nDTSTAMP:20250101T000000Z\r\nDTSTART;VALUE=DATE:20251011\r\n\
        CATEGORIES:WORKDAY\r\nSUMMARY:make-up\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    #[test]
    fn a_chinese_holiday_feed_imports_its_holidays_and_make_up_days() {
        let days = from_ics(CN_FEED, Some("Asia/Shanghai")).unwrap();
        let dates = |l: &[CalendarDate]| l.iter().map(|d| d.date.clone()).collect::<Vec<_>>();
        assert_eq!(dates(&days.excluded).len(), 8);
        assert_eq!(days.excluded[0].date, "2025-10-01");
        assert_eq!(days.excluded[7].date, "2025-10-08");
        assert_eq!(dates(&days.included), ["2025-09-28", "2025-10-11"]);
        assert_eq!(days.workdays, ["MON", "TUE", "WED", "THU", "FRI"]);
        // No zone in the file and none given: refused, naming the field.
        assert_eq!(from_ics(CN_FEED, None).unwrap_err().field, "time_zone");
    }

    #[test]
    fn an_export_imports_back_to_the_same_calendar() {
        let days = from_ics(CN_FEED, Some("Asia/Shanghai")).unwrap();
        let text = to_ics("CN", "China, 2025", &days, 1_760_000_000_000);
        assert!(text.contains("X-WR-TIMEZONE:Asia/Shanghai"), "{text}");
        assert!(text.contains("CATEGORIES:WORKDAY"), "{text}");
        // Stamped with the calendar's last change (2025-10-09T08:53:20Z), not the export's
        // time: the same calendar exports to the same file.
        assert!(text.contains("DTSTAMP:20251009T085320Z"), "{text}");
        assert_eq!(to_ics("CN", "China, 2025", &days, 1_760_000_000_000), text);
        assert_eq!(from_ics(&text, None).unwrap(), days);
        // The zone a file names wins over none, the import's over the file's.
        assert_eq!(from_ics(&text, Some("UTC")).unwrap().time_zone, "UTC");
    }

    #[test]
    fn files_that_cannot_be_a_calendar_are_refused() {
        assert_eq!(from_ics("hello", Some("UTC")).unwrap_err().field, "ics");
        let repeating = CN_FEED.replace("SUMMARY:make-up\r\n", "SUMMARY:x\r\nRRULE:FREQ=YEARLY\r\n");
        let err = from_ics(&repeating, Some("UTC")).unwrap_err();
        assert!(err.message.contains("RRULE"), "{err:?}");
        let year_long = CN_FEED.replace("DTEND;VALUE=DATE:20251009", "DTEND;VALUE=DATE:20271009");
        assert!(from_ics(&year_long, Some("UTC"))
            .unwrap_err()
            .message
            .contains("covers"));
    }
}
