"""Serving throughput and latency against the number of boards, on one machine: `fpga-run serve`'s application
with N board-model replicas (each frame takes a fixed board time; frames start one board time apart), driven over
HTTP on 127.0.0.1 by a bounded load generator (aiohttp), then a fault run that kills one replica under load.

    .venv/bin/python benchmarks/serve_scaling.py [--boards 1 2 4 8] [--frame-ms 100] [--requests 1000]

Prints: per N, saturated throughput (closed loop, 4 clients per board) against N x one board's, and p50/p99
latency at 80 % of capacity (open loop, Poisson arrivals) beside the same arrivals through an ideal central queue
(M/D/N, no serving cost); the serving overhead per request (p50 latency of
single requests minus the board time); and the fault run's requests completed, retried and lost. The client,
Ray's proxy, the ingress and every replica share this machine's cores.
"""
from __future__ import annotations

import argparse
import asyncio
import io
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _one(session, url: str, body: bytes, out: list) -> None:
    t0 = time.perf_counter()
    try:
        async with session.post(url, data=body) as r:
            answer = await r.json(content_type=None) if r.status == 200 else await r.text()
            out.append((r.status, time.perf_counter() - t0, answer.get("retries", 0) if r.status == 200 else 0))
    except Exception as exc:                        # counted as lost, with its kind
        out.append((type(exc).__name__, time.perf_counter() - t0, 0))


async def closed_loop(url: str, body: bytes, clients: int, requests: int, limit_s: float) -> tuple[list, float]:
    import aiohttp
    out: list = []
    left = [requests]
    deadline = time.perf_counter() + limit_s

    async def client(session):
        while left[0] > 0 and time.perf_counter() < deadline:
            left[0] -= 1
            await _one(session, url, body, out)

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as session:
        t0 = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(clients)))
        return out, time.perf_counter() - t0


def poisson_gaps(rate: float, requests: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).exponential(1.0 / rate, requests)


def ideal_queue(gaps: np.ndarray, boards: int, frame_s: float) -> np.ndarray:
    """Latencies (ms) of the same arrivals through N boards fed from one FIFO queue with no serving cost at all
    (M/D/N): the floor any serving stack is measured against."""
    import heapq
    free = [0.0] * boards
    out = []
    for at in np.cumsum(gaps):
        start = max(at, heapq.heappop(free))
        heapq.heappush(free, start + frame_s)
        out.append(start + frame_s - at)
    return np.array(out) * 1e3


async def open_loop(url: str, body: bytes, gaps: np.ndarray) -> tuple[list, float]:
    import aiohttp
    out: list = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        t0 = time.perf_counter()
        tasks, at = [], t0
        for gap in gaps:
            at += gap
            await asyncio.sleep(max(0.0, at - time.perf_counter()))
            tasks.append(asyncio.create_task(_one(session, url, body, out)))
        await asyncio.gather(*tasks)
        return out, time.perf_counter() - t0


def _ok_latencies(out: list) -> np.ndarray:
    return np.array([lat for status, lat, _ in out if status == 200]) * 1e3


def _deploy(build: Path, name: str, boards: int, frame_ms: float, in_flight: int):
    from ray import serve

    from fpga_runtime.serve import app
    serve.run(app(build, "board-model", boards, frame_ms=frame_ms, in_flight=in_flight), name=name,
              route_prefix=f"/{name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--frame-ms", type=float, default=100.0, help="the board time per frame")
    ap.add_argument("--requests", type=int, default=1000, help="requests of the fault run")
    ap.add_argument("--load-s", type=float, default=25.0, help="seconds of Poisson load per N (at least 200 requests)")
    ap.add_argument("--build", type=Path, default=None, help="[default: YOLOv3-tiny at 64x64, partitioned here]")
    args = ap.parse_args()
    import ray
    from ray import serve

    from fpga_runtime.checking.frames import random_frame
    from fpga_runtime.plan import read_plan
    tmp = tempfile.TemporaryDirectory()
    build = args.build
    if build is None:
        import models
        from partitioner.build import PartitionConfig, run_partition
        model = Path(tmp.name) / "m.onnx"
        models.build_to_file("yolov3-tiny", model, 64)
        build = Path(tmp.name) / "b"
        run_partition(PartitionConfig(model=model, out_dir=build, picture=False, accuracy=False))
    plan = read_plan(build)
    buf = io.BytesIO()
    np.save(buf, random_frame(plan, 0)[plan.inputs[0].name])
    body = buf.getvalue()
    port = _free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    serve.start(http_options={"host": "127.0.0.1", "port": port}, logging_config={"log_level": "ERROR"})
    base = f"http://127.0.0.1:{port}"
    one_board = 1e3 / args.frame_ms
    rows = []
    overhead = None
    for n in args.boards:
        name = f"n{n}"
        _deploy(build, name, n, args.frame_ms, in_flight=2)
        url = f"{base}/{name}/predict?outputs=none"
        asyncio.run(closed_loop(url, body, n, 2 * n, 10))                           # warm the path
        if overhead is None:
            single, _ = asyncio.run(closed_loop(url, body, 1, 30, 30))
            overhead = float(np.median(_ok_latencies(single))) - args.frame_ms
        count = int(max(40, 6 * one_board * n))                                     # about 6 s of full load
        sat, wall = asyncio.run(closed_loop(url, body, 4 * n, count, 60))
        fps = sum(s == 200 for s, _, _ in sat) / wall
        rate = 0.8 * n * one_board
        gaps = poisson_gaps(rate, int(max(200, args.load_s * rate)), seed=n)
        load, _ = asyncio.run(open_loop(url, body, gaps))
        lat = _ok_latencies(load)
        p50, p99 = np.percentile(lat, [50, 99])
        i50, i99 = np.percentile(ideal_queue(gaps, n, args.frame_ms / 1e3), [50, 99])
        rows.append([n, f"{fps:.1f}", f"{n * one_board:.1f}", f"{fps / (n * one_board):.2f}", f"{rate:.1f}",
                     str(len(gaps)), f"{p50:.1f}", f"{p99:.1f}", f"{p99 / p50:.2f}", f"{i50:.1f} / {i99:.1f}",
                     str(sum(s != 200 for s, _, _ in sat) + sum(s != 200 for s, _, _ in load))])
        print(f"N={n}: {fps:.1f} frames/s saturated, p50 {p50:.1f} / p99 {p99:.1f} ms at {rate:.1f}/s",
              file=sys.stderr, flush=True)
        serve.delete(name)
    print(f"board model: {args.frame_ms:g} ms a frame ({one_board:.1f} frames/s a board); 4 clients a board for "
          "saturation; Poisson arrivals at 80 % of N boards' capacity for latency; 127.0.0.1\n")
    header = ["boards", "frames/s", "N x one board", "ratio", "load /s", "requests", "p50 ms", "p99 ms", "p99/p50",
              "M/D/N p50 / p99 ms", "not 200"]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(map(str, r)) + " |")
    print(f"\nserving overhead per request (p50 of single requests minus the board time): {overhead:.1f} ms")
    n = max(2, min(4, max(args.boards)))
    _deploy(build, "fault", n, args.frame_ms, in_flight=2)
    url = f"{base}/fault/predict?outputs=none"
    asyncio.run(closed_loop(url, body, n, 2 * n, 10))
    victim = next(a for a in ray.util.list_named_actors(all_namespaces=True) if "fault#board" in a["name"])
    actor = ray.get_actor(victim["name"], namespace=victim["namespace"])
    kill_after = 0.3 * args.requests / (n * one_board)
    killer = threading.Timer(kill_after, lambda: ray.kill(actor))
    killer.start()
    out, wall = asyncio.run(closed_loop(url, body, 4 * n, args.requests, 600))
    killer.join()
    completed = sum(s == 200 for s, _, _ in out)
    retried = sum(r for s, _, r in out if s == 200)
    lost = len(out) - completed
    kinds = sorted({str(s) for s, _, _ in out if s != 200})
    print(f"\nfault run: {n} boards, {len(out)} requests by {4 * n} clients, one replica killed after "
          f"{kill_after:.1f} s: {completed} completed, {retried} retried on another replica, {lost} lost"
          f"{' (' + ', '.join(kinds) + ')' if kinds else ''}; {wall:.1f} s")
    serve.shutdown()
    ray.shutdown()
    tmp.cleanup()


if __name__ == "__main__":
    main()
