"""Descriptor building from __cuda_array_interface__ objects and DLPack capsules (no GPU)."""

import ctypes

import pytest

import dg
from dg import _tensor as T
from dg._stream import cu_stream_handle
from fakes import FakeCAI, FakeDLPack, capsule_name


def roundtrip(info):
    """Builds the dg_tensor and reads back what libdg stored."""
    with T.Descriptors() as ds:
        h = ds.add(info)
        return T.read_descriptor(h)


# --- __cuda_array_interface__ -----------------------------------------------------------------


def test_cai_contiguous():
    info = T.describe(FakeCAI((4, 8), "<f4", ptr=0x7000), "x")
    assert (info.ptr, info.dtype, info.shape, info.strides) == (0x7000, T.FLOAT32, (4, 8), (8, 1))
    assert info.device is None
    assert roundtrip(info) == (0x7000, T.FLOAT32, (4, 8), (8, 1))


def test_cai_byte_strides_become_element_strides():
    # A transposed [8, 4] view of a row-major [4, 8] float32 array: byte strides (4, 32).
    info = T.describe(FakeCAI((8, 4), "<f4", byte_strides=(4, 32)), "x")
    assert info.strides == (1, 8)
    assert roundtrip(info)[3] == (1, 8)


@pytest.mark.parametrize(
    "typestr,dtype", [("<f4", T.FLOAT32), ("<f2", T.FLOAT16), ("<i4", T.INT32), ("|u1", T.UINT8), ("=f4", T.FLOAT32)]
)
def test_cai_dtypes(typestr, dtype):
    info = T.describe(FakeCAI((2, 16), typestr), "x")
    assert info.dtype == dtype
    assert roundtrip(info)[1] == dtype


def test_cai_roles_for_fp4_and_packed_scales():
    assert T.describe(FakeCAI((4, 16), "|i1"), "a", T.ROLE_FP4).dtype == T.FLOAT4_E2M1X2
    assert T.describe(FakeCAI((4, 16), "|u1"), "a", T.ROLE_FP4).dtype == T.FLOAT4_E2M1X2
    assert T.describe(FakeCAI((4, 16), "<i4"), "sf", T.ROLE_SF).dtype == T.UE8M0X4
    with pytest.raises(dg.InvalidArgument, match="int8 is accepted only for packed FP4"):
        T.describe(FakeCAI((4, 16), "|i1"), "a")


def test_cai_rejections():
    with pytest.raises(dg.InvalidArgument, match="not a multiple of the 4-byte element"):
        T.describe(FakeCAI((4, 4), "<f4", byte_strides=(6, 4)), "x")
    with pytest.raises(dg.InvalidArgument, match="bfloat16 and float8 cannot be named"):
        T.describe(FakeCAI((4, 4), "<V2"), "x")
    with pytest.raises(dg.InvalidArgument, match="version 1"):
        T.describe(FakeCAI((4, 4), "<f4", version=1), "x")
    with pytest.raises(dg.InvalidArgument, match="big-endian"):
        T.describe(FakeCAI((4, 4), ">f4"), "x")
    with pytest.raises(dg.InvalidArgument, match="x: expected a CUDA tensor"):
        T.describe([1, 2, 3], "x")


def test_cai_readonly_flag_is_kept():
    assert T.describe(FakeCAI((4,), "<f4", readonly=True), "x").readonly


def test_rank_and_sizes_are_checked_by_libdg():
    with pytest.raises(dg.InvalidArgument, match="rank"):
        roundtrip(T.describe(FakeCAI((1, 1, 1, 1, 2), "<f4"), "x"))
    with pytest.raises(dg.InvalidArgument):
        roundtrip(T.TensorInfo(0x100, T.FLOAT32, (4, -1), (1, 1), None))


def test_transposed_view():
    info = T.describe(FakeCAI((3, 4, 8), "<f4"), "x")
    t = info.transposed()
    assert t.shape == (3, 8, 4) and t.strides == (32, 1, 8)
    assert t.transposed().shape == info.shape


# --- DLPack -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code,bits,lanes,dtype",
    [
        (2, 32, 1, T.FLOAT32),
        (2, 16, 1, T.FLOAT16),
        (4, 16, 1, T.BFLOAT16),
        (10, 8, 1, T.FLOAT8_E4M3),
        (12, 8, 1, T.FLOAT8_E5M2),
        (0, 32, 1, T.INT32),
        (1, 8, 1, T.UINT8),
        (17, 4, 2, T.FLOAT4_E2M1X2),
    ],
)
def test_dlpack_dtypes(code, bits, lanes, dtype):
    obj = FakeDLPack((16, 32), code, bits, lanes, ptr=0x40000)
    info = T.describe(obj, "x", cu_stream=0)
    assert info.dtype == dtype
    assert (info.ptr, info.shape, info.strides, info.device) == (0x40000, (16, 32), (32, 1), 0)
    assert roundtrip(info) == (0x40000, dtype, (16, 32), (32, 1))


def test_dlpack_strides_offset_device_and_stream():
    # A transposed view with explicit element strides, a byte offset and device 1.
    obj = FakeDLPack((8, 4), 4, 16, strides=(1, 8), ptr=0x50000, byte_offset=64, device_id=1)
    info = T.describe(obj, "b", cu_stream=0xABC0)
    assert info.ptr == 0x50000 + 64
    assert info.strides == (1, 8)
    assert info.device == 1
    assert obj.calls == [0xABC0]  # the consumer stream was handed to the producer
    # The legacy default stream is 1 in DLPack's convention (0 is not allowed).
    T.describe(obj, "b", cu_stream=0)
    assert obj.calls[-1] == 1


def test_dlpack_capsule_is_not_consumed_and_is_kept_alive():
    obj = FakeDLPack((4, 4), 2, 32)
    info = T.describe(obj, "x", cu_stream=0)
    assert info.keepalive is obj.capsules[-1]
    assert capsule_name(info.keepalive) == b"dltensor"


def test_dlpack_versioned_capsule_and_readonly_flag():
    obj = FakeDLPack((4, 8), 2, 32, versioned=True, flags=1)
    info = T.describe(obj, "x", cu_stream=0)
    assert info.readonly and info.shape == (4, 8) and info.dtype == T.FLOAT32


def test_dlpack_rejections():
    with pytest.raises(dg.InvalidArgument, match="not CUDA"):
        T.describe(FakeDLPack((4,), 2, 32, device_type=1), "x", cu_stream=0)
    with pytest.raises(dg.InvalidArgument, match="no libdg equivalent"):
        T.describe(FakeDLPack((4,), 5, 64), "x", cu_stream=0)  # complex64
    with pytest.raises(dg.InvalidArgument, match="already consumed"):
        T.describe(FakeDLPack((4,), 2, 32, capsule_name=b"used_dltensor"), "x", cu_stream=0)
    with pytest.raises(dg.InvalidArgument, match="only for packed FP4"):
        T.describe(FakeDLPack((4,), 0, 8), "x", cu_stream=0)
    assert T.describe(FakeDLPack((4,), 0, 8), "a", T.ROLE_FP4, cu_stream=0).dtype == T.FLOAT4_E2M1X2


def test_read_capsule_directly():
    obj = FakeDLPack((2, 3), 2, 32, ptr=0x60000)
    cap = obj.__dlpack__()
    info = T.read_dlpack_capsule(cap, "x")
    assert info.shape == (2, 3) and info.ptr == 0x60000
    with pytest.raises(dg.InvalidArgument, match="not a capsule"):
        T.read_dlpack_capsule(object(), "x")


# --- streams --------------------------------------------------------------------------------


class _TorchLikeStream:
    cuda_stream = 0x1234


class _CupyLikeStream:
    ptr = 0x5678


class _ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0x9ABC)


def test_stream_argument_forms():
    assert cu_stream_handle(None) == 0
    assert cu_stream_handle(0) == 0
    assert cu_stream_handle(0xDEAD) == 0xDEAD
    assert cu_stream_handle(ctypes.c_void_p(0xBEEF)) == 0xBEEF
    assert cu_stream_handle(ctypes.c_void_p()) == 0
    assert cu_stream_handle(_TorchLikeStream()) == 0x1234
    assert cu_stream_handle(_CupyLikeStream()) == 0x5678
    assert cu_stream_handle(_ProtocolStream()) == 0x9ABC
    with pytest.raises(dg.InvalidArgument):
        cu_stream_handle(-1)
    with pytest.raises(dg.InvalidArgument):
        cu_stream_handle(object())
    with pytest.raises(dg.InvalidArgument):
        cu_stream_handle(True)
