#!/usr/bin/env bash
# Tests a language binding against libdg installed from a build tree into a scratch prefix and
# found through pkg-config, the way users find an installed libdg.
#   bindings/test.sh rust|go BUILD_DIR WORK_DIR
# Exits 77 (CTest: skipped) when the language's toolchain is missing, unless DG_REQUIRE_BINDINGS=1
# (CI sets it: there a missing toolchain is a failure).
set -euo pipefail
lang=${1:?usage: bindings/test.sh rust|go BUILD_DIR WORK_DIR}
build=${2:?missing BUILD_DIR}
work=${3:?missing WORK_DIR}
here=$(cd "$(dirname "$0")" && pwd)

case $lang in
  rust) tools=(cargo rustc) packages="rustc cargo" ;;
  go) tools=(go) packages=golang-go ;;
  *) echo "unknown binding '$lang' (expected rust or go)" >&2; exit 2 ;;
esac
for tool in "${tools[@]}"; do
  if ! command -v "$tool" >/dev/null; then
    if [ "${DG_REQUIRE_BINDINGS:-0}" = 1 ]; then
      echo "error: $tool not found (DG_REQUIRE_BINDINGS=1)" >&2; exit 1
    fi
    echo "skipped: $tool not found (Debian: apt-get install $packages)"; exit 77
  fi
done

mkdir -p "$work"
prefix=$work/prefix
rm -rf "$prefix"
"${CMAKE_COMMAND:-cmake}" --install "$build" --prefix "$prefix" >/dev/null
pc_dir=$(dirname "$(find "$prefix" -name dg.pc | head -n1)")
export PKG_CONFIG_PATH=$pc_dir
libdir=$(pkg-config --variable=libdir dg)
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DG_JIT_CACHE_DIR=$work/jit-cache
echo "libdg $(pkg-config --modversion dg) from $libdir (pkg-config)"

case $lang in
  rust)
    export CARGO_TARGET_DIR=$work/target CARGO_NET_OFFLINE=true
    [ -n "${HOME:-}" ] || export CARGO_HOME=$work/cargo-home
    cd "$here/rust"
    "${tools[1]}" --version
    cargo test --offline --quiet
    cargo run --offline --quiet --example gemm
    # The MoE expert layer, small enough for a debug build's CPU reference; it too skips without a GPU.
    cargo run --offline --quiet --example moe_layer -- --experts 2 --tokens 128 --iters 3
    ;;
  go)
    export GOPROXY=off GOTOOLCHAIN=local
    [ -n "${HOME:-}" ] || export GOCACHE=$work/go-cache
    cd "$here/go"
    go version
    go vet ./...
    go test -count=1 ./...
    go run ./examples/gemm
    ;;
esac
