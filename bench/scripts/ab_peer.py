#!/usr/bin/env python3
"""A/B of two libdg builds beside DeepGEMM and cuBLAS: `bench/peer_bench.py` run in the order A B B A
(one process each, libdg taken from each stage through DG_LIBRARY_PATH), then per row the ratio
t_peer / t_libdg of each build (the geometric mean over its runs) and B's over A's.

A clock that drifts between processes moves both libraries of a process alike, so builds are compared
through their ratios to the peers timed beside them, never through raw times across processes.

    bench/scripts/ab_peer.py STAGE_A STAGE_B OUT_DIR -- PEER_BENCH_ARGS...
    bench/scripts/ab_peer.py --summary A1.json B1.json B2.json A2.json
    bench/scripts/ab_peer.py --self-test ROWS.json   # the summary's arithmetic on a results file

STAGE_*: build trees or bench/scripts/stage_device.sh copies (libdg.so.0 at the top); a stage holding a
`templates` folder runs with DG_TEMPLATE_DIR set to it (a kernel template change compared on one build).
The runs import the source tree's binding (bindings/python) and DeepGEMM where PYTHONPATH finds
it. OUT_DIR receives A1 B1 B2 A2 (each a peer_bench.py --out folder, JSON named ab.json) and
summary.txt. With --summary, the JSON of earlier runs (file names starting with A or B say the
build) are summarized only.
"""
import json
import math
import os
import subprocess
import sys

ORDER = ("A1", "B1", "B2", "A2")
PEERS = ("deepgemm", "cublas")


def row_key(r):
    """A row's problem: the shape, and for masked rows the groups' counts (peer_bench.py --masked-counts
    runs one set at several counts; a draw repeats in every process, whose seed is fixed)."""
    return (r["suite"], r["kind"], r["groups"], r["expected_m"], r["n"], r["k"], tuple(r.get("ms") or ()))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def compare(runs):
    """runs: label -> rows (labels starting with A or B name the build). Returns (rows, means): per row
    key, peer -> (A's ratio t_peer / t_libdg, B's), each the geometric mean over the build's runs; and
    per peer, (rows, A's geometric mean over them, B's)."""
    builds = {b: [rows for label, rows in runs.items() if label.startswith(b)] for b in ("A", "B")}
    if not builds["A"] or not builds["B"]:
        raise ValueError("need runs of both builds (labels starting with A and with B)")
    ratios = {}  # key -> peer -> build -> [ratio per run]
    for build, run_list in builds.items():
        for rows in run_list:
            for r in rows:
                per_peer = ratios.setdefault(row_key(r), {})
                for peer in PEERS:
                    lib, other = r.get("us_libdg"), r.get("us_" + peer)
                    if lib and other:
                        per_peer.setdefault(peer, {}).setdefault(build, []).append(other / lib)
    table = {}
    for key, per_peer in ratios.items():
        pairs = {peer: (geomean(v["A"]), geomean(v["B"])) for peer, v in per_peer.items() if "A" in v and "B" in v}
        if pairs:
            table[key] = pairs
    means = {}
    for peer in PEERS:
        sel = [pairs[peer] for pairs in table.values() if peer in pairs]
        if sel:
            means[peer] = (len(sel), geomean([a for a, _ in sel]), geomean([b for _, b in sel]))
    return table, means


def summarize(runs):
    table, means = compare(runs)
    lines = ["t_peer / t_libdg, A and B (geometric mean over each build's runs), B/A"]
    for key, pairs in table.items():
        counts = " count %d" % key[6][0] if len(set(key[6])) == 1 else ""  # every group alike
        lines.append("%-10s %-5s G %-4d m %-5d n %-5d k %-5d" % key[:6] + counts + " " + "".join(
            "  %s %.3f %.3f %+.1f%%" % (peer, a, b, 100 * (b / a - 1)) for peer, (a, b) in pairs.items()))
    for peer, (n, a, b) in means.items():
        lines.append("%s: geometric mean over %d rows, A %.4f, B %.4f, B/A %.4f" % (peer, n, a, b, b / a))
    return lines


def load_rows(path):
    with open(path) as f:
        return json.load(f)["rows"]


def library_of(stage):
    path = os.path.join(stage, "libdg.so.0")
    if not os.path.exists(path):
        sys.exit("ab_peer.py: %s has no libdg.so.0 (expected a build tree or a stage_device.sh copy)" % stage)
    return os.path.abspath(path)


def run_all(stage_a, stage_b, out_dir, peer_args):
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    peer_bench = os.path.join(repo, "bench", "peer_bench.py")
    # The source tree's binding, whichever library each run loads.
    python_path = os.pathsep.join(
        p for p in (os.path.join(repo, "bindings", "python"), os.environ.get("PYTHONPATH")) if p)
    libraries = {"A": library_of(stage_a), "B": library_of(stage_b)}
    templates = {label: os.path.join(os.path.abspath(stage), "templates") for label, stage in (("A", stage_a), ("B", stage_b))}
    runs = {}
    for label in ORDER:
        dest = os.path.join(out_dir, label)
        os.makedirs(dest, exist_ok=True)
        env = dict(os.environ, DG_LIBRARY_PATH=libraries[label[0]], PYTHONPATH=python_path)
        env.pop("DG_TEMPLATE_DIR", None)
        if os.path.isdir(templates[label[0]]):
            env["DG_TEMPLATE_DIR"] = templates[label[0]]
        cmd = [sys.executable, peer_bench] + peer_args + ["--out", dest, "--name", "ab"]
        print("[ab_peer] %s: %s" % (label, " ".join(cmd)), file=sys.stderr, flush=True)
        with open(os.path.join(dest, "log.txt"), "w") as log:
            rc = subprocess.call(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        if rc != 0:
            sys.exit("ab_peer.py: run %s exited %d (log: %s)" % (label, rc, os.path.join(dest, "log.txt")))
        runs[label] = load_rows(os.path.join(dest, "ab.json"))
    return runs


def self_test(path):
    """B's libdg 10% faster than A's in one of its runs and level in the other: every row's B/A is
    sqrt(1.1) for each peer, and so are the means; a summary without B's runs is refused."""
    rows = load_rows(path)
    faster = [dict(r, us_libdg=r["us_libdg"] / 1.1) if r.get("us_libdg") else r for r in rows]
    table, means = compare({"A1": rows, "B1": faster, "B2": rows, "A2": rows})
    expected = math.sqrt(1.1)
    checked = 0
    for key, pairs in table.items():
        for peer, (a, b) in pairs.items():
            assert abs(b / a - expected) < 1e-9, (key, peer, a, b)
            checked += 1
    assert table and checked >= len(table), (checked, len(table))
    for peer, (n, a, b) in means.items():
        assert abs(b / a - expected) < 1e-9, (peer, a, b)
    try:
        compare({"A1": rows, "A2": rows})
        raise AssertionError("a summary without B's runs was accepted")
    except ValueError:
        pass
    print("ab_peer.py self-test: %d row ratios over %d rows checked" % (checked, len(table)))


def main(argv):
    if len(argv) == 2 and argv[0] == "--self-test":
        self_test(argv[1])
        return
    if len(argv) >= 2 and argv[0] == "--summary":
        runs = {os.path.basename(p): load_rows(p) for p in argv[1:]}
    elif len(argv) >= 4 and argv[3] == "--":
        runs = run_all(argv[0], argv[1], argv[2], argv[4:])
    else:
        sys.exit(__doc__)
    try:
        lines = summarize(runs)
    except ValueError as e:
        sys.exit("ab_peer.py: %s" % e)
    print("\n".join(lines))
    if argv[0] != "--summary":
        with open(os.path.join(argv[2], "summary.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
