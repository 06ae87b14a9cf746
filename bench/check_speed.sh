#!/usr/bin/env bash
# `onnxtool check` (with shape inference) against onnx.checker.check_model(full_check=True) on
# the same models, largest first, as a markdown table (issue 3's speed and memory figures).
#
#   bench/check_speed.sh
#
# onnx.checker is Debian's python3-onnx 1.12 (opsets up to 17), so the synthetic models are made
# at opset 17. Times are the best of REPEAT runs: onnxtool as a whole process (load + check +
# exit), onnx as load + check inside one python process (its import time excluded). Peak memory:
# onnxtool's maximum RSS; python's RSS growth above its post-import baseline.
#
# Environment: ONNXTOOL_BUILD_DIR (default build/), REPEAT (default 5), BENCH_SIZES (MiB of the
# synthetic models, default "60 200").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ONNXTOOL_BUILD_DIR:-$ROOT/build}
REPEAT=${REPEAT:-5}
SIZES=${BENCH_SIZES:-60 200}

[[ -x $BUILD_DIR/onnxtool && -x $BUILD_DIR/make_large_model ]] || "$ROOT/scripts/build.sh" >&2
command -v /usr/bin/time >/dev/null || { echo "install GNU time (apt-get install time)" >&2; exit 2; }
/usr/bin/python3 -c "import onnx" 2>/dev/null || { echo "needs Debian python3-onnx" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

models=()
for mb in $SIZES; do
  "$BUILD_DIR/make_large_model" "$TMP/mlp_${mb}mb.onnx" --mb "$mb" --opset 17 >/dev/null
  models+=("$TMP/mlp_${mb}mb.onnx")
done
for m in "$ROOT"/.cache/models/*.onnx; do [[ -f $m ]] && models+=("$m"); done
# Largest first.
mapfile -t models < <(for m in "${models[@]}"; do echo "$(stat -c %s "$m") $m"; done | sort -rn | cut -d' ' -f2-)

best_time() {  # prints "best wall seconds, max RSS KB" over REPEAT runs of a command
  local best=999999 rss=0 out t r
  for _ in $(seq "$REPEAT"); do
    local t0=$EPOCHREALTIME
    /usr/bin/time -f "%M" -o "$TMP/time.txt" "$@" >/dev/null 2>&1 || true
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.4f", b-a}')
    r=$(tail -1 "$TMP/time.txt")
    best=$(awk -v a="$t" -v b="$best" 'BEGIN{print (a<b)?a:b}')
    (( r > rss )) && rss=$r
  done
  echo "$best $rss"
}

echo "| model | size MB | onnxtool check s | onnx.checker load+check s | speed-up | onnxtool peak MB | peak / size | onnx peak growth MB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for m in "${models[@]}"; do
  size=$(stat -c %s "$m")
  read -r ours ours_rss < <(best_time "$BUILD_DIR/onnxtool" check "$m")
  read -r load check py_peak < <(/usr/bin/python3 "$ROOT/bench/onnx_checker_time.py" "$m" "$REPEAT")
  theirs=$(awk -v a="$load" -v b="$check" 'BEGIN{printf "%.3f", a+b}')
  awk -v name="$(basename "$m")" -v size="$size" -v ours="$ours" -v theirs="$theirs" \
      -v rss="$ours_rss" -v py="$py_peak" 'BEGIN{
    mb = size / 1048576;
    printf "| %s | %.1f | %.4f | %s | %.0fx | %.1f | %.2f | %s |\n",
      name, mb, ours, theirs, (ours > 0 ? theirs / ours : 0), rss / 1024, (rss / 1024) / mb, py }'
done
