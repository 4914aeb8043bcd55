"""Cancelling runs from Python (issue 19): RunOptions.terminate set from another thread and
RunOptions.timeout_ms stop a Loop with a huge trip count with onyx.Cancelled, and the session
runs normally afterwards; the flag stays set until reset, as in onnxruntime."""
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from loop_models import counting_loop_body

HUGE = 2**40


def loop_model():
    """y = x + M: a Loop whose body adds 1 per iteration; M is an input."""
    body = counting_loop_body()
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["y"], name="loop", body=body)], "g",
        [helper.make_tensor_value_info("M", TensorProto.INT64, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array([1.0], np.float32), "one")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def feeds(trips, x):
    return {"M": np.array(trips, np.int64), "x": np.array([x], np.float32)}


def test_terminate_from_another_thread_stops_the_run():
    sess = onyx.InferenceSession(loop_model())
    ro = onyx.RunOptions()
    result = {}

    def runner():
        try:
            sess.run(None, feeds(HUGE, 0.0), ro)
        except onyx.Cancelled as e:
            result["error"] = e
        result["ended"] = time.perf_counter()

    t = threading.Thread(target=runner)
    t.start()
    time.sleep(0.2)  # well into the loop
    set_at = time.perf_counter()
    ro.terminate = True
    t.join(timeout=30)
    assert not t.is_alive(), "the run did not stop"
    latency_ms = (result["ended"] - set_at) * 1e3
    print(f"stopped {latency_ms:.3f} ms after terminate was set")
    assert "run cancelled: RunOptions::terminate was set" in str(result["error"])
    assert isinstance(result["error"], RuntimeError)
    assert latency_ms < 500  # issue 19 asks for 100 ms; loose for a loaded machine

    # The flag stays set until reset: a new run fails at once.
    with pytest.raises(onyx.Cancelled):
        sess.run(None, feeds(3, 0.0), ro)
    ro.terminate = False
    (y,) = sess.run(None, feeds(7, 1.5), ro)
    np.testing.assert_array_equal(y, np.array([8.5], np.float32))  # 1.5 + 7 x 1


def test_timeout_stops_the_run_and_the_next_one_gets_its_own():
    sess = onyx.InferenceSession(loop_model())
    ro = onyx.RunOptions()
    ro.timeout_ms = 100
    t0 = time.perf_counter()
    with pytest.raises(onyx.Cancelled, match="timeout of 100 ms exceeded"):
        sess.run(None, feeds(HUGE, 0.0), ro)
    took_ms = (time.perf_counter() - t0) * 1e3
    print(f"a 100 ms timeout stopped the run after {took_ms:.3f} ms")
    assert 100 <= took_ms < 600
    (y,) = sess.run(None, feeds(7, 1.5), ro)
    np.testing.assert_array_equal(y, np.array([8.5], np.float32))


def test_run_options_keep_onnxruntime_attributes():
    ro = onyx.RunOptions()
    assert ro.terminate is False and ro.timeout_ms == 0
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    assert ro.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    ro.timeout_ms = -1
    with pytest.raises(onyx.InvalidArgument, match="timeout_ms"):
        onyx.InferenceSession(loop_model()).run(None, feeds(1, 0.0), ro)
