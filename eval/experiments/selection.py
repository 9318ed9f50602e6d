"""Model selection on more episodes than a training run's periodic evaluation (``selection.yaml``).

``checkpoint-selection`` — for each run folder of ``runs`` (``upright train``'s), its checkpoints
(``checkpoints/model_N_steps.zip``) from ``from_steps`` on, every ``every`` steps (0: all of them),
or those at ``steps`` (a list),
evaluated deterministically with the environment arguments the run was trained with, all on the
same selection seeds (``seed`` in the YAML plus ``--seed``: disjoint from the training episodes'
seeds, which lie in [0, 2^31), and from the held-out seeds of ``trained-residuals``). The periodic
evaluation during training uses 30 episodes, whose 95 % interval is about ±0.15 wide: which
checkpoint looks best there is mostly noise between neighbours of a plateau. The best checkpoint
here (the training's own score: success rate, then stood-up rate, then return; walks: fewest
falls, then tracking error) is written to the run's ``selection.json``, which ``upright ship RUN
--model selected`` takes.

    upright experiment checkpoint-selection --set runs=runs/NaoGetUp-v0/ppo-keyframe-1 from_steps=500000 \\
        --episodes 100 --workers 2
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from upright.envs.registration import ENVIRONMENTS
from upright.eval.comparison import FALLS_COLUMN, GETUP_COLUMNS, WALK_COLUMNS, comparison_row
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.results import score, summary_numbers
from upright.eval.tables import Column, Table, text
from upright.policies.run import run_env_id, run_env_kwargs
from upright.policies.run_folder import SELECTION_NUMBERS, write_selection

DATA = protocol_data(__name__)
_CHECKPOINT = re.compile(r"model_(\d+)_steps\.zip")


def run_checkpoints(run_dir: Path, from_steps: int = 0, every: int = 0,
                    steps: tuple[int, ...] = ()) -> list[tuple[int, Path]]:
    """``(steps, path)`` of the run's checkpoints from ``from_steps`` on whose steps are a multiple
    of ``every`` (0: all), or exactly those at ``steps`` when given, in step order. ValueError when
    none is left or a checkpoint of ``steps`` is missing."""
    if from_steps < 0 or every < 0:
        raise ValueError(f"from_steps and every must be >= 0, got {from_steps!r} and {every!r}")
    found = sorted((int(m.group(1)), path) for path in (run_dir / "checkpoints").glob("model_*_steps.zip")
                   if (m := _CHECKPOINT.fullmatch(path.name)))
    missing = sorted(set(steps) - {s for s, _ in found})
    if missing:
        raise ValueError(f"run {str(run_dir)!r} has no checkpoint at {', '.join(map(str, missing))} steps "
                         f"(it has: {', '.join(str(s) for s, _ in found) or 'none'})")
    chosen = [(s, path) for s, path in found if (s in steps if steps else
                                                 s >= from_steps and (every == 0 or s % every == 0))]
    if not chosen:
        raise ValueError(f"run {str(run_dir)!r} has no checkpoint from {from_steps} steps on"
                         + (f" every {every} steps" if every else "")
                         + f" (it has: {', '.join(str(s) for s, _ in found) or 'none'})")
    return chosen


@register_experiment("checkpoint-selection", "a training run's checkpoints on more selection episodes; "
                     "the best is what `upright ship --model selected` takes",
                     options={"runs": (), "from_steps": 0, "every": 0, "steps": ()})
def checkpoint_selection(ctx: ExperimentContext) -> list[Table]:
    """Every chosen checkpoint of every run on the same selection seeds; one results folder per
    checkpoint (``RUN/STEPS``), the choice in each run's ``selection.json``."""
    runs = ctx.option_names("runs")
    if not runs:
        raise ValueError("checkpoint-selection needs --set runs=RUN_DIR[,RUN_DIR ...] (run folders of upright train)")
    episodes = ctx.episodes_or(DATA["episodes"])
    selection = replace(ctx, seed=int(DATA["seed"]) + ctx.seed)
    getup_rows: list[dict[str, Any]] = []
    walk_rows: list[dict[str, Any]] = []
    steps = ctx.options["steps"]
    chosen = tuple(int(n) for n in ((steps,) if isinstance(steps, (int, str)) else steps))
    checkpoints = [(Path(run), run_checkpoints(Path(run), int(ctx.options["from_steps"]), int(ctx.options["every"]),
                                               chosen)) for run in runs]
    ctx.plan(episodes * sum(len(candidates) for _, candidates in checkpoints))
    for run_dir, candidates in checkpoints:
        env_id, kwargs = run_env_id(str(run_dir)), run_env_kwargs(str(run_dir))
        scored = []
        for steps, path in candidates:
            result = selection.run_cell(f"{run_dir.name}/{steps}", env_id, str(path), kwargs, episodes)
            scored.append((score(summary_numbers(result)), steps, path, result))
        best = max(scored, key=lambda item: item[0])  # the first of equal scores: the earlier checkpoint
        _, steps, path, result = best
        numbers = summary_numbers(result)
        write_selection(run_dir, {
            "model": str(path.relative_to(run_dir)), "steps": steps, "seed": selection.seed, "episodes": episodes,
            **{key: numbers[key] for key in SELECTION_NUMBERS}, "candidates": [s for _, s, _, _ in scored]})
        rows = getup_rows if ENVIRONMENTS[env_id].task == "getup" else walk_rows
        rows += [{**comparison_row(r), "run": str(run_dir), "steps": s, "chosen": "←" if s == steps else ""}
                 for _, s, _, r in scored]
    notes = (f"{episodes} episodes per checkpoint, seeds from {selection.seed} (episode i: seed + i), the same for "
             "every checkpoint; disjoint from training (seeds in [0, 2^31)) and from the held-out evaluation of "
             "trained-residuals (seeds from 3000000000). ←: the checkpoint written to the run's selection.json.")
    keys = (Column("run", "run", text), Column("steps", "steps"), Column("chosen", "chosen", text))
    tables = []
    if getup_rows:
        tables.append(Table("Get-up checkpoints on the selection seeds", [*keys, *GETUP_COLUMNS, FALLS_COLUMN],
                            getup_rows, notes))
    if walk_rows:
        tables.append(Table("Walk checkpoints on the selection seeds", [*keys, *WALK_COLUMNS, FALLS_COLUMN],
                            walk_rows, notes))
    return tables
