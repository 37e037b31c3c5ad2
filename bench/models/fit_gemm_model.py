#!/usr/bin/env python3
"""How well the SM90 GEMM heuristic ranks configs that were measured (M > 128, the large-M model).

For every shape of every dg-bench JSON given (sweeps from bench/scripts/sweep_gemm.sh), the
model's estimate of each libdg contender's config (parsed from the config line dg-bench records)
comes from dg-gemm-estimate; the "regret" of a shape is the measured time of the config the model
ranks first over the best measured time. bench/peer_bench.py JSON is read too: its FP8 K-grouped
rows that record their groups' K (`ks`) and its masked rows (FP8, BF16) that record their hint and counts
(`hint`, `ms`), with the configs its --alt contenders forced; the same problem (the same ks or ms)
measured in several runs takes each config's geometric-mean time. Prints one
line per shape and the geometric mean; shapes with regret above 2% are flagged. Each file's shapes
are ranked with the calibration libdg uses on the GPU the file names (`dg-gemm-estimate --device`).
Refit a constant in src/ops/gemm_cost_model.cpp, rebuild dg-gemm-estimate and rerun to see the
effect on every measured shape at once.

    bench/models/fit_gemm_model.py [--check GEOMEAN,MAX] BUILD/tests/dg-gemm-estimate SWEEP.json [...]

With --check (the ctests `gemm_model*`), exits 1 when the geometric-mean
regret or any shape's regret exceeds the given bounds: a model change that mis-ranks the committed
measurements fails CI.
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


def alt_configs(data):
    """The --alt contenders of a peer_bench JSON that force a tile: name -> the estimator's config fields."""
    return {name: (o.get('block_m', 0), o['block_n'], o.get('num_stages', 0), o.get('cluster', 0),
                   o.get('multicast_a', -1), o.get('fp8_promotion', 0), o.get('fp8_promotion_slices', 0),
                   o.get('split_k', 0))
            for name, o in data.get('alt', {}).items() if isinstance(o, dict) and o.get('block_n')}


def forced_runs(row, key, query, alts):
    """query: the estimator's query line for a config (its fields follow it)."""
    return [(key, query(cfg), cfg, row['us_libdg_' + name]) for name, cfg in sorted(alts.items())
            if row.get('us_libdg_' + name) is not None]


def masked_query(kind, r, per_total):
    """A masked row's query: as the host plans it (the hint), or with per_total at the row's own total
    of row blocks of each config's block_m (R queries: the count-adaptive rule's per-total price)."""
    def query(cfg):
        if not per_total:
            return 'Q %d %d %d %d %d %d' % (kind, r['groups'], r['max_m'], r['hint'], r['n'], r['k'])
        bm = cfg[0] or 128
        blocks = sum((min(max(c, 0), r['max_m']) + bm - 1) // bm for c in r['ms'])
        return 'R %d %d %d %d %d %d %d' % (kind, r['groups'], r['max_m'], r['hint'], max(blocks, 1), r['n'], r['k'])
    return query


def peer_bench_runs(data, per_total=False):
    """(key, query, config, us) of each forced config in a peer_bench JSON's FP8 K-grouped rows (the
    problem as the library states it to its heuristic: the non-empty groups, their mean K rounded up
    to 128) and masked rows, FP8 and BF16 (G, max_m, the hint; with per_total the row's counts), keyed
    by the groups' K or counts so that repeated runs of one problem merge."""
    out = []
    alts = alt_configs(data)
    for r in data['rows']:
        if r.get('kind') == 'bf16' and r.get('suite') == 'masked' and r.get('ms'):
            key = ('mb', r['groups'], r['hint'], r['n'], r['k'], tuple(r['ms']))
            out += forced_runs(r, key, masked_query(0, r, per_total), alts)
        if r.get('kind') != 'fp8':
            continue
        if r.get('suite') == 'k-grouped' and r.get('ks'):
            live = [k for k in r['ks'] if k > 0]
            if not live:
                continue
            k = ((sum(live) + len(live) - 1) // len(live) + 127) // 128 * 128  # as src/ops/k_grouped_gemm.cpp
            key = ('kg', len(live), r['expected_m'], r['n'], k, tuple(r['ks']))
            out += forced_runs(r, key, lambda cfg, q='G 2 %d %d %d %d' % key[1:5]: q, alts)
        elif r.get('suite') == 'masked' and r.get('ms'):
            key = ('ms', r['groups'], r['hint'], r['n'], r['k'], tuple(r['ms']))
            out += forced_runs(r, key, masked_query(1, r, per_total), alts)
    return out


def estimates(estimator, runs):
    """The estimator's answer to each run's query, with the calibration of the GPU the run measured."""
    answers = [None] * len(runs)
    for device in sorted({run[4] for run in runs}):
        idx = [i for i, run in enumerate(runs) if run[4] == device]
        lines = ''.join(runs[i][1] + ' ' + ' '.join(map(str, runs[i][2])) + '\n' for i in idx)
        cmd = [estimator] + (['--device', device] if device else [])
        out = subprocess.run(cmd, input=lines, capture_output=True, text=True, check=True).stdout.splitlines()
        for i, est in zip(idx, out):
            answers[i] = est
    return answers


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--check', help='GEOMEAN,MAX: fail when the regret exceeds these bounds')
    ap.add_argument('--per-total', action='store_true',
                    help="masked rows: rank at each row's own total of row blocks (R queries), as the "
                         "count-adaptive rule prices a total, instead of as the host plans from the hint")
    ap.add_argument('estimator')
    ap.add_argument('files', nargs='+')
    args = ap.parse_args()
    estimator, files = args.estimator, args.files
    runs = []  # (shape key, estimator query, config, measured us, device)
    for f in files:
        data = json.load(open(f))
        if 'rows' in data:
            runs += [run + (data.get('device', ''),) for run in peer_bench_runs(data, args.per_total)]
            continue
        device = data.get('device', {}).get('name', '')
        for case in data['cases']:
            shape = case['shape']
            if case['suite'] not in ('dense-bf16', 'dense-fp8') or shape['m'] <= 128:
                continue
            for r in case['results']:
                if r['status'] != 'ok' or not r['contender'].startswith('libdg'):
                    continue
                parsed = parse(case['suite'], r.get('config', ''))
                if parsed:
                    kind, cfg = parsed
                    key = (kind, shape['m'], shape['n'], shape['k'], f)
                    runs.append((key, '%d %d %d %d' % key[:4], cfg, r['time_us']['median'], device))
    if not runs:
        sys.exit('no libdg results with M > 128 or forced grouped configs in the given files')
    answers = estimates(estimator, runs)
    shapes = {}
    for (key, _, cfg, t, _), est in zip(runs, answers):
        if not est.startswith('ERR'):
            shapes.setdefault(key, {}).setdefault(cfg, (float(est.split()[0]), []))[1].append(t)
    regrets = []
    for key, by_cfg in sorted(shapes.items(), key=lambda item: str(item[0])):
        cands = [(est, math.exp(sum(map(math.log, ts)) / len(ts)), cfg) for cfg, (est, ts) in by_cfg.items()]
        best = min(cands, key=lambda c: c[1])
        pick = min(cands, key=lambda c: c[0])
        regret = pick[1] / best[1]
        regrets.append(regret)
        label = ('%-4s %5d %5d %5d' % (['bf16', 'fp8', '1d1d'][key[0]], key[1], key[2], key[3]) if len(key) == 5 else
                 '%s%-2d %5d %5d %5d' % key[:5])
        print('%s  model picks %-34s %8.1f us (est %8.1f)  best %-34s %8.1f us (est %8.1f)  regret %.3f%s'
              % (label, pick[2], pick[1], pick[0], best[2], best[1], best[0], regret, '  <--' if regret > 1.02 else ''))
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
