"""Library discovery, loading, version, and the symbols this build exports."""

import os
import re
import subprocess
import sys
import warnings

import pytest

import dg
from dg import _lib


def test_loaded_library_is_a_file_or_soname():
    path = dg.library_path()
    assert path
    assert os.path.isfile(path) or path.startswith("libdg.so")


def test_version_strings_agree():
    v = dg.version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", v), v
    major, minor, patch = (int(x) for x in v.split("."))
    assert dg.version_number() == major * 10000 + minor * 100 + patch
    assert major == _lib.ABI_MAJOR
    assert re.fullmatch(r"\d+\.\d+\.\d+", dg.__version__)


def test_package_version_is_the_library_version():
    # One source (include/dg.h): the package (source tree or wheel) and the libdg it loads agree.
    assert dg.__version__ == dg.version() == _lib.package_version()


def test_discovery_error_lists_every_path_tried(tmp_path):
    missing = str(tmp_path / "nowhere" / "libdg.so")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    env = os.pathsep.join([missing, str(empty_dir)])
    with pytest.raises(dg.LibraryNotFoundError) as info:
        _lib.load_library(env_value=env, package_dir=str(pkg), repo_root=str(repo), system=False)
    err = info.value
    assert isinstance(err, ImportError)
    text = str(err)
    # Every place, in order, with its reason.
    paths = [p for p, _ in err.tried]
    assert paths[0] == missing
    assert str(empty_dir) in paths[1]
    assert str(pkg) in paths[2]
    assert str(repo / "build") in paths[3]
    for p, why in err.tried:
        assert p in text and why in text
    assert "no such file or directory" in text
    assert "DG_LIBRARY_PATH" in text


def test_discovery_order_env_package_pkg_config(tmp_path, monkeypatch):
    # DG_LIBRARY_PATH, then the copy inside the package (a wheel's own), then an installed libdg
    # that pkg-config knows: a PKG_CONFIG_PATH naming another libdg does not replace the bundled one.
    real = dg.library_path()
    if not os.path.isfile(real):
        pytest.skip("libdg was loaded by soname, not from a file")
    installed, pkg, pointed, tools = (tmp_path / d for d in ("prefix", "pkg", "pointed", "bin"))
    for d in (installed, pkg, pointed, tools):
        d.mkdir()
        if d is not tools:
            os.symlink(real, str(d / "libdg.so"))
    pkg_config = tools / "pkg-config"
    pkg_config.write_text("#!/bin/sh\necho %s\n" % installed)
    pkg_config.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools) + os.pathsep + os.environ.get("PATH", ""))
    load = lambda env: _lib.load_library(env_value=env, package_dir=str(pkg), repo_root=None, system=True)[1]
    assert load(str(pointed)) == str(pointed / "libdg.so")
    assert load(None) == str(pkg / "libdg.so")
    os.remove(str(pkg / "libdg.so"))
    assert load(None) == str(installed / "libdg.so")


def test_discovery_reports_why_a_file_failed_to_load(tmp_path):
    bogus = tmp_path / "libdg.so"
    bogus.write_bytes(b"this is not an ELF file")
    with pytest.raises(dg.LibraryNotFoundError) as info:
        _lib.load_library(env_value=str(tmp_path), package_dir=None, repo_root=None, system=False)
    (path, why), = info.value.tried
    assert path == str(bogus)
    assert why  # the loader's own words (e.g. "invalid ELF header" / "file too short")
    assert str(bogus) in str(info.value)


def test_a_library_that_is_not_libdg_is_refused():
    lib, why = _lib._try_load("libm.so.6")
    assert lib is None
    assert "not libdg" in why


def _package_copy_without_library(tmp_path):
    """The dg package copied alone (no libdg.so beside it, no source tree above it)."""
    import shutil

    package = os.path.dirname(os.path.abspath(dg.__file__))
    shutil.copytree(package, str(tmp_path / "site" / "dg"), ignore=shutil.ignore_patterns("libdg.so*", "__pycache__"))
    return str(tmp_path / "site")


def test_discovery_system_loader_is_tried(tmp_path):
    # In a fresh process (this one has libdg loaded, so its soname would resolve to that copy), with
    # no DG_LIBRARY_PATH, no bundled library and a pkg-config that knows no dg: import fails and
    # the error names the system loader's attempts.
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "pkg-config").write_text("#!/bin/sh\necho 'Package dg was not found' >&2\nexit 1\n")
    (tools / "pkg-config").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("DG_LIBRARY_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["PYTHONPATH"] = _package_copy_without_library(tmp_path)
    env["PATH"] = str(tools) + os.pathsep + env.get("PATH", "")
    code = (
        "import ctypes.util, sys\n"
        "if ctypes.util.find_library('dg'):\n"
        "    print('installed'); sys.exit(0)\n"
        "try:\n"
        "    import dg\n"
        "except ImportError as e:\n"
        "    print(e); sys.exit(0)\n"
        "print('loaded', dg.library_path()); sys.exit(1)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    out = r.stdout.decode()
    assert r.returncode == 0, out + r.stderr.decode()
    if out.strip() == "installed":
        pytest.skip("libdg is installed where the system loader finds it (ldconfig)")
    assert "could not load libdg" in out
    assert "find_library('dg')" in out
    assert "libdg.so.%d" % _lib.ABI_MAJOR in out
    assert "pkg-config" in out
    assert "package folder: not present" in out


def test_nvrtc_is_loaded_before_libdg():
    # Whichever copy libdg uses is in this process; load_nvrtc reports where it came from.
    origin = _lib.nvrtc_origin()
    if origin is None:
        pytest.skip("NVRTC was found by libdg's own dependency lookup")
    kind, path = origin
    assert kind in ("nvidia-cuda-nvrtc wheel", "system loader", "CUDA toolkit")
    assert path.endswith(_lib.NVRTC_SONAME)
    with open("/proc/self/maps") as maps:
        assert _lib.NVRTC_SONAME in maps.read()


def test_nvrtc_candidates_put_the_wheel_first(tmp_path, monkeypatch):
    wheel_lib = tmp_path / "nvidia" / _lib.NVRTC_WHEEL_DIR
    wheel_lib.mkdir(parents=True)
    (wheel_lib / _lib.NVRTC_SONAME).write_bytes(b"")
    monkeypatch.setattr(_lib, "_nvrtc_wheel_dirs", lambda: [str(wheel_lib)])
    cands = _lib.nvrtc_candidates()
    assert cands[0] == ("nvidia-cuda-nvrtc wheel", str(wheel_lib / _lib.NVRTC_SONAME))
    assert cands[1] == ("system loader", _lib.NVRTC_SONAME)
    assert all(kind == "CUDA toolkit" for kind, _ in cands[2:])


def test_discovery_finds_the_library_in_a_directory_and_as_a_file():
    real = dg.library_path()
    if not os.path.isfile(real):
        pytest.skip("libdg was loaded by soname, not from a file")
    lib, path = _lib.load_library(env_value=os.path.dirname(real), package_dir=None, repo_root=None, system=False)
    assert os.path.dirname(path) == os.path.dirname(real)
    lib, path = _lib.load_library(env_value=real, package_dir=None, repo_root=None, system=False)
    assert path == real


def test_discovery_falls_through_with_a_warning_when_dg_library_path_is_wrong(tmp_path):
    real = dg.library_path()
    if not os.path.isfile(real):
        pytest.skip("libdg was loaded by soname, not from a file")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib, path = _lib.load_library(
            env_value=str(tmp_path / "missing.so"), package_dir=os.path.dirname(real), repo_root=None, system=False
        )
    assert os.path.dirname(path) == os.path.dirname(real)
    assert any("DG_LIBRARY_PATH" in str(w.message) for w in caught)


def test_import_pulls_in_no_third_party_module():
    code = (
        "import sys, dg; "
        "bad = [m for m in ('torch', 'numpy', 'cupy') if m in sys.modules]; "
        "print(dg.version()); sys.exit(1 if bad else 0)"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(dg.__file__))) + os.pathsep + env.get("PYTHONPATH", "")
    if os.path.isfile(dg.library_path()):
        env["DG_LIBRARY_PATH"] = dg.library_path()
    r = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == dg.version()


def test_missing_symbol_raises_unsupported(monkeypatch):
    lib = _lib.get()
    monkeypatch.setitem(lib.functions, "dg_fp8_gemm_nt", None)
    with pytest.raises(dg.Unsupported, match=r"libdg.so has no dg_fp8_gemm_nt"):
        dg.fp8_gemm_nt((object(), object()), (object(), object()), object())
    monkeypatch.setitem(lib.functions, "dg_bf16_gemm_tt", None)
    with pytest.raises(dg.Unsupported, match=r"libdg.so has no dg_bf16_gemm_tt"):
        dg.bf16_gemm_tt(object(), object(), object())
    monkeypatch.setitem(lib.functions, "dg_nvfp4_gemv", None)
    with pytest.raises(dg.Unsupported, match=r"libdg.so has no dg_nvfp4_gemv"):
        dg.nvfp4_gemv(object(), object(), object(), object(), object())


def test_every_bound_prototype_that_exists_has_types():
    lib = _lib.get()
    for name, f in lib.functions.items():
        if f is None:
            continue
        restype, argtypes = _lib.PROTOTYPES[name]
        assert f.argtypes == argtypes, name
    for name in _lib.REQUIRED:
        assert lib.has(name)


def test_available_reports_kernel_symbols():
    av = dg.available()
    assert set(av) >= {"bf16_gemm_nt", "fp8_gemm_nt", "nvfp4_gemv", "cublaslt_gemm_nt", "fp8_mqa_logits",
                       "fp8_paged_mqa_logits"}
    assert all(isinstance(v, bool) for v in av.values())


def _header():
    root = _lib._source_tree_root()
    if root is None:
        pytest.skip("not running from the source tree (no include/dg.h)")
    with open(os.path.join(root, "include", "dg.h")) as f:
        return f.read()


def test_every_function_of_dg_h_is_bound_with_its_arity():
    text = _header()
    decls = re.findall(r"DG_API\s+[^;]*?\b(dg_\w+)\s*\(([^)]*)\)\s*;", text, re.S)
    assert decls
    for name, args in decls:
        assert name in _lib.PROTOTYPES, "%s is declared in dg.h but not bound" % name
        arity = 0 if args.strip() in ("", "void") else len(args.split(","))
        assert arity == len(_lib.PROTOTYPES[name][1]), name
    declared = {n for n, _ in decls}
    assert set(_lib.PROTOTYPES) <= declared, set(_lib.PROTOTYPES) - declared


@pytest.mark.parametrize(
    "c_name,struct",
    [
        ("dg_sf_recipe", _lib.SfRecipe),
        ("dg_gemm_options", _lib.GemmOptions),
        ("dg_nvfp4_gemv_options", _lib.NvFp4GemvOptions),
        ("dg_cublaslt_options", _lib.CublasltOptions),
        ("dg_quant_options", _lib.QuantOptions),
        ("dg_gemm_epilogue", _lib.GemmEpilogueStruct),
    ],
)
def test_structs_match_dg_h(c_name, struct):
    text = _header()
    m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (c_name, c_name), text, re.S)
    assert m, c_name
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    fields = re.findall(r"(\w+)\s*;", body)
    assert fields == [f[0] for f in struct._fields_], c_name


def test_info_report_names_everything_a_bug_report_needs(monkeypatch):
    monkeypatch.setenv("DG_INFO_TEST_MARKER", "42")
    text = dg.info()
    keys = [line.split(":", 1)[0] for line in text.splitlines()]
    for key in ("python package", "loaded libdg", "loaded nvrtc", "libdg", "build", "library", "nvrtc", "driver",
                "devices", "jit cache", "jit compiler", "sm cap", "kernel configs", "env"):
        assert key in keys, (key, text)
    assert "libdg: %s\n" % dg.version() in text
    assert "env: DG_INFO_TEST_MARKER=42" in text
    nvrtc = next(line for line in text.splitlines() if line.startswith("nvrtc: "))
    assert re.match(r"nvrtc: \d+\.\d+ from /", nvrtc), nvrtc


def test_info_report_buffer_contract():
    lib = _lib.get()
    fn = lib.fn("dg_info_report")
    import ctypes

    size = ctypes.c_size_t()
    assert fn(None, 0, ctypes.byref(size)) == 0 and size.value > 100
    small = ctypes.create_string_buffer(b"\x07" * 16, 16)
    need = ctypes.c_size_t(12345)
    assert fn(small, 16, ctypes.byref(need)) == 1  # too small: INVALID_ARGUMENT, outputs untouched
    assert small.raw == b"\x07" * 16 and need.value == 12345
    assert "capacity" in lib.last_error()
    assert fn(None, 8, None) == 1 and "buffer" in lib.last_error()


def test_dg_info_command():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(dg.__file__))) + os.pathsep + env.get("PYTHONPATH", "")
    run = lambda *args: subprocess.run([sys.executable, "-m", "dg"] + list(args), env=env,  # noqa: E731
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    r = run("info")
    assert r.returncode == 0, r.stderr.decode()
    assert "libdg: %s" % dg.version() in r.stdout.decode()
    assert "Warning" not in r.stderr.decode(), r.stderr.decode()
    bad = run("info", "--no-such-flag")
    assert bad.returncode == 2 and "--no-such-flag" in bad.stderr.decode()
    tune_help = run("tune", "--help")
    assert tune_help.returncode == 0 and "problem_list" in tune_help.stdout.decode()
    unknown = run("nothing")
    assert unknown.returncode == 2 and "unknown command 'nothing'" in unknown.stderr.decode()
    assert run().returncode == 2 and run("--help").returncode == 0
