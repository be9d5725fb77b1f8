"""yosys's flattened JSON netlist as the timing estimate (timing.py) walks it: the top module's cells, which cell
drives each bit, each bit's loads and its best RTL name, and the RTL instance path of a cell yosys named."""
from __future__ import annotations

from collections import defaultdict


def cell_param(cell: dict, name: str, default: int = 0) -> int:
    """An integer parameter of a yosys JSON cell (a string of bits, or a number)."""
    value = cell.get("parameters", {}).get(name)
    if value is None:
        return default
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text and set(text) <= set("01xz"):
        return int(text.replace("x", "0").replace("z", "0"), 2)
    try:
        return int(text, 0)
    except ValueError:
        return default


class Netlist:
    """The top module's cells, which cell drives each bit, and each bit's loads and best RTL name."""

    def __init__(self, netlist: dict, top: str):
        module = netlist["modules"][top]
        self.cells: dict[str, dict] = module["cells"]
        self.driver: dict[int, tuple[str, str]] = {}
        loads: dict[int, set[str]] = defaultdict(set)
        self.inputs: dict[str, list[tuple[str, int]]] = {}
        self.outputs: dict[str, list[tuple[str, int]]] = {}
        for name, cell in self.cells.items():
            dirs = cell.get("port_directions", {})
            ins, outs = [], []
            for pin, bits in cell["connections"].items():
                for b in bits:
                    if not isinstance(b, int):
                        continue
                    if dirs.get(pin) == "output":
                        self.driver[b] = (name, pin)
                        outs.append((pin, b))
                    else:
                        loads[b].add(name)
                        ins.append((pin, b))
            self.inputs[name], self.outputs[name] = ins, outs
        self.port_in: set[int] = set()
        self.port_out: dict[int, str] = {}
        self.port_bits: dict[str, list[int]] = {}
        for pname, port in module["ports"].items():
            self.port_bits[pname] = [b for b in port["bits"] if isinstance(b, int)]
            for i, b in enumerate(port["bits"]):
                if isinstance(b, int):
                    if port["direction"] == "input":
                        self.port_in.add(b)
                    else:
                        self.port_out[b] = f"{pname}[{i}]" if len(port["bits"]) > 1 else pname
                        loads[b].add(f"port {pname}")
        self.loads = {b: len(cells) for b, cells in loads.items()}      # distinct loads, not pins
        self.buffered: dict[int, str] = {}
        for name, cell in self.cells.items():
            if cell["type"] in ("OBUF", "BUF") and self.inputs[name] and self.outputs[name]:
                out = self.outputs[name][0][1]
                if out in self.port_out:
                    self.buffered[self.inputs[name][0][1]] = self.port_out[out]
        self.names: dict[int, str] = {}
        rank: dict[int, tuple] = {}
        for nname, net in module.get("netnames", {}).items():
            hidden = net.get("hide_name", 0) or nname.startswith("$")
            for i, b in enumerate(net["bits"]):
                if not isinstance(b, int):
                    continue
                label = f"{nname}[{i}]" if len(net["bits"]) > 1 else nname
                key = (hidden, nname.count("."), len(nname))
                if b not in rank or key < rank[b]:
                    rank[b], self.names[b] = key, label

    def name(self, bit: int) -> str:
        """The bit's RTL name; a register that only feeds an output buffer is named after the port."""
        label = self.names.get(bit, f"net{bit}")
        if label.startswith("$") and bit in self.buffered:
            return self.buffered[bit]
        return label


def instance_path(cell_name: str) -> str:
    """`core.areader` from yosys's `$flatten\\core.\\areader.$techmap123$...`: the RTL instances, not the counters."""
    parts = []
    for token in cell_name.replace("$flatten", "").split("."):
        token = token.lstrip("\\")
        if not token or token.startswith("$"):
            break
        parts.append(token)
    return ".".join(parts) or "engine_top"
