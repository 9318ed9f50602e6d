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
in the entry's ``manifest.yml`` and draws the residual-vs-scratch learning curves of ``curves``
into ``docs/results/training/``.

    upright experiment trained-residuals --workers 2 --docs
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from upright.envs.registration import ENVIRONMENTS
from upright.eval.comparison import FALLS_COLUMN, GETUP_COLUMNS, WALK_COLUMNS, comparison_row, prior_alone
from upright.eval.experiments import DOCS_RESULTS, ExperimentContext, protocol_data, register_experiment
from upright.eval.experiments.keyframe import worn_hip
from upright.eval.tables import Column, Table
from upright.eval.learning_curves import plot_curve_comparison
from upright.policies.run import run_env_id, run_env_kwargs, zoo_dir, zoo_names
from upright.policies.run_folder import read_learning_curve, write_evaluation

DATA = protocol_data(__name__)


def _conditions(name: str, start: str | None) -> Any:
    """A preset name, or ``worn_hip``: the keyframe ablation's worn hip-yaw-pitch for ``start``."""
    if name != "worn_hip":
        return name
    return worn_hip(start)


def draw_learning_curves(directory: Path) -> list[Path]:
    """Draw each group of ``curves`` (residual against from scratch) into ``directory/<group>.png``
    from the committed learning curves (paths relative to the source tree's root); return the
    paths. A group none of whose files exist (an installed package without ``docs/``) is skipped."""
    root = Path(__file__).resolve().parents[2]
    paths = []
    for name, group in DATA["curves"].items():
        runs = {label: [_curve(root, entry) for entry in files if (root / _file(entry)).is_file()]
                for label, files in group["runs"].items()}
        runs = {label: files for label, files in runs.items() if files}
        if runs:
            paths.append(plot_curve_comparison(group["title"], runs, directory / f"{name}.png",
                                               metric=group["metric"]))
    return paths


def _file(entry: str | dict[str, Any]) -> str:
    """The learning-curve file of a ``curves`` entry (a path, or a mapping with ``file``)."""
    return entry if isinstance(entry, str) else entry["file"]


def _curve(root: Path, entry: str | dict[str, Any]) -> Path | tuple[Path, float, float]:
    """A ``curves`` entry for :func:`plot_curve_comparison`: a path, or for a fine-tuning run
    (``{file, after, at_steps}``: it started from the model ``after``'s run had at ``at_steps``)
    the path with that run's steps and wall-clock seconds at that evaluation."""
    if isinstance(entry, str):
        return root / entry
    rows = [r for r in read_learning_curve(root / entry["after"]) if r["steps"] == entry["at_steps"]]
    if not rows:
        raise ValueError(f"{entry['after']}: no evaluation at {entry['at_steps']} steps")
    return root / entry["file"], float(entry["at_steps"]), float(rows[0]["wall_seconds"])


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
    missing = []
    for name in ctx.option_names("only", DATA["policies"]):
        if name not in shipped:
            missing.append(name)
            continue
        zoo_name = f"zoo:{name}"
        env_id = run_env_id(zoo_name)
        trained = run_env_kwargs(zoo_name)
        evaluation = {}
        for cell, settings in DATA["policies"][name]["cells"].items():
            n = episodes if cell == "target" else max(1, episodes // 2)
            kwargs = {**trained, **settings,
                      "conditions": _conditions(settings["conditions"], settings.get("start"))}
            residual = held_out.run_cell(f"{name}/{cell}-residual", env_id, zoo_name, kwargs, n)
            prior = held_out.run_cell(f"{name}/{cell}-prior", env_id, *prior_alone(kwargs), n)
            rows = getup_rows if ENVIRONMENTS[env_id].task == "getup" else walk_rows
            rows += [{**comparison_row(result), "policy": name, "runs": runs, "cell": cell}
                     for runs, result in (("residual", residual), (f"prior ({trained['prior']})", prior))]
            if cell == "target":
                evaluation = {"seeds": [held_out.seed, held_out.seed + episodes - 1], "episodes": episodes,
                              "residual": rows[-2], "prior": rows[-1]}
        if ctx.docs:
            write_evaluation(zoo_dir() / name, evaluation)
    notes = (f"{episodes} episodes per `target` row, {max(1, episodes // 2)} per other row, seeds from "
             f"{held_out.seed} (episode i: seed + i; held out from "
             "training, whose episode seeds lie in [0, 2^31), and from model selection, seeds from 1000000 during training "
             "and from 2500000000 in checkpoint-selection); "
             "residual and prior on the same seeds. `target`: the conditions the residual was trained for.")
    if missing:
        notes += f" Not in the zoo, so not here: {', '.join(missing)} (their training runs: docs/results/training.md)."
    keys = (Column("policy", "policy"), Column("runs", "runs"), Column("cell", "cell"))
    tables = [Table("Shipped get-up residuals against their priors", [*keys, *GETUP_COLUMNS, FALLS_COLUMN],
                    getup_rows, notes)]
    if walk_rows:
        tables.append(Table("Shipped walk residuals against their priors", [*keys, *WALK_COLUMNS, FALLS_COLUMN],
                            walk_rows, notes))
    if ctx.docs:
        ctx.data["curves"] = [str(p) for p in draw_learning_curves(DOCS_RESULTS / "training")]
    return tables
