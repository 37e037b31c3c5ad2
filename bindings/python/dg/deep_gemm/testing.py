"""A few of DeepGEMM's test helpers (``deep_gemm.testing``)."""

from __future__ import annotations

import functools
from typing import Any, Callable


def calc_diff(x: Any, y: Any) -> float:
    """``1 - cos_sim``-like discrepancy DeepGEMM's tests bound: ``1 - 2<x,y> / (|x|^2 + |y|^2)`` in FP64."""
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    if float(denom) == 0.0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / denom)


def count_bytes(*tensors: Any) -> int:
    """Bytes of every tensor in the (nested tuples/lists of) arguments; None counts nothing."""
    total = 0
    for t in tensors:
        if isinstance(t, (tuple, list)):
            total += count_bytes(*t)
        elif t is not None:
            total += t.numel() * t.element_size()
    return total


def get_arch_major() -> int:
    """The compute capability major of the current device."""
    import torch

    return torch.cuda.get_device_capability()[0]


def test_filter(condition: Callable[[], bool]) -> Callable:
    """Runs the decorated test only when ``condition()`` holds."""
    def decorator(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if condition():
                return fn(*args, **kwargs)
            return None
        return wrapper
    return decorator


def bench(fn: Callable[[], Any], num_warmups: int = 5, num_tests: int = 10) -> float:
    """Mean seconds per call of ``fn`` over ``num_tests`` runs (CUDA events on the current stream)."""
    import torch

    for _ in range(num_warmups):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(num_tests):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1e3 / num_tests
