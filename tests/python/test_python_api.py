"""The Python module: an onnxruntime-like InferenceSession, checked against ONNX Runtime."""
import os

import numpy as np
import onnxruntime as ort
import pytest

import onyx


def test_inference_session_matches_onnxruntime(light_dir):
    path = os.path.join(light_dir, "light_squeezenet.onnx")
    sess = onyx.InferenceSession(path, intra_op_threads=2)
    inputs = sess.get_inputs()
    assert inputs[0].name == "data_0" and inputs[0].shape == [1, 3, 224, 224]
    x = np.random.default_rng(5).random((1, 3, 224, 224), dtype=np.float32)
    (got,) = sess.run(None, {"data_0": x})
    (want,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"data_0": x})
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)


def test_bad_feed_raises_onyx_error(light_dir):
    sess = onyx.InferenceSession(os.path.join(light_dir, "light_squeezenet.onnx"))
    with pytest.raises(onyx.Error, match="expects dim 2 = 224"):
        sess.run(None, {"data_0": np.zeros((1, 3, 10, 224), np.float32)})
