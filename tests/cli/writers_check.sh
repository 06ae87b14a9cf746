#!/usr/bin/env bash
# Every model a command writes passes `onnxtool check`: each writer (optimize, convert --opset,
# convert --to-fp16, convert --external-data, quantize --mode dynamic, edit, extract) runs on the
# real models the tests fetch, the bundled ones and 200 generated models (tests/differential/'s
# generator, seeds 1-200; WRITERS_SEEDS=N runs seeds 1-N; every fourth one stored with its nodes
# in reverse order, out of topological order), and each file written is checked by a separate
# `onnxtool check`. A writer may refuse (exit 1: a node with no equivalent at the target opset,
# float16 beyond tolerance), leaving nothing behind, but never because its own result fails the
# checker (the write gate catching a writer's bug) and never with a usage error. Under the
# sanitizers one generated model in ten runs.
#
# Environment: ONNXTOOL (the binary; onnxtool_differential beside it), ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx
GENERATOR=$(dirname "$ONNXTOOL")/onnxtool_differential
[[ -x $GENERATOR ]] || { echo "FAIL: $GENERATOR is not built"; exit 1; }
make_work writers

real=()
for f in "$SOURCE_DIR"/testdata/*.onnx "$MODELS"/ch_PP-OCRv4_det_infer.onnx "$MODELS"/ch_PP-OCRv4_rec_infer.onnx \
  "$MODELS"/ch_ppocr_mobile_v2.0_cls_infer.onnx "$MODELS"/silero_vad_legacy.onnx "$MODELS"/silero_vad_v5.onnx \
  "$MODELS"/silero_vad_v6.onnx "$MODELS"/bench/oww_melspectrogram.onnx "$MODELS"/bench/oww_embedding.onnx; do
  if [[ -f $f ]]; then real+=("$f"); else missing_data "$f"; fi
done

stride=1
((SANITIZED)) && stride=10
seeds=${WRITERS_SEEDS:-200}
"$GENERATOR" --seeds "1-$seeds" --generate "$WORK/gen" >/dev/null || { echo "FAIL: the generator"; exit 1; }
generated=()
for ((s = 1; s <= seeds; s += stride)); do generated+=("$WORK/gen/seed_$s.onnx"); done

# Every fourth generated model (seeds 1, 5, 9, ...) with its main graph's nodes reversed; the list
# of each model's fed inputs and first output (edit renames the first input, extract cuts between
# them), its opset and whether it was reversed.
"$PYTHON" - "$WORK/io.txt" "${real[@]}" "${generated[@]}" <<'EOF' || { echo "FAIL: listing the models"; exit 1; }
import re, sys
import onnx
out = open(sys.argv[1], "w")
for path in sys.argv[2:]:
    m = onnx.load(path, load_external_data=False)
    g = m.graph
    seed = re.search(r"seed_(\d+)\.onnx$", path)
    reversed_order = bool(seed) and int(seed.group(1)) % 4 == 1 and len(g.node) > 1
    if reversed_order:
        nodes = list(g.node)[::-1]
        del g.node[:]
        g.node.extend(nodes)
        onnx.save(m, path)
    inits = {t.name for t in g.initializer}
    fed = [i.name for i in g.input if i.name not in inits]
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    out.write(f"{path}\t{','.join(fed)}\t{g.output[0].name}\t{opset}\t{int(reversed_order)}\n")
EOF

declare -A refusals
written=()
reversed_seen=0
reversed_sorted=0
n=0
while IFS=$'\t' read -r model inputs output opset reversed; do
  input=${inputs%%,*}
  n=$((n + 1))
  base=$WORK/out/m$n
  # The opset targets: down to one of 7, 9, 11, 12 below the model's, and up to 21.
  down=7
  for t in 12 11 9; do if ((t < opset)); then down=$t; break; fi; done
  writers=(
    "optimize|optimize $model -o $base.opt.onnx|$base.opt.onnx"
    "convert-down|convert $model --opset $down -o $base.down.onnx|$base.down.onnx"
    "convert-up|convert $model --opset 21 -o $base.up.onnx|$base.up.onnx"
    "fp16|convert $model --to-fp16 -o $base.fp16.onnx|$base.fp16.onnx"
    "external|convert $model --external-data --size-threshold 0 -o $base.ext.onnx|$base.ext.onnx"
    "quantize|quantize $model --mode dynamic -o $base.q.onnx|$base.q.onnx"
    "edit|edit $model --rename-input $input=renamed_input -o $base.edit.onnx|$base.edit.onnx"
    "extract|extract $model --from $inputs --to $output -o $base.cut.onnx|$base.cut.onnx"
  )
  ((opset >= 21)) && unset 'writers[2]'
  ((opset <= 7)) && unset 'writers[1]'
  for w in "${writers[@]}"; do
    IFS='|' read -r what cmd file <<<"$w"
    mkdir -p "$WORK/out"
    # shellcheck disable=SC2086  # the command's words, no spaces in these paths
    "$ONNXTOOL" $cmd >"$WORK/stdout" 2>"$WORK/stderr"
    rc=$?
    err=$(grep -v ': progress: ' "$WORK/stderr" | head -c 300)
    label="$what on $(basename "$model")"
    if [[ $rc -eq 0 ]]; then
      if [[ -f $file ]]; then written+=("$file"); ok; else fail "$label: exit 0 and no $file"; fi
      if [[ $reversed == 1 && $what == edit ]]; then
        reversed_seen=$((reversed_seen + 1))
        grep -q "^sorted: " "$WORK/stdout" && reversed_sorted=$((reversed_sorted + 1))
      fi
      continue
    fi
    [[ -e $file ]] && fail "$label: exit $rc and $file left behind"
    if [[ $rc -ne 1 ]]; then
      fail "$label: exit $rc: $err"
    elif grep -q "fails onnxtool check" <<<"$err"; then
      fail "$label: the writer made a model its check rejects: $err"
    else
      case $err in
        *"no equivalent"*) kind="no equivalent at the target opset" ;;
        *"verification failed"*) kind="beyond tolerance in verification" ;;
        *"cannot verify"*) kind="the original does not run on random inputs" ;;
        *) kind="other: $err" ;;
      esac
      refusals[$kind]=$((${refusals[$kind]:-0} + 1))
      [[ $kind == other:* ]] && fail "$label: an unexpected refusal: $err" || ok
    fi
  done
done <"$WORK/io.txt"

# One check per 100 written files; every one must be valid.
invalid=0
for ((i = 0; i < ${#written[@]}; i += 100)); do
  "$ONNXTOOL" check --max-errors 1 "${written[@]:i:100}" >"$WORK/check" 2>&1
  while read -r line; do
    invalid=$((invalid + 1))
    fail "check: $line"
  done < <(grep -E ': invalid \(' "$WORK/check")
done
[[ $invalid -eq 0 ]] && ok
[[ $reversed_seen -gt 0 && $reversed_sorted -eq $reversed_seen ]] && ok ||
  fail "edit said 'sorted:' on $reversed_sorted of $reversed_seen models stored out of order"

echo "$n models (${#real[@]} real or bundled, ${#generated[@]} generated, $reversed_seen out of order), ${#written[@]} files written, all checked: $invalid invalid"
for k in "${!refusals[@]}"; do echo "  refused, ${refusals[$k]}x: $k"; done
finish
