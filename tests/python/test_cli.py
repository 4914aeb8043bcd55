"""The CLI on real and broken inputs: every bad model gives a clear error and a non-zero exit,
never a crash or a hang; run/plan/info/bench/conformance do what their --help says."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import DATA, NODE_TESTS
from loop_models import counting_loop_body


def run(cli, *args, timeout=120):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def save(model, path):
    onnx.save(model, str(path))
    return str(path)


def relu_model(extra_nodes=(), inputs=None):
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")] + list(extra_nodes)
    g = helper.make_graph(nodes, "g",
                          inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def assert_clean_failure(proc, *needles):
    assert proc.returncode not in (0,), proc.stdout
    assert proc.returncode > 0, f"killed by signal {-proc.returncode}"
    assert "error" in proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


@pytest.mark.parametrize("cmd", ["run", "plan", "info", "bench", "conformance", "prune"])
def test_help(onyx_cli, cmd):
    p = run(onyx_cli, cmd, "--help")
    assert p.returncode == 0
    assert p.stdout.startswith(f"usage: onyx {cmd}")


def test_truncated_empty_and_random_files(onyx_cli, tmp_path):
    good = (tmp_path / "good.onnx")
    save(relu_model(), good)
    data = good.read_bytes()
    (tmp_path / "trunc.onnx").write_bytes(data[: len(data) // 2])
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "random.onnx").write_bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    assert_clean_failure(run(onyx_cli, "run", str(tmp_path / "trunc.onnx")), "trunc.onnx")
    assert_clean_failure(run(onyx_cli, "run", str(tmp_path / "empty.onnx")), "empty")
    assert_clean_failure(run(onyx_cli, "info", str(tmp_path / "random.onnx")), "random.onnx")
    assert_clean_failure(run(onyx_cli, "plan", str(tmp_path / "missing.onnx")), "missing.onnx")


def test_undefined_value_and_cycle(onyx_cli, tmp_path):
    m = relu_model([helper.make_node("Add", ["y", "ghost"], ["z"], name="adder")])
    assert_clean_failure(run(onyx_cli, "plan", save(m, tmp_path / "undef.onnx")), "Add node 'adder'", "'ghost'")
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["a"], name="n1"), helper.make_node("Relu", ["a"], ["b"], name="n2"),
         helper.make_node("Identity", ["b"], ["y"], name="n3")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    cyc = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert_clean_failure(run(onyx_cli, "run", save(cyc, tmp_path / "cycle.onnx")), "cycle")


def test_external_data_escaping_model_dir(onyx_cli, tmp_path):
    (tmp_path / "secret.bin").write_bytes(np.ones(2, np.float32).tobytes())
    sub = tmp_path / "model"
    sub.mkdir()
    w = helper.make_tensor("w", TensorProto.FLOAT, [2], [0.0, 0.0])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../secret.bin"), ("offset", "0"), ("length", "8")):
        e = w.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = sub / "m.onnx"
    path.write_bytes(m.SerializeToString())
    assert_clean_failure(run(onyx_cli, "run", str(path), "--generate", "ramp"), "'w'", "leaves the model's directory")


def test_wrong_input_shape_is_reported(onyx_cli, tmp_path):
    path = save(relu_model(), tmp_path / "m.onnx")
    x = tmp_path / "x.pb"
    x.write_bytes(numpy_helper.from_array(np.ones([3], np.float32)).SerializeToString())
    assert_clean_failure(run(onyx_cli, "run", path, str(x)), "input 'x'", "expects dim 0 = 2")


def test_run_writes_outputs_and_dumps(onyx_cli, tmp_path):
    m = relu_model([helper.make_node("Neg", ["y"], ["gpu_0/neg"], name="neg")])
    m.graph.output.append(helper.make_tensor_value_info("gpu_0/neg", TensorProto.FLOAT, [2]))
    path = save(m, tmp_path / "m.onnx")
    x = tmp_path / "x.pb"
    x.write_bytes(numpy_helper.from_array(np.array([-1.0, 2.0], np.float32)).SerializeToString())
    p = run(onyx_cli, "run", path, str(x), "--output-dir", str(tmp_path / "out"), "--dump-dir", str(tmp_path / "dump"))
    assert p.returncode == 0, p.stderr
    t = onnx.TensorProto()
    t.ParseFromString((tmp_path / "out" / "gpu_0_neg.pb").read_bytes())
    np.testing.assert_array_equal(numpy_helper.to_array(t), [-0.0, -2.0])
    assert sorted(os.listdir(tmp_path / "dump")) == ["gpu_0_neg.pb", "y.pb"]


def test_plan_json_and_bench_json(onyx_cli, light_dir):
    p = run(onyx_cli, "plan", os.path.join(light_dir, "light_resnet50.onnx"), "--json")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    assert plan["nodes"] == len(plan["schedule"]) > 0
    assert plan["max_live_bytes"] <= plan["arena_bytes"] <= 1.1 * plan["max_live_bytes"]
    assert plan["arena_bytes"] <= plan["no_reuse_bytes"]
    b = run(onyx_cli, "bench", os.path.join(light_dir, "light_squeezenet.onnx"), "--runs", "3", "--warmup", "1", "--json")
    assert b.returncode == 0, b.stderr
    r = json.loads(b.stdout)
    assert r["median_ms"] > 0 and r["p90_ms"] >= r["median_ms"] * 0.5 and r["session_create_ms"] > 0


def test_bench_pause_sleeps_before_each_timed_run(onyx_cli, light_dir):
    import time
    model = os.path.join(light_dir, "light_squeezenet.onnx")
    t0 = time.perf_counter()
    b = run(onyx_cli, "bench", model, "--runs", "4", "--warmup", "0", "--pause-ms", "150", "--json")
    assert b.returncode == 0, b.stderr
    assert time.perf_counter() - t0 >= 0.6  # four pauses, outside the timed runs
    assert json.loads(b.stdout)["runs"] == 4
    bad = run(onyx_cli, "bench", model, "--pause-ms", "-5")
    assert bad.returncode != 0 and "--pause-ms must be an integer >= 0" in bad.stderr


def test_info_lists_operators(onyx_cli, light_dir):
    p = run(onyx_cli, "info", os.path.join(light_dir, "light_squeezenet.onnx"))
    assert p.returncode == 0, p.stderr
    assert "Conv:" in p.stdout and "unsupported: none" in p.stdout


def test_conformance_counts_each_test(onyx_cli, tmp_path):
    out = tmp_path / "c.json"
    p = run(onyx_cli, "conformance", "--data", os.path.join(NODE_TESTS, "newest"), "--filter", "^test_relu$|^test_abs$",
            "--json", str(out))
    assert p.returncode == 0, p.stdout
    res = json.loads(out.read_text())
    assert res["total"] == 2 and res["counts"]["pass"] == 2


def test_bench_profile_writes_chrome_trace(onyx_cli, light_dir, tmp_path):
    model = os.path.join(light_dir, "light_squeezenet.onnx")
    trace = tmp_path / "trace.json"
    runs = 2
    p = run(onyx_cli, "bench", model, "--runs", str(runs), "--warmup", "1", "--threads", "1",
            "--profile", str(trace))
    assert p.returncode == 0, p.stderr
    plan = json.loads(run(onyx_cli, "plan", model, "--json", "--threads", "1").stdout)
    schedule = plan["schedule"]
    events = json.loads(trace.read_text())["traceEvents"]
    steps = [e for e in events if e["ph"] == "X" and e.get("cat") != "run"]
    assert len(steps) == runs * len(schedule)
    assert len([e for e in events if e.get("cat") == "run"]) == runs
    for r in range(runs):
        in_run = sorted((e for e in steps if e["args"]["run"] == r), key=lambda e: e["ts"])
        # One event per planned step, in schedule order, with the planner's node, op and kernel.
        assert [(e["name"], e["args"]["op_type"], e["args"]["impl"]) for e in in_run] == \
            [(s["node"], s["op"], s["impl"]) for s in schedule]
        assert all(e["dur"] >= 0 and e["pid"] == 1 for e in in_run)
        assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(in_run, in_run[1:]))
    # The summary table: every op type of the plan, with calls adding up to runs x steps.
    table = p.stdout[p.stdout.index("op type"):].splitlines()[1:]
    rows = {line.split()[0]: line.split() for line in table if line and not line.startswith("trace:")}
    ops = {(s["op"]) for s in schedule}
    assert {k.split(":")[-1] for k in rows} == ops
    assert sum(int(r[3]) for r in rows.values()) == runs * len(schedule)
    assert abs(sum(float(r[2].rstrip("%")) for r in rows.values()) - 100.0) < 0.5
    j = run(onyx_cli, "bench", model, "--runs", "1", "--warmup", "0", "--threads", "1",
            "--profile", str(tmp_path / "t2.json"), "--json")
    assert j.returncode == 0, j.stderr
    prof = json.loads(j.stdout)["profile"]
    assert abs(sum(o["share"] for o in prof) - 1.0) < 1e-3
    assert sum(o["calls"] for o in prof) == len(schedule)


def test_bench_profile_bad_path_is_an_error(onyx_cli, light_dir, tmp_path):
    p = run(onyx_cli, "bench", os.path.join(light_dir, "light_squeezenet.onnx"), "--runs", "1",
            "--warmup", "0", "--profile", str(tmp_path / "missing_dir" / "t.json"))
    assert_clean_failure(p, "--profile", "missing_dir")


def test_bench_profile_reports_subgraph_steps(onyx_cli, tmp_path):
    def branch(op):
        return helper.make_graph([helper.make_node(op, ["x"], ["y_" + op], name="inner_" + op)], op, [],
                                 [helper.make_tensor_value_info("y_" + op, TensorProto.FLOAT, [4])])
    # The condition is an input (a constant one could be folded away); bench generates it.
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="the_if", then_branch=branch("Relu"),
                          else_branch=branch("Neg"))],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
              helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "if.onnx")
    trace = tmp_path / "t.json"
    p = run(onyx_cli, "bench", path, "--runs", "3", "--warmup", "0", "--profile", str(trace))
    assert p.returncode == 0, p.stderr
    steps = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X" and e.get("cat") != "run"]
    outer = [e for e in steps if e["args"]["depth"] == 0]
    inner = [e for e in steps if e["args"]["depth"] == 1]
    assert [e["name"] for e in outer] == ["the_if"] * 3
    assert len(inner) == 3 and len({e["name"] for e in inner}) == 1  # same feeds every run
    assert inner[0]["name"] in ("inner_Relu", "inner_Neg")
    for o, i in zip(outer, inner):  # nested: inside its If's span
        assert o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"] + 1e-3
    assert "counted in their parent" in p.stdout


def test_bench_models_and_compare_script(tmp_path):
    """bench/: the model builder makes runnable random-weight models (no ConstantOfShape left,
    finite ONNX Runtime outputs), and compare.py times onyx against ONNX Runtime on them with
    matching outputs."""
    import sys
    from conftest import BUILD, ROOT
    py = sys.executable
    out = tmp_path / "models"
    b = subprocess.run([py, os.path.join(ROOT, "bench", "models", "make_bench_models.py"), str(out),
                        "--models", "squeezenet,mobilenet_v2"], capture_output=True, text=True, timeout=300)
    assert b.returncode == 0, b.stderr
    m = onnx.load(str(out / "squeezenet.onnx"))
    assert not [n for n in m.graph.node if n.op_type == "ConstantOfShape"]
    again = subprocess.run([py, os.path.join(ROOT, "bench", "models", "make_bench_models.py"), str(out),
                            "--models", "squeezenet"], capture_output=True, text=True, timeout=300)
    assert "up to date" in again.stdout
    report = tmp_path / "r.json"
    c = subprocess.run([py, os.path.join(ROOT, "bench", "compare.py"), "--models", "squeezenet,mobilenet_v2",
                        "--models-dir", str(out), "--threads", "1", "--runs", "2", "--warmup", "1",
                        "--min-seconds", "0.2", "--json", str(report), "--png", ""],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "ONYX_BUILD_DIR": BUILD})
    assert c.returncode == 0, c.stderr
    assert "geomean ORT/onyx at 1 thread" in c.stdout
    rows = json.loads(report.read_text())["results"]
    assert [r["model"] for r in rows] == ["squeezenet", "mobilenet_v2"]
    for r in rows:
        assert "error" not in r, r
        assert r["onyx_ms"] > 0 and r["ort_ms"] > 0 and r["max_rel_diff"] < 1e-4
        # --min-seconds 0.2 over --runs 2: only runs of 100 ms and more would leave it at 2.
        assert r["runs"] > 2
        for engine in ("onyx", "ort"):
            probe = r[f"create_{engine}"]
            assert probe["create_ms"] > 0 and probe["peak_rss_mb"] > probe["rss_before_mb"] > 0


def test_compare_runs_enough_for_min_seconds():
    """compare.timed_runs: --runs at least; more when the slowest engine's median run of the
    first block times the count falls short of --min-seconds; never more than the cap."""
    import sys
    from conftest import ROOT
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import compare
    # ORT's median first-block run 5.5 ms is the slowest: 2 s / 5.5 ms = 363.6 -> 364 runs.
    assert compare.timed_runs(20, 2.0, {"onyx": [4.0, 9.0, 4.2], "ort": [5.0, 6.0]}) == 364
    assert compare.timed_runs(20, 2.0, {"onyx": [150.0]}) == 20  # 14 runs would do: --runs wins
    assert compare.timed_runs(20, 2.0, {"onyx": [0.01]}) == 2000  # the cap
    assert compare.timed_runs(20, 0.0, {"onyx": [4.0]}) == 20  # --min-seconds 0: --runs only
    assert compare.timed_runs(20, 2.0, {}) == 20  # no times (every engine refused)
    assert compare.timed_runs(20, 2.0, {"onyx": [], "ort": [5.0]}) == 400  # an engine without


def test_paced_script_runs_both_engines(tmp_path):
    """bench/paced.py: each engine in its own process, requests after pauses; the environment
    given with --onyx-env reaches onyx's process only."""
    import sys
    from conftest import BUILD, ROOT
    py = sys.executable
    out = tmp_path / "models"
    report = tmp_path / "paced.json"
    p = subprocess.run([py, os.path.join(ROOT, "bench", "paced.py"), "--models", "squeezenet",
                        "--models-dir", str(out), "--threads", "1,2", "--pauses", "1", "--requests", "3",
                        "--rounds", "1", "--onyx-env", "GOMP_SPINCOUNT=12345", "--json", str(report)],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "ONYX_BUILD_DIR": BUILD})
    assert p.returncode == 0, p.stderr
    rows = json.loads(report.read_text())["rows"]
    assert sorted((r["engine"], r["threads"]) for r in rows) == [("onyx", 1), ("onyx", 2), ("ort", 1), ("ort", 2)]
    for r in rows:
        assert 0 < r["median_ms"] <= r["p90_ms"] and r["cpu_ms_per_request"] > 0
        assert r["gomp_spincount"] == ("12345" if r["engine"] == "onyx" else None)


def test_bench_compares_optimization_levels_in_one_run(onyx_cli, light_dir):
    model = os.path.join(light_dir, "light_squeezenet.onnx")
    p = run(onyx_cli, "bench", model, "--optimization", "none,all", "--runs", "3", "--warmup",
            "1", "--threads", "1", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert [lv["optimization"] for lv in d["levels"]] == ["none", "all"]
    assert d["levels"][0]["speedup"] == pytest.approx(1.0)
    for lv in d["levels"]:
        assert lv["median_ms"] > 0
        assert lv["speedup"] == pytest.approx(d["levels"][0]["median_ms"] / lv["median_ms"], rel=1e-3)
    bad = run(onyx_cli, "bench", model, "--optimization", "none,fast", "--runs", "1")
    assert_clean_failure(bad, "optimization level must be none, basic or all")


def test_plan_too_large_for_memory_is_a_clean_error(onyx_cli, tmp_path):
    # Expand to 2^40 floats (4 TiB) feeds a Relu: the intermediate is over the tensor ceiling
    # (physical memory by default). Planning must fail with a named error, not die.
    nodes = [helper.make_node("Expand", ["x", "shape"], ["big"], name="expand"),
             helper.make_node("Relu", ["big"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1 << 40], np.int64), "shape")])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
                tmp_path / "big.onnx")
    p = run(onyx_cli, "run", path, "--generate", "ramp")
    assert_clean_failure(p, "max_tensor_bytes")
    assert "Expand node 'expand'" in p.stderr and "4398046511104 bytes" in p.stderr


def test_generate_fills_only_inputs_without_a_file(onyx_cli, tmp_path):
    # x has no declared shape, so it could not be generated: --generate must leave it to its file.
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    x = tmp_path / "x.pb"
    x.write_bytes(numpy_helper.from_array(np.array([10.0, 20.0, 30.0], np.float32)).SerializeToString())
    p = run(onyx_cli, "run", path, "--input", f"x={x}", "--generate", "ramp", "--output-dir", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    t = onnx.TensorProto()
    t.ParseFromString((tmp_path / "out" / "z.pb").read_bytes())
    # The file's x plus the ramp y = [0/3, 1/3, 2/3].
    expected = np.array([10.0, 20.0 + 1.0 / 3.0, 30.0 + 2.0 / 3.0], np.float32)
    np.testing.assert_allclose(numpy_helper.to_array(t), expected, rtol=1e-6)


def test_run_timeout_stops_a_huge_loop(onyx_cli, tmp_path):
    body = counting_loop_body()
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["y"], name="loop", body=body)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array(2**40, np.int64), "M"),
                     numpy_helper.from_array(np.array([1.0], np.float32), "one")])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "loop.onnx")
    p = run(onyx_cli, "run", path, "--generate", "ramp", "--timeout-ms", "100", timeout=60)
    assert_clean_failure(p, "run cancelled: timeout of 100 ms exceeded")
