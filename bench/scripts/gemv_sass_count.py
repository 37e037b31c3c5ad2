#!/usr/bin/env python3
"""Counts the SASS instructions a warp issues per iteration of the NVFP4 GEMV main loop, by class.

The main loop is the outermost backward branch around the block barrier. Code inside it that a
warp does not run in a steady-state iteration (b decode at a batch change, a batch wrap, a partial
last round, the cross-warp reduction done by the first threads) is given with --cold as the
forward-branch regions ([branch + 1, target)) that hold it; --list shows the regions (with hints:
a_sl/b_sl = the strides of a/b per batch, CS2R = zero fill, 0xfdfeff00 = the b-decode table).
Predicated instructions count: a warp issues them whatever the predicate.
"""
import argparse
import collections
import re

def parse(path):
    ins = []
    for line in open(path):
        m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
    return ins

def opcode(text):
    return re.sub(r'^@!?U?P\w+\s+', '', text).split()[0]

def klass(op):
    base = op.split('.')[0]
    if op.startswith('IMAD.U32') or op.startswith('IMAD.MOV') or base in ('MOV', 'CS2R', 'S2R', 'LDC'):
        return 'MOV/const'
    if base == 'IDP': return 'IDP'
    if base == 'PRMT': return 'PRMT'
    if base in ('LOP3', 'SHF', 'LEA', 'IADD3', 'VIADD', 'IMAD', 'ISETP', 'VIMNMX', 'SEL', 'PLOP3', 'IABS'):
        return 'INT (addr/logic/cmp)'
    if base.startswith('U') or base == 'S2UR': return 'uniform'
    if base in ('FFMA', 'FMUL', 'FADD', 'FSEL', 'HFMA2', 'HMUL2', 'HADD2') and '.F32' not in op: return 'FP (FFMA/FMUL/FADD/FSEL/HFMA2)'
    if base in ('I2FP', 'I2F', 'F2FP', 'HADD2', 'F2F'): return 'CVT (I2F/F2FP/HADD2.F32)'
    if base in ('LDG', 'LDS', 'STS', 'STG'): return base
    if base == 'SHFL': return 'SHFL'
    if base in ('BRA', 'BSSY', 'BSYNC', 'BAR', 'EXIT', 'WARPSYNC', 'NOP'): return 'ctrl'
    return base

def main(path, cold_specs=(), verbose=False, list_regions=False):
    ins = parse(path)
    idx = {a: i for i, (a, _) in enumerate(ins)}
    bar = [a for a, t in ins if 'BAR.SYNC' in t]
    back, regions = [], []
    for a, t in ins:
        m = re.search(r'BRA (?:`\(.*?\)\s*)?0x([0-9a-f]+)', t)
        if not m: continue
        dst = int(m.group(1), 16)
        if dst <= a: back.append((dst, a))
        else: regions.append((a + 16, dst))
    loops = [(s, e) for s, e in back if not bar or s <= bar[0] <= e]
    head, tail = min(loops, key=lambda p: p[0])
    body = [(a, t) for a, t in ins if head <= a <= tail]
    regions = [(s, e) for s, e in regions if head <= s and e <= tail + 16]
    cold = {}
    for spec in cold_specs:
        name, at = spec.split('@')
        at = int(at, 16)
        r = [(s, e) for s, e in regions if s == at]
        assert r, f'no forward-branch region starts at 0x{at:x}'
        cold[name] = r[0]
    if list_regions:
        for s, e in sorted(regions):
            n = sum(1 for a, _ in body if s <= a < e)
            sig = [k for k, pat in (('b_sl', 'c[0x0][0x268]'), ('a_sl', 'c[0x0][0x250]'), ('LDG', 'LDG'), ('CS2R', 'CS2R'),
                                    ('0xfdfeff00', '0xfdfeff00'), ('E2M1', 'E2M1'), ('LDS', 'LDS'), ('STG', 'STG'), ('SHFL', 'SHFL'))
                   if any(pat in t for a, t in body if s <= a < e)]
            print(f'  region 0x{s:x}..0x{e:x} ({ins[idx[s]-1][1][:24]!r}): {n} [{" ".join(sig)}]')
    def in_cold(a):
        return any(s <= a < e for s, e in cold.values())
    hot = [(a, t) for a, t in body if not in_cold(a)]
    c = collections.Counter(klass(opcode(t)) for _, t in hot)
    ops = collections.Counter(opcode(t) for _, t in hot)
    print(f'{path}: loop 0x{head:x}..0x{tail:x}: {len(body)} instructions; per iteration (hot path): {len(hot)}')
    for name, (s, e) in cold.items():
        print(f'  left out, {name}: 0x{s:x}..0x{e:x}: {sum(1 for a, _ in body if s <= a < e)}')
    for k, v in sorted(c.items(), key=lambda kv: -kv[1]):
        print(f'    {k:32s} {v}')
    if verbose:
        for k, v in sorted(ops.items(), key=lambda kv: -kv[1]):
            print(f'      {k:30s} {v}')

if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('sass')
    ap.add_argument('--cold', default='', help='comma-separated NAME@0xSTART: forward-branch regions left out')
    ap.add_argument('-v', action='store_true', help='also count by opcode')
    ap.add_argument('--list', action='store_true', help='list the forward-branch regions of the loop')
    a = ap.parse_args()
    main(a.sass, [x for x in a.cold.split(',') if x], a.v, a.list)
