//! Script jobs (GLUE_SHELL, GLUE_PYTHON, GLUE_NODEJS, GLUE_PHP, GLUE_POWERSHELL) and the
//! `shell` handler: child processes in their own process group, output into the run's log.
//!
//! Each child is started as the leader of a new process group, and kill or timeout sends
//! SIGKILL to the whole group. XXL-JOB 2.4 destroys nothing (a killed script keeps running)
//! and 3.x destroys only the direct child, so a script that started `sleep 1000 &` or a
//! pipeline kept running after "kill"; here nothing the script started survives.

use crate::handler::{Handler, JobContext, JobResult};
use chime_protocol::messages::script_exit_failed;
use chime_protocol::GlueType;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The interpreter XXL-JOB uses for a script type (`None` for BEAN and GLUE_GROOVY).
pub fn interpreter(glue_type: GlueType) -> Option<&'static str> {
    match glue_type {
        GlueType::GlueShell => Some("bash"),
        GlueType::GluePython => Some("python3"),
        GlueType::GluePython2 => Some("python"),
        GlueType::GlueNodejs => Some("node"),
        GlueType::GluePhp => Some("php"),
        GlueType::GluePowershell => Some("pwsh"),
        GlueType::Bean | GlueType::GlueGroovy => None,
    }
}

/// XXL-JOB's argv for a script run: `[interpreter, file, param, shardIndex, shardTotal]`.
pub fn script_argv(
    glue_type: GlueType,
    file: &Path,
    param: &str,
    shard_index: i32,
    shard_total: i32,
) -> Option<Vec<String>> {
    Some(vec![
        interpreter(glue_type)?.to_owned(),
        file.display().to_string(),
        param.to_owned(),
        shard_index.to_string(),
        shard_total.to_string(),
    ])
}

/// The source file of a job's script version: `<glue_dir>/<jobId>_<glueUpdatetime><suffix>`.
pub fn glue_file(glue_dir: &Path, job_id: i64, glue_type: GlueType, glue_updatetime: i64) -> PathBuf {
    glue_dir.join(format!("{job_id}_{glue_updatetime}{}", glue_type.script_suffix()))
}

/// Writes a job's script (if this version is not there yet) and removes its older versions.
fn install_glue_file(glue_dir: &Path, job_id: i64, file: &Path, source: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(glue_dir)?;
    let prefix = format!("{job_id}_");
    for entry in std::fs::read_dir(glue_dir)?.flatten() {
        let name = entry.file_name();
        let is_old = name.to_str().is_some_and(|n| n.starts_with(&prefix)) && entry.path() != file;
        if is_old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    if !file.exists() {
        let tmp = file.with_extension("tmp");
        std::fs::write(&tmp, source)?;
        std::fs::rename(&tmp, file)?;
    }
    Ok(())
}

/// The handler of one script version of one job.
pub(crate) fn script_handler(
    glue_dir: PathBuf,
    job_id: i64,
    glue_type: GlueType,
    glue_updatetime: i64,
    source: String,
) -> Handler {
    let file = glue_file(&glue_dir, job_id, glue_type, glue_updatetime);
    let init_file = file.clone();
    Handler::new(move |ctx: JobContext| {
        let file = file.clone();
        async move {
            ctx.log(format!("----------- script file:{} -----------", file.display()));
            let argv = script_argv(glue_type, &file, ctx.param(), ctx.shard_index(), ctx.shard_total())
                .expect("script handlers are only built for script types");
            run_process(&ctx, &argv).await
        }
    })
    .with_init(move || {
        let (glue_dir, file, source) = (glue_dir.clone(), init_file.clone(), source.clone());
        async move {
            if let Err(err) = install_glue_file(&glue_dir, job_id, &file, &source) {
                tracing::error!(job_id, path = %file.display(), error = %err, "cannot write the script file");
            }
        }
    })
}

/// The `shell` BEAN handler: runs its parameter with `bash -c` in its own process group.
///
/// Anyone who can trigger jobs can run any command with it, so executors enable it explicitly
/// (`chime executor --enable-shell-handler`), and only with an access token: an executor
/// holding this handler, under any name, is refused by [`crate::ExecutorBuilder::build`]
/// without one.
pub fn shell_handler() -> Handler {
    let mut handler = Handler::new(|ctx: JobContext| async move {
        if ctx.param().trim().is_empty() {
            return JobResult::fail("the shell handler needs a command as its parameter");
        }
        let argv = vec!["bash".to_owned(), "-c".to_owned(), ctx.param().to_owned()];
        run_process(&ctx, &argv).await
    });
    handler.runs_code = true;
    handler
}

/// The environment variable that carries a workflow node's upstream results to a script or a
/// `shell` command, as a JSON object of strings by node key (`{}` when there are none). Data
/// in a variable is not parsed as code unless the script itself evaluates it, where a result
/// pasted into the command line would be.
pub const UPSTREAM_RESULTS_VAR: &str = "CHIME_UPSTREAM_RESULTS";

/// Longest value of [`UPSTREAM_RESULTS_VAR`], in bytes: Linux refuses to start a process with
/// one string in its environment over 128 KiB, and the admin sends at most 64 KiB of results.
const UPSTREAM_RESULTS_MAX: usize = 64 * 1024;

/// The run's upstream results as the JSON of [`UPSTREAM_RESULTS_VAR`]: `{}` when over
/// [`UPSTREAM_RESULTS_MAX`] (said in the run's log), so the script still starts.
fn upstream_results_json(ctx: &JobContext) -> String {
    let json = serde_json::to_string(ctx.upstream_results()).unwrap_or_else(|_| "{}".to_owned());
    if json.len() > UPSTREAM_RESULTS_MAX {
        ctx.log(format!(
            "the upstream results ({} bytes) are over {UPSTREAM_RESULTS_MAX} bytes: {UPSTREAM_RESULTS_VAR} is empty",
            json.len()
        ));
        return "{}".to_owned();
    }
    json
}

/// Kills a whole process group when dropped, unless disarmed: dropping the run's future (kill,
/// timeout, cover) therefore takes the script and everything it started with it.
struct GroupKill(Option<i32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

/// Runs `argv` with stdout and stderr copied into the run's log; exit 0 is success.
async fn run_process(ctx: &JobContext, argv: &[String]) -> JobResult {
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("CHIME_JOB_ID", ctx.job_id().to_string())
        .env("CHIME_LOG_ID", ctx.log_id().to_string())
        .env("CHIME_SHARD_INDEX", ctx.shard_index().to_string())
        .env("CHIME_SHARD_TOTAL", ctx.shard_total().to_string())
        .env(UPSTREAM_RESULTS_VAR, upstream_results_json(ctx))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            // XXL-JOB says only "exit value(-1)"; the admin's user needs to know why.
            let mut reason = format!("cannot start {}: {err}", argv[0]);
            if err.kind() == std::io::ErrorKind::NotFound {
                reason.push_str(&format!(" (is {} installed and on the executor's PATH?)", argv[0]));
            }
            ctx.log(&reason);
            return JobResult::fail(reason);
        }
    };
    let mut group = GroupKill(child.id().and_then(|id| i32::try_from(id).ok()));
    let copiers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>),
    ]
    .into_iter()
    .flatten()
    .map(|stream| tokio::spawn(copy_to_log(stream, ctx.clone())))
    .collect();
    let status = child.wait().await;
    // The script ended by itself: what it left running in the background is its business
    // (as with XXL-JOB); only kill and timeout take the group down.
    group.0 = None;
    // Its output is read until the pipes close, but a background child holding them open
    // must not hold the run open: give the copiers a moment, then stop reading.
    for copier in copiers {
        let abort = copier.abort_handle();
        if tokio::time::timeout(Duration::from_secs(2), copier).await.is_err() {
            abort.abort();
        }
    }
    let code = match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
        }
        Err(err) => {
            ctx.log(format!("cannot wait for {}: {err}", argv[0]));
            -1
        }
    };
    if code == 0 {
        JobResult::success()
    } else {
        JobResult::fail(script_exit_failed(code))
    }
}

async fn copy_to_log(mut stream: Box<dyn AsyncRead + Send + Unpin>, ctx: JobContext) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => ctx.log.raw(&buf[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_follows_xxl_job_for_every_script_type() {
        let file = Path::new("/logs/gluesource/7_1700000000000.ps1");
        assert_eq!(
            script_argv(GlueType::GluePowershell, file, "p", 1, 3).unwrap(),
            ["pwsh", "/logs/gluesource/7_1700000000000.ps1", "p", "1", "3"]
        );
        assert_eq!(script_argv(GlueType::GluePhp, file, "", 0, 1).unwrap()[0], "php");
        assert_eq!(script_argv(GlueType::GlueShell, file, "", 0, 1).unwrap()[0], "bash");
        assert_eq!(script_argv(GlueType::GluePython, file, "", 0, 1).unwrap()[0], "python3");
        assert_eq!(script_argv(GlueType::GlueNodejs, file, "", 0, 1).unwrap()[0], "node");
        assert!(script_argv(GlueType::GlueGroovy, file, "", 0, 1).is_none());
        assert!(script_argv(GlueType::Bean, file, "", 0, 1).is_none());
    }

    #[tokio::test]
    async fn a_missing_interpreter_is_named_in_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let logs = crate::runlog::LogWriter::start(false).unwrap();
        let log = logs.open(dir.path(), 1_586_629_003_729, 1);
        let ctx = JobContext {
            job_id: 1,
            log_id: 1,
            log_date_time: 1_586_629_003_729,
            param: "".into(),
            upstream_results: Default::default(),
            shard_index: 0,
            shard_total: 1,
            log: log.clone(),
            cancel: Default::default(),
        };
        let argv = ["chime-no-such-interpreter".to_owned(), "job.php".to_owned()];
        let result = run_process(&ctx, &argv).await;
        assert_eq!(result.code, chime_protocol::FAIL_CODE);
        let msg = result.msg.unwrap();
        assert!(
            msg.starts_with("cannot start chime-no-such-interpreter: No such file or directory"),
            "{msg}"
        );
        assert!(msg.contains("PATH"), "{msg}");
        log.close_then(None);
        tokio::task::spawn_blocking(move || logs.stop()).await.unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(text.contains("cannot start chime-no-such-interpreter"), "{text}");
    }

    #[test]
    fn glue_files_are_named_like_xxl_job_and_old_versions_removed() {
        let dir = tempfile::tempdir().unwrap();
        let old = glue_file(dir.path(), 7, GlueType::GlueShell, 1);
        let other_job = glue_file(dir.path(), 70, GlueType::GlueShell, 1);
        std::fs::write(&old, "old").unwrap();
        std::fs::write(&other_job, "other").unwrap();
        let new = glue_file(dir.path(), 7, GlueType::GlueShell, 2);
        assert!(new.ends_with("7_2.sh"));
        install_glue_file(dir.path(), 7, &new, "echo new").unwrap();
        assert!(!old.exists());
        assert!(other_job.exists());
        assert_eq!(std::fs::read_to_string(&new).unwrap(), "echo new");
    }
}
