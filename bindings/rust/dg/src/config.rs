//! Settings (`dg_config`) and the process-wide defaults.

use std::ffi::CString;
use std::fmt;
use std::os::raw::c_char;
use std::ptr::{self, NonNull};

use dg_sys as sys;

use crate::error::{check, Error, Result};

/// A setting of a [`Config`] (`dg_config_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConfigKey(i32);

impl ConfigKey {
    /// int: cap on the SMs a kernel may use; 0 = the process-wide value ([`set_num_sms`]), which
    /// defaults to every SM. Bounds [0, 1024]; a value above the device's SM count is rejected
    /// when a kernel is launched.
    pub const NUM_SMS: ConfigKey = ConfigKey(sys::DG_CONFIG_NUM_SMS);
    /// int: tensor-core utilisation target in percent, [1, 100]; only SM100 BF16 kernels honour
    /// values below 100.
    pub const TC_UTIL: ConfigKey = ConfigKey(sys::DG_CONFIG_TC_UTIL);
    /// int: 1 = launch with Programmatic Dependent Launch, 0 = off (default).
    pub const PDL: ConfigKey = ConfigKey(sys::DG_CONFIG_PDL);
    /// string: JIT cache root (entries under `<root>/libdg/`); the empty string keeps kernels in
    /// memory only.
    pub const CACHE_DIR: ConfigKey = ConfigKey(sys::DG_CONFIG_CACHE_DIR);
    /// int: [`Config::COMPILER_NVRTC`] (default) or [`Config::COMPILER_NVCC`].
    pub const COMPILER: ConfigKey = ConfigKey(sys::DG_CONFIG_COMPILER);
    /// int: 1 = log each distinct problem's kernel configuration once (at warn level).
    pub const PRINT_CONFIGS: ConfigKey = ConfigKey(sys::DG_CONFIG_PRINT_CONFIGS);
    /// int: a [`LogLevel`](crate::LogLevel) value applied to the process-wide logger.
    pub const LOG_LEVEL: ConfigKey = ConfigKey(sys::DG_CONFIG_LOG_LEVEL);
    /// string: the GEMM tuning table (docs/tuning.md); "" = beside the JIT cache, "off" = none.
    pub const TUNING_TABLE: ConfigKey = ConfigKey(sys::DG_CONFIG_TUNING_TABLE);

    /// The key with this raw `dg_config_key` value (libdg rejects unknown keys).
    pub const fn from_raw(raw: i32) -> ConfigKey {
        ConfigKey(raw)
    }

    /// The raw `dg_config_key` value.
    pub const fn raw(self) -> i32 {
        self.0
    }
}

/// Settings a [`Stream`](crate::Stream) copies when it is created: SM cap, tensor-core
/// utilisation, PDL, JIT cache directory, compiler, print-configs, log level. A new config takes
/// its defaults from the environment (`DG_NUM_SMS`, `DG_TC_UTIL`, `DG_PDL`, `DG_JIT_CACHE_DIR`,
/// `DG_JIT_USE_NVRTC`, `DG_PRINT_CONFIGS`, `DG_LOG_LEVEL`). Setters check bounds
/// ([`Config::bounds`]).
pub struct Config {
    raw: NonNull<sys::dg_config>,
}

// SAFETY: libdg allows a config's use from any thread; mutation takes `&mut self`.
unsafe impl Send for Config {}
unsafe impl Sync for Config {}

impl Config {
    /// [`ConfigKey::COMPILER`] value: NVRTC, in process (the default).
    pub const COMPILER_NVRTC: i64 = sys::DG_COMPILER_NVRTC as i64;
    /// [`ConfigKey::COMPILER`] value: the nvcc executable.
    pub const COMPILER_NVCC: i64 = sys::DG_COMPILER_NVCC as i64;

    /// A config with the defaults of the environment (`dg_config_create`).
    pub fn new() -> Result<Config> {
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer.
        check(unsafe { sys::dg_config_create(&mut raw) })?;
        Ok(Config { raw: NonNull::new(raw).expect("dg_config_create succeeded with a NULL handle") })
    }

    /// A new config with every setting of this one (`dg_config_clone`).
    pub fn try_clone(&self) -> Result<Config> {
        let mut raw = ptr::null_mut();
        // SAFETY: the handle is live; `raw` is a valid out-pointer.
        check(unsafe { sys::dg_config_clone(self.raw.as_ptr(), &mut raw) })?;
        Ok(Config { raw: NonNull::new(raw).expect("dg_config_clone succeeded with a NULL handle") })
    }

    /// Sets an int setting; a value outside [`Config::bounds`] is an
    /// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the key.
    pub fn set_int(&mut self, key: ConfigKey, value: i64) -> Result<()> {
        // SAFETY: the handle is live and not shared mutably.
        check(unsafe { sys::dg_config_set_int(self.raw.as_ptr(), key.0, value) })
    }

    /// An int setting.
    pub fn get_int(&self, key: ConfigKey) -> Result<i64> {
        let mut value = 0;
        // SAFETY: the handle is live; `value` is a valid out-pointer.
        check(unsafe { sys::dg_config_get_int(self.raw.as_ptr(), key.0, &mut value) })?;
        Ok(value)
    }

    /// Sets a string setting ([`ConfigKey::CACHE_DIR`]).
    pub fn set_string(&mut self, key: ConfigKey, value: &str) -> Result<()> {
        let c = CString::new(value).map_err(|_| {
            Error::new(sys::DG_ERROR_INVALID_ARGUMENT, "value: contains a NUL byte (a C string was expected)")
        })?;
        // SAFETY: the handle is live; `c` is NUL-terminated and outlives the call.
        check(unsafe { sys::dg_config_set_string(self.raw.as_ptr(), key.0, c.as_ptr()) })
    }

    /// A string setting.
    pub fn get_string(&self, key: ConfigKey) -> Result<String> {
        let mut required = 0usize;
        // SAFETY: a NULL buffer with capacity 0 asks for the length only.
        check(unsafe { sys::dg_config_get_string(self.raw.as_ptr(), key.0, ptr::null_mut(), 0, &mut required) })?;
        let mut buffer = vec![0u8; required.max(1)];
        // SAFETY: `buffer` holds `buffer.len()` writable bytes; the config cannot change in between
        // (mutation needs `&mut self`).
        check(unsafe {
            sys::dg_config_get_string(
                self.raw.as_ptr(),
                key.0,
                buffer.as_mut_ptr() as *mut c_char,
                buffer.len(),
                ptr::null_mut(),
            )
        })?;
        let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
        buffer.truncate(end);
        Ok(String::from_utf8_lossy(&buffer).into_owned())
    }

    /// The inclusive bounds `(min, max)` of an int setting (`dg_config_get_bounds`).
    pub fn bounds(key: ConfigKey) -> Result<(i64, i64)> {
        let (mut lo, mut hi) = (0, 0);
        // SAFETY: valid out-pointers.
        check(unsafe { sys::dg_config_get_bounds(key.0, &mut lo, &mut hi) })?;
        Ok((lo, hi))
    }

    /// The raw handle, for calls through `dg_sys`; it stays owned by this `Config`.
    pub fn as_raw(&self) -> *mut sys::dg_config {
        self.raw.as_ptr()
    }
}

impl Drop for Config {
    fn drop(&mut self) {
        // SAFETY: the handle came from dg_config_create/clone and is destroyed once.
        unsafe { sys::dg_config_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Config");
        for (name, key) in [
            ("num_sms", ConfigKey::NUM_SMS),
            ("tc_util", ConfigKey::TC_UTIL),
            ("pdl", ConfigKey::PDL),
            ("compiler", ConfigKey::COMPILER),
            ("print_configs", ConfigKey::PRINT_CONFIGS),
            ("log_level", ConfigKey::LOG_LEVEL),
        ] {
            if let Ok(v) = self.get_int(key) {
                d.field(name, &v);
            }
        }
        if let Ok(dir) = self.get_string(ConfigKey::CACHE_DIR) {
            d.field("cache_dir", &dir);
        }
        d.finish()
    }
}

/// The raw pointer of an optional config (NULL for `None`).
pub(crate) fn opt_config(c: Option<&Config>) -> *const sys::dg_config {
    c.map_or(ptr::null(), |c| c.as_raw() as *const _)
}

/// Sets the process-wide SM cap (`dg_set_num_sms`, as DeepGEMM's `set_num_sms`); 0 resets it to
/// every SM of the device.
pub fn set_num_sms(num_sms: i32) -> Result<()> {
    // SAFETY: a plain value.
    check(unsafe { sys::dg_set_num_sms(num_sms) })
}

/// The process-wide SM cap (`dg_get_num_sms`): the value set, else the SM count of device 0,
/// else 0 when there is no device.
pub fn num_sms() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::dg_get_num_sms() }
}

/// Sets the process-wide tensor-core utilisation (`dg_set_tc_util`), a ratio in (0, 1]; 0 resets
/// it to 1.
pub fn set_tc_util(ratio: f64) -> Result<()> {
    // SAFETY: a plain value.
    check(unsafe { sys::dg_set_tc_util(ratio) })
}

/// The process-wide tensor-core utilisation ratio (`dg_get_tc_util`).
pub fn tc_util() -> f64 {
    // SAFETY: no arguments.
    unsafe { sys::dg_get_tc_util() }
}
