"""The cuBLASLt baseline GEMMs (``cublaslt_gemm_*``) with DeepGEMM's per-stream workspace."""

from __future__ import annotations

import sys
import threading
from ctypes import byref
from typing import Any, Callable, Dict, Optional, Tuple

from . import _lib
from ._lib import CublasltOptions
from ._tensor import Descriptors, TensorInfo, describe
from ._arguments import StreamLike, Tensor, _SHAPES, _nbytes, _prepare_call, _writable
from ._gemm import _GEMM_ARGS_DOC


_workspace_lock = threading.Lock()
_workspaces: Dict[Tuple[int, int], Any] = {}


def cublaslt_available() -> bool:
    """Whether libdg can load cuBLASLt (``dg_cublaslt_available``)."""
    lib = _lib.get()
    if not lib.has("dg_cublaslt_available"):
        return False
    return lib.fn("dg_cublaslt_available")() == 0


def _cublaslt_workspace(like: Optional[TensorInfo], device: int, cu_stream: int) -> Tuple[Optional[int], int]:
    """A per-(device, stream) torch workspace of dg_cublaslt_workspace_size() bytes, as DeepGEMM
    keeps one; none when the operands are not torch tensors."""
    if like is None or not like.is_torch:
        return None, 0
    key = (device, cu_stream)
    ws = _workspaces.get(key)
    if ws is None:
        with _workspace_lock:
            ws = _workspaces.get(key)
            if ws is None:
                size = int(_lib.get().fn("dg_cublaslt_workspace_size")())
                torch = sys.modules["torch"]
                ws = torch.empty(max(size, 256), dtype=torch.uint8, device=like.source.device)
                _workspaces[key] = ws
    return ws.data_ptr(), ws.numel()


def _cublaslt_gemm(
    layout: str, a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor], alpha: float, beta: float, workspace: Any, stream: StreamLike
) -> None:
    lib = _lib.get()
    name = "dg_cublaslt_gemm_%s" % layout
    fn = lib.fn(name)
    handle, dev, cu, (ia, ib, idd, ic) = _prepare_call([(a, "a", None), (b, "b", None), (d, "d", None), (c, "c", None)], stream)
    _writable(idd, "d")
    if workspace is None:
        ws_ptr, ws_size = _cublaslt_workspace(ia, dev, cu)
    elif workspace is False:
        ws_ptr, ws_size = None, 0
    else:
        iw = describe(workspace, "workspace")
        ws_ptr = iw.ptr
        ws_size = _nbytes(iw)
    opts = CublasltOptions(alpha=float(alpha), beta=float(beta), workspace=ws_ptr, workspace_size=ws_size)
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(ic), byref(opts))
        lib.check(status, name)


def _make_cublaslt(layout: str) -> Callable[..., None]:
    def gemm(
        a: Tensor,
        b: Tensor,
        d: Tensor,
        c: Optional[Tensor] = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        workspace: Any = None,
        stream: StreamLike = None,
    ) -> None:
        _cublaslt_gemm(layout, a, b, d, c, alpha, beta, workspace, stream)

    sa, sb, op = _SHAPES[layout]
    gemm.__name__ = gemm.__qualname__ = "cublaslt_gemm_%s" % layout
    gemm.__doc__ = (
        "cuBLASLt GEMM (the baseline libdg is timed against): ``D = alpha * (%s) + beta * C``.\n\n"
        "Args:\n"
        "    a: ``%s``, bfloat16, or float8_e4m3fn used raw (no scales; FP8 needs the nt layout, K-major).\n"
        "    b: ``%s``, same dtype as ``a``.\n" % (op, sa, sb)
    ) + _GEMM_ARGS_DOC + (
        "    workspace: device scratch for split-K algorithms (a contiguous tensor). Default: for torch\n"
        "       operands a cached per-stream buffer of ``dg_cublaslt_workspace_size()`` bytes (32 MiB, as\n"
        "       DeepGEMM); ``False`` for none.\n"
        "Raises:\n    dg.Unsupported when cuBLASLt cannot be loaded (the message says why).\n"
    )
    return gemm


cublaslt_gemm_nt = _make_cublaslt("nt")
cublaslt_gemm_nn = _make_cublaslt("nn")
cublaslt_gemm_tn = _make_cublaslt("tn")
cublaslt_gemm_tt = _make_cublaslt("tt")
