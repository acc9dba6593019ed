//! Architecture invariant: the domain crate depends on no I/O crate.

use std::process::Command;

#[test]
fn domain_depends_on_no_io_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "tokenvault-domain",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        names.contains(&"tokenvault-domain"),
        "cargo tree printed nothing useful: {tree}"
    );
    for forbidden in [
        "actix-web",
        "sea-orm",
        "sqlx",
        "rquickjs",
        "reqwest",
        "hyper",
        "tokio",
    ] {
        assert!(
            !names.contains(&forbidden),
            "the domain depends on {forbidden}"
        );
    }
}
