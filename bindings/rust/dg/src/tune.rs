//! Per-GPU tuning of the GEMM kernel configs (`dg_tune`; docs/tuning.md): the heuristic's
//! best-ranked configs of each problem of a problem list are timed on the stream's GPU and the
//! fastest written into the tuning table that later GEMM calls consult.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;

use crate::error::{check, Error, Result};
use crate::{sys, Stream};

/// Options of [`Stream::tune`]; every field's default is libdg's (4 candidates, 7 repetitions, the
/// stream's table, other entries kept).
#[derive(Clone, Debug, Default)]
pub struct TuneOptions {
    /// Configs timed per problem, 1..16; 0 = 4.
    pub candidates: i32,
    /// Timed runs of each config (medians compared), 1..100; 0 = 7.
    pub repetitions: i32,
    /// The table to write; `None` = the stream's (`DG_TUNING_TABLE`, else beside the JIT cache).
    pub table_path: Option<String>,
    /// Write only this list's problems (default: keep the table's others).
    pub replace: bool,
}

type Progress<'a> = &'a mut dyn FnMut(i64, i64, &str);

unsafe extern "C" fn trampoline(done: i64, total: i64, line: *const c_char, user: *mut c_void) {
    // SAFETY: `user` is the `&mut Progress` Stream::tune passed, alive for the call; `line` is a
    // NUL-terminated string valid during this call.
    let progress = unsafe { &mut *(user as *mut Progress) };
    let text = if line.is_null() {
        std::borrow::Cow::Borrowed("")
    } else {
        unsafe { CStr::from_ptr(line) }.to_string_lossy()
    };
    // A panic must not unwind into C.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| progress(done, total, &text)));
}

fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(sys::DG_ERROR_INVALID_ARGUMENT, format!("{what}: contains a NUL byte")))
}

impl Stream {
    /// Tunes the problems of `problems` (the text of a problem list, e.g.
    /// `"dense fp8 nt n=24576 k=1536 m=128,4096\n"`) on this stream's GPU and writes the tuning
    /// table (`dg_tune`). `progress(done, total, line)` is called after each problem. Returns the
    /// number of problems tuned.
    pub fn tune(&self, problems: &str, options: &TuneOptions, progress: Option<Progress>) -> Result<i64> {
        let text = c_string(problems, "problems")?;
        let path = options.table_path.as_deref().map(|p| c_string(p, "options.table_path")).transpose()?;
        let mut raw = sys::DG_TUNE_OPTIONS_INIT;
        raw.candidates = options.candidates;
        raw.repetitions = options.repetitions;
        raw.replace = i32::from(options.replace);
        raw.table_path = path.as_ref().map_or(ptr::null(), |p| p.as_ptr());
        let mut progress = progress;
        if let Some(p) = progress.as_mut() {
            raw.progress = Some(trampoline);
            raw.user_data = p as *mut Progress as *mut c_void;
        }
        let mut tuned: i64 = 0;
        // SAFETY: a live handle; `text`, `path` and the progress closure outlive the call.
        check(unsafe { sys::dg_tune(self.as_raw(), text.as_ptr(), &raw, &mut tuned) })?;
        Ok(tuned)
    }

    /// Compiles into the JIT cache (on a GPU stream also loads) the kernels the calls of every
    /// problem of `problems` (a problem list's text) run with default options: the stream's
    /// tuning table's config for a tuned problem, else the heuristic's (`dg_prepare_problems`).
    /// On [`Stream::offline_named`] it warms a cache for that GPU without one. Returns the number
    /// of problems prepared.
    pub fn prepare_problems(&self, problems: &str) -> Result<i64> {
        let text = c_string(problems, "problems")?;
        let mut prepared: i64 = 0;
        // SAFETY: a live handle; `text` outlives the call.
        check(unsafe { sys::dg_prepare_problems(self.as_raw(), text.as_ptr(), &mut prepared) })?;
        Ok(prepared)
    }
}
