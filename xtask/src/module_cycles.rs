//! No import circle between the source files of any crate (`cargo xtask module-cycles`, part
//! of `ci`): the files of a crate, with the imports `module_graph.rs` reads, must form layers.
//! A circle means two files that cannot be read, tested or split one without the other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use anyhow::bail;

use crate::module_graph::graph;
use crate::workspace::root;

/// The strongly connected groups of more than one module (Tarjan).
pub fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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

/// The source folders checked: every crate's, the migrations' and this one's.
fn sources() -> anyhow::Result<Vec<PathBuf>> {
    let root = root();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))?
        .map(|e| Ok(e?.path().join("src")))
        .collect::<anyhow::Result<_>>()?;
    sources.extend([root.join("migrations/src"), root.join("xtask/src")]);
    sources.retain(|s| s.is_dir());
    sources.sort();
    Ok(sources)
}

/// Every import circle of every crate, each with the edges that make it.
///
/// # Errors
/// A source that cannot be read or parsed.
pub fn report() -> anyhow::Result<(usize, Vec<String>)> {
    let sources = sources()?;
    let mut report = Vec::new();
    for src in &sources {
        let graph = graph(src)?;
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
    }
    Ok((sources.len(), report))
}

/// `cargo xtask module-cycles`.
pub fn check() -> anyhow::Result<()> {
    let (checked, report) = report()?;
    if !report.is_empty() {
        bail!("import circles in\n{}", report.join("\n"));
    }
    eprintln!("xtask: no import circle in {checked} crates");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_has_no_import_circle() {
        let (checked, report) = report().unwrap();
        assert!(
            report.is_empty(),
            "import circles in\n{}",
            report.join("\n")
        );
        assert!(checked >= 9, "only {checked} crates found");
    }

    #[test]
    fn the_check_finds_a_circle() {
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
}
