#!/usr/bin/env python3
"""Writes the ONNX backend node tests as files (model.onnx, test_data_set_N/{input,output}_K.pb),
the layout `onyx conformance`, the fuzz seed builder and the Python tests read.

  node_tests.py generate OUT          the installed onnx's node tests, made by its own test-case
                                      generators (onnx >= 1.23 no longer ships them as files)
  node_tests.py extract VERSION OUT   the files an older release shipped, taken from its wheel
                                      (pip download, cached under ~/.cache/onyx)

OUT is replaced only when its stamp (the onnx version written last) differs, so reruns are free.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

STAMP = ".onnx_version"


def up_to_date(out, version):
    try:
        with open(os.path.join(out, STAMP), encoding="utf-8") as f:
            return f.read().strip() == version
    except OSError:
        return False


def finish(tmp, out, version, count):
    with open(os.path.join(tmp, STAMP), "w", encoding="utf-8") as f:
        f.write(version + "\n")
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.replace(tmp, out)  # a half-written tree never carries a stamp
    print(f"node_tests: {count} node tests of onnx {version} in {out}")


def proto_of(value, type_proto, name):
    from onnx import numpy_helper

    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value, name)
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name)
    if type_proto.HasField("map_type"):
        return numpy_helper.from_dict(value, name)
    if hasattr(value, "SerializeToString"):  # already a TensorProto
        return value
    return numpy_helper.from_array(value, name)


def generate(out):
    import onnx
    from onnx.backend.test.loader import load_model_tests

    if up_to_date(out, onnx.__version__):
        print(f"node_tests: {out} is up to date (onnx {onnx.__version__})")
        return
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".node_tests.", dir=os.path.dirname(os.path.abspath(out)))
    cases = load_model_tests(kind="node")
    for case in cases:
        case_dir = os.path.join(tmp, case.name)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        graph = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            set_dir = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(set_dir)
            for kind, values, decls in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for k, value in enumerate(values):
                    proto = proto_of(value, decls[k].type, decls[k].name)
                    with open(os.path.join(set_dir, f"{kind}_{k}.pb"), "wb") as f:
                        f.write(proto.SerializeToString())
    finish(tmp, out, onnx.__version__, len(cases))


def extract(version, out):
    if up_to_date(out, version):
        print(f"node_tests: {out} is up to date (onnx {version})")
        return
    cache = os.path.join(os.path.expanduser("~"), ".cache", "onyx", "onnx-wheels")
    os.makedirs(cache, exist_ok=True)
    wheels = [w for w in os.listdir(cache) if w.startswith(f"onnx-{version}-") and w.endswith(".whl")]
    if not wheels:
        # Any platform's wheel holds the same data files; pip picks this machine's.
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", cache, f"onnx=={version}"], check=True)
        wheels = [w for w in os.listdir(cache) if w.startswith(f"onnx-{version}-") and w.endswith(".whl")]
    if not wheels:
        sys.exit(f"node_tests: pip did not download an onnx {version} wheel into {cache}")
    prefix = "onnx/backend/test/data/node/"
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".node_tests.", dir=os.path.dirname(os.path.abspath(out)))
    names = set()
    with zipfile.ZipFile(os.path.join(cache, sorted(wheels)[0])) as z:
        for member in z.namelist():
            if not member.startswith(prefix) or member.endswith("/"):
                continue
            rel = member[len(prefix):]
            if ".." in rel.split("/"):
                continue
            names.add(rel.split("/", 1)[0])
            target = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
    finish(tmp, out, version, len(names))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="the installed onnx's node tests")
    g.add_argument("out")
    e = sub.add_parser("extract", help="an older release's shipped node-test files")
    e.add_argument("version")
    e.add_argument("out")
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.out)
    else:
        extract(args.version, args.out)


if __name__ == "__main__":
    main()
