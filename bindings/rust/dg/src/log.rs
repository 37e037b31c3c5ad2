//! libdg's logger: level and an optional callback that receives every message.

use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex, RwLock};

use dg_sys as sys;

use crate::error::{check, Result};

/// A log level (`DG_LOG_*`); messages at or above the level are emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogLevel(i32);

impl LogLevel {
    /// Everything, including per-call tracing.
    pub const TRACE: LogLevel = LogLevel(sys::DG_LOG_TRACE);
    /// JIT keys, timings and paths.
    pub const DEBUG: LogLevel = LogLevel(sys::DG_LOG_DEBUG);
    /// Informational messages.
    pub const INFO: LogLevel = LogLevel(sys::DG_LOG_INFO);
    /// Warnings (the default level).
    pub const WARN: LogLevel = LogLevel(sys::DG_LOG_WARN);
    /// Errors only.
    pub const ERROR: LogLevel = LogLevel(sys::DG_LOG_ERROR);
    /// Nothing.
    pub const OFF: LogLevel = LogLevel(sys::DG_LOG_OFF);

    /// The level with this raw `DG_LOG_*` value (libdg rejects unknown values).
    pub const fn from_raw(raw: i32) -> LogLevel {
        LogLevel(raw)
    }

    /// The raw `DG_LOG_*` value.
    pub const fn raw(self) -> i32 {
        self.0
    }
}

/// Sets the process-wide log level (`dg_set_log_level`).
pub fn set_log_level(level: LogLevel) -> Result<()> {
    // SAFETY: a plain value.
    check(unsafe { sys::dg_set_log_level(level.0) })
}

/// The process-wide log level (`dg_get_log_level`).
pub fn log_level() -> LogLevel {
    // SAFETY: no arguments.
    LogLevel(unsafe { sys::dg_get_log_level() })
}

type Callback = Arc<dyn Fn(LogLevel, &str) + Send + Sync>;

// The installed callback. libdg may call the trampoline from any thread, concurrently, so it
// takes a clone of the Arc under a read lock rather than keeping a pointer that a replacement
// could free under it.
static CALLBACK: RwLock<Option<Callback>> = RwLock::new(None);
// Serialises set_log_callback so that the slot and libdg's registration always agree.
static INSTALL: Mutex<()> = Mutex::new(());

unsafe extern "C" fn trampoline(level: i32, message: *const c_char, _user_data: *mut c_void) {
    let callback = match CALLBACK.read() {
        Ok(slot) => slot.clone(),
        Err(poisoned) => poisoned.into_inner().clone(),
    };
    if let Some(callback) = callback {
        let text = if message.is_null() { "".into() } else { CStr::from_ptr(message).to_string_lossy() };
        // A panic must not unwind into C; the message is dropped instead.
        let _ = catch_unwind(AssertUnwindSafe(|| callback(LogLevel(level), &text)));
    }
}

/// Sends libdg's log messages (those at or above [`log_level`]) to `callback` instead of stderr
/// (`dg_set_log_callback`); `None` restores the stderr default. The callback may be called from
/// any thread, concurrently; a panic inside it is caught and the message dropped.
pub fn set_log_callback<F>(callback: Option<F>) -> Result<()>
where
    F: Fn(LogLevel, &str) + Send + Sync + 'static,
{
    let _install = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let new: Option<Callback> = callback.map(|f| Arc::new(f) as Callback);
    let installing = new.is_some();
    if installing {
        *CALLBACK.write().unwrap_or_else(|p| p.into_inner()) = new;
    }
    // SAFETY: the trampoline is a valid callback for the life of the process and reads no user data.
    let status = unsafe {
        sys::dg_set_log_callback(if installing { Some(trampoline) } else { None }, ptr::null_mut())
    };
    let result = check(status);
    if !installing || result.is_err() {
        *CALLBACK.write().unwrap_or_else(|p| p.into_inner()) = None;
    }
    result
}
