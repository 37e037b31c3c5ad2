#!/usr/bin/env python3
"""Summary of a bench/scripts/ab_builds.sh run: per suite, each run's geometric-mean ratios to the peers,
then libdg's median time per case and run with B/A (the mean of B's two runs over A's two).

    bench/scripts/ab_summary.py RESULTS_DIR SUITE [SUITE ...]
"""
import json
import os
import sys

LABELS = ("A1", "B1", "B2", "A2")


def summarize(dest, suite):
    runs = {}
    for label in LABELS:
        path = os.path.join(dest, f"{label}-{suite}.json")
        try:
            with open(path) as f:
                runs[label] = json.load(f)
        except (OSError, ValueError) as e:
            print(f"{suite} {label}: unreadable ({e})")
    if len(runs) < len(LABELS):
        return
    print(f"== {suite}: geomean t_peer / t_libdg per run")
    for label in LABELS:
        summary = runs[label].get("summary", {}).get(suite, {})
        ratios = {k: round(v["geomean_time_ratio_to_libdg"], 4) for k, v in summary.items()
                  if isinstance(v, dict) and "geomean_time_ratio_to_libdg" in v}
        print(f"  {label}: {ratios}")
    med = {label: {c["label"]: r["time_us"]["median"] for c in run["cases"] for r in c["results"]
                   if r["contender"] == "libdg" and r.get("status") == "ok"}
           for label, run in runs.items()}
    print(f"  {'libdg median us':32s} " + " ".join(f"{label:>8s}" for label in LABELS) + "     B/A")
    for case in med["A1"]:
        t = [med[label].get(case) for label in LABELS]
        if None in t:
            continue
        print(f"  {case:32s} " + " ".join(f"{x:8.1f}" for x in t) + f"  {(t[1] + t[2]) / (t[0] + t[3]):6.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for s in sys.argv[2:]:
        summarize(sys.argv[1], s)
