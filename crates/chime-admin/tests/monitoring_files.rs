//! The alert rules and the Grafana dashboard in `deploy/monitoring` query only series a real
//! admin exports: every metric name in every PromQL expression of both files is one that
//! `/metrics` declares (its `# TYPE` line is printed for every registered metric, also before
//! anything was counted, so a series that appears only after a failure is still checked).

mod common;

use common::{start_admin, Api, TestDb};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn monitoring_file(name: &str) -> (PathBuf, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/monitoring")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, text)
}

/// The expressions of the alert rules: the value of every `expr:` key. The workspace has no
/// YAML parser and one is not worth a dependency for a test, so the lines are read as the file
/// writes them, one plain or quoted scalar per `expr:` line; a block scalar is refused here so
/// that an expression can never be skipped unseen.
fn rule_expressions(yaml: &str) -> Vec<String> {
    yaml.lines()
        .filter_map(|line| line.trim_start().strip_prefix("expr:"))
        .map(|value| {
            let value = value.trim();
            assert!(
                !value.starts_with('|') && !value.starts_with('>'),
                "write each expr on its one line (this test reads no block scalars): {value}"
            );
            let unquoted = if value.len() >= 2 && (value.starts_with('"') || value.starts_with('\'')) {
                &value[1..value.len() - 1]
            } else {
                value
            };
            unquoted.to_owned()
        })
        .collect()
}

/// Every `expr` string anywhere in the dashboard (panels, rows, nested panels).
fn dashboard_expressions(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("expr", serde_json::Value::String(expr)) => out.push(expr.clone()),
                    _ => dashboard_expressions(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| dashboard_expressions(v, out)),
        _ => {}
    }
}

/// Words of PromQL that are not series: operators, modifiers and the aggregations (which may
/// have their `by (…)` before their `(`). Functions are told by the `(` after them.
#[rustfmt::skip]
const KEYWORDS: &[&str] = &[
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "inf",
    "nan", "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
    "quantile", "limitk", "limit_ratio",
];

/// Modifiers followed by a parenthesised list of label names, which are not series.
const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];

/// The metric names `expr` reads: identifiers that are neither functions (followed by `(`),
/// keywords, label names (inside `{…}`, or in a `by (…)` list) nor inside a range (`[5m]`) or a
/// string. Grafana's `$variables` are skipped with the word they name.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let mut i = 0;
    let skip_to = |from: usize, close: char| -> usize {
        let mut j = from;
        while j < chars.len() && chars[j] != close {
            if chars[j] == '"' || chars[j] == '\'' || chars[j] == '`' {
                let quote = chars[j];
                j += 1;
                while j < chars.len() && chars[j] != quote {
                    j += 1;
                }
            }
            j += 1;
        }
        j + 1
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '{' {
            i = skip_to(i + 1, '}');
        } else if c == '[' {
            i = skip_to(i + 1, ']');
        } else if c == '"' || c == '\'' || c == '`' {
            i = skip_to(i + 1, c);
        } else if c == '$' || c.is_ascii_digit() || c == '.' {
            // A variable, a number (0.99, 1e3) or a duration: one word, no series.
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.')) {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | ':')) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut next = i;
            while next < chars.len() && chars[next].is_whitespace() {
                next += 1;
            }
            let before_paren = chars.get(next) == Some(&'(');
            let lower = word.to_ascii_lowercase();
            if LABEL_LISTS.contains(&lower.as_str()) && before_paren {
                i = skip_to(next + 1, ')');
            } else if !before_paren && !KEYWORDS.contains(&lower.as_str()) {
                names.insert(word);
            }
        } else {
            i += 1;
        }
    }
    names
}

/// The series names `/metrics` declares: from each `# TYPE name kind` line, the names its
/// samples have (a counter's `_total`, a histogram's `_bucket`, `_sum` and `_count`).
fn declared_series(metrics: &str) -> BTreeSet<String> {
    let mut series = BTreeSet::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        for suffix in suffixes {
            // A counter's name may be declared with or without its `_total`.
            let base = name.strip_suffix("_total").unwrap_or(name);
            series.insert(format!("{base}{suffix}"));
        }
    }
    series
}

#[test]
fn the_tokenizer_finds_series_and_only_series() {
    let names = metric_names(
        r#"histogram_quantile(0.99, sum by (le) (rate(chime_x_bucket{instance=~"$instance", a="b{c}"}[5m]))) > 2
           and chime_y == 0 unless on (pod) max_over_time(chime_z[1h]) offset 5m > 1e3
           or max without (pod) (chime_w)"#,
    );
    let expected: BTreeSet<String> = ["chime_w", "chime_x_bucket", "chime_y", "chime_z"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_and_dashboard_query_only_series_the_admin_exports() {
    let db = TestDb::new(common::Db::Sqlite).await;
    let admin = start_admin(&db.url).await;
    let metrics = Api::new(admin.local_addr).metrics_text().await;
    let mut exported = declared_series(&metrics);
    // Prometheus's own series for every scrape target, used by the admin-down alert.
    exported.insert("up".to_owned());
    assert!(
        exported.contains("chime_alarms_total") && exported.contains("chime_dispatch_lateness_seconds_bucket"),
        "metrics counted nothing yet are declared too: {metrics}"
    );

    let (alerts_path, alerts) = monitoring_file("alerts.yml");
    let rules = rule_expressions(&alerts);
    assert!(rules.len() >= 8, "{}: {rules:?}", alerts_path.display());
    let (dashboard_path, dashboard) = monitoring_file("grafana-dashboard.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&dashboard).unwrap_or_else(|e| panic!("{} is not JSON: {e}", dashboard_path.display()));
    let mut panels = Vec::new();
    dashboard_expressions(&dashboard, &mut panels);
    assert!(panels.len() >= 10, "{}: {panels:?}", dashboard_path.display());

    for (file, exprs) in [(&alerts_path, &rules), (&dashboard_path, &panels)] {
        for expr in exprs {
            let names = metric_names(expr);
            assert!(!names.is_empty(), "{}: no series in `{expr}`", file.display());
            for name in names {
                assert!(
                    exported.contains(&name),
                    "{}: `{name}` in `{expr}` is not a series the admin exports: {exported:?}",
                    file.display()
                );
            }
        }
    }
    admin.shutdown().await;
    db.drop_db().await;
}
