//! The demo executor as an installed binary (same as `examples/demo_executor.rs`): tests and
//! the scheduling center's end-to-end suite start it as a real process.

fn main() -> std::process::ExitCode {
    chime_executor::demo::main()
}
