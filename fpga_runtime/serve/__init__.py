"""Many streams over many boards on Ray Serve (`fpga-run serve`, or `app()` for Python users): one replica per board,
pinned by a custom resource each board's `ray start --resources` declares, behind one ingress on the head host.

    head:   ray start --head --port 6379
    board:  ray start --address HEAD:6379 --resources '{"fpga_board": 1}'
    head:   fpga-run serve BUILD --address HEAD:6379 --backend pynq --replicas 4 --board-resource fpga_board

Ray is an optional extra: `pip install 'fpga-partitioner[serve]'`.
"""
from __future__ import annotations

from pathlib import Path

from fpga_runtime.bundle import checked_plan
from fpga_runtime.plan import PlanError
from fpga_runtime.run.policy import CPU_WORKERS, default_in_flight

BACKENDS = ("reference", "csim", "verilator", "pynq", "board-model")
APP_NAME = "fpga"
RAY_INSTALL = "pip install 'fpga-partitioner[serve]'  (or: pip install 'ray[serve]==2.60.0')"


class ServeUnavailable(PlanError):
    """Ray Serve is not installed."""


def ray_serve():
    try:
        from ray import serve
    except ImportError:
        raise ServeUnavailable(f"serving needs Ray Serve: {RAY_INSTALL}") from None
    return serve


def app(build: str | Path, backend: str = "reference", replicas: int = 1, *, simulate: str | None = None,
        board_resource: str | None = None, compute_units: int | None = None, in_flight: int | None = None,
        max_queued: int | None = None, retries: int | None = None, frame_ms: float | None = None,
        board_build: str | Path | None = None, resize: str = "letterbox", cpu_on_head: bool = False,
        request_timeout_s: float | None = None, engine_timeout_s: float | None = None):
    """The Ray Serve application for BUILD: `serve.run(app(...))` deploys it and returns the ingress handle
    (`await handle.predict.remote(frame)`). `board_build` is where the build is on the boards (default: BUILD);
    `max_queued` bounds the requests waiting for a board (beyond it: 503); a frame whose board dies is retried on
    another replica up to `retries` times (default: replicas + 1); `frame_ms` fixes the board model's frame time.
    A request no board answers within `request_timeout_s` (default 120 s) is a 503; a board whose program runs
    longer than `engine_timeout_s` has hung (its replica is restarted, its frames go elsewhere).
    `cpu_on_head` runs the build's CPU pre- and post-processing on the head (the ingress), not on the boards' CPUs.
    A replica holds at most 2 x `in_flight` frames (those its board pipelines, and as many ready behind them, which
    hides the dispatch time): the rest wait in one queue and go to whichever board frees first."""
    serve = ray_serve()
    from fpga_runtime.prediction.virtual_time import build_compute_units
    from fpga_runtime.serve.ingress import Ingress
    from fpga_runtime.serve.replica import BoardReplica
    if backend not in BACKENDS:
        raise PlanError(f"no backend {backend!r}; serve runs {', '.join(BACKENDS)}")
    if replicas < 1:
        raise PlanError(f"replicas must be at least 1, not {replicas}")
    plan = checked_plan(build)
    in_flight = in_flight or default_in_flight(compute_units or build_compute_units(plan))
    max_queued = max_queued if max_queued is not None else 2 * in_flight * replicas
    board_opts = {"num_cpus": 0}
    if board_resource:
        board_opts["resources"] = {board_resource: 1}
    board = serve.deployment(
        BoardReplica, name="board", num_replicas=replicas, ray_actor_options=board_opts,
        max_ongoing_requests=2 * in_flight, max_queued_requests=max_queued, health_check_period_s=2,
        health_check_timeout_s=30, graceful_shutdown_timeout_s=5,
    ).bind(str(board_build or build), backend, plan.build_id, in_flight, simulate, compute_units, frame_ms,
           cpu_on_head, engine_timeout_s)
    front = 2 * (replicas * 2 * in_flight + max_queued) + 16      # the boards' queue decides, with its reason
    ingress = serve.deployment(
        Ingress, name="ingress", num_replicas=1, ray_actor_options={"num_cpus": 0},
        max_ongoing_requests=front, max_queued_requests=front, backpressure_config={"retry_after_s": 1},
    )
    from fpga_runtime.serve.ingress import REQUEST_TIMEOUT_S
    return ingress.bind(board, str(build), replicas + 1 if retries is None else retries, resize, cpu_on_head,
                        CPU_WORKERS, request_timeout_s or REQUEST_TIMEOUT_S)
