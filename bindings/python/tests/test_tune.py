"""``dg.tune`` without a GPU: the list is read from a file or taken as text, the arguments reach
``dg_tune`` (its errors name the line or option), the offline stream is refused, no table is
written and the progress callback is not called on an error. The GPU run is tests/gpu/test_tune.cpp."""

import os
import subprocess
import sys

import pytest

import dg

LIST = "dense fp8 nt n=7168 k=2048 m=128,4096\nmasked fp8 n=4096 k=7168 g=32 m=8\n"


def _offline(table):
    return dg.Stream.offline((9, 0), 132, config=dg.Config(tuning_table=str(table)))


def test_config_tuning_table_round_trip(tmp_path):
    cfg = dg.Config(tuning_table=str(tmp_path / "t.txt"))
    assert cfg.tuning_table == str(tmp_path / "t.txt")
    cfg.tuning_table = "off"
    assert cfg.tuning_table == "off"
    assert dg.Config.TUNING_TABLE == 8


def test_offline_stream_is_refused_and_nothing_is_written(tmp_path):
    table = tmp_path / "table.txt"
    calls = []
    with pytest.raises(dg.NoDevice, match="offline"):
        dg.tune(LIST, stream=_offline(table), progress=lambda *a: calls.append(a))
    listed = tmp_path / "list.txt"
    listed.write_text(LIST)
    with pytest.raises(dg.NoDevice):
        dg.tune(listed, table, stream=_offline(table), candidates=2, repetitions=3)
    with pytest.raises(dg.NoDevice):
        dg.tune(str(listed), stream=_offline(table))
    assert not table.exists() and calls == []


def test_errors_name_the_line_and_the_option(tmp_path):
    stream = _offline(tmp_path / "table.txt")
    with pytest.raises(dg.InvalidArgument, match="problems: line 2"):
        dg.tune("dense fp8 nt n=7168 k=2048 m=128\ndense fp8 nt n=7168 m=1\n", stream=stream)
    with pytest.raises(dg.InvalidArgument, match="options.candidates: 17"):
        dg.tune(LIST, stream=stream, candidates=17)
    with pytest.raises(dg.InvalidArgument, match="options.repetitions: 101"):
        dg.tune(LIST, stream=stream, repetitions=101)
    with pytest.raises(dg.InvalidArgument, match="options.table_path"):
        dg.tune(LIST, stream=_offline("off"))
    with pytest.raises(dg.InvalidArgument, match="problems"):
        dg.tune(42, stream=stream)
    assert not os.path.exists(tmp_path / "table.txt")


def test_committed_lists_are_read_from_files():
    here = os.path.dirname(os.path.abspath(__file__))
    lists = os.path.join(here, "..", "..", "..", "tools", "problems")
    if not os.path.isdir(lists):
        pytest.skip("not running from the source tree (no tools/problems)")
    for name in ("deepseek-v3.txt", "llama-70b.txt", "llama-8b.txt"):
        with pytest.raises(dg.NoDevice):  # parsed, then refused on the offline stream
            dg.tune(os.path.join(lists, name), stream=_offline("/nonexistent/table.txt"))


def test_a_missing_list_file_is_named(tmp_path):
    stream = _offline(tmp_path / "table.txt")
    for missing in (str(tmp_path / "absent.txt"), "absent.txt", tmp_path / "absent"):
        with pytest.raises(FileNotFoundError, match="absent"):
            dg.tune(missing, stream=stream)
    assert not os.path.exists(tmp_path / "table.txt")


def test_named_offline_stream_prepares_and_is_refused_by_tune(tmp_path):
    """An offline stream named for a GPU (dg_stream_create_offline_named) prepares kernels as that
    GPU's calls choose them; dg_tune still needs a GPU; a bad name is refused naming gpu_name."""
    cfg = dg.Config(tuning_table=str(tmp_path / "t.txt"), cache_dir=str(tmp_path / "cache"))
    stream = dg.Stream.offline((9, 0), 132, config=cfg, gpu_name="NVIDIA H200")
    dg.gemm_prepare("bfloat16", "nt", 128, 256, 256, "bfloat16", stream=stream)
    with pytest.raises(dg.NoDevice, match="NVIDIA H200 is an offline description"):
        dg.tune(LIST, stream=stream)
    for bad in ("", " H200", "NVIDIA\tH200", "NVIDIA H200\u00e9", "A" * 256):
        with pytest.raises(dg.InvalidArgument, match="gpu_name"):
            dg.Stream.offline((9, 0), 132, gpu_name=bad)
    with pytest.raises(ValueError, match="NUL"):
        dg.Stream.offline((9, 0), 132, gpu_name="NVIDIA\0H200")
    with pytest.raises(TypeError, match="gpu_name"):
        dg.Stream.offline((9, 0), 132, gpu_name=b"NVIDIA H200")


def test_prepare_problems_fills_the_cache_for_a_named_gpu(tmp_path):
    """dg.prepare_problems on an offline stream named for a GPU compiles the list's kernels into
    the config's cache, times nothing and writes no table; the wheel's dg-tune --prepare --offline
    does the same from the command line."""
    from dg._tune import main

    cache, table = tmp_path / "cache", tmp_path / "table.txt"
    cfg = dg.Config(tuning_table=str(table), cache_dir=str(cache))
    stream = dg.Stream.offline((9, 0), 132, config=cfg, gpu_name="NVIDIA H200")
    assert dg.prepare_problems("dense bf16 nt n=256 k=512 m=16,32\n", stream=stream) == 2
    assert list((cache / "libdg").glob("*.cubin")) and not table.exists()
    with pytest.raises(dg.InvalidArgument, match="line 1"):
        dg.prepare_problems("dense bf16 nt n=256\n", stream=stream)
    listed = tmp_path / "list.txt"
    listed.write_text("dense bf16 nt n=512 k=512 m=16\n")
    # A child process: the JIT cache directory is read from the environment once per process.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(dg.__file__)))
    env = dict(os.environ, DG_JIT_CACHE_DIR=str(tmp_path / "cli-cache"),
               PYTHONPATH=os.pathsep.join([package_root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    run = subprocess.run([sys.executable, "-m", "dg", "tune", "--prepare", "--offline", "NVIDIA H200", str(listed)],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "prepared the kernels of 1 problems" in run.stderr
    assert list((tmp_path / "cli-cache" / "libdg").glob("*.cubin"))
    with pytest.raises(SystemExit):
        main(["--offline", "NVIDIA H200", str(listed)])
