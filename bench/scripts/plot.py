#!/usr/bin/env python3
"""Turns a dg-bench JSON report into a PNG: TFLOPS (GB/s for bandwidth suites) per shape, libdg
beside each peer, one panel per suite.

    python3 bench/scripts/plot.py results.json -o results.png
"""
import argparse
import io
import json
import math
import sys


def save_png(fig, path, dpi):
    """Writes `fig` as a small PNG: rendered at `dpi`, then reduced to a 64-colour palette (the plots
    are flat bars and text), so that the committed plots stay small."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    from PIL import Image  # a dependency of matplotlib

    Image.open(buf).convert("RGB").quantize(colors=64).save(path, optimize=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("-o", "--output", help="PNG path (default: JSON path with .png)")
    ap.add_argument("--dpi", type=int, default=80, help="resolution (default 80)")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(args.json) as f:
        report = json.load(f)
    suites = []
    for case in report.get("cases", []):
        if case["suite"] not in suites:
            suites.append(case["suite"])
    if not suites:
        print("no cases in", args.json, file=sys.stderr)
        return 1

    fig, axes = plt.subplots(len(suites), 1, figsize=(max(8, 0.9 * 24), 4.5 * len(suites)), squeeze=False)
    for ax, suite in zip(axes[:, 0], suites):
        cases = [c for c in report["cases"] if c["suite"] == suite]
        # The GEMV is bound by bytes: GB/s, beside its plain-read contender.
        uses_flops = suite != "nvfp4-gemv" and any((r.get("flops") or 0) > 0 for c in cases for r in c["results"])
        metric = "tflops" if uses_flops else "gbps"
        names = []
        for c in cases:
            for r in c["results"]:
                if r["contender"] not in names:
                    names.append(r["contender"])
        width = 0.8 / max(1, len(names))
        for i, name in enumerate(names):
            xs, ys = [], []
            for x, c in enumerate(cases):
                for r in c["results"]:
                    v = r.get(metric)
                    if r["contender"] == name and r["status"] in ("ok", "check_failed") and v is not None:
                        xs.append(x + (i - (len(names) - 1) / 2) * width)
                        ys.append(v)
            hatch = None if name == "libdg" else "//"
            ax.bar(xs, ys, width, label=name, hatch=hatch)
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([c["label"] for c in cases], rotation=60, ha="right", fontsize=9)
        ax.set_ylabel("TFLOPS" if metric == "tflops" else "GB/s")
        dev = report.get("device", {})
        peak = dev.get("peak_tflops_fp8" if "fp8" in suite else "peak_tflops_bf16")
        if metric == "tflops" and peak and not math.isnan(peak):
            ax.axhline(peak, color="gray", linestyle=":", linewidth=1)
            ax.text(len(cases) - 0.5, peak, f"peak {peak:.0f}", ha="right", va="bottom", fontsize=7, color="gray")
        ax.set_title(f"{suite} on {dev.get('name', '?')} ({report.get('timestamp', '')})")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out = args.output or args.json.rsplit(".", 1)[0] + ".png"
    save_png(fig, out, args.dpi)
    print("wrote", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
