"""`onyx bench --shapes`: a sweep over symbolic dims or whole input shapes lists exactly the shapes
asked for, in order, with consistent figures; bad sweeps fail with a message naming --shapes."""
import json
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def run(cli, *args, timeout=120):
    return subprocess.run([cli, *args], capture_output=True, text=True, timeout=timeout)


def save(model, path):
    onnx.save(model, str(path))
    return str(path)


@pytest.fixture(scope="module")
def dense_model(tmp_path_factory):
    """y = Relu(x @ w + b) with x: float[batch, seq, 8]."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.ones(8, np.float32), "b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 8])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return save(m, tmp_path_factory.mktemp("shapes") / "dense.onnx")


def bench_json(cli, model, *args):
    p = run(cli, "bench", model, "--runs", "2", "--threads", "1", "--json", *args)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_range_lists_each_shape_once_in_order(onyx_cli, dense_model):
    r = bench_json(onyx_cli, dense_model, "--shapes", "seq=2:8:2")
    assert [s["shape"] for s in r["shapes"]] == ["seq=2", "seq=4", "seq=6", "seq=8"]
    # batch is not swept: 1, like every symbolic dim no option sets.
    assert [s["inputs"] for s in r["shapes"]] == [{"x": [1, n, 8]} for n in (2, 4, 6, 8)]
    assert r["runs"] == 2 and r["threads"] == 1
    for s in r["shapes"]:
        assert s["first_ms"] > 0 and s["median_ms"] > 0
        assert s["first_call_cost_ms"] == pytest.approx(s["first_ms"] - s["median_ms"], abs=2e-4)
    costs = [s["first_call_cost_ms"] for s in r["shapes"]]
    assert r["first_call_cost_max_ms"] == pytest.approx(max(costs), abs=2e-4)
    assert r["first_call_cost_median_ms"] == pytest.approx(float(np.median(costs)), abs=2e-4)
    assert r["first_pass_ms"] == pytest.approx(sum(s["first_ms"] for s in r["shapes"]), abs=2e-3)
    assert r["steady_pass_ms"] == pytest.approx(sum(s["median_ms"] for s in r["shapes"]), abs=2e-3)
    assert 0 < r["rss_first_shape_bytes"] <= r["rss_peak_bytes"]
    assert 0 < r["rss_after_sweep_bytes"] <= r["rss_peak_bytes"]


def test_range_without_step_and_uneven_end(onyx_cli, dense_model):
    assert [s["shape"] for s in bench_json(onyx_cli, dense_model, "--shapes", "seq=3:5")["shapes"]] \
        == ["seq=3", "seq=4", "seq=5"]
    # HI is an upper bound, not necessarily reached.
    assert [s["shape"] for s in bench_json(onyx_cli, dense_model, "--shapes", "seq=1:8:3")["shapes"]] \
        == ["seq=1", "seq=4", "seq=7"]


def test_lists_multiply_first_outermost(onyx_cli, dense_model):
    r = bench_json(onyx_cli, dense_model, "--shapes", "batch=1,3", "--shapes", "seq=5,2")
    assert [s["shape"] for s in r["shapes"]] == \
        ["batch=1 seq=5", "batch=1 seq=2", "batch=3 seq=5", "batch=3 seq=2"]
    assert [s["inputs"]["x"] for s in r["shapes"]] == [[1, 5, 8], [1, 2, 8], [3, 5, 8], [3, 2, 8]]


def test_zip_advances_together(onyx_cli, tmp_path):
    g = helper.make_graph(
        [helper.make_node("Relu", ["past"], ["a"]), helper.make_node("Relu", ["cur"], ["b"])], "zip",
        [helper.make_tensor_value_info("past", TensorProto.FLOAT, [2, "past_seq"]),
         helper.make_tensor_value_info("cur", TensorProto.FLOAT, [2, "total_seq"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, "past_seq"]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, "total_seq"])])
    model = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "z.onnx")
    r = bench_json(onyx_cli, model, "--zip", "--shapes", "past_seq=0:2", "--shapes", "total_seq=1:3")
    assert [s["shape"] for s in r["shapes"]] == \
        ["past_seq=0 total_seq=1", "past_seq=1 total_seq=2", "past_seq=2 total_seq=3"]
    assert [s["inputs"] for s in r["shapes"]] == \
        [{"past": [2, n], "cur": [2, n + 1]} for n in (0, 1, 2)]
    p = run(onyx_cli, "bench", model, "--zip", "--shapes", "past_seq=0:2", "--shapes", "total_seq=1:2")
    assert p.returncode == 1 and "--zip" in p.stderr and "gives 2 values" in p.stderr, p.stderr


def test_whole_shapes_of_a_named_input(onyx_cli, dense_model):
    r = bench_json(onyx_cli, dense_model, "--shapes", "x=1x3x8,2x5x8")
    assert [s["shape"] for s in r["shapes"]] == ["x=1x3x8", "x=2x5x8"]
    assert [s["inputs"]["x"] for s in r["shapes"]] == [[1, 3, 8], [2, 5, 8]]


def test_integer_inputs_index_any_embedding(onyx_cli, tmp_path):
    # A one-row table: only index 0 (or -1) is valid, so random small ids would fail the Gather.
    table = numpy_helper.from_array(np.ones((1, 4), np.float32), "table")
    g = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
         helper.make_node("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["mf", "ax"], ["mu"]),
         helper.make_node("Mul", ["e", "mu"], ["y"])],
        "emb",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 4])],
        [table, numpy_helper.from_array(np.array([-1], np.int64), "ax")])
    model = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "e.onnx")
    r = bench_json(onyx_cli, model, "--shapes", "seq=16,32")
    # seq is set in both inputs that declare it.
    assert [s["inputs"] for s in r["shapes"]] == \
        [{"ids": [1, n], "attention_mask": [1, n]} for n in (16, 32)]


@pytest.mark.parametrize("args, needles", [
    (["--shapes", "sequence=8:16"], ["--shapes 'sequence=8:16'", "'sequence' is neither",
                                     "symbolic dims: batch, seq", "inputs: x"]),
    (["--shapes", "seq=a:8"], ["--shapes 'seq=a:8'", "LO 'a' is not an integer"]),
    (["--shapes", "seq=2:8:0"], ["--shapes 'seq=2:8:0'", "STEP must be > 0, got 0"]),
    (["--shapes", "seq=2:8:-2"], ["STEP must be > 0, got -2"]),
    (["--shapes", "seq=9:8"], ["--shapes 'seq=9:8'", "LO 9 > HI 8"]),
    (["--shapes", "seq=1:2:3:4"], ["a range is LO:HI or LO:HI:STEP"]),
    (["--shapes", "seq=4,,8"], ["value '' is not an integer"]),
    (["--shapes", "seq=-3,4"], ["value -3 is negative"]),
    (["--shapes", "seq"], ["--shapes expects NAME=LO:HI[:STEP]"]),
    (["--shapes", "seq=1:200000"], ["gives 200000 shapes; at most 100000"]),
    (["--shapes", "batch=1:1000", "--shapes", "seq=1:1000"], ["more than 100000 shapes"]),
    (["--shapes", "x=1x2x8:1x4x8"], ["input 'x' takes a list of shapes"]),
    (["--shapes", "x=1x2xq"], ["'1x2xq' is not a shape"]),
    (["--shapes", "seq=2,4", "--shape", "x=1x2x8"], ["sets the shape of input 'x', which --shape"]),
    (["--shapes", "seq=2", "--shapes", "x=1x2x8"], ["both set the shape of input 'x'"]),
    (["--shapes", "seq=2", "--shapes", "seq=4"], ["gives 'seq' twice"]),
    (["--zip"], ["--zip needs --shapes"]),
    (["--shapes", "seq=2", "--optimization", "none,all"], ["--shapes takes a single --optimization"]),
])
def test_bad_sweeps_fail_clearly(onyx_cli, dense_model, args, needles):
    p = run(onyx_cli, "bench", dense_model, *args)
    assert p.returncode == 1, p.stdout
    assert p.stderr.startswith("onyx bench: error: "), p.stderr
    for n in needles:
        assert n in p.stderr, p.stderr


def test_text_table(onyx_cli, dense_model):
    p = run(onyx_cli, "bench", dense_model, "--shapes", "seq=2,4", "--runs", "1")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "2 shapes, first call then 1 run each" in lines[0]
    assert [ln.split()[0] for ln in lines[2:4]] == ["seq=2", "seq=4"]
    assert lines[4].startswith("first-call cost: median")
    assert "resident memory:" in p.stdout and "peak" in p.stdout


def test_plan_generic_prints_the_declared_type_plan(onyx_cli, dense_model, tmp_path):
    p = run(onyx_cli, "plan", dense_model, "--generic", "--json")
    assert p.returncode == 0, p.stderr
    plan = json.loads(p.stdout)
    # Symbolic [batch, seq, 8] with a constant weight: new shapes run on this plan.
    assert plan["runs_new_shapes"] is True
    assert any("?" in o["type"] or "seq" in o["type"] for s in plan["schedule"] for o in s["outputs"])
    text = run(onyx_cli, "plan", dense_model, "--generic")
    assert "shape-generic plan: new input shapes run on this plan" in text.stdout
    bad = run(onyx_cli, "plan", dense_model, "--generic", "--shape", "x=1x2x8")
    assert bad.returncode != 0 and "--generic" in bad.stderr
    # A model whose inputs are all static has one plan, and says so.
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    static = str(tmp_path / "static.onnx")
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), static)
    s = run(onyx_cli, "plan", static, "--generic", "--json")
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["runs_new_shapes"] is False
