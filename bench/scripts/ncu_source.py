#!/usr/bin/env python3
"""Summarises Nsight Compute's per-instruction source page (SASS) of one or more kernels side by side.

Export a report's source page as CSV first (the report needs the SourceCounters section, and
WarpStateStats for the stall reasons):
    ncu --section SourceCounters --section WarpStateStats -k regex:NAME -o rep PROGRAM ...
    ncu -i rep.ncu-rep --page source --csv --print-source sass > kernel.csv

Then:
    bench/scripts/ncu_source.py libdg.csv deepgemm.csv [--top 20]
    bench/scripts/ncu_source.py both.csv --consumers --per-mma   # a report of several kernels

An export of a report that profiled several kernels holds each one's page in turn: every kernel is
summarised in its own column. Printed, per kernel:
  - warp instructions executed per opcode (the base opcode, modifiers dropped), the kernels in
    columns: where two kernels of the same GEMM differ in instruction count, by what (--per-mma:
    per warp-group MMA instruction executed, e.g. per WGMMA of a GEMM's K loop);
  - the share of warp-stall samples per reason (samples are taken at a fixed interval per SM
    sub-partition, so their total is proportional to the kernel's duration);
  - the instructions with the most samples and their main reasons (any reason holding >= 15%).
--consumers keeps the instructions of the consumer warp-groups only: those between the first
register increase (USETMAXREG.TRY_ALLOC) and the next decrease (USETMAXREG.DEALLOC, where the
producer's code starts), as libdg's and DeepGEMM's warp-specialised kernels lay them out; the
producers' and idle warps' samples (waits on their barriers) then do not dilute the consumers' shares.
"""
import argparse
import collections
import csv
import os
import sys


# Base opcodes of the warp-group MMA instructions (--per-mma).
MMA_OPS = ("QGMMA", "HGMMA", "IGMMA", "BGMMA", "UTCQMMA", "UTCHMMA")


def parse(path, name, header, rows):
    col = {h: i for i, h in enumerate(header)}
    for need in ("Address", "Source", "Instructions Executed", "Warp Stall Sampling (All Samples)"):
        if need not in col:
            sys.exit("%s: column %r missing (export with the SourceCounters section)" % (path, need))
    reasons = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]
    insts = []
    for row in rows:
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
    return name, insts


def load(path):
    """The kernels of one export: [(name, instructions)], one per "Kernel Name" row."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    starts = [i for i, r in enumerate(rows) if r and r[0] == "Kernel Name"]
    if not starts or len(rows) < starts[0] + 3 or "Source" not in rows[starts[0] + 1]:
        sys.exit("%s: not an `ncu --page source --csv --print-source sass` export" % path)
    kernels = []
    for j, start in enumerate(starts):
        end = starts[j + 1] if j + 1 < len(starts) else len(rows)
        name = rows[start][1] if len(rows[start]) > 1 else ""
        kernels.append(parse(path, name, rows[start + 1], rows[start + 2:end]))
    return kernels


def consumers(insts):
    """The consumer warp-groups' instructions (see --consumers), or None without the markers."""
    begin = next((i for i, x in enumerate(insts) if x["src"].startswith("USETMAXREG.TRY_ALLOC")), None)
    if begin is None:
        return None
    end = next((i for i in range(begin + 1, len(insts)) if "USETMAXREG.DEALLOC" in insts[i]["src"]), None)
    return insts[begin:end] if end is not None else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="source-page CSV exports (one kernel or several each)")
    ap.add_argument("--top", type=int, default=20, help="instructions listed per kernel by samples (default 20)")
    ap.add_argument("--ops", type=int, default=30, help="opcodes listed (default 30)")
    ap.add_argument("--consumers", action="store_true",
                    help="only the consumer warp-groups' instructions (between USETMAXREG.TRY_ALLOC and .DEALLOC)")
    ap.add_argument("--per-mma", action="store_true",
                    help="opcode counts per warp-group MMA instruction executed instead of millions")
    args = ap.parse_args()

    kernels = []
    for path in args.csv:
        found = load(path)
        for k, (name, insts) in enumerate(found):
            label = os.path.basename(path) + ("#%d" % (k + 1) if len(found) > 1 else "")
            if args.consumers:
                region = consumers(insts)
                if region is None:
                    print("%s: no USETMAXREG.TRY_ALLOC ... DEALLOC region: the whole kernel" % label)
                else:
                    insts = region
            kernels.append((label, name, insts))
    per_op = [collections.Counter() for _ in kernels]
    for counter, (_, _, insts) in zip(per_op, kernels):
        for inst in insts:
            counter[inst["op"]] += inst["executed"]
    mma = [sum(c[op] for op in MMA_OPS) for c in per_op]
    if args.per_mma and not all(mma):
        sys.exit("--per-mma: a kernel executed no warp-group MMA instruction")
    scale = [1.0 / m for m in mma] if args.per_mma else [1e-6] * len(kernels)
    ops = sorted(set().union(*per_op), key=lambda op: -max(c[op] * f for c, f in zip(per_op, scale)))
    width = max(12, max(len(path) for path, _, _ in kernels) + 2)
    print("warp instructions executed " + ("per warp-group MMA" if args.per_mma else "(millions)") +
          (", consumer warp-groups" if args.consumers else ""))
    print("%-12s" % "opcode" + "".join("%*s" % (width, path) for path, _, _ in kernels))
    for op in ops[:args.ops]:
        print("%-12s" % op + "".join("%*.2f" % (width, c[op] * f) for c, f in zip(per_op, scale)))
    print("%-12s" % "total" + "".join("%*.2f" % (width, sum(c.values()) * f) for c, f in zip(per_op, scale)))

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
