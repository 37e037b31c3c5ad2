#!/bin/bash
# Session 9 call 7: Python binding host time (final code), cProfile of the torch path, binding GPU tests.
set -u
S=devrun/main; R=/tmp/r7; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S DG_LIBRARY_PATH=$PWD/$S DG_JIT_CACHE_DIR=$J
for r in 1 2; do
  PYTHONPATH=$PWD/devrun/oldpy python3 devrun/pyhost.py $R/old$r.json > $R/old$r.txt 2>&1; echo "old $r rc $?"
  PYTHONPATH=$PWD/bindings/python python3 devrun/pyhost.py $R/new$r.json > $R/new$r.txt 2>&1; echo "new $r rc $?"
done
PYTHONPATH=$PWD/bindings/python python3 devrun/pyprof.py > $R/pyprof.txt 2>&1; echo "prof rc $?"
PYTHONPATH=$PWD/bindings/python timeout 400 python3 -m pytest bindings/python/tests -q -p no:cacheprovider > $R/pytest.txt 2>&1; echo "pytest rc $?"
cd /tmp && tar czf $OUT/r7.tgz r7
