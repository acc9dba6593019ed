//! The graph of small made-up crates: what a file names, and where it leads.

use super::*;

fn refs(code: &str) -> FileRefs {
    file_refs(&syn::parse_file(code).unwrap())
}

fn path(p: &str) -> Vec<String> {
    p.split("::").map(str::to_string).collect()
}

fn mods(names: &[&str]) -> Modules {
    names
        .iter()
        .map(|m| ((*m).to_string(), PathBuf::new()))
        .collect()
}

#[test]
fn use_groups_code_and_macros_are_read_and_tests_left_out() {
    let found = refs(
        "use crate::routes::{meta, tokens::{self, list as l}};\n\
         pub(crate) use engine::Database;\n\
         fn f() { crate::e::f(); other_crate::g(); tracing::info!(x = ?crate::m::n()); }\n\
         #[serde(with = \"crate::wire::ts\")]\n#[schema(value_type = crate::dto::X)]\nstruct S;\n\
         #[cfg(test)]\nmod tests { use crate::hidden::X; fn t() { crate::hidden::y(); } }\n",
    );
    assert_eq!(
        found.uses,
        vec![
            (false, "meta".into(), path("crate::routes::meta")),
            (false, "tokens".into(), path("crate::routes::tokens")),
            (false, "l".into(), path("crate::routes::tokens::list")),
            (true, "Database".into(), path("engine::Database")),
        ]
    );
    assert!(found.paths.contains(&path("crate::e::f")));
    assert!(found.paths.contains(&path("other_crate::g")));
    assert!(
        found.paths.contains(&path("crate::m::n")),
        "{:?}",
        found.paths
    );
    assert!(
        found.paths.contains(&path("crate::wire::ts")),
        "{:?}",
        found.paths
    );
    assert!(
        found.paths.contains(&path("crate::dto::X")),
        "{:?}",
        found.paths
    );
    assert!(!found.paths.iter().flatten().any(|s| s == "hidden"));
}

#[test]
fn super_paths_and_reexports_lead_to_the_defining_file() {
    let mods = mods(&["", "a", "a::b", "a::c", "d"]);
    assert_eq!(
        absolute("a::b", &path("super::super::d::g"), &mods),
        Some(path("d::g"))
    );
    assert_eq!(
        absolute("a::b", &path("super::c::X"), &mods),
        Some(path("a::c::X"))
    );
    assert_eq!(absolute("a", &path("c::X"), &mods), Some(path("a::c::X")));
    assert_eq!(absolute("a", &path("std::fmt"), &mods), None);
    let mut re = Reexports::new();
    re.insert(("a".into(), "X".into()), path("a::c::X"));
    re.insert(("a".into(), "W".into()), path("d::W"));
    let to = |p: &str| targets(&path(p), &mods, &re);
    assert_eq!(to("a::X"), ["a", "a::c"]);
    assert_eq!(to("a::W"), ["a", "d"]);
    assert_eq!(to("a::b::f"), ["a::b"]);
    assert_eq!(to("a::Q"), ["a"]);
}

#[test]
fn the_crate_root_is_a_node_with_its_own_code_only() {
    let mods = mods(&["", "engine", "rows"]);
    let mut files = BTreeMap::new();
    files.insert(
        String::new(),
        refs(
            "mod engine;\npub mod rows;\npub use rows::Row;\nuse std::fmt;\n\
              pub fn connect() { engine::open(); sea_orm::engine::x(); }\n",
        ),
    );
    files.insert(
        "rows".into(),
        refs("use crate::connect;\npub struct Row;\n"),
    );
    files.insert("engine".into(), refs("use crate::Row;\npub fn open() {}\n"));
    let graph = edges(&files, &mods);
    // The root's code calls `engine`; its re-export of `rows` is not its code's.
    assert_eq!(graph[""], BTreeSet::from(["engine".to_string()]));
    // `rows` names the root's own function; `engine` names `Row` through the re-export.
    assert_eq!(graph["rows"], BTreeSet::from([String::new()]));
    assert_eq!(graph["engine"], BTreeSet::from(["rows".to_string()]));
}

#[test]
fn a_reexport_passed_through_is_a_dependency_too() {
    let mods = mods(&["", "a", "a::c", "x"]);
    let mut files = BTreeMap::new();
    files.insert(
        "a".into(),
        refs("mod c;\npub use c::X;\npub fn f() { crate::x::g(); }\n"),
    );
    files.insert("a::c".into(), refs("pub struct X;\n"));
    files.insert("x".into(), refs("use crate::a::X;\npub fn g() {}\n"));
    let graph = edges(&files, &mods);
    // `x` names `X` through `a`, whose own code names `x`: a circle by way of `a`'s file.
    assert_eq!(
        graph["x"],
        BTreeSet::from(["a".to_string(), "a::c".to_string()])
    );
    assert_eq!(graph["a"], BTreeSet::from(["x".to_string()]));
}
