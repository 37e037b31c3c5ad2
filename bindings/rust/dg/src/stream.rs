//! Devices and streams.

use std::ffi::CString;
use std::fmt;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

use dg_sys as sys;

use crate::config::{opt_config, Config};
use crate::error::{check, Error, Result};

/// The number of CUDA devices (`dg_device_count`); an
/// [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice) error, with the reason, where the driver
/// cannot be loaded.
pub fn device_count() -> Result<i32> {
    let mut count = 0;
    // SAFETY: a valid out-pointer.
    check(unsafe { sys::dg_device_count(&mut count) })?;
    Ok(count)
}

/// The compute capability `(major, minor)` of a device (`dg_device_get_capability`), e.g. (9, 0)
/// for an H100.
pub fn device_capability(device: i32) -> Result<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: valid out-pointers.
    check(unsafe { sys::dg_device_get_capability(device, &mut major, &mut minor) })?;
    Ok((major, minor))
}

/// Where work runs (`dg_stream`): a device, a `CUstream` and the config in force. Every kernel
/// is a method of `Stream`. libdg works in the device's primary context (the one the CUDA
/// runtime and PyTorch use); kernel caches are per device and shared by every stream on it.
///
/// A stream may be used from several threads at once; dropping it destroys the handle and, for
/// [`Stream::new`], the `CUstream` after its pending work completes.
pub struct Stream {
    raw: NonNull<sys::dg_stream>,
}

// SAFETY: libdg allows every entry point on a stream from any thread, concurrently.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    fn from_raw(raw: *mut sys::dg_stream) -> Stream {
        Stream { raw: NonNull::new(raw).expect("libdg created a stream with a NULL handle") }
    }

    /// A stream on `device` with a new non-blocking `CUstream` that it owns
    /// (`DG_STREAM_CREATE`). `config` is copied; `None` follows the process-wide settings at
    /// each call.
    pub fn new(device: i32, config: Option<&Config>) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        // SAFETY: a valid out-pointer; no CUstream is borrowed.
        check(unsafe { sys::dg_stream_create(&mut raw, device, ptr::null_mut(), sys::DG_STREAM_CREATE, opt_config(config)) })?;
        Ok(Stream::from_raw(raw))
    }

    /// A stream on `device` that launches on the legacy default `CUstream`.
    pub fn legacy_default(device: i32, config: Option<&Config>) -> Result<Stream> {
        // SAFETY: the NULL CUstream (the legacy default stream) is always valid.
        unsafe { Stream::from_cu_stream(device, ptr::null_mut(), config) }
    }

    /// A stream on `device` that launches on a `CUstream` the caller owns (`DG_STREAM_BORROW`),
    /// e.g. one of the CUDA runtime or of another framework.
    ///
    /// # Safety
    /// `cu_stream` must be NULL (the legacy default stream) or a `CUstream` created in the
    /// primary context of `device`, and it must stay alive until this `Stream` is dropped and
    /// the work launched on it has completed.
    pub unsafe fn from_cu_stream(device: i32, cu_stream: *mut c_void, config: Option<&Config>) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        check(sys::dg_stream_create(&mut raw, device, cu_stream, sys::DG_STREAM_BORROW, opt_config(config)))?;
        Ok(Stream::from_raw(raw))
    }

    /// An offline stream (`dg_stream_create_offline`): it describes a device instead of using
    /// one. Kernel preparation ([`Stream::gemm_prepare`]) on it renders and compiles kernels
    /// into the disk cache for that architecture and SM count, with no GPU and no driver;
    /// calls that would launch return [`ErrorKind::NoDevice`](crate::ErrorKind::NoDevice).
    /// `arch_major.arch_minor`: 9.0 (SM90) or 10.0 (SM100); `num_sms`: the target's SM count
    /// (132 for an H100 SXM).
    pub fn offline(arch_major: i32, arch_minor: i32, num_sms: i32, config: Option<&Config>) -> Result<Stream> {
        let mut raw = ptr::null_mut();
        // SAFETY: a valid out-pointer.
        check(unsafe { sys::dg_stream_create_offline(&mut raw, arch_major, arch_minor, num_sms, opt_config(config)) })?;
        Ok(Stream::from_raw(raw))
    }

    /// [`Stream::offline`] for a named GPU (`dg_stream_create_offline_named`): `gpu_name` is the
    /// name the driver reports on the target (e.g. `"NVIDIA H200"`), so that the kernels prepared
    /// are those calls on that GPU choose (its cost-model calibration and its tuning table).
    pub fn offline_named(
        arch_major: i32,
        arch_minor: i32,
        num_sms: i32,
        gpu_name: &str,
        config: Option<&Config>,
    ) -> Result<Stream> {
        let name = CString::new(gpu_name).map_err(|_| {
            Error::new(sys::DG_ERROR_INVALID_ARGUMENT, "gpu_name: contains a NUL byte (a C string was expected)")
        })?;
        let mut raw = ptr::null_mut();
        // SAFETY: a valid out-pointer; `name` is NUL-terminated and outlives the call.
        check(unsafe {
            sys::dg_stream_create_offline_named(
                &mut raw,
                arch_major,
                arch_minor,
                num_sms,
                name.as_ptr(),
                opt_config(config),
            )
        })?;
        Ok(Stream::from_raw(raw))
    }

    /// The `CUstream` work is launched on (NULL for the legacy default stream).
    pub fn cu_stream(&self) -> Result<*mut c_void> {
        let mut s = ptr::null_mut();
        // SAFETY: the handle is live; `s` is a valid out-pointer.
        check(unsafe { sys::dg_stream_get_cu_stream(self.raw.as_ptr(), &mut s) })?;
        Ok(s)
    }

    /// The device ordinal.
    pub fn device(&self) -> Result<i32> {
        let mut d = 0;
        // SAFETY: the handle is live; `d` is a valid out-pointer.
        check(unsafe { sys::dg_stream_get_device(self.raw.as_ptr(), &mut d) })?;
        Ok(d)
    }

    /// Waits until the work launched on the stream has completed.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: the handle is live.
        check(unsafe { sys::dg_stream_synchronize(self.raw.as_ptr()) })
    }

    /// The raw handle, for calls through `dg_sys`; it stays owned by this `Stream`.
    pub fn as_raw(&self) -> *mut sys::dg_stream {
        self.raw.as_ptr()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the handle came from dg_stream_create* and is destroyed once.
        unsafe { sys::dg_stream_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream").field("device", &self.device().ok()).field("cu_stream", &self.cu_stream().ok()).finish()
    }
}
