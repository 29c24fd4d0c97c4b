//! Child processes a test owns (`chime admin`, the demo executor, pyxxl): whatever way the test
//! ends, they end with it.
//!
//! A test that panics unwinds and drops its [`OwnedProcess`]es, which SIGKILL and reap their
//! child. A test process that is itself killed (a nextest timeout, `kill -9`) never unwinds, so
//! every child is also started with `PR_SET_PDEATHSIG`: the kernel sends it SIGKILL when the
//! thread that started it exits. Without both, a failing run leaves `chime admin` processes
//! scheduling jobs into deleted databases for ever.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

/// A child process killed with SIGKILL and reaped when dropped.
///
/// Start it from the test's own thread (the body of the test, not a task moved to a blocking
/// pool): the parent-death signal follows the thread that forked, and pool threads come and go.
pub struct OwnedProcess {
    child: Child,
    what: String,
    output: Option<PathBuf>,
}

impl OwnedProcess {
    /// Starts `command`, its stdout and stderr appended to `output` when given (else discarded).
    /// `what` names the process in failure messages.
    pub fn spawn(what: &str, command: &mut Command, output: Option<&Path>) -> OwnedProcess {
        command.stdin(Stdio::null());
        match output {
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap_or_else(|e| panic!("cannot open {} for the output of {what}: {e}", path.display()));
                command.stdout(file.try_clone().unwrap()).stderr(file);
            }
            None => {
                command.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        let parent = std::process::id();
        // SAFETY: the closure runs in the forked child before exec and calls only prctl(2),
        // getppid(2) and _exit(2), all async-signal-safe; it allocates nothing, takes no lock.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // The parent may have died between fork and prctl: then nothing would signal.
                if libc::getppid() as u32 != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{what} does not start ({:?}): {e}", command.get_program()));
        OwnedProcess {
            child,
            what: what.to_owned(),
            output: output.map(Path::to_path_buf),
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9` and reap: the process gets no chance to deregister, flush or say goodbye.
    /// Calling it again, or on a process that already exited, does nothing.
    pub fn kill_9(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }

    /// The exit status, if the process has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last `max` bytes the process wrote, for failure messages.
    pub fn output_tail(&self, max: u64) -> String {
        let Some(path) = &self.output else {
            return String::new();
        };
        let Ok(mut file) = std::fs::File::open(path) else {
            return String::new();
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(max)));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl Drop for OwnedProcess {
    fn drop(&mut self) {
        let exited = self.exited();
        self.kill_9();
        // A failing test shows what its processes said last; a passing one stays quiet.
        if std::thread::panicking() && self.output.is_some() {
            eprintln!(
                "--- last output of {} (pid {}, {}) ---\n{}\n--- end of {} ---",
                self.what,
                self.child.id(),
                match exited {
                    Some(status) => format!("had exited: {status}"),
                    None => "killed by the test".to_owned(),
                },
                self.output_tail(6000),
                self.what
            );
        }
    }
}

/// A port that was free a moment ago (bound to port 0 and released): a tiny race with other
/// processes, acceptable in tests, and the only way to tell a child process where to listen
/// before it starts.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
