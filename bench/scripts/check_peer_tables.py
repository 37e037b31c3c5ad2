#!/usr/bin/env python3
"""The peer tables in bench/results are what bench/peer_bench.py makes of their JSON: each SUITE.json
given is merged again into a scratch folder (`peer_bench.py --merge`, no GPU) and the table it writes
must equal the committed SUITE.txt beside the JSON, line for line.

    bench/scripts/check_peer_tables.py bench/results/dense-peer.json bench/results/grouped.json ...

Catches a report change that the committed tables were not regenerated with, and a table edited by
hand. Exits 1 with a diff of the first table that differs.
"""
import difflib
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PEER_BENCH = os.path.join(HERE, "..", "peer_bench.py")


def main(paths):
    if not paths:
        sys.exit(__doc__)
    bad = 0
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        with tempfile.TemporaryDirectory(prefix="dg-peer-") as out:
            run = subprocess.run([sys.executable, PEER_BENCH, "--merge", path, "--out", out, "--name", name],
                                 capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"))
            if run.returncode != 0:
                print("%s: peer_bench.py --merge failed:\n%s" % (path, run.stderr.strip()))
                bad += 1
                continue
            with open(os.path.join(out, name + ".txt")) as f:
                made = f.read().splitlines()
        committed_path = os.path.splitext(path)[0] + ".txt"
        with open(committed_path) as f:
            committed = f.read().splitlines()
        if made != committed:
            print("%s differs from what peer_bench.py makes of %s:" % (committed_path, path))
            print("\n".join(difflib.unified_diff(committed, made, committed_path, "merged", lineterm="", n=1)))
            bad += 1
        else:
            print("%s: %d lines as merged" % (committed_path, len(made)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
