"""Scheduler: dispatch order and makespan in virtual time on hand-built plans; the concurrent scheduler gives
bit-identical results to a sequential run whatever the interleaving; failing and hanging tasks; the DDR the
compute units share."""
from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fpga_runtime.abi import EngineConfig
from fpga_runtime.checking.frames import random_frame
from fpga_runtime.plan import Plan, SubgraphSpec
from fpga_runtime.prediction.virtual_time import simulate
from fpga_runtime.run.policy import Policy, Task
from fpga_runtime.run.scheduler import Scheduler, TaskError
from fpga_runtime.run.session import Session
from partitioner.build import PartitionConfig, run_partition


def _plan(spec: list[tuple[str, str, list[str]]]) -> Plan:
    subgraphs = [SubgraphSpec(name, device, "compute", [], [], [], deps, None, f"{name}.onnx", None)
                 for name, device, deps in spec]
    return Plan(1, "fpga", "zcu104", {}, [], [], subgraphs)


DIAMOND = _plan([("pre", "cpu", []), ("b", "fpga", ["pre"]), ("c", "fpga", ["pre"]), ("post", "cpu", ["b", "c"])])
DIAMOND_T = {"pre": 1.0, "b": 2.0, "c": 3.0, "post": 1.0}


def test_priority_is_the_longest_remaining_path():
    policy = Policy(DIAMOND, DIAMOND_T, in_flight=1)
    policy.admit(0)
    assert policy.pop("cpu") == Task(0, "pre") and policy.pop("fpga") is None
    policy.complete(Task(0, "pre"))
    assert [policy.pop("fpga"), policy.pop("fpga")] == [Task(0, "c"), Task(0, "b")]


@pytest.mark.parametrize("units,makespan", [(1, 7.0), (2, 5.0), (3, 5.0)])
def test_makespan_of_a_diamond(units, makespan):
    end, spans = simulate(DIAMOND, DIAMOND_T, units, 1, frames=1, in_flight=1)
    assert end == pytest.approx(makespan)
    order = [s.name for s in sorted(spans, key=lambda s: (s.start_s, s.lane))]
    assert order[0] == "pre" and order[-1] == "post"
    if units == 1:
        assert order[1:3] == ["c", "b"]


def test_frames_pipeline_up_to_the_in_flight_bound():
    one, _ = simulate(DIAMOND, DIAMOND_T, 2, 1, frames=4, in_flight=1)
    two, spans = simulate(DIAMOND, DIAMOND_T, 2, 1, frames=4, in_flight=2)
    assert one == pytest.approx(4 * 5.0)
    assert two < one
    live = max(len({s.frame for s in spans if s.start_s <= t < s.end_s}) for t in np.arange(0, two, 0.25))
    assert live <= 2


@pytest.fixture(scope="module")
def tiny_build(tmp_path_factory, zoo):
    out = tmp_path_factory.mktemp("sched") / "b"
    run_partition(PartitionConfig(model=zoo("ssd-mobilenet-v1", 96), out_dir=out, picture=False, accuracy=False,
                                  offload_everything=True, engine=EngineConfig(vec=8, pe_rows=8, compute_units=3)))
    return out


def test_concurrent_runs_equal_the_sequential_run_bit_for_bit(tiny_build):
    with Session(tiny_build, compute_units=3, slots=3) as session:
        frames = [random_frame(session.plan, 50 + i) for i in range(5)]
        sequential = [dict(zip(session.output_names, session.run(None, f))) for f in frames]
        original = session.run_subgraph
        for seed in range(12):
            rnd = random.Random(seed)
            lock = threading.Lock()

            def jittery(sg, values, unit=0, slot=0):
                with lock:
                    pause = rnd.random() * 0.004
                time.sleep(pause)
                return original(sg, values, unit, slot)

            session.run_subgraph = jittery
            sched = Scheduler(session, cpu_workers=rnd.choice([1, 2, 3]), compute_units=rnd.choice([1, 2, 3]),
                              in_flight=rnd.choice([1, 2, 3]))
            got = sched.run(frames)
            for a, b in zip(sequential, got):
                assert all(np.array_equal(a[k], b[k]) for k in a), f"seed {seed}"
            fpga_lanes = {s.lane for s in sched.stats.spans if s.lane.startswith("fpga")}
            assert len(fpga_lanes) <= sched.units
        session.run_subgraph = original


def test_a_failing_task_cancels_its_frame_and_names_the_task(tiny_build):
    with Session(tiny_build, compute_units=2, slots=2) as session:
        frames = [random_frame(session.plan, i) for i in range(3)]
        original = session.run_subgraph
        victim = session.plan.subgraphs[-1].name

        calls = []

        def broken(sg, values, unit=0, slot=0):
            if sg.name == victim:
                calls.append(sg.name)
                if len(calls) == 2:           # one frame in flight: the second call is frame 1's
                    raise RuntimeError("engine fell over")
            return original(sg, values, unit, slot)

        session.run_subgraph = broken
        stream = Scheduler(session, compute_units=2, in_flight=1).stream(frames)
        assert set(next(stream)) == set(session.output_names)
        with pytest.raises(TaskError, match=rf"frame 1, subgraph '{victim}': RuntimeError: engine fell over"):
            next(stream)


def test_a_hanging_task_is_reported_not_waited_for(tiny_build):
    with Session(tiny_build, compute_units=1) as session:
        original = session.run_subgraph
        release = threading.Event()

        def hang(sg, values, unit=0, slot=0):
            if sg.device == "fpga":
                release.wait(5)
            return original(sg, values, unit, slot)

        session.run_subgraph = hang
        t0 = time.perf_counter()
        with pytest.raises(TaskError, match="did not finish within 0.3 s"):
            Scheduler(session, compute_units=1, in_flight=1, task_timeout_s=0.3).run([random_frame(session.plan, 0)])
        assert time.perf_counter() - t0 < 3
        release.set()


def test_chrome_trace_has_one_named_thread_per_lane_and_every_span(tmp_path):
    import json

    from fpga_runtime.run.trace import Span, write_chrome_trace
    spans = [Span("cpu_pre_0", 0, "cpu-0", 0.0, 0.001), Span("fpga_0", 0, "fpga-cu0", 0.001, 0.004),
             Span("cpu_pre_0", 1, "cpu-1", 0.0005, 0.0015), Span("fpga_0", 1, "fpga-cu0", 0.004, 0.007)]
    events = json.loads(write_chrome_trace(spans, tmp_path / "t.json").read_text())["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert sorted(threads.values()) == ["cpu-0", "cpu-1", "fpga-cu0"]
    work = [e for e in events if e["ph"] == "X"]
    assert len(work) == 4 and all(e["dur"] > 0 for e in work)
    assert [threads[e["tid"]] for e in work if e["name"] == "fpga_0"] == ["fpga-cu0", "fpga-cu0"]
    assert work[1]["ts"] == pytest.approx(1000.0) and work[1]["dur"] == pytest.approx(3000.0)


def test_a_refused_frame_comes_after_every_frame_before_it(tiny_build):
    """Frame 4 has a wrong shape: frames 0-3, in flight beside it, are delivered first, then the refusal."""
    from fpga_runtime.plan import PlanError
    with Session(tiny_build, compute_units=2, slots=3) as session:
        frames = [random_frame(session.plan, i) for i in range(4)]
        name = session.input_names[0]
        bad = {name: frames[0][name][..., :-1]}
        got = []
        with pytest.raises(PlanError, match=rf"input '{name}': shape"):
            for out in Scheduler(session, compute_units=2, in_flight=3).stream(frames + [bad] + frames):
                got.append(out)
        assert len(got) == 4


def test_a_long_stream_keeps_a_bounded_record(tiny_build, monkeypatch):
    import fpga_runtime.run.session as session_module
    with Session(tiny_build, compute_units=1, slots=2) as session:
        monkeypatch.setattr(session_module, "STATS_WINDOW", 8)
        session.stats = session_module.deque(maxlen=8)
        frame = random_frame(session.plan, 0)
        sched = Scheduler(session, compute_units=1, in_flight=2, keep_spans=16)
        outs = list(sched.stream(frame for _ in range(30)))
        assert len(outs) == 30 and sched.stats.frames == 30
        assert len(sched.stats.spans) == 16 and sched.stats.tasks == 30 * len(session.plan.subgraphs)
        assert {s.frame for s in sched.stats.spans} <= set(range(20, 30))          # the most recent
        assert len(session.stats) == 8
        assert Scheduler(session).stats.window == 20_000                            # streams are bounded by default



def test_the_lower_bound_counts_the_work_a_serial_prefix_leaves():
    """A 10 s backbone, then three 6 s branches and a 1 s join on two units: no schedule ends before
    10 + (18 + 1) / 2 = 19.5 s (the plain bounds say 17: the critical path; 14.5: all work over two units), and
    the policy's 23 s is optimal here (two branches, then the third, then the join)."""
    from fpga_runtime.prediction.virtual_time import _resource_bound
    from fpga_runtime.run.policy import upward_ranks
    plan = _plan([("a", "fpga", []), ("b", "fpga", ["a"]), ("c", "fpga", ["a"]), ("e", "fpga", ["a"]),
                  ("d", "fpga", ["b", "c", "e"])])
    t = {"a": 10.0, "b": 6.0, "c": 6.0, "e": 6.0, "d": 1.0}
    makespan, _ = simulate(plan, t, 2, 1, frames=1, in_flight=1)
    bound = max(max(upward_ranks(plan, t).values()), _resource_bound(plan, t, "fpga", 2, 1))
    assert bound == pytest.approx(19.5) and makespan == pytest.approx(23.0)


# seconds and bytes of real layers: no subnormal floats, whose one or two significant bits no model keeps
LAYERS = st.lists(st.tuples(st.floats(0.0, 5.0, allow_subnormal=False), st.floats(0.0, 50.0, allow_subnormal=False)),
                  min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(LAYERS, st.integers(1, 6), st.floats(0.5, 40.0), st.floats(0.0, 3.0, allow_subnormal=False))
def test_a_unit_s_share_of_the_ddr_lies_between_an_equal_share_and_the_whole(layers, units, ddr, fixed):
    """The shared-DDR model: a unit never gets less than an equal share nor more than the whole DDR; all units
    together never move more than the DDR's bandwidth; one unit gets all of it."""
    from fpga_runtime.prediction.shared_ddr import layer_s, unit_bandwidth, unit_layer_s
    compute, nbytes = [c for c, _ in layers], [b for _, b in layers]
    share = unit_bandwidth(compute, nbytes, units, ddr, fixed)
    assert ddr / units * (1 - 1e-9) <= share <= ddr * (1 + 1e-9)
    frame = fixed + sum(unit_layer_s(compute, nbytes, units, ddr, fixed))
    if sum(nbytes) > 0 and frame > 0:
        assert units * sum(nbytes) / frame <= ddr * (1 + 1e-6)
    if units == 1:
        assert share == ddr
    alone = fixed + sum(layer_s(c, b / ddr) for c, b in layers)
    assert frame >= alone * (1 - 1e-9)


def test_a_layer_s_time_joins_compute_and_memory_with_a_penalty_where_they_meet():
    from fpga_runtime.prediction.shared_ddr import OVERLAP, layer_s
    assert layer_s(3.0, 0.0) == 3.0 and layer_s(0.0, 3.0) == 3.0
    assert layer_s(2.0, 2.0) == pytest.approx(2.0 * 2 ** (1 / OVERLAP))      # 12 % where they are equal
    assert layer_s(10.0, 2.0) < 10.0 * 1.001                                    # far apart: the larger
    assert np.allclose(layer_s(np.array([1.0, 4.0]), np.array([4.0, 1.0])), layer_s(4.0, 1.0))


def test_more_units_get_more_frames_from_the_ddr_but_each_unit_a_smaller_share():
    from fpga_runtime.prediction.shared_ddr import unit_bandwidth, unit_layer_s
    compute, nbytes = [4.0, 1.0, 1.0, 3.0], [2.0, 30.0, 8.0, 1.0]     # a compute-bound and a memory-bound mix
    shares = [unit_bandwidth(compute, nbytes, k, 10.0) for k in (1, 2, 3, 4)]
    rates = [k / sum(unit_layer_s(compute, nbytes, k, 10.0)) for k in (1, 2, 3, 4)]
    assert shares == sorted(shares, reverse=True) and shares[1] > 10.0 / 2
    assert rates == sorted(rates) and rates[-1] <= 10.0 / sum(nbytes) * (1 + 1e-9)
