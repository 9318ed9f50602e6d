"""Every baseline and one shipped policy on other models of its robot, loaded through
``model=``/``model_map=`` (``model_variants.yaml``).

``model-variants`` — the variant models of :mod:`upright.eval.model_variants` (a legs-only robot,
knees measured from another zero, softer servos with another timestep, renamed joints with a map)
are written into ``OUT/models``; every baseline of each robot in ``robots`` and the robot's shipped
policy run on ours and on each variant in ``variants`` (the same held-out seeds, ``lab``). A
baseline, or a shipped policy's prior, that needs joints the model lacks (a get-up's arms on a
legs-only model) is not run: its cell says so, as ``gym.make`` refuses it in one line. A cell's
rate is the get-up success rate, or the share of walks without a fall.

    upright experiment model-variants --docs
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from upright.baselines import baseline_entry, controller_names, lacking_limbs
from upright.envs.conditions import get_conditions
from upright.envs.registration import env_id
from upright.envs.robots import get_robot, with_model
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.experiments.model_variation import cell_row, row_kwargs, row_label
from upright.eval.model_variants import ROBOT_VARIANTS, write_variants
from upright.eval.tables import MISSING, Column, Table, number, rate, text
from upright.policies.run import run_env_id, run_env_kwargs

DATA = protocol_data(__name__)

#: The column of our own model.
OURS = "ours"
#: The robots with variants, in the order of the YAML's ``shipped``.
ROBOTS = tuple(robot for robot in DATA["shipped"] if robot in ROBOT_VARIANTS)
#: Every variant name, in the order of the first robot that has it.
VARIANTS = tuple(dict.fromkeys(name for robot in ROBOTS for name in ROBOT_VARIANTS[robot]))

COLUMNS = (Column("policy", "label"), Column("model", "variant"),
           Column("rate [95 %]", "rate", rate),
           Column("time to stand (s)", "time_to_stand", number(2)),
           Column("linear error (m/s)", "linear_error", number(3)),
           Column("yaw error (rad/s)", "yaw_error", number(3)),
           Column("not run", "refused", text))


def robot_rows(robot: str) -> list[dict[str, str]]:
    """The rows of ``robot`` by environment (get-up, then walk): every baseline registered for it,
    on its task's environment, then its shipped policy (``shipped`` of the YAML) on the environment
    it was trained in."""
    rows = [{"env": env_id(robot, baseline_entry(name).task), "policy": name} for name in controller_names()
            if robot in baseline_entry(name).robots]
    shipped = DATA["shipped"][robot]
    rows.append({"env": run_env_id(shipped), "policy": shipped})
    return sorted(rows, key=lambda row: row["env"])  # stable: the baselines by name, then the shipped policy


def refusal(policy: str, model_kwargs: Mapping[str, str], robot: str) -> str | None:
    """Why ``policy`` (a baseline, or a shipped policy through its prior) cannot run on the model of
    ``robot`` that ``model_kwargs`` load (None: it can): the limbs it needs of which the model
    lacks joints, as ``gym.make`` refuses them."""
    if not model_kwargs:
        return None
    baseline = policy if policy in controller_names() else run_env_kwargs(policy).get("prior")
    if baseline is None:
        return None
    lacking = lacking_limbs(baseline, with_model(get_robot(robot), **model_kwargs))
    if not lacking:
        return None
    return f"{'its prior ' + baseline + ' ' if baseline != policy else ''}needs the {', '.join(lacking)}"


def summary_cell(row: Mapping[str, Any]) -> str:
    """One cell of the overview: ``k/n`` with the mean time to stand (get-up) or the linear
    tracking error (walk), or why it was not run."""
    if row["refused"]:
        return f"not run: {row['refused']}"
    k, n = row["rate"]
    if "linear_error" in row:
        return f"{k}/{n}, {number(3)(row['linear_error'])} m/s"
    return f"{k}/{n}" + (f", {number(2)(row['time_to_stand'])} s" if row["time_to_stand"] is not None else "")


@register_experiment("model-variants", "every baseline and one shipped policy per robot on variant models of the "
                     "robot (legs only, knee zero, soft servos, renamed with a map) through model=",
                     options={"robots": ROBOTS, "variants": (OURS, *VARIANTS)})
def model_variants(ctx: ExperimentContext) -> list[Table]:
    """Every row of each robot of ``robots`` on ours and on each of its variants in ``variants``;
    one results folder per run (``ROW/VARIANT``). ``ctx.data["models"]``: robot → variant → the
    environment arguments that load it (paths under ``OUT/models``)."""
    episodes = ctx.episodes_or(DATA["episodes"])
    seed = int(DATA["seed"]) + ctx.seed
    run_ctx = replace(ctx, seed=seed)
    robots = ctx.option_names("robots", ROBOTS)
    variants = ctx.option_names("variants", (OURS, *VARIANTS))
    written = write_variants(ctx.out / "models", robots)
    models: dict[str, dict[str, dict[str, str]]] = {robot: {OURS: {}} for robot in robots}
    for (robot, name), (model, model_map) in written.items():
        models[robot][name] = {"model": str(model), **({"model_map": str(model_map)} if model_map else {})}
    ctx.data["models"] = models
    conditions = get_conditions(DATA["base"])
    rows, overview = [], []
    refusals = {(robot, row_label(row), variant): refusal(row["policy"], models[robot][variant], robot)
                for robot in robots for row in robot_rows(robot) for variant in variants if variant in models[robot]}
    ctx.plan(episodes * sum(refused is None for refused in refusals.values()))
    for robot in robots:
        for row in robot_rows(robot):
            label = row_label(row)
            line: dict[str, str | None] = {"label": label}
            for variant in variants:
                if variant not in models[robot]:
                    continue
                model_kwargs = models[robot][variant]
                refused = refusals[robot, label, variant]
                values: dict[str, Any] = {"rate": None, "time_to_stand": None}
                if refused is None:
                    kwargs = {**row_kwargs(row, conditions), **model_kwargs}
                    result = run_ctx.run_cell(f"{label.replace(' ', '-')}/{variant}", row["env"], row["policy"],
                                              kwargs, episodes)
                    values = cell_row(result)
                cell = {"label": label, "variant": variant, "refused": refused, **values}
                rows.append(cell)
                line[variant] = summary_cell(cell)
            overview.append(line)
    shown = [v for v in variants if any(v in models[robot] for robot in robots)]
    overview_columns = [Column("policy", "label"), *(Column(v, v, text) for v in shown)]
    notes = _notes(episodes, seed)
    return [Table("Baselines and shipped policies on variant models of their robot", overview_columns, overview,
                  " ".join([*notes, f"A cell: get-ups succeeded of the episodes and the mean time to stand; walks "
                                    f"without a fall of the episodes and the mean linear tracking error; {MISSING}: "
                                    "the robot has no such variant."])),
            Table("Every cell with its 95 % interval", list(COLUMNS), rows, " ".join(notes))]


def _notes(episodes: int, seed: int) -> list[str]:
    """The tables' notes: seeds, conditions, the variants and what a cell's rate is."""
    models = "; ".join(f"{robot}: {', '.join(ROBOT_VARIANTS[robot])}" for robot in ROBOTS)
    return [f"{episodes} episodes per cell, seeds {seed}..{seed + episodes - 1} (held out from training and model "
            f"selection), conditions `{DATA['base']}`; get-ups from a random lying start, walks on commands drawn "
            "from the environment's default ranges. A shipped policy runs with the other arguments it was trained "
            "with, its prior among them.",
            f"Variants (`python -m upright.eval.model_variants OUT`; docs/your-robot.md): {models}. Each is our "
            "model changed in code and loaded through `model=` (and `model_map=`); `ours` is our model.",
            "Rate: get-up successes, or walks without a fall, of the episodes. Not run: the baseline, or the "
            "shipped policy's prior, needs joints the model lacks (gym.make refuses it in one line)."]
