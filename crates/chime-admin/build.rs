//! Rebuilds the crate when a migration is added: `sqlx::migrate!` embeds the files of
//! `migrations/` at compile time, but cannot ask Cargo to watch the directory for new ones.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
