"""The shipped get-up residuals and their priors under conditions never trained on (``generalisation.yaml``).

``generalisation`` — for every shipped get-up policy of ``generalisation.yaml`` that is in the zoo
(``only`` picks some), each perturbation of ``perturbations`` (``cells`` picks some) changes the
conditions the policy was trained under (its target preset: friction and link masses scaled, one
more cycle of actuation delay, wear scaled by :meth:`~upright.envs.conditions.RandomWear.scaled`)
and runs the residual (``zoo:NAME``, with the environment arguments it was trained with) and its
prior alone on the same held-out seeds as ``trained-residuals``, ``episodes`` each. Rows: success,
stood up and per-try success with 95 % Wilson intervals; time to stand, time upright and falls
per episode as means with 95 % Student-t intervals; and on the residual's row the measures in
which it is worse than its prior (:func:`worse_than_prior`).

    upright experiment generalisation --workers 2 --docs
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

from upright.envs.conditions import Conditions, RandomWear, get_conditions
from upright.envs.registration import ENVIRONMENTS
from upright.eval.comparison import comparison_row, prior_label
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.experiments.residuals import DATA as RESIDUALS
from upright.eval.experiments.residuals import held_out_note, residual_and_prior
from upright.eval.tables import Column, Table, interval, mean_interval, rate, text, wilson_interval
from upright.policies.run import run_env_id, run_env_kwargs, zoo_names

DATA = protocol_data(__name__)

#: The measures compared with the prior: label, row key, and whether a higher value is better.
MEASURES: tuple[tuple[str, str, bool], ...] = (
    ("success", "success", True), ("stood up", "stood_up", True), ("per-try success", "tries", True),
    ("time to stand", "time_to_stand", False), ("time upright", "time_upright", False),
    ("falls", "falls_per_episode", False))

COLUMNS = (Column("policy", "policy"), Column("cell", "cell"), Column("runs", "runs"),
           Column("success", "success", rate), Column("stood up", "stood_up", rate),
           Column("tries succeeded", "tries", rate),
           Column("time to stand (s) mean [95 %] (n)", "time_to_stand", interval()),
           Column("time upright (s) mean [95 %] (n)", "time_upright", interval()),
           Column("falls / episode mean [95 %]", "falls_per_episode", interval()),
           Column("worse than prior", "worse", text))


def perturbed(conditions: Conditions, change: Mapping[str, Any]) -> Conditions:
    """``conditions`` changed as one cell of ``perturbations`` says: ``preset: NAME`` gives that
    preset instead; ``scale: {FIELD: k}`` multiplies a range field's bounds (``mass_scale``,
    ``friction_scale``) or a number by ``k`` and scales ``random_wear`` with
    :meth:`RandomWear.scaled` (no random wear stays none); ``add: {FIELD: d}`` adds ``d`` to a
    number (``extra_delay_cycles``: ``d`` more control cycles of delay). A ValueError names an
    unknown key or field and a field that cannot be changed so."""
    unknown = set(change) - {"preset", "scale", "add"}
    if unknown or not change:
        raise ValueError(f"a perturbation is {{preset: NAME}} or {{scale: {{FIELD: k}}, add: {{FIELD: d}}}}, "
                         f"got {dict(change)!r}")
    if "preset" in change:
        if len(change) > 1:
            raise ValueError(f"a preset perturbation takes nothing else, got {dict(change)!r}")
        return get_conditions(change["preset"])
    valid = [f.name for f in fields(conditions)]
    changes: dict[str, Any] = {}
    for how, by_field in (("scale", change.get("scale", {})), ("add", change.get("add", {}))):
        for name, amount in by_field.items():
            if name not in valid:
                raise ValueError(f"unknown conditions field {name!r} in {how}; valid: {', '.join(valid)}")
            value = getattr(conditions, name)
            if how == "scale" and isinstance(value, RandomWear):
                changes[name] = value.scaled(amount)
            elif how == "scale" and value is None and name == "random_wear":
                changes[name] = None
            elif how == "scale" and isinstance(value, tuple) and len(value) == 2:
                changes[name] = (value[0] * amount, value[1] * amount)
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                changes[name] = value * amount if how == "scale" else value + amount
            else:
                raise ValueError(f"conditions field {name!r} ({value!r}) cannot be changed by {how} {amount!r}")
    return conditions.with_(**changes)


def _bounds(value: Any) -> tuple[float, float] | None:
    """The 95 % interval of a row value: a rate ``(k, n)`` (Wilson) or a :func:`mean_interval`."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return None if value["low"] is None else (value["low"], value["high"])
    k, n = value
    return wilson_interval(k, n) if n else None


def worse_than_prior(residual: Mapping[str, Any], prior: Mapping[str, Any]) -> list[str]:
    """The labels of :data:`MEASURES` in which the residual's row is worse than its prior's: its 95 %
    interval lies wholly on the worse side of the prior's (below it for a rate, above it for a time
    or for falls), the two intervals not overlapping. A measure without an interval on either side
    (no success, a single value) is not compared."""
    worse = []
    for label, key, higher_is_better in MEASURES:
        ours, theirs = _bounds(residual[key]), _bounds(prior[key])
        if ours is not None and theirs is not None and (
                ours[1] < theirs[0] if higher_is_better else ours[0] > theirs[1]):
            worse.append(label)
    return worse


def _row(result: Mapping[str, Any]) -> dict[str, Any]:
    """A table row of a get-up run: the shared rates, and the means with their intervals."""
    episodes = result["episodes_data"]
    return {**comparison_row(result),
            "time_to_stand": mean_interval([e["time_to_stand"] for e in episodes if e["success"]]),
            "time_upright": mean_interval([e["time_upright"] for e in episodes if e["stood_up"]]),
            "falls_per_episode": mean_interval([float(e["falls"]) for e in episodes])}


def _describe(change: Mapping[str, Any]) -> str:
    """A cell's change as short text, e.g. ``friction_scale ×0.5``."""
    if "preset" in change:
        return f"the preset `{change['preset']}`"
    return ", ".join([f"`{name}` ×{k:g}" for name, k in change.get("scale", {}).items()]
                     + [f"`{name}` +{d:g}" for name, d in change.get("add", {}).items()])


@register_experiment("generalisation", "the shipped get-up residuals and their priors under conditions never trained on",
                     options={"only": tuple(DATA["policies"]), "cells": tuple(DATA["perturbations"])})
def generalisation(ctx: ExperimentContext) -> list[Table]:
    """Every cell of ``cells`` for every shipped policy of ``only``, residual and prior alone on the
    same held-out seeds; one results folder per run (``NAME/CELL-residual``, ``NAME/CELL-prior``).
    ``ctx.data["worse"]``: per policy, the cells and measures in which the residual is worse."""
    episodes = ctx.episodes_or(DATA["episodes"])
    held_out = replace(ctx, seed=int(RESIDUALS["seed"]) + ctx.seed)
    cells = ctx.option_names("cells", DATA["perturbations"])
    shipped = set(zoo_names())
    rows: list[dict[str, Any]] = []
    missing, unchanged, targets = [], [], []
    worse: dict[str, dict[str, list[str]]] = {}
    runs = []  # (policy, cell, environment, its arguments, what it was trained with) of every pair run
    for name in ctx.option_names("only", DATA["policies"]):
        if name not in shipped:
            missing.append(name)
            continue
        env_id = run_env_id(f"zoo:{name}")
        if ENVIRONMENTS[env_id].task != "getup":
            raise ValueError(f"generalisation compares get-up policies; {name!r} is trained on {env_id}")
        trained = run_env_kwargs(f"zoo:{name}")
        target = get_conditions(trained["conditions"])
        targets.append(f"{name}: `{trained['conditions']}`")
        for cell in cells:
            conditions = perturbed(target, DATA["perturbations"][cell])
            if conditions == target:
                unchanged.append(f"{cell} for {name}")
            else:
                runs.append((name, cell, env_id, {**trained, "start": DATA["start"], "conditions": conditions},
                             trained))
    ctx.plan(2 * episodes * len(runs))  # the residual and its prior
    for name, cell, env_id, kwargs, trained in runs:
        residual, prior = residual_and_prior(held_out, name, cell, env_id, kwargs, episodes)
        ours, theirs = _row(residual), _row(prior)
        found = worse_than_prior(ours, theirs)
        if found:
            worse.setdefault(name, {})[cell] = found
        rows += [{**ours, "policy": name, "cell": cell, "runs": "residual", "worse": ", ".join(found) or "no"},
                 {**theirs, "policy": name, "cell": cell, "runs": prior_label(trained), "worse": ""}]
    ctx.data["worse"] = worse
    return [Table("Shipped get-up residuals and their priors under conditions never trained on", COLUMNS, rows,
                  _notes(episodes, held_out.seed, cells, targets, unchanged, missing, worse))]


def _notes(episodes: int, seed: int, cells: Sequence[str], targets: Sequence[str], unchanged: Sequence[str],
           missing: Sequence[str], worse: Mapping[str, Mapping[str, Sequence[str]]]) -> str:
    """The table's notes: seeds, what each cell changes, the definition of worse, and the verdict."""
    notes = [f"{episodes} episodes per row, {held_out_note(seed)}, the first {episodes} of the "
             "`trained-residuals` seeds (whose `target` rows are these policies under their own conditions).",
             f"Each cell changes the conditions a policy was trained under ({'; '.join(targets) or 'none run'}): "
             + "; ".join(f"{cell}: {_describe(DATA['perturbations'][cell])}" for cell in cells)
             + ". Ranges are scaled at both bounds; `random_wear` ×k multiplies the probabilities of a worn and "
             "of a stuck joint, play, lag and strength loss (1 − strength) by k (docs/environments.md); "
             "`extra_delay_cycles` +1 delays every command one more control cycle.",
             "Success, stood up and tries succeeded: 95 % Wilson intervals (the tries of one episode are not "
             "independent, so the per-try interval is a guide); time to stand (over the successful episodes), "
             "time upright (over the stood-up ones) and falls per episode: means with 95 % Student-t intervals "
             "and the number of values.",
             "**Worse than prior**: the measures in which the residual's 95 % interval lies wholly on the worse "
             "side of its prior's on the same seeds (below it for success, stood up and tries succeeded; above it "
             "for time to stand, time upright and falls per episode); overlapping intervals are not called worse, "
             "so `no` means no clear difference, not proof of none."]
    if unchanged:
        notes.append(f"Left out because they change nothing of the target conditions: {', '.join(unchanged)}.")
    if missing:
        notes.append(f"Not in the zoo, so not here: {', '.join(missing)}.")
    verdict = "; ".join(f"{name} in " + ", ".join(f"{cell} ({', '.join(measures)})" for cell, measures in found.items())
                        for name, found in worse.items())
    notes.append(f"**Worse than its prior**: {verdict}." if verdict else
                 "**Worse than its prior**: in no cell is a residual worse than its prior by this test.")
    return "\n\n".join(notes)
