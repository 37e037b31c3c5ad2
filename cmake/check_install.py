#!/usr/bin/env python3
"""Checks shipped binaries: the ELF files of an install tree or of a wheel.

  check_install.py --build BUILD_DIR --prefix SCRATCH   installs BUILD_DIR into SCRATCH (cmake
                                                        --install), then checks the tree and its
                                                        programs
  check_install.py --wheel WHEEL                        checks the ELF files inside a wheel
  check_install.py --programs PROGRAM...                checks the options of programs that are
                                                        not installed (the examples, the cost model's
                                                        dg-gemm-estimate)

Every ELF file: its RUNPATH/RPATH has no empty entry (the loader would search the working
directory), no relative entry and no absolute path (a build machine's folder); only entries that
start with $ORIGIN pass. No file carries DWARF debug info (installed libraries and programs are
stripped; DG_INSTALL_DEBUG_INFO puts the debug info in separate files). Each installed program, and
each of --programs, answers --version (exit 0, the libdg version) and --help (exit 0, a usage text)
and refuses an unknown flag with a non-zero exit and a message.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from typing import List

ELF_MAGIC = b"\x7fELF"
UNKNOWN_FLAG = "--no-such-flag"
PROGRAM_TIMEOUT_S = 60


def is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == ELF_MAGIC
    except OSError:
        return False


def readelf(args: List[str], path: str) -> str:
    return subprocess.run(["readelf", *args, path], check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout


def runpath_problems(path: str) -> List[str]:
    problems = []
    for kind, value in re.findall(r"\((RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.*)\]", readelf(["-d"], path)):
        for entry in value.split(":"):
            if entry == "":
                problems.append("%s %s has an empty entry (the loader searches the working directory)" % (kind, value))
            elif not entry.startswith("$ORIGIN"):
                problems.append("%s entry %r is not relative to $ORIGIN (a build-machine path)" % (kind, entry))
    return problems


def debug_problems(path: str) -> List[str]:
    sections = re.findall(r"\]\s+(\.\S+)", readelf(["-S", "-W"], path))
    found = [s for s in sections if s.startswith(".debug_")]
    return ["not stripped: has %s" % ", ".join(found)] if found else []


def check_elf_files(root: str) -> List[str]:
    failures, count = [], 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not is_elf(path) or name.endswith(".debug"):
                continue
            count += 1
            for p in runpath_problems(path) + debug_problems(path):
                failures.append("%s: %s" % (os.path.relpath(path, root), p))
    if count == 0:
        failures.append("no ELF file under %s" % root)
    print("checked %d ELF file(s) under %s" % (count, root))
    return failures


def run(cmd: List[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=PROGRAM_TIMEOUT_S)


def check_program(exe: str, version: str) -> List[str]:
    """--version prints the libdg version (exit 0), --help a usage text (exit 0), an unknown flag
    is refused with a non-zero exit and a message naming it."""
    name, failures = os.path.basename(exe), []
    v = run([exe, "--version"])
    if v.returncode != 0 or version not in v.stdout:
        failures.append("%s --version: exit %d, %r (expected %s)" % (name, v.returncode, v.stdout.strip(), version))
    h = run([exe, "--help"])
    if h.returncode != 0 or "usage" not in h.stdout.lower():
        failures.append("%s --help: exit %d, no usage text" % (name, h.returncode))
    bad = run([exe, UNKNOWN_FLAG])
    if bad.returncode == 0 or UNKNOWN_FLAG not in bad.stderr:
        failures.append("%s %s: exit %d, stderr %r (expected a non-zero exit naming the flag)"
                        % (name, UNKNOWN_FLAG, bad.returncode, bad.stderr.strip()[:200]))
    return failures


def check_programs(bindir: str, version: str) -> List[str]:
    failures = []
    programs = sorted(os.listdir(bindir)) if os.path.isdir(bindir) else []
    for required in ("dg-info", "dg-codegen"):
        if required not in programs:
            failures.append("bin/%s is not installed" % required)
    for name in programs:
        failures += check_program(os.path.join(bindir, name), version)
    print("checked %d program(s): %s" % (len(programs), ", ".join(programs)))
    return failures


def library_version(source_dir: str) -> str:
    with open(os.path.join(source_dir, "include", "dg.h")) as f:
        text = f.read()
    return ".".join(re.search(r"#define DG_VERSION_%s (\d+)" % k, text).group(1) for k in ("MAJOR", "MINOR", "PATCH"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", help="a build directory to install and check")
    ap.add_argument("--prefix", help="the scratch prefix to install into (emptied first)")
    ap.add_argument("--wheel", help="a wheel whose ELF files to check")
    ap.add_argument("--programs", nargs="+", metavar="PROGRAM",
                    help="programs of the build tree (not installed) whose options to check")
    args = ap.parse_args()
    failures: List[str] = []
    version = library_version(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if args.programs:
        for exe in args.programs:
            failures += check_program(exe, version)
        print("checked %d program(s): %s" % (len(args.programs), ", ".join(map(os.path.basename, args.programs))))
    elif args.wheel:
        with tempfile.TemporaryDirectory() as tmp:
            with zipfile.ZipFile(args.wheel) as z:
                z.extractall(tmp)
            failures += check_elf_files(tmp)
    elif args.build and args.prefix:
        import shutil

        shutil.rmtree(args.prefix, ignore_errors=True)
        cmake = os.environ.get("CMAKE_COMMAND", "cmake")
        subprocess.run([cmake, "--install", args.build, "--prefix", args.prefix], check=True, stdout=subprocess.DEVNULL)
        failures += check_elf_files(args.prefix)
        failures += check_programs(os.path.join(args.prefix, "bin"), version)
    else:
        ap.error("give --wheel, --programs, or --build and --prefix")
    for f in failures:
        print("FAIL: %s" % f)
    print("%d problem(s)" % len(failures) if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
