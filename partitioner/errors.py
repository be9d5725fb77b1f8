"""One error type for bad input: the CLI prints it as one line and exits 2."""
from __future__ import annotations


class ModelError(Exception):
    """A problem with the user's model, phrased so the user can act on it.

    `node` and `op` name where the problem is (original ONNX names); `reason` says what is wrong.
    """

    def __init__(self, reason: str, node: str | None = None, op: str | None = None):
        self.reason = reason
        self.node = node
        self.op = op
        super().__init__(self.message())

    def message(self) -> str:
        where = []
        if node := self.node:
            where.append(f"node {node!r}")
        if self.op:
            where.append(f"op {self.op}")
        prefix = f"{' '.join(where)}: " if where else ""
        return f"{prefix}{self.reason}"
