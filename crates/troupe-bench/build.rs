//! Records the compiler version and the commit for the report header.
use std::process::Command;

fn main() {
    let out = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into())
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    println!(
        "cargo:rustc-env=TROUPE_RUSTC={}",
        out(&rustc, &["--version"])
    );
    println!(
        "cargo:rustc-env=TROUPE_COMMIT={}",
        out("git", &["rev-parse", "--short", "HEAD"])
    );
    println!("cargo:rerun-if-changed=../../.git/HEAD");
    println!("cargo:rerun-if-changed=../../.git/refs/heads");
}
