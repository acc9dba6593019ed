//! The import graph of one crate's source files, read by `syn`: each file's `crate::`,
//! `super::` and `self::` paths, in `use` items, code and macro arguments (`lib.rs`, `main.rs`
//! and `mod.rs` stand for their folder; unit tests behind `#[cfg(test)]` are left out), a path
//! through a re-export leading to the file that defines the item. `module_cycles.rs` checks
//! it has no circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Module path (`a::b`, empty for the crate root) → its file.
type Modules = BTreeMap<String, PathBuf>;
/// Re-exports of the crate: (module, name) → the absolute path of the item re-exported.
type Reexports = BTreeMap<(String, String), Vec<String>>;

/// What one file says, unit tests left out.
#[derive(Debug, Default, PartialEq, Eq)]
struct FileRefs {
    /// `use` leaves: (whether the item is `pub` in any form, the name it is known under, the
    /// path as written).
    uses: Vec<(bool, String, Vec<String>)>,
    /// Paths in code and macro arguments, as written (`crate::a::b`, `super::c`, `m::f`).
    paths: Vec<Vec<String>>,
}

/// Every `.rs` file under `dir`, at any depth.
pub fn rust_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Whether `attrs` hold `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

/// The files named by a `#[path = "…"]` attribute in `file` (a unit-test file beside its
/// module): they belong to the module that declares them, not to the crate's tree of files.
fn path_attributes(file: &Path, parsed: &syn::File) -> Vec<PathBuf> {
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut found = Vec::new();
    for item in &parsed.items {
        if let syn::Item::Mod(m) = item {
            for attr in &m.attrs {
                if let syn::Meta::NameValue(nv) = &attr.meta
                    && nv.path.is_ident("path")
                    && let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = &nv.value
                {
                    found.push(dir.join(s.value()));
                }
            }
        }
    }
    found
}

fn parse(file: &Path) -> anyhow::Result<syn::File> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))
}

/// The crate's modules, by the files under `src`.
fn modules(src: &Path, parsed: &BTreeMap<PathBuf, syn::File>) -> Modules {
    let pathed: BTreeSet<PathBuf> = parsed
        .iter()
        .flat_map(|(file, syntax)| path_attributes(file, syntax))
        .collect();
    let mut found = BTreeMap::new();
    for path in parsed.keys().filter(|f| !pathed.contains(*f)) {
        let Ok(rel) = path.strip_prefix(src) else {
            continue;
        };
        let rel = rel.with_extension("");
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
        found.insert(parts.join("::"), path.clone());
    }
    found
}

/// The leaves of a use tree below `prefix`: `a::{B, c::D as E, self}` → (B, a::B),
/// (E, a::c::D), (a, a); globs are left out.
fn leaves(prefix: &[String], tree: &syn::UseTree, out: &mut Vec<(String, Vec<String>)>) {
    let with = |name: &syn::Ident| {
        let mut p = prefix.to_vec();
        p.push(name.to_string());
        p
    };
    match tree {
        syn::UseTree::Path(p) => leaves(&with(&p.ident), &p.tree, out),
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                out.push((last.clone(), prefix.to_vec()));
            }
        }
        syn::UseTree::Name(n) => out.push((n.ident.to_string(), with(&n.ident))),
        syn::UseTree::Rename(r) if r.ident == "self" => {
            out.push((r.rename.to_string(), prefix.to_vec()));
        }
        syn::UseTree::Rename(r) => out.push((r.rename.to_string(), with(&r.ident))),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                leaves(prefix, tree, out);
            }
        }
        syn::UseTree::Glob(_) => {}
    }
}

/// Collects what a file names, skipping `#[cfg(test)]` items and `mod` declarations.
#[derive(Default)]
struct Collector {
    refs: FileRefs,
}

impl<'a> Visit<'a> for Collector {
    fn visit_item(&mut self, item: &'a syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Trait(t) => &t.attrs,
            syn::Item::Type(t) => &t.attrs,
            syn::Item::Macro(m) => &m.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test(attrs) {
            return;
        }
        if let syn::Item::Use(u) = item {
            let mut found = Vec::new();
            leaves(&[], &u.tree, &mut found);
            let public = !matches!(u.vis, syn::Visibility::Inherited);
            self.refs
                .uses
                .extend(found.into_iter().map(|(name, path)| (public, name, path)));
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_path(&mut self, path: &'a syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.refs
                .paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'a syn::Macro) {
        self.visit_path(&mac.path);
        token_paths(mac.tokens.clone(), &mut self.refs.paths);
    }

    fn visit_attribute(&mut self, attr: &'a syn::Attribute) {
        // Derive and tool arguments name items too (`#[schema(value_type = crate::dto::X)]`,
        // `#[serde(with = "crate::wire::ts")]`); a doc comment does not import anything.
        match &attr.meta {
            syn::Meta::List(list) => token_paths(list.tokens.clone(), &mut self.refs.paths),
            syn::Meta::NameValue(nv) if !nv.path.is_ident("doc") => {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &nv.value
                {
                    string_path(&s.value(), &mut self.refs.paths);
                }
            }
            _ => {}
        }
    }
}

/// A path written as a string (`"crate::wire::ts"`), if the string is one.
fn string_path(text: &str, out: &mut Vec<Vec<String>>) {
    let parts: Vec<String> = text.split("::").map(str::to_string).collect();
    let ident =
        |p: &String| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if parts.len() > 1 && parts.iter().all(ident) {
        out.push(parts);
    }
}

/// The `a::b::c` paths in a macro's tokens (which `syn` does not parse as code).
fn token_paths(tokens: TokenStream, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => {
                token_paths(g.stream(), out);
                i += 1;
            }
            TokenTree::Ident(first) => {
                // Not the tail of a path (`x::crate` cannot be), not after `::` already taken.
                let mut path = vec![first.to_string()];
                let mut j = i + 1;
                while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(next)) =
                    (tokens.get(j), tokens.get(j + 1), tokens.get(j + 2))
                {
                    if a.as_char() != ':' || b.as_char() != ':' {
                        break;
                    }
                    match next {
                        TokenTree::Ident(ident) => path.push(ident.to_string()),
                        _ => break,
                    }
                    j += 3;
                }
                if path.len() > 1 {
                    out.push(path);
                }
                i = j;
            }
            TokenTree::Literal(literal) => {
                if let Ok(syn::Lit::Str(s)) = syn::parse_str::<syn::Lit>(&literal.to_string()) {
                    string_path(&s.value(), out);
                }
                i += 1;
            }
            TokenTree::Punct(_) => i += 1,
        }
    }
}

/// What `file` names.
fn file_refs(file: &syn::File) -> FileRefs {
    let mut collector = Collector::default();
    collector.visit_file(file);
    collector.refs
}

fn segments(module: &str) -> Vec<String> {
    if module.is_empty() {
        Vec::new()
    } else {
        module.split("::").map(str::to_string).collect()
    }
}

/// A path as written in `module`, made absolute: `crate::`, `self::`, `super::` or a child
/// module's name first; `None` for another crate's (or a local item's).
fn absolute(module: &str, path: &[String], mods: &Modules) -> Option<Vec<String>> {
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

/// The files (modules) an absolute path leads to: its longest prefix that is a module,
/// followed through the re-exports it passes. The last is the file that defines the item;
/// before it, each module (but the crate root) whose re-export the path went through: naming
/// `a::X` depends on `a`'s file too, which may in turn name the caller (the shared
/// `module-cycles` tool counts that hop, and so does this graph).
fn targets(path: &[String], mods: &Modules, re: &Reexports) -> Vec<String> {
    let mut path = path.to_vec();
    let mut passed = Vec::new();
    for _ in 0..8 {
        let k = (0..=path.len())
            .rev()
            .find(|&k| mods.contains_key(&path[..k].join("::")))
            .unwrap_or(0);
        let module = path[..k].join("::");
        let Some(full) = path
            .get(k)
            .and_then(|item| re.get(&(module.clone(), item.clone())))
        else {
            passed.push(module);
            return passed;
        };
        let mut next = full.clone();
        next.extend(path[k + 1..].iter().cloned());
        path = next;
        if !module.is_empty() {
            passed.push(module);
        }
    }
    passed.push(path.join("::"));
    passed
}

/// The import graph of `refs` (module → what its file names) over `mods`. The crate root
/// (`""`) is a node too: a file that names an item the root defines depends on it, and the
/// root on what its own code names (its re-exports are the crate's face, not its code's
/// dependencies).
fn edges(refs: &BTreeMap<String, FileRefs>, mods: &Modules) -> BTreeMap<String, BTreeSet<String>> {
    let mut re = Reexports::new();
    for (module, file) in refs {
        for (_, name, path) in file.uses.iter().filter(|(public, _, _)| *public) {
            if let Some(full) = absolute(module, path, mods) {
                re.insert((module.clone(), name.clone()), full);
            }
        }
    }
    let mut graph = BTreeMap::new();
    for (module, file) in refs {
        let root = module.is_empty();
        let named = file
            .uses
            .iter()
            .filter(|(public, _, _)| !(root && *public))
            .map(|(_, _, path)| path)
            .chain(&file.paths)
            .filter_map(|path| absolute(module, path, mods));
        let mut to = BTreeSet::new();
        for target in named.flat_map(|path| targets(&path, mods, &re)) {
            let related = target == *module
                || (!root && module.starts_with(&format!("{target}::")))
                || (!root && target.starts_with(&format!("{module}::")));
            if !related {
                to.insert(target);
            }
        }
        graph.insert(module.clone(), to);
    }
    graph
}

/// The import graph of one crate's `src`.
///
/// # Errors
/// A file that cannot be read or parsed.
pub fn graph(src: &Path) -> anyhow::Result<BTreeMap<String, BTreeSet<String>>> {
    let parsed = rust_files(src)?
        .into_iter()
        .map(|file| Ok((file.clone(), parse(&file)?)))
        .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
    let mods = modules(src, &parsed);
    let refs = mods
        .iter()
        .map(|(module, file)| (module.clone(), file_refs(&parsed[file])))
        .collect();
    Ok(edges(&refs, &mods))
}

#[cfg(test)]
mod tests;
