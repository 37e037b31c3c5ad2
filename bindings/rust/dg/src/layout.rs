//! Scaling-factor layouts and host utilities (DeepGEMM's layout helpers).
//!
//! Each transform writes into a caller-provided `out` tensor; the `*_layout` queries give its
//! sizes, strides and the bytes to allocate, so callers can allocate and describe `out` first.

use std::ptr;

use dg_sys as sys;

use crate::error::{check, Error, Result};
use crate::stream::Stream;
use crate::tensor::{opt_tensor, DType, Tensor};

/// Sizes and strides (elements) of a layout's output and the bytes to allocate for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleLayout {
    /// Sizes, one per dimension.
    pub sizes: Vec<i64>,
    /// Strides in elements, one per dimension.
    pub strides: Vec<i64>,
    /// Bytes of device memory the output needs.
    pub bytes: usize,
}

/// The answer of [`transform_sf_layout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SfLayout {
    /// The input already has the required layout: no copy is needed (sizes and strides repeat
    /// the input's).
    pub is_input: bool,
    /// The output's element type.
    pub dtype: DType,
    /// The output's sizes, strides and bytes.
    pub layout: ScaleLayout,
}

fn check_rank(rank: usize) -> Result<i32> {
    if rank == 0 || rank > sys::DG_MAX_RANK as usize {
        return Err(Error::new(
            sys::DG_ERROR_INVALID_ARGUMENT,
            format!("sizes: rank {} (expected 1 to {})", rank, sys::DG_MAX_RANK),
        ));
    }
    Ok(rank as i32)
}

type LayoutQuery = unsafe extern "C" fn(i32, *const i64, *mut i64, *mut i64, *mut usize) -> sys::dg_status;

fn query_layout(sizes: &[i64], f: LayoutQuery) -> Result<ScaleLayout> {
    let rank = check_rank(sizes.len())?;
    let mut out_sizes = [0i64; sys::DG_MAX_RANK as usize];
    let mut out_strides = [0i64; sys::DG_MAX_RANK as usize];
    let mut bytes = 0;
    // SAFETY: `sizes` holds `rank` entries; the outputs hold DG_MAX_RANK >= rank entries.
    check(unsafe { f(rank, sizes.as_ptr(), out_sizes.as_mut_ptr(), out_strides.as_mut_ptr(), &mut bytes) })?;
    let r = sizes.len();
    Ok(ScaleLayout { sizes: out_sizes[..r].to_vec(), strides: out_strides[..r].to_vec(), bytes })
}

/// The output layout of [`Stream::get_mn_major_tma_aligned_tensor`] for FP32 scales of `sizes`
/// ([MN, SF_K] or [G, MN, SF_K]): same sizes, strides (.., 1, align(MN, 4))
/// (`dg_get_mn_major_tma_aligned_tensor_layout`).
pub fn mn_major_tma_aligned_tensor_layout(sizes: &[i64]) -> Result<ScaleLayout> {
    query_layout(sizes, sys::dg_get_mn_major_tma_aligned_tensor_layout)
}

/// The output layout of [`Stream::get_mn_major_tma_aligned_packed_ue8m0_tensor`]: INT32
/// (UE8M0X4) [.., MN, ceil(SF_K / 4)] with strides (.., 1, align(MN, 4))
/// (`dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout`).
pub fn mn_major_tma_aligned_packed_ue8m0_tensor_layout(sizes: &[i64]) -> Result<ScaleLayout> {
    query_layout(sizes, sys::dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout)
}

/// The output layout of [`Stream::get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor`] for
/// K-grouped scales of `mn` columns and groups of `ks` K (multiples of 128): INT32 (UE8M0X4)
/// [P, MN] with strides (align(MN, 4), 1), P the sum of ceil(k / 512) over `ks`
/// (`dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout`).
pub fn k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(mn: i64, ks: &[i64]) -> Result<ScaleLayout> {
    let mut sizes = [0i64; 2];
    let mut strides = [0i64; 2];
    let mut bytes = 0;
    // SAFETY: a slice of ks.len() values; the outputs hold 2 entries each.
    check(unsafe {
        sys::dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(
            mn, ks.as_ptr(), ks.len() as i64, sizes.as_mut_ptr(), strides.as_mut_ptr(), &mut bytes)
    })?;
    Ok(ScaleLayout { sizes: sizes.to_vec(), strides: strides.to_vec(), bytes })
}

/// How a GEMM expects a scale tensor (`dg_sf_recipe`, started from `DG_SF_RECIPE_INIT`): one
/// scale per (gran_mn x gran_k) tile. Setters chain.
#[derive(Clone, Copy, Debug)]
pub struct SfRecipe {
    raw: sys::dg_sf_recipe,
}

impl Default for SfRecipe {
    fn default() -> Self {
        SfRecipe { raw: sys::DG_SF_RECIPE_INIT }
    }
}

impl SfRecipe {
    /// The defaults of `DG_SF_RECIPE_INIT`: per-token (1 x 128) scales of a 2-D input on the
    /// stream's device.
    pub fn new() -> Self {
        Self::default()
    }

    /// 1 (per token) or 128 (per block).
    pub fn gran_mn(mut self, value: i32) -> Self {
        self.raw.gran_mn = value;
        self
    }

    /// 128 (SM90); 32 or 128 (SM100).
    pub fn gran_k(mut self, value: i32) -> Self {
        self.raw.gran_k = value;
        self
    }

    /// 0 for a 2-D input; G >= 1 for a batched [G, ..] input.
    pub fn num_groups(mut self, value: i32) -> Self {
        self.raw.num_groups = value;
        self
    }

    /// 9 (SM90) or 10 (SM100); 0 = the stream's device.
    pub fn arch_major(mut self, value: i32) -> Self {
        self.raw.arch_major = value;
        self
    }

    /// SM100: keep FP32 instead of packing to UE8M0.
    pub fn disable_ue8m0_cast(mut self, value: bool) -> Self {
        self.raw.disable_ue8m0_cast = i32::from(value);
        self
    }

    /// The C struct, for calls through `dg_sys`.
    pub fn as_raw(&self) -> &sys::dg_sf_recipe {
        &self.raw
    }
}

/// What [`Stream::transform_sf_into_required_layout`] will produce for `sf`, the scales of an
/// [mn, k] operand (`dg_transform_sf_layout`). `stream` is read only when the recipe's
/// `arch_major` is 0.
pub fn transform_sf_layout(stream: Option<&Stream>, sf: &Tensor, mn: i64, k: i64, recipe: &SfRecipe) -> Result<SfLayout> {
    let rank = sf.info()?.sizes.len();
    let mut is_input = 0;
    let mut dtype = 0;
    let mut sizes = [0i64; sys::DG_MAX_RANK as usize];
    let mut strides = [0i64; sys::DG_MAX_RANK as usize];
    let mut bytes = 0;
    // SAFETY: live handles; the outputs hold DG_MAX_RANK entries.
    check(unsafe {
        sys::dg_transform_sf_layout(
            stream.map_or(ptr::null(), |s| s.as_raw() as *const _),
            sf.as_raw(),
            mn,
            k,
            &recipe.raw,
            &mut is_input,
            &mut dtype,
            sizes.as_mut_ptr(),
            strides.as_mut_ptr(),
            &mut bytes,
        )
    })?;
    Ok(SfLayout {
        is_input: is_input != 0,
        dtype: DType::from_raw(dtype),
        layout: ScaleLayout { sizes: sizes[..rank].to_vec(), strides: strides[..rank].to_vec(), bytes },
    })
}

/// `align(x, 16 / element_size)`: the size TMA needs for a dimension
/// (`dg_get_tma_aligned_size`); `element_size` must divide 16.
pub fn tma_aligned_size(x: i64, element_size: usize) -> Result<i64> {
    let mut aligned = 0;
    // SAFETY: a valid out-pointer.
    check(unsafe { sys::dg_get_tma_aligned_size(x, element_size, &mut aligned) })?;
    Ok(aligned)
}

/// Row alignment of each group in M-grouped contiguous layouts (128 on SM90;
/// `dg_get_mk_alignment_for_contiguous_layout`).
pub fn mk_alignment_for_contiguous_layout() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::dg_get_mk_alignment_for_contiguous_layout() }
}

impl Stream {
    /// Copies FP32 scales `sf` (any strides) into `out`, which must have the layout of
    /// [`mn_major_tma_aligned_tensor_layout`] (`dg_get_mn_major_tma_aligned_tensor`).
    pub fn get_mn_major_tma_aligned_tensor(&self, sf: &Tensor, out: &Tensor) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe { sys::dg_get_mn_major_tma_aligned_tensor(self.as_raw(), sf.as_raw(), out.as_raw()) })
    }

    /// Packs FP32 power-of-two scales into UE8M0X4 with the layout of
    /// [`mn_major_tma_aligned_packed_ue8m0_tensor_layout`]
    /// (`dg_get_mn_major_tma_aligned_packed_ue8m0_tensor`). Missing tail entries are 0.
    pub fn get_mn_major_tma_aligned_packed_ue8m0_tensor(&self, sf: &Tensor, out: &Tensor) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe { sys::dg_get_mn_major_tma_aligned_packed_ue8m0_tensor(self.as_raw(), sf.as_raw(), out.as_raw()) })
    }

    /// Packs K-grouped FP32 power-of-two scales `sf` (FLOAT32 [sum(ks) / 128, MN], one row per
    /// 128-wide K block, the groups' blocks concatenated) into UE8M0X4 per group, with the layout
    /// of [`k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout`]
    /// (`dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor`). `ks_tensor`: `None` or the
    /// INT32 [G] device copy of `ks` (checked, not read).
    pub fn get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(&self, sf: &Tensor, ks: &[i64],
                                                                  ks_tensor: Option<&Tensor>, out: &Tensor)
                                                                  -> Result<()> {
        // SAFETY: live handles and a slice of ks.len() values; the memory the tensors describe is
        // covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(
                self.as_raw(), sf.as_raw(), ks.as_ptr(), ks.len() as i64, opt_tensor(ks_tensor), out.as_raw())
        })
    }

    /// Transforms `sf` into the layout the GEMMs need (`dg_transform_sf_into_required_layout`,
    /// DeepGEMM's `transform_sf_into_required_layout`). When [`transform_sf_layout`] says the
    /// input already has it, `out` may be `None` and nothing runs.
    pub fn transform_sf_into_required_layout(&self, sf: &Tensor, mn: i64, k: i64, recipe: &SfRecipe,
                                             out: Option<&Tensor>) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_transform_sf_into_required_layout(self.as_raw(), sf.as_raw(), mn, k, &recipe.raw, opt_tensor(out))
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_slice_length_past_the_rank_range_is_refused() {
        // Converted with `as i32`, 2^32 + 2 sizes would be rank 2.
        for len in [0usize, 5, (1usize << 32) + 2] {
            let e = super::check_rank(len).unwrap_err();
            assert!(e.message().starts_with(&format!("sizes: rank {} (expected 1 to 4)", len)), "{}", e);
        }
        assert_eq!(super::check_rank(4).unwrap(), 4);
    }
}
