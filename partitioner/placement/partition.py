"""Place every node on a device and cut the graph into convex subgraphs in a valid execution order."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import ModuleType

import networkx as nx

from fpga_runtime.run.policy import CPU_WORKERS
from partitioner.errors import ModelError
from partitioner.ir.graph import Graph
from partitioner.placement.carve import carve, cluster_graph, split_parallel
from partitioner.placement.cost import PARALLEL_MIN_S, PARALLEL_MIN_SHARE, CostModel, RegionEstimate, node_cost
from partitioner.placement.roles import Role, assign_roles
from partitioner.targets import cpu as cpu_target


class Device(enum.Enum):
    CPU = "cpu"
    FPGA = "fpga"


@dataclass
class Subgraph:
    name: str
    device: Device
    role: Role
    nodes: list[str]                     # IR node names, in topological order
    inputs: list[str] = field(default_factory=list)     # IR tensor names
    outputs: list[str] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    parallel_group: int | None = None
    concurrent_with: list[str] = field(default_factory=list)
    estimate: RegionEstimate | None = None


@dataclass
class Decision:
    nodes: list[str]
    accepted: bool
    estimate: RegionEstimate


@dataclass
class Partition:
    graph: Graph
    subgraphs: list[Subgraph]
    fallbacks: dict[str, str]            # node -> why it is not on the FPGA (compute nodes only)
    roles: dict[str, Role]
    decisions: list[Decision]
    fork_branches: list[int] = field(default_factory=list)   # MACs of every branch offered at a fork (the
                                                             # exploration's split candidates come from them)


def _place(graph: Graph, target: ModuleType, roles: dict[str, Role], demoted: dict[str, str]
           ) -> tuple[dict[str, bool], dict[str, str]]:
    on_fpga: dict[str, bool] = {}
    reasons: dict[str, str] = {}
    for name, node in graph.nodes.items():
        if roles[name] is not Role.COMPUTE:
            on_fpga[name] = False
            continue
        if name in demoted:
            on_fpga[name], reasons[name] = False, demoted[name]
            continue
        verdict = target.check(node, graph, on_fpga)
        on_fpga[name] = verdict.ok
        if not verdict.ok:
            reasons[name] = verdict.reason
    return on_fpga, reasons


def _kept_on_cpu(graph: Graph, names: tuple[str, ...]) -> dict[str, str]:
    kept = {}
    for name in names:
        found = [n for n, node in graph.nodes.items() if n == name or name in node.origin]
        if not found:
            raise ModelError(f"--keep-on-cpu {name}: the model has no node of that name (after fusion, a layer is "
                             "named after its first ONNX node; report.md lists them)")
        kept.update((n, "kept in float on the CPU (--keep-on-cpu)") for n in found)
    return kept


def _boundary_elements(graph: Graph, part: set[str], on_fpga: dict[str, bool]) -> int:
    """Elements of the tensors this part exchanges with the CPU (graph inputs and outputs included)."""
    total = 0
    for name in part:
        node = graph.nodes[name]
        for t in node.all_inputs:
            p = graph.producer(t)
            if graph.const(t) is None and (p is None or not on_fpga[p.name]):
                total += graph.tensors[t].numel()
        for t in node.outputs:
            if t in graph.outputs or any(not on_fpga[c.name] for c in graph.consumers(t)):
                total += graph.tensors[t].numel()
    return total


def partition(graph: Graph, target: ModuleType, cost: CostModel, offload_everything: bool = False,
              keep_on_cpu: tuple[str, ...] = (), split_all_branches: bool | None = None,
              branch_share: float | None = None) -> Partition:
    """`offload_everything` skips the cost model's veto (tests use it to exercise every supported node) and, unless
    `split_all_branches` is False, splits every parallel branch off, except for regions without MACs: those never
    become a subgraph of their own. `branch_share` is the exploration's choice of which parallel branches become
    subgraphs of their own: those holding at least that share of the model's offloaded MACs (`math.inf`: none);
    without it, the cost model's rule (PARALLEL_MIN_S, PARALLEL_MIN_SHARE). `keep_on_cpu` names ONNX nodes whose
    layers stay on the CPU whatever the target says. A lane-wise layer whose operands the target's memory layout
    would place differently (the target's `layout_conflicts`) goes to the CPU too, and the partition is carved
    again without it."""
    conflicts: dict[str, str] = {}
    while True:
        part = _partition_once(graph, target, cost, offload_everything, keep_on_cpu, split_all_branches, conflicts,
                               branch_share)
        fpga_nodes = [n for sg in part.subgraphs if sg.device is Device.FPGA for n in sg.nodes]
        found = target.layout_conflicts(graph, fpga_nodes, cost.engine) if fpga_nodes else {}
        if not found:
            return part
        conflicts.update(found)


def _partition_once(graph: Graph, target: ModuleType, cost: CostModel, offload_everything: bool,
                    keep_on_cpu: tuple[str, ...], split_all_branches: bool | None,
                    conflicts: dict[str, str], branch_share: float | None = None) -> Partition:
    split_all = (offload_everything if split_all_branches is None else split_all_branches) and branch_share is None
    dag = graph.dag()
    order = {n: i for i, n in enumerate(graph.nodes)}
    if target is cpu_target:
        everything = cost.cpu_only(list(graph.nodes.values()), graph)
        return _finish(graph, dag, order, [(set(graph.nodes), Device.CPU, Role.COMPUTE, None, everything)], {},
                       {n: Role.COMPUTE for n in graph.nodes}, [])
    roles = assign_roles(graph, dag)
    demoted: dict[str, str] = {**conflicts, **_kept_on_cpu(graph, keep_on_cpu)}
    decisions: list[Decision] = []
    node_macs = {n: node_cost(node, graph).macs for n, node in graph.nodes.items()}
    while True:
        on_fpga, reasons = _place(graph, target, roles, demoted)
        offered: list[int] = []
        fpga_macs = sum(m for n, m in node_macs.items() if on_fpga[n])
        labels = {n: (Device.FPGA, Role.COMPUTE) if on_fpga[n] else (Device.CPU, roles[n]) for n in graph.nodes}
        parts: list[tuple[set[str], Device, Role, int | None, RegionEstimate | None]] = []
        rejected: list[Decision] = []
        for cluster in carve(dag, labels, order):
            device, role = labels[next(iter(cluster))]
            if device is Device.CPU:
                nodes = sorted(cluster, key=order.__getitem__)
                parts.append((cluster, device, role, None, cost.cpu_only([graph.nodes[n] for n in nodes], graph)))
                continue
            floor = 0.0 if split_all or branch_share is not None else max(
                PARALLEL_MIN_S,
                PARALLEL_MIN_SHARE * cost.region([graph.nodes[n] for n in cluster], graph, 0).fpga_layers_s)

            def worth(branch: set[str]) -> bool:
                if branch_share is not None:
                    macs = sum(node_macs[n] for n in branch)
                    offered.append(macs)
                    return macs > 0 and macs >= branch_share * fpga_macs
                return split_all or \
                    cost.region([graph.nodes[n] for n in branch], graph, 0).fpga_layers_s >= floor

            def works(part: set[str]) -> bool:
                return any(node_macs[n] for n in part)

            for part, group in split_parallel(dag, cluster, order, worth=worth, works=works):
                nodes = sorted(part, key=order.__getitem__)
                est = cost.region([graph.nodes[n] for n in nodes], graph, _boundary_elements(graph, part, on_fpga))
                if est.macs > 0 and (offload_everything or est.worth_offloading):
                    parts.append((part, device, role, group, est))
                else:
                    rejected.append(Decision(nodes, False, est))
        decisions.extend(rejected)
        if not rejected:
            break
        for d in rejected:
            demoted.update({n: _rejection(d.estimate) for n in d.nodes})
    decisions.extend(Decision(sorted(p[0], key=order.__getitem__), True, p[4]) for p in parts
                     if p[1] is Device.FPGA)
    part = _finish(graph, dag, order, _pack_cpu_siblings(graph, dag, order, parts, cost), reasons, roles, decisions)
    part.fork_branches = offered
    return part


def _pack_cpu_siblings(graph: Graph, dag: nx.DiGraph, order: dict[str, int], parts: list, cost: CostModel) -> list:
    """CPU subgraphs of one role with the same producers and the same readers (a model's many small output heads)
    packed into CPU_WORKERS subgraphs, balanced by estimated CPU time: as parallel as the workers run them, without
    an onnxruntime session and a scheduled task each. Such siblings never reach one another (a path between two
    would make one a producer of itself), so the subgraph graph stays acyclic."""
    cg = cluster_graph(dag, [p[0] for p in parts])
    classes: dict[tuple, list[int]] = {}
    for i, p in enumerate(parts):
        if p[1] is Device.CPU:
            classes.setdefault((p[2], frozenset(cg.predecessors(i)), frozenset(cg.successors(i))), []).append(i)
    packed: set[int] = set()
    bins: list[tuple[Role, list[int]]] = []
    for (role, _, _), members in classes.items():
        if len(members) <= CPU_WORKERS:
            continue
        packed.update(members)
        load, into = [0.0] * CPU_WORKERS, [[] for _ in range(CPU_WORKERS)]
        for i in sorted(members, key=lambda i: -parts[i][4].cpu_s):
            k = load.index(min(load))
            load[k] += parts[i][4].cpu_s
            into[k].append(i)
        bins += [(role, b) for b in into]
    out = [p for i, p in enumerate(parts) if i not in packed]
    for role, members in bins:
        cluster = set().union(*(parts[i][0] for i in members))
        nodes = sorted(cluster, key=order.__getitem__)
        out.append((cluster, Device.CPU, role, None, cost.cpu_only([graph.nodes[n] for n in nodes], graph)))
    return out


def _rejection(est: RegionEstimate) -> str:
    if est.macs == 0:
        return ("no multiply-accumulate work: a subgraph of data movement alone costs a program start and "
                "CPU<->FPGA transfers for nothing")
    return (f"not worth offloading: FPGA {est.fpga_s * 1e3:.3f} ms (incl. transfers) vs "
            f"CPU {est.cpu_s * 1e3:.3f} ms")


def _tensor_io(graph: Graph, nodes: list[str]) -> tuple[list[str], list[str]]:
    inside = set(nodes)
    produced = {t for n in nodes for t in graph.nodes[n].outputs if t}
    inputs: list[str] = []
    for n in nodes:
        for t in graph.nodes[n].all_inputs:
            if t not in produced and graph.const(t) is None and t not in inputs:
                inputs.append(t)
    outputs = [t for n in nodes for t in graph.nodes[n].outputs if t and
               (t in graph.outputs or any(c.name not in inside for c in graph.consumers(t)))]
    return inputs, outputs


def _finish(graph: Graph, dag: nx.DiGraph, order: dict[str, int], parts: list, reasons: dict[str, str],
            roles: dict[str, Role], decisions: list[Decision]) -> Partition:
    clusters = [p[0] for p in parts]
    cg = cluster_graph(dag, clusters)
    if not nx.is_directed_acyclic_graph(cg):
        raise RuntimeError("internal error: the subgraph graph has a cycle (please report this model)")
    seq = list(nx.lexicographical_topological_sort(cg, key=lambda i: min(order[n] for n in clusters[i])))
    counters: dict[str, int] = {}
    names: dict[int, str] = {}
    group_ids: dict[int, int] = {}
    fpga_in_group: dict[int, int] = {}
    for i in seq:
        if parts[i][3] is not None:
            fpga_in_group[parts[i][3]] = fpga_in_group.get(parts[i][3], 0) + 1
    subgraphs: list[Subgraph] = []
    for i in seq:
        members, device, role, group, est = parts[i]
        stem = "fpga" if device is Device.FPGA else f"cpu_{role.value}"
        k = counters.get(stem, 0)
        counters[stem] = k + 1
        names[i] = f"{stem}_{k}"
        if group is not None and fpga_in_group[group] > 1:
            group = group_ids.setdefault(group, len(group_ids))
        else:
            group = None
        nodes = sorted(members, key=order.__getitem__)
        ins, outs = _tensor_io(graph, nodes)
        subgraphs.append(Subgraph(names[i], device, role, nodes, ins, outs,
                                  [names[p] for p in seq if cg.has_edge(p, i)], group,
                                  estimate=est))
    closure = nx.transitive_closure_dag(cg)
    for i, sg in zip(seq, subgraphs):
        sg.concurrent_with = [names[j] for j in seq if j != i and not closure.has_edge(i, j)
                              and not closure.has_edge(j, i)]
    return Partition(graph, subgraphs, reasons, roles, decisions)
