"""Targets: what each device can run, declared as data plus small predicates (one module per target)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""


YES = Verdict(True)


def no(reason: str) -> Verdict:
    return Verdict(False, reason)
