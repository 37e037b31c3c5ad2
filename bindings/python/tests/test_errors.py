"""Status -> exception mapping, and libdg's messages reaching Python."""

import threading

import pytest

import dg
from dg import _lib, errors

EXPECTED = {
    1: (dg.InvalidArgument, "DG_ERROR_INVALID_ARGUMENT"),
    2: (dg.Unsupported, "DG_ERROR_UNSUPPORTED"),
    3: (dg.NoDevice, "DG_ERROR_NO_DEVICE"),
    4: (dg.CudaError, "DG_ERROR_CUDA"),
    5: (dg.CompileError, "DG_ERROR_COMPILE"),
    6: (dg.OutOfMemory, "DG_ERROR_OUT_OF_MEMORY"),
    7: (dg.InternalError, "DG_ERROR_INTERNAL"),
}


@pytest.mark.parametrize("status", sorted(EXPECTED))
def test_each_status_maps_to_its_class(status):
    cls, name = EXPECTED[status]
    assert dg.exception_for_status(status) is cls
    assert issubclass(cls, dg.Error)
    # The binding's names agree with the library's static names.
    assert dg.status_string(status) == name
    exc = errors.error_from_status(status, "the message", "dg_something")
    assert type(exc) is cls
    assert exc.status == status
    assert exc.status_name == name
    assert str(exc) == "dg_something: the message"
    assert exc.message == "dg_something: the message"


def test_unknown_status_is_a_plain_error():
    assert dg.exception_for_status(99) is dg.Error
    exc = errors.error_from_status(99, "", None)
    assert type(exc) is dg.Error and exc.status == 99
    assert exc.status_name == "DG_UNKNOWN_STATUS"
    assert dg.status_string(99) == "DG_UNKNOWN_STATUS"
    assert dg.status_string(0) == "DG_SUCCESS"


def test_python_exception_hierarchy():
    assert issubclass(dg.InvalidArgument, ValueError)
    assert issubclass(dg.Unsupported, NotImplementedError)
    assert issubclass(dg.OutOfMemory, MemoryError)
    assert issubclass(dg.Error, RuntimeError)
    assert issubclass(dg.LibraryNotFoundError, ImportError)


def test_check_raises_with_last_error():
    lib = _lib.get()
    lib.check(0, "x")  # success: no exception
    with pytest.raises(dg.InvalidArgument) as info:
        dg.get_tma_aligned_size(5, 3)
    msg = str(info.value)
    assert msg.startswith("dg_get_tma_aligned_size: ")
    assert len(msg) > len("dg_get_tma_aligned_size: ")
    assert "3" in msg  # names the value it rejected
    assert info.value.status == 1


@pytest.mark.parametrize("x,size,expected", [(5, 4, 8), (5, 2, 8), (5, 1, 16), (16, 1, 16), (0, 4, 0), (4097, 4, 4100), (7, 16, 7)])
def test_get_tma_aligned_size(x, size, expected):
    assert dg.get_tma_aligned_size(x, size) == expected


@pytest.mark.parametrize("size", [3, 5, 32])
def test_get_tma_aligned_size_rejects_sizes_that_do_not_divide_16(size):
    with pytest.raises(dg.InvalidArgument, match="element_size|16"):
        dg.get_tma_aligned_size(5, size)


def test_mk_alignment():
    assert dg.get_mk_alignment_for_contiguous_layout() == 128


def test_last_error_is_per_thread():
    results = {}
    barrier = threading.Barrier(2)

    def worker(size):
        barrier.wait()
        for _ in range(200):
            try:
                dg.get_tma_aligned_size(5, size)
            except dg.InvalidArgument as e:
                results.setdefault(size, set()).add(str(e))

    threads = [threading.Thread(target=worker, args=(s,)) for s in (3, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Each thread only ever saw its own message.
    assert len(results[3]) == 1 and len(results[5]) == 1
    assert results[3] != results[5]
