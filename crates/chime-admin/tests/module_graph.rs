//! The modules of `chime-admin` import each other in one direction only: no import cycle, at
//! the level of files. A cycle is how a crate's layers dissolve (a loop that needs the state
//! that starts the loop, a model that needs the scheduler), so it is refused here, in CI, with
//! the files of the cycle and the paths that tie them.
//!
//! What counts as an import: every `crate::…` and `super::…` path in a file's code (its
//! `#[cfg(test)]` module left out), resolved to the longest path that is a module file. A
//! parent module's relative paths to its own children (`pub use jobs::JobDue` in
//! `store/mod.rs`) are how Rust re-exports and are not counted; a child's use of its parent is.
//!
//! The same holds one level up, for the crate's top-level modules (its folders and top-level
//! files): no two of them import each other, with no exception. Two folders that import each
//! other are one layer cut in two, and a loop that imports a peer loop to hand it work is how
//! the layers end up pointing back up; what loops hand each other lives in `pipeline/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path: `["store", "jobs"]` for `src/store/jobs.rs`, `["store"]` for
/// `src/store/mod.rs`.
type Module = Vec<String>;

fn module_files(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap();
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            let file = parts.pop().unwrap();
            match file.as_str() {
                "lib.rs" if parts.is_empty() => continue,
                "mod.rs" => {}
                other => parts.push(other.trim_end_matches(".rs").to_owned()),
            }
            out.insert(parts, path);
        }
    }
    out
}

/// The file's code without comments, string contents and its test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            _ => out.push(c),
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands the path tree that starts at `s` (after `crate::` or `super::`): `a::b::{c, d::e}`
/// gives `a::b::c` and `a::b::d::e`. Returns the paths and how much of `s` they used.
fn expand(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut prefix: Vec<String> = Vec::new();
    let bytes: Vec<char> = s.chars().collect();
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_whitespace() {
            i += 1;
        }
        if i < bytes.len() && bytes[i] == '{' {
            // A group: split at top-level commas and expand each part.
            let mut depth = 0;
            let start = i + 1;
            let mut parts = Vec::new();
            let mut part_start = start;
            let mut j = i;
            while j < bytes.len() {
                match bytes[j] {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            parts.push((part_start, j));
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        parts.push((part_start, j));
                        part_start = j + 1;
                    }
                    _ => {}
                }
                j += 1;
            }
            let mut out = Vec::new();
            for (a, b) in parts {
                let part: String = bytes[a..b].iter().collect();
                let (paths, _) = expand(&part);
                for p in paths {
                    let mut full = prefix.clone();
                    full.extend(p);
                    out.push(full);
                }
            }
            if out.is_empty() {
                out.push(prefix.clone());
            }
            return (out, j + 1);
        }
        let start = i;
        while i < bytes.len() && is_ident(bytes[i]) {
            i += 1;
        }
        if start == i {
            return (vec![prefix], i);
        }
        prefix.push(bytes[start..i].iter().collect());
        if i + 1 < bytes.len() && bytes[i] == ':' && bytes[i + 1] == ':' {
            i += 2;
        } else {
            return (vec![prefix], i);
        }
    }
}

/// Every module path a file's code names through `crate::` or `super::`.
fn imports(module: &Module, code: &str) -> Vec<Module> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(pos) = rest.find(['c', 's']) {
        let before_ok = rest[..pos].chars().last().is_none_or(|c| !is_ident(c));
        let tail = &rest[pos..];
        let (base, skip): (Module, usize) = if before_ok && tail.starts_with("crate::") {
            (Vec::new(), "crate::".len())
        } else if before_ok && tail.starts_with("super::") {
            // `super` of `a::b` (file a/b.rs) is `a`; repeated `super::super::` climbs further.
            let mut base = module.clone();
            base.pop();
            let mut skip = "super::".len();
            while tail[skip..].starts_with("super::") {
                base.pop();
                skip += "super::".len();
            }
            (base, skip)
        } else {
            rest = &rest[pos + 1..];
            continue;
        };
        let (paths, used) = expand(&tail[skip..]);
        for p in paths {
            let mut full = base.clone();
            full.extend(p);
            out.push(full);
        }
        rest = &tail[skip + used.max(1).min(tail.len() - skip)..];
    }
    out
}

/// The module file a path lands in: its longest prefix that is a module.
fn resolve(path: &[String], modules: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains_key(p))
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct State<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        on_stack: BTreeSet<Module>,
        stack: Vec<Module>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn visit(s: &mut State<'_>, v: &Module) {
        s.index.insert(v.clone(), s.next);
        s.low.insert(v.clone(), s.next);
        s.next += 1;
        s.stack.push(v.clone());
        s.on_stack.insert(v.clone());
        let targets: Vec<Module> = s.edges.get(v).into_iter().flatten().cloned().collect();
        for w in targets {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        on_stack: BTreeSet::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let modules = module_files(src);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, file) in &modules {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let targets = edges.entry(module.clone()).or_default();
        for path in imports(module, &code) {
            if let Some(target) = resolve(&path, &modules) {
                if &target != module {
                    targets.insert(target);
                }
            }
        }
    }
    edges
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// The top-level module a module belongs to: `store` for `store::runs::claim`.
fn top(m: &Module) -> &str {
    m.first().map_or("crate", |s| s.as_str())
}

/// Pairs of top-level modules that import each other, each with the module edges that tie
/// them (both directions).
fn folder_pairs(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<(String, String, Vec<String>)> {
    let mut ties: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (from, targets) in edges {
        for to in targets {
            let (a, b) = (top(from), top(to));
            if a != b {
                ties.entry((a.to_owned(), b.to_owned()))
                    .or_default()
                    .push(format!("{} -> {}", name(from), name(to)));
            }
        }
    }
    let mut out = Vec::new();
    for ((a, b), forward) in &ties {
        if a < b {
            if let Some(back) = ties.get(&(b.clone(), a.clone())) {
                out.push((a.clone(), b.clone(), forward.iter().chain(back).cloned().collect()));
            }
        }
    }
    out
}

#[test]
fn the_checker_sees_paths_groups_and_super() {
    let module: Module = vec!["store".into(), "jobs".into()];
    let code = code_of(
        "use crate::model::{Job, Invalid};\nuse super::{rows, Store};\nuse crate::{a::b::{C, d}, e};\n\
         // use crate::commented::Out;\nlet s = \"crate::in_string\"; crate::schedule::Calendar::parse();\n\
         #[cfg(test)]\nmod tests { use crate::tested::X; }",
    );
    let found: BTreeSet<String> = imports(&module, &code).iter().map(name).collect();
    let expected: BTreeSet<String> = [
        "model::Job",
        "model::Invalid",
        "store::rows",
        "store::Store",
        "a::b::C",
        "a::b::d",
        "e",
        "schedule::Calendar::parse",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(found, expected);
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    let (a, b, c) = (vec!["a".to_owned()], vec!["b".to_owned()], vec!["c".to_owned()]);
    edges.entry(a.clone()).or_default().insert(b.clone());
    edges.entry(b.clone()).or_default().insert(a.clone());
    edges.entry(b.clone()).or_default().insert(c.clone());
    assert_eq!(cycles(&edges), vec![vec![a.clone(), b.clone()]]);
    // Folders: `x::one -> y` and `y::two -> x::three` tie `x` and `y`; `x -> z` alone does not.
    let m = |s: &str| -> Module { s.split("::").map(str::to_owned).collect() };
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    edges.entry(m("x::one")).or_default().insert(m("y"));
    edges.entry(m("y::two")).or_default().insert(m("x::three"));
    edges.entry(m("x::one")).or_default().insert(m("z"));
    edges.entry(m("x::one")).or_default().insert(m("x::three"));
    let pairs = folder_pairs(&edges);
    assert_eq!(
        pairs,
        vec![(
            "x".to_owned(),
            "y".to_owned(),
            vec!["x::one -> y".to_owned(), "y::two -> x::three".to_owned()]
        )]
    );
}

#[test]
fn no_import_cycle_between_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let edges = graph(&src);
    assert!(edges.len() > 40, "the checker found the modules: {}", edges.len());
    let found = cycles(&edges);
    let report: Vec<String> = found
        .iter()
        .map(|component| {
            let members: BTreeSet<&Module> = component.iter().collect();
            let ties: Vec<String> = component
                .iter()
                .flat_map(|m| {
                    edges[m]
                        .iter()
                        .filter(|t| members.contains(t))
                        .map(move |t| format!("{} -> {}", name(m), name(t)))
                })
                .collect();
            format!("cycle of {} modules: {}", component.len(), ties.join(", "))
        })
        .collect();
    assert!(
        report.is_empty(),
        "import cycles in chime-admin:\n{}",
        report.join("\n")
    );
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = module_files(&src);
    let edges = graph(&src);
    let file_of = |m: &str| -> String {
        let module: Module = m.split("::").map(str::to_owned).collect();
        modules
            .get(&module)
            .and_then(|f| f.strip_prefix(&src).ok())
            .map_or_else(|| m.to_owned(), |f| format!("src/{}", f.display()))
    };
    let report: Vec<String> = folder_pairs(&edges)
        .iter()
        .map(|(a, b, ties)| {
            let ties: Vec<String> = ties
                .iter()
                .map(|t| match t.split_once(" -> ") {
                    Some((from, to)) => format!("  {} ({}) imports {}", from, file_of(from), to),
                    None => format!("  {t}"),
                })
                .collect();
            format!("`{a}` and `{b}` import each other:\n{}", ties.join("\n"))
        })
        .collect();
    assert!(
        report.is_empty(),
        "top-level modules of chime-admin that import each other (move what they share below \
         both, e.g. into `pipeline/` or a pure module the store uses):\n{}",
        report.join("\n")
    );
}
