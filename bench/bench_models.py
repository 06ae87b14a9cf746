"""The runner benchmark's models with their inputs, for the scripts that run each one through
onnxtool (bench/ort_device.sh, bench/ort_optimized.sh; on PYTHONPATH from there)."""
import os


def models(cache, inputs_dir):
    """(short name, model path, onnxtool --input arguments) per line of inputs_dir/manifest.tsv
    (bench/make_bench_inputs.py's), for the models that are in cache/models."""
    for line in open(os.path.join(inputs_dir, "manifest.tsv")):
        if not line.strip() or line.startswith("#"):
            continue
        model, _, files = line.rstrip("\n").split("\t")
        path = os.path.join(cache, "models", model)
        if not os.path.exists(path):
            continue
        feeds = []
        for f in files.split():
            name, rel = f.split("=", 1)
            feeds += ["--input", name + "=" + os.path.join(inputs_dir, rel)]
        yield os.path.basename(model)[:-5], path, feeds
