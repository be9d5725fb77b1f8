"""A deploy bundle's manifest: every file of the bundle (the runtime it carries included) with its SHA-256,
written by `fpga-run deploy` and checked when a Session opens the bundle, so a bundle that was corrupted or
changed on its way to the board is refused before an engine touches memory."""
from __future__ import annotations

import json
from pathlib import Path

from fpga_runtime.plan import Plan, PlanError, digest_mismatches, file_sha256, read_plan, verify_files

MANIFEST = "manifest.json"


def write_manifest(bundle: Path, header: dict) -> dict:
    files = sorted(p for p in bundle.rglob("*") if p.is_file() and p.name != MANIFEST)
    links = [p for p in bundle.rglob("*") if p.is_symlink()]
    if links:
        raise PlanError(f"{bundle}: symbolic links in a bundle ({', '.join(str(p) for p in links[:3])})")
    manifest = {**header, "files": {p.relative_to(bundle).as_posix(): file_sha256(p) for p in files}}
    (bundle / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def verify_manifest(folder: Path) -> None:
    """Where `folder` has a manifest (a bundle), every file it lists is inside the folder with its SHA-256."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return
    try:
        files = json.loads(path.read_text())["files"]
        assert isinstance(files, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError, UnicodeDecodeError):
        raise PlanError(f"{path}: not a bundle manifest (deploy the build again)") from None
    bad = [rel for rel, _ in digest_mismatches(Path(folder), files, "a file of the manifest")]
    if bad:
        raise PlanError(f"{folder}: {len(bad)} file(s) of the bundle are missing or differ from what `fpga-run "
                        f"deploy` wrote ({', '.join(bad[:5])}{', ...' if len(bad) > 5 else ''}); copy the bundle "
                        "again")


def checked_plan(folder: str | Path) -> Plan:
    """The plan of a build or bundle, once its recorded data files and (for a bundle) its manifest check out: what
    a Session opens, and what a serving board cuts its part from."""
    plan = read_plan(folder)
    verify_files(plan)
    verify_manifest(Path(folder))
    return plan
