"""The machine a measurement ran on, for results pages and benchmarks.

Timing ratios depend on the CPU (the same controller code costs a different share of the environment
step on different machines), and the last bits of the physics do too, so
every ``results.json`` records :func:`machine` and every ``results.md`` and ``upright bench`` table
says :func:`machine_line`.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import mujoco
import numpy as np



def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    """CPU model, logical cores this process may use, architecture, and the Python, MuJoCo and
    NumPy versions."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu_model(), "cores": cores, "architecture": platform.machine(),
            "python": platform.python_version(), "mujoco": mujoco.__version__, "numpy": np.__version__}


def machine_line(info: dict[str, Any] | None = None) -> str:
    """One sentence describing ``info`` (default: this machine's :func:`machine`)."""
    m = machine() if info is None else info
    return (f"Machine: {m['cpu']}, {m['cores']} cores ({m['architecture']}); Python {m['python']}, "
            f"MuJoCo {m['mujoco']}, NumPy {m['numpy']}.")


__all__ = ["cpu_model", "machine", "machine_line"]
