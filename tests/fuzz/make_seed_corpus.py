#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz harnesses from the ONNX node tests (build/node-tests/newest).

  .venv/bin/python tests/fuzz/make_seed_corpus.py --out build-asan/fuzz/corpus

writes <out>/load_plan (model.onnx files), <out>/tensor_proto (input and output .pb files,
duplicates dropped) and <out>/run (each model followed by its test_data_set_0 inputs, joined by
the separator fuzz_run.cc splits on). Seeds larger than --max-bytes are left out: libFuzzer mutates
small inputs faster, and big tensors only slow the sanitized runs. The corpus belongs in the build
tree, not in git; rerunning replaces the seed files and leaves inputs the fuzzer added alone.
"""
import argparse
import hashlib
import os
import sys

FEED_SEPARATOR = b"\n==onyx-fuzz-feed==\n"  # keep in sync with fuzz_run.cc


def node_test_dir():
    # scripts/setup.sh writes the pinned onnx's node tests there (scripts/node_tests.py)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    return os.path.join(root, "build", "node-tests", "newest")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write_seed(directory, data):
    # Named by content like libFuzzer's own corpus files, so reruns do not duplicate seeds.
    with open(os.path.join(directory, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="corpus root (one folder per harness)")
    parser.add_argument("--node-dir", default=None, help="ONNX node tests (default: build/node-tests/newest)")
    parser.add_argument("--max-bytes", type=int, default=4096, help="largest seed kept")
    parser.add_argument("--max-seeds", type=int, default=2000, help="most seeds per harness")
    args = parser.parse_args()

    node_dir = args.node_dir or node_test_dir()
    dirs = {name: os.path.join(args.out, name) for name in ("load_plan", "tensor_proto", "run")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    counts = dict.fromkeys(dirs, 0)
    seen_tensors = set()
    for test in sorted(os.listdir(node_dir)):
        model_path = os.path.join(node_dir, test, "model.onnx")
        if not os.path.isfile(model_path):
            continue
        model = read(model_path)
        data_dir = os.path.join(node_dir, test, "test_data_set_0")
        pbs = sorted(os.listdir(data_dir)) if os.path.isdir(data_dir) else []
        inputs = [read(os.path.join(data_dir, f)) for f in pbs if f.startswith("input_")]
        if len(model) <= args.max_bytes and counts["load_plan"] < args.max_seeds:
            write_seed(dirs["load_plan"], model)
            counts["load_plan"] += 1
        run_seed = FEED_SEPARATOR.join([model] + inputs)
        if len(run_seed) <= args.max_bytes and counts["run"] < args.max_seeds:
            write_seed(dirs["run"], run_seed)
            counts["run"] += 1
        for f in pbs:
            data = read(os.path.join(data_dir, f))
            digest = hashlib.sha1(data).digest()
            if len(data) > args.max_bytes or digest in seen_tensors:
                continue
            if counts["tensor_proto"] < args.max_seeds:
                seen_tensors.add(digest)
                write_seed(dirs["tensor_proto"], data)
                counts["tensor_proto"] += 1
    print("seed corpus in %s: %s" % (args.out, ", ".join("%s %d" % kv for kv in counts.items())))
    return 0 if all(counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
