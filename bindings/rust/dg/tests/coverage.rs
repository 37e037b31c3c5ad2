//! Every function of dg.h is reachable from this crate, and declared by dg-sys: a function added
//! to the header fails this test until the binding covers it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Functions of dg.h this crate does not call, each with the reason. Keep it short: a function
/// belongs here only when its job is done another way.
const NOT_WRAPPED: &[&str] = &[];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// The text without C comments.
fn strip_c_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.map_or(true, |l| b < l) => {
                out.push_str(&rest[..b]);
                rest = rest[b + 2..].find("*/").map_or("", |e| &rest[b + 2 + e + 2..]);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Names of the functions dg.h declares (`DG_API <type> dg_name(...)`).
fn header_functions() -> BTreeSet<String> {
    let path = repo().join("include/dg.h");
    let text = strip_c_comments(&fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e)));
    // Declarations only: the preprocessor lines define DG_API itself.
    let text: String = text.lines().filter(|l| !l.trim_start().starts_with('#')).map(|l| format!("{}\n", l)).collect();
    let mut names = BTreeSet::new();
    for decl in text.split("DG_API").skip(1) {
        let head = &decl[..decl.find('(').expect("a DG_API declaration without '('")];
        let name = head.trim_end().rsplit(|c: char| !is_ident(c)).next().unwrap_or("");
        if name.starts_with("dg_") {
            names.insert(name.to_string());
        }
    }
    assert!(names.len() > 40, "found only {} functions in {}: the parser is wrong", names.len(), path.display());
    names
}

/// Whether `text` uses `needle` followed by a character that cannot continue an identifier.
fn mentions(text: &str, needle: &str) -> bool {
    text.match_indices(needle).any(|(i, _)| !text[i + needle.len()..].starts_with(is_ident))
}

/// The code of a directory's .rs files, comment lines dropped.
fn rust_code(dir: &Path) -> String {
    let mut code = String::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {}", dir.display(), e)) {
        let path = entry.unwrap().path();
        if path.extension().map_or(false, |e| e == "rs") {
            for line in fs::read_to_string(&path).unwrap().lines() {
                if !line.trim_start().starts_with("//") {
                    code.push_str(line);
                    code.push('\n');
                }
            }
        }
    }
    code
}

#[test]
fn every_dg_h_function_is_declared_by_dg_sys() {
    let generated = fs::read_to_string(repo().join("bindings/rust/dg-sys/src/generated.rs")).unwrap();
    let missing: Vec<_> =
        header_functions().into_iter().filter(|f| !mentions(&generated, &format!("pub fn {}", f))).collect();
    assert!(missing.is_empty(), "dg-sys lacks {:?}: run python3 bindings/generate.py", missing);
}

#[test]
fn every_dg_h_function_is_reachable_from_the_safe_crate() {
    let code = rust_code(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let functions = header_functions();
    let missing: Vec<_> = functions
        .iter()
        .filter(|f| !NOT_WRAPPED.contains(&f.as_str()) && !mentions(&code, &format!("sys::{}", f)))
        .collect();
    assert!(missing.is_empty(), "no method or function of the dg crate calls {:?}", missing);
    let stale: Vec<_> = NOT_WRAPPED.iter().filter(|f| !functions.contains(**f)).collect();
    assert!(stale.is_empty(), "NOT_WRAPPED names functions dg.h no longer has: {:?}", stale);
}
