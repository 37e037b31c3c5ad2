"""``dg.tune`` without a GPU: the list is read from a file or taken as text, the arguments reach
``dg_tune`` (its errors name the line or option), the offline stream is refused, no table is
written and the progress callback is not called on an error. The GPU run is tests/gpu/test_tune.cpp."""

import os

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
