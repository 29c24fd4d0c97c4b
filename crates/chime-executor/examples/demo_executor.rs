//! A ready executor with demo handlers: `demoJobHandler`, `shardingJobHandler`,
//! `sleepJobHandler`, `failJobHandler`, `panicJobHandler`.
//!
//! ```text
//! cargo run -p chime-executor --example demo_executor -- \
//!     --admin http://127.0.0.1:8080 --appname chime-demo --listen 127.0.0.1:9999
//! ```
//! Flags: `--admin` (comma list), `--appname`, `--access-token` (or `--token`), `--listen`,
//! `--advertise`, `--logdir`, `--pack-run-logs`.

fn main() -> std::process::ExitCode {
    chime_executor::demo::main()
}
