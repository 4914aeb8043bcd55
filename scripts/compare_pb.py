#!/usr/bin/env python3
"""Compares an onyx output .pb with an expected TensorProto (rtol 1e-3, atol 1e-5)."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def main():
    expected, actual = load(sys.argv[1]), load(sys.argv[2])
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-5)
    print(f"matches {sys.argv[1].split('/')[-1]}: max abs diff "
          f"{float(np.max(np.abs(actual.astype(np.float64) - expected))):.3g}")


if __name__ == "__main__":
    main()
