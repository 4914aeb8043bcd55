"""The Python API (onyx.InferenceSession, onnxruntime-shaped), checked against ONNX Runtime and
onnx's reference evaluator: results, NodeArg metadata, feed checks and errors, every element type,
sequences and optionals, zero-copy feeds, the GIL and concurrent runs, options, python -m onyx."""
import os
import pydoc
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onyx

LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
         "shufflenet", "squeezenet", "vgg19", "zfnet512"]


def make_model(nodes, inputs, outputs, opset=21, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def relu_model(shape=("N", 3), elem=TensorProto.FLOAT):
    return make_model([helper.make_node("Relu", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", elem, list(shape))],
                      [helper.make_tensor_value_info("y", elem, list(shape))])


def ort_session(path_or_bytes):
    return ort.InferenceSession(path_or_bytes, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def squeezenet(light_dir):
    return os.path.join(light_dir, "light_squeezenet.onnx")


# ---------------------------------------------------------------------------------------------
# Results and metadata against ONNX Runtime
# ---------------------------------------------------------------------------------------------

def test_squeezenet_matches_onnxruntime(squeezenet):
    sess = onyx.InferenceSession(squeezenet, threads=2)
    x = np.random.default_rng(5).random((1, 3, 224, 224), dtype=np.float32)
    (got,) = sess.run(None, {"data_0": x})
    (want,) = ort_session(squeezenet).run(None, {"data_0": x})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("name", LIGHT)
def test_node_args_match_onnxruntime(name, light_dir):
    path = os.path.join(light_dir, f"light_{name}.onnx")
    sess, ref = onyx.InferenceSession(path), ort_session(path)

    def triples(args):
        return [(a.name, a.shape, a.type) for a in args]

    assert triples(sess.get_inputs()) == triples(ref.get_inputs())
    assert triples(sess.get_outputs()) == triples(ref.get_outputs())


def test_node_args_symbolic_and_unknown_dims_match_onnxruntime():
    m = make_model([helper.make_node("Relu", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", None, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", None, 3])])
    data = m.SerializeToString()
    (got,), (want,) = onyx.InferenceSession(data).get_inputs(), ort_session(data).get_inputs()
    assert (got.name, got.shape, got.type) == (want.name, want.shape, want.type) == \
        ("x", ["batch", None, 3], "tensor(float)")
    assert repr(got) == "NodeArg(name='x', type='tensor(float)', shape=['batch', None, 3])"


def test_model_as_bytes_path_like_and_model_proto(tmp_path):
    m = relu_model()
    path = tmp_path / "relu.onnx"
    onnx.save(m, str(path))
    x = np.array([[-1, 2, -3]], np.float32)
    for source in (m.SerializeToString(), path, str(path), m):
        (y,) = onyx.InferenceSession(source).run(None, {"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_output_selection_order_and_all_outputs():
    m = make_model([helper.make_node("Neg", ["x"], ["neg"]), helper.make_node("Abs", ["x"], ["abs"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("neg", TensorProto.FLOAT, [2]),
                    helper.make_tensor_value_info("abs", TensorProto.FLOAT, [2])])
    sess = onyx.InferenceSession(m.SerializeToString())
    x = np.array([-1.5, 2.0], np.float32)
    a, n = sess.run(["abs", "neg"], {"x": x})
    np.testing.assert_array_equal(a, np.abs(x))
    np.testing.assert_array_equal(n, -x)
    assert [o.name for o in sess.get_outputs()] == ["neg", "abs"]
    for names in (None, []):
        n, a = sess.run(names, {"x": x})
        np.testing.assert_array_equal(n, -x)


def test_initializer_backed_inputs_are_overridable_not_listed():
    w = np.array([1.0, 2.0], np.float32)
    m = make_model([helper.make_node("Add", ["x", "w"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                    helper.make_tensor_value_info("w", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                   initializers=[onnx.numpy_helper.from_array(w, "w")])
    data = m.SerializeToString()
    sess, ref = onyx.InferenceSession(data), ort_session(data)
    assert [i.name for i in sess.get_inputs()] == [i.name for i in ref.get_inputs()] == ["x"]
    assert [i.name for i in sess.get_overridable_initializers()] == \
        [i.name for i in ref.get_overridable_initializers()] == ["w"]
    x = np.array([10.0, 20.0], np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], x + w)
    other = np.array([5.0, 6.0], np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x, "w": other})[0], x + other)


# ---------------------------------------------------------------------------------------------
# Element types: numpy's own, strings, and ml_dtypes for bfloat16 / float8 / float4 / int4 / int2
# ---------------------------------------------------------------------------------------------

def cast_model(src, dst, shape):
    return make_model([helper.make_node("Cast", ["x"], ["y"], to=dst)],
                      [helper.make_tensor_value_info("x", src, shape)],
                      [helper.make_tensor_value_info("y", dst, shape)], opset=25)


NARROW = [TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ,
          TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E5M2FNUZ, TensorProto.FLOAT8E8M0,
          TensorProto.FLOAT4E2M1, TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2,
          TensorProto.UINT2]


@pytest.mark.parametrize("dst", NARROW, ids=TensorProto.DataType.Name)
def test_narrow_type_outputs_are_ml_dtypes_arrays_like_the_reference(dst):
    x = np.array([-9.0, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 1.5, 3.0, 7.0, 300.0], np.float32)
    if dst in (TensorProto.UINT4, TensorProto.UINT2, TensorProto.FLOAT8E8M0):
        x = np.abs(x)
    m = cast_model(TensorProto.FLOAT, dst, [len(x)])
    (got,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    assert got.dtype == want.dtype == helper.tensor_dtype_to_np_dtype(dst)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
    # Canonical bytes too (sub-byte types keep only their low bits, as ml_dtypes writes them).
    assert got.tobytes() == np.asarray(want, dtype=got.dtype).tobytes()


@pytest.mark.parametrize("src", NARROW, ids=TensorProto.DataType.Name)
def test_narrow_type_feeds_are_read_as_ml_dtypes_values(src):
    np_type = helper.tensor_dtype_to_np_dtype(src)
    values = np.array([0, 1, 2, 3, 1, 0], np.float32)
    if src in (TensorProto.INT4, TensorProto.INT2):
        values = np.array([-2, -1, 0, 1, -2, 1], np.float32)
    x = values.astype(np_type)
    m = cast_model(src, TensorProto.FLOAT, [len(x)])
    (got,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    (want,) = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32,
                                   np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_])
def test_numpy_dtypes_round_trip(dtype):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    m = make_model([helper.make_node("Identity", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", elem, [2, 3])],
                   [helper.make_tensor_value_info("y", elem, [2, 3])])
    x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    (y,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x)


def test_strings_in_and_out():
    m = make_model([helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")],
                   [helper.make_tensor_value_info("x", TensorProto.STRING, [3])],
                   [helper.make_tensor_value_info("y", TensorProto.STRING, [3])])
    sess = onyx.InferenceSession(m.SerializeToString())
    for x in (np.array(["a", "Bc", "dé"]), np.array(["a", "Bc", "dé"], dtype=object),
              np.array([b"a", b"Bc", "dé".encode()], dtype=object)):
        (y,) = sess.run(None, {"x": x})
        assert y.dtype == object and list(y) == ["A", "BC", "DÉ"]
    with pytest.raises(onyx.InvalidArgument, match="element 1 of the string array is a int"):
        sess.run(None, {"x": np.array(["a", 1, "b"], dtype=object)})


def test_scalar_and_empty_tensors():
    m = relu_model(shape=())
    (y,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": np.float32(-2)})
    assert y.shape == () and y == 0
    m = relu_model(shape=("N", 3))
    (y,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": np.zeros((0, 3), np.float32)})
    assert y.shape == (0, 3) and y.dtype == np.float32


# ---------------------------------------------------------------------------------------------
# Sequences (Python lists) and optionals (None)
# ---------------------------------------------------------------------------------------------

def test_sequence_input_and_output_are_lists():
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    m = make_model([helper.make_node("SequenceInsert", ["s", "t"], ["out"]),
                    helper.make_node("SequenceLength", ["out"], ["n"])],
                   [helper.make_value_info("s", seq),
                    helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
                   [helper.make_value_info("out", seq),
                    helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    sess = onyx.InferenceSession(m.SerializeToString())
    assert [i.type for i in sess.get_inputs()] == ["seq(tensor(float))", "tensor(float)"]
    items = [np.ones((2,), np.float32), np.arange(3, dtype=np.float32)]
    t = np.full((1, 2), 7, np.float32)
    got_seq, got_n = sess.run(None, {"s": items, "t": t})
    want_seq, want_n = ReferenceEvaluator(m).run(None, {"s": items, "t": t})
    assert isinstance(got_seq, list) and len(got_seq) == len(want_seq) == 3
    for g, w in zip(got_seq, want_seq):
        np.testing.assert_array_equal(g, w)
    assert got_n == want_n == 3
    (empty, n) = sess.run(None, {"s": [], "t": t})
    assert n == 1 and len(empty) == 1
    with pytest.raises(onyx.InvalidArgument, match="item 1 has element type int64, the sequence holds float"):
        sess.run(None, {"s": [items[0], np.zeros(2, np.int64)], "t": t})
    with pytest.raises(onyx.InvalidArgument, match="expects a sequence"):
        sess.run(None, {"s": items[0], "t": t})


def test_optional_input_none_and_empty_optional_output():
    opt = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    empty = helper.make_node("Optional", [], ["none"],
                             type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    m = make_model([helper.make_node("OptionalHasElement", ["o"], ["has"]), empty],
                   [helper.make_value_info("o", opt)],
                   [helper.make_tensor_value_info("has", TensorProto.BOOL, []),
                    helper.make_value_info("none", opt)])
    sess = onyx.InferenceSession(m.SerializeToString())
    assert sess.get_inputs()[0].type == "optional(tensor(float))"
    has, none = sess.run(None, {"o": None})
    assert has == np.bool_(False) and none is None
    has, none = sess.run(None, {"o": np.ones(2, np.float32)})
    assert has == np.bool_(True) and none is None


# ---------------------------------------------------------------------------------------------
# Bad feeds and bad models: clear exceptions, checked before anything runs
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def relu_session():
    return onyx.InferenceSession(relu_model().SerializeToString())


@pytest.mark.parametrize("feeds,error,message", [
    ({"nope": np.zeros((1, 3), np.float32)}, onyx.InvalidArgument,
     r"unknown input 'nope'; the model's inputs are: x"),
    ({"x": np.zeros((1, 3), np.float64)}, onyx.InvalidArgument,
     r"input 'x' expects element type float, got double"),
    ({"x": np.zeros((3,), np.float32)}, onyx.InvalidArgument,
     r"input 'x' expects rank 2 \(shape float\[N,3\]\), got shape \[3\]"),
    ({"x": np.zeros((2, 4), np.float32)}, onyx.InvalidArgument,
     r"input 'x' expects dim 1 = 3 \(shape float\[N,3\]\), got shape \[2,4\]"),
    ({}, onyx.InvalidArgument, r"missing input 'x'"),
    ({"x": None}, onyx.InvalidArgument, r"input 'x' is None; only optional inputs accept None"),
    ({"x": [[1.0, 2.0], [3.0]]}, onyx.InvalidArgument, r"input 'x': cannot make a numpy array"),
    ({"x": np.zeros((1, 3), np.datetime64)}, onyx.InvalidArgument,
     r"input 'x': numpy dtype datetime64 has no ONNX element type"),
    ({1: np.zeros((1, 3), np.float32)}, onyx.InvalidArgument, r"feed names must be str"),
])
def test_bad_feeds_raise_invalid_argument(relu_session, feeds, error, message):
    with pytest.raises(error, match=message) as info:
        relu_session.run(None, feeds)
    assert isinstance(info.value, onyx.Error) and isinstance(info.value, ValueError)


def test_bad_output_name_and_feed_container(relu_session):
    x = np.zeros((1, 3), np.float32)
    with pytest.raises(onyx.InvalidArgument, match=r"unknown output 'z'; the model's outputs are: y"):
        relu_session.run(["z"], {"x": x})
    with pytest.raises(onyx.InvalidArgument, match=r"feeds must be a dict"):
        relu_session.run(None, [x])


def test_bad_models_raise_errors(tmp_path):
    with pytest.raises(onyx.InvalidModel) as info:
        onyx.InferenceSession(b"certainly not a protobuf \xff\xfe")
    assert isinstance(info.value, ValueError) and str(info.value)
    with pytest.raises(onyx.NotFound, match="cannot open model file") as info:
        onyx.InferenceSession(str(tmp_path / "missing.onnx"))
    assert isinstance(info.value, FileNotFoundError)
    unknown_op = make_model([helper.make_node("NoSuchOp", ["x"], ["y"])],
                            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    with pytest.raises(onyx.Error, match="NoSuchOp"):
        onyx.InferenceSession(unknown_op.SerializeToString())
    with pytest.raises(TypeError, match="expects a model path"):
        onyx.InferenceSession(12)
    with pytest.raises(onyx.InvalidArgument, match="optimization level"):
        onyx.InferenceSession(relu_model().SerializeToString(), optimization="max")


def test_mutated_model_bytes_never_crash_the_interpreter(squeezenet, tmp_path):
    """Random byte flips and truncations of a real model: each load (and run, when it loads)
    must raise onyx.Error or work; a crash would kill the child process. MemoryError is allowed:
    a flipped dimension can ask for terabytes (numpy and the engine both raise it then)."""
    script = textwrap.dedent(f"""
        import numpy as np, onyx
        data = open({squeezenet!r}, "rb").read()
        rng = np.random.default_rng(7)
        outcomes = {{"error": 0, "ok": 0, "memory": 0}}
        for i in range(600):
            b = bytearray(data)
            if i % 3 == 0:
                b = b[: rng.integers(1, len(b))]
            for _ in range(rng.integers(1, 8)):
                b[rng.integers(0, len(b))] = rng.integers(0, 256)
            try:
                s = onyx.InferenceSession(bytes(b), threads=1)
                s.run(None, {{i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape], np.float32)
                             for i in s.get_inputs() if i.type == "tensor(float)"}})
                outcomes["ok"] += 1
            except onyx.Error:
                outcomes["error"] += 1
            except MemoryError:
                outcomes["memory"] += 1
        print(outcomes)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, f"child died (exit {r.returncode}): {r.stderr[-2000:]}"
    outcomes = eval(r.stdout)  # noqa: S307 (our own child's dict)
    assert outcomes["error"] > 300 and outcomes["ok"] > 5, outcomes


# ---------------------------------------------------------------------------------------------
# Memory: zero-copy feeds, outputs that own their data, feeds never written
# ---------------------------------------------------------------------------------------------

def test_feeds_are_not_modified_and_outputs_are_independent():
    m = make_model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["r"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    sess = onyx.InferenceSession(m.SerializeToString())
    x = np.array([-1, 2, -3, 4], np.float32)
    x.setflags(write=False)
    (y1,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(x, [-1, 2, -3, 4])
    y1[:] = 100  # outputs are the caller's: writing one changes nothing in the next run
    (y2,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y2, [0, -2, 0, -4])
    assert y2.flags.writeable and not np.shares_memory(y1, y2)


def test_fresh_outputs_are_handed_over_without_a_copy_and_shared_ones_are_copied():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = make_model([helper.make_node("Relu", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
                    helper.make_tensor_value_info("W", TensorProto.FLOAT, [2, 3])],
                   initializers=[numpy_helper.from_array(w, "W")])
    sess = onyx.InferenceSession(m.SerializeToString())
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    y, weights = sess.run(None, {"x": x})
    # The Relu output's buffer became the array's memory: its base is the capsule holding it.
    assert not y.flags.owndata and type(y.base).__name__ == "PyCapsule"
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    # A weight is shared with the session: the caller gets a copy, and writing it changes nothing.
    assert weights.flags.owndata
    weights[:] = 100
    np.testing.assert_array_equal(sess.run(["W"], {"x": x})[0], w)
    # The same output asked for twice: two arrays that do not share memory.
    a, b = sess.run(["y", "y"], {"x": x})
    assert not np.shares_memory(a, b)
    a[:] = -1
    np.testing.assert_array_equal(b, np.maximum(x, 0))
    # The array keeps its buffer alive after the session is gone.
    del sess
    np.testing.assert_array_equal(y * 2, np.maximum(x, 0) * 2)


def test_identity_of_a_feed_returns_a_copy():
    m = make_model([helper.make_node("Identity", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    x = np.array([1, 2, 3], np.float32)
    (y,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    assert not np.shares_memory(x, y)
    x[0] = 9
    np.testing.assert_array_equal(y, [1, 2, 3])


def test_non_contiguous_and_unaligned_feeds_give_correct_results():
    m = relu_model(shape=("N", 3))
    sess = onyx.InferenceSession(m.SerializeToString())
    base = np.arange(-12, 12, dtype=np.float32).reshape(3, 8)
    for x in (base.T[:, :3], base[::2, 1:4], np.asfortranarray(base[:, :3]),
              np.frombuffer(b"\0" + base[:, :3].tobytes(), dtype=np.float32, offset=1).reshape(3, 3)):
        (y,) = sess.run(None, {"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))


@pytest.mark.parametrize("dtype", [">f4", ">i8", ">f8", ">i4"])
def test_big_endian_feeds_are_read_by_value(dtype):
    """A big-endian array holds the same numbers as the native one: it is read by value, never its
    bytes reinterpreted (ONNX Runtime 1.2x reinterprets them: '>f4' [1, -2, 3] adds up to 9e-41...)."""
    elem = {"f": TensorProto.FLOAT, "i": TensorProto.INT64}[dtype[1]]
    if dtype == ">f8":
        elem = TensorProto.DOUBLE
    if dtype == ">i4":
        elem = TensorProto.INT32
    m = make_model([helper.make_node("Add", ["x", "x"], ["y"])],
                   [helper.make_tensor_value_info("x", elem, [2, 3])],
                   [helper.make_tensor_value_info("y", elem, [2, 3])])
    x = np.array([[1, -2, 3], [40, 500, -6000]], dtype=dtype)
    assert not x.dtype.isnative
    (y,) = onyx.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_array_equal(y, [[2, -4, 6], [80, 1000, -12000]])


def test_contiguous_feeds_are_not_copied(tmp_path):
    """A 256 MiB contiguous feed must not raise peak memory by its size; a transposed one
    (copied once: the control that shows the measurement works) does. ArgMax reads its input in
    place and writes 512 KiB."""
    m = make_model([helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0)],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1024])],
                   [helper.make_tensor_value_info("y", TensorProto.INT64, ["N"])])
    path = tmp_path / "argmax.onnx"
    onnx.save(m, str(path))
    # VmHWM, the peak RSS of this address space (ru_maxrss would include the pytest parent's).
    script = textwrap.dedent(f"""
        import re, sys, numpy as np, onyx
        def peak_mib():
            with open("/proc/self/status") as f:
                return int(re.search(r"VmHWM:\\s*(\\d+)", f.read()).group(1)) // 1024
        sess = onyx.InferenceSession({str(path)!r}, threads=1)
        n = 64 * 1024
        x = np.zeros((n, 1024), np.float32) if sys.argv[1] == "contiguous" else \\
            np.zeros((1024, n), np.float32).T
        x[:] = 1
        x[1, 7] = 5
        sess.run(None, {{"x": np.ones((8, 1024), np.float32)}})
        before = peak_mib()
        (y,) = sess.run(None, {{"x": x}})
        assert y.shape == (n,) and y[1] == 7 and y[0] == 0, y
        print(peak_mib() - before)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    grew = {}
    for kind in ("contiguous", "transposed"):
        r = subprocess.run([sys.executable, "-c", script, kind], capture_output=True, text=True,
                           timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        grew[kind] = int(r.stdout.split()[-1])
    assert grew["contiguous"] < 64, grew
    assert grew["transposed"] > 200, grew


# ---------------------------------------------------------------------------------------------
# Threads: the GIL is released while a model runs; concurrent runs of one session are correct
# ---------------------------------------------------------------------------------------------

def test_two_threads_running_one_session_give_correct_results(squeezenet):
    sess = onyx.InferenceSession(squeezenet, threads=1)
    rng = np.random.default_rng(1)
    xs = [rng.random((1, 3, 224, 224), dtype=np.float32) for _ in range(4)]
    ref = ort_session(squeezenet)
    want = [ref.run(None, {"data_0": x})[0] for x in xs]
    got = {}
    errors = []

    def worker(tid):
        try:
            for rep in range(3):
                for k in range(len(xs)):
                    i = (k + tid) % len(xs)  # the two threads feed different inputs at once
                    got[(tid, rep, i)] = sess.run(None, {"data_0": xs[i]})[0]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(got) == 2 * 3 * len(xs)
    for (tid, rep, i), y in got.items():
        np.testing.assert_allclose(y, want[i], rtol=1e-3, atol=1e-5)


def test_gil_is_released_while_the_model_runs(squeezenet):
    """A ticker thread records times while the main thread runs the model. Ticks strictly inside
    a run prove Python code ran while onyx computed; with the GIL held there could be none, however
    long we try. Runs repeat until enough ticks land inside (the machine may be busy)."""
    sess = onyx.InferenceSession(squeezenet, threads=1)
    x = np.random.default_rng(2).random((1, 3, 224, 224), dtype=np.float32)
    sess.run(None, {"data_0": x})  # plan once
    ticks, stop = [], threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=ticker)
    t.start()
    intervals, inside = [], 0
    try:
        deadline = time.perf_counter() + 20
        while inside < 3 and time.perf_counter() < deadline:
            t0 = time.perf_counter()
            sess.run(None, {"data_0": x})
            intervals.append((t0, time.perf_counter()))
            inside = sum(1 for s in list(ticks) for a, b in intervals if a + 0.001 < s < b - 0.001)
    finally:
        stop.set()
        t.join()
    assert inside >= 3, (inside, len(intervals), len(ticks))


# ---------------------------------------------------------------------------------------------
# Options, providers, documentation, python -m onyx
# ---------------------------------------------------------------------------------------------

def test_session_options_threads_and_optimization():
    data = relu_model().SerializeToString()
    opts = onyx.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.inter_op_num_threads = 4  # accepted, ignored
    sess = onyx.InferenceSession(data, sess_options=opts)
    assert sess.intra_op_threads == 1 and sess.get_session_options() is opts
    assert onyx.InferenceSession(data, opts, threads=2).intra_op_threads == 2
    assert onyx.InferenceSession(data, intra_op_threads=2).intra_op_threads == 2
    with pytest.raises(AttributeError):
        opts.no_such_option = 1
    x = np.array([[-1, 0, 1]], np.float32)
    for level in ("none", "basic", "all", onyx.GraphOptimizationLevel.ORT_ENABLE_EXTENDED):
        np.testing.assert_array_equal(onyx.InferenceSession(data, optimization=level).run(None, {"x": x})[0],
                                      np.maximum(x, 0))
    opts.reference_kernels = True
    np.testing.assert_array_equal(onyx.InferenceSession(data, opts).run(None, {"x": x})[0], np.maximum(x, 0))


def test_providers_like_onnxruntime():
    data = relu_model().SerializeToString()
    sess = onyx.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == onyx.get_available_providers() == ["CPUExecutionProvider"]
    assert onyx.get_device() == "CPU"
    with pytest.warns(UserWarning, match="CPU only"):
        onyx.InferenceSession(data, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    x = np.zeros((1, 3), np.float32)
    assert sess.run(None, {"x": x}, onyx.RunOptions())[0].shape == (1, 3)


def test_help_reads_well():
    text = pydoc.render_doc(onyx.InferenceSession, renderer=pydoc.plaintext)
    for needle in ("onnxruntime.InferenceSession", "get_inputs", "run(self, output_names",
                   "releases the GIL", "onyx.InvalidArgument"):
        assert needle in text, needle
    assert "InvalidArgument" in pydoc.render_doc(onyx, renderer=pydoc.plaintext)
    stub = os.path.join(os.path.dirname(onyx.__file__), "_onyx.pyi")
    assert os.path.exists(stub)


def test_errors_are_builtin_exceptions_too():
    assert issubclass(onyx.InvalidArgument, (onyx.Error, ValueError))
    assert issubclass(onyx.InvalidModel, ValueError)
    assert issubclass(onyx.Unsupported, NotImplementedError) and issubclass(onyx.Unsupported, RuntimeError)
    assert issubclass(onyx.ExecutionError, RuntimeError)
    assert issubclass(onyx.NotFound, FileNotFoundError)
    assert all(issubclass(c, onyx.Error) for c in (onyx.InvalidArgument, onyx.InvalidModel, onyx.Unsupported,
                                                   onyx.NotFound, onyx.FileError, onyx.ExecutionError))


def test_python_dash_m_onyx_runs_the_cli(squeezenet):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-m", "onyx", "info", squeezenet], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "data_0" in r.stdout and "Conv" in r.stdout
    r = subprocess.run([sys.executable, "-m", "onyx", "run", "/nonexistent.onnx"], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode != 0 and "nonexistent" in r.stderr + r.stdout


# ---------------------------------------------------------------------------------------------
# onyx.backend outside the test suite
# ---------------------------------------------------------------------------------------------

def test_backend_run_node_and_run_model():
    import onyx.backend as backend

    assert backend.supports_device("CPU") and not backend.supports_device("CUDA")
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([10, 20], np.float32)
    (y,) = backend.run_node(helper.make_node("Add", ["a", "b"], ["y"]), [a, b])
    np.testing.assert_array_equal(y, a + b)
    out = backend.run_model(relu_model(), [np.array([[-1, 2, -3]], np.float32)])
    np.testing.assert_array_equal(out.y, [[0, 2, 0]])
    np.testing.assert_array_equal(out[0], [[0, 2, 0]])
    assert onyx.backend is backend
