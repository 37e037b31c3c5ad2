#!/usr/bin/env python3
"""Summarises Nsight Compute's per-instruction source page (SASS) of one or more kernels side by side.

Export a report's source page as CSV first (the report needs the SourceCounters section, and
WarpStateStats for the stall reasons):
    ncu --section SourceCounters --section WarpStateStats -k regex:NAME -o rep PROGRAM ...
    ncu -i rep.ncu-rep --page source --csv --print-source sass > kernel.csv

Then:
    bench/scripts/ncu_source.py libdg.csv deepgemm.csv [--top 20]

prints, per file:
  - warp instructions executed per opcode (the base opcode, modifiers dropped), the files in
    columns: where two kernels of the same GEMM differ in instruction count, by what;
  - the share of warp-stall samples per reason (samples are taken at a fixed interval per SM
    sub-partition, so their total is proportional to the kernel's duration);
  - the instructions with the most samples and their main reasons (any reason holding >= 15%).
"""
import argparse
import collections
import csv
import os
import sys


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # Row 0 names the kernel, row 1 holds the column names.
    if len(rows) < 3 or "Source" not in rows[1]:
        sys.exit("%s: not an `ncu --page source --csv --print-source sass` export" % path)
    header = rows[1]
    col = {name: i for i, name in enumerate(header)}
    for need in ("Address", "Source", "Instructions Executed", "Warp Stall Sampling (All Samples)"):
        if need not in col:
            sys.exit("%s: column %r missing (export with the SourceCounters section)" % (path, need))
    reasons = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]
    insts = []
    for row in rows[2:]:
        if len(row) < len(header):
            continue
        src = row[col["Source"]].strip()
        words = src.split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        insts.append(dict(addr=row[col["Address"]], src=src, op=op.split(".")[0],
                          executed=int(row[col["Instructions Executed"]] or 0),
                          samples=int(row[col["Warp Stall Sampling (All Samples)"]] or 0),
                          stalls={r[len("stall_"):]: int(row[col[r]] or 0) for r in reasons}))
    return (rows[0][1] if len(rows[0]) > 1 else ""), insts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="source-page CSV exports, one kernel each")
    ap.add_argument("--top", type=int, default=20, help="instructions listed per file by samples (default 20)")
    ap.add_argument("--ops", type=int, default=30, help="opcodes listed (default 30)")
    args = ap.parse_args()

    kernels = [(os.path.basename(path),) + load(path) for path in args.csv]
    per_op = [collections.Counter() for _ in kernels]
    for counter, (_, _, insts) in zip(per_op, kernels):
        for inst in insts:
            counter[inst["op"]] += inst["executed"]
    ops = sorted(set().union(*per_op), key=lambda op: -max(c[op] for c in per_op))
    width = max(12, max(len(path) for path, _, _ in kernels) + 2)
    print("warp instructions executed (millions)")
    print("%-12s" % "opcode" + "".join("%*s" % (width, path) for path, _, _ in kernels))
    for op in ops[:args.ops]:
        print("%-12s" % op + "".join("%*.2f" % (width, c[op] / 1e6) for c in per_op))
    print("%-12s" % "total" + "".join("%*.2f" % (width, sum(c.values()) / 1e6) for c in per_op))

    for path, name, insts in kernels:
        total = sum(i["samples"] for i in insts)
        print("\n== %s: %s" % (path, name[:160]))
        if total == 0:
            print("   no warp-stall samples (export with the WarpStateStats section)")
            continue
        by_reason = collections.Counter()
        for inst in insts:
            by_reason.update(inst["stalls"])
        print("   %d samples; " % total +
              ", ".join("%s %.1f%%" % (r, 100.0 * n / total) for r, n in by_reason.most_common(10) if n))
        for inst in sorted(insts, key=lambda i: -i["samples"])[:args.top]:
            main_reasons = {r: n for r, n in inst["stalls"].items() if n >= 0.15 * inst["samples"] and n}
            print("   %6d %5.1f%%  %s  %-58s %s" % (inst["samples"], 100.0 * inst["samples"] / total,
                                                 inst["addr"][-5:], inst["src"][:58],
                                                 " ".join("%s=%d" % kv for kv in sorted(main_reasons.items()))))


if __name__ == "__main__":
    main()
