//! pyxxl 0.4.8 (a real third-party XXL-JOB executor, from PyPI) as a child process, running
//! `tests/pyxxl/executor.py`.

use super::process::{free_port, OwnedProcess};
use super::ACCESS_TOKEN;
use std::process::Command;

/// A pyxxl executor process (`tests/pyxxl/executor.py`), killed with SIGKILL when dropped.
pub struct PyExecutor {
    /// The address it registers.
    pub address: String,
    /// The process.
    pub process: OwnedProcess,
    _dir: tempfile::TempDir,
}

impl PyExecutor {
    /// Starts one that registers in `app` with the admin at `admin_base` (with its context
    /// path). Does not wait for the registration.
    pub fn start(admin_base: &str, app: &str) -> PyExecutor {
        let ok = Command::new("python3")
            .args(["-c", "import pyxxl"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            ok,
            "pyxxl is not installed: python3 -m pip install pyxxl==0.4.8 (scripts/test does this)"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pyxxl/executor.py");
        let mut command = Command::new("python3");
        command
            .args([
                script,
                &format!("{admin_base}/api/"),
                app,
                ACCESS_TOKEN,
                &port.to_string(),
                &dir.path().display().to_string(),
            ])
            .current_dir(dir.path());
        let process = OwnedProcess::spawn(
            &format!("pyxxl executor {app}@{port}"),
            &mut command,
            Some(&dir.path().join("output.log")),
        );
        PyExecutor {
            address: format!("http://127.0.0.1:{port}"),
            process,
            _dir: dir,
        }
    }
}
