"""Aggregate evaluation episodes: success rate with a 95 % Wilson interval and time to stand (get-up),
velocity, linear and yaw tracking errors and falls (walk); write ``results.json`` and ``results.md``, print a table.

Units: times in s, velocities in m/s (x, y) and rad/s (yaw), distances in m.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from upright.envs.conditions import Conditions, get_conditions
from upright.eval.machine import machine, machine_line
from upright.eval.runner import EvalRun
from upright.eval.tables import Column, Table, jsonable, mean_min_max, print_tables, rate, vector, wilson_interval
from upright.policies.run_folder import CURVE_COLUMNS, write_text_atomically

Record = dict[str, Any]


def stats(values: Sequence[float]) -> dict[str, float | None]:
    """``mean``, ``min``, ``max`` of ``values`` (all None when there are none)."""
    if not values:
        return {"mean": None, "min": None, "max": None}
    return {"mean": float(np.mean(values)), "min": float(np.min(values)), "max": float(np.max(values))}


def fraction(hits: int, total: int) -> tuple[float, list[float]]:
    """The fraction ``hits / total`` and its 95 % Wilson interval."""
    return hits / total, list(wilson_interval(hits, total))


def getup_summary(records: Sequence[Record]) -> dict[str, Any]:
    """Success rate (+ 95 % interval), time to stand over the successful episodes, the thesis's
    ``stood_up`` rate (upright without the stillness requirement) and its times, falls, and the
    per-try success: ``try_success_rate`` = tries succeeded / tries finished over all episodes
    (None without a finished try; its Wilson interval treats the tries as independent, which
    tries of one episode are not), with the tries still open at the episodes' ends beside it."""
    successes = sum(bool(r["success"]) for r in records)
    success_rate, ci = fraction(successes, len(records))
    stood = [r for r in records if r.get("stood_up")]
    stood_rate, stood_ci = fraction(len(stood), len(records))
    tries = sum(int(r["tries"]) for r in records)
    tries_succeeded = sum(int(r["tries_succeeded"]) for r in records)
    try_rate, try_ci = fraction(tries_succeeded, tries) if tries else (None, None)
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
        "tries": tries,
        "tries_succeeded": tries_succeeded,
        "try_success_rate": try_rate,
        "try_success_ci95": try_ci,
        "tries_unfinished": sum(int(r["tries_unfinished"]) for r in records),
        "sim_unstable": sum(bool(r["sim_unstable"]) for r in records),
    }


def walk_summary(records: Sequence[Record]) -> dict[str, Any]:
    """Mean velocity (vx, vy, wz), linear (m/s) and yaw (rad/s) tracking errors, falls (total,
    fraction of episodes with one, 95 % interval), distance walked before the first fall."""
    with_fall = sum(int(r["falls"]) > 0 for r in records)
    fall_rate, ci = fraction(with_fall, len(records))
    return {
        "episodes": len(records),
        "mean_velocity": np.mean([r["mean_velocity"] for r in records], axis=0).tolist(),
        "linear_tracking_error": stats([r["linear_tracking_error"] for r in records]),
        "yaw_tracking_error": stats([r["yaw_tracking_error"] for r in records]),
        "falls": {"total": sum(int(r["falls"]) for r in records), "episodes_with_fall": with_fall,
                  "fall_rate": fall_rate, "fall_ci95": ci},
        "distance_before_fall": stats([r["distance_before_fall"] for r in records]),
        "sim_unstable": sum(bool(r["sim_unstable"]) for r in records),
    }


def _by(records: Sequence[Record], key: str, summary: Callable[[Sequence[Record]], dict[str, Any]]) -> dict[str, Any]:
    groups: dict[str, list[Record]] = {}
    for r in records:
        value = r[key]
        groups.setdefault(",".join(f"{v:g}" for v in value) if isinstance(value, list) else str(value), []).append(r)
    return {name: summary(group) for name, group in sorted(groups.items())}


def aggregate(run: EvalRun) -> dict[str, Any]:
    """The content of ``results.json``: the run's settings (``conditions``: a preset's name or the
    fields of a custom ``Conditions`` with its class, read back by :func:`result_conditions`; the
    same in ``env_kwargs``), its ``task`` (from the records), the episodes that ``failed`` (episode,
    seed, error), the overall summary, the summary per
    start pose (get-up, ``by_start``) or per command (walk, ``by_command``) and every episode's
    record (``episodes_data``). Get-up keys are None for walk runs; no summary (and ``task`` None)
    without episodes."""
    records = jsonable(run.records)
    task = records[0]["task"] if records else None
    result: dict[str, Any] = {
        "env": run.env_id,
        "task": task,
        "policy": run.policy,
        "conditions": jsonable(run.conditions),
        "env_kwargs": jsonable(run.env_kwargs),
        "seed": run.seed,
        "episodes": len(records),
        "episodes_requested": run.episodes_requested,
        "interrupted": run.interrupted,
        "failed": jsonable(run.failed),
        "success_rate": None,
        "success_ci95": None,
        "time_to_stand": stats([]),
        "by_start": {},
    }
    if task == "walk":
        result.update(walk_summary(records), by_command=_by(records, "command", walk_summary))
    elif records:
        result.update(getup_summary(records), by_start=_by(records, "start", getup_summary))
    result["episodes_data"] = records
    return result


def result_conditions(result: dict[str, Any]) -> Conditions:
    """The conditions a ``results.json`` (its ``result``, e.g. ``json.load``-ed) was simulated
    under, as an object equal to the one the run used: a preset by name, a custom
    :class:`~upright.envs.conditions.Conditions` (or subclass) from its fields."""
    conditions = result["conditions"]
    if isinstance(conditions, str):
        return get_conditions(conditions)
    return Conditions.from_dict(conditions)


def summary_table(result: dict[str, Any]) -> Table:
    """The summary table of ``result``: one row per start pose (get-up) or command (walk), then
    ``all``."""
    if not result["episodes"]:
        return Table(_title(result), [Column("episodes", "episodes")], [{"episodes": 0}])
    walk = result["task"] == "walk"
    groups = {**result["by_command" if walk else "by_start"], "all": result}
    if walk:
        columns = [Column("command (vx, vy, wz)", "group"), Column("episodes", "episodes"),
                   Column("mean velocity (vx, vy, wz)", "mean_velocity", vector(3)),
                   Column("linear tracking error (m/s) mean / min / max", "linear_tracking_error", mean_min_max(3)),
                   Column("yaw tracking error (rad/s) mean / min / max", "yaw_tracking_error", mean_min_max(3)),
                   Column("episodes with a fall", "fell", rate),
                   Column("distance before fall (m) mean / min / max", "distance_before_fall", mean_min_max())]
        rows = [{"group": name, "fell": (g["falls"]["episodes_with_fall"], g["episodes"]), **g}
                for name, g in groups.items()]
    else:
        columns = [Column("start", "group"), Column("episodes", "episodes"), Column("success", "success", rate),
                   Column("time to stand (s) mean / min / max", "time_to_stand", mean_min_max()),
                   Column("stood up (no stillness)", "stood", rate),
                   Column("time upright (s) mean / min / max", "time_upright", mean_min_max()),
                   Column("tries succeeded", "try", rate), Column("tries unfinished", "tries_unfinished")]
        rows = [{"group": name, "success": (g["successes"], g["episodes"]), "stood": (g["stood_up"], g["episodes"]),
                 "try": (g["tries_succeeded"], g["tries"]), **g} for name, g in groups.items()]
    return Table(_title(result), columns, rows)


def _title(result: dict[str, Any]) -> str:
    conditions = result["conditions"] if isinstance(result["conditions"], str) else "custom"
    note = " (interrupted)" if result["interrupted"] else ""
    if result.get("failed"):
        note += f" ({len(result['failed'])} failed)"
    return (f"{result['env']} · policy {result['policy']} · conditions {conditions} · seed {result['seed']} · "
            f"{result['episodes']}/{result['episodes_requested']} episodes{note}")


def markdown_table(result: dict[str, Any]) -> str:
    """The summary table of ``result`` as Markdown."""
    return summary_table(result).markdown()


def print_table(result: dict[str, Any]) -> None:
    """Print the summary table of ``result`` with rich."""
    print_tables([summary_table(result)])


def write_results(result: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write ``out/results.json`` (with the machine it ran on) and ``out/results.md``, each atomically
    (a crash or a full disk leaves the earlier file or none, never a truncated one); returns both
    paths."""
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "results.json", out / "results.md"
    host = machine()
    write_text_atomically(json_path, json.dumps({**result, "machine": host}, indent=2) + "\n")
    failed = "".join(f"\nEpisode {f['episode']} (seed {f['seed']}) failed: {f['error']}\n"
                     for f in result.get("failed", []))
    write_text_atomically(md_path, markdown_table(result) + "\n" + failed + machine_line(host) + "\n")
    return json_path, md_path


def summary_numbers(result: dict[str, Any]) -> dict[str, float | None]:
    """The learning-curve numbers of an aggregated evaluation (``upright.eval.results.aggregate``)."""
    records = result["episodes_data"]
    numbers: dict[str, float | None] = {c: None for c in CURVE_COLUMNS[2:]}
    numbers["mean_return"] = float(np.mean([r["return"] for r in records]))
    if result["task"] == "walk":
        vx, vy, wz = result["mean_velocity"]
        numbers.update(vx=vx, vy=vy, wz=wz, linear_tracking_error=result["linear_tracking_error"]["mean"],
                       yaw_tracking_error=result["yaw_tracking_error"]["mean"], fall_rate=result["falls"]["fall_rate"],
                       falls=result["falls"]["total"])
    else:
        low, high = result["success_ci95"]
        numbers.update(success_rate=result["success_rate"], success_ci_low=low, success_ci_high=high,
                       stood_up_rate=result["stood_up_rate"], time_to_stand=result["time_to_stand"]["mean"],
                       falls=result["falls"])
    return numbers


def score(numbers: dict[str, float | None]) -> tuple[float, ...]:
    """Higher is better: get-up success rate, then the stood-up rate (Wolfgang under ``thesis``
    never succeeds strictly: the force keeps its IMU moving), then return; walk no falls, then
    small tracking error."""
    if numbers["success_rate"] is not None:
        return (numbers["success_rate"], numbers["stood_up_rate"] or 0.0, numbers["mean_return"])
    return (-(numbers["fall_rate"] or 0.0), -(numbers["linear_tracking_error"] or 0.0))


__all__ = ["aggregate", "fraction", "getup_summary", "markdown_table", "print_table", "result_conditions", "score",
           "stats", "summary_numbers", "summary_table", "walk_summary", "write_results"]
