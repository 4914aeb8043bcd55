#!/usr/bin/env python3
"""Run ONNX Runtime's own Python API test file against onyx and against onnxruntime.

The test file (onnxruntime/test/python/onnxruntime_test_python.py), its helper and the test
data are taken from an ONNX Runtime source tree (a git directory, bare or not, or a plain
checkout); nothing of it is kept in this repository. The file is copied into a temporary
directory twice: once unchanged (run against the onnxruntime wheel in the venv) and once with
its imports pointed at onyx. Tests for other execution providers and for ORT internals are
deselected in both runs (EXCLUDED below, each with its reason). The script prints both pass
counts and their ratio; it exits non-zero when onyx passes fewer than --min-ratio of what ORT
passes.

Usage:
  PYTHONPATH=build/python .venv/bin/python scripts/ort_api_tests.py --fetch build/ort-src
  ORT_SRC=/path/to/onnxruntime PYTHONPATH=build/python .venv/bin/python scripts/ort_api_tests.py
  scripts/ort_api_tests.py --ort-src /path/to/onnxruntime.git --ref v1.32.0 --verbose
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

TEST_FILE = "onnxruntime/test/python/onnxruntime_test_python.py"
HELPER_FILE = "onnxruntime/test/python/helper.py"
TESTDATA_DIR = "onnxruntime/test/testdata"
ORT_VERSION = "1.32.0"

# Where a checkout may already be (the first that exists is used when --ort-src/ORT_SRC is unset).
DEFAULT_LOCATIONS = [
    "/work/.mirror/microsoft+onnxruntime/repo",
    "/work/.mirror/ROCm+onnxruntime/repo",
]

HOW_TO_GET = f"""\
No ONNX Runtime source tree found. Get one (only the test file and test data are used), e.g.
  git clone --depth 1 --branch v{ORT_VERSION} --filter=blob:none --sparse \\
      https://github.com/microsoft/onnxruntime ort-src
  git -C ort-src sparse-checkout set onnxruntime/test/python onnxruntime/test/testdata
then run this script with --ort-src ort-src (or ORT_SRC=ort-src); --fetch DIR does both."""

# Tests left out in both runs: name -> reason. Names absent from the file in use are ignored.
EXCLUDED: dict[str, str] = {
    # Other execution providers (onyx is a CPU engine with one provider). Without those providers
    # these tests return at once, so both runs would "pass" them without testing anything.
    "test_tvm_imported": "TVM execution provider only",
    "test_set_providers": "CUDA execution provider only",
    "test_set_providers_with_options": "CUDA/ROCm provider options only",
    "test_session_providers": "CUDA execution provider only",
    "test_get_and_set_tuning_results": "CUDA/ROCm kernel tuning results only",
    "test_ort_value_gh_issue9799": "CUDA OrtValues only",
    "test_run_model_with_cuda_copy_stream": "CUDA copy stream only",
    "test_multiple_devices": "several CUDA devices only",
    "test_register_custom_e_ps_library":
        "ORT plug-in execution provider library (fails in ORT too: not built)",
    # ORT internals: the _pybind_state module's own classes and helpers, ORT-only file formats.
    "test_ort_value_dlpack": "ORT internal C.OrtValue.from_dlpack / C.is_dlpack_uint8_tensor",
    "test_sparse_tensor_coo_format": "ORT internal C.SparseTensor (sparse tensors are not an onyx value)",
    "test_sparse_tensor_csr_format": "ORT internal C.SparseTensor (sparse tensors are not an onyx value)",
    "test_check_and_normalize_provider_args": "ORT internal onnxruntime_inference_collection helper",
    "test_create_allocator": "ORT allocator registration (C.create_and_register_allocator*)",
    "test_shared_allocator_using_create_and_register_allocator": "ORT shared arena allocator (C.*)",
    "test_run_with_adapter":
        "ORT's LoRA adapter format (onnxruntime.LoraAdapter, RunOptions.add_active_adapter)",
    "test_adater_export_read": "ORT's LoRA adapter format (C.AdapterFormat)",
    "test_register_custom_ops_library":
        "ORT custom-op shared library built against ORT's C API (fails in ORT too: not built)",
    # Only in newer versions of the file than the one this was measured with (names not in the
    # file are ignored).
    "test_get_graph_provider_assignment_info": "which execution provider runs which nodes (ORT partitioning)",
    "test_get_graph_provider_assignment_info_not_enabled": "ORT partitioning info, as above",
    "test_ort_device": "ORT's OrtDevice descriptor (CUDA vendor ids)",
    "test_ort_memory_info": "ORT's allocator descriptor OrtMemoryInfo",
    "test_ort_memory_info_create_v2": "ORT's allocator descriptor OrtMemoryInfo",
}

IMPORT_REWRITES = [
    (r"^import onnxruntime as onnxrt$", "import onyx as onnxrt"),
    (r"^import onnxruntime$", "import onyx as onnxruntime"),
    (r"^from onnxruntime\.capi import _pybind_state as C$", "from onyx.capi import _pybind_state as C"),
    (r"^from onnxruntime\.capi\.onnxruntime_pybind11_state import",
     "from onyx.capi.onnxruntime_pybind11_state import"),
    (r"^(\s*)from onnxruntime\.capi\.", r"\1from onyx.capi."),
    (r"^(\s*)import onnxruntime\.", r"\1import onyx."),
]


def fetch_source(into: Path) -> Path:
    """Clones ONNX Runtime's release tag (ORT_VERSION) into `into`, sparsely (the test file, its
    helper and the test data only; needs git and network access to GitHub). Reuses `into` if it
    holds a complete clone already; a failed clone is removed."""
    if (into / TEST_FILE).exists():
        return into
    url = "https://github.com/microsoft/onnxruntime"
    print(f"fetching {url} v{ORT_VERSION} (test files only) into {into}", flush=True)
    steps = [
        ["git", "clone", "--depth", "1", "--branch", f"v{ORT_VERSION}", "--filter=blob:none",
         "--sparse", url, str(into)],
        ["git", "-C", str(into), "sparse-checkout", "set", "onnxruntime/test/python",
         "onnxruntime/test/testdata"],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(f"fetching failed ({' '.join(cmd[:3])} ...): {r.stderr.strip()}\n")
            shutil.rmtree(into, ignore_errors=True)
            sys.exit(2)
    return into


def find_source(arg: str | None) -> Path:
    """Returns the ORT source location, or exits with how to get one."""
    if arg:
        candidates = [arg]
    else:
        candidates = [os.environ["ORT_SRC"]] if os.environ.get("ORT_SRC") else DEFAULT_LOCATIONS
    for c in candidates:
        if c and Path(c).exists():
            return Path(c)
    sys.stderr.write(HOW_TO_GET + "\n")
    if arg or os.environ.get("ORT_SRC"):
        sys.stderr.write(f"(given location {candidates[0]} does not exist)\n")
    sys.exit(2)


def git_dir_of(src: Path) -> Path | None:
    """The git directory of src if it is one (bare, or a work tree without the test file checked out)."""
    if (src / TEST_FILE).exists():
        return None
    if (src / "HEAD").exists() and (src / "objects").exists():
        return src
    if (src / ".git").exists():
        return src / ".git"
    sys.exit(f"{src} is neither an ONNX Runtime checkout nor a git directory (no {TEST_FILE})")


def pick_ref(git_dir: Path, wanted: str | None) -> str:
    """The tag matching the installed ORT version when present, else HEAD."""
    if wanted:
        return wanted
    tags = subprocess.run(["git", f"--git-dir={git_dir}", "tag", "-l", f"v{ORT_VERSION}"],
                          capture_output=True, text=True, check=True).stdout.split()
    return tags[0] if tags else "HEAD"


def extract(src: Path, ref: str | None, into: Path) -> str:
    """Copies the test file, helper and test data into `into` (ORT's layout); returns what was used."""
    git_dir = git_dir_of(src)
    if git_dir is None:
        for rel in (TEST_FILE, HELPER_FILE):
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src / rel, into / rel)
        shutil.copytree(src / TESTDATA_DIR, into / TESTDATA_DIR)
        return f"{src} (work tree)"
    ref = pick_ref(git_dir, ref)
    git = ["git", f"--git-dir={git_dir}"]
    listing = subprocess.run(git + ["ls-tree", "-r", ref, "--", TEST_FILE, HELPER_FILE, TESTDATA_DIR],
                             capture_output=True, text=True, check=True).stdout
    missing = []
    for line in listing.splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, blob = meta.split()
        if kind != "blob" or mode == "120000":
            continue
        # Snapshots may lack large blobs; tests needing those fail the same way in both runs.
        data = subprocess.run(git + ["cat-file", "blob", blob], capture_output=True)
        if data.returncode != 0:
            missing.append(path)
            continue
        (into / path).parent.mkdir(parents=True, exist_ok=True)
        (into / path).write_bytes(data.stdout)
    if not (into / TEST_FILE).exists():
        sys.exit(f"{TEST_FILE} not found at {ref} in {git_dir}")
    if missing:
        print(f"note: {len(missing)} test data files absent from the git directory: " + ", ".join(missing))
    commit = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "--short", ref],
                            capture_output=True, text=True, check=True).stdout.strip()
    version = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{ref}:VERSION_NUMBER"],
                             capture_output=True, text=True).stdout.strip()
    return f"{git_dir} at {ref} ({commit}, VERSION_NUMBER {version or '?'})"


def rewrite_for_onyx(text: str) -> str:
    """Points the test file's imports at onyx; fails loudly if an onnxruntime import is left."""
    lines = []
    for line in text.splitlines():
        for pattern, repl in IMPORT_REWRITES:
            line = re.sub(pattern, repl, line)
        lines.append(line)
    out = "\n".join(lines) + "\n"
    left = [l for l in out.splitlines() if re.match(r"\s*(import|from) onnxruntime\b", l)]
    if left:
        sys.exit("unrewritten onnxruntime imports: " + "; ".join(left))
    return out


def run_pytest(workdir: Path, python: str, env: dict[str, str], verbose: bool,
               exclude: bool = True) -> tuple[dict[str, str], str, list[str]]:
    """Runs the test file in workdir; returns {test name: outcome}, the pytest output tail and the
    names deselected."""
    test_dir = workdir / "onnxruntime/test/python"
    # Some tests write into ./testdata relative to the working directory, as in ORT's build tree.
    (test_dir / "testdata").symlink_to(workdir / TESTDATA_DIR)
    test_file = test_dir / Path(TEST_FILE).name
    junit = workdir / "junit.xml"
    collected = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                str(test_file.name)], cwd=test_dir, env=env, capture_output=True, text=True)
    deselect, excluded = [], []
    for line in collected.stdout.splitlines():
        if exclude and "::" in line and line.rsplit("::", 1)[1] in EXCLUDED:
            deselect += ["--deselect", line.strip()]
            excluded.append(line.rsplit("::", 1)[1].strip())
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", f"--junitxml={junit}",
           test_file.name] + deselect
    proc = subprocess.run(cmd, cwd=test_dir, env=env, capture_output=True, text=True)
    outcomes: dict[str, str] = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            name = case.get("name", "")
            kinds = {child.tag for child in case}
            if "skipped" in kinds:
                outcomes[name] = "skipped"
            elif kinds & {"failure", "error"}:
                outcomes[name] = "failed"
            else:
                outcomes[name] = "passed"
    tail = proc.stdout[-20000:] if verbose else "\n".join(proc.stdout.splitlines()[-3:])
    if not outcomes:
        sys.exit(f"pytest produced no results in {workdir}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return outcomes, tail, excluded


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ort-src", help="ONNX Runtime checkout or git directory (default: $ORT_SRC, then "
                    + ", ".join(DEFAULT_LOCATIONS) + ")")
    ap.add_argument("--ref", help=f"git ref to read (default: tag v{ORT_VERSION} if present, else HEAD)")
    ap.add_argument("--python", default=sys.executable, help="interpreter with pytest, numpy and onnxruntime")
    ap.add_argument("--onyx-path", default=str(repo / "build/python"),
                    help="directory holding the built onyx package (added to PYTHONPATH for the onyx run)")
    ap.add_argument("--min-ratio", type=float, default=0.95, help="fail below this onyx/ORT pass ratio")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--verbose", action="store_true", help="print pytest output and per-test outcomes")
    ap.add_argument("--no-exclude", action="store_true",
                    help="run the excluded tests too (for information; the ratio then counts them)")
    ap.add_argument("--fetch", metavar="DIR",
                    help=f"clone ONNX Runtime v{ORT_VERSION}'s test files from GitHub into DIR "
                    "(reused when it is there already) and use them")
    args = ap.parse_args()

    src = fetch_source(Path(args.fetch)) if args.fetch else find_source(args.ort_src)
    tmp = Path(tempfile.mkdtemp(prefix="ort_api_tests_"))
    try:
        base = tmp / "src"
        base.mkdir()
        used = extract(src, args.ref, base)
        print(f"ORT test file from {used}")
        results = {}
        for which in ("onnxruntime", "onyx"):
            work = tmp / which
            shutil.copytree(base, work, symlinks=True)
            env = dict(os.environ)
            if which == "onyx":
                test_file = work / TEST_FILE
                test_file.write_text(rewrite_for_onyx(test_file.read_text()))
                env["PYTHONPATH"] = os.pathsep.join(p for p in (args.onyx_path, env.get("PYTHONPATH")) if p)
            else:
                env.pop("PYTHONPATH", None)
            results[which], tail, excluded = run_pytest(work, args.python, env, args.verbose,
                                                        not args.no_exclude)
            print(f"--- {which}: {tail}")
        ort, onyx = results["onnxruntime"], results["onyx"]
        ort_pass = {n for n, o in ort.items() if o == "passed"}
        onyx_pass = {n for n, o in onyx.items() if o == "passed"}
        if args.verbose:
            for name in sorted(set(ort) | set(onyx)):
                print(f"  {name:70s} ort={ort.get(name, '-'):8s} onyx={onyx.get(name, '-')}")
        print(f"Excluded {len(excluded)} tests (reasons in EXCLUDED, {Path(__file__).name}): "
              + ", ".join(excluded))
        print(f"Run: {len(ort)} tests")
        missing = sorted(ort_pass - onyx_pass)
        if missing:
            print("Pass in ORT, not in onyx: " + ", ".join(missing))
        extra = sorted(onyx_pass - ort_pass)
        if extra:
            print("Pass in onyx, not in ORT: " + ", ".join(extra))
        ratio = len(onyx_pass & ort_pass) / len(ort_pass) if ort_pass else 0.0
        print(f"onnxruntime passed {len(ort_pass)}/{len(ort)}; onyx passed {len(onyx_pass)}/{len(onyx)}; "
              f"onyx passes {len(onyx_pass & ort_pass)} of ORT's {len(ort_pass)} = {ratio:.1%}")
        return 0 if ratio >= args.min_ratio else 1
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
