#!/usr/bin/env python3
"""Session-7 experiment (bench/results/2026-11-23-h100-s7/README.md): rewrite the scheduling hints of
the FFMA runs (>= 16 consecutive FFMAs: the FP8 promotion) in libdg's cached GEMM cubins.
  ffma_hint.py MODE FILE|DIR ...
  half: the first 9/16 of each run, all: every FFMA of the run -- clear the operand-reuse flags and the
        no-yield bit (bit 45 of the high word), so the scheduler may switch warps after each;
  stay: set the no-yield bit on every FFMA of the run (reuse flags untouched).
Only control bits change; the disk-cache header's checksum is recomputed. Not part of the library."""
import os, struct, sys

FNV_SEED = 0xcbf29ce484222325

def fnv1a(b, seed=FNV_SEED):
    h = seed
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & 0xffffffffffffffff
    return h

def text_sections(elf):
    assert elf[:4] == b'\x7fELF' and elf[4] == 2
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)
    secs = [struct.unpack_from('<IIQQQQIIQQ', elf, shoff + i * shentsize) for i in range(shnum)]
    stroff = secs[shstrndx][4]
    for s in secs:
        name = elf[stroff + s[0]:elf.index(b'\0', stroff + s[0])].decode()
        if name.startswith('.text.'):
            yield name, s[4], s[5]

def patch_elf(elf, mode):
    elf = bytearray(elf)
    changed = 0
    for name, off, size in text_sections(elf):
        words = [struct.unpack_from('<QQ', elf, off + i) for i in range(0, size, 16)]
        runs, cur = [], []
        for i, (lo, hi) in enumerate(words):
            if (lo & 0xfff) == 0x223:
                cur.append(i)
            else:
                if cur: runs.append(cur)
                cur = []
        if cur: runs.append(cur)
        for r in runs:
            if len(r) < 16: continue
            sel = r if mode in ('all', 'stay') else r[:len(r) * 9 // 16]
            for i in sel:
                lo, hi = words[i]
                new = hi | (1 << 45) if mode == 'stay' else hi & ~(0xf << 58) & ~(1 << 45)
                if new != hi:
                    struct.pack_into('<QQ', elf, off + 16 * i, lo, new)
                    changed += 1
    return bytes(elf), changed

def patch_file(path, mode):
    data = open(path, 'rb').read()
    if data[:4] == b'DGKC':
        magic, ver, k0, k1, size, ck = struct.unpack_from('<4sIQQQQ', data, 0)
        payload = data[40:]
        assert len(payload) == size and fnv1a(payload) == ck, path
        new, n = patch_elf(payload, mode)
        out = struct.pack('<4sIQQQQ', magic, ver, k0, k1, len(new), fnv1a(new)) + new
    else:
        out, n = patch_elf(data, mode)
    open(path, 'wb').write(out)
    print(f'{path}: {n} FFMA hints changed', file=sys.stderr)

if len(sys.argv) < 3 or sys.argv[1] not in ('half', 'all', 'stay'):
    sys.exit(__doc__)
mode = sys.argv[1]
for p in sys.argv[2:]:
    if os.path.isdir(p):
        for root, _, files in os.walk(p):
            for f in files:
                if f.endswith('.cubin') and f.startswith('sm90_gemm'):
                    patch_file(os.path.join(root, f), mode)
    else:
        patch_file(p, mode)
