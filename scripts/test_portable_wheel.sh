#!/usr/bin/env bash
# Checks that the repaired wheel of scripts/build_wheel.sh runs on a Linux without the Debian
# libraries onyx is built against. As root, in a private mount namespace (unshare -m), it overlays
# the system library directory with whiteouts for every library the unrepaired module and CLI load
# beyond what the manylinux policy lets a wheel take from the system (glibc, libstdc++, libgcc_s,
# libz, ...): oneDNN, Highway, protobuf, TBB, libgomp and what they pull in (OpenCL's loader), plus
# the image codecs; the loader cache is rebuilt without them.
# In that namespace, in a fresh venv holding only the wheel and its PyPI dependencies:
#   1. the unrepaired wheel (build/wheel/raw) must FAIL to import: the libraries are really gone;
#   2. the repaired wheel (build/wheel/dist) must import, run a seeded random convolutional
#      network through the Python API and through its bundled CLI (`onyx run`), and match the
#      output that ONNX Runtime (in .venv, outside the namespace) computed for the same input.
# Needs root, util-linux's unshare and overlayfs; run scripts/build_wheel.sh first.
#
#   ONYX_WHEEL_DIR   where build_wheel.sh put raw/ and dist/ (default build/wheel); the model and
#                    the venv go to $ONYX_WHEEL_DIR/portable
#   ONYX_PYTHON      the CPython the wheel was built for (as for build_wheel.sh; default .venv's)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${ONYX_WHEEL_DIR:-build/wheel}")
WORK=$OUT/portable
LIBDIR=/usr/lib/x86_64-linux-gnu

if [ "${1:-}" = "--in-namespace" ]; then
  # ---- inside the private mount namespace: hide the libraries, then install and run ----
  PYBASE=$2
  # Debian's /lib is a link to /usr/lib; a split /lib would need its own overlay.
  if [ ! -L /lib ] && [ -d /lib/x86_64-linux-gnu ]; then
    echo "test_portable_wheel: /lib is not merged into /usr/lib; not supported" >&2
    exit 1
  fi
  mkdir -p "$WORK/overlay/upper" "$WORK/overlay/work"
  while read -r name; do
    mknod "$WORK/overlay/upper/$name" c 0 0  # an overlayfs whiteout: the file reads as deleted
  done <"$WORK/hidden.txt"
  mount -t overlay overlay \
    -o "lowerdir=$LIBDIR,upperdir=$WORK/overlay/upper,workdir=$WORK/overlay/work" "$LIBDIR"
  ldconfig -C "$WORK/ld.so.cache" && mount --bind "$WORK/ld.so.cache" /etc/ld.so.cache

  echo "== hidden (overlayfs whiteouts in $LIBDIR): $(tr "\n" " " <"$WORK/hidden.txt")"
  for lib in libdnnl.so libhwy.so libprotobuf.so libtbb.so libgomp.so libjpeg.so libpng16.so; do
    if ls "$LIBDIR/$lib"* >/dev/null 2>&1 || ldconfig -p | grep -q "$lib"; then
      echo "test_portable_wheel: $lib is still visible" >&2
      exit 1
    fi
    echo "   $lib*: not in $LIBDIR, not in ldconfig -p"
  done

  echo "== fresh venv ($PYBASE -m venv): the unrepaired wheel must fail to import"
  rm -rf "$WORK/venv"
  "$PYBASE" -m venv "$WORK/venv"
  PY=$WORK/venv/bin/python
  unset PYTHONPATH
  "$PY" -m pip install -q --no-compile "$RAW" numpy=="$NUMPY" ml_dtypes=="$ML_DTYPES"
  if "$PY" -c "import onyx" 2>"$WORK/raw_import.txt"; then
    echo "test_portable_wheel: the unrepaired wheel imported; the libraries are not hidden" >&2
    exit 1
  fi
  echo "   import onyx (unrepaired) fails: $(grep -o '[^ :]*: cannot open shared object file' \
    "$WORK/raw_import.txt" | head -1)"
  grep -q "cannot open shared object file" "$WORK/raw_import.txt"

  echo "== the repaired wheel: $(basename "$WHEEL")"
  "$PY" -m pip install -q --no-compile --no-deps --force-reinstall "$WHEEL"
  "$PY" - "$WORK" <<'EOF'
import os, subprocess, sys
import numpy as np
import onyx

work = sys.argv[1]
pkg = os.path.dirname(onyx.__file__)
so = next(os.path.join(pkg, n) for n in os.listdir(pkg) if n.startswith("_onyx.") and n.endswith(".so"))
for binary in (so, os.path.join(pkg, "bin", "onyx")):
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    assert "not found" not in ldd, ldd
    bundled = [l.split()[0] for l in ldd.splitlines() if "onyx.libs/" in l]
    print(f"   {os.path.relpath(binary, pkg)}: {len(bundled)} libraries from onyx.libs/")
x = np.load(os.path.join(work, "x.npy"))
sess = onyx.InferenceSession(os.path.join(work, "model.onnx"))
y, = sess.run(None, {"x": x})
np.save(os.path.join(work, "y_python.npy"), y)
print(f"   Python API: output {y.shape} {y.dtype}")
EOF
  rm -rf "$WORK/cli_out"
  "$WORK/venv/bin/onyx" run "$WORK/model.onnx" "$WORK/x.pb" --output-dir "$WORK/cli_out" >/dev/null
  echo "   CLI ($WORK/venv/bin/onyx run): wrote $(ls "$WORK/cli_out")"
  exit 0
fi

# ---- outside: choose what to hide, make the model and its reference, run the namespace part ----
if [ "$(id -u)" -ne 0 ]; then
  echo "test_portable_wheel: needs root (unshare -m, mount)" >&2
  exit 1
fi
RAW=$(ls "$OUT"/raw/onyx-*.whl)
WHEEL=$(ls "$OUT"/dist/onyx-*manylinux*.whl)
export RAW WHEEL
NUMPY=$(sed -n 's/^numpy==//p' scripts/requirements.txt)
ML_DTYPES=$(sed -n 's/^ml_dtypes==//p' scripts/requirements.txt)
export NUMPY ML_DTYPES
start=$(date +%s)
rm -rf "$WORK"
mkdir -p "$WORK/raw"

# Every library the unrepaired module and CLI resolve that auditwheel's policy for the wheel's tag
# does not let it take from the system (glibc, libstdc++, libgcc_s, libz, ...), by its name stem
# (libdnnl.so.2 -> every libdnnl.so* entry), plus the image codecs the wheel leaves out.
.venv/bin/python -m zipfile -e "$RAW" "$WORK/raw" && chmod +x "$WORK/raw/onyx/bin/onyx"
TAG=$(basename "$WHEEL" .whl | sed 's/.*-\(manylinux_[0-9]*_[0-9]*\)_x86_64$/\1/')
.venv/bin/python -c '
import json, os, sys
import auditwheel.policy
path = os.path.join(os.path.dirname(auditwheel.policy.__file__), "manylinux-policy.json")
with open(path) as f:
    print("\n".join(next(p for p in json.load(f) if p["name"] == sys.argv[1])["lib_whitelist"]))
' "$TAG" >"$WORK/allowed.txt"
stems=$(ldd "$WORK"/raw/onyx/_onyx.*.so "$WORK/raw/onyx/bin/onyx" |
  awk '$2 == "=>" && $3 ~ /^\// {print $1}' | grep -vxFf "$WORK/allowed.txt" |
  sed 's/\.so.*//' | sort -u)
for must in libdnnl libhwy libprotobuf libtbb libgomp; do
  grep -qx "$must" <<<"$stems" || { echo "test_portable_wheel: $must not linked?" >&2; exit 1; }
done
stems="$stems libjpeg libpng16 libtiff libwebp libopenjp2"
for stem in $stems; do
  (cd "$LIBDIR" && ls -d "$stem".so* 2>/dev/null) || true
done | sort -u >"$WORK/hidden.txt"
echo "== hiding $(echo $stems | wc -w) libraries: $(echo $stems)"

echo "== model: seeded random conv net; reference output from ONNX Runtime (.venv)"
.venv/bin/python - "$WORK" <<'EOF'
import os, sys
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto

work = sys.argv[1]
rng = np.random.default_rng(18)
def init(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
inits = [init("w1", 16, 3, 3, 3), init("b1", 16), init("w2", 32, 16, 3, 3), init("b2", 32),
         init("wf", 32, 10), init("bf", 10)]
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"]),
    helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
    helper.make_node("Sigmoid", ["c2"], ["s2"]),
    helper.make_node("Mul", ["c2", "s2"], ["a2"]),
    helper.make_node("GlobalAveragePool", ["a2"], ["g"]),
    helper.make_node("Flatten", ["g"], ["f"]),
    helper.make_node("MatMul", ["f", "wf"], ["m"]),
    helper.make_node("Add", ["m", "bf"], ["logits"]),
    helper.make_node("Softmax", ["logits"], ["y"], axis=1),
]
graph = helper.make_graph(nodes, "portable", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(work, "model.onnx"))
x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
np.save(os.path.join(work, "x.npy"), x)
with open(os.path.join(work, "x.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
ref = ort.InferenceSession(os.path.join(work, "model.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
np.save(os.path.join(work, "y_ort.npy"), ref)
EOF

# The fresh venv's Python: the one the wheel was built for (build_wheel.sh's ONYX_PYTHON).
PYBASE=${ONYX_PYTHON:-$(.venv/bin/python -c 'import sys; print(sys._base_executable)')}
unshare --mount --propagation private "$0" --in-namespace "$PYBASE"

echo "== compare with ONNX Runtime"
.venv/bin/python - "$WORK" <<'EOF'
import os, sys
import numpy as np
from onnx import numpy_helper, TensorProto

work = sys.argv[1]
ref = np.load(os.path.join(work, "y_ort.npy"))
t = TensorProto()
with open(os.path.join(work, "cli_out", "y.pb"), "rb") as f:
    t.ParseFromString(f.read())
for what, y in (("Python API", np.load(os.path.join(work, "y_python.npy"))), ("CLI", numpy_helper.to_array(t))):
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-6, err_msg=what)
    print(f"   {what}: matches ONNX Runtime, max |diff| {np.abs(y - ref).max():.2e}, "
          f"argmax {y.argmax(1).tolist()} (ORT {ref.argmax(1).tolist()})")
EOF
echo "== portable wheel: passed in $(($(date +%s) - start)) s"

