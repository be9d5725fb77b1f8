"""A replica's running figures for /health and /stats: totals, and rate and latency percentiles over a bounded
window of the most recent frames (a replica serves for days; its memory must not grow with them)."""
from __future__ import annotations

import time
from collections import deque

import numpy as np

WINDOW_FRAMES = 2048
RATE_WINDOW_S = 10.0
SUMMARY_EVERY_S = 0.25            # every answer carries the figures; they are recomputed at most this often


class ReplicaStats:
    def __init__(self) -> None:
        self.frames = 0
        self.failed = 0
        self.queued = 0                    # requests inside the replica, waiting or running
        self.started = time.monotonic()
        self._recent: deque[tuple[float, float]] = deque(maxlen=WINDOW_FRAMES)    # (finished at, latency s)
        self._summary: tuple[float, dict] = (-1.0, {})

    def done(self, latency_s: float) -> None:
        self.frames += 1
        self._recent.append((time.monotonic(), latency_s))

    def summary(self) -> dict:
        now = time.monotonic()
        if now - self._summary[0] < SUMMARY_EVERY_S:
            return {**self._summary[1], "frames": self.frames, "failed": self.failed, "queue_depth": self.queued}
        recent = [lat for at, lat in self._recent if now - at <= RATE_WINDOW_S]
        span = min(RATE_WINDOW_S, now - self.started)
        latencies = np.array([lat for _, lat in self._recent]) * 1e3
        out = {"frames": self.frames, "failed": self.failed, "queue_depth": self.queued,
               "frames_per_s": round(len(recent) / span, 2) if span > 0 else 0.0}
        if latencies.size:
            p50, p90, p99 = np.percentile(latencies, [50, 90, 99])
            out.update(latency_ms={"p50": round(float(p50), 2), "p90": round(float(p90), 2),
                                   "p99": round(float(p99), 2), "frames": int(latencies.size)})
        self._summary = (now, out)
        return out
