"""`Session`: run a build folder like an onnxruntime session. CPU subgraphs run on onnxruntime, FPGA
subgraphs as engine programs on the chosen backend; tensors between two FPGA subgraphs stay in engine memory."""
from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpga_runtime.backends import STATS_WINDOW, Backend, RunStats, load_backend
from fpga_runtime.bundle import checked_plan
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.onnx_chain import cpu_session
from fpga_runtime.plan import Plan, PlanError, SubgraphSpec, check_feeds
from fpga_runtime.preprocess import ImageError, load_picture, picture_input
from fpga_runtime.run.policy import CPU_WORKERS, check_counts
from fpga_runtime.run.scheduler import Scheduler


@dataclass(frozen=True)
class NodeArg:
    """A model input or output as onnxruntime's `NodeArg` describes it: name, shape, type ("tensor(float)")."""
    name: str
    shape: list
    type: str


def _node_arg(t) -> NodeArg:
    return NodeArg(t.name, list(t.shape) if t.shape is not None else [], f"tensor({_ORT_TYPES.get(t.dtype, t.dtype)})")


_ORT_TYPES = {"float32": "float", "float64": "double", "float16": "float16", "int64": "int64", "int32": "int32",
              "int8": "int8", "uint8": "uint8", "bool": "bool"}


class Session:
    def __init__(
        self,
        build_dir: str | Path,
        backend: str = "reference",
        compute_units: int | None = None,
        slots: int = 1,
        timeout_s: float = 600.0,
        simulate: str | None = None,
        overlay: str | Path | None = None,
        *,
        plan: Plan | None = None,
        image: EngineImage | None = None,
        refuse_nonfinite: bool = False,
    ):
        """`simulate` ("verilator" | "csim") runs the pynq backend on a simulated board; `overlay` is the
        bitstream the pynq backend loads (default: the build's). `refuse_nonfinite` refuses inputs with NaN or
        infinite values (else they are counted in `nonfinite_inputs`: NaN runs as 0, infinities saturate).
        `plan` and `image` are a build still being written (`partition` checks it before plan.json exists): kept
        in memory, not read from the folder."""
        check_counts(compute_units=compute_units, slots=slots)
        if (simulate or overlay) and backend != "pynq":
            raise PlanError("simulate and overlay are options of the pynq backend")
        options = {"simulate": simulate, "overlay": overlay, "timeout_s": timeout_s} if backend == "pynq" else {}
        self.plan: Plan = plan if plan is not None else checked_plan(build_dir)
        self.folder = Path(build_dir)
        self.timeout_s = timeout_s
        self.stats: deque[RunStats] = deque(maxlen=STATS_WINDOW)     # the most recent engine runs
        self._engine_lock = threading.Lock()     # the activation slots serve one run or one stream at a time
        self._streaming = False
        self._closed = False
        self.refuse_nonfinite = refuse_nonfinite
        self.nonfinite_inputs = 0            # NaN / infinite input values run() was given (stream: its stats)
        fpga = [s for s in self.plan.subgraphs if s.device == "fpga"]
        self.backend: Backend | None = None
        if fpga:
            engine_dir = self.folder / ENGINE_DIR
            if image is None and not (engine_dir / "engine.json").exists():
                raise PlanError(f"{build_dir}: FPGA subgraphs but no compiled engine in {ENGINE_DIR}/")
            if image is None:
                try:
                    image = EngineImage.load(engine_dir)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise PlanError(f"{engine_dir / 'engine.json'}: not an engine image this runtime reads "
                                    f"({type(exc).__name__}: {exc}); partition the model again") from None
            self.image = image
            self.backend = load_backend(backend, self.image, engine_dir, compute_units, slots, **options)
        self._cpu = {s.name: cpu_session(self.plan.onnx_path(s)) for s in self.plan.subgraphs if s.device == "cpu"}
        on_fpga = {t.name for s in fpga for t in s.outputs}
        self._host_writes = {s.name: [t.name for t in s.inputs if t.name not in on_fpga] for s in fpga}
        read_by_cpu = {t.name for s in self.plan.subgraphs if s.device == "cpu" for t in s.inputs}
        read_by_cpu |= {t.name for t in self.plan.outputs}
        self._host_reads = {s.name: [t.name for t in s.outputs if t.name in read_by_cpu] for s in fpga}

    def run_image(self, path, output_names: list[str] | None = None, resize: str = "letterbox"):
        """(outputs, Fit) for an image file, fitted to the input as `fpga-run run --image` fits it (the build's
        recorded pre-processing, or a raw uint8 frame input taking the picture itself, placed as `resize` says);
        `fit.to_image` maps boxes in input pixels back to the picture's."""
        try:
            spec, pre = picture_input(self.plan, resize)
        except ImageError as exc:
            raise PlanError(f"run_image: {exc}") from None
        tensor, fit, _ = load_picture(path, spec, pre)
        return self.run(output_names, {spec.name: tensor}), fit

    def get_inputs(self) -> list[NodeArg]:
        return [_node_arg(t) for t in self.plan.inputs]

    def get_outputs(self) -> list[NodeArg]:
        return [_node_arg(t) for t in self.plan.outputs]

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.plan.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.plan.outputs]

    def run_subgraph(self, sg: SubgraphSpec, values: dict[str, np.ndarray], unit: int = 0, slot: int = 0
                     ) -> dict[str, np.ndarray]:
        """One subgraph of one frame. FPGA subgraphs exchange with the CPU only what the CPU side needs; the
        rest stays in the slot's engine memory."""
        if sg.device == "cpu":
            outs = self._cpu[sg.name].run([t.name for t in sg.outputs], {t.name: values[t.name] for t in sg.inputs})
            return dict(zip((t.name for t in sg.outputs), outs))
        for name in self._host_writes[sg.name]:
            self.backend.write(self.image.tensors[name], values[name], slot)
        stats = self.backend.wait(self.backend.start(self.image.programs[sg.name], unit, slot), self.timeout_s)
        self.stats.append(stats)
        return {name: self.backend.read(self.image.tensors[name], slot) for name in self._host_reads[sg.name]}

    def run(self, output_names: list[str] | None, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """One frame, subgraph after subgraph, in activation slot 0. Calls from several threads take turns."""
        self._check_open()
        self.nonfinite_inputs += check_feeds(self.plan, feeds, self.refuse_nonfinite)
        unknown = [n for n in output_names or [] if n not in self.output_names]
        if unknown:
            raise PlanError(f"no model output named {', '.join(map(repr, unknown))}; the outputs are "
                            f"{', '.join(self.output_names)}")
        if self._streaming:
            raise PlanError("this Session is streaming; run() would share its activation slots (finish the stream "
                            "or use a second Session)")
        with self._engine_lock:
            values = dict(feeds)
            for sg in self.plan.subgraphs:
                values.update(self.run_subgraph(sg, values))
        return [values[n] for n in (output_names or self.output_names)]

    def stream(self, frames, cpu_workers: int = CPU_WORKERS, in_flight: int | None = None):
        """Outputs of many frames, in order, pipelined by the concurrent scheduler (see scheduler.py). A frame is
        a feed dict, or an array where the model has a single input."""
        self._check_open()
        slots = self.backend.slots if self.backend else 1
        scheduler = Scheduler(self, cpu_workers, in_flight=in_flight or slots)
        if not self._engine_lock.acquire(blocking=False):
            raise PlanError("this Session is already running frames; one stream at a time (the engine's activation "
                            "slots are the session's): finish it or use a second Session")
        self._streaming = True
        try:
            for outputs in scheduler.stream(self._feeds(f) for f in frames):
                yield [outputs[n] for n in self.output_names]
        finally:
            self.nonfinite_inputs += scheduler.stats.nonfinite
            self._streaming = False
            self._engine_lock.release()

    def _feeds(self, frame) -> dict[str, np.ndarray]:
        if isinstance(frame, dict):
            return frame
        if len(self.input_names) != 1:
            raise PlanError(f"the model has inputs {self.input_names}: pass each frame as a dict of them")
        return {self.input_names[0]: np.asarray(frame)}

    def _check_open(self) -> None:
        if self._closed:
            raise PlanError("this Session is closed (open a new one)")

    def close(self) -> None:
        """Releases the backend (engine memory, simulator, board); later runs raise a clear error. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.backend is not None:
            self.backend.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
