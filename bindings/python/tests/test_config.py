"""Process-wide settings, dg.Config and its bounds, logging."""

import os
import subprocess
import sys

import pytest

import dg


@pytest.fixture
def restore_globals():
    level = dg.get_log_level()
    yield
    dg.set_num_sms(0)
    dg.set_tc_util(0)
    dg.set_log_level(level)
    dg.set_log_callback(None)


def test_num_sms_roundtrip(restore_globals):
    dg.set_num_sms(100)
    assert dg.get_num_sms() == 100
    dg.set_num_sms(0)  # reset: all SMs of device 0; without a device, nothing to count
    try:
        assert dg.get_num_sms() > 0
    except dg.NoDevice as e:
        assert e.status == 3 and "get_num_sms" in str(e) or "dg_device_count" in str(e)


@pytest.mark.parametrize("bad", [-1, 1025, 2**31 - 1])
def test_num_sms_bounds(restore_globals, bad):
    dg.set_num_sms(8)
    with pytest.raises(dg.InvalidArgument) as info:
        dg.set_num_sms(bad)
    assert str(bad) in str(info.value)
    assert dg.get_num_sms() == 8  # unchanged by the rejected call


def test_num_sms_outside_int32_is_rejected_in_python(restore_globals):
    with pytest.raises(dg.InvalidArgument, match="int32"):
        dg.set_num_sms(2**40)
    with pytest.raises(dg.InvalidArgument):
        dg.set_num_sms("many")


def test_tc_util_roundtrip(restore_globals):
    dg.set_tc_util(0.5)
    assert dg.get_tc_util() == pytest.approx(0.5)
    dg.set_tc_util(1.0)
    assert dg.get_tc_util() == pytest.approx(1.0)
    dg.set_tc_util(0)  # reset to 1
    assert dg.get_tc_util() == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_tc_util_bounds(restore_globals, bad):
    with pytest.raises(dg.InvalidArgument):
        dg.set_tc_util(bad)


def test_config_settings_and_bounds():
    cfg = dg.Config()
    lo, hi = dg.Config.bounds("num_sms")
    assert (lo, hi) == (0, 1024)
    assert dg.Config.bounds(dg.Config.TC_UTIL) == (1, 100)
    cfg.num_sms = 66
    assert cfg.num_sms == 66
    cfg.tc_util = 80
    assert cfg.tc_util == 80
    cfg.pdl = True
    assert cfg.pdl is True
    cfg.compiler = "nvcc"
    assert cfg.compiler == dg.Config.COMPILER_NVCC
    cfg.print_configs = 1
    assert cfg.print_configs is True
    with pytest.raises(dg.InvalidArgument) as info:
        cfg.num_sms = hi + 1
    assert str(hi + 1) in str(info.value)
    assert cfg.num_sms == 66
    with pytest.raises(dg.InvalidArgument):
        cfg.tc_util = 0
    with pytest.raises(AttributeError):
        cfg.no_such_setting = 1
    with pytest.raises(AttributeError):
        cfg.no_such_setting


def test_config_cache_dir_and_clone(tmp_path):
    cfg = dg.Config(cache_dir=str(tmp_path), num_sms=12)
    assert cfg.cache_dir == str(tmp_path)
    other = cfg.clone()
    other.num_sms = 20
    other.cache_dir = ""
    assert cfg.num_sms == 12 and other.num_sms == 20
    assert cfg.cache_dir == str(tmp_path) and other.cache_dir == ""
    assert "num_sms=12" in repr(cfg)


def test_config_defaults_come_from_the_environment(tmp_path):
    code = "import dg; c = dg.Config(); print(c.num_sms, c.pdl, c.cache_dir)"
    env = dict(os.environ, DG_NUM_SMS="24", DG_PDL="1", DG_JIT_CACHE_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(dg.__file__))) + os.pathsep + env.get("PYTHONPATH", "")
    if os.path.isfile(dg.library_path()):
        env["DG_LIBRARY_PATH"] = dg.library_path()
    r = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().split() == ["24", "True", str(tmp_path)]


def test_log_level(restore_globals):
    dg.set_log_level("debug")
    assert dg.get_log_level() == 1
    dg.set_log_level(dg.LOG_LEVELS["error"])
    assert dg.get_log_level() == 4
    with pytest.raises(dg.InvalidArgument):
        dg.set_log_level("loud")
    with pytest.raises(dg.InvalidArgument):
        dg.set_log_level(99)


def test_log_callback_receives_messages(restore_globals):
    seen = []
    dg.set_log_callback(lambda level, msg: seen.append((level, msg)))
    dg.set_log_level("trace")
    with pytest.raises(dg.InvalidArgument):
        dg.get_tma_aligned_size(5, 3)  # failures are logged at debug level
    dg.set_log_callback(None)
    assert seen, "no log message reached the callback"
    assert all(isinstance(l, int) and isinstance(m, str) for l, m in seen)
