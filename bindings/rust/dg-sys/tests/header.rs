//! The declarations are generated from dg.h: this fails, with the diff, when `generated.rs` (or
//! the Go package's `calls.h`) no longer matches the header.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn generated_declarations_match_dg_h() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let script = root.join("bindings/generate.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg("--check")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {}", script.display(), e));
    assert!(
        out.status.success(),
        "bindings are out of date with include/dg.h (run python3 bindings/generate.py):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The library linked at build time is the one found at run time and speaks this major version.
#[test]
fn linked_library_matches_the_header() {
    let number = unsafe { dg_sys::dg_version_number() };
    assert_eq!(number / 10000, dg_sys::DG_VERSION_MAJOR);
    assert_eq!(number, dg_sys::DG_VERSION_NUMBER);
}
