//! Conformance with the real Quartz 2.3.2: thousands of deterministic cases (expressions ×
//! zones × start instants) answered by `org.quartz.CronExpression` through the Java oracle in
//! `tests/oracle/QuartzOracle.java` and by `chime_cron::batch::answer_line`, compared line by
//! line. Both speak the `chime cron next --batch` protocol.
//!
//! Needs a JDK (`javac`, `java` on PATH or under `JAVA_HOME`) and the Quartz jar
//! (`/usr/share/java/quartz2.jar` from Debian's `libquartz2-java`, or `CHIME_QUARTZ_JAR`). When
//! they are missing the test fails: agreement with Quartz is the point of this crate, so it
//! must not pass silently without it.

use chrono::{DateTime, NaiveDate, Offset, TimeZone};
use chrono_tz::Tz;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Expressions covering every Quartz feature, some of Quartz's quirks, and invalid ones.
const EXPRESSIONS: &[&str] = &[
    // Plain fields, lists, ranges, steps.
    "0 */5 * * * ?",
    "0 0/7 * * * ?",
    "0 5-50/10 * * * ?",
    "*/20 * * * * ?",
    "15,45 * * * * ?",
    "0 0 * * * ?",
    "0 30 1 * * ?",
    "0 30 2 * * ?",
    "0 0 2 * * ?",
    "0 0 3 * * ?",
    "0 15 2,3 * * ?",
    "0 59 1 * * ?",
    "0 0 0 * * ?",
    "0 0 12 * * ?",
    "0 0 22-2 * * ?",
    "0 0 9-17 ? * MON-FRI",
    "0 0/30 9-17 ? * 2-6",
    "0 45-15 * * * ?",
    "0 0 0 1-15/3 * ?",
    "0 0 12 ? JAN-MAR *",
    "0 0 12 1 NOV-FEB ?",
    "0 0 12 1 */3 ?",
    "0 0 0 ? * SAT-SUN",
    "0 0 0 ? * FRI-MON",
    "0 0 6 ? * 2,4,6",
    "0 0 6 ? * mon-fri",
    "0 0 6 ? * */2",
    "0 0 6 1,15 * ?",
    // Last day, offsets from it, nearest weekday.
    "0 0 12 L * ?",
    "0 30 1 L * ?",
    "0 0 12 L-3 * ?",
    "0 0 12 L-30 * ?",
    "0 0 12 L-0 * ?",
    "0 0 12 LW * ?",
    "0 0 12 L-3W * ?",
    "0 0 12 L-W * ?",
    "0 0 12 15W * ?",
    "0 0 12 1W * ?",
    "0 0 12 31W * ?",
    "0 0 12 30W * ?",
    "0 0 2 15W * ?",
    "0 30 2 L * ?",
    "0 0 12 W * ?",
    "0 0 12 15W,16 * ?",
    // Last / nth weekday.
    "0 0 9 ? * 6L",
    "0 0 9 ? * FRIL",
    "0 0 9 ? * 1L",
    "0 0 2 ? * 1L",
    "0 0 9 ? * 6#3",
    "0 0 12 ? * 2#5",
    "0 0 9 ? * MON#3",
    "0 0 9 ? * SUN#5",
    "0 0 2 ? * 1#1",
    "0 0 9 ? * 7#5",
    "0 0 9 ? * L",
    "0 0 9 ? * 3,5#2",
    // Leap days and days that some months lack.
    "0 0 0 29 2 ?",
    "0 0 0 30 2 ?",
    "0 0 0 31 2 ?",
    "0 0 0 31 * ?",
    "0 0 0 L 2 ?",
    // Years.
    "0 0 0 1 1 ? 2027-2030",
    "0 0 12 * * ? 2028",
    "0 0 0 1 * ? 2026/3",
    "0 0 0 * * ? 1999",
    "0 0 0 * * ? 2200",
    "0 0 0 1 1 ? 2099-2110",
    // Quartz quirks that are valid.
    "0 0 0 ? * MONDAY",
    "5X 0 0 * * ?",
    "0-59/90 * * * * ?",
    "0 0 0 * * ? 2027 extra fields",
    "0 0 0 ? * 9#2",
    "/5 * * * * ?",
    "*/0 * * * * ?",
    "0 0 0 ?X * 1",
    // Invalid in Quartz.
    "*/90 * * * * ?",
    "0 */61 * * * ?",
    "0 60 * * * ?",
    "0 0 24 * * ?",
    "0 0 0 32 * ?",
    "0 0 0 1 13 ?",
    "0 0 0 1 FOO ?",
    "0 0 0 ? * 8",
    "0 0 0 ? * 0",
    "0 0 0 1 * MON",
    "0 0 0 ? * ?",
    "0 0 0 ? * 2#6",
    "0 0 0 ? * 2#1,3#2",
    "0 0 0 L,15 * ?",
    "0 0 0 ? * 6L,5",
    "0 0 0 L-31 * ?",
    "0 0 0 * * ? 2030-2027",
    "0 0 0 * * ? 2200/5",
    "0 0 ? * * ?",
    "0 5- * * * ?",
    "0 0 0 * *",
    "",
    "L 0 0 * * ?",
    "0 0 0 * LW ?",
];

/// Zones: DST with 1-hour and 30-minute shifts, southern hemisphere, midnight switches,
/// quarter-hour offsets, zones that dropped DST, and fixed offsets.
const ZONES: &[&str] = &[
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Shanghai",
    "UTC",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "America/Sao_Paulo",
    "Europe/Berlin",
    "Australia/Sydney",
    "America/Santiago",
    "America/Havana",
    "Pacific/Auckland",
    "Asia/Tehran",
    "America/Los_Angeles",
];

/// splitmix64: small, deterministic, good enough to pick cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn offset_at(tz: Tz, utc: i64) -> i32 {
    let naive = DateTime::from_timestamp(utc, 0).unwrap().naive_utc();
    tz.offset_from_utc_datetime(&naive).fix().local_minus_utc()
}

/// UTC seconds of the offset changes of `tz` during the given years.
fn transitions(tz: Tz, years: std::ops::Range<i32>) -> Vec<i64> {
    let start = NaiveDate::from_ymd_opt(years.start, 1, 1).unwrap();
    let end = NaiveDate::from_ymd_opt(years.end, 1, 1).unwrap();
    let (mut t, end) = (
        start.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp(),
        end.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp(),
    );
    let mut out = Vec::new();
    let mut prev = offset_at(tz, t);
    while t < end {
        let next = t + 3600;
        let off = offset_at(tz, next);
        if off != prev {
            let (mut lo, mut hi) = (t, next);
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if offset_at(tz, mid) == prev {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            out.push(hi);
            prev = off;
        }
        t = next;
    }
    out
}

fn utc_secs(y: i32, m: u32, d: u32) -> i64 {
    NaiveDate::from_ymd_opt(y, m, d)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
        .timestamp()
}

/// Start instants (UTC seconds) for a zone: around its daylight-saving switches (in 2026-2029,
/// in 2038-2039 where Java switches from its transition table to its recurring rule, and in
/// 2100-2101 past chrono-tz's data), around month and year ends, and in February 2028.
fn start_pool(tz: Tz) -> Vec<i64> {
    let mut pool = Vec::new();
    let mut switches = transitions(tz, 2026..2030);
    switches.extend(transitions(tz, 2038..2040));
    // chrono-tz's data stop at 2100; Java keeps applying the zone's yearly rule, and so does
    // chime-cron. Take the switches of years with the same calendar.
    for year in [2100, 2101] {
        let model = (2072..2100)
            .find(|&m| {
                let leap = |y: i32| NaiveDate::from_ymd_opt(y, 2, 29).is_some();
                leap(m) == leap(year) && (utc_secs(year, 1, 1) - utc_secs(m, 1, 1)).rem_euclid(7 * 86_400) == 0
            })
            .unwrap();
        let shift = utc_secs(year, 1, 1) - utc_secs(model, 1, 1);
        switches.extend(transitions(tz, model..model + 1).iter().map(|t| t + shift));
    }
    for t in switches {
        for d in [-7200, -3600, -1800, -61, -1, 0, 1, 59, 1799, 3599, 3600, 5400] {
            pool.push(t + d);
        }
    }
    for y in [2026, 2027, 2028, 2029, 2030, 2125] {
        for m in 1..=12 {
            let first = utc_secs(y, m, 1);
            for d in [-86_400, -50_400, -3600, -1, 0, 43_200] {
                pool.push(first + d);
            }
        }
    }
    for d in 24..=29 {
        pool.push(utc_secs(2028, 2, d) + 3600 * (d as i64 % 24));
    }
    pool.push(utc_secs(2126, 12, 31));
    pool
}

/// The cases, one batch line each.
fn cases() -> Vec<String> {
    let mut rng = Rng(0x00C0_FFEE_2026);
    let mut lines = Vec::new();
    let pools: Vec<(&str, Vec<i64>)> = ZONES.iter().map(|&z| (z, start_pool(z.parse().unwrap()))).collect();

    // Every expression in UTC and New York from a fixed start.
    for &expr in EXPRESSIONS {
        for zone in ["UTC", "America/New_York"] {
            lines.push(format!("{expr}\t{zone}\t1795305600000\t8"));
        }
    }
    // A fixed grid over every clock change of 2026-2029 in the three zones whose changes are
    // hardest (an hour at 02:00 local, an hour at 01:00 UTC, half an hour at 02:00): fire times
    // inside, at the edges of and across the gap and the overlap, so a regression there fails
    // here whatever the random draw below picks.
    const AROUND_SWITCHES: &[&str] = &[
        "0 30 1 * * ?",
        "0 30 2 * * ?",
        "0 0 2 * * ?",
        "0 15,45 * * * ?",
        "0 0/20 1-3 * * ?",
        "0 0 2 ? * SUN",
        "0 30 1 L * ?",
        "0 0 0 ? * 1#1",
    ];
    for zone in ["America/New_York", "Europe/London", "Australia/Lord_Howe"] {
        for switch in transitions(zone.parse().unwrap(), 2026..2030) {
            for expr in AROUND_SWITCHES {
                for d in [-7200, -1, 0, 1800] {
                    lines.push(format!("{expr}\t{zone}\t{}\t4", (switch + d) * 1000));
                }
            }
        }
    }
    // Random expression × zone × start instant.
    for _ in 0..4200 {
        let expr = *rng.pick(EXPRESSIONS);
        let (zone, pool) = rng.pick(&pools);
        let mut after_ms = rng.pick(pool) * 1000;
        // Sub-second starts, except with 'W', where Quartz compares against a calendar whose
        // milliseconds come from the wall clock (a coin toss when the seconds are equal).
        if !expr.contains('W') && rng.below(10) == 0 {
            after_ms += 1 + rng.below(999) as i64;
        }
        let count = 5 + rng.below(6);
        lines.push(format!("{expr}\t{zone}\t{after_ms}\t{count}"));
    }
    // Malformed lines and unknown zones.
    lines.extend(
        [
            "0 0 0 * * ?\tMars/Base\t0\t3",
            "0 0 0 * * ?\tUTC\tnot-a-number\t3",
            "0 0 0 * * ?\tUTC\t0\t0",
            "0 0 0 * * ?\tUTC\t0",
            "0 0 0 * * ?\tUTC\t0\t3\textra",
            "0 0 0 * * ?\tUTC\t-86400000\t3",
            "0 0 0 * * ?\tUTC\t+0\t3",
            "",
        ]
        .map(String::from),
    );
    lines
}

fn find_tool(name: &str) -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME") {
        let p = Path::new(&home).join("bin").join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Compiles the oracle and runs it on all lines at once; returns its output lines.
fn run_oracle(lines: &[String]) -> Vec<String> {
    let hint = "install a JDK and Quartz 2.3.2 (Debian: apt-get install default-jdk-headless \
                libquartz2-java), or set JAVA_HOME / CHIME_QUARTZ_JAR";
    let javac = find_tool("javac").unwrap_or_else(|| panic!("javac not found: {hint}"));
    let java = find_tool("java").unwrap_or_else(|| panic!("java not found: {hint}"));
    let jar = std::env::var_os("CHIME_QUARTZ_JAR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/java/quartz2.jar"));
    assert!(jar.is_file(), "Quartz jar {} not found: {hint}", jar.display());

    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/QuartzOracle.java");
    let classes = Path::new(env!("CARGO_TARGET_TMPDIR")).join("quartz-oracle");
    std::fs::create_dir_all(&classes).unwrap();
    let status = Command::new(&javac)
        .arg("-cp")
        .arg(&jar)
        .arg("-d")
        .arg(&classes)
        .arg(&source)
        .status()
        .expect("running javac");
    assert!(status.success(), "javac failed on {}", source.display());

    let classpath = std::env::join_paths([&classes, &jar]).unwrap();
    let mut child = Command::new(&java)
        .arg("-cp")
        .arg(classpath)
        // Calendar.getInstance depends on the default locale (Thai and Japanese locales get
        // other calendars); Quartz deployments run with Gregorian ones.
        .args(["-Duser.language=en", "-Duser.country=US"])
        .arg("QuartzOracle")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running java");
    let mut input = lines.join("\n");
    input.push('\n');
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("reading the oracle's output");
    writer.join().unwrap().expect("feeding the oracle");
    assert!(output.status.success(), "the oracle failed: {:?}", output.status);
    String::from_utf8(output.stdout)
        .expect("UTF-8 from the oracle")
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn agrees_with_quartz_2_3_2() {
    let lines = cases();
    assert!(lines.len() >= 2000);
    let quartz = run_oracle(&lines);
    assert_eq!(
        quartz.len(),
        lines.len(),
        "the oracle answered a different number of lines"
    );

    let mut batch = chime_cron::batch::Batch::new();
    let mut differences = Vec::new();
    let (mut valid, mut times) = (0, 0);
    for (line, want) in lines.iter().zip(&quartz) {
        let mut got = String::new();
        batch.answer_into(line, &mut got);
        if !want.ends_with("\tINVALID") {
            valid += 1;
            times += want
                .rsplit('\t')
                .next()
                .unwrap()
                .split(',')
                .filter(|t| !t.is_empty())
                .count();
        }
        if &got != want {
            differences.push((want.clone(), got));
        }
    }
    println!(
        "compared {} cases with Quartz 2.3.2 ({valid} valid, {times} fire times): {} differ",
        lines.len(),
        differences.len()
    );
    for (want, got) in differences.iter().take(20) {
        eprintln!("quartz: {want}\nchime:  {got}\n");
    }
    assert!(
        differences.is_empty(),
        "{} of {} cases differ from Quartz (first ones above)",
        differences.len(),
        lines.len()
    );
}
