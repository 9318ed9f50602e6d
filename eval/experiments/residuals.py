"""The shipped residual policies against their priors (``residuals.yaml``).

``trained-residuals`` — for every shipped policy of ``residuals.yaml`` that is in the zoo
(``policies/zoo/``, ``only`` picks some): each cell (the conditions it was trained for, ``target``,
and the robustness cells: ``lab``, ``turf``, for NAO the keyframe ablation's worn hip-yaw-pitch) is
run for the residual (``zoo:NAME``, with the environment arguments it was trained with) and for its
prior alone, on the same held-out seeds (``episodes`` of them in the target cell, half as many in
the others) (``seed`` in the YAML plus ``--seed``: disjoint from every
training and model-selection seed). Get-up rows: success and the stood-up rate with 95 % Wilson
intervals, time to stand over the successes, falls per episode; walk rows: falls per episode,
velocity, linear and yaw tracking errors. With ``--docs`` it also stores each target cell's numbers
in the entry's ``manifest.yml``.

    upright experiment trained-residuals --workers 2 --docs
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from upright.envs.registration import ENVIRONMENTS
from upright.eval.comparison import FALLS_COLUMN, GETUP_COLUMNS, WALK_COLUMNS, comparison_row, prior_alone, prior_label
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.experiments.keyframe import worn_hip
from upright.eval.tables import Column, Table
from upright.policies.run import run_env_id, run_env_kwargs, zoo_entry, zoo_names
from upright.policies.run_folder import write_evaluation

DATA = protocol_data(__name__)


def residual_and_prior(ctx: ExperimentContext, name: str, cell: str, env_id: str, kwargs: dict[str, Any],
                       episodes: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The shipped residual ``zoo:NAME`` with the environment arguments ``kwargs`` (its prior among
    them) and that prior alone, ``episodes`` each on the same seeds of ``ctx``: the aggregates of
    the cells ``NAME/CELL-residual`` and ``NAME/CELL-prior``."""
    residual = ctx.run_cell(f"{name}/{cell}-residual", env_id, f"zoo:{name}", kwargs, episodes)
    prior = ctx.run_cell(f"{name}/{cell}-prior", env_id, *prior_alone(kwargs), episodes)
    return residual, prior


def held_out_note(seed: int) -> str:
    """Where the held-out seeds from ``seed`` lie against the seeds a shipped policy saw."""
    return (f"seeds from {seed} (episode i: seed + i; held out from training, whose episode seeds lie in "
            "[0, 2^31), and from model selection, seeds from 1000000 during training and from 2500000000 in "
            "checkpoint-selection); residual and prior on the same seeds")


def _conditions(name: str, start: str | None) -> Any:
    """A preset name, or ``worn_hip``: the keyframe ablation's worn hip-yaw-pitch for ``start``."""
    if name != "worn_hip":
        return name
    return worn_hip(start)


def cell_episodes(cell: str, episodes: int) -> int:
    """The episodes of ``cell``: ``episodes`` in the ``target`` cell, half as many (at least one) in
    the others."""
    return episodes if cell == "target" else max(1, episodes // 2)


@register_experiment("trained-residuals", "the shipped residual policies against their priors (held-out seeds)",
                     options={"only": tuple(DATA["policies"])})
def trained_residuals(ctx: ExperimentContext) -> list[Table]:
    """Every cell of every shipped policy of ``only``, residual and prior alone on the same seeds.
    One results folder per run (``NAME/CELL-residual``, ``NAME/CELL-prior``)."""
    episodes = ctx.episodes_or(DATA["episodes"])
    held_out = replace(ctx, seed=int(DATA["seed"]) + ctx.seed)
    shipped = set(zoo_names())
    getup_rows: list[dict[str, Any]] = []
    walk_rows: list[dict[str, Any]] = []
    names = ctx.option_names("only", DATA["policies"])
    missing = [name for name in names if name not in shipped]
    ctx.plan(sum(2 * cell_episodes(cell, episodes) for name in names if name in shipped
                 for cell in DATA["policies"][name]["cells"]))  # the residual and its prior in every cell
    for name in names:
        if name not in shipped:
            continue
        zoo_name = f"zoo:{name}"
        env_id = run_env_id(zoo_name)
        trained = run_env_kwargs(zoo_name)
        evaluation = {}
        for cell, settings in DATA["policies"][name]["cells"].items():
            n = cell_episodes(cell, episodes)
            kwargs = {**trained, **settings,
                      "conditions": _conditions(settings["conditions"], settings.get("start"))}
            residual, prior = residual_and_prior(held_out, name, cell, env_id, kwargs, n)
            rows = getup_rows if ENVIRONMENTS[env_id].task == "getup" else walk_rows
            rows += [{**comparison_row(result), "policy": name, "runs": runs, "cell": cell}
                     for runs, result in (("residual", residual), (prior_label(trained), prior))]
            if cell == "target":
                evaluation = {"seeds": [held_out.seed, held_out.seed + episodes - 1], "episodes": episodes,
                              "residual": rows[-2], "prior": rows[-1]}
        if ctx.docs:
            write_evaluation(zoo_entry(name), evaluation)
    notes = (f"{episodes} episodes per `target` row, {max(1, episodes // 2)} per other row, "
             f"{held_out_note(held_out.seed)}. `target`: the conditions the residual was trained for.")
    if missing:
        notes += f" Not in the zoo, so not here: {', '.join(missing)} (their training runs: docs/results/training-runs.md)."
    keys = (Column("policy", "policy"), Column("runs", "runs"), Column("cell", "cell"))
    tables = [Table("Shipped get-up residuals against their priors", [*keys, *GETUP_COLUMNS, FALLS_COLUMN],
                    getup_rows, notes)]
    if walk_rows:
        tables.append(Table("Shipped walk residuals against their priors", [*keys, *WALK_COLUMNS, FALLS_COLUMN],
                            walk_rows, notes))
    return tables
