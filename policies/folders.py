"""Folders written by one process at a time, and replaced whole.

- :func:`locked`: one writer per run folder (``upright train``, ``train --resume``) and per zoo
  entry being shipped. The lock is ``fcntl.flock`` on a lock file that records the holder's process
  id; the kernel releases it when the holder ends however it ends, so the lock of a dead process
  (its file still naming it) is simply taken over. A second writer gets :class:`FolderLocked`
  naming the holder's process id.
- :func:`replace_folder` and :func:`recover_folder`: a folder assembled beside its target (a zoo
  entry, an export) is renamed into place; an existing target is first moved aside, so a crash
  between the two renames leaves the old copy as ``.NAME.PID.old``, which the next writer puts back
  (and the leftovers of killed writers, ``.NAME.PID.tmp`` and ``.NAME.PID.old``, are removed).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


#: The lock file of a run folder (a zoo entry's is ``.NAME.lock`` beside it, as the entry is replaced whole).
LOCK_FILE = ".lock"


class FolderLocked(OSError):
    """Another live process holds the lock of a folder (the message names it and its process id)."""


def _holder(descriptor: int) -> str:
    """The process id written in an open lock file ("unknown" when there is none)."""
    os.lseek(descriptor, 0, os.SEEK_SET)
    text = os.read(descriptor, 64).decode(errors="replace").strip()
    return text if text.isdigit() else "unknown"


@contextmanager
def locked(lock_file: str | Path, what: str) -> Iterator[None]:
    """Hold the exclusive lock of ``lock_file`` (made when missing; left behind, naming the last
    holder) while the block runs. :class:`FolderLocked` when a live process holds it: ``what``
    (e.g. ``run runs/X``) is being written by process PID. The lock file's descriptor is not
    inherited by child processes, so workers never keep the lock of a parent that died."""
    lock_file = Path(lock_file)
    descriptor = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderLocked(f"{what} is being written by process {_holder(descriptor)} (another upright "
                               "command); wait for it to end, or stop it") from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def process_running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` other than this one is running."""
    return pid != os.getpid() and process_running(pid)


def recover_folder(target: str | Path) -> None:
    """Clean up after writers of ``target`` that were killed: when ``target`` is missing and a copy
    moved aside (``.NAME.PID.old``) of a dead process is there, it is put back (the newest one);
    every other ``.NAME.PID.tmp`` and ``.NAME.PID.old`` of a dead process (or of this one) is
    removed. Leftovers of live processes are theirs and stay."""
    target = Path(target)
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)\.(tmp|old)")
    if not target.parent.is_dir():
        return
    stale: dict[Path, str] = {}  # leftover -> "tmp" or "old"
    for path in target.parent.iterdir():
        match = pattern.fullmatch(path.name)
        if match and not _alive(int(match.group(1))):
            stale[path] = match.group(2)
    olds = sorted((path for path, kind in stale.items() if kind == "old"), key=lambda p: p.stat().st_mtime)
    if not target.exists() and olds:
        os.replace(olds.pop(), target)
    for path in stale:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()


def replace_folder(building: str | Path, target: str | Path) -> None:
    """Put the complete folder ``building`` (beside ``target``) in the place of ``target``: one rename
    when there is no ``target``; otherwise ``target`` is moved aside to ``.NAME.PID.old`` first and
    removed after (a crash in between leaves it for :func:`recover_folder` to put back)."""
    building, target = Path(building), Path(target)
    if not target.exists():
        os.replace(building, target)
        return
    old = target.with_name(f".{target.name}.{os.getpid()}.old")
    os.replace(target, old)
    os.replace(building, target)
    shutil.rmtree(old, ignore_errors=True)


def temporary_folder(target: str | Path) -> Path:
    """The name of the folder this process assembles ``target`` in: ``.NAME.PID.tmp`` beside it."""
    target = Path(target)
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


__all__ = ["FolderLocked", "LOCK_FILE", "locked", "process_running", "recover_folder", "replace_folder", "temporary_folder"]
