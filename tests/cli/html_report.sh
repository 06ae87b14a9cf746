#!/usr/bin/env bash
# --report FILE.html of quantize, compare --per-layer and run --profile: each page renders in
# headless Chromium without a console error, parses as HTML with every SVG well-formed XML, holds
# the --json document the same command prints in its data block, and shows the same figures in
# its charts and tables (data-value attributes). An output named with <>&"' and </script> stays
# text. The same inputs give the same bytes; a --report that is not .html is a usage error.
#
# Environment: ONNXTOOL; chromium and python3 (testdata/fetch_models.sh installs chromium).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work html_report
needs_python json
command -v chromium >/dev/null 2>&1 || skip_all "chromium"
TINY=$SOURCE_DIR/testdata/tiny_cnn.onnx
NAME="p<b>&\"'</script>"
M=$WORK/m.onnx
tiny_cnn_samples "$WORK/samples" 2
expect_tool "an output named with markup" 0 "" -- edit "$TINY" -o "$M" --rename-output "probs=$NAME" --no-verify

Q=(quantize "$M" -o "$WORK/q.onnx" --mode static --inputs "$WORK/samples" --op-types Conv,Gemm --exclude-nodes fc)
expect_tool "quantize --report .html" 0 "" -- "${Q[@]}" --report "$WORK/q.html" --json
cp "$WORK/stdout" "$WORK/q.json"
expect_tool "quantize --report .html again" 0 "" -- "${Q[@]}" --report "$WORK/q2.html" --json
cmp -s "$WORK/q.html" "$WORK/q2.html" && ok || fail "quantize: the same inputs gave two different pages"

C=(compare "$M" "$WORK/q.onnx" --inputs "$WORK/samples/s0" --json)
expect_tool "compare --per-layer --report .html" 1 "beyond tolerance" -- "${C[@]}" --per-layer --report "$WORK/c.html"
cp "$WORK/stdout" "$WORK/c.json"
expect_tool "compare --per-layer --report .html again" 1 "beyond tolerance" -- "${C[@]}" --per-layer --report "$WORK/c2.html"
cmp -s "$WORK/c.html" "$WORK/c2.html" && ok || fail "compare: the same inputs gave two different pages"
expect_tool "compare --report .html, outputs only" 1 "beyond tolerance" -- "${C[@]}" --report "$WORK/co.html"
cp "$WORK/stdout" "$WORK/co.json"
expect_tool "compare --report .txt" 2 "--report $OUT/c.txt" -- compare "$M" "$M" --report "$OUT/c.txt"

expect_tool "run --profile --report .html" 0 "" -- run "$M" --random --profile --report "$WORK/r.html" --json
cp "$WORK/stdout" "$WORK/r.json"
expect_tool "run --report without --profile" 2 "--report" -- run "$M" --random --report "$OUT/r.html"
expect_tool "run --profile --report .json" 2 "--report $OUT/r.json" -- run "$M" --random --profile --report "$OUT/r.json"

# Each page in Chromium, side by side (a start costs seconds); its log lines about the page
# (console messages, uncaught errors) fail the test.
for page in q c co r; do
  chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --dump-dom "file://$WORK/$page.html" \
    >"$WORK/$page.dom" 2>"$WORK/$page.log" &
done
wait
for page in q c co r; do
  if grep -E "CONSOLE|Uncaught|$page\.html" "$WORK/$page.log" >"$WORK/$page.bad"; then
    fail "chromium on $page.html: $(head -c 400 "$WORK/$page.bad")"
  else
    ok
  fi
done

"$PYTHON" - "$WORK" "$NAME" <<'EOF'
import html.parser, json, math, sys, xml.etree.ElementTree as ET
work, name = sys.argv[1], sys.argv[2]
errors = []
def need(cond, what):
    if not cond:
        errors.append(what)

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "wbr", "source"}
SVG_LEAVES = {"circle", "line", "rect", "path"}  # written self-closed, or closed right after a title
class Page(html.parser.HTMLParser):
    """The page's elements with their attributes and text, checking that tags nest."""
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.elements, self.data_block, self.in_data = [], [], None, False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a, []))
        if tag == "script" and a.get("id") == "report-data":
            self.in_data = True
            self.data_block = ""
        if tag not in VOID:
            self.stack.append((tag, len(self.elements) - 1))
    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), []))
    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            errors.append(f"{self.label}: </{tag}> closes <{self.stack[-1][0] if self.stack else None}>")
            return
        self.stack.pop()
        self.in_data = False
    def handle_data(self, data):
        if self.in_data:
            self.data_block += data
        for _, i in self.stack:
            self.elements[i][2].append(data)

def parse(path, label):
    p = Page()
    p.label = label
    text = open(path, encoding="utf-8").read()
    p.feed(text)
    p.close()
    need(not [t for t, _ in p.stack if t not in ("html", "body", "head")], f"{label}: unclosed {p.stack}")
    return p, text

def svgs_parse(text, label):
    """Every top-level <svg>...</svg> of the page parses as XML."""
    start, count = 0, 0
    while (i := text.find("<svg", start)) >= 0:
        j = text.find("</svg>", i) + len("</svg>")
        try:
            ET.fromstring(text[i:j])
            count += 1
        except ET.ParseError as e:
            errors.append(f"{label}: an SVG does not parse: {e}: {text[i:i+200]}")
        start = j
    return count

def same(a, b):
    """A figure of the page (attribute text) against the JSON's (number, "inf" string or null)."""
    if b is None:
        return a == "n/a"
    if isinstance(b, str):
        return a == b
    return float(a) == float(b)

def elements(p, tag=None, **attrs):
    return [(t, a, "".join(d)) for t, a, d in p.elements if (tag is None or t == tag) and all(a.get(k) == v for k, v in attrs.items())]

pages = {}
for key in ("q", "c", "co", "r"):
    src, text = parse(f"{work}/{key}.html", f"{key}.html")
    svgs = svgs_parse(text, f"{key}.html")
    dom, dom_text = parse(f"{work}/{key}.dom", f"{key}.dom (Chromium's DOM)")
    # The outputs-only comparison has tables and no chart.
    need(dom_text.count("<svg") == text.count("<svg") == svgs and (svgs > 0) == (key != "co"),
         f"{key}: {svgs} SVGs parse, Chromium's DOM has {dom_text.count('<svg')} of {text.count('<svg')}")
    need(dom.data_block is not None, f"{key}: Chromium's DOM has no report-data block")
    data = json.loads(dom.data_block or "null")
    doc = json.load(open(f"{work}/{key}.json"))
    doc.pop("schema_version", None)  # print_json's stamp on stdout
    pages[key] = (dom, data, doc)
    # The markup in the output's name is text wherever it shows: no <b> element appears.
    need(not elements(dom, "b"), f"{key}: the name {name!r} became markup")

# quantize: the data block is the --json document plus the rows in graph order; every quantized
# node's SQNR point carries the JSON's value; the node kept float is marked with its reason.
dom, data, doc = pages["q"]
rows = data.pop("graph_rows", [])
need(data == doc, "quantize: the page's data block differs from --json")
need(sorted(r["node"] for r in rows) == sorted([n["node"] for n in doc["nodes"]] + [f["node"] for f in doc["kept_float"]]),
     "quantize: the graph rows are not the nodes and the kept-float nodes")
sqnr = {n["node"] or n["tensor"]: n["sqnr_db"] for n in doc["nodes"]}
sqnr_points, series = {}, None
for t, a, _ in dom.elements:
    if t == "g" and "data-series" in a:
        series = a["data-series"]
    if t == "circle" and "data-row" in a and series == "SQNR (dB)":
        sqnr_points[a["data-row"]] = a["data-value"]
need(sqnr_points.keys() == sqnr.keys(), f"quantize: SQNR points {sorted(sqnr_points)} for nodes {sorted(sqnr)}")
for node, v in sqnr.items():
    need(node in sqnr_points and same(sqnr_points[node], v), f"quantize: SQNR of {node!r} {sqnr_points.get(node)} != {v}")
floats = elements(dom, "line", **{"class": "float"})
need({a["data-row"] for _, a, _ in floats} == {f["node"] for f in doc["kept_float"]}, "quantize: the kept-float markers")
need(all(f["reason"] in t for _, _, t in floats for f in doc["kept_float"]), "quantize: a kept-float marker lacks its reason")
out_cells = [t for _, a, t in elements(dom, "td")]
need(name in out_cells, f"quantize: the output {name!r} is not a table cell")

# compare: the first divergence marked at the JSON's tensor; every layer's SQNR point is the
# data block's; the outputs' figures are the JSON's.
dom, data, doc = pages["c"]
layers = data.pop("layers", [])
need(data == doc, "compare: the page's data block differs from --json")
first = doc["per_layer"]["first_beyond_tolerance"]
marks = elements(dom, "line", **{"class": "diverge"})
need(first is not None and marks and all(a["data-row"] == first["tensor"] for _, a, _ in marks),
     f"compare: the divergence marker {[a.get('data-row') for _, a, _ in marks]} is not at {first}")
need(len(layers) == doc["per_layer"]["matched"], "compare: the data block lacks layers")
series = None
for t, a, _ in dom.elements:
    if t == "g" and "data-series" in a:
        series = a["data-series"]
    if t == "circle" and series == "SQNR (dB)":
        layer = next((l for l in layers if l["name"] == a["data-row"]), None)
        need(layer is not None and same(a["data-value"], layer["sqnr_db"]), f"compare: SQNR point {a}")
for o in doc["outputs"]:
    cells = [(a, t) for _, a, t in elements(dom, "td")]
    i = next((k for k, (_, t) in enumerate(cells) if t == o["name"]), None)
    need(i is not None, f"compare: no row for output {o['name']!r}")
    if i is not None:
        need(same(cells[i + 6][0]["data-value"], o["sqnr_db"]) and same(cells[i + 5][0]["data-value"], o["cosine"]),
             f"compare: output {o['name']!r} figures differ from --json")

dom, data, doc = pages["co"]
need(data == doc and "per_layer" not in doc, "compare (outputs only): the data block differs from --json")
need(not elements(dom, "line", **{"class": "diverge"}), "compare (outputs only): a divergence marker without --per-layer")

# run --profile: the op types' bars and the nodes' FLOPs are the JSON's; the JSON holds each
# node's achieved rate against the measured GEMM peak.
dom, data, doc = pages["r"]
need(data == doc, "run: the page's data block differs from --json")
p = doc["profile"]
bars = {a["data-label"]: a["data-value"] for _, a, _ in elements(dom, "g") if "data-label" in a}
for r in p["op_types"]:
    need(r["op_type"] in bars and same(bars[r["op_type"]], r["ms_per_run"]), f"run: op type {r['op_type']} bar {bars.get(r['op_type'])} != {r['ms_per_run']}")
peak = p["gemm_peak"]
need(peak is not None and peak["gflop_per_s"] > 0 and "measured peak of this runner's GEMM" in peak["what"], f"run: gemm_peak {peak}")
known = [r for r in p["nodes"] if r["flops"] is not None]
need(any(r["op_type"].startswith("Conv") for r in known), "run: no Conv node has its FLOPs")
for r in known:
    if r["ms_per_run"] > 0:
        need(math.isclose(r["gflop_per_s"], r["flops"] / (r["ms_per_run"] * 1e6), rel_tol=1e-9), f"run: {r['name']} GFLOP/s")
        need(math.isclose(r["peak_fraction"], r["gflop_per_s"] / peak["gflop_per_s"], rel_tol=1e-9), f"run: {r['name']} fraction of peak")
dots = {}
for _, a, _ in elements(dom, "circle"):
    if "data-y" in a:
        dots.setdefault(a["data-label"], []).append(a)
for r in known:
    label = f"{r['name']} ({r['op_type']})"
    if r["ms_per_run"] > 0 and r["flops"] > 0:
        ys = dots.get(label, [])
        need(len(ys) == 2 and same(ys[0]["data-y"], r["flops"]) and same(ys[1]["data-y"], r["gflop_per_s"])
             and all(same(d["data-x"], r["ms_per_run"]) for d in ys), f"run: the points of {label}: {ys}")
for e in errors:
    print("FAIL:", e)
sys.exit(1 if errors else 0)
EOF
[[ $? -eq 0 ]] && ok || fail "the pages' figures (above)"
finish
