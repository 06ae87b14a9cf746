#!/usr/bin/env bash
# Node-count scaling: onnxtool's commands on models of 10 thousand to 1 million tiny nodes, as a
# markdown table (seconds, microseconds per node, peak RSS). Per-node cost must stay flat as the
# node count grows a hundredfold; a cost that grows with it (a scan of the node list per node) is
# a quadratic path. The models (bench/make_large_graph):
#   chain  unnamed Relu chain, float[1,8] (messages call its nodes "node #i (Relu)")
#   named  the same chain with node names
#   wide   N-2 unnamed Relus reading one input, joined by one Sum and one Concat of N-2 inputs
#
#   bench/large_graph.sh
#
# Environment: ONNXTOOL_BUILD_DIR (default build/), BENCH_NODES (default "10000 100000 1000000"),
# BENCH_SHAPES (default "chain named wide").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ONNXTOOL_BUILD_DIR:-$ROOT/build}
NODES=${BENCH_NODES:-10000 100000 1000000}
SHAPES=${BENCH_SHAPES:-chain named wide}

[[ -x $BUILD_DIR/onnxtool && -x $BUILD_DIR/make_large_graph ]] || "$ROOT/scripts/build.sh" >&2
command -v /usr/bin/time >/dev/null || { echo "install GNU time (apt-get install time)" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# One timed run: prints "seconds peak_MB exit_status".
timed() {
  local t0=$EPOCHREALTIME status=0
  /usr/bin/time -f "%M" -o "$TMP/time.txt" "$@" >"$TMP/out.txt" 2>&1 || status=$?
  awk -v a="$t0" -v b="$EPOCHREALTIME" -v kb="$(tail -1 "$TMP/time.txt")" -v s="$status" \
    'BEGIN{printf "%.3f %.0f %d\n", b - a, kb / 1024, s}'
}

echo "| model | nodes | command | seconds | µs / node | peak MB | exit |"
echo "|---|---:|---|---:|---:|---:|---:|"
for shape in $SHAPES; do
  for n in $NODES; do
    m="$TMP/${shape}_$n.onnx"
    "$BUILD_DIR/make_large_graph" "$m" --nodes "$n" --shape "$shape" >/dev/null
    commands=(
      "check|check $m"
      "optimize --no-verify|optimize $m -o $TMP/opt.onnx --no-verify"
      "optimize (verified)|optimize $m -o $TMP/opt.onnx"
      "convert --opset 13|convert $m -o $TMP/conv.onnx --opset 13 --no-verify"
      "run --random|run $m --random"
    )
    for c in "${commands[@]}"; do
      label=${c%%|*}
      read -r -a args <<<"${c#*|}"
      read -r secs mb status < <(timed "$BUILD_DIR/onnxtool" "${args[@]}")
      awk -v model="$shape" -v n="$n" -v label="$label" -v s="$secs" -v mb="$mb" -v st="$status" \
        'BEGIN{printf "| %s | %d | %s | %.3f | %.2f | %d | %d |\n", model, n, label, s, s * 1e6 / n, mb, st}'
      rm -f "$TMP/opt.onnx" "$TMP/conv.onnx"
    done
    rm -f "$m"
  done
done
