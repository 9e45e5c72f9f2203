//! The crates' layers, read from their source: every path through `crate::` or `super::` (in `use`
//! statements and in qualified paths, comments and strings left out), resolved through the
//! modules' own imports and re-exports (`pub use` in `lib.rs` and in a parent module hides no
//! edge), gives an edge between two top-level modules (for `matmul`: between the backends too,
//! each its own node). No cycle may remain, and in `matmul` no layer may import a higher one. A
//! crate's `#[cfg(test)]` fixture module `tests` is left out: it sits above every layer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's source, parsed.
struct Crate {
    /// Module path (from the crate root) → the names its `use` statements bind → their targets.
    aliases: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    /// Every module path that is a file or a directory.
    modules: BTreeSet<Vec<String>>,
    /// Modules that are files or directories (not inline `mod x { }`).
    files: BTreeSet<Vec<String>>,
    /// (module the path is written in, the path as written, file and line).
    paths: Vec<(Vec<String>, Vec<String>, String)>,
    /// (module, name bound, the path as written) of every `use`.
    uses: Vec<(Vec<String>, String, Vec<String>)>,
}

/// Comments, string and character literals replaced by spaces (newlines kept).
fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !ident_char(b.get(i.wrapping_sub(1)).copied())
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|h| b.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                blank(&mut out, b[j]);
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                }
                i += 1;
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\''), else a lifetime.
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
            out.push(' ');
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

/// Tokens: identifiers, `::`, and single punctuation characters; each with its line.
fn tokens(text: &str) -> Vec<(String, usize)> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push((b[start..i].iter().collect(), line));
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push(("::".into(), line));
            i += 2;
        } else {
            out.push((c.to_string(), line));
            i += 1;
        }
    }
    out
}

/// A path's first segments (`crate`, `super`, `self`) made absolute from module `at`.
fn absolute(at: &[String], segs: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = at.to_vec();
    let mut rest = segs;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super") | Some("self") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// A `use` tree from token `i` (after `use`), expanded into (path, bound name) pairs.
fn use_tree(
    toks: &[(String, usize)],
    i: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, String)>,
) {
    let mut path = prefix;
    loop {
        let Some((t, _)) = toks.get(*i) else { return };
        match t.as_str() {
            "{" => {
                *i += 1;
                loop {
                    use_tree(toks, i, path.clone(), out);
                    match toks.get(*i).map(|t| t.0.as_str()) {
                        Some(",") => {
                            *i += 1;
                            if toks.get(*i).map(|t| t.0.as_str()) == Some("}") {
                                *i += 1;
                                return;
                            }
                        }
                        Some("}") => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            "::" => *i += 1,
            "*" => {
                *i += 1;
                out.push((path, "*".into()));
                return;
            }
            "as" => {
                *i += 1;
                let name = toks.get(*i).map(|t| t.0.clone()).unwrap_or_default();
                *i += 1;
                out.push((path, name));
                return;
            }
            "," | "}" | ";" => {
                if let Some(last) = path.last().cloned() {
                    let name = if last == "self" {
                        path.pop();
                        path.last().cloned().unwrap_or_default()
                    } else {
                        last
                    };
                    out.push((path, name));
                }
                return;
            }
            _ => {
                path.push(t.clone());
                *i += 1;
            }
        }
    }
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn parse(src: &Path) -> Crate {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    files.sort();
    let mut krate = Crate {
        aliases: BTreeMap::new(),
        modules: BTreeSet::new(),
        files: BTreeSet::new(),
        paths: Vec::new(),
        uses: Vec::new(),
    };
    for file in &files {
        let rel = file.strip_prefix(src).unwrap().with_extension("");
        let mut module: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if matches!(
            module.last().map(String::as_str),
            Some("mod" | "lib" | "main")
        ) {
            module.pop();
        }
        for n in 0..=module.len() {
            krate.modules.insert(module[..n].to_vec());
            krate.files.insert(module[..n].to_vec());
        }
        let text = std::fs::read_to_string(file).unwrap();
        let toks = tokens(&strip(&text));
        let name = file.strip_prefix(src).unwrap().display().to_string();
        // Inline modules: (name, brace depth at which it closes).
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0;
        let mut i = 0;
        while i < toks.len() {
            let here = |inline: &[(String, usize)]| {
                let mut m = module.clone();
                m.extend(inline.iter().map(|(n, _)| n.clone()));
                m
            };
            let t = toks[i].0.as_str();
            match t {
                "{" => depth += 1,
                "}" => {
                    depth -= 1;
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                }
                "mod" if toks.get(i + 2).is_some_and(|t| t.0 == "{") => {
                    let m = toks[i + 1].0.clone();
                    krate
                        .modules
                        .insert(here(&inline).into_iter().chain([m.clone()]).collect());
                    inline.push((m, depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
                "use" => {
                    let at = here(&inline);
                    let line = toks[i].1;
                    i += 1;
                    let mut bound = Vec::new();
                    use_tree(&toks, &mut i, Vec::new(), &mut bound);
                    for (path, binding) in bound {
                        krate.uses.push((at.clone(), binding, path.clone()));
                        krate
                            .paths
                            .push((at.clone(), path, format!("{name}:{line}")));
                    }
                    continue;
                }
                "crate" | "super" | "self"
                    if toks.get(i + 1).is_some_and(|t| t.0 == "::")
                        && !(i > 0 && toks[i - 1].0 == "$")
                        && !(i > 0 && toks[i - 1].0 == "::")
                        && !(i > 0 && toks[i - 1].0 == "in") =>
                {
                    let line = toks[i].1;
                    let mut segs = vec![toks[i].0.clone()];
                    let mut j = i + 1;
                    while toks.get(j).is_some_and(|t| t.0 == "::")
                        && toks
                            .get(j + 1)
                            .is_some_and(|t| ident_char(t.0.chars().next()))
                    {
                        segs.push(toks[j + 1].0.clone());
                        j += 2;
                    }
                    krate
                        .paths
                        .push((here(&inline), segs, format!("{name}:{line}")));
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
    let uses = std::mem::take(&mut krate.uses);
    for (at, binding, path) in uses {
        if binding == "*" {
            continue;
        }
        if let Some(abs) = krate.absolute(&at, &path) {
            krate.aliases.entry(at).or_default().insert(binding, abs);
        }
    }
    krate
}

impl Crate {
    /// A path written in module `at` made absolute: from `crate`, `super` or `self`, or from a
    /// child module or a name `at` imports; None for anything else (another crate, `std`).
    fn absolute(&self, at: &[String], segs: &[String]) -> Option<Vec<String>> {
        if let Some(abs) = absolute(at, segs) {
            return Some(abs);
        }
        let first = segs.first()?;
        let mut child = at.to_vec();
        child.push(first.clone());
        if self.modules.contains(&child) {
            child.extend(segs[1..].iter().cloned());
            return Some(child);
        }
        let mut p = self.aliases.get(at)?.get(first)?.clone();
        p.extend(segs[1..].iter().cloned());
        Some(p)
    }

    /// `path` with every alias along it replaced by its target (bounded: aliases may chain).
    fn resolve(&self, path: &[String]) -> Vec<String> {
        let mut path = path.to_vec();
        'again: for _ in 0..16 {
            for n in (1..path.len()).rev() {
                let (module, name) = (&path[..n], &path[n]);
                if self.modules.contains(&path[..=n]) {
                    continue;
                }
                if let Some(target) = self.aliases.get(module).and_then(|a| a.get(name)) {
                    if target.as_slice() != &path[..=n] {
                        let mut p = target.clone();
                        p.extend(path[n + 1..].iter().cloned());
                        path = p;
                        continue 'again;
                    }
                }
            }
            // A name bound at the crate root (`lib.rs`).
            if let Some(target) = path
                .first()
                .and_then(|f| self.aliases.get(&Vec::new())?.get(f))
            {
                if target.first() != path.first() || target.len() > 1 {
                    let mut p = target.clone();
                    p.extend(path[1..].iter().cloned());
                    if p != path {
                        path = p;
                        continue 'again;
                    }
                }
            }
            break;
        }
        path
    }

    /// The node a module path belongs to: its top-level module, or for a module of a `group`
    /// directory, `group::child`.
    fn node(&self, path: &[String], groups: &[&str]) -> Option<String> {
        let first = path.first()?;
        if !self.files.contains(&vec![first.clone()]) {
            return None;
        }
        if groups.contains(&first.as_str()) {
            if let Some(second) = path.get(1) {
                if self.modules.contains(&vec![first.clone(), second.clone()]) {
                    return Some(format!("{first}::{second}"));
                }
            }
        }
        Some(first.clone())
    }

    /// Edges between nodes, each with one place that makes it.
    fn graph(&self, groups: &[&str]) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (at, path, place) in &self.paths {
            let Some(path) = self.absolute(at, path) else {
                continue;
            };
            let resolved = self.resolve(&path);
            let (Some(from), Some(to)) = (self.node(at, groups), self.node(&resolved, groups))
            else {
                continue;
            };
            // A group's own `mod.rs` only declares and re-exports its members; a crate's
            // `tests` module (`#[cfg(test)]` fixtures) sits above every layer.
            if groups.contains(&from.as_str()) || from == "tests" || to == "tests" {
                continue;
            }
            if from != to {
                g.entry(from)
                    .or_default()
                    .entry(to)
                    .or_insert_with(|| place.clone());
            }
        }
        g
    }
}

/// A cycle of the graph, if any: the nodes in order, the first repeated at the end.
fn find_cycle(g: &BTreeMap<String, BTreeMap<String, String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeMap<String, String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flat_map(|e| e.keys()) {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(m, g, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn describe(g: &BTreeMap<String, BTreeMap<String, String>>, cycle: &[String]) -> String {
    let steps: Vec<String> = cycle
        .windows(2)
        .map(|w| format!("  {} -> {} ({})", w[0], w[1], g[&w[0]][&w[1]]))
        .collect();
    format!("import cycle {}:\n{}", cycle.join(" -> "), steps.join("\n"))
}

fn src_of(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src")
}

/// The layers of `matmul`, lowest first; a module may import only from its own layer or below.
const MATMUL_LAYERS: &[&[&str]] = &[
    &["core"],
    &["registry"],
    &["backends::backend"],
    &["backends::cpu", "backends::cuda", "backends::wgpu"],
    &["backends::open"],
    &["dispatch"],
    &["nccl"],
    &["api"],
    &["compat"],
];

#[test]
fn matmul_has_no_import_cycle_and_no_layer_imports_a_higher_one() {
    let krate = parse(&src_of("matmul"));
    let g = krate.graph(&["backends"]);
    for (from, to) in &g {
        println!("{from} -> {:?}", to.keys().collect::<Vec<_>>());
    }
    if let Some(cycle) = find_cycle(&g) {
        panic!("matmul: {}", describe(&g, &cycle));
    }
    let layer = |n: &str| MATMUL_LAYERS.iter().position(|l| l.contains(&n));
    let mut wrong = Vec::new();
    for (from, to) in g
        .iter()
        .flat_map(|(f, e)| e.iter().map(move |(t, p)| (f, (t, p))))
    {
        match (layer(from), layer(to.0)) {
            (Some(a), Some(b)) if a >= b => {}
            (a, b) => wrong.push(format!(
                "  {from} (layer {a:?}) -> {} (layer {b:?}) at {}",
                to.0, to.1
            )),
        }
    }
    assert!(
        wrong.is_empty(),
        "matmul: imports of a higher layer, or of a module in no layer (MATMUL_LAYERS):\n{}",
        wrong.join("\n")
    );
    // The parser sees the edges it must: the backends read the registry, dispatch the backends.
    assert!(g["backends::cuda"].contains_key("registry"), "{g:#?}");
    assert!(g["dispatch"].contains_key("backends::backend"), "{g:#?}");
}

#[test]
fn matmul_bench_has_no_import_cycle() {
    let krate = parse(&src_of("matmul-bench"));
    let g = krate.graph(&[]);
    for (from, to) in &g {
        println!("{from} -> {to:?}");
    }
    if let Some(cycle) = find_cycle(&g) {
        panic!("matmul-bench: {}", describe(&g, &cycle));
    }
    assert!(g["report"].contains_key("roofline"), "{g:#?}");
}

#[test]
fn the_parser_finds_a_cycle_through_a_reexport() {
    let dir = std::env::temp_dir().join(format!("matmul-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("b")).unwrap();
    let write = |p: &str, s: &str| std::fs::write(dir.join(p), s).unwrap();
    write("lib.rs", "mod a;\nmod b;\npub use b::inner::Thing;\n");
    write(
        "a.rs",
        "// use crate::b; (a comment)\nconst S: &str = \"crate::b::x\";\npub struct A;\n",
    );
    write("b/mod.rs", "pub mod inner;\n");
    write("b/inner.rs", "pub struct Thing(crate::a::A);\n");
    let g = parse(&dir).graph(&[]);
    assert!(find_cycle(&g).is_none(), "{g:#?}");
    write("a.rs", "use crate::{Thing as T};\npub struct A;\n");
    let g = parse(&dir).graph(&[]);
    let cycle = find_cycle(&g).expect("a -> b -> a");
    assert!(
        describe(&g, &cycle).contains("a -> b -> a")
            || describe(&g, &cycle).contains("b -> a -> b")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
