"""Every baseline and shipped policy on other models of its robot (``model_variation.yaml``).

``model-variation`` — each row of ``rows`` (a baseline or a shipped policy on one environment;
``only`` picks rows by label) runs in each cell of ``cells`` (``cells`` picks some): the ``base``
conditions with one model factor changed (servo gain, torque limit, damping, encoder zero
offsets, torso mass and CoM, sensor latency, estimated joint velocity, filtered orientation,
another published model's softer servos), and every factor at once (the ``sim2real`` preset).
A cell's rate is the get-up success rate, or the share of walks without a fall, with its 95 %
Wilson interval. Besides the table it draws ``model-variation.png``: row × cell, coloured by rate.

    upright experiment model-variation --workers 2 --docs
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from upright.envs.conditions import Conditions, get_conditions
from upright.envs.registration import ENVIRONMENTS
from upright.eval.experiments import DOCS_RESULTS, ExperimentContext, protocol_data, register_experiment
from upright.eval.tables import Column, Table, number, rate
from upright.policies.run import run_env_kwargs, zoo_names

DATA = protocol_data(__name__)

#: The picture's file name, in the results folder (and in ``docs/results`` with ``--docs``).
PICTURE = "model-variation.png"

COLUMNS = (Column("policy", "label"), Column("cell", "cell"),
           Column("rate [95 %]", "rate", rate),
           Column("time to stand (s)", "time_to_stand", number(2)),
           Column("linear error (m/s)", "linear_error", number(3)),
           Column("yaw error (rad/s)", "yaw_error", number(3)))


def row_label(row: Mapping[str, str]) -> str:
    """How the table and the picture name a row: ``NaoGetUp keyframe``."""
    return f"{row['env'].split('/')[-1].removesuffix('-v0')} {row['policy'].removeprefix('zoo:')}"


def cell_conditions(cell: Mapping[str, Any], robot: str, base: Conditions) -> Conditions:
    """The conditions of one cell of ``cells`` for ``robot``: the cell's fields set on ``base``, or
    on the preset it names (``preset: NAME`` or ``{robot: NAME}``): ``{preset: sim2real,
    torso_mass: [0, 0]}`` is ``sim2real`` without its torso load."""
    fields = {key: value for key, value in cell.items() if key != "preset"}
    if "preset" in cell:
        preset = cell["preset"]
        if isinstance(preset, Mapping):
            if robot not in preset:
                raise ValueError(f"cell {dict(cell)!r} names no preset for robot {robot!r}")
            preset = preset[robot]
        base = get_conditions(preset)
    return base.changed(fields)


def row_kwargs(row: Mapping[str, str], conditions: Conditions) -> dict[str, Any]:
    """A row's environment arguments under ``conditions``: a shipped policy's own (its prior
    among them) or none, a random lying start for a get-up, the walk's default command ranges."""
    policy = row["policy"]
    kwargs = dict(run_env_kwargs(policy)) if policy.startswith("zoo:") else {}
    kwargs["conditions"] = conditions
    if ENVIRONMENTS[row["env"]].task == "getup":
        kwargs["start"] = "random"
    else:
        kwargs.pop("command", None)
        kwargs.pop("command_focus_share", None)
    return kwargs


def cell_row(result: Mapping[str, Any]) -> dict[str, Any]:
    """The table values of one cell's aggregate: the rate (successes, or walks without a fall, of
    the episodes) and the task's other measures."""
    n = result["episodes"]
    if result["task"] == "getup":
        return {"rate": (result["successes"], n), "time_to_stand": result["time_to_stand"]["mean"]}
    fell = result["falls"]["episodes_with_fall"]
    return {"rate": (n - fell, n), "linear_error": result["linear_tracking_error"]["mean"],
            "yaw_error": result["yaw_tracking_error"]["mean"]}


@register_experiment("model-variation", "baselines and shipped policies on other models of their robot, one "
                     "factor at a time and all at once",
                     options={"only": tuple(row_label(r) for r in DATA["rows"]), "cells": tuple(DATA["cells"])})
def model_variation(ctx: ExperimentContext) -> list[Table]:
    """Every cell of ``cells`` for every row of ``only`` on the same held-out seeds; one results
    folder per run (``ROW/CELL``). ``ctx.data["rates"]``: row label → cell → [k, n]."""
    episodes = ctx.episodes_or(DATA["episodes"])
    seed = int(DATA["seed"]) + ctx.seed
    run_ctx = replace(ctx, seed=seed)
    labels = ctx.option_names("only", [row_label(r) for r in DATA["rows"]])
    cells = ctx.option_names("cells", DATA["cells"])
    base = get_conditions(DATA["base"])
    shipped = {f"zoo:{name}" for name in zoo_names()}
    rows = []
    rates: dict[str, dict[str, list[int]]] = {}
    chosen = [row for row in DATA["rows"] if row_label(row) in labels]
    missing = [row_label(row) for row in chosen if row["policy"].startswith("zoo:") and row["policy"] not in shipped]
    chosen = [row for row in chosen if row_label(row) not in missing]
    ctx.plan(len(chosen) * len(cells) * episodes)
    for row in chosen:
        label = row_label(row)
        robot = ENVIRONMENTS[row["env"]].robot
        for cell in cells:
            kwargs = row_kwargs(row, cell_conditions(DATA["cells"][cell], robot, base))
            result = run_ctx.run_cell(f"{label.replace(' ', '-')}/{cell}", row["env"], row["policy"], kwargs,
                                      episodes)
            values = cell_row(result)
            rates.setdefault(label, {})[cell] = list(values["rate"])
            rows.append({"label": label, "cell": cell, **values})
    ctx.data["rates"] = rates
    pictures = [plot_rates(rates, cells, ctx.out / PICTURE)] if rates else []
    if ctx.docs and pictures:
        DOCS_RESULTS.mkdir(parents=True, exist_ok=True)
        pictures.append(plot_rates(rates, cells, DOCS_RESULTS / PICTURE))
    return [Table("Baselines and shipped policies on other models of their robot", COLUMNS, rows,
                  _notes(episodes, seed, cells, missing))]


def plot_rates(rates: Mapping[str, Mapping[str, Sequence[int]]], cells: Sequence[str], path: Path) -> Path:
    """Row × cell, each square coloured by its rate (red 0 to green 1) and labelled in per cent;
    returns ``path`` (a PNG)."""
    import matplotlib  # matplotlib: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = list(rates)
    values = np.full((len(labels), len(cells)), np.nan)
    for i, label in enumerate(labels):
        for j, cell in enumerate(cells):
            if cell in rates[label]:
                k, n = rates[label][cell]
                values[i, j] = k / n if n else np.nan
    fig, ax = plt.subplots(figsize=(1.0 + 0.55 * len(cells), 1.4 + 0.42 * len(labels)))
    image = ax.imshow(values, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(len(labels)):
        for j in range(len(cells)):
            if not np.isnan(values[i, j]):
                ax.text(j, i, f"{100 * values[i, j]:.0f}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(cells)), cells, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    fig.colorbar(image, ax=ax, fraction=0.03, label="success / walks without a fall")
    ax.set_title("Rate (%) per policy and model change", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _notes(episodes: int, seed: int, cells: Sequence[str], missing: Sequence[str]) -> str:
    """The table's notes: seeds, what a cell changes, and what the rate is."""
    notes = [f"{episodes} episodes per cell, seeds from {seed} (episode i: seed + i), the same in every cell; held "
             "out from every seed used in training (episode seeds in [0, 2^31)) and model selection (1000000 + i, "
             "2500000000 + i).",
             f"Cells change `{DATA['base']}` by one factor: " + "; ".join(
                 f"{cell}: {_describe(DATA['cells'][cell])}" for cell in cells)
             + ". Servo factors multiply every actuator's parameter; the zero offset and the torso CoM offset are "
             "drawn per episode uniformly in ± the value (per actuator, per axis).",
             "Rate: get-up success (upright, head high, still for 1 s, no fall afterwards; random lying start), or "
             "the share of walks without a fall (20 s, commands drawn from the default ranges), with 95 % Wilson "
             f"intervals. Picture: [{PICTURE}]({PICTURE})."]
    if missing:
        notes.append(f"Not in the zoo, so not here: {', '.join(missing)}.")
    return "\n\n".join(notes)


def _describe(cell: Mapping[str, Any]) -> str:
    """A cell's change as short text."""
    if not cell:
        return "nothing (our model)"
    if "preset" in cell:
        preset = cell["preset"]
        names = preset.values() if isinstance(preset, Mapping) else [preset]
        return "the preset " + " / ".join(f"`{name}`" for name in names)
    return ", ".join(f"`{key}` = {value}" for key, value in cell.items())


__all__ = ["PICTURE", "cell_conditions", "cell_row", "model_variation", "plot_rates", "row_kwargs", "row_label"]
