"""DeepGEMM's process-wide settings over libdg's (SM count, tensor-core utilisation, PDL) and the
heuristic knobs libdg does not need (compile dims, block-size multiples), kept so that callers can
set and read them back."""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple, Union

from .. import _core, _stream
from ..errors import InvalidArgument, Unsupported

# Rows (M-grouped) or K (K-grouped) each group is aligned to in contiguous layouts on SM90.
SM90_MK_ALIGNMENT = 128
_PERCENT = 100

_state: Dict[str, Any] = {
    "pdl": False,
    "ignore_compile_dims": False,
    "block_size_multiple_of": (1, 1),
    "mk_alignment": SM90_MK_ALIGNMENT,
}
_pdl_lock = threading.Lock()
_pdl_config: Optional[Any] = None
_pdl_streams: Dict[Tuple[int, int], Any] = {}


def set_num_sms(new_num_sms: int) -> None:
    """Caps the SMs every kernel may use (process-wide); 0 restores all SMs."""
    _core.set_num_sms(new_num_sms)


def get_num_sms() -> int:
    """The SM cap, else the SM count of device 0."""
    return _core.get_num_sms()


def set_tc_util(new_tc_util: int) -> None:
    """Tensor-core utilisation target in percent, 0..100 (0 = 100), as DeepGEMM takes it."""
    value = int(new_tc_util)
    if not 0 <= value <= _PERCENT:
        raise InvalidArgument("new_tc_util: %d is out of range (expected 0..100 percent)" % value)
    _core.set_tc_util(value / float(_PERCENT))


def get_tc_util() -> int:
    """The tensor-core utilisation target in percent (100 when unset)."""
    return int(round(_core.get_tc_util() * _PERCENT))


def set_pdl(new_enable_pdl: bool) -> None:
    """Launches the kernels of this module with Programmatic Dependent Launch (or not)."""
    _state["pdl"] = bool(new_enable_pdl)


def get_pdl() -> bool:
    """Whether :func:`set_pdl` turned PDL on (``DG_PDL`` in the environment also turns it on for
    every libdg call)."""
    return bool(_state["pdl"])


def set_ignore_compile_dims(new_value: bool) -> None:
    """Accepted and recorded: libdg's kernels never bake problem sizes in, so there is nothing to
    ignore."""
    _state["ignore_compile_dims"] = bool(new_value)


def set_block_size_multiple_of(new_value: Union[int, Tuple[int, int]]) -> None:
    """Accepted and recorded (``int`` or ``(m, n)``, each >= 1), without effect: on SM90 DeepGEMM
    restricts its GEMM heuristic's BLOCK_N to multiples of lcm(16, n) with it (a speed knob; the
    results do not depend on it); libdg's heuristic picks its blocks without it."""
    pair = (new_value, new_value) if isinstance(new_value, int) else tuple(new_value)
    if len(pair) != 2 or any(int(x) < 1 for x in pair):
        raise InvalidArgument("new_value: %r (expected an int >= 1 or a pair of them)" % (new_value,))
    _state["block_size_multiple_of"] = (int(pair[0]), int(pair[1]))


def set_mk_alignment_for_contiguous_layout(new_value: int) -> None:
    """The alignment the caller pads groups to in contiguous layouts (read back by
    :func:`get_mk_alignment_for_contiguous_layout`). libdg's SM90 kernels need multiples of 128; a
    larger multiple of 128 is accepted (groups so aligned are 128-aligned), and the kernels' BLOCK_M
    stays libdg's choice (DeepGEMM uses the value as BLOCK_M of its M-grouped contiguous GEMMs)."""
    value = int(new_value)
    if value <= 0 or value % SM90_MK_ALIGNMENT != 0:
        raise Unsupported("new_value: %d; libdg's SM90 grouped GEMMs need a multiple of %d"
                          % (value, SM90_MK_ALIGNMENT))
    _state["mk_alignment"] = value


def get_mk_alignment_for_contiguous_layout() -> int:
    """The alignment set with :func:`set_mk_alignment_for_contiguous_layout` (default 128)."""
    return int(_state["mk_alignment"])


def get_theoretical_mk_alignment_for_contiguous_layout(expected_m: Optional[int] = None) -> int:
    """The smallest alignment the kernels accept: 128 on SM90 whatever ``expected_m`` is (DeepGEMM
    lowers it only on SM100)."""
    del expected_m
    return SM90_MK_ALIGNMENT


def _device_of(x: Any) -> Optional[int]:
    if isinstance(x, tuple):
        x = x[0]
    dev = getattr(x, "device", None)
    index = getattr(dev, "index", None)
    return index if isinstance(index, int) else None


def call_stream(like: Any) -> Any:
    """The ``stream=`` for a call whose first operand is ``like``: None (torch's current stream,
    process-wide settings) unless PDL is on, then a cached ``dg.Stream`` on torch's current stream
    whose config has PDL."""
    global _pdl_config
    if not _state["pdl"]:
        return None
    current = _stream._torch_current_stream(_device_of(like))
    if current is None:
        raise InvalidArgument("set_pdl(True): the calls run on torch's current stream; torch has not initialised CUDA")
    with _pdl_lock:
        s = _pdl_streams.get(current)
        if s is None:
            if _pdl_config is None:
                _pdl_config = _core.Config(pdl=True)
            s = _stream.Stream(current[0], current[1], config=_pdl_config)
            _pdl_streams[current] = s
    return s
