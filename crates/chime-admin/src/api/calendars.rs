//! Business calendars on the wire: the body that defines one ([`BusinessCalendarSpec`]), the
//! answer that shows one ([`BusinessCalendar`]) and the definition stored and read back
//! ([`CalendarDays`]), from which the scheduler's [`BusinessDays`] is built.

use super::Invalid;
use crate::business_days::{weekday_named, BusinessDays, WEEKDAYS};
use chrono::{Datelike, NaiveDate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Longest calendar name.
pub const MAX_CALENDAR_NAME_CHARS: usize = 64;
/// Most dated exceptions (excluded and included together) one calendar holds: decades of a
/// country's holidays.
pub const MAX_CALENDAR_DATES: usize = 5_000;
/// Longest name of one date ("National Day").
const MAX_DATE_NAME_CHARS: usize = 100;
/// Longest description.
const MAX_DESCRIPTION_CHARS: usize = 500;

/// One dated exception of a calendar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalendarDate {
    /// The date, `YYYY-MM-DD`.
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub date: String,
    /// What the date is, for people (`National Day`, `make-up workday`); may be empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 100))]
    pub name: String,
}

/// What `POST /v1/calendars` and `PUT /v1/calendars/{name}` take: a whole calendar.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BusinessCalendarSpec {
    /// The calendar's name, 1–64 of `A-Z a-z 0-9 . _ -`: what a job's `calendar` names.
    /// Required on create; on update it may be left out, or must be the path's.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,64}$"))]
    pub name: Option<String>,
    /// What the calendar is for.
    #[serde(default)]
    #[schemars(length(max = 500))]
    pub description: Option<String>,
    /// The IANA zone its dates are read in (a fire's date is its date there).
    #[schemars(length(max = 64))]
    pub time_zone: String,
    /// The usual workdays of a week, `MON` … `SUN` (default: `MON` to `FRI`).
    #[serde(default)]
    pub workdays: Option<Vec<String>>,
    /// Dates that are not business days although their weekday is (holidays).
    #[serde(default)]
    pub excluded: Vec<CalendarDate>,
    /// Dates that are business days although their weekday is not (make-up workdays).
    #[serde(default)]
    pub included: Vec<CalendarDate>,
}

/// A calendar's definition as stored: checked, its dates in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarDays {
    /// The IANA zone.
    pub time_zone: String,
    /// `MON` … `SUN`, in week order.
    pub workdays: Vec<String>,
    /// Holidays, by date.
    pub excluded: Vec<CalendarDate>,
    /// Make-up workdays, by date.
    pub included: Vec<CalendarDate>,
}

/// A business calendar, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = super::schema::exact)]
pub struct BusinessCalendar {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The IANA zone its dates are read in.
    pub time_zone: String,
    /// The usual workdays of a week, `MON` … `SUN`.
    pub workdays: Vec<String>,
    /// Holidays, by date.
    pub excluded: Vec<CalendarDate>,
    /// Make-up workdays, by date.
    pub included: Vec<CalendarDate>,
    /// How many jobs use it.
    pub jobs: i64,
    /// How many workflows use it.
    pub workflows: i64,
    /// Last change, epoch ms.
    pub updated_at: i64,
    /// Who changed it last.
    pub updated_by: String,
}

impl BusinessCalendar {
    /// Its definition, as stored.
    pub fn days(self) -> CalendarDays {
        CalendarDays {
            time_zone: self.time_zone,
            workdays: self.workdays,
            excluded: self.excluded,
            included: self.included,
        }
    }
}

/// Checks a calendar name: 1–64 of `A-Z a-z 0-9 . _ -`.
pub fn check_calendar_name(name: &str) -> Result<(), Invalid> {
    if super::is_plain_name(name, MAX_CALENDAR_NAME_CHARS) {
        Ok(())
    } else {
        Err(Invalid::new(
            "name",
            format!("'{name}' is not a calendar name: 1 to {MAX_CALENDAR_NAME_CHARS} characters of A-Z a-z 0-9 . _ -"),
        ))
    }
}

impl BusinessCalendarSpec {
    /// The description and the checked definition. Errors name the field, and for a date its
    /// entry: `excluded[3].date`.
    pub fn check(&self) -> Result<(String, CalendarDays), Invalid> {
        if let Some(name) = &self.name {
            check_calendar_name(name)?;
        }
        let description = self.description.clone().unwrap_or_default();
        if description.chars().count() > MAX_DESCRIPTION_CHARS {
            return Err(Invalid::new(
                "description",
                format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
            ));
        }
        let days = CalendarDays {
            time_zone: self.time_zone.trim().to_owned(),
            workdays: self
                .workdays
                .clone()
                .unwrap_or_else(|| WEEKDAYS[..5].iter().map(|(_, n)| (*n).to_owned()).collect()),
            excluded: self.excluded.clone(),
            included: self.included.clone(),
        };
        Ok((description, days.checked()?))
    }
}

/// A definition read into the calendar's parts: what [`CalendarDays::checked`] writes back in
/// order and [`CalendarDays::business_days`] builds the scheduler's calendar from.
struct Parts {
    zone: chrono_tz::Tz,
    /// Indexed by `Weekday::num_days_from_monday`.
    week: [bool; 7],
    excluded: BTreeMap<NaiveDate, String>,
    included: BTreeMap<NaiveDate, String>,
}

impl CalendarDays {
    /// This definition checked and put in order: a known zone, weekday names (once each), valid
    /// dates (once each, none both excluded and included), at most [`MAX_CALENDAR_DATES`].
    pub fn checked(self) -> Result<CalendarDays, Invalid> {
        let parts = self.parts()?;
        let listed = |m: BTreeMap<NaiveDate, String>| {
            m.into_iter()
                .map(|(d, name)| CalendarDate {
                    date: d.to_string(),
                    name,
                })
                .collect()
        };
        Ok(CalendarDays {
            time_zone: self.time_zone,
            workdays: WEEKDAYS
                .iter()
                .filter(|(d, _)| parts.week[d.num_days_from_monday() as usize])
                .map(|(_, n)| (*n).to_owned())
                .collect(),
            excluded: listed(parts.excluded),
            included: listed(parts.included),
        })
    }

    /// The calendar the scheduler reads; `Err` only for a stored definition that no longer
    /// checks (written by hand into the database).
    pub fn business_days(&self) -> Result<BusinessDays, Invalid> {
        let p = self.parts()?;
        Ok(BusinessDays::new(p.zone, p.week, p.excluded, p.included))
    }

    /// The parts of this definition, each checked; errors name the field.
    fn parts(&self) -> Result<Parts, Invalid> {
        let zone = self.time_zone.parse::<chrono_tz::Tz>().map_err(|_| {
            Invalid::new(
                "time_zone",
                format!(
                    "unknown time zone '{}' (use an IANA name such as Asia/Shanghai or UTC)",
                    self.time_zone
                ),
            )
        })?;
        let mut week = [false; 7];
        for (i, name) in self.workdays.iter().enumerate() {
            let day = weekday_named(name)
                .ok_or_else(|| Invalid::new(format!("workdays[{i}]"), format!("'{name}' is not MON … SUN")))?;
            week[day.num_days_from_monday() as usize] = true;
        }
        if self.excluded.len() + self.included.len() > MAX_CALENDAR_DATES {
            return Err(Invalid::new(
                "excluded",
                format!("a calendar holds at most {MAX_CALENDAR_DATES} dates"),
            ));
        }
        let excluded = dates_by_day("excluded", &self.excluded)?;
        let included = dates_by_day("included", &self.included)?;
        if let Some(both) = excluded.keys().find(|d| included.contains_key(d)) {
            return Err(Invalid::new(
                "included",
                format!("{both} is both excluded and included"),
            ));
        }
        Ok(Parts {
            zone,
            week,
            excluded,
            included,
        })
    }
}

/// `dates` by day, each day once; errors name the entry (`excluded[2].date`).
fn dates_by_day(field: &str, dates: &[CalendarDate]) -> Result<BTreeMap<NaiveDate, String>, Invalid> {
    let mut by_day = BTreeMap::new();
    for (i, d) in dates.iter().enumerate() {
        let day = parse_date(&d.date).ok_or_else(|| {
            Invalid::new(
                format!("{field}[{i}].date"),
                format!("'{}' is not a date (YYYY-MM-DD)", d.date),
            )
        })?;
        if d.name.chars().count() > MAX_DATE_NAME_CHARS {
            return Err(Invalid::new(
                format!("{field}[{i}].name"),
                format!("must be at most {MAX_DATE_NAME_CHARS} characters"),
            ));
        }
        if by_day.insert(day, d.name.trim().to_owned()).is_some() {
            return Err(Invalid::new(
                format!("{field}[{i}].date"),
                format!("{day} is listed twice"),
            ));
        }
    }
    Ok(by_day)
}

/// A `YYYY-MM-DD` date between the years 1970 and 9999.
fn parse_date(text: &str) -> Option<NaiveDate> {
    let text = text.trim();
    if text.len() != 10 {
        return None;
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .filter(|d| (1970..=9999).contains(&d.year()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(d: &str, name: &str) -> CalendarDate {
        CalendarDate {
            date: d.into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_spec_is_checked_into_an_ordered_definition() {
        let spec = BusinessCalendarSpec {
            name: Some("CN".into()),
            time_zone: "Asia/Shanghai".into(),
            excluded: vec![date("2025-10-02", "National Day"), date("2025-10-01", "National Day")],
            included: vec![date("2025-10-11", "")],
            ..Default::default()
        };
        let (_, days) = spec.check().unwrap();
        assert_eq!(days.workdays, ["MON", "TUE", "WED", "THU", "FRI"]);
        assert_eq!(days.excluded[0].date, "2025-10-01");
        let bd = days.business_days().unwrap();
        assert!(bd.is_business_day("2025-10-11".parse().unwrap()));
        assert!(!bd.is_business_day("2025-10-01".parse().unwrap()));
    }

    #[test]
    fn bad_calendars_name_their_field() {
        let base = BusinessCalendarSpec {
            time_zone: "UTC".into(),
            ..Default::default()
        };
        let err = |s: BusinessCalendarSpec| s.check().unwrap_err().field;
        assert_eq!(
            err(BusinessCalendarSpec {
                time_zone: "Mars/Base".into(),
                ..base.clone()
            }),
            "time_zone"
        );
        assert_eq!(
            err(BusinessCalendarSpec {
                name: Some("no spaces".into()),
                ..base.clone()
            }),
            "name"
        );
        assert_eq!(
            err(BusinessCalendarSpec {
                workdays: Some(vec!["MON".into(), "Funday".into()]),
                ..base.clone()
            }),
            "workdays[1]"
        );
        assert_eq!(
            err(BusinessCalendarSpec {
                excluded: vec![date("2025-10-01", ""), date("2025-13-01", "")],
                ..base.clone()
            }),
            "excluded[1].date"
        );
        assert_eq!(
            err(BusinessCalendarSpec {
                excluded: vec![date("2025-10-01", ""), date("2025-10-01", "")],
                ..base.clone()
            }),
            "excluded[1].date"
        );
        assert_eq!(
            err(BusinessCalendarSpec {
                excluded: vec![date("2025-10-01", "")],
                included: vec![date("2025-10-01", "")],
                ..base.clone()
            }),
            "included"
        );
        let too_many = (0..=MAX_CALENDAR_DATES)
            .map(|i| {
                date(
                    &(NaiveDate::from_ymd_opt(2000, 1, 1).unwrap() + chrono::Days::new(i as u64)).to_string(),
                    "",
                )
            })
            .collect();
        assert_eq!(
            err(BusinessCalendarSpec {
                excluded: too_many,
                ..base
            }),
            "excluded"
        );
    }
}
