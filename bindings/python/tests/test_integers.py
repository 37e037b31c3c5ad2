"""Integers handed to libdg: values a C type cannot hold and non-integral numbers are refused with
dg.InvalidArgument naming the argument, instead of wrapping modulo 2^64 or truncating."""

import fractions

import pytest

import dg
from dg import _integers

HUGE = [2**63, 2**64 + 100, -(2**63) - 1, 10**30]
NOT_INTEGRAL = [1.5, -0.25, float("nan"), float("inf"), fractions.Fraction(3, 2), "8", None, [8]]


@pytest.mark.parametrize("value", HUGE)
def test_int64_range(value):
    with pytest.raises(dg.InvalidArgument, match=r"^x = -?\d+ is outside the int64_t range"):
        _integers.int64(value, "x")


@pytest.mark.parametrize("value", NOT_INTEGRAL)
def test_non_integral(value):
    with pytest.raises(dg.InvalidArgument, match=r"^x: expected an integer, got"):
        _integers.int64(value, "x")


def test_edges_and_integral_values_pass():
    assert _integers.int64(2**63 - 1, "x") == 2**63 - 1
    assert _integers.int64(-(2**63), "x") == -(2**63)
    assert _integers.int32(2**31 - 1, "x") == 2**31 - 1
    assert _integers.size(2**64 - 1, "x") == 2**64 - 1
    assert _integers.int64(8.0, "x") == 8 and type(_integers.int64(8.0, "x")) is int
    assert _integers.int64(True, "x") == 1
    assert _integers.int64s((1, 2, 3), "s") == (1, 2, 3)
    assert _integers.int64s([4.0, 5], "s") == (4, 5)
    with pytest.raises(dg.InvalidArgument, match=r"int32_t range"):
        _integers.int32(2**31, "x")
    with pytest.raises(dg.InvalidArgument, match=r"^x = -1 is outside the size_t range"):
        _integers.size(-1, "x")
    with pytest.raises(dg.InvalidArgument, match=r"^s\[1\] = 18446744073709551616 is outside"):
        _integers.int64s((1, 2**64), "s")
    with pytest.raises(dg.InvalidArgument, match=r"^s: expected a sequence of integers"):
        _integers.int64s(5, "s")


def test_numpy_integers_pass():
    np = pytest.importorskip("numpy")
    assert _integers.int64(np.int64(7), "x") == 7
    assert _integers.int32(np.uint8(255), "x") == 255
    with pytest.raises(dg.InvalidArgument, match="expected an integer"):
        _integers.int64(np.float32(2.5), "x")


# The cases: each used to answer (wrapped or truncated) instead of failing.
@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: dg.get_tma_aligned_size(2**64 + 100, 1), "x"),
        (lambda: dg.get_tma_aligned_size(1.5, 2), "x"),
        (lambda: dg.get_tma_aligned_size(8, 2**64 + 2), "element_size"),
        (lambda: dg.get_tma_aligned_size(8, -2), "element_size"),
        (lambda: dg.get_tma_aligned_size(8, 2.5), "element_size"),
        (lambda: dg.get_mn_major_tma_aligned_tensor_layout([2**64 + 8, 4]), r"sizes\[0\]"),
        (lambda: dg.get_mn_major_tma_aligned_tensor_layout([256, 4.5]), r"sizes\[1\]"),
        (lambda: dg.get_mn_major_tma_aligned_packed_ue8m0_tensor_layout([256, 2**63]), r"sizes\[1\]"),
        (lambda: dg.fp8_gemm_workspace_size("tn", 2**64 + 256, 128, 128), "m"),
        (lambda: dg.fp8_gemm_workspace_size("tn", 256, 128.5, 128), "n"),
        (lambda: dg.fp8_gemm_workspace_size("tn", 256, 128, -(2**64)), "k"),
        (lambda: dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(2**64 + 4, [128]), "mn"),
        (lambda: dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(256, [128, 2**64 + 128]), r"ks\[1\]"),
        (lambda: dg.get_mqa_logits_layout(2**64 + 1, 1024), "seq_len"),
        (lambda: dg.get_mqa_logits_layout(16, 1024.5), "seq_len_kv"),
        (lambda: dg.set_num_sms(10**30), "num_sms"),
        (lambda: dg.set_num_sms(2.5), "num_sms"),
        (lambda: dg.status_string(2**64 + 1), "status"),
        (lambda: dg.set_log_level(2**32 + 3), "level"),
        (lambda: dg.Config(num_sms=2**64 + 66), "value"),
        (lambda: dg.Config(pdl=0.5), "value"),
        (lambda: dg.Stream.offline((9, 0), num_sms=2**32 + 132), "num_sms"),
        (lambda: dg.Stream.offline((2**32 + 9, 0)), r"arch\[0\]"),
        (lambda: dg.Stream(device=2**32), "device"),
        (lambda: dg.Stream(cu_stream=2**64 + 16), "stream"),
        (lambda: dg.TensorInfo(2**64 + 256, 3, [16, 16], [16, 1], 0), "ptr"),
        (lambda: dg.TensorInfo(256, 3, [16, 2**64 + 16], [16, 1], 0), r"shape\[1\]"),
        (lambda: dg.TensorInfo(256, 3, [16, 16], [16.5, 1], 0), r"strides\[0\]"),
    ],
)
def test_public_functions_refuse_and_name_the_argument(call, name):
    with pytest.raises(dg.InvalidArgument, match=r"(^|: |\b)%s( =|: expected an integer)" % name):
        call()


def test_prepare_calls_refuse_before_compiling():
    stream = dg.Stream.offline((9, 0), num_sms=132)
    try:
        with pytest.raises(dg.InvalidArgument, match=r"^k = 18446744073709551744 is outside the int64_t range"):
            dg.gemm_prepare("bfloat16", "nt", 128, 128, 2**64 + 128, "bfloat16", stream=stream)
        with pytest.raises(dg.InvalidArgument, match=r"^expected_m: expected an integer, got 1.5"):
            dg.m_grouped_gemm_prepare("bfloat16", "masked", 4, 128, 128, 128, 1.5, stream=stream)
        with pytest.raises(dg.InvalidArgument, match=r"^ks\[0\] = 18446744073709551744 is outside"):
            dg.k_grouped_gemm_prepare("bfloat16", "tn", 128, 128, [2**64 + 128], stream=stream)
    finally:
        stream.close()


class _CaiObject:
    def __init__(self, shape, strides=None, ptr=1 << 20):
        self.__cuda_array_interface__ = {"version": 3, "typestr": "<f4", "shape": shape, "strides": strides,
                                         "data": (ptr, False)}


@pytest.mark.parametrize(
    "obj,what",
    [
        (_CaiObject((2**64 + 4, 4)), r"shape\[0\] = "),
        (_CaiObject((4, 4), strides=(2**64 + 16, 4)), r"strides\[0\] = "),
        (_CaiObject((4, 4), strides=(16.5, 4)), r"strides\[0\]: expected an integer"),
        (_CaiObject((4, 4), ptr=2**64 + 256), r"data pointer = "),
    ],
)
def test_cuda_array_interface_values_are_checked(obj, what):
    with pytest.raises(dg.InvalidArgument, match=r"^sf: __cuda_array_interface__ %s" % what):
        dg.get_mn_major_tma_aligned_tensor(obj, out=obj)
