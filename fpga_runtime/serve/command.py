"""`fpga-run serve BUILD`: deploy the serving application on a Ray cluster and keep it up until Ctrl-C."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from fpga_runtime.plan import PlanError
from fpga_runtime.serve import APP_NAME, BACKENDS, ServeUnavailable, app, ray_serve


@click.command("serve")
@click.argument("build", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--address", default=None, help="a running Ray cluster (HEAD:6379, or auto) [default: start a local one]")
@click.option("--host", default="127.0.0.1", show_default=True, help="where the HTTP endpoint listens")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--replicas", type=click.IntRange(1), default=1, show_default=True, help="boards: one replica each")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="pynq", show_default=True,
              help="board-model: the predicted board time and a recorded result (load tests on one machine)")
@click.option("--simulate", type=click.Choice(["verilator", "csim"]), default=None,
              help="pynq: each replica drives a simulated board")
@click.option("--board-resource", default=None, metavar="NAME",
              help="the custom resource each board's `ray start --resources '{\"NAME\": 1}'` declares: one replica "
                   "per board [default: none, replicas anywhere]")
@click.option("--board-build", type=click.Path(path_type=Path), default=None,
              help="where the build (or its deploy bundle) is on the boards [default: BUILD]")
@click.option("--in-flight", type=click.IntRange(1), default=None, help="frames pipelined per board")
@click.option("--max-queued", type=click.IntRange(0), default=None,
              help="requests waiting for a board before 503 [default: 2 x in flight x replicas]")
@click.option("--frame-ms", type=click.FloatRange(0, min_open=True), default=None,
              help="board-model: the frame time [default: the build's prediction]")
@click.option("--cpu-on-head", is_flag=True,
              help="run the build's CPU pre- and post-processing on the head host, not on the boards' CPUs")
@click.option("--engine-timeout", type=click.FloatRange(0, min_open=True), default=None,
              help="seconds after which a program still running means a hung board [default: the backend's]")
@click.option("--request-timeout", type=click.FloatRange(0, min_open=True), default=None,
              help="seconds before a request no board answered is a 503 [default: 120]")
@click.option("--for-seconds", type=click.FloatRange(0, min_open=True), default=None,
              help="stop after this long [default: until Ctrl-C]")
def serve_cmd(build: Path, address: str | None, host: str, port: int, replicas: int, backend: str,
              simulate: str | None, board_resource: str | None, board_build: Path | None, in_flight: int | None,
              max_queued: int | None, frame_ms: float | None, cpu_on_head: bool, engine_timeout: float | None,
              request_timeout: float | None, for_seconds: float | None) -> None:
    """Serve BUILD over HTTP on Ray Serve: POST /predict (a JPEG/PNG or .npy body), GET /health, GET /stats."""
    if simulate and backend != "pynq":
        raise click.BadParameter("--simulate is an option of --backend pynq", param_hint="--simulate")
    try:
        serve = ray_serve()
        import ray
        application = app(build, backend, replicas, simulate=simulate, board_resource=board_resource,
                          in_flight=in_flight, max_queued=max_queued, frame_ms=frame_ms, board_build=board_build,
                          cpu_on_head=cpu_on_head, request_timeout_s=request_timeout,
                          engine_timeout_s=engine_timeout)
    except (PlanError, ServeUnavailable) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": host, "port": port})
        serve.run(application, name=APP_NAME, route_prefix="/")
        click.echo(f"serving {build} on {replicas} {backend} replica(s): http://{host}:{port}/predict "
                   f"(GET /health, /stats); Ctrl-C stops")
        sys.stdout.flush()
        deadline = time.monotonic() + for_seconds if for_seconds else None
        while deadline is None or time.monotonic() < deadline:
            time.sleep(0.5)
    except KeyboardInterrupt:
        click.echo("stopping", err=True)
    except RuntimeError as exc:                 # a deployment that fails to start (a replica's build refused)
        click.echo(f"error: {str(exc).strip().splitlines()[-1]}", err=True)
        sys.exit(2)
    finally:
        serve.shutdown()
        ray.shutdown()
