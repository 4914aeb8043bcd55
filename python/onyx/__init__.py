"""onyx: a CPU inference engine for ONNX models.

A small onnxruntime-like surface over the native `_onyx` module:

    sess = onyx.InferenceSession("model.onnx")
    (probs,) = sess.run(None, {"data": x})
"""
from _onyx import Error, Session  # noqa: F401


class NodeArg:
    """Name, type string and shape (ints, symbol strings or None) of a graph input or output."""

    def __init__(self, d):
        self.name = d["name"]
        self.type = d["type"]
        self.shape = d["shape"]

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


class InferenceSession:
    def __init__(self, path_or_bytes, intra_op_threads=0, optimization="all", providers=None):
        self._s = Session(path_or_bytes, intra_op_threads, optimization)

    def get_inputs(self):
        """Inputs to feed; like onnxruntime, initializer-backed ones (IR < 4) are left out."""
        required = set(self._s.required_inputs())
        return [NodeArg(d) for d in self._s.inputs() if d["name"] in required]

    def get_outputs(self):
        return [NodeArg(d) for d in self._s.outputs()]

    def run(self, output_names, feeds):
        results = dict(self._s.run(feeds))
        names = output_names or [o["name"] for o in self._s.outputs()]
        return [results[n] for n in names]
