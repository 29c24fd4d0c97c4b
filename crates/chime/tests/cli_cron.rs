//! `chime cron next`, run as a real process.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn chime(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chime"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running chime");
    let mut pipe = child.stdin.take().unwrap();
    if let Some(input) = stdin {
        pipe.write_all(input.as_bytes()).unwrap();
    }
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn prints_epoch_milliseconds() {
    // 2026-11-22T00:00:00Z; every 5 minutes.
    let out = chime(
        &[
            "cron",
            "next",
            "0 */5 * * * ?",
            "--tz",
            "UTC",
            "--after",
            "1795305600000",
            "--count",
            "3",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "1795305900000\n1795306200000\n1795306500000\n");
}

#[test]
fn count_defaults_to_one_and_after_defaults_to_now() {
    let out = chime(&["cron", "next", "* * * * * ?", "--tz", "UTC"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let t: i64 = stdout(&out).trim().parse().unwrap();
    let now = chrono::Utc::now().timestamp_millis();
    assert!(t > now - 5_000 && t <= now + 2_000, "{t} vs now {now}");
    assert_eq!(t % 1000, 0);
}

#[test]
fn human_output_in_the_zone() {
    // 2026-03-08 is the spring-forward day in New York: 03:00 is already EDT.
    let out = chime(
        &[
            "cron",
            "next",
            "0 0 3 * * ?",
            "--tz",
            "America/New_York",
            "--after",
            "1772928000000",
            "--count",
            "2",
            "--human",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2026-03-08T03:00:00-04:00\n2026-03-09T03:00:00-04:00\n");
    let out = chime(
        &[
            "cron",
            "next",
            "0 0 12 LW * ?",
            "--tz",
            "UTC",
            "--after",
            "1795305600000",
            "--human",
        ],
        None,
    );
    assert_eq!(stdout(&out), "2026-11-30T12:00:00+00:00\n");
}

#[test]
fn stops_when_the_schedule_ends() {
    let out = chime(
        &[
            "cron",
            "next",
            "0 0 0 1 1 ? 2027",
            "--tz",
            "UTC",
            "--after",
            "1795305600000",
            "--count",
            "5",
        ],
        None,
    );
    assert!(out.status.success());
    assert_eq!(stdout(&out), "1798761600000\n");
}

#[test]
fn invalid_expression_exits_2_naming_the_field() {
    let out = chime(&["cron", "next", "0 0 12 ? * 8", "--tz", "UTC"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(err.contains("day-of-week"), "{err}");
    assert!(err.contains("'8' is out of range 1-7"), "{err}");

    let out = chime(&["cron", "next", "*/90 * * * * ?", "--tz", "UTC"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("second"), "{}", stderr(&out));

    let out = chime(&["cron", "next", "0 0 12 * *", "--tz", "UTC"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("expected 6 or 7 fields, found 5"));
}

#[test]
fn a_count_of_zero_exits_2() {
    let out = chime(&["cron", "next", "0 0 12 * * ?", "--tz", "UTC", "--count", "0"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("--count"), "{}", stderr(&out));
}

#[test]
fn a_short_name_is_explained() {
    let out = chime(&["cron", "next", "0 x * * * ?", "--tz", "UTC"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("minute"), "{err}");
    assert!(err.contains("neither a number nor a three-letter"), "{err}");
}

#[test]
fn the_tz_variable_sets_the_default_zone() {
    // Noon in Tokyo is 03:00 UTC; the machine's own zone must not matter.
    let out = Command::new(env!("CARGO_BIN_EXE_chime"))
        .args(["cron", "next", "0 0 12 * * ?", "--after", "1795305600000", "--human"])
        .env("TZ", "Asia/Tokyo")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2026-11-22T12:00:00+09:00\n");
}

#[test]
fn unknown_zone_exits_2() {
    let out = chime(&["cron", "next", "0 0 12 * * ?", "--tz", "Mars/Base"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown time zone 'Mars/Base'"));
}

#[test]
fn batch_protocol() {
    let input = "0 0 12 LW * ?\tUTC\t1795305600000\t2\n\
                 0 30 1 * * ?\tAmerica/New_York\t1793448000000\t1\n\
                 0 0 0 * * ? 2027\tUTC\t1830297600000\t3\n\
                 0 0 0 ? * 8\tUTC\t0\t1\n\
                 0 0 0 * * ?\tMars/Base\t0\t1\n\
                 0 0 0 * * ?\tUTC\tsoon\t1\n\
                 0 0 0 * * ?\tUTC\t0\n\
                 \n\
                 0 0 12 LW * ?\tUTC\t1795305600000\t1\r\n";
    let out = chime(&["cron", "next", "--batch"], Some(input));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "0 0 12 LW * ?\tUTC\t1795305600000\t1796040000000,1798718400000\n\
         0 30 1 * * ?\tAmerica/New_York\t1793448000000\t1793514600000\n\
         0 0 0 * * ? 2027\tUTC\t1830297600000\t\n\
         0 0 0 ? * 8\tUTC\t0\tINVALID\n\
         0 0 0 * * ?\tMars/Base\t0\tINVALID\n\
         0 0 0 * * ?\tUTC\tsoon\tINVALID\n\
         0 0 0 * * ?\tUTC\t0\tINVALID\n\
         \t\t\tINVALID\n\
         0 0 12 LW * ?\tUTC\t1795305600000\t1796040000000\n"
    );
}

#[test]
fn batch_survives_non_utf8_input() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chime"))
        .args(["cron", "next", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\xff\xfe\t\x80\t1\t1\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("\tINVALID\n"));
}

#[test]
fn batch_conflicts_with_an_expression() {
    let out = chime(&["cron", "next", "--batch", "0 0 0 * * ?"], Some(""));
    assert_eq!(out.status.code(), Some(2));
}
