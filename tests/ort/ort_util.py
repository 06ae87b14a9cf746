"""Shared helpers of the Python tests that judge onnxtool's outputs by onnxruntime-node."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def judge_setup(argv):
    """The common start of a judge run as `JUDGE.py ONNXTOOL SOURCE_DIR CACHE_DIR ...`: returns
    (onnxtool, source_dir, cache_dir, ort_run.js, environment for it), the paths absolute; skips
    the whole test when onnxruntime-node is not installed."""
    onnxtool, source_dir, cache_dir = (os.path.abspath(p) for p in argv[1:4])
    ort_run = os.path.join(source_dir, "tests", "ort", "ort_run.js")
    env = dict(os.environ, ONNXTOOL_ORT_DIR=os.path.join(cache_dir, "ort"))
    if not os.path.isdir(os.path.join(cache_dir, "ort", "node_modules", "onnxruntime-node")):
        skip_all("onnxruntime-node is not installed")
    return onnxtool, source_dir, cache_dir, ort_run, env


def work_dir(prefix):
    """A fresh temporary folder for one judge run, removed when the run ends (whatever its result:
    a failure's message names the case and the models are written again by a re-run)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


class SanitizerSample:
    """Which single-op cases run under the sanitizers (ONNXTOOL_SANITIZED, tests/cli/lib.sh): the
    first case of each op and every `stride`-th after it, so that every kernel still runs under
    them while the Release stage judges the whole grid. keep(op) answers for the next case of op."""

    def __init__(self, stride=3):
        self.stride = stride if os.environ.get("ONNXTOOL_SANITIZED") == "1" else 1
        self.seen = {}
        self.left_out = 0

    def keep(self, op):
        n = self.seen.get(op, 0)
        self.seen[op] = n + 1
        if n % self.stride == 0:
            return True
        self.left_out += 1
        return False

    def note(self):
        """A line for the summary when cases were left out, else ''."""
        return (f" ({self.left_out} more left out under the sanitizers: one case in {self.stride} of each op)"
                if self.left_out else "")


def ort_batch(ort_run, env, work, jobs, level="all", threads=1):
    """Runs the jobs ({"model", "inputs", "output_dir"}) in one onnxruntime-node process
    (tests/ort/ort_run.js --batch); returns the result lines. Raises RuntimeError when a model
    cannot be run or the process stops."""
    path = os.path.join(work, f"jobs_{len(os.listdir(work))}.json")
    with open(path, "w") as f:
        json.dump(jobs, f)
    r = subprocess.run(["node", ort_run, "--batch", path, "--threads", str(threads), "--level", level],
                       capture_output=True, text=True, env=env)
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if len(lines) != len(jobs):
        raise RuntimeError("onnxruntime-node stopped: " + (r.stderr.strip()[-300:] or "?"))
    for line in lines:
        if not line["ok"]:
            raise RuntimeError(f"onnxruntime cannot run {line['model']}: {line['error']}")
    return lines


def sample_folders(folder):
    """[(sample name, {input name: .npy path})] of a folder of sample subfolders."""
    out = []
    for s in sorted(os.listdir(folder)):
        d = os.path.join(folder, s)
        out.append((s, {f[:-4]: os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".npy")}))
    return out


def half_inputs(samples, model, into):
    """The samples ([(name, {input: .npy path})]) with each input `model` declares float16 saved
    as float16 in `into`."""
    import onnx  # only the float16 callers need it
    m = onnx.load(model, load_external_data=False)
    halves = {i.name for i in m.graph.input if i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16}
    out = []
    for s, files in samples:
        converted = {}
        for name, path in files.items():
            if name in halves:
                a = np.load(path).astype(np.float16)
                path = os.path.join(into, f"{s}_{name}.npy")
                np.save(path, a)
            converted[name] = path
        out.append((s, converted))
    return out


def concatenated_outputs(lines):
    """{output name: every sample's values, flattened and concatenated, as float64}."""
    got = {}
    for line in lines:
        for o in line["outputs"]:
            got.setdefault(o["name"], []).append(np.load(o["file"]).astype(np.float64).ravel())
    return {k: np.concatenate(v) for k, v in got.items()}


def judge_outputs(outputs, mine_dir, rtol=1e-3, atol=1e-5, scale_atol=False, select=None):
    """Compares onnxruntime's outputs (the "outputs" of an ort_batch line or of ort_run.js
    --json: {"name", "file"}) with the files of the same names onnxtool wrote in `mine_dir`:
    dtypes and shapes equal, integer and bool values equal, floats within atol + rtol * |ort|
    (NaN matching NaN; with scale_atol, atol times max(1, max |ort|) of the output). `select`,
    when given, picks the values compared: select(output name, array) -> array, applied to both
    sides once their shapes agree. Returns (the first problem or None, the worst error/tolerance
    ratio of the float outputs)."""
    problem, worst = None, 0.0
    for o in outputs:
        ref = np.load(o["file"])
        mine = np.load(os.path.join(mine_dir, os.path.basename(o["file"])))
        if mine.shape != ref.shape or mine.dtype != ref.dtype:
            return f"{o['name']}: {mine.dtype}{list(mine.shape)} vs onnxruntime {ref.dtype}{list(ref.shape)}", worst
        if select:
            ref, mine = select(o["name"], ref), select(o["name"], mine)
        if ref.dtype.kind != "f":
            if not np.array_equal(ref, mine):
                problem = problem or f"{o['name']}: {int(np.count_nonzero(ref != mine))} of {ref.size} values differ"
            continue
        x, y = ref.astype(np.float64), mine.astype(np.float64)
        err = np.where(np.isnan(x) & np.isnan(y), 0, np.abs(x - y))
        a = atol * max(1.0, float(np.max(np.abs(x)))) if scale_atol and x.size else atol
        ratio = float(np.max(err / (a + rtol * np.abs(x)))) if err.size else 0.0
        worst = max(worst, ratio)
        if not ratio <= 1:
            problem = problem or f"{o['name']}: max abs error {float(np.max(err)):.3g} (error/tolerance {ratio:.3g})"
    return problem, worst


def cosine(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 and nb == 0:
        return 1.0
    return float(a @ b / (na * nb)) if na and nb else 0.0


def safe_name(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def verify_args(model, work):
    """Flags giving onnxtool's built-in verification inputs the model can run on.

    A backend suite model verifies on its own test_data_set_0. Silero VAD needs a valid sample
    rate (16000) and a state of batch 1, which random inputs do not give; its inputs are written
    once into `work`. Other models verify on onnxtool's seeded random inputs."""
    dataset = os.path.join(os.path.dirname(model), "test_data_set_0")
    if os.path.isdir(dataset):
        return ["--inputs", dataset]
    name = os.path.basename(model)[:-len(".onnx")]
    if not name.startswith("silero_vad"):
        return []
    folder = os.path.join(work, "verify_inputs_" + name)
    if not os.path.isdir(folder):
        os.makedirs(folder)
        rng = np.random.default_rng(0)
        np.save(os.path.join(folder, "input.npy"), rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32))
        np.save(os.path.join(folder, "sr.npy"), np.array(16000, dtype=np.int64))
        if name == "silero_vad_legacy":
            np.save(os.path.join(folder, "h.npy"), np.zeros((2, 1, 64), np.float32))
            np.save(os.path.join(folder, "c.npy"), np.zeros((2, 1, 64), np.float32))
        else:
            np.save(os.path.join(folder, "state.npy"), np.zeros((2, 1, 128), np.float32))
    return ["--inputs", folder]


# Data that testdata/fetch_models.sh provides but that is missing makes a test skipped (exit 77,
# ctest's SKIP_RETURN_CODE), never passed.
SKIP_EXIT = 77
_missing = []


def missing_data(what):
    """A part of the test cannot run for missing data; the rest goes on."""
    _missing.append(what)
    print(f"ONNXTOOL-SKIP: {what} (testdata/fetch_models.sh installs it)", flush=True)


def skip_all(what):
    """The whole test cannot run for missing data."""
    missing_data(what)
    sys.exit(SKIP_EXIT)


def finish(failed):
    """Exits 1 when anything failed, else 77 when data was missing, else 0."""
    sys.exit(1 if failed else SKIP_EXIT if _missing else 0)
