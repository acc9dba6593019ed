//! The operator's npm packages (`TOKENVAULT_CODE_MODULES`: a folder with `node_modules/`, made
//! by `npm install --prefix <folder> <package>…`). The server reads the folder once at start
//! and compiles every `.js` and `.cjs` file to bytecode (`script.rs`); each worker gets the
//! files in its first frame (it can read no file once sandboxed) and loads one into a call's
//! context when that call first requires it. Where `require` looks, and in what order, is
//! Node's resolution, written in `globals.js`; this side answers three questions of it: what a
//! path is (`__modStat`), a JSON file's text (`__modText`), and a code file's function
//! (`__modLoad`).

use crate::worker::host_function::host_function;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use base64::Engine as _;
use rquickjs::{Context, Ctx, Exception, Object, Runtime, Value};
use serde::{Deserialize, Serialize};

/// The most bytes of source the folder may hold (its `.js`, `.cjs` and `.json` files): their
/// bytecode travels to every worker in one frame.
const MAX_TOTAL: u64 = 40 << 20;
/// The largest single file.
const MAX_FILE: u64 = 8 << 20;
/// The most files.
const MAX_FILES: usize = 20_000;
/// How deep folders nest (a symbolic link loop ends here).
const MAX_DEPTH: usize = 32;

/// One file of the folder, by its path as code sees it (`/node_modules/<package>/…`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum ModuleFile {
    /// A `.js` or `.cjs` file: its bytecode, in base64.
    Code {
        /// `/node_modules/…`
        path: String,
        /// The bytecode of `script::compile`, in base64.
        bytecode: String,
    },
    /// A `.json` file, as text.
    Json {
        /// `/node_modules/…`
        path: String,
        /// Its text.
        text: String,
    },
    /// A file that does not compile: requiring it throws this message.
    Broken {
        /// `/node_modules/…`
        path: String,
        /// The compiler's message.
        why: String,
    },
}

/// The operator's packages, compiled; empty when none are configured.
#[derive(Clone, Debug, Default)]
pub struct CodeModules {
    files: Vec<ModuleFile>,
}

impl CodeModules {
    /// Reads and compiles `folder/node_modules`. A folder without one, or beyond the limits,
    /// is an error naming it; a file that does not compile is kept as broken
    /// (requiring it fails; most packages carry files no one requires).
    pub fn read(folder: &Path) -> Result<Self, String> {
        let root = folder.join("node_modules");
        if !root.is_dir() {
            return Err(format!(
                "{} has no node_modules folder (make it with `npm install --prefix {} <package>`)",
                folder.display(),
                folder.display()
            ));
        }
        let mut found = Found::default();
        collect(&root, "/node_modules", 0, &mut found)?;
        let mut modules = Self::compile(found.sources)?;
        modules
            .files
            .extend(found.too_large.into_iter().map(|path| ModuleFile::Broken {
                path,
                why: format!(
                    "the file is larger than {} MiB and was not loaded",
                    MAX_FILE >> 20
                ),
            }));
        Ok(modules)
    }

    /// Compiles `(path, source)` pairs (`.json` paths are kept as text).
    pub fn compile(sources: Vec<(String, String)>) -> Result<Self, String> {
        let runtime = Runtime::new().map_err(|e| e.to_string())?;
        let context = Context::full(&runtime).map_err(|e| e.to_string())?;
        let files = context.with(|ctx| {
            sources
                .into_iter()
                .map(|(path, text)| {
                    // The paths are the collector's, whose extensions are lower case.
                    #[allow(clippy::case_sensitive_file_extension_comparisons)]
                    let json = path.ends_with(".json");
                    if json {
                        return ModuleFile::Json { path, text };
                    }
                    match crate::worker::script::compile(&ctx, &path, &text) {
                        Ok(bytes) => ModuleFile::Code {
                            bytecode: base64::engine::general_purpose::STANDARD.encode(bytes),
                            path,
                        },
                        Err(why) => ModuleFile::Broken { path, why },
                    }
                })
                .collect()
        });
        Ok(Self { files })
    }

    /// How many files there are, and how many of them do not compile.
    pub fn counts(&self) -> (usize, usize) {
        let broken = self
            .files
            .iter()
            .filter(|f| matches!(f, ModuleFile::Broken { .. }))
            .count();
        (self.files.len(), broken)
    }

    pub(crate) fn files(&self) -> &[ModuleFile] {
        &self.files
    }
}

/// What [`collect`] finds.
#[derive(Default)]
struct Found {
    /// `(path, source)` of each file read.
    sources: Vec<(String, String)>,
    /// Files over [`MAX_FILE`]: never read (packages ship browser bundles that size which
    /// nothing requires); requiring one throws.
    too_large: Vec<String>,
    /// Bytes read.
    total: u64,
}

fn collect(dir: &Path, at: &str, depth: usize, found: &mut Found) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{} nests deeper than {MAX_DEPTH} folders",
            dir.display()
        ));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        // `.bin`, `.package-lock.json`, `.cache`: npm's own.
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let inner = format!("{at}/{name}");
        if meta.is_dir() {
            collect(&path, &inner, depth + 1, found)?;
            continue;
        }
        // As Node.js: `.JS` is not a JavaScript file.
        let wanted = [".js", ".cjs", ".json"].iter().any(|e| name.ends_with(e));
        if !wanted || !meta.is_file() {
            continue;
        }
        if meta.len() > MAX_FILE {
            tracing::warn!(path = %path.display(), "a code module file over 8 MiB is not loaded");
            found.too_large.push(inner);
            continue;
        }
        found.total += meta.len();
        if found.total > MAX_TOTAL || found.sources.len() >= MAX_FILES {
            return Err(format!(
                "the code modules hold more than {} MiB or {MAX_FILES} files",
                MAX_TOTAL >> 20
            ));
        }
        let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // A file that is not UTF-8 is not JavaScript a package requires.
        if let Ok(text) = String::from_utf8(text) {
            found.sources.push((inner, text));
        }
    }
    Ok(())
}

/// A file as a worker keeps it.
enum Entry {
    Code(Vec<u8>),
    Json(String),
    Broken(String),
}

/// The files of [`CodeModules`] in a worker, by path, and every folder above them.
#[derive(Default)]
pub(crate) struct ModuleStore {
    files: HashMap<String, Entry>,
    dirs: HashSet<String>,
}

impl ModuleStore {
    /// The operator's files and the built-in modules' vendored packages
    /// ([`crate::node::packages`]), compiled here.
    pub(crate) fn new(files: Vec<ModuleFile>) -> Self {
        let vendored = crate::node::packages()
            .map(|(path, text)| ((*path).to_string(), (*text).to_string()))
            .collect();
        let vendored = CodeModules::compile(vendored)
            .map(|m| m.files)
            .unwrap_or_default();
        let mut store = Self::default();
        for file in vendored.into_iter().chain(files) {
            let (path, entry) = match file {
                ModuleFile::Code { path, bytecode } => {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(bytecode)
                        .unwrap_or_default();
                    (path, Entry::Code(bytes))
                }
                ModuleFile::Json { path, text } => (path, Entry::Json(text)),
                ModuleFile::Broken { path, why } => (path, Entry::Broken(why)),
            };
            let mut dir = path.as_str();
            while let Some(at) = dir.rfind('/') {
                dir = &dir[..at];
                if dir.is_empty() || !store.dirs.insert(dir.to_string()) {
                    break;
                }
            }
            store.files.insert(path, entry);
        }
        store
    }
}

/// Installs `__modStat(path)` (0 nothing, 1 a file, 2 a folder), `__modText(path)` (a JSON
/// file's text) and `__modLoad(path)` (a code file's function, loaded from its bytecode).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    host: &Object<'js>,
    store: &Rc<ModuleStore>,
) -> rquickjs::Result<()> {
    let stat = store.clone();
    host.set(
        "modStat",
        host_function(ctx, move |path: String| {
            if stat.files.contains_key(&path) {
                1
            } else if stat.dirs.contains(&path) {
                2
            } else {
                0
            }
        })?,
    )?;
    let text = store.clone();
    host.set(
        "modText",
        host_function(ctx, move |path: String| match text.files.get(&path) {
            Some(Entry::Json(t)) => Some(t.clone()),
            _ => None,
        })?,
    )?;
    let load = store.clone();
    host.set(
        "modLoad",
        host_function(
            ctx,
            move |ctx: Ctx<'js>, path: String| -> rquickjs::Result<Value<'js>> {
                match load.files.get(&path) {
                    Some(Entry::Code(bytes)) => crate::worker::script::load(&ctx, bytes),
                    Some(Entry::Broken(why)) => Err(Exception::throw_syntax(&ctx, why)),
                    _ => Err(Exception::throw_reference(&ctx, "no such module file")),
                }
            },
        )?,
    )?;
    Ok(())
}
