"""Reference backend (exact int8, numpy) against onnxruntime float on the same FPGA subgraphs, and the
C-simulated HLS engine (csim backend, g++ -O2) on the same programs.

    python benchmarks/reference_speed.py [--repeat 3] [--models yolov3,yolov3-tiny] [--csim yolov3-tiny]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from _zoo import partitioned

from fpga_runtime.backends.csim import CsimEngine
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.engine_image import ENGINE_DIR, EngineImage
from fpga_runtime.onnx_chain import run_plan_on_onnxruntime
from fpga_runtime.reference import ReferenceEngine


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default="yolov3,yolov3-tiny")
    ap.add_argument("--csim", default="yolov3-tiny", help="models also timed on the csim backend (slow)")
    args = ap.parse_args()
    print("| model | FPGA subgraphs | GMAC | onnxruntime float ms | reference int8 ms | ratio | csim ms | "
          "csim = reference |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            result = partitioned(name, Path(tmp), accuracy=False)
            plan = result.plan
            fpga = [s for s in plan.subgraphs if s.device == "fpga"]
            feeds = random_frame(plan, 0)
            values = dict(feeds)
            values.update(run_plan_on_onnxruntime(plan, feeds))
            # every tensor an FPGA subgraph reads, from a float run of the whole chain
            chain = {}
            for s in plan.subgraphs:
                sess = ort.InferenceSession(str(plan.onnx_path(s)), providers=["CPUExecutionProvider"])
                outs = sess.run([t.name for t in s.outputs], {t.name: values[t.name] for t in s.inputs})
                values.update(zip((t.name for t in s.outputs), outs))
                if s.device == "fpga":
                    chain[s.name] = (sess, {t.name: values[t.name] for t in s.inputs})
            ort_best = min(_timed(lambda: [sess.run(None, f) for sess, f in chain.values()])
                           for _ in range(args.repeat))
            engine_dir = plan.root / ENGINE_DIR
            image = EngineImage.load(engine_dir)
            const, act = image.load_constants(engine_dir), image.fresh_activations()
            for s in fpga:
                for t in s.inputs:
                    if t.name in values and t.name in image.tensors and not any(
                            t.name in {o.name for o in f.outputs} for f in fpga):
                        image.tensors[t.name].write(act, values[t.name])
            act_in = act.copy()
            engine = ReferenceEngine(image.config)
            ref_best = min(_timed(lambda: [engine.run(act, const, image.programs[s.name].addr,
                                                      image.programs[s.name].layers) for s in fpga])
                           for _ in range(args.repeat))
            act[:] = act_in
            for s in fpga:
                engine.run(act, const, image.programs[s.name].addr, image.programs[s.name].layers)
            gmac = sum(image.programs[s.name].macs for s in fpga) / 1e9
            csim_ms, same = "", ""
            if name in args.csim.split(","):
                sim = CsimEngine(engine_dir / "hls")
                act_sim = image.fresh_activations()
                act_sim[:] = act_in
                csim_s = _timed(lambda: [sim.run(act_sim, const, image.programs[s.name].addr,
                                                 image.programs[s.name].layers) for s in fpga])
                csim_ms, same = f"{csim_s * 1e3:.0f}", str(bool(np.array_equal(act_sim, act)))
            print(f"| {name}-{plan.inputs[0].shape[1]} | {len(fpga)} | {gmac:.2f} | {ort_best * 1e3:.1f} | "
                  f"{ref_best * 1e3:.1f} | {ref_best / ort_best:.2f} | {csim_ms} | {same} |")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
