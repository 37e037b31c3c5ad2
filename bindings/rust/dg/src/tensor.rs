//! Element types and tensor descriptors.

use std::fmt;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};

use dg_sys as sys;

use crate::error::{check, static_str, Error, Result};

/// An element type (`dg_dtype`). A newtype rather than an enum: libdg only ever appends values,
/// and a descriptor made by a newer libdg may carry one this binding does not name.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DType(i32);

impl DType {
    /// 32-bit IEEE float.
    pub const FLOAT32: DType = DType(sys::DG_DTYPE_FLOAT32);
    /// 16-bit IEEE float.
    pub const FLOAT16: DType = DType(sys::DG_DTYPE_FLOAT16);
    /// bfloat16.
    pub const BFLOAT16: DType = DType(sys::DG_DTYPE_BFLOAT16);
    /// FP8 E4M3 ("e4m3fn": finite, max 448).
    pub const FLOAT8_E4M3: DType = DType(sys::DG_DTYPE_FLOAT8_E4M3);
    /// FP8 E5M2.
    pub const FLOAT8_E5M2: DType = DType(sys::DG_DTYPE_FLOAT8_E5M2);
    /// 32-bit signed integer.
    pub const INT32: DType = DType(sys::DG_DTYPE_INT32);
    /// Two E2M1 (FP4) values per byte, the even index in the low nibble; one element = one byte.
    pub const FLOAT4_E2M1X2: DType = DType(sys::DG_DTYPE_FLOAT4_E2M1X2);
    /// Four UE8M0 exponents per int32, the lowest index in byte 0.
    pub const UE8M0X4: DType = DType(sys::DG_DTYPE_UE8M0X4);
    /// 8-bit unsigned integer.
    pub const UINT8: DType = DType(sys::DG_DTYPE_UINT8);

    /// The dtype with this raw `dg_dtype` value (not checked: libdg rejects unknown values).
    pub const fn from_raw(raw: i32) -> DType {
        DType(raw)
    }

    /// The raw `dg_dtype` value.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// Bytes per element (`dg_dtype_size`; an E2M1X2 element is one byte), 0 for an unknown dtype.
    pub fn size(self) -> usize {
        // SAFETY: a pure function of an integer.
        unsafe { sys::dg_dtype_size(self.0) }
    }

    /// libdg's name of the dtype (`dg_dtype_name`), e.g. `"bfloat16"`; `"unknown"` otherwise.
    pub fn name(self) -> &'static str {
        // SAFETY: dg_dtype_name returns a static string for every input.
        unsafe { static_str(sys::dg_dtype_name(self.0)) }
    }
}

impl fmt::Debug for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DType({})", self.name())
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a descriptor holds (`dg_tensor_get`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// The device pointer (NULL for a descriptor made by [`Tensor::without_data`]).
    pub data: *mut c_void,
    /// The element type.
    pub dtype: DType,
    /// Sizes, one per dimension, in elements.
    pub sizes: Vec<i64>,
    /// Strides, one per dimension, in elements.
    pub strides: Vec<i64>,
}

/// A descriptor of device memory (`dg_tensor`): pointer, dtype, sizes and strides in elements.
/// It never owns the memory; dropping it destroys only the descriptor. Major-ness (K-major or
/// MN-major) is read from the strides.
pub struct Tensor {
    raw: NonNull<sys::dg_tensor>,
}

// SAFETY: a dg_tensor is an immutable descriptor except through `set_data` (which takes
// `&mut self`); libdg allows its use from any thread.
unsafe impl Send for Tensor {}
unsafe impl Sync for Tensor {}

impl Tensor {
    /// Describes `data` as a tensor of `dtype` with `sizes` (rank 1 to 4) and `strides` in
    /// elements (`None`: contiguous row-major).
    ///
    /// # Safety
    /// `data` must be NULL or a device pointer (of the device of the streams the tensor is used
    /// on) to memory that covers every element the sizes and strides address, and that memory
    /// must stay allocated, and not be used in ways the kernels would race with, until the work of
    /// every kernel call given this tensor has completed on its stream. Kernels write through the
    /// pointers of their output tensors.
    pub unsafe fn new(data: *mut c_void, dtype: DType, sizes: &[i64], strides: Option<&[i64]>) -> Result<Tensor> {
        if let Some(s) = strides {
            if s.len() != sizes.len() {
                return Err(Error::new(
                    sys::DG_ERROR_INVALID_ARGUMENT,
                    format!("strides: {} entries for {} sizes (one stride per dimension expected)", s.len(), sizes.len()),
                ));
            }
        }
        let rank = rank_arg(sizes.len());
        let mut raw = ptr::null_mut();
        check(sys::dg_tensor_create(
            &mut raw,
            data,
            dtype.0,
            rank,
            sizes.as_ptr(),
            strides.map_or(ptr::null(), |s| s.as_ptr()),
        ))?;
        Ok(Tensor { raw: NonNull::new(raw).expect("dg_tensor_create succeeded with a NULL handle") })
    }

    /// A descriptor with a NULL data pointer, for the layout queries
    /// ([`transform_sf_layout`](crate::transform_sf_layout)) and for validation; kernel calls
    /// reject it with [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument).
    pub fn without_data(dtype: DType, sizes: &[i64], strides: Option<&[i64]>) -> Result<Tensor> {
        // SAFETY: a NULL pointer addresses no memory; libdg's kernel calls refuse it.
        unsafe { Tensor::new(ptr::null_mut(), dtype, sizes, strides) }
    }

    /// Points the descriptor at other memory of the same shape (`dg_tensor_set_data`; cheap, for
    /// reusing one descriptor across calls).
    ///
    /// # Safety
    /// As for [`Tensor::new`], for `data`.
    pub unsafe fn set_data(&mut self, data: *mut c_void) -> Result<()> {
        check(sys::dg_tensor_set_data(self.raw.as_ptr(), data))
    }

    /// The descriptor's pointer, dtype, sizes and strides (`dg_tensor_get`).
    pub fn info(&self) -> Result<TensorInfo> {
        let mut data = ptr::null_mut();
        let mut dtype = 0;
        let mut rank = 0;
        let mut sizes = [0i64; sys::DG_MAX_RANK as usize];
        let mut strides = [0i64; sys::DG_MAX_RANK as usize];
        // SAFETY: the handle is live; the arrays hold DG_MAX_RANK entries as required.
        check(unsafe {
            sys::dg_tensor_get(self.raw.as_ptr(), &mut data, &mut dtype, &mut rank, sizes.as_mut_ptr(), strides.as_mut_ptr())
        })?;
        let rank = rank.clamp(0, sys::DG_MAX_RANK) as usize;
        Ok(TensorInfo { data, dtype: DType(dtype), sizes: sizes[..rank].to_vec(), strides: strides[..rank].to_vec() })
    }

    /// The raw handle, for calls through `dg_sys`; it stays owned by this `Tensor`.
    pub fn as_raw(&self) -> *mut sys::dg_tensor {
        self.raw.as_ptr()
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        // SAFETY: the handle came from dg_tensor_create and is destroyed once.
        unsafe { sys::dg_tensor_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.info() {
            Ok(info) => f
                .debug_struct("Tensor")
                .field("data", &info.data)
                .field("dtype", &info.dtype)
                .field("sizes", &info.sizes)
                .field("strides", &info.strides)
                .finish(),
            Err(e) => write!(f, "Tensor(<{}>)", e),
        }
    }
}

/// The raw pointer of an optional tensor (NULL for `None`).
pub(crate) fn opt_tensor(t: Option<&Tensor>) -> *const sys::dg_tensor {
    t.map_or(ptr::null(), |t| t.as_raw() as *const _)
}

/// The `rank` argument for `len` sizes: a length past `i32` becomes `i32::MAX`, which libdg
/// refuses naming the rank, never a small rank that wrapped.
fn rank_arg(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_past_i32_is_refused_as_a_rank() {
        assert_eq!(rank_arg(3), 3);
        // Wrapped, 2^32 + 2 sizes would be described as rank 2.
        let long = (1usize << 32) + 2;
        assert_eq!(rank_arg(long), i32::MAX);
        let sizes = [128i64, 512, 1, 1];
        let mut raw = ptr::null_mut();
        // SAFETY: libdg reads at most DG_MAX_RANK = 4 sizes, and none for a rank it refuses.
        let e = check(unsafe {
            sys::dg_tensor_create(&mut raw, ptr::null_mut(), DType::BFLOAT16.0, rank_arg(long), sizes.as_ptr(), ptr::null())
        })
        .unwrap_err();
        assert!(raw.is_null());
        assert!(e.message().starts_with("rank: "), "{}", e);
    }
}
