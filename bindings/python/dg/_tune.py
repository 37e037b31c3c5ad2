"""``dg.tune``: per-GPU tuning of the GEMM kernel configs (``dg_tune``; docs/tuning.md).

For each problem of a problem list, the heuristic's best-ranked configs are timed on the GPU and
the fastest is written into the tuning table that later GEMM calls consult (by default the GPU's
table beside the JIT cache). Also the ``dg-tune`` command of the wheel, as ``python -m dg tune``.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, Callable, Optional, Union

from . import _lib, _stream
from ._arguments import StreamLike, _int32
from ._declarations import dg_tune_options, dg_tune_progress
from .errors import InvalidArgument

ProgressCallback = Callable[[int, int, str], None]


def _list_text(problems: Union[str, "os.PathLike[str]"]) -> bytes:
    """The list's text: a path-like or the name of an existing file is read, a one-line string that
    looks like a path but names no file is refused, other strings are the list itself."""
    one_line = isinstance(problems, str) and "\n" not in problems
    if isinstance(problems, os.PathLike) or (one_line and os.path.isfile(problems)):
        with open(os.fspath(problems), "rb") as f:
            return f.read()
    if one_line and (os.sep in problems or problems.endswith(".txt")):
        # No problem line holds a path separator: this names a file that is not there.
        raise FileNotFoundError("problems: no such problem-list file: %r" % problems)
    if isinstance(problems, str):
        return problems.encode()
    raise InvalidArgument("problems: %r (expected a problem-list file path or its text)" % (problems,))


def tune(
    problems: Union[str, "os.PathLike[str]"],
    table_path: Optional[Union[str, "os.PathLike[str]"]] = None,
    *,
    stream: StreamLike = None,
    device: Optional[int] = None,
    candidates: int = 0,
    repetitions: int = 0,
    replace: bool = False,
    progress: Optional[ProgressCallback] = None,
) -> int:
    """Tunes the GEMM problems of a problem list on the stream's GPU and writes the tuning table.

    Args:
        problems: a problem-list file (path) or its text, e.g.
            ``"dense fp8 nt n=24576 k=1536 m=128,4096\\nmasked fp8 n=4096 k=7168 g=32 m=8,64"``.
        table_path: the table to write; ``None``: the stream's (``DG_TUNING_TABLE`` or the
            :class:`Config`'s ``tuning_table``, else beside the JIT cache).
        stream, device: where to time (as for the GEMMs: torch's current stream by default). The
            stream must not cap the SMs.
        candidates: configs timed per problem, 1..16 (0: 4).
        repetitions: timed runs of each config, 1..100 (0: 7).
        replace: write only this list's problems (default: keep the table's others).
        progress: ``progress(done, total, line)`` after each problem (exceptions are printed and
            swallowed); ``None``: libdg logs each line at info level.

    Returns:
        The number of problems tuned.
    """
    lib = _lib.get()
    text = _list_text(problems)
    handle, _dev, _cu = _stream.resolve(stream, device)
    opts = dg_tune_options(candidates=_int32(candidates, "candidates"), repetitions=_int32(repetitions, "repetitions"),
                           replace=1 if replace else 0)
    path = os.fsencode(table_path) if table_path is not None else None
    opts.table_path = path
    ref: Any = None
    if progress is not None:
        def trampoline(done: int, total: int, line: bytes, _user: Any) -> None:
            try:
                progress(int(done), int(total), line.decode("utf-8", errors="replace") if line else "")
            except Exception:  # never let an exception unwind into C
                import traceback

                traceback.print_exc()

        ref = dg_tune_progress(trampoline)
        opts.progress = ref
    tuned = ctypes.c_int64(0)
    lib.call("dg_tune", handle, text, ctypes.byref(opts), ctypes.byref(tuned))
    del ref  # the callback was only used during the call
    return int(tuned.value)


def prepare_problems(problems: Union[str, "os.PathLike[str]"], *, stream: StreamLike = None,
                     device: Optional[int] = None) -> int:
    """Compiles into the JIT cache (on a GPU stream also loads) the kernels the calls of every
    problem of a problem list run with default options: the stream's tuning table's config for a
    tuned problem, else the heuristic's (``dg_prepare_problems``). Nothing is timed.

    With ``stream=dg.Stream.offline((9, 0), 132, config=..., gpu_name="NVIDIA H200")`` this warms a
    cache for that GPU on a machine without one (the config's ``tuning_table`` names the GPU's
    table, ``cache_dir`` the cache to fill).

    Returns:
        The number of problems prepared.
    """
    lib = _lib.get()
    text = _list_text(problems)
    handle, _dev, _cu = _stream.resolve(stream, device)
    prepared = ctypes.c_int64(0)
    lib.call("dg_prepare_problems", handle, text, ctypes.byref(prepared))
    return int(prepared.value)


def main(argv: Optional[list] = None) -> int:
    """``dg-tune`` for the wheel: the same options as the C tool (tools/dg_tune.c)."""
    import argparse
    import time

    parser = argparse.ArgumentParser(prog="dg-tune", description=(
        "Times the heuristic's best-ranked kernel configs of each GEMM problem of PROBLEM_LIST on a GPU and "
        "writes the fastest of each into the tuning table libdg's GEMM calls consult (docs/tuning.md)."))
    parser.add_argument("problem_list")
    parser.add_argument("-o", "--output", default=None, help="the table to write (default: the GPU's table)")
    parser.add_argument("-d", "--device", type=int, default=0, help="the CUDA device (default 0)")
    parser.add_argument("-c", "--candidates", type=int, default=0, help="configs timed per problem, 1..16 (default 4)")
    parser.add_argument("-r", "--repetitions", type=int, default=0, help="timed runs of each, 1..100 (default 7)")
    parser.add_argument("--replace", action="store_true", help="write only this list's problems")
    parser.add_argument("--prepare", action="store_true",
                        help="compile the kernels the list's calls run (the table's config, else the heuristic's) "
                             "instead of tuning; -o names the table to read")
    parser.add_argument("--offline", metavar="GPU_NAME", default=None,
                        help="with --prepare: no GPU; compile for this GPU (e.g. 'NVIDIA H200', sm_90)")
    parser.add_argument("--sms", type=int, default=132, help="with --offline: the GPU's SM count (default 132)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--version", action="version", version="dg-tune (libdg) %s" % _lib.get().version())
    args = parser.parse_args(argv)
    if args.offline is not None and not args.prepare:
        parser.error("--offline needs --prepare (tuning times kernels on a GPU)")
    start = time.monotonic()
    if args.prepare:
        from ._core import Config
        from ._stream import Stream

        cfg = Config(tuning_table=os.path.abspath(args.output)) if args.output else None
        s = (Stream.offline((9, 0), args.sms, config=cfg, gpu_name=args.offline) if args.offline is not None
             else Stream(args.device, create=True, config=cfg))
        n = prepare_problems(os.path.abspath(args.problem_list), stream=s)
        if not args.quiet:
            sys.stderr.write("dg-tune: prepared the kernels of %d problems of %s in %.1f s\n"
                             % (n, args.problem_list, time.monotonic() - start))
        return 0

    def show(done: int, total: int, line: str) -> None:
        sys.stderr.write("dg-tune %7.1f s  %s\n" % (time.monotonic() - start, line))

    from ._stream import Stream

    s = Stream(args.device, create=True)
    n = tune(os.path.abspath(args.problem_list), args.output, stream=s, candidates=args.candidates,
             repetitions=args.repetitions, replace=args.replace, progress=None if args.quiet else show)
    if not args.quiet:
        elapsed = time.monotonic() - start
        sys.stderr.write("dg-tune: tuned %d problems of %s in %.1f s\n" % (n, args.problem_list, elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
