package dg

// #include "calls.h"
import "C"

// ScaleLayout gives the sizes and strides (in elements) of a layout transform's output and the
// bytes to allocate for it.
type ScaleLayout struct {
	Sizes   []int64
	Strides []int64
	Bytes   int
}

// SfLayout is the answer of TransformSFLayout.
type SfLayout struct {
	IsInput bool  // the input already has the required layout: no copy needed
	DType   DType // the output's element type
	ScaleLayout
}

func checkRank(sizes []int64) error {
	if len(sizes) == 0 || len(sizes) > MaxRank {
		return invalid("sizes: rank %d (expected 1 to %d)", len(sizes), MaxRank)
	}
	return nil
}

func scaleLayout(rank int, sizes, strides *[MaxRank]C.int64_t, bytes C.size_t) ScaleLayout {
	l := ScaleLayout{Bytes: int(bytes)}
	for i := 0; i < rank; i++ {
		l.Sizes = append(l.Sizes, int64(sizes[i]))
		l.Strides = append(l.Strides, int64(strides[i]))
	}
	return l
}

// MNMajorTMAAlignedTensorLayout is the output layout of GetMNMajorTMAAlignedTensor for FP32 scales
// of sizes ([MN, SF_K] or [G, MN, SF_K]): the same sizes, strides (.., 1, align(MN, 4))
// (dg_get_mn_major_tma_aligned_tensor_layout).
func MNMajorTMAAlignedTensorLayout(sizes []int64) (ScaleLayout, error) {
	if err := checkRank(sizes); err != nil {
		return ScaleLayout{}, err
	}
	var outSizes, outStrides [MaxRank]C.int64_t
	var bytes C.size_t
	if err := check(C.dgw_get_mn_major_tma_aligned_tensor_layout(C.int32_t(len(sizes)), int64Ptr(sizes),
		&outSizes[0], &outStrides[0], &bytes)); err != nil {
		return ScaleLayout{}, err
	}
	return scaleLayout(len(sizes), &outSizes, &outStrides, bytes), nil
}

// MNMajorTMAAlignedPackedUE8M0TensorLayout is the output layout of
// GetMNMajorTMAAlignedPackedUE8M0Tensor: INT32 (UE8M0X4) [.., MN, ceil(SF_K / 4)] with strides
// (.., 1, align(MN, 4)) (dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout).
func MNMajorTMAAlignedPackedUE8M0TensorLayout(sizes []int64) (ScaleLayout, error) {
	if err := checkRank(sizes); err != nil {
		return ScaleLayout{}, err
	}
	var outSizes, outStrides [MaxRank]C.int64_t
	var bytes C.size_t
	if err := check(C.dgw_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(C.int32_t(len(sizes)), int64Ptr(sizes),
		&outSizes[0], &outStrides[0], &bytes)); err != nil {
		return ScaleLayout{}, err
	}
	return scaleLayout(len(sizes), &outSizes, &outStrides, bytes), nil
}

// KGroupedMNMajorTMAAlignedPackedUE8M0TensorLayout is the output layout of
// GetKGroupedMNMajorTMAAlignedPackedUE8M0Tensor for K-grouped scales of mn columns and groups of ks
// K (multiples of 128): INT32 (UE8M0X4) [P, MN] with strides (align(MN, 4), 1), P the sum of
// ceil(k / 512) over ks (dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout).
func KGroupedMNMajorTMAAlignedPackedUE8M0TensorLayout(mn int64, ks []int64) (ScaleLayout, error) {
	var outSizes, outStrides [MaxRank]C.int64_t
	var bytes C.size_t
	if err := check(C.dgw_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(C.int64_t(mn), int64Ptr(ks),
		C.int64_t(len(ks)), &outSizes[0], &outStrides[0], &bytes)); err != nil {
		return ScaleLayout{}, err
	}
	return scaleLayout(2, &outSizes, &outStrides, bytes), nil
}

// SfRecipe is how a GEMM expects a scale tensor (dg_sf_recipe): one scale per GranMN x GranK
// tile. Start from DefaultSfRecipe (a zero SfRecipe has GranMN and GranK 0, which libdg rejects).
type SfRecipe struct {
	GranMN           int  // 1 (per token) or 128 (per block)
	GranK            int  // 128 (SM90); 32 or 128 (SM100)
	NumGroups        int  // 0 for a 2-D input; G >= 1 for a batched [G, ..] input
	ArchMajor        int  // 9 (SM90) or 10 (SM100); 0 = the stream's device
	DisableUE8M0Cast bool // SM100: keep FP32 instead of packing to UE8M0
}

// DefaultSfRecipe returns the recipe of DG_SF_RECIPE_INIT: per-token (1 x 128) scales of a 2-D
// input on the stream's device.
func DefaultSfRecipe() SfRecipe {
	r := C.dgw_sf_recipe_init()
	return SfRecipe{GranMN: int(r.gran_mn), GranK: int(r.gran_k), NumGroups: int(r.num_groups),
		ArchMajor: int(r.arch_major), DisableUE8M0Cast: r.disable_ue8m0_cast != 0}
}

// c is the recipe as libdg takes it, or an error naming the first field that does not fit.
func (r SfRecipe) c() (C.dg_sf_recipe, error) {
	var a cArgs
	v := C.dgw_sf_recipe_init()
	v.gran_mn = a.int32("recipe.gran_mn", r.GranMN)
	v.gran_k = a.int32("recipe.gran_k", r.GranK)
	v.num_groups = a.int32("recipe.num_groups", r.NumGroups)
	v.arch_major = a.int32("recipe.arch_major", r.ArchMajor)
	v.disable_ue8m0_cast = cBool(r.DisableUE8M0Cast)
	return v, a.err
}

// TransformSFLayout says what TransformSFIntoRequiredLayout will produce for sf, the scales of an
// [mn, k] operand (dg_transform_sf_layout). stream is read only when recipe.ArchMajor is 0 (it
// may be nil otherwise).
func TransformSFLayout(stream *Stream, sf *Tensor, mn, k int64, recipe SfRecipe) (SfLayout, error) {
	info, err := sf.Info()
	if err != nil {
		return SfLayout{}, err
	}
	rec, err := recipe.c()
	if err != nil {
		return SfLayout{}, err
	}
	var isInput C.int32_t
	var dtype C.dg_dtype
	var sizes, strides [MaxRank]C.int64_t
	var bytes C.size_t
	err = check(C.dgw_transform_sf_layout(stream.raw(), sf.raw(), C.int64_t(mn), C.int64_t(k), &rec, &isInput, &dtype,
		&sizes[0], &strides[0], &bytes))
	keep(stream, sf)
	if err != nil {
		return SfLayout{}, err
	}
	return SfLayout{IsInput: isInput != 0, DType: DType(dtype),
		ScaleLayout: scaleLayout(len(info.Sizes), &sizes, &strides, bytes)}, nil
}

// TMAAlignedSize is align(x, 16 / elementSize), the size TMA needs for a dimension
// (dg_get_tma_aligned_size); elementSize must divide 16.
func TMAAlignedSize(x int64, elementSize int) (int64, error) {
	var a cArgs
	size := a.size("element_size", elementSize)
	if a.err != nil {
		return 0, a.err
	}
	var aligned C.int64_t
	err := check(C.dgw_get_tma_aligned_size(C.int64_t(x), size, &aligned))
	return int64(aligned), err
}

// MKAlignmentForContiguousLayout is the row alignment of each group in M-grouped contiguous
// layouts (128 on SM90; dg_get_mk_alignment_for_contiguous_layout).
func MKAlignmentForContiguousLayout() int {
	return int(C.dg_get_mk_alignment_for_contiguous_layout())
}

// GetMNMajorTMAAlignedTensor copies FP32 scales sf (any strides) into out, which must have the
// layout of MNMajorTMAAlignedTensorLayout (dg_get_mn_major_tma_aligned_tensor).
func (s *Stream) GetMNMajorTMAAlignedTensor(sf, out *Tensor) error {
	err := check(C.dgw_get_mn_major_tma_aligned_tensor(s.ptr, sf.raw(), out.raw()))
	keep(s, sf, out)
	return err
}

// GetMNMajorTMAAlignedPackedUE8M0Tensor packs FP32 power-of-two scales into UE8M0X4 with the
// layout of MNMajorTMAAlignedPackedUE8M0TensorLayout
// (dg_get_mn_major_tma_aligned_packed_ue8m0_tensor). Missing tail entries are 0.
func (s *Stream) GetMNMajorTMAAlignedPackedUE8M0Tensor(sf, out *Tensor) error {
	err := check(C.dgw_get_mn_major_tma_aligned_packed_ue8m0_tensor(s.ptr, sf.raw(), out.raw()))
	keep(s, sf, out)
	return err
}

// GetKGroupedMNMajorTMAAlignedPackedUE8M0Tensor packs K-grouped FP32 power-of-two scales sf
// (FLOAT32 [sum(ks) / 128, MN], one row per 128-wide K block, the groups' blocks concatenated) into
// UE8M0X4 per group, with the layout of KGroupedMNMajorTMAAlignedPackedUE8M0TensorLayout
// (dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor). ksTensor: nil or the INT32 [G]
// device copy of ks (checked, not read).
func (s *Stream) GetKGroupedMNMajorTMAAlignedPackedUE8M0Tensor(sf *Tensor, ks []int64, ksTensor, out *Tensor) error {
	err := check(C.dgw_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(s.ptr, sf.raw(), int64Ptr(ks),
		C.int64_t(len(ks)), ksTensor.raw(), out.raw()))
	keep(s, sf, ksTensor, out)
	return err
}

// TransformSFIntoRequiredLayout transforms sf into the layout the GEMMs need
// (dg_transform_sf_into_required_layout, DeepGEMM's transform_sf_into_required_layout). When
// TransformSFLayout says the input already has it, out may be nil and nothing runs.
func (s *Stream) TransformSFIntoRequiredLayout(sf *Tensor, mn, k int64, recipe SfRecipe, out *Tensor) error {
	rec, err := recipe.c()
	if err != nil {
		return err
	}
	err = check(C.dgw_transform_sf_into_required_layout(s.ptr, sf.raw(), C.int64_t(mn), C.int64_t(k), &rec, out.raw()))
	keep(s, sf, out)
	return err
}
