#!/usr/bin/env python3
"""Second opinion on model files: what the reference onnx.checker (full_check) says of each.

Usage: onnx_checker_opinion.py DIR

Walks DIR for *.onnx files (sorted) and prints one line per file, tab-separated:
    <path relative to DIR>  ok
    <path relative to DIR>  reject  <stage: load|check|crash>  <first line of the error>
A file counts as rejected when onnx.load or onnx.checker.check_model(path, full_check=True)
raises. The path form of check_model is used so that external data is resolved against the
model's directory. Each file is judged in a forked child, so that a crash of onnx.checker is
reported as "reject crash" instead of ending the run. Needs only the standard library and onnx.
"""
import os
import sys

import onnx


def first_line(error):
    text = str(error).strip() or type(error).__name__
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line.replace("\t", " ")[:300]
    return type(error).__name__


def opinion(path):
    try:
        onnx.load(path)
    except Exception as error:  # any failure to read the file is a rejection
        return "reject\tload\t" + first_line(error)
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as error:
        return "reject\tcheck\t" + first_line(error)
    return "ok"


def opinion_in_child(path):
    """Runs opinion() in a forked child: onnx.checker crashes on some invalid models (e.g. it
    recurses without end into a function that calls itself), which must not end the survey."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            result = opinion(path)
        except BaseException as error:  # report, never fall back into the parent's loop
            result = "reject\tcheck\t" + first_line(error)
        os.write(write_end, result.encode("utf-8", "replace"))
        os.close(write_end)
        os._exit(0)
    os.close(write_end)
    chunks = []
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return "reject\tcrash\tonnx.checker died with signal %d" % os.WTERMSIG(status)
    return b"".join(chunks).decode("utf-8", "replace") or "reject\tcrash\tno answer"


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        sys.stderr.write("usage: onnx_checker_opinion.py DIR\n")
        return 2
    root = argv[1]
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".onnx"):
                found.append(os.path.join(folder, name))
    for path in sorted(found):
        print(os.path.relpath(path, root) + "\t" + opinion_in_child(path), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
