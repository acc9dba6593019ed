//! Architecture invariants: the domain crate depends on no I/O crate, and no adapter depends
//! on another.

use std::process::Command;

/// Every `.rs` file under `dir`, at any depth.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The names of the packages `package` depends on (normal dependencies, transitively).
fn dependencies(package: &str) -> Vec<String> {
    tree(package, &[])
}

/// The names of the packages `package` depends on itself (normal dependencies).
fn direct_dependencies(package: &str) -> Vec<String> {
    tree(package, &["--depth", "1"])
}

/// `cargo tree` of `package`'s normal dependencies with `extra` arguments, as package names.
fn tree(package: &str, extra: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree", "-p", package, "-e", "normal", "--prefix", "none", "--format", "{p}",
        ])
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<String> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        names.iter().any(|n| n == package),
        "cargo tree printed nothing useful: {tree}"
    );
    names
}

#[test]
fn adapters_do_not_know_each_other() {
    let adapters = [
        "tokenvault-http",
        "tokenvault-persistence",
        "tokenvault-crypto",
        "tokenvault-expressions",
        "tokenvault-code",
        "tokenvault-outbound",
    ];
    for adapter in adapters {
        let names = dependencies(adapter);
        for other in adapters.iter().filter(|a| **a != adapter) {
            assert!(
                !names.iter().any(|n| n == other),
                "{adapter} depends on {other}"
            );
        }
    }
}

/// The persistence adapter's crates: each database's knows the shared one and not the other's;
/// the shared one knows neither (what differs is behind its `Backend` seam).
#[test]
fn the_database_crates_do_not_know_each_other() {
    let sqlite = dependencies("tokenvault-persistence-sqlite");
    let postgres = dependencies("tokenvault-persistence-postgres");
    let shared = dependencies("tokenvault-persistence-shared");
    for (names, own, other) in [
        (&sqlite, "sqlite", "tokenvault-persistence-postgres"),
        (&postgres, "postgres", "tokenvault-persistence-sqlite"),
    ] {
        assert!(
            names.iter().any(|n| n == "tokenvault-persistence-shared"),
            "{own} builds on the shared crate"
        );
        assert!(
            !names.iter().any(|n| n == other),
            "{own} depends on {other}"
        );
        assert!(
            !names.iter().any(|n| n == "tokenvault-persistence"),
            "{own} depends on the crate above it"
        );
    }
    for other in [
        "tokenvault-persistence-sqlite",
        "tokenvault-persistence-postgres",
        "tokenvault-persistence",
    ] {
        assert!(
            !shared.iter().any(|n| n == other),
            "the shared crate depends on {other}"
        );
    }
}

#[test]
fn domain_depends_on_no_io_crate() {
    let names = dependencies("tokenvault-domain");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
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

/// Domain types derive no `Serialize` or `Deserialize`: wire formats live in the adapters.
/// The domain does not depend on `serde` itself (only `serde_json`, for tenant code's values),
/// so no derive can be written there, and none is.
#[test]
fn the_domain_has_no_wire_format() {
    let direct = direct_dependencies("tokenvault-domain");
    assert!(
        !direct.iter().any(|n| n == "serde"),
        "the domain depends on serde: {direct:?}"
    );
    assert!(direct.iter().any(|n| n == "serde_json"), "{direct:?}");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/domain/src");
    for path in rust_files(&src) {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("Serialize"),
            "{} names Serialize or Deserialize",
            path.display()
        );
    }
}

/// `unsafe` is allowed in the code runtime only, and in the server's `main.rs` for jemalloc's
/// settings (the workspace denies it elsewhere), and each allowance has its reason beside it:
/// a `SAFETY` note, or a `# Safety` contract, within twelve lines.
#[test]
fn unsafe_stays_in_the_code_runtime_with_its_reasons() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut allowances = 0;
    for dir in ["crates", "migrations", "xtask", "tests"] {
        for path in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let line = line.trim_start();
                let attribute = line.starts_with("#[allow(") || line.starts_with("#![allow(");
                if !(attribute && line.contains("unsafe_code")) {
                    continue;
                }
                allowances += 1;
                let shown = path.display();
                assert!(
                    path.starts_with(root.join("crates/code/src"))
                        || path == root.join("crates/server/src/main.rs"),
                    "{shown}:{}: unsafe outside the code runtime",
                    i + 1
                );
                let around = &lines[i.saturating_sub(12)..(i + 13).min(lines.len())];
                assert!(
                    around
                        .iter()
                        .any(|l| l.contains("SAFETY:") || l.contains("# Safety")),
                    "{shown}:{}: unsafe without its reason",
                    i + 1
                );
            }
        }
    }
    // The runtime does use it (bytecode, the allocator, QuickJS's C API): a scan that found
    // none would have read nothing.
    assert!(allowances >= 10, "{allowances} allowances found");
}
