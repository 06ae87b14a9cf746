#!/usr/bin/env bash
# `run --profile [FILE]`: per-op-type and per-node times as text and JSON, and a Chrome trace
# whose events are consistent with the JSON (one model_run per run, one event per node and run
# inside its run, op types and providers named); on a Vulkan device the nodes carry the device's
# own time. A trace path that cannot be written is one line, exit 2, nothing written.
#
# Environment: ONNXTOOL (the binary); python3 for the JSON checks; the real models when fetched.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work profile
needs_python json
TINY=$SOURCE_DIR/testdata/tiny_cnn.onnx

# tiny_cnn's 6 nodes: its Relu runs inside the Conv before it, and is timed with it.
expect_tool "profile as text" 0 "slowest 5 of 5 nodes" -- run "$TINY" --random --profile
grep -q "^  Conv+Relu " "$WORK/stdout" && ok || fail "profile text lacks the Conv+Relu row: $(cat "$WORK/stdout")"

# check_profile JSON TRACE RUNS NODES DEVICE: the JSON's figures and the trace agree.
check_profile() {
  "$PYTHON" - "$@" <<'EOF'
import json, sys
doc_path, trace_path, runs, nodes, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
p = json.load(open(doc_path))["profile"]
errors = []
def need(cond, what):
    if not cond:
        errors.append(what)
need(p["runs"] == runs, f"runs {p['runs']} != {runs}")
need(len(p["nodes"]) == nodes, f"{len(p['nodes'])} nodes, expected {nodes}")
need(abs(sum(r["share"] for r in p["nodes"]) - 1) < 1e-6, "node shares do not sum to 1")
need(abs(sum(r["share"] for r in p["op_types"]) - 1) < 1e-6, "op type shares do not sum to 1")
need(abs(sum(r["ms_per_run"] for r in p["nodes"]) - p["nodes_ms"]) < 1e-6 * max(1, p["nodes_ms"]), "node times do not sum to nodes_ms")
need(all(r["count_per_run"] == 1 for r in p["nodes"]), "a node ran other than once per run")
need(all(r["device"] == device for r in p["nodes"]), f"a node not on {device}")
need(all(r["device_timed"] == (device != "cpu") for r in p["nodes"]), "device timing missing or spurious")
ms = [r["ms_per_run"] for r in p["nodes"]]
need(ms == sorted(ms, reverse=True), "nodes not sorted by time")
need(p["trace"] == trace_path, "trace path not reported")
trace = json.load(open(trace_path))
run_events = [e for e in trace if e["cat"] == "Session"]
node_events = [e for e in trace if e["cat"] == "Node"]
need(len(run_events) == runs, f"{len(run_events)} model_run events")
need(len(node_events) == runs * nodes, f"{len(node_events)} node events, expected {runs * nodes}")
by_run = {e["args"]["run"]: e for e in run_events}
for e in node_events:
    r = by_run.get(e["args"]["run"])
    if r is None or e["ts"] < r["ts"] or e["ts"] + e["dur"] > r["ts"] + r["dur"] + 1:
        errors.append(f"node event {e['name']} outside its run")
        break
    if e["ph"] != "X" or not e["name"].endswith("_kernel_time") or not e["args"].get("op_name"):
        errors.append(f"malformed node event {e}")
        break
    if ("device_dur" in e["args"]) != (device != "cpu"):
        errors.append(f"device_dur wrong in {e}")
        break
types = {r["op_type"] for r in p["op_types"]}
need(types == {e["args"]["op_name"] for e in node_events}, "op types of the trace and the JSON differ")
if errors:
    print("; ".join(errors))
    sys.exit(1)
EOF
}

expect_tool "profile --json with a trace" 0 '"profile"' -- run "$TINY" --random --benchmark 3 --profile "$WORK/trace.json" --json
cp "$WORK/stdout" "$WORK/doc.json"
if why=$(check_profile "$WORK/doc.json" "$WORK/trace.json" 3 5 cpu); then ok; else fail "CPU profile: $why"; fi

# A real model: every node of the main graph once per run (but those fused into a Conv), its 38
# Convs among them (alone or with fused activations: "Conv+...").
if [[ -f $MODELS/ch_PP-OCRv4_rec_infer.onnx ]]; then
  if "$ONNXTOOL" run "$MODELS/ch_PP-OCRv4_rec_infer.onnx" --random --input-shape x=1,3,48,160 --benchmark 2 \
    --profile "$WORK/rec.trace.json" --json >"$WORK/rec.json" 2>"$WORK/stderr"; then
    nodes=$("$PYTHON" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["profile"]["nodes"]))' "$WORK/rec.json")
    # Each profiled node stands for itself and the nodes fused into it ("Conv+Add+Clip+Mul"):
    # together, every node of the graph but its Constant nodes and the 15 that compute from
    # constants only (computed on the first run, then reused).
    accounted=$("$PYTHON" -c 'import json,sys; print(sum(1 + n["op_type"].count("+") for n in json.load(open(sys.argv[1]))["profile"]["nodes"]))' "$WORK/rec.json")
    graph_nodes=$("$PYTHON" -c 'import onnx,sys; print(sum(n.op_type != "Constant" for n in onnx.load(sys.argv[1]).graph.node))' "$MODELS/ch_PP-OCRv4_rec_infer.onnx")
    ((nodes < accounted && accounted == graph_nodes - 15)) && ok ||
      fail "rec: $nodes nodes profiled stand for $accounted of the graph's $graph_nodes non-Constant nodes"
    if why=$(check_profile "$WORK/rec.json" "$WORK/rec.trace.json" 2 "$nodes" cpu); then ok; else fail "rec profile: $why"; fi
    convs=$("$PYTHON" -c 'import json,sys; print(sum(r["count_per_run"] for r in json.load(open(sys.argv[1]))["profile"]["op_types"] if r["op_type"].split("+")[0] == "Conv"))' "$WORK/rec.json")
    [[ $convs == "38.0" ]] && ok || fail "rec: Conv counts per run $convs, expected 38.0"
  else
    fail "rec --profile: $(cat "$WORK/stderr")"
  fi
else
  missing_data "$MODELS/ch_PP-OCRv4_rec_infer.onnx"
fi

# The run's peak of large tensors: a Relu over float[1,2^20] allocates its 4 MiB output (whole
# pages), the 4 MiB input being held before the run.
if "$PYTHON" - "$WORK/relu.onnx" <<'EOF'
import sys
import onnx
from onnx import TensorProto, helper
io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1 << 20]) for n in "xy"]
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", io[:1], io[1:])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.save(m, sys.argv[1])
EOF
then
  expect_tool "tensor peak as text" 0 "held at most 4.0" -- run "$WORK/relu.onnx" --random --profile
  expect_tool "tensor peak in the JSON" 0 '"tensor_peak_bytes"' -- run "$WORK/relu.onnx" --random --benchmark 2 --profile --json
  peak=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["profile"]["tensor_peak_bytes"])' "$WORK/stdout")
  ((peak >= 4194304 && peak <= 4194304 + 4096)) && ok || fail "tensor_peak_bytes $peak for one 4 MiB output"
else
  missing_data "python3-onnx (the Relu model)"
fi

# On the Vulkan device: the device's own time per node (timestamp queries).
if "$ONNXTOOL" devices --json 2>/dev/null | grep -q '"vulkan:0"'; then
  export ONNXTOOL_VULKAN_VALIDATION="${ONNXTOOL_VULKAN_VALIDATION:-1}"
  expect_tool "profile on vulkan" 0 "device nodes: the device's time" -- \
    run "$TINY" --random --device vulkan --benchmark 2 --profile "$WORK/gpu.trace.json"
  expect_tool "profile on vulkan --json" 0 '"device_timed": true' -- \
    run "$TINY" --random --device vulkan --benchmark 2 --profile "$WORK/gpu.trace.json" --json
  cp "$WORK/stdout" "$WORK/gpu.json"
  if why=$(check_profile "$WORK/gpu.json" "$WORK/gpu.trace.json" 2 6 vulkan:0); then ok; else fail "Vulkan profile: $why"; fi
  # CPU nodes that read device values (PaddleOCR cls's int64 Casts): their wait for the device
  # work before them is not theirs (the device nodes' times count that work), so the nodes' sum
  # stays within the run's time (PaddleOCR cls on lavapipe printed "751 ms per run, of which nodes 1462 ms").
  CLS=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
  if [[ -f $CLS ]]; then
    expect_tool "profile of cls on vulkan, the rest named" 0 "ms (waiting for and recording device work, " -- \
      run "$CLS" --random --shape x=1,3,48,96 --device vulkan --profile
    expect_tool "profile of cls on vulkan" 0 '"nodes_ms"' -- \
      run "$CLS" --random --shape x=1,3,48,96 --device vulkan --benchmark 2 --profile --json
    "$PYTHON" -c '
import json, sys
p = json.load(open(sys.argv[1]))["profile"]
cpu = [n for n in p["nodes"] if n["device"] == "cpu"]
assert cpu, "no node ran on the CPU"
assert p["nodes_ms"] <= p["run_ms"] * 1.01, "nodes %.3f ms > run %.3f ms" % (p["nodes_ms"], p["run_ms"])
' "$WORK/stdout" && ok || fail "cls on vulkan: the nodes' time exceeds the run's: $(head -c 300 "$WORK/stdout")"
  else
    missing_data "$CLS"
  fi
else
  missing_data "a Vulkan device (Debian: mesa-vulkan-drivers)"
fi

# A trace that cannot be written: one line, exit 2, nothing left; the model untouched.
cp "$TINY" "$WORK/model.onnx"
before=$(sha256sum <"$WORK/model.onnx")
expect_tool "trace over the model" 2 "model.onnx" -- run "$WORK/model.onnx" --random --profile "$WORK/model.onnx"
[[ $(sha256sum <"$WORK/model.onnx") == "$before" ]] && ok || fail "the model was changed"
expect_tool "trace in a missing folder" 2 "--profile" -- run "$TINY" --random --profile "$OUT/no/such/dir/t.json"
expect_tool "trace onto a folder" 2 "--profile" -- run "$TINY" --random --profile "$OUT"
finish
