"""A content-type service on Ray Serve: Google's Magika model (214 content types, the model that
scripts/demo.py runs) behind HTTP, one onyx or ONNX Runtime session per replica, requests
gathered into batches by Serve's dynamic batching (`@serve.batch`).

    POST /classify  with a file's bytes as the body  ->  {"label": "python", "score": 0.99}
    handle.classify_bytes.remote(data)  (a DeploymentHandle, no HTTP)  ->  the same

The same code serves with either engine (`engine: onyx | ort`), so the two can be compared in one
harness (examples/serving/bench.py). Each replica fetches the model itself, from the pinned
magika wheel through bench/real_models.py's sha256-checked cache, so a replica on any node of a
cluster needs only this repository (or its code) and onyx importable; see docs/serving.md.

Application builder for `serve run` / `serve deploy` (config.yaml beside this file):
`app:build_app` with the arguments of `AppArgs`.
"""
import asyncio
import dataclasses
import json
import os
import sys
import time

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
for sub in ("scripts", "bench"):  # demo.py (Magika's features and labels), real_models.py
    if os.path.join(ROOT, sub) not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, sub))

MAX_BODY = 64 << 20  # a request body above this is refused (Magika reads 2 KiB of it anyway)


@dataclasses.dataclass
class AppArgs:
    engine: str = "onyx"               # "onyx" or "ort"
    replicas: int = 2
    threads: int = 1                   # intra-op threads of each replica's session
    max_batch_size: int = 16
    batch_wait_timeout_s: float = 0.005
    max_ongoing_requests: int = 64     # per replica; more wait in the proxy
    cache: str = ""                    # model cache; "" = bench/real_models.py's default


def make_session(engine: str, path: str, threads: int):
    """One inference session of `engine` on `path` with `threads` intra-op threads."""
    import real_models

    if engine == "onyx":
        return real_models.onyx_session(path, threads)
    if engine == "ort":
        return real_models.ort_session(path, threads)
    raise ValueError(f"engine must be 'onyx' or 'ort', not {engine!r}")


@serve.deployment
class ContentType:
    """Names the content type of a file's bytes; batches requests for one session run."""

    def __init__(self, args: dict):
        import demo
        import real_models

        self.args = AppArgs(**args)
        cache = self.args.cache or os.environ.get("ONYX_REAL_MODELS_CACHE",
                                                   real_models.DEFAULT_CACHE)
        path = real_models.fetch_pypi(demo.MAGIKA_MODEL, cache)
        with open(real_models.fetch_pypi(demo.MAGIKA_CONFIG, cache)) as f:
            self.config = json.load(f)
        self.demo = demo
        self.session = make_session(self.args.engine, path, self.args.threads)
        self.classify.set_max_batch_size(self.args.max_batch_size)
        self.classify.set_batch_wait_timeout_s(self.args.batch_wait_timeout_s)
        self.batches = 0
        self.items = 0

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.005)
    async def classify(self, contents: list) -> list:
        x = np.stack([self.demo.magika_features(c, self.config) for c in contents])
        t0 = time.perf_counter()
        # In a worker thread (both engines release the GIL while they run): the replica's event
        # loop keeps accepting requests, which form the next batch meanwhile.
        probs = (await asyncio.to_thread(self.session.run, None, {"bytes": x}))[0]
        run_ms = (time.perf_counter() - t0) * 1e3
        self.batches += 1
        self.items += len(contents)
        return [{"label": label, "score": round(score, 4), "batch": len(contents),
                 "run_ms": round(run_ms, 3)}
                for label, score in self.demo.magika_labels(probs, self.config)]

    async def classify_bytes(self, body: bytes) -> dict:
        """The same for a caller holding a DeploymentHandle (another deployment, a driver)."""
        if not isinstance(body, bytes) or not body or len(body) > MAX_BODY:
            raise ValueError(f"expected 1 to {MAX_BODY} bytes")
        return await self.classify(body)

    async def __call__(self, request: Request):
        if request.method == "GET":  # statistics of this replica
            return {"engine": self.args.engine, "batches": self.batches, "items": self.items,
                    "mean_batch": self.items / self.batches if self.batches else 0.0}
        body = await request.body()
        if not body:
            return JSONResponse({"error": "empty body: POST the file's bytes"}, status_code=400)
        if len(body) > MAX_BODY:
            return JSONResponse({"error": f"body over {MAX_BODY} bytes"}, status_code=413)
        return await self.classify(body)


def build_app(args: dict):
    """The application for `serve run app:build_app key=value ...` or a config file."""
    known = {f.name: f.type for f in dataclasses.fields(AppArgs)}
    unknown = set(args) - set(known)
    if unknown:  # a misspelt option is an error, never silently dropped
        raise ValueError(f"unknown argument(s) {sorted(unknown)}; known: {sorted(known)}")
    parsed = dataclasses.asdict(AppArgs())
    parsed.update({k: known[k](v) for k, v in args.items()})  # config values may be strings
    a = AppArgs(**parsed)
    if a.engine not in ("onyx", "ort"):
        raise ValueError(f"engine must be 'onyx' or 'ort', not {a.engine!r}")
    if a.max_ongoing_requests < a.max_batch_size:
        raise ValueError("max_ongoing_requests must be at least max_batch_size")
    return ContentType.options(
        num_replicas=a.replicas, max_ongoing_requests=a.max_ongoing_requests,
        ray_actor_options={"num_cpus": a.threads}).bind(dataclasses.asdict(a))
