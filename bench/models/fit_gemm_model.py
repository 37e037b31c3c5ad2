#!/usr/bin/env python3
"""How well the SM90 GEMM heuristic ranks configs that were measured (M > 128, the large-M model).

For every shape of every dg-bench JSON given (sweeps from bench/scripts/sweep_gemm.sh), the
model's estimate of each libdg contender's config (parsed from the config line dg-bench records)
comes from dg-gemm-estimate; the "regret" of a shape is the measured time of the config the model
ranks first over the best measured time. Prints one line per shape and the geometric mean; shapes
with regret above 2% are flagged. Refit a constant in src/ops/gemm_heuristic.cpp, rebuild dg-gemm-estimate
and rerun to see the effect on every measured shape at once.

    bench/models/fit_gemm_model.py [--check GEOMEAN,MAX] BUILD/bench/dg-gemm-estimate SWEEP.json [...]

With --check (the ctest `gemm_model`), exits 1 when the geometric-mean regret or any shape's regret
exceeds the given bounds: a model change that mis-ranks the committed measurements fails CI.
"""
import argparse
import json
import math
import re
import subprocess
import sys

CONFIG = re.compile(r'block (\d+)x(\d+)x\d+, (\d+) stages, (\d) math WG, cluster (\d)( \(multicast (A|B)\))?')


def parse(suite, cfg):
    m = CONFIG.search(cfg)
    if not m:
        return None
    kind = 0 if suite == 'dense-bf16' else (2 if 'fp8-1d1d' in cfg else 1)
    bm, bn, stages, _, cluster = map(int, m.group(1, 2, 3, 4, 5))
    mca = (1 if m.group(7) == 'A' else 0) if cluster == 2 else -1
    promo = 0 if kind == 0 else (2 if 'overlapped' in cfg else 1)
    slices = re.search(r'in (\d) column slices', cfg)
    slices = int(slices.group(1)) if slices else (1 if kind else 0)
    split_k = re.search(r'split-K over (\d+)', cfg)
    return kind, (bm, bn, stages, cluster, mca, promo, slices, int(split_k.group(1)) if split_k else 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--check', help='GEOMEAN,MAX: fail when the regret exceeds these bounds')
    ap.add_argument('estimator')
    ap.add_argument('files', nargs='+')
    args = ap.parse_args()
    estimator, files = args.estimator, args.files
    runs = []  # (shape key, config, measured us)
    for f in files:
        for case in json.load(open(f))['cases']:
            shape = case['shape']
            if case['suite'] not in ('dense-bf16', 'dense-fp8') or shape['m'] <= 128:
                continue
            for r in case['results']:
                if r['status'] != 'ok' or not r['contender'].startswith('libdg'):
                    continue
                parsed = parse(case['suite'], r.get('config', ''))
                if parsed:
                    kind, cfg = parsed
                    runs.append(((kind, shape['m'], shape['n'], shape['k'], f), cfg, r['time_us']['median']))
    if not runs:
        sys.exit('no libdg results with M > 128 in the given files')
    lines = ''.join('%d %d %d %d ' % key[:4] + ' '.join(map(str, cfg)) + '\n' for key, cfg, _ in runs)
    answers = subprocess.run([estimator], input=lines, capture_output=True, text=True, check=True).stdout.splitlines()
    shapes = {}
    for (key, cfg, t), est in zip(runs, answers):
        if not est.startswith('ERR'):
            shapes.setdefault(key, []).append((float(est), t, cfg))
    regrets = []
    for key, cands in sorted(shapes.items()):
        best = min(cands, key=lambda c: c[1])
        pick = min(cands, key=lambda c: c[0])
        regret = pick[1] / best[1]
        regrets.append(regret)
        print('%-4s %5d %5d %5d  model picks %-34s %8.1f us (est %8.1f)  best %-34s %8.1f us (est %8.1f)  regret %.3f%s'
              % (['bf16', 'fp8', '1d1d'][key[0]], key[1], key[2], key[3], pick[2], pick[1], pick[0], best[2], best[1],
                 best[0], regret, '  <--' if regret > 1.02 else ''))
    geomean = math.exp(sum(map(math.log, regrets)) / len(regrets))
    print('geomean regret %.4f, worst %.4f, over %d shape-runs (config tuple: bm, bn, stages, cluster, mca, promo, '
          'slices, split_k)' % (geomean, max(regrets), len(regrets)))
    if args.check:
        bound_mean, bound_max = map(float, args.check.split(','))
        if geomean > bound_mean or max(regrets) > bound_max:
            sys.exit('FAIL: regret geomean %.4f (bound %.4f), worst %.4f (bound %.4f)'
                     % (geomean, bound_mean, max(regrets), bound_max))
        print('OK: within geomean %.4f and worst %.4f' % (bound_mean, bound_max))


if __name__ == '__main__':
    main()
