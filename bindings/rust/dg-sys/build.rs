//! Finds libdg for the linker: `pkg-config dg` first (the way an installed libdg is found; set
//! `PKG_CONFIG_PATH` to `<prefix>/lib/pkgconfig` for a prefix outside the default search path),
//! then the directory in `DG_LIB_DIR`. No crates: pkg-config is run as a command.

use std::env;
use std::path::Path;
use std::process::Command;

fn pkg_config_libdir() -> Result<String, String> {
    let out = Command::new(env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(["--variable=libdir", "dg"])
        .output()
        .map_err(|e| format!("pkg-config could not be run: {}", e))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let search = env::var("PKG_CONFIG_PATH").unwrap_or_else(|_| "(unset)".into());
        return Err(format!(
            "`pkg-config --variable=libdir dg` exited with {} ({}); PKG_CONFIG_PATH={}",
            out.status,
            if stderr.is_empty() { "no output: no dg.pc on its search path".to_string() } else { stderr },
            search
        ));
    }
    let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if libdir.is_empty() {
        return Err("pkg-config gave an empty libdir for dg".into());
    }
    Ok(libdir)
}

fn main() {
    for var in ["PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG", "DG_LIB_DIR"] {
        println!("cargo:rerun-if-env-changed={}", var);
    }
    let libdir = match pkg_config_libdir() {
        Ok(dir) => dir,
        Err(why) => match env::var("DG_LIB_DIR") {
            Ok(dir) if Path::new(&dir).is_dir() => dir,
            Ok(dir) => panic!("DG_LIB_DIR={} is not a directory (and {})", dir, why),
            Err(_) => panic!(
                "libdg not found: {}.\nInstall libdg (cmake --install build --prefix PREFIX) and set \
                 PKG_CONFIG_PATH=PREFIX/lib/pkgconfig, or set DG_LIB_DIR to the directory holding libdg.so.",
                why
            ),
        },
    };
    println!("cargo:rustc-link-search=native={}", libdir);
    println!("cargo:rustc-link-lib=dylib=dg");
    // Dependents read it as DEP_DG_LIBDIR (e.g. to set an rpath for their binaries).
    println!("cargo:libdir={}", libdir);
}
