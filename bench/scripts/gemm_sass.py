#!/usr/bin/env python3
"""SASS of the GEMM kernel libdg's heuristic (or an explicit config) picks for M x N x K, compiled
offline (no GPU needed) for a generic Hopper GPU or the one --gpu-name names, with static
instruction counts per opcode.
Dense by default; --grouped and --k-grouped ask for the grouped families' kernels.

    bench/scripts/gemm_sass.py 4096 7168 16384                      # FP8 1D2D nt, BF16 D
    bench/scripts/gemm_sass.py --bf16 4096 7168 2048 -o block_n=256 # explicit options
    bench/scripts/gemm_sass.py 4096 7168 16384 -t templates -t /tmp/variant/templates --sass-dir out
    bench/scripts/gemm_sass.py --grouped contiguous:4 32768 6144 7168  # M: A's rows
    bench/scripts/gemm_sass.py --grouped masked:32:24 4096 4096 7168   # M: max_m; expected m 24
    bench/scripts/gemm_sass.py --k-grouped 8 4096 7168 4096            # 8 groups of K (FP8: 1D1D)
    bench/scripts/gemm_sass.py --gpu-name "NVIDIA H200" 2048 7168 2048  # the H200's choice

With several `-t` template trees (DG_TEMPLATE_DIR, e.g. a change and its base), the counts stand in
columns, one per tree, so that a change's effect on the kernel's code is seen before it is run. The
loop column counts the instructions between the first and the last WGMMA (QGMMA / HGMMA) of the
kernel: for the GEMMs, the consumers' K loop. `--sass-dir` keeps each kernel's full SASS.
Needs the library (found as the Python binding finds it: DG_LIBRARY_PATH or the source tree's
build) and nvdisasm ($DG_NVDISASM, else the CUDA toolkit's, or `pip install nvidia-cuda-nvdisasm`).
"""
import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def nvdisasm():
    for path in (os.environ.get("DG_NVDISASM"), "/usr/local/cuda/bin/nvdisasm", shutil.which("nvdisasm")):
        if path and os.access(path, os.X_OK):
            return path
    sys.exit("gemm_sass: nvdisasm not found (set DG_NVDISASM, or pip install nvidia-cuda-nvdisasm)")


def compile_kernel(args, template_dir):
    """Prepares the GEMM in a child process (DG_TEMPLATE_DIR and the JIT cache are read once per
    process) and returns the SASS of every kernel it compiled."""
    cache = tempfile.mkdtemp(prefix="dg-sass-")
    try:
        env = dict(os.environ, DG_JIT_CACHE_DIR=cache)
        if template_dir:
            env["DG_TEMPLATE_DIR"] = os.path.abspath(template_dir)
        env["PYTHONPATH"] = os.path.join(HERE, "..", "..", "bindings", "python") + os.pathsep + env.get("PYTHONPATH", "")
        child = ("import dg, json, sys\n"
                 "a = json.loads(sys.argv[1])\n"
                 "s = dg.Stream.offline((9, 0), 132, gpu_name=a['gpu_name'])\n"
                 "o = a['options'] or None\n"
                 "if a['grouped']:\n"
                 "    g = a['grouped']\n"
                 "    dg.m_grouped_gemm_prepare(a['ab'], g[0], g[1], a['m'], a['n'], a['k'], expected_m=g[2], stream=s, options=o)\n"
                 "elif a['k_grouped']:\n"
                 "    layout = 'tn' if a['ab'] == 'bfloat16' else 'nt'\n"
                 "    dg.k_grouped_gemm_prepare(a['ab'], layout, a['m'], a['n'], [a['k']] * a['k_grouped'], stream=s, options=o)\n"
                 "else:\n"
                 "    dg.gemm_prepare(a['ab'], 'nt', a['m'], a['n'], a['k'], 'bfloat16', stream=s, options=o)\n")
        options = {key: int(value) for key, value in (o.split("=", 1) for o in args.option)}
        spec = dict(ab="bfloat16" if args.bf16 else "float8_e4m3fn", m=args.m, n=args.n, k=args.k, options=options,
                    grouped=grouped_spec(args.grouped), k_grouped=args.k_grouped, gpu_name=args.gpu_name)
        run = subprocess.run([sys.executable, "-c", child, json.dumps(spec)], env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("gemm_sass: preparing the kernel failed: " + (run.stderr.strip().splitlines() or ["?"])[-1])
        kernels = {}
        for path in sorted(glob.glob(os.path.join(cache, "**", "*.cubin"), recursive=True)):
            with open(path, "rb") as f:
                blob = f.read()
            elf = blob.find(b"\x7fELF")  # the cache file's header comes first
            if elf < 0:
                continue
            cubin = os.path.join(cache, "k.cubin")
            with open(cubin, "wb") as f:
                f.write(blob[elf:])
            sass = subprocess.run([nvdisasm(), "-c", cubin], capture_output=True, text=True, check=True).stdout
            name = re.search(r"\.text\.(\S+):", sass)
            kernels[name.group(1) if name else os.path.basename(path)] = sass
        return kernels
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def grouped_spec(text):
    """--grouped LAYOUT:G[:EXPECTED_M] -> [layout, G, expected m] (expected m 0: the call's default)."""
    if not text:
        return None
    parts = text.split(":")
    if len(parts) not in (2, 3) or parts[0] not in ("contiguous", "psum", "masked"):
        sys.exit("gemm_sass: --grouped %r (expected contiguous:G, psum:G or masked:G[:EXPECTED_M])" % text)
    try:
        values = [int(v) for v in parts[1:]]
    except ValueError:
        sys.exit("gemm_sass: --grouped %r: G and EXPECTED_M are integers" % text)
    return [parts[0], values[0], values[1] if len(values) > 1 else 0]


def counts(sass):
    ops = [(int(a, 16), text) for a, text in INSTRUCTION.findall(sass)]
    mma = [i for i, (_, text) in enumerate(ops) if re.match(r"(@\S+\s+)?[QH]GMMA", text)]
    loop = ops[mma[0]:mma[-1] + 1] if mma else []
    by_op = collections.Counter()
    for _, text in ops:
        words = text.split()
        by_op[(words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]] += 1
    return len(ops), len(loop), by_op


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("m", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("k", type=int)
    ap.add_argument("--bf16", action="store_true", help="BF16 operands (default: FP8 E4M3, 1D2D recipe)")
    family = ap.add_mutually_exclusive_group()
    family.add_argument("--grouped", metavar="LAYOUT:G[:EXPECTED_M]",
                        help="an M-grouped call of G groups: contiguous or psum (M: A's rows), masked (M: max_m)")
    family.add_argument("--k-grouped", type=int, metavar="G", help="a K-grouped call of G groups of K each")
    ap.add_argument("-o", "--option", action="append", default=[], metavar="FIELD=VALUE",
                    help="a dg_gemm_options field (block_m=256, fp8_promotion_slices=1, ...)")
    ap.add_argument("-t", "--template-dir", action="append", default=[],
                    help="a template tree to compile from (repeatable; default: the library's own)")
    ap.add_argument("--ops", type=int, default=25, help="opcodes listed (default 25)")
    ap.add_argument("--sass-dir", help="write each kernel's SASS here")
    ap.add_argument("--gpu-name", help="the GPU whose calls to compile, as the driver names it (e.g. 'NVIDIA H200': "
                    "its cost-model calibration; default: a generic Hopper GPU)")
    args = ap.parse_args()

    trees = args.template_dir or [None]
    results = []
    for tree in trees:
        kernels = compile_kernel(args, tree)
        # The tiled (or skinny) GEMM kernel, not a pass beside it (K-grouped calls zero D first).
        gemm = ([name for name in kernels if "gemm" in name and "gemm_scale" not in name] or
                [name for name in kernels if "gemm" in name] or list(kernels))
        if not gemm:
            sys.exit("gemm_sass: no kernel was compiled")
        name = gemm[0]
        results.append((tree or "(library)", name, counts(kernels[name])))
        if args.sass_dir:
            os.makedirs(args.sass_dir, exist_ok=True)
            with open(os.path.join(args.sass_dir, "%d-%s.sass" % (len(results), name)), "w") as f:
                f.write(kernels[name])
    for i, (tree, name, _) in enumerate(results):
        print("[%d] %s: %s" % (i + 1, tree, name))
    width = 10
    print("%-12s" % "" + "".join("%*s" % (width, "[%d]" % (i + 1)) for i in range(len(results))))
    print("%-12s" % "total" + "".join("%*d" % (width, c[0]) for _, _, c in results))
    print("%-12s" % "loop" + "".join("%*d" % (width, c[1]) for _, _, c in results))
    ops = sorted(set().union(*[c[2] for _, _, c in results]), key=lambda op: -max(c[2][op] for _, _, c in results))
    for op in ops[:args.ops]:
        print("%-12s" % op + "".join("%*d" % (width, c[2][op]) for _, _, c in results))


if __name__ == "__main__":
    main()
