#!/usr/bin/env bash
# Builds the Rust and Go examples (a BF16 GEMM checked against a CPU reference) against a build
# tree's libdg, installed into a scratch prefix and found through pkg-config, and copies the
# binaries into DEST/bindings/ (gemm-rust, gemm-go), for a machine with a GPU but no Rust or Go
# toolchain. They load libdg.so.0 from LD_LIBRARY_PATH (tests/run_device.sh sets it to the stage).
#   bindings/stage_examples.sh BUILD_DIR DEST
set -euo pipefail
build=$(cd "${1:?usage: bindings/stage_examples.sh BUILD_DIR DEST}" && pwd)
mkdir -p "${2:?destination folder}/bindings"
dest=$(cd "$2" && pwd)/bindings
here=$(cd "$(dirname "$0")" && pwd)
work=$build/stage-examples
rm -rf "$work/prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
PKG_CONFIG_PATH=$(dirname "$(find "$work/prefix" -name dg.pc | head -n1)")
export PKG_CONFIG_PATH CARGO_TARGET_DIR=$work/target CARGO_NET_OFFLINE=true GOPROXY=off GOTOOLCHAIN=local
(cd "$here/rust" && cargo build --offline --quiet --release --example gemm)
cp "$CARGO_TARGET_DIR/release/examples/gemm" "$dest/gemm-rust"
(cd "$here/go" && go build -o "$dest/gemm-go" ./examples/gemm)
strip --strip-unneeded "$dest/gemm-rust" "$dest/gemm-go"
du -sh "$dest"
