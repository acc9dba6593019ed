//! ARCHITECTURE.md cites only what exists: every file or folder it names in backticks is in the
//! repository, every constant it names is declared, and every `module::item` it names is
//! defined somewhere in the Rust sources; every invariant names the test that holds it, and
//! that test exists. A rename or a removal fails here until the map is brought up to date.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Every file of the repository, relative to its root with `/` separators (build output and
/// version control left out).
fn repository_files() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".git" || name == "target" || name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                walk(&path, base, out);
            } else if let Ok(relative) = path.strip_prefix(base) {
                out.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut files = Vec::new();
    let root = root();
    walk(&root, &root, &mut files);
    files
}

/// The text between each pair of backticks.
fn cited(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .filter(|t| !t.is_empty() && !t.contains(char::is_whitespace))
        .collect()
}

const EXTENSIONS: [&str; 9] = [
    ".rs", ".md", ".toml", ".json", ".sh", ".py", ".yaml", ".yml", ".cfg",
];

fn is_path(t: &str) -> bool {
    !t.contains("::")
        && !t.contains("://")
        && (EXTENSIONS.iter().any(|e| t.ends_with(e)) || (t.len() > 1 && t.ends_with('/')))
}

/// `t` with its first `{a,b}` group expanded, recursively.
fn expand(t: &str) -> Vec<String> {
    let (Some(open), Some(close)) = (t.find('{'), t.find('}')) else {
        return vec![t.to_owned()];
    };
    if close < open {
        return vec![t.to_owned()];
    }
    t[open + 1..close]
        .split(',')
        .flat_map(|alt| expand(&format!("{}{alt}{}", &t[..open], &t[close + 1..])))
        .collect()
}

/// Whether `text` matches `pattern`, whose `*` stands for any run of characters.
fn matches(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.starts_with(head)
                && (head.len()..=text.len())
                    .any(|i| text.is_char_boundary(i) && matches(tail, &text[i..]))
        }
    }
}

/// Whether the repository holds `cited`: as a path from the root, as the tail of a longer one
/// (`service/tokens/read.rs`), with a crate's `src/` left out (`persistence/citus.rs`), or as
/// a folder.
fn exists(cited: &str, files: &[String]) -> bool {
    let cited = cited.trim_end_matches('/');
    let mut forms = vec![cited.to_owned()];
    if let Some((krate, rest)) = cited.split_once('/') {
        forms.push(format!("{krate}/src/{rest}"));
    }
    forms.iter().any(|form| {
        files.iter().any(|f| {
            matches(form, f)
                || matches(&format!("*/{form}"), f)
                || matches(&format!("{form}/*"), f)
                || matches(&format!("*/{form}/*"), f)
        })
    })
}

fn is_constant(name: &str) -> bool {
    name.len() >= 4
        && name.contains('_')
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && name.starts_with(|c: char| c.is_ascii_uppercase())
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether some source declares `name`: an item, or an enum's variant (a line that starts with
/// it).
fn declared(name: &str, sources: &[String]) -> bool {
    let keywords = [
        "fn", "const", "static", "struct", "enum", "trait", "type", "mod",
    ];
    sources.iter().any(|source| {
        source.lines().any(|line| {
            let line = line.trim_start();
            let words: Vec<&str> = line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            words
                .windows(2)
                .any(|w| keywords.contains(&w[0]) && w[1] == name)
                || line
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with([',', '(', ' ', '{']) || rest.is_empty())
        })
    })
}

#[test]
fn architecture_md_cites_only_what_exists() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let files = repository_files();
    let sources: Vec<String> = files
        .iter()
        .filter(|f| Path::new(f).extension().is_some_and(|e| e == "rs"))
        .filter_map(|f| std::fs::read_to_string(root().join(f)).ok())
        .collect();
    let (mut paths, mut names) = (0, 0);
    let mut missing = Vec::new();
    for t in cited(&text) {
        if is_path(t) {
            paths += 1;
            for form in expand(t) {
                if !exists(&form, &files) {
                    missing.push(format!("file {form}"));
                }
            }
            continue;
        }
        let item = t.trim_end_matches("()");
        let last = item.rsplit("::").next().unwrap_or(item);
        if (item.contains("::") && is_identifier(last)) || is_constant(item) {
            names += 1;
            // A constant may also be a setting's name, read from the environment as a literal.
            let read =
                is_constant(item) && sources.iter().any(|s| s.contains(&format!("\"{item}\"")));
            if !declared(last, &sources) && !read {
                missing.push(format!("item {item}"));
            }
        }
    }
    // The map cites well over a hundred files and dozens of items: a parser that found none
    // would pass by finding nothing.
    assert!(
        paths > 100 && names > 20,
        "{paths} paths, {names} names cited"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md cites what is gone: {missing:#?}"
    );
}

/// The invariants of ARCHITECTURE.md, one line each: every line names the test that holds it
/// — a file and, in parentheses, a test function that file defines — or says why none does
/// (`no test`). Returns (line, what is wrong) for each line that does neither.
fn invariants_without_their_test(text: &str, files: &[String]) -> Vec<(String, String)> {
    let section = text
        .split("## Invariants")
        .nth(1)
        .unwrap_or_default()
        .split("\n## ")
        .next()
        .unwrap_or_default();
    let mut wrong = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("- ")) {
        if line.contains("(no test") {
            continue;
        }
        let Some((_, cited_tests)) = line.rsplit_once(" — ") else {
            wrong.push((line.to_owned(), "names no test".to_owned()));
            continue;
        };
        // `file` (`test_fn`) pairs, and files cited alone (a whole suite).
        let parts: Vec<&str> = cited(cited_tests);
        let mut named = 0;
        for part in parts.iter().filter(|p| is_path(p)) {
            named += 1;
            // The test function is the one written right after the file, in parentheses.
            let after = format!("`{part}` (`");
            let Some(function) = cited_tests
                .split_once(&after)
                .and_then(|(_, rest)| rest.split('`').next())
                .filter(|f| is_identifier(f))
            else {
                continue;
            };
            let file = files
                .iter()
                .find(|f| f.ends_with(part))
                .map(|f| std::fs::read_to_string(root().join(f)).unwrap_or_default());
            let defined = file.is_some_and(|text| text.contains(&format!("fn {function}(")));
            if !defined {
                wrong.push((line.to_owned(), format!("{part} has no fn {function}")));
            }
        }
        if named == 0 {
            wrong.push((line.to_owned(), "names no test file".to_owned()));
        }
    }
    wrong
}

#[test]
fn every_invariant_names_a_test_that_exists() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let files = repository_files();
    let wrong = invariants_without_their_test(&text, &files);
    assert!(
        wrong.is_empty(),
        "invariants without their test: {wrong:#?}"
    );
    // The check reads what it should: a renamed test and a line without one are caught.
    let probe =
        "## Invariants\n\n- A — `tests/api/auth.rs` (`no_such_test_anywhere`).\n- B.\n\n## After\n";
    assert_eq!(invariants_without_their_test(probe, &files).len(), 2);
}

#[test]
fn the_citation_reader_finds_and_misses_what_it_should() {
    let files = vec![
        "crates/persistence/src/citus.rs".to_owned(),
        "crates/domain/src/service/tokens/read.rs".to_owned(),
        "xtask/src/bench.rs".to_owned(),
    ];
    for present in [
        "persistence/citus.rs",
        "service/tokens/read.rs",
        "xtask/",
        "crates/persistence/src/citus.rs",
        "service/*/read.rs",
    ] {
        assert!(exists(present, &files), "{present}");
    }
    for gone in ["persistence/direct.rs", "tokens/write.rs", "docs/"] {
        assert!(!exists(gone, &files), "{gone}");
    }
    assert_eq!(
        expand("service/{a,b}/{c,d}.rs"),
        [
            "service/a/c.rs",
            "service/a/d.rs",
            "service/b/c.rs",
            "service/b/d.rs"
        ]
    );
    let sources =
        vec!["pub(crate) const CITUS_LOCK_TIMEOUT: [&str; 2] = [];\n    SeqTaken,\n".to_owned()];
    assert!(declared("CITUS_LOCK_TIMEOUT", &sources));
    assert!(declared("SeqTaken", &sources));
    assert!(!declared("LOCK_TIMEOUT", &sources));
    assert!(is_constant("REFERENCE_TABLES") && !is_constant("SELECT"));
}
