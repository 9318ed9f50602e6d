"""The report's comparison: every policy (baselines, shipped residuals, ``zero``/``random``/``hold``)
on every environment it applies to, as one table and three PNGs.

Cells: each environment in its standard setting (get-up: ``lab``, random starts; walk: ``lab``, a
fixed command), and each shipped policy with its prior alone in the setting it was trained for
(where the priors fail and the residual has to earn its place). Rows are built from the shared
runner's ``results.json`` aggregates, so the numbers mean what they mean everywhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from upright.envs.residual import RESIDUAL_ARGUMENTS
from upright.eval.runner import resolve_policy
from upright.eval.settings import env_settings, saved_prior_params
from upright.eval.tables import Column, Table, mean_min_max, number, rate, text, vector, wilson_interval
from upright.policies.base import Policy
from upright.policies.run import run_env_id, run_env_kwargs

#: The standard setting of each task in the report (the fixed walk command is m/s, m/s, rad/s).
GETUP_SETTINGS: dict[str, Any] = {"start": "random", "conditions": "lab"}
WALK_SETTINGS: dict[str, Any] = {"command": (0.2, 0.0, 0.0), "conditions": "lab", "max_episode_seconds": 10.0}


def prior_alone(env_kwargs: Mapping[str, Any]) -> tuple[str | Policy, dict[str, Any]]:
    """The prior of a residual's environment arguments ``env_kwargs`` as a policy of its own (a
    baseline name, or a controller with the ``prior_params`` overrides, named with them:
    ``spline (time_hands_front=0.3)``) and the arguments without
    those that need a prior (:data:`~upright.envs.residual.RESIDUAL_ARGUMENTS`: the prior, its parameters,
    the residual's settings, the observation of the prior's gait); ValueError when there is no
    prior."""
    if env_kwargs.get("prior") is None:
        raise ValueError(f"no prior in the environment arguments {dict(env_kwargs)}")
    kwargs = {k: v for k, v in env_kwargs.items() if k not in RESIDUAL_ARGUMENTS}
    params = saved_prior_params(env_kwargs)
    name = str(env_kwargs["prior"])
    return resolve_policy(name, params, label=f"{name} ({_overrides(params)})" if params else None), kwargs


def _overrides(params: Mapping[str, Any]) -> str:
    """Controller parameter overrides as the tables show them: ``key=value, key=value``."""
    return ", ".join(f"{key}={value}" for key, value in params.items())


def prior_label(env_kwargs: Mapping[str, Any]) -> str:
    """How tables name the prior of a residual's environment arguments: ``prior (NAME)``, with its
    parameter overrides when it has some (``prior (spline, time_hands_front=0.3)``), so that a
    re-parameterised prior is never read as the baseline's defaults."""
    params = saved_prior_params(env_kwargs)
    return f"prior ({env_kwargs['prior']}{', ' + _overrides(params) if params else ''})"


def comparison_cells(env_ids: Sequence[str], tasks: Mapping[str, str], policies: Sequence[str]
                     ) -> list[tuple[str, str | Policy, dict[str, Any]]]:
    """``(env_id, policy, env_kwargs)`` of the report's evaluation: every policy of ``policies``
    on every environment of ``env_ids`` (``tasks``: env id to ``getup``/``walk``) in the standard
    setting, shipped policies only on their own environment; then for each shipped policy, it and
    its prior alone in the conditions it was trained for (walk episodes cut to the standard
    setting's length). Whether a baseline fits a robot is left to the runner (ValueError)."""
    cells = []
    for env_id in env_ids:
        settings = WALK_SETTINGS if tasks[env_id] == "walk" else GETUP_SETTINGS
        for policy in policies:
            if run_env_id(policy) in (None, env_id):
                cells.append((env_id, policy, env_settings(settings, {}, run_env_kwargs(policy))))
    for policy in policies:
        env_id = run_env_id(policy)
        if env_id is None or env_id not in env_ids:
            continue
        trained = dict(run_env_kwargs(policy))
        if tasks[env_id] == "walk":
            trained["max_episode_seconds"] = WALK_SETTINGS["max_episode_seconds"]
        cells.append((env_id, policy, trained))
        if trained.get("prior") is not None:
            cells.append((env_id, *prior_alone(trained)))
    return cells


def _setting(result: Mapping[str, Any]) -> str:
    """The conditions and the start (get-up) or command (walk) of a result, as short text."""
    conditions = result["conditions"] if isinstance(result["conditions"], str) else "custom"
    kwargs = result["env_kwargs"]
    if result["task"] == "getup":
        return f"{conditions}, {kwargs.get('start', 'prone')} start"
    command = kwargs.get("command")
    return f"{conditions}, " + ("commands from ranges" if command is None else
                                "command " + ", ".join(f"{c:g}" for c in command))


#: Columns of a get-up and of a walk result row (:func:`comparison_row`).
GETUP_COLUMNS = (Column("success", "success", rate), Column("stood up", "stood_up", rate),
                 Column("tries succeeded", "tries", rate),
                 Column("time to stand (s) mean / min / max", "time_to_stand", mean_min_max()))
WALK_COLUMNS = (Column("velocity vx, vy, wz", "velocity", vector(3)),
                Column("linear tracking error (m/s)", "linear_tracking_error", number(3)),
                Column("yaw tracking error (rad/s)", "yaw_tracking_error", number(3)))
FALLS_COLUMN = Column("falls / episode", "falls_per_episode", number(2))


def comparison_row(result: Mapping[str, Any]) -> dict[str, Any]:
    """One table row from a ``results.json`` aggregate of :func:`upright.eval.results.aggregate`."""
    n = result["episodes"]
    row: dict[str, Any] = {"policy": result["policy"], "env": result["env"].split("/")[-1],
                           "setting": _setting(result), "task": result["task"]}
    if result["task"] == "getup":
        # results written before the per-try metric existed (read back by --resume) have no tries
        tries = (result["tries_succeeded"], result["tries"]) if "tries" in result else None
        row.update(success=(result["successes"], n), stood_up=(result["stood_up"], n), tries=tries,
                   time_to_stand=result["time_to_stand"], falls_per_episode=result["falls"] / max(n, 1))
    else:
        row.update(velocity=result["mean_velocity"], linear_tracking_error=result["linear_tracking_error"]["mean"],
                   yaw_tracking_error=result["yaw_tracking_error"]["mean"],
                   falls_per_episode=result["falls"]["total"] / max(n, 1))
    return row


def comparison_table(results: Sequence[Mapping[str, Any]], notes: str = "") -> Table:
    """Policy × environment: success, stood-up and per-try success rates with 95 % Wilson intervals
    and the time to stand (get-up); velocity and tracking errors (walk); falls per episode (both)."""
    return Table("Policies × environments", [
        Column("policy", "policy"), Column("environment", "env"), Column("setting", "setting", text),
        *GETUP_COLUMNS, *WALK_COLUMNS, FALLS_COLUMN], [comparison_row(r) for r in results], notes)


def fit_tick_labels(fig: Any, ax: Any) -> None:
    """Turn the x tick labels of ``ax`` (on ``fig``) until no two overlap: level, then 30°, then
    upright (90°, where a label takes only its lines' height along the axis). A plot's column
    names (policy, environment, setting) are longer than a column is wide once there are many."""
    for rotation, align in ((0, "center"), (30, "right"), (90, "center")):
        for label in ax.get_xticklabels():
            label.set_rotation(rotation)
            label.set_horizontalalignment(align)
        fig.tight_layout()  # the margins the turned labels need, as the saved figure has them
        fig.canvas.draw()
        boxes = [label.get_window_extent() for label in ax.get_xticklabels() if label.get_text()]
        if not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:])):
            return


def plot_rates(results: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """Success and stood-up rates with 95 % Wilson interval bars, one group of bars per get-up
    environment and setting, one bar per policy (like Figure 5.1 of the Wolfgang thesis)."""
    import matplotlib  # matplotlib: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # matplotlib: only when a figure is drawn

    getups = [r for r in results if r["task"] == "getup"]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in getups:
        groups.setdefault(f"{r['env'].split('/')[-1]}\n{_setting(r)}", []).append(r)
    policies = sorted({r["policy"] for r in getups})
    colours = plt.get_cmap("tab20")
    width = 0.8 / max(len(policies), 1)
    fig, axes = plt.subplots(2, 1, figsize=(max(8.0, 1.6 * len(groups) + 4), 8), sharex=True)
    for ax, (key, label) in zip(axes, (("successes", "success rate"), ("stood_up", "stood-up rate"))):
        for j, policy in enumerate(policies):
            xs, ys, err = [], [], [[], []]
            for i, members in enumerate(groups.values()):
                for r in members:
                    if r["policy"] == policy:
                        k, n = r[key], r["episodes"]
                        low, high = wilson_interval(k, n)
                        xs.append(i + (j - (len(policies) - 1) / 2) * width)
                        ys.append(k / n)
                        err[0].append(k / n - low)
                        err[1].append(high - k / n)
            if xs:
                ax.bar(xs, ys, width, yerr=err, capsize=2, color=colours(j % 20), label=policy)
        ax.set_ylabel(label + " (95 % interval)")
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(range(len(groups)), list(groups), fontsize=8)
    axes[0].legend(fontsize=7, ncol=4, loc="lower left", bbox_to_anchor=(0.0, 1.01))
    fit_tick_labels(fig, axes[-1])
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_walk_tracking(results: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """Each walk episode's measured mean velocity (dots) beside its command (black bars), per axis
    (vx, vy in m/s, yaw rate in rad/s), one column per policy and setting. Runs in which every
    episode fell are left out (their velocities say nothing about tracking)."""
    import matplotlib  # matplotlib: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # matplotlib: only when a figure is drawn

    walks = [r for r in results if r["task"] == "walk" and r["falls"]["episodes_with_fall"] < r["episodes"]]
    fig, axes = plt.subplots(3, 1, figsize=(max(6.0, 1.2 * len(walks) + 2), 9), sharex=True)
    for axis, (ax, name) in enumerate(zip(axes, ("vx (m/s)", "vy (m/s)", "yaw rate (rad/s)"))):
        for j, r in enumerate(walks):
            episodes = r["episodes_data"]
            offsets = np.linspace(-0.25, 0.25, len(episodes)) if len(episodes) > 1 else np.zeros(1)
            ax.scatter(j + offsets, [e["mean_velocity"][axis] for e in episodes], s=12,
                       color=plt.get_cmap("tab10")(j % 10), zorder=3)
            ax.scatter(j + offsets, [e["command"][axis] for e in episodes], marker="_", s=120, color="black",
                       zorder=2, label="command" if j == 0 else None)
        ax.set_ylabel(f"measured {name}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8, loc="best")
    axes[-1].set_xticks(range(len(walks)), [f"{r['policy']}\n{r['env'].split('/')[-1]}\n{_setting(r)}" for r in walks],
                        fontsize=7)
    fit_tick_labels(fig, axes[-1])
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


__all__ = ["FALLS_COLUMN", "GETUP_COLUMNS", "GETUP_SETTINGS", "WALK_COLUMNS", "WALK_SETTINGS", "comparison_cells", "comparison_row", "comparison_table",
           "fit_tick_labels", "plot_rates", "plot_walk_tracking", "prior_alone", "prior_label"]
