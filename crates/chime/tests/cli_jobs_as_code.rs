//! `chime apply -f` and `chime export` against `chime demo` (a real admin): a TOML document
//! with a script in a file beside it is planned (dry run), applied, exported with its script
//! written to a file again, re-applied without changes; an edited script is an update; a bad
//! job exits non-zero naming the file, the job key and the field, and changes nothing.

use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::{Demo, BIN};

fn run(demo: &Demo, cwd: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .env("CHIME_ADMIN_URL", &demo.url)
        .env("CHIME_API_TOKEN", &demo.token)
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn ok(demo: &Demo, cwd: &Path, args: &[&str]) -> String {
    let out = run(demo, cwd, args);
    assert!(
        out.status.success(),
        "chime {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const DOC: &str = r#"
[[groups]]
app_name = "cli-jac"
title = "Jobs as code"

[[groups.jobs]]
key = "hello"
description = "says hello"
glue_type = "GLUE_SHELL"
glue_file = "scripts/hello.sh"
schedule_type = "CRON"
schedule_expr = "0 0 4 * * ?"
time_zone = "UTC"
running = true
children = ["report"]

[[groups.jobs]]
key = "report"
handler = "demoJobHandler"
param = """
line one
line two"""
"#;

#[test]
fn apply_and_export_toml_with_a_glue_file() {
    let demo = common::demo("cli-jac");
    let work = demo.dir.join("jac");
    std::fs::create_dir_all(work.join("scripts")).unwrap();
    std::fs::write(work.join("jobs.toml"), DOC).unwrap();
    std::fs::write(work.join("scripts/hello.sh"), "#!/bin/sh\necho hello\n").unwrap();

    // A dry run plans and changes nothing.
    let plan = ok(&demo, &work, &["apply", "-f", "jobs.toml", "--dry-run"]);
    assert!(plan.contains("+ create group cli-jac"), "{plan}");
    assert!(plan.contains("+ create cli-jac/hello"), "{plan}");
    assert!(plan.contains("+ create cli-jac/report"), "{plan}");
    assert!(plan.contains("dry run"), "{plan}");
    let exported = run(&demo, &work, &["export", "--group", "cli-jac"]);
    assert!(!exported.status.success(), "the group does not exist yet");

    let plan = ok(&demo, &work, &["apply", "-f", "jobs.toml"]);
    assert!(plan.contains("applied: 3 to create"), "{plan}");
    let again = ok(&demo, &work, &["apply", "-f", "jobs.toml"]);
    assert!(again.contains("no changes"), "{again}");

    // Exported with the script in a file, named relative to where the TOML is written.
    let toml = ok(&demo, &work, &["export", "--group", "cli-jac", "--glue-dir", "out"]);
    assert!(toml.contains("glue_file = \"out/cli-jac/hello.sh\""), "{toml}");
    assert!(toml.contains("children = [\"report\"]"), "{toml}");
    assert!(!toml.contains("echo hello"), "{toml}");
    assert_eq!(
        std::fs::read_to_string(work.join("out/cli-jac/hello.sh")).unwrap(),
        "#!/bin/sh\necho hello\n"
    );
    std::fs::write(work.join("exported.toml"), &toml).unwrap();
    let same = ok(&demo, &work, &["apply", "-f", "exported.toml"]);
    assert!(same.contains("no changes"), "{same}");
    // Inline, the script and the multi-line param come back as they are.
    let inline = ok(&demo, &work, &["export", "--group", "cli-jac"]);
    assert!(inline.contains("echo hello"), "{inline}");
    assert!(inline.contains("line two"), "{inline}");

    // An edited script file is an update of the script.
    std::fs::write(work.join("out/cli-jac/hello.sh"), "#!/bin/sh\necho bonjour\n").unwrap();
    let plan = ok(&demo, &work, &["apply", "-f", "exported.toml"]);
    assert!(plan.contains("~ update cli-jac/hello: glue_source"), "{plan}");

    // A bad job: non-zero exit, the file, key and field named, nothing changed.
    let bad = DOC.replace("0 0 4 * * ?", "at four");
    std::fs::write(work.join("bad.toml"), bad).unwrap();
    let out = run(&demo, &work, &["apply", "-f", "bad.toml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("'hello'") && err.contains("schedule_expr"),
        "{err}"
    );
    let inline_after = ok(&demo, &work, &["export", "--group", "cli-jac"]);
    assert!(inline_after.contains("0 0 4 * * ?"), "{inline_after}");
    // A field the format does not have is named too.
    std::fs::write(work.join("typo.toml"), DOC.replace("handler =", "handlr =")).unwrap();
    let out = run(&demo, &work, &["apply", "-f", "typo.toml"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("typo.toml") && err.contains("handlr"), "{err}");
}
