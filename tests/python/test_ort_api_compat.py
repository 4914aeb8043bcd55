"""onnxruntime's wider Python API on onyx, each call checked against onnxruntime doing the same:
ModelMetadata, OrtValue, run_with_ort_values, IOBinding into caller buffers, profiling JSON,
optimized_model_filepath (inline and external initializers), the capi exception classes, list
feeds, session/run config entries, model edits through SessionOptions."""
import ctypes
import json
import os
import threading

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.capi import onnxruntime_pybind11_state as onyx_capi
from onnxruntime.capi import onnxruntime_pybind11_state as ort_capi

ORT_ERRORS = ["Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
              "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail"]


def make_model(nodes, inputs, outputs, initializers=(), **model_fields):
    graph = helper.make_graph(nodes, model_fields.pop("graph_name", "g"), inputs, outputs,
                              initializer=list(initializers),
                              doc_string=model_fields.pop("graph_doc", ""))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    for key, value in model_fields.items():
        if key == "props":
            helper.set_model_props(model, value)
        else:
            setattr(model, key, value)
    return model


def affine_model(n=8):
    """y = relu(x @ W + b) with a W big enough for external data; x: [N, n]."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "B")
    return make_model(
        [helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "B"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", n])],
        initializers=[w, b])


def both(model_bytes, options=None):
    """(onyx session, onnxruntime session) of the same model and options."""
    return (onyx.InferenceSession(model_bytes, options[0] if options else None),
            ort.InferenceSession(model_bytes, options[1] if options else None,
                                 providers=["CPUExecutionProvider"]))


@pytest.fixture(scope="module")
def affine():
    return affine_model().SerializeToString()


# ---------------------------------------------------------------------------------------------
# ModelMetadata
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fields", [
    dict(producer_name="exporter", domain="ai.example", doc_string="a model", graph_name="main",
         graph_doc="the graph", model_version=7, props={"names": "{0: 'cat', 1: 'dog'}", "stride": "32"}),
    dict(),  # nothing set: empty strings, version unset
])
def test_modelmeta_matches_onnxruntime(fields):
    model = make_model([helper.make_node("Relu", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], **fields)
    got, want = (s.get_modelmeta() for s in both(model.SerializeToString()))
    for name in ("producer_name", "graph_name", "domain", "description", "graph_description",
                 "version", "custom_metadata_map"):
        assert getattr(got, name) == getattr(want, name), name
    if fields:
        assert got.custom_metadata_map == {"names": "{0: 'cat', 1: 'dog'}", "stride": "32"}
        assert (got.description, got.graph_description, got.version) == ("a model", "the graph", 7)


def test_modelmeta_from_a_file(tmp_path, affine):
    path = tmp_path / "m.onnx"
    path.write_bytes(affine)
    assert onyx.InferenceSession(str(path)).get_modelmeta().graph_name == "g"


# ---------------------------------------------------------------------------------------------
# OrtValue and run_with_ort_values
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("array", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int64), np.array(True),
    np.arange(4, dtype=np.float16), np.array([[1.5]], np.float64), np.arange(3, dtype=np.uint8),
])
def test_ortvalue_queries_match_onnxruntime(array):
    got = onyx.OrtValue.ortvalue_from_numpy(array)
    want = ort.OrtValue.ortvalue_from_numpy(array)
    assert got.shape() == want.shape()
    assert got.data_type() == want.data_type()
    assert got.is_tensor() == want.is_tensor() is True
    assert got.device_name() == want.device_name() == "cpu"
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    if array.dtype != object:
        assert got.element_type() == want.element_type()
        assert got.tensor_size_in_bytes() == want.tensor_size_in_bytes()


def test_string_ortvalue_feeds_a_string_input():
    # onnxruntime makes string OrtValues only from C; onyx takes numpy string arrays too.
    model = make_model([helper.make_node("Identity", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                       [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    v = onyx.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"]))
    assert v.data_type() == "tensor(string)" and v.shape() == [2]
    (got,) = onyx.InferenceSession(model.SerializeToString()).run_with_ort_values(None, {"x": v})
    assert list(got.numpy()) == ["a", "bc"]


def test_ortvalue_shares_the_arrays_memory():
    a = np.zeros((2, 2), np.float32)
    v = onyx.OrtValue.ortvalue_from_numpy(a)
    assert v.data_ptr() == a.ctypes.data
    a[0, 0] = 5
    assert v.numpy()[0, 0] == 5
    v.update_inplace(np.full((2, 2), 3, np.float32))
    assert a.sum() == 12


@pytest.mark.parametrize("element_type", [np.float32, np.int64, np.bool_, 1, 7])
def test_ortvalue_from_shape_and_type_matches_onnxruntime(element_type):
    got = onyx.OrtValue.ortvalue_from_shape_and_type([3, 4], element_type)
    want = ort.OrtValue.ortvalue_from_shape_and_type([3, 4], element_type)
    assert (got.shape(), got.data_type()) == (want.shape(), want.data_type())


def test_ortvalue_on_another_device_is_an_error():
    with pytest.raises(onyx.InvalidArgument, match="CPU only"):
        onyx.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32), "cuda", 0)


def test_run_with_ort_values_matches_onnxruntime(affine):
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    mine, theirs = both(affine)
    (got,) = mine.run_with_ort_values(["y"], {"x": onyx.OrtValue.ortvalue_from_numpy(x)})
    (want,) = theirs.run_with_ort_values(["y"], {"x": ort.OrtValue.ortvalue_from_numpy(x)})
    assert isinstance(got, onyx.OrtValue) and got.shape() == want.shape() == [5, 8]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # An OrtValue is also accepted by run(), as in onnxruntime.
    np.testing.assert_allclose(mine.run(None, {"x": onyx.OrtValue.ortvalue_from_numpy(x)})[0],
                               want.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# IOBinding
# ---------------------------------------------------------------------------------------------

def test_iobinding_writes_into_caller_buffers(affine):
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    mine, theirs = both(affine)
    want = theirs.run(None, {"x": x})[0]

    out = np.full((3, 8), np.nan, np.float32)  # preallocated, bound by address
    binding = mine.io_binding()
    binding.bind_input("x", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    binding.bind_output("y", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
    mine.run_with_iobinding(binding)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert binding.get_outputs()[0].data_ptr() == out.ctypes.data

    # The same through OrtValues, and onnxruntime's binding for comparison.
    target = onyx.OrtValue.ortvalue_from_shape_and_type([3, 8], np.float32)
    binding.clear_binding_outputs()
    binding.bind_ortvalue_output("y", target)
    binding.bind_cpu_input("x", x * 2)
    mine.run_with_iobinding(binding)
    theirs_binding = theirs.io_binding()
    theirs_binding.bind_cpu_input("x", x * 2)
    theirs_binding.bind_output("y")
    theirs.run_with_iobinding(theirs_binding)
    np.testing.assert_allclose(target.numpy(), theirs_binding.copy_outputs_to_cpu()[0],
                               rtol=1e-5, atol=1e-6)


def test_iobinding_allocated_outputs_and_wrong_buffers(affine):
    x = np.ones((2, 8), np.float32)
    mine, theirs = both(affine)
    binding = mine.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y")
    mine.run_with_iobinding(binding)
    (got,) = binding.copy_outputs_to_cpu()
    np.testing.assert_allclose(got, theirs.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)
    small = np.zeros((1, 8), np.float32)
    binding.bind_output("y", "cpu", 0, np.float32, [1, 8], small.ctypes.data)
    with pytest.raises(onyx.InvalidArgument, match=r"output 'y' is float32\[2, 8\].*float32\[1, 8\]"):
        mine.run_with_iobinding(binding)


# ---------------------------------------------------------------------------------------------
# Profiling
# ---------------------------------------------------------------------------------------------

def _profile(module, model_bytes, tmp_path, runs):
    options = module.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / module.__name__)
    options.graph_optimization_level = module.GraphOptimizationLevel.ORT_DISABLE_ALL
    kwargs = {} if module is onyx else {"providers": ["CPUExecutionProvider"]}
    sess = module.InferenceSession(model_bytes, options, **kwargs)
    for _ in range(runs):
        sess.run(None, {"x": np.ones((2, 8), np.float32)})
    path = sess.end_profiling()
    with open(path) as f:
        text = f.read()
    return text, json.loads(text), sess.get_profiling_start_time_ns()


def test_profile_is_chrome_trace_like_onnxruntimes(affine, tmp_path):
    text, events, start = _profile(onyx, affine, tmp_path, runs=2)
    ort_text, ort_events, _ = _profile(ort, affine, tmp_path, runs=2)
    lines = text.splitlines()
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == len(events) + 2
    required = {"cat", "pid", "tid", "dur", "ts", "ph", "name", "args"}
    for e in events:
        assert required <= e.keys() and e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0
    assert required <= ort_events[0].keys()
    # One Node event per operator per run, named and typed as onnxruntime names them.
    nodes = [e for e in events if e["cat"] == "Node"]
    ort_nodes = [e for e in ort_events if e["cat"] == "Node" and e["name"].endswith("_kernel_time")]
    assert sorted(e["args"]["op_name"] for e in nodes) == sorted(e["args"]["op_name"] for e in ort_nodes)
    assert sum(e["name"] == "model_run" for e in events) == 2
    assert start > 0


def test_end_profiling_without_profiling_returns_empty(affine):
    assert onyx.InferenceSession(affine).end_profiling() == ""


# ---------------------------------------------------------------------------------------------
# optimized_model_filepath
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("external", [False, True])
def test_saved_model_reloads_with_the_same_outputs(affine, tmp_path, external):
    saved = tmp_path / "sub" / "saved.onnx"
    saved.parent.mkdir()
    options = onyx.SessionOptions()
    options.optimized_model_filepath = str(saved)
    if external:
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "w.bin")
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "100")
    x = np.random.default_rng(4).standard_normal((4, 8)).astype(np.float32)
    (want,) = onyx.InferenceSession(affine, options).run(None, {"x": x})
    assert saved.is_file()
    data = saved.parent / "w.bin"
    # W (8x8 float = 256 bytes) goes out, B (32 bytes) stays inline.
    assert data.is_file() == external and (not external or data.stat().st_size == 256)
    for sess in (onyx.InferenceSession(str(saved)),
                 ort.InferenceSession(str(saved), providers=["CPUExecutionProvider"])):
        np.testing.assert_allclose(sess.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-6)


def test_saved_model_from_external_data_is_self_contained(affine, tmp_path):
    # A source model with external data, saved inline elsewhere: the copy loads without it.
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    first = onyx.SessionOptions()
    first.optimized_model_filepath = str(src_dir / "m.onnx")
    first.add_session_config_entry("session.optimized_model_external_initializers_file_name", "m.bin")
    first.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1")
    onyx.InferenceSession(affine, first)
    second = onyx.SessionOptions()
    second.optimized_model_filepath = str(tmp_path / "inline.onnx")
    onyx.InferenceSession(str(src_dir / "m.onnx"), second)
    os.remove(src_dir / "m.bin")
    x = np.ones((1, 8), np.float32)
    np.testing.assert_allclose(onyx.InferenceSession(str(tmp_path / "inline.onnx")).run(None, {"x": x})[0],
                               onyx.InferenceSession(affine).run(None, {"x": x})[0])


# ---------------------------------------------------------------------------------------------
# Exceptions
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ORT_ERRORS)
def test_capi_exception_classes_derive_as_onnxruntimes(name):
    mine, theirs = getattr(onyx_capi, name), getattr(ort_capi, name)
    assert [c.__name__ for c in mine.__mro__] == [c.__name__ for c in theirs.__mro__]


def _raise(module, case, model_bytes):
    kwargs = {} if module is onyx else {"providers": ["CPUExecutionProvider"]}
    if case == "dtype":
        module.InferenceSession(model_bytes, **kwargs).run(None, {"x": np.zeros((1, 8), np.float64)})
    elif case == "file":
        module.InferenceSession("/nonexistent/model.onnx", **kwargs)
    elif case == "protobuf":
        module.InferenceSession(b"\x08\x07garbage", **kwargs)
    elif case == "terminate":
        options = module.RunOptions()
        options.terminate = True
        module.InferenceSession(model_bytes, **kwargs).run(None, {"x": np.zeros((1, 8), np.float32)}, options)


@pytest.mark.parametrize("case,ort_class,onyx_class", [
    ("dtype", "InvalidArgument", onyx.InvalidArgument),
    ("file", "NoSuchFile", onyx.NotFound),
    ("protobuf", "InvalidProtobuf", onyx.InvalidModel),
    ("terminate", "Fail", onyx.Cancelled),
])
def test_errors_are_caught_by_onnxruntimes_class(affine, case, ort_class, onyx_class):
    with pytest.raises(getattr(ort_capi, ort_class)):
        _raise(ort, case, affine)
    with pytest.raises(getattr(onyx_capi, ort_class)) as info:
        _raise(onyx, case, affine)
    assert isinstance(info.value, onyx_class)  # and still onyx's own class, with its message


# ---------------------------------------------------------------------------------------------
# Feeds, options, model edits
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("elem,values", [
    (TensorProto.FLOAT, [[1.5, -2.0], [3.0, 4.25]]),
    (TensorProto.INT64, [[1, -2], [3, 4]]),
    (TensorProto.INT32, [[7, 8], [9, 10]]),
])
def test_list_feeds_convert_to_the_declared_type(elem, values):
    model = make_model([helper.make_node("Identity", ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", elem, [2, 2])],
                       [helper.make_tensor_value_info("y", elem, [2, 2])]).SerializeToString()
    mine, theirs = both(model)
    got, want = mine.run(None, {"x": values})[0], theirs.run(None, {"x": values})[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_config_entries_like_onnxruntime():
    for module in (onyx, ort):
        so, ro = module.SessionOptions(), module.RunOptions()
        so.add_session_config_entry("k", "v")
        ro.add_run_config_entry("k", "w")
        assert (so.get_session_config_entry("k"), ro.get_run_config_entry("k")) == ("v", "w")
        with pytest.raises(RuntimeError, match="SessionOptions does not have configuration with key: x"):
            so.get_session_config_entry("x")
        with pytest.raises(RuntimeError, match="RunOptions does not have configuration with key: x"):
            ro.get_run_config_entry("x")


def _plain(value):
    """Enums (onnxruntime's are pybind11 enums) as ints, other values as they are."""
    return int(value) if not isinstance(value, (bool, str, float)) and hasattr(value, "__int__") else value


def test_session_options_attributes_like_onnxruntime():
    for module in (onyx, ort):
        so = module.SessionOptions()
        so.enable_mem_reuse = False
        so.use_deterministic_compute = True
        so.log_severity_level = 3
        with pytest.raises(AttributeError):
            so.not_an_option = 1
    # Every onnxruntime SessionOptions / RunOptions attribute that is not a method is accepted
    # with onnxruntime's default value.
    for ort_cls, onyx_cls in ((ort.SessionOptions, onyx.SessionOptions), (ort.RunOptions, onyx.RunOptions)):
        theirs, mine = ort_cls(), onyx_cls()
        names = [n for n in dir(theirs) if not n.startswith("_") and not callable(getattr(theirs, n))]
        assert names
        for name in names:
            assert _plain(getattr(mine, name)) == _plain(getattr(theirs, name)), name
            setattr(mine, name, getattr(theirs, name))
    with pytest.raises(onyx.Unsupported, match="custom-operator libraries"):
        onyx.SessionOptions().register_custom_ops_library("libcustom.so")


def test_add_initializer_and_free_dimension_overrides_match_onnxruntime(affine):
    w = np.eye(8, dtype=np.float32) * 2
    x = np.random.default_rng(6).standard_normal((3, 8)).astype(np.float32)
    opts, values = [], []  # onnxruntime needs the OrtValues alive while sessions are made
    for module in (onyx, ort):
        so = module.SessionOptions()
        values.append(module.OrtValue.ortvalue_from_numpy(w))
        so.add_initializer("W", values[-1])
        so.add_free_dimension_override_by_name("N", 3)
        opts.append(so)
    mine, theirs = both(affine, opts)
    assert mine.get_inputs()[0].shape == theirs.get_inputs()[0].shape == [3, 8]
    got, want = mine.run(None, {"x": x})[0], theirs.run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    bias = numpy_helper.to_array(affine_model().graph.initializer[1])
    np.testing.assert_allclose(got, np.maximum(x @ w + bias, 0),
                               rtol=1e-5, atol=1e-6)


def test_add_initializer_for_an_unknown_name_is_an_error(affine):
    so = onyx.SessionOptions()
    so.add_initializer("nope", np.zeros(2, np.float32))
    with pytest.raises(onyx.InvalidArgument, match="no initializer or graph input of that name"):
        onyx.InferenceSession(affine, so)


def test_run_async_calls_back_like_onnxruntime(affine):
    x = np.ones((2, 8), np.float32)
    results = {}
    done = {m: threading.Event() for m in ("onyx", "ort")}

    def callback(outputs, key, error):
        results[key] = (outputs, error)
        done[key].set()

    mine, theirs = both(affine)
    mine.run_async(None, {"x": x}, callback, "onyx")
    theirs.run_async(None, {"x": x}, callback, "ort")
    assert done["onyx"].wait(10) and done["ort"].wait(10)
    assert results["onyx"][1] == results["ort"][1] == ""
    np.testing.assert_allclose(results["onyx"][0][0], results["ort"][0][0], rtol=1e-5, atol=1e-6)
    # An error reaches the callback as its message.
    done["onyx-error"] = threading.Event()
    mine.run_async(None, {"x": np.ones((2, 8), np.float64)}, callback, "onyx-error")
    assert done["onyx-error"].wait(10)
    outputs, error = results["onyx-error"]
    assert outputs is None and "expects element type float, got double" in error


def test_module_functions_like_onnxruntime():
    assert onyx.get_all_providers()[-1] == ort.get_all_providers()[-1] == "CPUExecutionProvider"
    assert set(ort.get_all_providers()) <= set(onyx.get_all_providers())
    assert "Build Info" in onyx.get_build_info() and onyx.get_version_string() == onyx.__version__
    onyx.set_default_logger_severity(3)
    for module in (onyx, ort):
        with pytest.raises(RuntimeError):
            module.set_default_logger_severity(5)
    onyx.set_default_logger_severity(2)
    sess = onyx.InferenceSession(affine_model().SerializeToString())
    with pytest.raises(RuntimeError, match="Unknown Provider Type: Nope"):
        sess.set_providers(["Nope"])
    sess.set_providers(["CPUExecutionProvider"])


def test_ortvalue_array_and_dlpack_protocols():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for module in (onyx, ort):
        v = module.OrtValue.ortvalue_from_numpy(a)
        assert np.asarray(v).ctypes.data == v.data_ptr() == a.ctypes.data  # no copy
        assert np.asarray(v, dtype=np.float64).dtype == np.float64
        assert v.__dlpack_device__() == (1, 0)
        back = module.OrtValue.from_dlpack(v)
        assert back.data_ptr() == a.ctypes.data and back.shape() == [2, 3]
        np.testing.assert_array_equal(module.OrtValue.from_dlpack(v.__dlpack__()).numpy(), a)
    flags = np.array([True, False, True])
    assert onyx.OrtValue.from_dlpack(onyx.OrtValue.ortvalue_from_numpy(flags)).numpy().dtype == np.bool_


def test_external_initializers_from_files_in_memory(tmp_path):
    # A model whose W lives in "w.bin", given from memory instead of from disk.
    saved = tmp_path / "m.onnx"
    options = onyx.SessionOptions()
    options.optimized_model_filepath = str(saved)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", "w.bin")
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "100")
    onyx.InferenceSession(affine_model().SerializeToString(), options)
    contents = (tmp_path / "w.bin").read_bytes()
    os.remove(tmp_path / "w.bin")
    x = np.ones((2, 8), np.float32)
    outputs = []
    for module in (onyx, ort):
        so = module.SessionOptions()
        so.add_external_initializers_from_files_in_memory(["w.bin"], [contents], [len(contents)])
        kwargs = {} if module is onyx else {"providers": ["CPUExecutionProvider"]}
        outputs.append(module.InferenceSession(str(saved), so, **kwargs).run(None, {"x": x})[0])
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-5, atol=1e-6)
    original = onyx.InferenceSession(affine_model().SerializeToString())
    np.testing.assert_allclose(outputs[0], original.run(None, {"x": x})[0])
    with pytest.raises(onyx.NotFound):  # without it, the missing file is reported
        onyx.InferenceSession(str(saved))


def test_logger_callback_receives_session_records():
    records = []
    try:
        onyx.set_default_logger_callback(lambda *r: records.append(r), severity=0)
        onyx.InferenceSession(affine_model().SerializeToString())
        assert records
        assert all(isinstance(f, int if i == 0 else str) for r in records for i, f in enumerate(r))
        assert any(r[0] == 1 and "session created" in r[4] and "1 inputs" in r[4] for r in records)
        count = len(records)
        onyx.set_default_logger_callback(lambda *r: records.append(r), severity=2)
        onyx.InferenceSession(affine_model().SerializeToString())
        assert len(records) == count  # info records are below warning
        onyx.set_default_logger_callback(lambda *r: 1 / 0, severity=0)
        onyx.InferenceSession(affine_model().SerializeToString())  # a raising callback is survived
        for module in (onyx, ort):
            with pytest.raises(RuntimeError):
                module.set_default_logger_callback(print, severity=5)
            with pytest.raises(RuntimeError):
                module.set_default_logger_callback("not callable")
    finally:
        onyx.set_default_logger_callback(None)
        onyx.set_default_logger_severity(2)


def test_session_options_from_the_model_like_onnxruntime(monkeypatch, tmp_path):
    config = {"session_options": {"inter_op_num_threads": 5, "intra_op_num_threads": 2,
                                  "graph_optimization_level": 1, "enable_profiling": 1}}
    model = affine_model()
    helper.set_model_props(model, {"ort_config": json.dumps(config)})
    monkeypatch.chdir(tmp_path)  # the profile file lands here
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    for module in (onyx, ort):
        kwargs = {} if module is onyx else {"providers": ["CPUExecutionProvider"]}
        so = module.InferenceSession(model.SerializeToString(), **kwargs).get_session_options()
        assert (so.inter_op_num_threads, so.intra_op_num_threads) == (5, 2)
        assert int(so.graph_optimization_level) == 1 and so.enable_profiling is True
    helper.set_model_props(model, {"ort_config": json.dumps({"session_options": {"bogus": 1}})})
    with pytest.raises(onyx.InvalidArgument, match="unknown session option 'bogus'"):
        onyx.InferenceSession(model.SerializeToString())
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "0")
    assert onyx.InferenceSession(model.SerializeToString()).get_session_options().intra_op_num_threads == 0


def test_bound_outputs_are_written_in_place_when_aligned(affine):
    x = np.random.default_rng(8).standard_normal((4, 8)).astype(np.float32)
    want = ort.InferenceSession(affine, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    sess = onyx.InferenceSession(affine)
    aligned = onyx.OrtValue.ortvalue_from_shape_and_type([4, 8], np.float32)
    assert aligned.data_ptr() % 64 == 0
    (got,) = sess._sess.run({"x": x}, ["y"], output_buffers={"y": aligned.numpy()})
    assert got.ctypes.data == aligned.data_ptr()  # the kernel wrote the caller's memory
    np.testing.assert_allclose(aligned.numpy(), want, rtol=1e-5, atol=1e-6)
    # Misaligned, or of another shape: computed as usual, the buffer untouched.
    raw = np.zeros(4 * 8 + 1, np.float32)
    misaligned = raw[1:].reshape(4, 8)
    (other,) = sess._sess.run({"x": x}, ["y"], output_buffers={"y": misaligned})
    assert other.ctypes.data != misaligned.ctypes.data and not misaligned.any()
    wrong_shape = onyx.OrtValue.ortvalue_from_shape_and_type([2, 8], np.float32).numpy()
    (other,) = sess._sess.run({"x": x}, ["y"], output_buffers={"y": wrong_shape})
    assert other.shape == (4, 8) and not wrong_shape.any()
    np.testing.assert_allclose(other, want, rtol=1e-5, atol=1e-6)
    # Through IOBinding, both ways give the same values in the bound memory.
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    for target in (onyx.OrtValue.ortvalue_from_shape_and_type([4, 8], np.float32),
                   onyx.OrtValue.ortvalue_from_numpy(np.zeros(33, np.float32)[1:].reshape(4, 8))):
        binding.bind_ortvalue_output("y", target)
        sess.run_with_iobinding(binding)
        np.testing.assert_allclose(target.numpy(), want, rtol=1e-5, atol=1e-6)
