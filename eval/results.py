"""Aggregate evaluation episodes: success rate with a 95 % Wilson interval and time to stand (get-up),
velocity, tracking error and falls (walk); write ``results.json`` and ``results.md``, print a table.

Units: times in s, velocities in m/s (x, y) and rad/s (yaw), distances in m.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from upright.eval.runner import EvalRun

Z95 = 1.959963984540054  # two-sided 95 % quantile of the standard normal distribution
Record = dict[str, Any]


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a success probability from ``successes`` out of ``trials``."""
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes} of {trials}")
    p = successes / trials
    denominator = 1.0 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


def stats(values: Sequence[float]) -> dict[str, float | None]:
    """``mean``, ``min``, ``max`` of ``values`` (all None when there are none)."""
    if not values:
        return {"mean": None, "min": None, "max": None}
    return {"mean": float(np.mean(values)), "min": float(np.min(values)), "max": float(np.max(values))}


def rate(hits: int, total: int) -> tuple[float, list[float]]:
    """The fraction ``hits / total`` and its 95 % Wilson interval."""
    return hits / total, list(wilson_interval(hits, total))


def getup_summary(records: Sequence[Record]) -> dict[str, Any]:
    """Success rate (+ 95 % interval), time to stand over the successful episodes, the thesis's
    ``stood_up`` rate (upright without the stillness requirement) and its times, falls."""
    successes = sum(bool(r["success"]) for r in records)
    success_rate, ci = rate(successes, len(records))
    stood = [r for r in records if r.get("stood_up")]
    stood_rate, stood_ci = rate(len(stood), len(records))
    return {
        "episodes": len(records),
        "successes": successes,
        "success_rate": success_rate,
        "success_ci95": ci,
        "time_to_stand": stats([r["time_to_stand"] for r in records if r["success"]]),
        "stood_up": len(stood),
        "stood_up_rate": stood_rate,
        "stood_up_ci95": stood_ci,
        "time_upright": stats([r["time_upright"] for r in stood]),
        "falls": sum(int(r["falls"]) for r in records),
        "sim_unstable": sum(bool(r["sim_unstable"]) for r in records),
    }


def walk_summary(records: Sequence[Record]) -> dict[str, Any]:
    """Mean velocity (vx, vy, wz), tracking error, falls (total, fraction of episodes with one,
    95 % interval), distance walked before the first fall."""
    with_fall = sum(int(r["falls"]) > 0 for r in records)
    fall_rate, ci = rate(with_fall, len(records))
    return {
        "episodes": len(records),
        "mean_velocity": np.mean([r["mean_velocity"] for r in records], axis=0).tolist(),
        "tracking_error": stats([r["tracking_error"] for r in records]),
        "falls": {"total": sum(int(r["falls"]) for r in records), "episodes_with_fall": with_fall,
                  "fall_rate": fall_rate, "fall_ci95": ci},
        "distance_before_fall": stats([r["distance_before_fall"] for r in records]),
        "sim_unstable": sum(bool(r["sim_unstable"]) for r in records),
    }


def is_walk(records: Sequence[Record]) -> bool:
    """Whether the records are walk episodes (they carry ``mean_velocity``)."""
    return bool(records) and "mean_velocity" in records[0]


def _by(records: Sequence[Record], key: str, summary: Callable[[Sequence[Record]], dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[Record]] = {}
    for r in records:
        value = r[key]
        groups.setdefault(",".join(f"{v:g}" for v in value) if isinstance(value, list) else str(value), []).append(r)
    return {name: summary(group) for name, group in sorted(groups.items())}


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays and tuples turned into JSON types."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def aggregate(run: EvalRun) -> dict[str, Any]:
    """The content of ``results.json``: the run's settings, the overall summary, the summary per
    start pose (get-up, ``by_start``) or per command (walk, ``by_command``) and every episode's
    record (``episodes_data``). Get-up keys are None for walk runs; no summary without episodes."""
    records = jsonable(run.records)
    result: dict[str, Any] = {
        "env": run.env_id,
        "policy": run.policy,
        "conditions": jsonable(run.conditions),
        "env_kwargs": jsonable(run.env_kwargs),
        "seed": run.seed,
        "episodes": len(records),
        "episodes_requested": run.episodes_requested,
        "interrupted": run.interrupted,
        "success_rate": None,
        "success_ci95": None,
        "time_to_stand": stats([]),
        "by_start": {},
    }
    if is_walk(records):
        result.update(walk_summary(records), by_command=_by(records, "command", walk_summary))
    elif records:
        result.update(getup_summary(records), by_start=_by(records, "start", getup_summary))
    result["episodes_data"] = records
    return result


def _number(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _stats_cell(s: dict[str, float | None]) -> str:
    return " / ".join(_number(s[k]) for k in ("mean", "min", "max"))


def table_rows(result: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the summary table: one row per start pose (get-up) or command (walk),
    then ``all``."""
    if not result["episodes"]:
        return ["episodes"], [["0"]]
    walk = "mean_velocity" in result
    groups = {**result["by_command" if walk else "by_start"], "all": result}
    if walk:
        header = ["command (vx, vy, wz)", "episodes", "mean velocity (vx, vy, wz)", "tracking error mean / min / max",
                  "episodes with a fall", "distance before fall (m) mean / min / max"]
        rows = [[name, str(g["episodes"]), ", ".join(f"{v:.3f}" for v in g["mean_velocity"]),
                 _stats_cell(g["tracking_error"]), f"{g['falls']['episodes_with_fall']}/{g['episodes']}",
                 _stats_cell(g["distance_before_fall"])] for name, g in groups.items()]
    else:
        header = ["start", "episodes", "success rate", "95 % interval", "time to stand (s) mean / min / max",
                  "stood up (no stillness)", "time upright (s) mean / min / max"]
        rows = [[name, str(g["episodes"]), f"{g['successes']}/{g['episodes']} ({100 * g['success_rate']:.0f} %)",
                 "[" + ", ".join(f"{v:.2f}" for v in g["success_ci95"]) + "]",
                 _stats_cell(g["time_to_stand"]), f"{g['stood_up']}/{g['episodes']}",
                 _stats_cell(g["time_upright"])] for name, g in groups.items()]
    return header, rows


def _title(result: dict[str, Any]) -> str:
    conditions = result["conditions"] if isinstance(result["conditions"], str) else "custom"
    note = " (interrupted)" if result["interrupted"] else ""
    return (f"{result['env']} · policy {result['policy']} · conditions {conditions} · seed {result['seed']} · "
            f"{result['episodes']}/{result['episodes_requested']} episodes{note}")


def markdown_table(result: dict[str, Any]) -> str:
    """The summary table of ``result`` as Markdown, under a title line."""
    header, rows = table_rows(result)
    lines = [f"**{_title(result)}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def print_table(result: dict[str, Any]) -> None:
    """Print the summary table of ``result`` with rich."""
    from rich.console import Console
    from rich.table import Table

    header, rows = table_rows(result)
    table = Table(title=_title(result))
    for name in header:
        table.add_column(name)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def write_results(result: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write ``out/results.json`` and ``out/results.md``; returns both paths."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "results.json", out / "results.md"
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    md_path.write_text(markdown_table(result))
    return json_path, md_path


__all__ = ["Z95", "aggregate", "getup_summary", "markdown_table", "print_table", "stats", "table_rows",
           "walk_summary", "wilson_interval", "write_results"]
