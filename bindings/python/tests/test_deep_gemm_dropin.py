"""dg.deep_gemm, checked without a GPU: DeepGEMM 2.6.1's public names (tests/data), its argument
lists and defaults for the calls engines use, the settings, the SM100-only names, FP4 operands, and
what a wrapped call hands to libdg."""

import inspect
import os

import pytest

import dg
import dg.deep_gemm as deep_gemm
from dg import _lib
from dg.deep_gemm import _gemm as dgg
from fakes import FakeCAI

_NAMES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "deep_gemm_2_6_1_names.txt")


def _deep_gemm_names():
    with open(_NAMES) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def test_every_public_name_of_deep_gemm_2_6_1_exists():
    names = _deep_gemm_names()
    assert len(names) > 80  # the file is the list, not a stub
    missing = [n for n in names if not hasattr(deep_gemm, n)]
    assert missing == []
    assert deep_gemm.__version__ == "2.6.1"
    for sub in ("utils", "testing", "mega"):
        assert inspect.ismodule(getattr(deep_gemm, sub))


def _params(fn):
    return [(p.name, p.default if p.default is not inspect.Parameter.empty else "<required>")
            for p in inspect.signature(fn).parameters.values()]


# DeepGEMM 2.6.1's argument lists (csrc/apis/*.hpp, register_apis) for the calls engines make.
_SIGNATURES = {
    "fp8_fp4_gemm_nt": [("a", "<required>"), ("b", "<required>"), ("d", "<required>"), ("c", None), ("recipe", None),
                        ("recipe_a", None), ("recipe_b", None), ("compiled_dims", "nk"),
                        ("disable_ue8m0_cast", False)],
    "fp8_gemm_tn": [("a", "<required>"), ("b", "<required>"), ("d", "<required>"), ("c", None), ("recipe", None),
                    ("recipe_a", None), ("recipe_b", None), ("compiled_dims", "mn"), ("disable_ue8m0_cast", False)],
    "m_grouped_fp8_fp4_gemm_nt_contiguous": [
        ("a", "<required>"), ("b", "<required>"), ("d", "<required>"), ("grouped_layout", "<required>"),
        ("recipe", None), ("recipe_a", None), ("recipe_b", None), ("compiled_dims", "nk"),
        ("disable_ue8m0_cast", False), ("use_psum_layout", False), ("ensure_zero_padding", True),
        ("expected_m_for_psum_layout", None)],
    "m_grouped_fp8_gemm_nt_masked": [
        ("a", "<required>"), ("b", "<required>"), ("d", "<required>"), ("masked_m", "<required>"),
        ("expected_m", "<required>"), ("recipe", None), ("recipe_a", None), ("recipe_b", None),
        ("compiled_dims", "nk"), ("disable_ue8m0_cast", False)],
    "m_grouped_bf16_gemm_nt_masked": [("a", "<required>"), ("b", "<required>"), ("d", "<required>"),
                                      ("masked_m", "<required>"), ("expected_m", "<required>"),
                                      ("compiled_dims", "nk")],
    "k_grouped_fp8_gemm_tn_contiguous": [
        ("a", "<required>"), ("b", "<required>"), ("d", "<required>"), ("ks_cpu", "<required>"),
        ("grouped_layout", "<required>"), ("c", None), ("recipe", (1, 1, 128)), ("compiled_dims", "mn"),
        ("use_psum_layout", False)],
    "bf16_gemm_nt": [("a", "<required>"), ("b", "<required>"), ("d", "<required>"), ("c", None),
                     ("compiled_dims", "nk")],
    "einsum": [("expr", "<required>"), ("a", "<required>"), ("b", "<required>"), ("d", "<required>"),
               ("c", None), ("use_cublaslt", False)],
    "fp8_einsum": [("expr", "<required>"), ("a", "<required>"), ("b", "<required>"), ("d", "<required>"),
                   ("c", None), ("recipe", (1, 128, 128))],
    "tf32_hc_prenorm_gemm": [("a", "<required>"), ("b", "<required>"), ("d", "<required>"),
                             ("sqr_sum", "<required>"), ("num_splits", None)],
    "fp8_gemm_nt_skip_head_mid": [("a", "<required>"), ("b", "<required>"), ("d", "<required>"),
                                  ("head_splits", "<required>"), ("recipe", None), ("compiled_dims", "nk"),
                                  ("disable_ue8m0_cast", False)],
    "transform_sf_into_required_layout": [
        ("sf", "<required>"), ("mn", "<required>"), ("k", "<required>"), ("recipe", "<required>"),
        ("num_groups", None), ("is_sfa", None), ("disable_ue8m0_cast", False), ("psum_layout", None)],
    "get_paged_mqa_logits_metadata": [("context_lens", "<required>"), ("block_kv", "<required>"),
                                      ("num_sms", "<required>"), ("indices", None)],
    "get_theoretical_mk_alignment_for_contiguous_layout": [("expected_m", None)],
}


@pytest.mark.parametrize("name", sorted(_SIGNATURES))
def test_argument_lists_and_defaults_follow_deep_gemm(name):
    assert _params(getattr(deep_gemm, name)) == _SIGNATURES[name]


def test_masked_aliases_are_the_same_functions():
    assert deep_gemm.fp8_m_grouped_gemm_nt_masked is deep_gemm.m_grouped_fp8_gemm_nt_masked
    assert deep_gemm.bf16_m_grouped_gemm_nt_masked is deep_gemm.m_grouped_bf16_gemm_nt_masked
    assert deep_gemm.fp8_gemm_nt is deep_gemm.fp8_fp4_gemm_nt
    assert deep_gemm.get_m_alignment_for_contiguous_layout is deep_gemm.get_mk_alignment_for_contiguous_layout


@pytest.mark.parametrize("name", ["get_symm_buffer_for_mega_moe", "transform_weights_for_mega_moe",
                                  "fp8_fp4_mega_moe", "bf16_mega_moe", "SymmBuffer"])
def test_sm100_only_names_raise_not_implemented_naming_the_architecture(name):
    with pytest.raises(NotImplementedError, match="SM100"):
        getattr(deep_gemm, name)(None, None)


def test_legacy_triton_kernels_raise_not_implemented():
    with pytest.raises(NotImplementedError, match="SM80"):
        deep_gemm.legacy.m_grouped_fp8_gemm_nt_contiguous  # noqa: B018


class _Typed:
    """An operand that only says its dtype (the FP4 check reads nothing else)."""

    def __init__(self, dtype):
        self.dtype = dtype


@pytest.mark.parametrize("dtype", ["torch.int8", "torch.uint8", "torch.float4_e2m1fn_x2"])
def test_fp4_operands_raise_unsupported_naming_sm100(dtype):
    fp8 = (_Typed("torch.float8_e4m3fn"), None)
    fp4 = (_Typed(dtype), None)
    with pytest.raises(dg.Unsupported, match="SM100") as err:
        deep_gemm.fp8_fp4_gemm_nt(fp8, fp4, None)
    assert "b:" in str(err.value)
    with pytest.raises(dg.Unsupported, match="FP4"):
        deep_gemm.m_grouped_fp8_fp4_gemm_nt_masked(fp4, fp8, None, None, 1)


def test_recipe_pairs_merge_into_one_recipe():
    assert dgg._merge_recipe(None, (1, 128), (128, 128)) == (1, 128, 128)
    assert dgg._merge_recipe((1, 1, 128), None, None) == (1, 1, 128)
    assert dgg._merge_recipe(None, None, None) is None
    with pytest.raises(dg.Unsupported):
        dgg._merge_recipe(None, (1, 32), (1, 128))
    with pytest.raises(dg.InvalidArgument):
        dgg._merge_recipe((1, 128, 128), (1, 128), (128, 128))
    with pytest.raises(dg.InvalidArgument):
        dgg._merge_recipe(None, (1, 128), None)


def test_tc_util_is_in_percent():
    try:
        deep_gemm.set_tc_util(40)
        assert deep_gemm.get_tc_util() == 40
        assert abs(dg.get_tc_util() - 0.4) < 1e-9
        deep_gemm.set_tc_util(0)
        assert deep_gemm.get_tc_util() == 100
        with pytest.raises(dg.InvalidArgument):
            deep_gemm.set_tc_util(101)
    finally:
        deep_gemm.set_tc_util(0)


def test_settings_round_trip_and_refuse_what_libdg_cannot_honour():
    assert deep_gemm.get_pdl() is False
    try:
        deep_gemm.set_pdl(True)
        assert deep_gemm.get_pdl() is True
    finally:
        deep_gemm.set_pdl(False)
    assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 128
    assert deep_gemm.get_theoretical_mk_alignment_for_contiguous_layout(37) == 128
    try:
        deep_gemm.set_mk_alignment_for_contiguous_layout(256)
        assert deep_gemm.get_k_alignment_for_contiguous_layout() == 256
        with pytest.raises(dg.Unsupported, match="multiple of 128"):
            deep_gemm.set_mk_alignment_for_contiguous_layout(64)
        assert deep_gemm.get_mk_alignment_for_contiguous_layout() == 256  # unchanged on error
    finally:
        deep_gemm.set_mk_alignment_for_contiguous_layout(128)
    deep_gemm.set_block_size_multiple_of(16)
    deep_gemm.set_block_size_multiple_of((16, 32))
    deep_gemm.set_block_size_multiple_of(1)
    with pytest.raises(dg.InvalidArgument):
        deep_gemm.set_block_size_multiple_of(0)
    deep_gemm.set_ignore_compile_dims(True)
    deep_gemm.set_ignore_compile_dims(False)


def test_transform_sf_recipe_and_is_sfa_rules():
    sf = FakeCAI((256, 4), "<f4")
    with pytest.raises(dg.InvalidArgument, match="is_sfa"):
        deep_gemm.transform_sf_into_required_layout(sf, 256, 512, (1, 128, 128))
    with pytest.raises(dg.InvalidArgument, match="is_sfa"):
        deep_gemm.transform_sf_into_required_layout(sf, 256, 512, (1, 128), is_sfa=True)
    with pytest.raises(dg.Unsupported, match="psum_layout"):
        deep_gemm.transform_sf_into_required_layout(sf, 256, 512, (1, 128), psum_layout=sf)


def test_einsum_refuses_other_forms():
    with pytest.raises(dg.Unsupported, match="bmk,bnk->mn"):
        deep_gemm.einsum("ij,jk->ik", None, None, None)
    for form in ("bhd,hdr->bhr", "bhd, bhr -> hdr"):  # DeepGEMM's SM100-only FP8 forms
        with pytest.raises(dg.Unsupported, match="SM100"):
            deep_gemm.fp8_einsum(form, None, None, None)
    with pytest.raises(dg.Unsupported, match="bhr,hdr->bhd"):
        deep_gemm.fp8_einsum("bmk,bnk->mn", None, None, None)


class _Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)
        return 0


def test_fp8_fp4_gemm_nt_reaches_libdg_fp8_gemm_with_the_merged_recipe(monkeypatch):
    rec = _Recorder()
    lib = _lib.get()
    monkeypatch.setitem(lib.functions, "dg_fp8_gemm_nt", rec)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    from dg import _arguments

    orig = _arguments._sf_recipe
    monkeypatch.setattr(_arguments, "_sf_recipe", lambda *a, **k: orig(*a, **dict(k, arch_major=9)))
    m, n, k = 256, 256, 512
    a = (FakeCAI((m, k), "|u1", ptr=0x1000), FakeCAI((m, k // 128), "<f4", strides=(1, m), ptr=0x2000))
    b = (FakeCAI((n, k), "|u1", ptr=0x3000), FakeCAI((n // 128, k // 128), "<f4", ptr=0x4000))
    d = FakeCAI((m, n), "<f2", ptr=0x5000)
    deep_gemm.fp8_fp4_gemm_nt(a, b, d, recipe_a=(1, 128), recipe_b=(128, 128))
    sfb_per_token = FakeCAI((n, k // 128), "<f4", strides=(1, n), ptr=0x4000)  # MN-major, TMA-aligned
    deep_gemm.fp8_fp4_gemm_nt(a, (b[0], sfb_per_token), FakeCAI((m, n), "<f4", ptr=0x5000), recipe=(1, 1, 128))
    recipes = [call[-1]._obj.recipe for call in rec.calls]
    assert recipes == [_lib.FP8_RECIPE_1D2D, _lib.FP8_RECIPE_1D1D]


def test_fp8_gemm_nt_skip_head_mid_is_one_libdg_call_with_the_head_splits(monkeypatch):
    rec, plain = _Recorder(), _Recorder()
    lib = _lib.get()
    monkeypatch.setitem(lib.functions, "dg_fp8_gemm_nt_skip_head_mid", rec)
    monkeypatch.setitem(lib.functions, "dg_fp8_gemm_nt", plain)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    from dg import _arguments

    orig = _arguments._sf_recipe
    monkeypatch.setattr(_arguments, "_sf_recipe", lambda *a, **k: orig(*a, **dict(k, arch_major=9)))
    m, n, k, heads = 256, 512, 512, 2
    a = (FakeCAI((m, k), "|u1", ptr=0x1000), FakeCAI((m, k // 128), "<f4", strides=(1, m), ptr=0x2000))
    b = (FakeCAI((n, k), "|u1", ptr=0x3000), FakeCAI((n // 128, k // 128), "<f4", ptr=0x4000))
    d = FakeCAI((m, heads * 320), "<f2", ptr=0x5000)
    deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, (128, 64, 128))
    dg.fp8_gemm_nt_skip_head_mid(a, b, d, [128, 64, 128], alpha=0.5)
    # One libdg call each (no GEMM into a temporary), with the split as the C arguments.
    assert plain.calls == []
    assert [call[6:9] for call in rec.calls] == [(128, 64, 128), (128, 64, 128)]
    assert [call[-1]._obj.recipe for call in rec.calls] == [_lib.FP8_RECIPE_1D2D] * 2
    assert [call[-1]._obj.alpha for call in rec.calls] == [1.0, 0.5]


@pytest.mark.parametrize("splits", [(128, 64), (128, 64, 128, 0), "abc", (128, 2**70, 128), (1.5, 0, 128)])
def test_fp8_gemm_nt_skip_head_mid_refuses_head_splits_that_are_not_three_integers(splits):
    with pytest.raises(dg.InvalidArgument, match="head_splits"):
        dg.fp8_gemm_nt_skip_head_mid(None, None, None, splits)
