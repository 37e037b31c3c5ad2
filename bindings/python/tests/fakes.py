"""Fake device tensors for CPU tests: __cuda_array_interface__ objects and hand-built DLPack
capsules (the pointers are never dereferenced by these tests)."""

import ctypes

from dg._tensor import DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor

_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_PyCapsule_GetName = ctypes.pythonapi.PyCapsule_GetName
_PyCapsule_GetName.restype = ctypes.c_char_p
_PyCapsule_GetName.argtypes = [ctypes.py_object]

_ITEMSIZE = {"f4": 4, "f2": 2, "i4": 4, "u1": 1, "i1": 1, "V2": 2, "f8": 8}


def contiguous_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


class FakeCAI:
    """An object exposing only __cuda_array_interface__ (strides given in elements here and
    converted to bytes, as producers publish them)."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=0x10000, version=3, readonly=False, byte_strides=None):
        item = _ITEMSIZE[typestr.lstrip("<>|=")]
        d = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, readonly), "version": version}
        if byte_strides is not None:
            d["strides"] = tuple(byte_strides)
        elif strides is not None:
            d["strides"] = tuple(s * item for s in strides)
        else:
            d["strides"] = None
        self.__cuda_array_interface__ = d


class FakeDLPack:
    """An object exposing __dlpack__ / __dlpack_device__ over a DLManagedTensor built with ctypes.

    The capsule has no destructor (nothing to free); `calls` records the stream argument."""

    def __init__(self, shape, code, bits, lanes=1, strides=None, ptr=0x20000, device_type=2, device_id=0,
                 byte_offset=0, versioned=False, flags=0, capsule_name=None):
        self.ndim = len(shape)
        self._shape = (ctypes.c_int64 * max(self.ndim, 1))(*shape)
        self._strides = (ctypes.c_int64 * max(self.ndim, 1))(*strides) if strides is not None else None
        t = DLTensor()
        t.data = ptr
        t.device = DLDevice(device_type, device_id)
        t.ndim = self.ndim
        t.dtype = DLDataType(code, bits, lanes)
        t.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        t.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64)) if strides is not None else None
        t.byte_offset = byte_offset
        if versioned:
            self._managed = DLManagedTensorVersioned()
            self._managed.version = DLPackVersion(1, 0)
            self._managed.flags = flags
            self._managed.dl_tensor = t
            name = b"dltensor_versioned"
        else:
            self._managed = DLManagedTensor()
            self._managed.dl_tensor = t
            name = b"dltensor"
        self._name = capsule_name or name
        self.device = (device_type, device_id)
        self.calls = []
        self.capsules = []

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        cap = _PyCapsule_New(ctypes.addressof(self._managed), self._name, None)
        self.capsules.append(cap)
        return cap

    def __dlpack_device__(self):
        return self.device


def capsule_name(cap):
    return _PyCapsule_GetName(cap)
