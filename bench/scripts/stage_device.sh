#!/usr/bin/env bash
# Copies what a GPU machine runs out of a build tree into a small folder, stripped, so that several
# builds fit in a small transfer: libdg.so*, dg-demo, bench/dg-bench, tests/dg_gpu_tests,
# tests/dg_unit_tests, in the build tree's layout. Every device runner takes such a stage (or the
# build tree itself): tests/run_device.sh, bench/scripts/run_device.sh, ab_builds.sh, sweep_gemm.sh.
#   bench/scripts/stage_device.sh BUILD_DIR DEST
set -eu
BUILD=${1:?usage: bench/scripts/stage_device.sh BUILD_DIR DEST}
DEST=${2:?destination folder}
rm -rf "$DEST"
mkdir -p "$DEST/bench" "$DEST/tests"
cp -P "$BUILD/libdg.so" "$BUILD/libdg.so.0" "$DEST/"
cp "$(readlink -f "$BUILD/libdg.so.0")" "$DEST/"
cp "$BUILD/dg-demo" "$DEST/"
cp "$BUILD/bench/dg-bench" "$DEST/bench/"
cp "$BUILD/tests/dg_gpu_tests" "$BUILD/tests/dg_unit_tests" "$DEST/tests/"
find "$DEST" -type f -exec strip --strip-unneeded {} +
du -sh "$DEST"
