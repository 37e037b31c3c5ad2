//! Errors: a libdg status and the message libdg gave for it.

use std::ffi::CStr;
use std::fmt;
use std::os::raw::c_char;

use dg_sys as sys;

/// The kind of failure a libdg status names (`DG_ERROR_*` in dg.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A NULL handle, a wrong dtype, sizes that disagree, an out-of-range setting, ...
    InvalidArgument,
    /// Valid input that this build or device cannot run.
    Unsupported,
    /// No CUDA driver, no device with that ordinal, or a launch on an offline stream.
    NoDevice,
    /// The CUDA driver returned an error; the message names it.
    Cuda,
    /// NVRTC or nvcc failed; the message holds the compiler log.
    Compile,
    /// A host allocation failed.
    OutOfMemory,
    /// A bug in libdg: please report the message.
    Internal,
    /// A status this binding does not know (from a newer libdg of the same major version).
    Other,
}

/// A failed libdg call: its status and libdg's message naming the argument and what was
/// expected. The message is read with `dg_last_error()` on the calling thread right after the
/// failing call, before any other libdg call could replace it.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: sys::dg_status,
    message: String,
}

/// The result of every fallible call of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of this binding's own (e.g. a string with an interior NUL), with libdg's status
    /// for that kind of failure.
    pub(crate) fn new(status: sys::dg_status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    /// Builds the error of a call that just returned `status`, reading this thread's message.
    pub(crate) fn last(status: sys::dg_status) -> Error {
        // SAFETY: dg_last_error returns a valid NUL-terminated string owned by libdg, valid
        // until the next libdg call on this thread; it is copied before any such call.
        let message = unsafe { owned_string(sys::dg_last_error()) };
        Error { status, message }
    }

    /// The raw `dg_status` value.
    pub fn status(&self) -> i32 {
        self.status
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        match self.status {
            sys::DG_ERROR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            sys::DG_ERROR_UNSUPPORTED => ErrorKind::Unsupported,
            sys::DG_ERROR_NO_DEVICE => ErrorKind::NoDevice,
            sys::DG_ERROR_CUDA => ErrorKind::Cuda,
            sys::DG_ERROR_COMPILE => ErrorKind::Compile,
            sys::DG_ERROR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            sys::DG_ERROR_INTERNAL => ErrorKind::Internal,
            _ => ErrorKind::Other,
        }
    }

    /// The status's name, e.g. `"DG_ERROR_INVALID_ARGUMENT"`.
    pub fn status_name(&self) -> &'static str {
        status_string(self.status)
    }

    /// libdg's message: which argument, which value, what was expected.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name(), self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("status", &self.status_name())
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for Error {}

/// The static name of a status (`dg_status_string`): `"DG_SUCCESS"`, `"DG_ERROR_NO_DEVICE"`, ...,
/// or `"DG_UNKNOWN_STATUS"`.
pub fn status_string(status: i32) -> &'static str {
    // SAFETY: dg_status_string returns a static NUL-terminated string for every input.
    unsafe { static_str(sys::dg_status_string(status)) }
}

/// `Ok(())` for `DG_SUCCESS`, else the error with this thread's message. Call it directly on
/// the status of the libdg call, with no libdg call in between.
pub(crate) fn check(status: sys::dg_status) -> Result<()> {
    if status == sys::DG_SUCCESS {
        Ok(())
    } else {
        Err(Error::last(status))
    }
}

/// A string libdg documents as static (names, the version).
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string that lives for the rest of the process.
pub(crate) unsafe fn static_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("")
}

/// A copy of a NUL-terminated string (invalid UTF-8 replaced).
///
/// # Safety
/// `p` must be NULL or a valid NUL-terminated string.
pub(crate) unsafe fn owned_string(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    CStr::from_ptr(p).to_string_lossy().into_owned()
}
