"""The front of `fpga-run serve`, on the head host: HTTP (POST /predict, GET /health, GET /stats) and a Ray handle
API (`predict`), pictures decoded and fitted here (so the boards' CPUs do not), frames sent to the board replicas
through a bounded queue, and a frame whose board died or hung sent again to another replica (inference is
idempotent). Every answer carries a request id."""
from __future__ import annotations

import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError
from ray.serve.exceptions import BackPressureError, DeploymentUnavailableError
from starlette.requests import Request
from starlette.responses import JSONResponse

from fpga_runtime.checking.images import PictureDetections
from fpga_runtime.plan import PlanError, check_feeds, read_plan
from fpga_runtime.run.policy import CPU_WORKERS
from fpga_runtime.serve.errors import BoardDown, NoBoard, RequestRefused, Saturated, ServeError
from fpga_runtime.serve.payload import decode, encode
from fpga_runtime.serve.stages import CpuStages

LOST_BOARD = (BoardDown, ActorDiedError, ActorUnavailableError, RayActorError, DeploymentUnavailableError)
HEALTH_PROBE_S = 5.0
REQUEST_TIMEOUT_S = 120.0         # past the pynq backend's engine timeout (60 s): a board that hangs fails first


class Ingress:
    def __init__(self, board, build: str, retries: int, resize: str = "letterbox", cpu_on_head: bool = False,
                 cpu_workers: int = CPU_WORKERS, timeout_s: float = REQUEST_TIMEOUT_S):
        """`cpu_on_head`: the build's pre- and post-processing subgraphs run here, on `cpu_workers` threads
        (onnxruntime releases the GIL), and the boards run only their part."""
        self.board = board
        self.timeout_s = timeout_s
        self.plan = read_plan(build)
        self.cpu = CpuStages(self.plan) if cpu_on_head else None
        self.pool = ThreadPoolExecutor(cpu_workers, thread_name_prefix="head-cpu") if cpu_on_head else None
        self.retries = retries
        self.resize = resize
        self.reader: PictureDetections | None = None
        self.replicas: dict[str, dict] = {}          # the latest figures each replica sent
        self.counts = {"requests": 0, "answered": 0, "refused": 0, "saturated": 0, "retried": 0, "lost": 0}

    async def predict(self, frame, request_id: str | None = None) -> dict[str, np.ndarray]:
        """The handle API: an array (single-input models) or a dict of inputs -> the outputs by name."""
        self.counts["requests"] += 1
        feeds = frame if isinstance(frame, dict) else {self.plan.inputs[0].name: np.asarray(frame)}
        return (await self._infer(feeds, request_id or uuid.uuid4().hex))["outputs"]

    async def _infer(self, feeds: dict[str, np.ndarray], request_id: str) -> dict:
        if self.cpu is None:
            return await self._on_board(feeds, request_id)
        try:
            check_feeds(self.plan, feeds)
        except (PlanError, ValueError, TypeError) as exc:
            self.counts["refused"] += 1
            raise RequestRefused(str(exc)) from None
        loop = asyncio.get_running_loop()
        values, board_feeds = await loop.run_in_executor(self.pool, self.cpu.before, feeds)
        result = await self._on_board(board_feeds, request_id)
        result["outputs"] = await loop.run_in_executor(self.pool, self.cpu.after, values, result["outputs"])
        return result

    async def _on_board(self, feeds: dict[str, np.ndarray], request_id: str) -> dict:
        attempt = 0
        while True:
            try:
                result = await asyncio.wait_for(self.board.infer.remote(feeds), self.timeout_s)
            except asyncio.TimeoutError:
                self.counts["lost"] += 1
                raise NoBoard(f"request {request_id}: no board answered within {self.timeout_s:g} s (every board "
                              "busy or gone)") from None
            except RequestRefused:
                self.counts["refused"] += 1
                raise
            except BackPressureError as exc:
                self.counts["saturated"] += 1
                raise Saturated(f"every board is busy and the queue is full ({exc}); retry later") from None
            except LOST_BOARD as exc:
                attempt += 1
                self.counts["retried"] += 1
                if attempt > self.retries:
                    self.counts["lost"] += 1
                    raise NoBoard(f"request {request_id}: no board could run it after {attempt} attempts (the last: "
                                  f"{_first_line(exc)})") from None
                await asyncio.sleep(min(0.05 * attempt, 1.0))
                continue
            self.replicas[result["replica"]] = {**result["stats"], "build_id": result["build_id"],
                                                "seen_s_ago": time.monotonic()}
            self.counts["answered"] += 1
            result["retries"] = attempt
            return result

    async def __call__(self, request: Request) -> JSONResponse:
        path = request.url.path.rstrip("/") or "/"
        request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
        try:
            if path.endswith("/predict") and request.method == "POST":
                return await self._predict(request, request_id)
            if path.endswith("/health") and request.method == "GET":
                return await self._health()
            if path.endswith("/stats") and request.method == "GET":
                return JSONResponse(self._stats())
            return JSONResponse({"error": f"no {request.method} {path}: POST /predict, GET /health, GET /stats"},
                                status_code=404)
        except ServeError as exc:
            headers = {"Retry-After": "1"} if isinstance(exc, Saturated) else {}
            return JSONResponse({"error": str(exc), "request_id": request_id}, status_code=exc.status,
                                headers={"X-Request-Id": request_id, **headers})

    async def _predict(self, request: Request, request_id: str) -> JSONResponse:
        self.counts["requests"] += 1
        q = request.query_params
        t0 = time.perf_counter()
        try:
            feeds, fit = decode(await request.body(), self.plan, q.get("resize", self.resize))
            conf, iou, max_det = float(q.get("conf", 0.25)), float(q.get("iou", 0.7)), int(q.get("max_det", 300))
        except RequestRefused:
            self.counts["refused"] += 1
            raise
        except ValueError as exc:
            self.counts["refused"] += 1
            raise RequestRefused(f"conf, iou and max_det are numbers ({exc})") from None
        result = await self._infer(feeds, request_id)
        outputs = result["outputs"]
        if self.reader is None:
            self.reader = PictureDetections(outputs)
        body = encode(outputs, fit, q.get("outputs", "all"), self.reader, self.plan.class_names, (conf, iou, max_det))
        body.update(request_id=request_id, replica=result["replica"], retries=result["retries"],
                    latency_ms=round((time.perf_counter() - t0) * 1e3, 2))
        return JSONResponse(body, headers={"X-Request-Id": request_id})

    def _stats(self) -> dict:
        now = time.monotonic()
        replicas = {r: {**s, "seen_s_ago": round(now - s["seen_s_ago"], 1)} for r, s in self.replicas.items()}
        return {"build_id": self.plan.build_id, "model": self.plan.model.get("name"), **self.counts,
                "replicas": replicas}

    async def _health(self) -> JSONResponse:
        """200 when a board replica answers within HEALTH_PROBE_S, 503 (with why) when none does."""
        try:
            probe = await asyncio.wait_for(self.board.summary.remote(), HEALTH_PROBE_S)
        except (asyncio.TimeoutError, *LOST_BOARD, BackPressureError) as exc:
            return JSONResponse({"status": "unavailable", "why": _first_line(exc), **self._stats()}, status_code=503)
        return JSONResponse({"status": "ok", "probed": probe, **self._stats()})


def _first_line(exc: BaseException) -> str:
    """What went wrong, in one line: the replica's own exception where Ray wraps it in a RayTaskError."""
    cause = getattr(exc, "cause", None)
    exc = cause if isinstance(cause, BaseException) else exc
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
