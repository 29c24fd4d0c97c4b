//! Jobs as code on the command line: `chime export` writes the admin's groups and jobs as a
//! TOML document (scripts inline, or as files beside it with `--glue-dir`), `chime apply -f`
//! reads one back and sends it to `POST /v1/apply`. The format is in docs/jobs-as-code.md.

use chime_admin::store::{ApplyPlan, JobsDocument};
use std::path::{Path, PathBuf};

/// Largest TOML file or script file `apply` reads: the admin takes at most 4 MiB of JSON.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// An error for people, naming the file.
pub(super) fn in_file(file: &Path, msg: impl std::fmt::Display) -> String {
    format!("{}: {msg}", file.display())
}

/// Reads a file of at most [`MAX_FILE_BYTES`].
fn read_bounded(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| in_file(path, e))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(in_file(path, format!("larger than {} MiB", MAX_FILE_BYTES >> 20)));
    }
    std::fs::read_to_string(path).map_err(|e| in_file(path, e))
}

/// The TOML of an exported document. With `glue_dir`, each script is written to
/// `<glue_dir>/<group>/<key>.<ext>` and the job names it as `glue_file`, relative to `toml_dir`
/// (the directory of the TOML file the caller will write, the current one for stdout).
pub(super) fn to_toml(doc: &JobsDocument, glue_dir: Option<&Path>) -> Result<String, String> {
    let mut value = toml::Value::try_from(doc).map_err(|e| format!("cannot write TOML: {e}"))?;
    if let Some(dir) = glue_dir {
        for group in tables_mut(&mut value, "groups") {
            let app = text_field(group, "app_name").to_owned();
            // An app name may hold characters a path must not (`/`, `..`): such groups keep
            // their scripts inline.
            let safe_app = !app.is_empty()
                && app != "."
                && app != ".."
                && !app.contains(['/', '\\', '\0'])
                && !app.starts_with('.');
            for job in tables_mut_in(group, "jobs") {
                let glue_type = job.get("glue_type").and_then(|v| v.as_str()).unwrap_or("BEAN");
                if glue_type == "BEAN" || !safe_app {
                    continue;
                }
                let file = dir
                    .join(&app)
                    .join(format!("{}{}", text_field(job, "key"), extension(glue_type)));
                let source = text_field(job, "glue_source").to_owned();
                std::fs::create_dir_all(dir.join(&app)).map_err(|e| in_file(&dir.join(&app), e))?;
                std::fs::write(&file, source).map_err(|e| in_file(&file, e))?;
                job.remove("glue_source");
                job.insert(
                    "glue_file".into(),
                    toml::Value::String(file.to_string_lossy().replace('\\', "/")),
                );
            }
        }
    }
    toml::to_string_pretty(&value).map_err(|e| format!("cannot write TOML: {e}"))
}

/// The file extension of a script type's files.
fn extension(glue_type: &str) -> &'static str {
    match glue_type {
        "GLUE_SHELL" => ".sh",
        "GLUE_PYTHON" | "GLUE_PYTHON2" => ".py",
        "GLUE_PHP" => ".php",
        "GLUE_NODEJS" => ".js",
        "GLUE_POWERSHELL" => ".ps1",
        "GLUE_GROOVY" => ".groovy",
        _ => ".txt",
    }
}

fn tables_mut<'a>(value: &'a mut toml::Value, key: &str) -> impl Iterator<Item = &'a mut toml::Table> {
    array_tables(value.get_mut(key))
}

fn tables_mut_in<'a>(table: &'a mut toml::Table, key: &str) -> impl Iterator<Item = &'a mut toml::Table> {
    array_tables(table.get_mut(key))
}

/// The text of `table`'s field `key` (empty when it has none, or not text).
fn text_field<'a>(table: &'a toml::Table, key: &str) -> &'a str {
    table.get(key).and_then(toml::Value::as_str).unwrap_or_default()
}

/// The tables of an array of tables (`[[key]]`), if `value` is one.
fn array_tables(value: Option<&mut toml::Value>) -> impl Iterator<Item = &mut toml::Table> {
    value
        .and_then(|v| v.as_array_mut())
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_table_mut())
}

/// Reads a TOML jobs document, with each job's `glue_file` (relative to the TOML file) read in
/// as its `glue_source`. Errors name the file, and the group and job key where there is one.
pub(super) fn read_document(file: &Path) -> Result<JobsDocument, String> {
    let text = read_bounded(file)?;
    let mut value: toml::Value = toml::from_str(&text).map_err(|e| in_file(file, e))?;
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    for group in tables_mut(&mut value, "groups") {
        let app = text_field(group, "app_name").to_owned();
        for job in tables_mut_in(group, "jobs") {
            let Some(glue_file) = job.remove("glue_file") else {
                continue;
            };
            let key = text_field(job, "key").to_owned();
            let at = |msg: String| in_file(file, format!("group '{app}', job '{key}', field 'glue_file': {msg}"));
            let Some(name) = glue_file.as_str() else {
                return Err(at("must be a file name".into()));
            };
            if job.contains_key("glue_source") {
                return Err(at("give glue_file or glue_source, not both".into()));
            }
            let path: PathBuf = base.join(name);
            let source = read_bounded(&path).map_err(at)?;
            job.insert("glue_source".into(), toml::Value::String(source));
        }
    }
    value.try_into::<JobsDocument>().map_err(|e| in_file(file, e))
}

/// The plan for people: `+ create`, `~ update: fields`, `- delete`, one line each.
pub(super) fn print_plan(plan: &ApplyPlan) {
    let name = |e: &chime_admin::store::PlanEntry| match (e.kind.as_str(), &e.key) {
        ("workflow", Some(k)) => format!("workflow {k}"),
        (_, Some(k)) => format!("{}/{k}", e.group),
        (_, None) => format!("group {}", e.group),
    };
    for e in &plan.create {
        outln!("+ create {}", name(e));
    }
    for e in &plan.update {
        outln!("~ update {}: {}", name(e), e.fields.join(", "));
    }
    for e in &plan.delete {
        outln!("- delete {}", name(e));
    }
    let counts = format!(
        "{} to create, {} to update, {} to delete",
        plan.create.len(),
        plan.update.len(),
        plan.delete.len()
    );
    if plan.is_empty() {
        outln!("no changes");
    } else if plan.applied {
        outln!("applied: {counts}");
    } else {
        outln!("dry run, nothing changed: {counts}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chime_admin::store::{DocGroup, DocJob};

    #[test]
    fn scripts_go_to_files_and_come_back() {
        let dir = std::env::temp_dir().join(format!("chime-jobs-doc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let doc = JobsDocument {
            groups: vec![DocGroup {
                app_name: "orders".into(),
                jobs: vec![DocJob {
                    key: "nightly".into(),
                    task: chime_admin::api::JobTaskPatch {
                        glue_type: Some("GLUE_SHELL".into()),
                        glue_source: Some("#!/bin/sh\necho hi\n".into()),
                        ..Default::default()
                    },
                    ..DocJob::default()
                }],
                ..DocGroup::default()
            }],
            ..JobsDocument::default()
        };
        let toml = to_toml(&doc, Some(&dir.join("glue"))).unwrap();
        assert!(toml.contains("glue_file"), "{toml}");
        assert!(!toml.contains("echo hi"), "{toml}");
        // The file name is relative to where the TOML is read from: here, absolute.
        let file = dir.join("jobs.toml");
        std::fs::write(&file, &toml).unwrap();
        let back = read_document(&file).unwrap();
        assert_eq!(back, doc);
        // Inline, the script is a multi-line string.
        let inline = to_toml(&doc, None).unwrap();
        assert!(inline.contains("echo hi"), "{inline}");
        assert_eq!(toml::from_str::<JobsDocument>(&inline).unwrap(), doc);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unknown_fields_name_the_file() {
        let dir = std::env::temp_dir().join(format!("chime-jobs-doc-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.toml");
        std::fs::write(
            &file,
            "[[groups]]\napp_name = \"a\"\n[[groups.jobs]]\nkey = \"k\"\nschedul = \"x\"\n",
        )
        .unwrap();
        let e = read_document(&file).unwrap_err();
        assert!(e.contains("bad.toml") && e.contains("schedul"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
