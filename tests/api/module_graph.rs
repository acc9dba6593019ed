//! The import graph of one crate's source files, read from their text: each file's `crate::`
//! and `super::` paths (`lib.rs`, `main.rs` and `mod.rs` stand for their folder; a file's unit
//! tests and comment lines are left out), a path through a re-export leading to the file that
//! defines the item. Used by `module_cycles.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, at any depth.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
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

/// Module path (`a::b`, empty for the crate root) → its file.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let files = rust_files(src);
    // A file named by a `#[path = "…"]` attribute (a unit-test file beside its module) belongs
    // to the module that declares it, not to the crate's tree of files.
    let pathed: Vec<PathBuf> = files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let dir = file.parent().unwrap().to_path_buf();
            text.match_indices("#[path = \"")
                .filter_map(|(at, m)| {
                    let rest = &text[at + m.len()..];
                    rest.find('"').map(|end| dir.join(&rest[..end]))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut found = BTreeMap::new();
    for path in files.into_iter().filter(|f| !pathed.contains(f)) {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        // A binary beside a library is a crate of its own, which imports the library by its
        // name, never by `crate::`.
        if rel == Path::new("main") && src.join("lib.rs").is_file() {
            continue;
        }
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts
            .last()
            .is_some_and(|p| ["lib", "main", "mod"].contains(&p.as_str()))
        {
            parts.pop();
        }
        found.insert(parts.join("::"), path);
    }
    found
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier path at the start of `text` (`a::b::c`), as its segments.
fn path_at(text: &str) -> Vec<String> {
    path_and_length(text).0
}

/// [`path_at`] and how many bytes of `text` it took.
fn path_and_length(text: &str) -> (Vec<String>, usize) {
    let mut parts = Vec::new();
    let mut taken = 0;
    loop {
        let rest = &text[taken..];
        let end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        parts.push(rest[..end].to_string());
        taken += end;
        match text[taken..].strip_prefix("::") {
            Some(next) if next.starts_with(is_ident) => taken += 2,
            _ => break,
        }
    }
    (parts, taken)
}

/// The paths a path or a use tree at the start of `text` names: `a::b` → a::b;
/// `a::{b, c::{d, e as f}, self}` → a::b, a::c::d, a::c::e, a; `{a, b}` → a, b.
fn tree_at(text: &str) -> Vec<Vec<String>> {
    let (base, taken) = path_and_length(text);
    let after = &text[taken..];
    let group = if base.is_empty() {
        after.strip_prefix('{').map(|_| 1)
    } else {
        after.strip_prefix("::{").map(|_| 3)
    };
    // The tree's extent: the path alone, or through the brace that closes its group.
    let mut end = taken;
    if let Some(open) = group {
        let mut depth = 0;
        for (i, c) in after.char_indices().skip(open - 1) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = taken + i + 1;
                break;
            }
        }
    }
    let mut found = Vec::new();
    leaves(&[], &text[..end], &mut found);
    found.into_iter().map(|(_, path)| path).collect()
}

/// Every path a file names under `prefix` (`crate::`, `super::`), each item of a use group
/// (`use crate::{a, b::{c, d}}`) on its own; the prefix is not part of the paths.
fn prefixed_paths(text: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (at, _) in text.match_indices(prefix) {
        if text[..at].ends_with(is_ident) || text[..at].ends_with("::") {
            continue;
        }
        paths.extend(tree_at(&text[at + prefix.len()..]));
    }
    paths
}

/// Every path a file names under `crate::`.
pub(crate) fn crate_paths(text: &str) -> Vec<Vec<String>> {
    prefixed_paths(text, "crate::")
}

/// The module `module`'s `super` (`super::super` …) paths, made absolute.
fn super_paths(text: &str, module: &str, mods: &BTreeMap<String, PathBuf>) -> Vec<Vec<String>> {
    prefixed_paths(text, "super::")
        .into_iter()
        .filter_map(|path| {
            let written: Vec<String> = std::iter::once("super".to_string()).chain(path).collect();
            absolute(module, &written, mods)
        })
        .collect()
}

fn segments(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    }
}

/// The `use` items of `text` as (whether it is `pub` in any form, name it is known under,
/// path it names as written).
fn use_items(text: &str) -> Vec<(bool, String, Vec<String>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("use ") {
        let line_start = rest[..at].rfind('\n').map_or(0, |i| i + 1);
        let head = rest[line_start..at].trim();
        let public = head.starts_with("pub") && head.ends_with(['b', ')']);
        if !(public || head.is_empty()) {
            rest = &rest[at + "use ".len()..];
            continue;
        }
        let item_end = rest[at..].find(';').map_or(rest.len(), |i| at + i);
        let mut leaves_found = Vec::new();
        leaves(&[], &rest[at + "use ".len()..item_end], &mut leaves_found);
        found.extend(
            leaves_found
                .into_iter()
                .map(|(name, path)| (public, name, path)),
        );
        rest = &rest[item_end..];
    }
    found
}

/// The `pub use` / `pub(crate) use` items of `text` (before its unit tests) as (name it is
/// exported under, path it names as written).
fn exported(text: &str) -> Vec<(String, Vec<String>)> {
    use_items(text)
        .into_iter()
        .filter(|(public, _, _)| *public)
        .map(|(_, name, path)| (name, path))
        .collect()
}

/// The leaves of a use tree below `prefix`: `a::{B, c::D as E, self}` → (B, a::B),
/// (E, a::c::D), (a, a).
fn leaves(prefix: &[String], tree: &str, out: &mut Vec<(String, Vec<String>)>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let mut base = prefix.to_vec();
        base.extend(
            tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    leaves(&base, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        leaves(&base, &inner[start..], out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path.trim(), Some(alias.trim())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    if path != "self" {
        // `a::{self}` names `a` itself.
        full.extend(path.split("::").map(|s| s.trim().to_string()));
    }
    let Some(last) = full.last().cloned() else {
        return;
    };
    if last == "*" {
        return;
    }
    out.push((alias.map_or(last, str::to_string), full));
}

/// A use path as written in `module`, made absolute: `crate::`, `self::`, `super::` or a child
/// module's name first; `None` for another crate's.
fn absolute(
    module: &str,
    path: &[String],
    mods: &BTreeMap<String, PathBuf>,
) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base = segments(module);
    match first.as_str() {
        "crate" => return Some(rest.to_vec()),
        "self" => {}
        "super" => {
            base.pop()?;
            let mut rest = rest;
            while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
                base.pop()?;
                rest = tail;
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        child => {
            let mut child_path = base.clone();
            child_path.push(child.to_string());
            if !mods.contains_key(&child_path.join("::")) {
                return None;
            }
        }
    }
    if first != "self" {
        base.push(first.clone());
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Re-exports of the crate: (module, name) → the absolute path of the item re-exported.
type Reexports = BTreeMap<(String, String), Vec<String>>;

fn reexports(mods: &BTreeMap<String, PathBuf>) -> Reexports {
    let mut found = BTreeMap::new();
    for (name, file) in mods {
        let text = without_tests(&std::fs::read_to_string(file).unwrap());
        for (exported_as, path) in exported(&text) {
            if let Some(full) = absolute(name, &path, mods) {
                found.insert((name.clone(), exported_as), full);
            }
        }
    }
    found
}

/// A file's code: before its unit tests, without comment lines (a doc link names an item, it
/// does not import it).
fn without_tests(text: &str) -> String {
    let code = text
        .find("#[cfg(test)]\nmod tests {")
        .map_or(text, |cut| &text[..cut]);
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .flat_map(|line| [line, "\n"])
        .collect()
}

/// The file (module) an absolute path leads to: its longest prefix that is a module, followed
/// through the re-exports it passes.
fn target(path: &[String], mods: &BTreeMap<String, PathBuf>, re: &Reexports) -> String {
    let mut path = path.to_vec();
    for _ in 0..8 {
        let k = (0..=path.len())
            .rev()
            .find(|&k| mods.contains_key(&path[..k].join("::")))
            .unwrap_or(0);
        let module = path[..k].join("::");
        match path
            .get(k)
            .and_then(|item| re.get(&(module.clone(), item.clone())))
        {
            Some(full) => {
                let mut next = full.clone();
                next.extend(path[k + 1..].iter().cloned());
                path = next;
            }
            None => return module,
        }
    }
    path.join("::")
}

/// The crate root's own code: its text without its `mod` declarations and `use` items (a
/// re-export is the crate's face, not a dependency of the root's code).
fn root_code(text: &str) -> String {
    let mut code = String::new();
    let mut in_use = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let item = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        if !in_use && (item.starts_with("use ") || item.starts_with("mod ")) {
            in_use = !trimmed.ends_with(';');
            continue;
        }
        if in_use {
            in_use = !trimmed.ends_with(';');
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The first-level modules the root's `code` names by their bare name (`engine::Database`).
fn bare_paths(code: &str, mods: &BTreeMap<String, PathBuf>) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("::") {
        let before = &code[..at];
        let start = before.rfind(|c: char| !is_ident(c)).map_or(0, |i| i + 1);
        let first = &before[start..];
        let qualified = before[..start].ends_with("::");
        if !first.is_empty() && !qualified && mods.contains_key(first) {
            paths.push(path_at(&code[start..]));
        }
    }
    paths
}

/// The import graph of one crate's `src`. The crate root (`""`) is a node too: a file that
/// names an item the root defines depends on it, and the root on what its own code names.
pub(crate) fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let re = reexports(&mods);
    let mut edges = BTreeMap::new();
    for (name, file) in &mods {
        let text = without_tests(&std::fs::read_to_string(file).unwrap());
        let mut named = crate_paths(&text);
        named.extend(super_paths(&text, name, &mods));
        if name.is_empty() {
            let code = root_code(&text);
            named = crate_paths(&code);
            named.extend(bare_paths(&code, &mods));
            // What the root imports for its own code (not its re-exports).
            named.extend(
                use_items(&text)
                    .into_iter()
                    .filter(|(public, _, _)| !public)
                    .filter_map(|(_, _, path)| absolute("", &path, &mods)),
            );
        }
        let mut to = BTreeSet::new();
        for path in named {
            let target = target(&path, &mods, &re);
            let related = target == *name
                || name.starts_with(&format!("{target}::"))
                || target.starts_with(&format!("{name}::"));
            if !related {
                to.insert(target);
            }
        }
        edges.insert(name.clone(), to);
    }
    edges
}

#[test]
fn the_crate_root_is_a_node_with_its_own_code_only() {
    let root = "//! doc\nmod engine;\npub mod rows;\npub use engine::{\n    Database,\n    Engine,\n};\nuse std::fmt;\n\npub fn connect() { engine::open(); sea_orm::engine::x(); }\n";
    let code = root_code(root);
    assert!(
        !code.contains("Database") && !code.contains("mod "),
        "{code}"
    );
    let mods: BTreeMap<String, PathBuf> = ["", "engine", "rows"]
        .into_iter()
        .map(|m| (m.to_string(), PathBuf::new()))
        .collect();
    assert_eq!(
        bare_paths(&code, &mods),
        vec![vec!["engine".to_string(), "open".to_string()]]
    );
}

#[test]
fn super_paths_and_reexports_lead_to_the_defining_file() {
    let mods: BTreeMap<String, PathBuf> = ["", "a", "a::b", "a::c", "d"]
        .into_iter()
        .map(|m| (m.to_string(), PathBuf::new()))
        .collect();
    assert_eq!(
        super_paths(
            "use super::{c::X, b};\nfn f() { super::super::d::g(); }",
            "a::b",
            &mods
        ),
        vec![
            vec!["a".to_string(), "c".into(), "X".into()],
            vec!["a".into(), "b".into()],
            vec!["d".into(), "g".into()],
        ]
    );
    let exports =
        exported("mod c;\npub use c::{X, Y as Z};\npub(crate) use crate::d::W;\nuse b::V;\n");
    assert_eq!(
        exports,
        vec![
            ("X".to_string(), vec!["c".to_string(), "X".into()]),
            ("Z".into(), vec!["c".into(), "Y".into()]),
            ("W".into(), vec!["crate".into(), "d".into(), "W".into()]),
        ]
    );
    let re: Reexports = exports
        .into_iter()
        .filter_map(|(n, p)| Some((("a".to_string(), n), absolute("a", &p, &mods)?)))
        .collect();
    let path = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    assert_eq!(target(&path("a::X"), &mods, &re), "a::c");
    assert_eq!(target(&path("a::W"), &mods, &re), "d");
    assert_eq!(target(&path("a::b::f"), &mods, &re), "a::b");
    assert_eq!(target(&path("a::Q"), &mods, &re), "a");
}

#[test]
fn groups_after_a_path_and_the_roots_own_imports_are_read() {
    assert_eq!(
        crate_paths("use crate::routes::{meta, tokens::{self, list as l}};"),
        vec![
            vec!["routes".to_string(), "meta".into()],
            vec!["routes".into(), "tokens".into()],
            vec!["routes".into(), "tokens".into(), "list".into()],
        ]
    );
    let items = use_items("use keys::{master_cipher};\npub use engine::Database;\nuse std::fmt;\n");
    assert_eq!(
        items,
        vec![
            (
                false,
                "master_cipher".to_string(),
                vec!["keys".to_string(), "master_cipher".into()]
            ),
            (
                true,
                "Database".into(),
                vec!["engine".into(), "Database".into()]
            ),
            (false, "fmt".into(), vec!["std".into(), "fmt".into()]),
        ]
    );
    assert_eq!(
        without_tests(
            "fn a() {}\n#[cfg(test)]\nmod tests;\nfn b() {}\n#[cfg(test)]\nmod tests {\n"
        ),
        "fn a() {}\n#[cfg(test)]\nmod tests;\nfn b() {}\n"
    );
}
