//! No import circle between the source files of any crate: the files of a crate, with the
//! imports `module_graph.rs` reads from their text, must form layers. A circle means two files
//! that cannot be read, tested or split one without the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::module_graph::{crate_paths, graph};

/// The strongly connected groups of more than one module (Tarjan).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(w: &mut Walk<'g>, v: &'g str) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for u in w.graph.get(v).into_iter().flatten() {
            let u = u.as_str();
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.stack.contains(&u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut group = Vec::new();
            while let Some(u) = w.stack.pop() {
                group.push(u.to_string());
                if u == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                w.found.push(group);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.found
}

#[test]
fn no_crate_has_an_import_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .collect();
    sources.extend([root.join("migrations/src"), root.join("xtask/src")]);
    let mut checked = 0;
    let mut report = Vec::new();
    for src in sources.iter().filter(|s| s.is_dir()) {
        let graph = graph(src);
        let name = |m: &String| {
            if m.is_empty() {
                "(root)".to_string()
            } else {
                m.clone()
            }
        };
        for circle in circles(&graph) {
            // Each circle's edges, to show where to cut it.
            let edges: Vec<String> = circle
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|to| circle.contains(to))
                        .map(move |to| format!("  {} -> {}", name(from), name(to)))
                })
                .collect();
            report.push(format!("{}:\n{}", src.display(), edges.join("\n")));
        }
        checked += 1;
    }
    assert!(
        report.is_empty(),
        "import circles in\n{}",
        report.join("\n")
    );
    assert!(checked >= 9, "only {checked} crates found");
}

#[test]
fn the_check_finds_a_circle_and_reads_groups() {
    let text = "use crate::{a, b::{c, d}};\nfn f() { crate::e::f(); other_crate::g(); }";
    let paths = crate_paths(text);
    assert_eq!(
        paths,
        vec![
            vec!["a".to_string()],
            vec!["b".to_string(), "c".into()],
            vec!["b".to_string(), "d".into()],
            vec!["e".into(), "f".into()],
        ]
    );
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"][..]),
        ("c", &["a"][..]),
        ("d", &["a"][..]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.iter().map(|s| (*s).to_string()).collect()))
    .collect();
    assert_eq!(circles(&graph), vec![vec!["a", "b", "c"]]);
}
