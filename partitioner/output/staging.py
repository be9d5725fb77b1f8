"""A build is written into a staging folder beside its target and moved into place only when complete, so a
failed or interrupted `partition` leaves the previous build as it was and never a mix of two builds."""
from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from fpga_runtime.plan import PLAN_FILE
from partitioner.errors import ModelError


class StagedFolder:
    """`with StagedFolder(target) as tmp:` write into `tmp`; `commit()` replaces `target` by it. Leaving the
    block without a commit (error, Ctrl-C) removes the staging folder and any parent folder it had to create."""

    def __init__(self, target: Path):
        self.target = Path(os.path.abspath(target))
        if self.target.exists() and not _replaceable(self.target):
            raise ModelError(f"{target} exists and is not a build folder (no {PLAN_FILE}); it would be replaced "
                             "by the build: choose another -o")
        self.token = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"        # the pid: a later run knows a dead one's
        self.path = self.target.parent / f".{self.target.name}.partial-{self.token}"
        self._created: list[Path] = []
        self._committed = False

    def __enter__(self) -> Path:
        missing = []
        parent = self.target.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for folder in reversed(missing):
            folder.mkdir()
            self._created.append(folder)
        remove_stale(self.target)
        self.path.mkdir()
        return self.path

    def commit(self) -> None:
        old = self.target.parent / f".{self.target.name}.old-{self.token}"
        if self.target.exists():
            self.target.rename(old)
        self.path.rename(self.target)
        self._committed = True
        shutil.rmtree(old, ignore_errors=True)

    def __exit__(self, *exc) -> None:
        if self._committed:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        for folder in reversed(self._created):
            try:
                folder.rmdir()
            except OSError:
                break


def _replaceable(folder: Path) -> bool:
    return folder.is_dir() and ((folder / PLAN_FILE).exists() or not any(folder.iterdir()))


def remove_stale(target: Path) -> list[Path]:
    """Staging and old folders of `target` whose `partition` process is gone (killed, or the machine stopped):
    removed, so a killed run does not leave a build-sized folder behind for ever."""
    removed = []
    for kind in ("partial", "old"):
        for folder in target.parent.glob(f".{target.name}.{kind}-*"):
            pid = folder.name.rsplit(f".{kind}-", 1)[1].split("-", 1)[0]
            if pid.isdigit() and not _alive(int(pid)) and folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
