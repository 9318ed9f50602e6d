"""Ship a trained policy: ``upright ship RUN_DIR --name NAME`` copies one model of a run folder into
the user's zoo, ``policies/zoo/NAME/`` of the current project (or ``$UPRIGHT_ZOO/NAME/``, or
``--zoo DIR``; never the installed package's folder), with what rebuilds and reproduces it, and
writes its ``manifest.yml``. ``zoo:NAME`` looks in that zoo first, then in the package's.

A zoo entry is a run folder with one model: ``config.yml`` (environment id and keyword arguments,
prior, algorithm, hyperparameters, seed), ``command.txt``, ``model.zip``, ``vecnormalize.pkl`` when
the run normalised observations, ``learning_curve.csv``, ``sb3/`` (the model as plain SB3 loads it,
:mod:`upright.training.plain_sb3`) and ``manifest.yml``: the name, environment,
algorithm, training command, which model was taken (``best``: the best held-out evaluation during
training; ``final``; or ``selected``: the checkpoint that ``upright experiment checkpoint-selection``
chose on more selection episodes, named in the run's ``selection.json``) with its environment
steps, the run's total steps and wall-clock, the model-selection seeds, ``init`` (a fine-tuned
run's starting policy with its own training commands, steps and wall-clock, as the run recorded
them in ``init/record.yml`` when it started), and ``evaluation`` (written later by ``upright
experiment trained-residuals --docs``, on seeds disjoint from training and selection).
``zoo:NAME`` then loads it everywhere. The entry is assembled in a temporary folder beside it and
renamed into place, so a killed ``ship`` leaves the old entry or the new one, never half of one
(an old entry moved aside by a ``ship --overwrite`` killed before the new one was in place is put
back by the next ``ship`` of that name). One ``ship`` of a name runs at a time (the lock file
``.NAME.lock`` beside the entry).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from upright.eval.results import score
from upright.envs.files import read_yaml_mapping, writable_folder
from upright.policies.folders import locked, recover_folder, replace_folder, temporary_folder
from upright.policies.run import find_run_dir, load_run_policy, normalizer_path, resolve_run_path, user_zoo
from upright.policies.run_folder import (SELECTION_NUMBERS, TrainConfig, load_run_config, read_learning_curve,
                                         read_manifest, read_selection)
from upright.training.plain_sb3 import SB3_DIR, write_plain_sb3

#: A fine-tuning run's record of the policy it started from (written by ``upright train``).
INIT_RECORD = Path("init", "record.yml")

#: Largest model file that ships (bytes).
MAX_MODEL_BYTES = 5 * 1024 * 1024
MODELS = ("best", "final", "selected")


def _chosen_row(rows: list[dict[str, float | None]], model: str) -> dict[str, float | None] | None:
    """The learning-curve row of the chosen model: the best-scoring evaluation (the first of equal
    scores, as the training callback keeps it) or the last one."""
    if not rows:
        return None
    if model == "final":
        return rows[-1]
    best = rows[0]
    for row in rows[1:]:
        if score(row) > score(best):
            best = row
    return best


def ship(run_dir: str | Path, name: str, *, model: str = "best", zoo: str | Path | None = None,
         overwrite: bool = False) -> Path:
    """Copy ``model`` (``best``, ``final`` or ``selected``) of ``run_dir`` into the zoo as ``name``; return the
    entry's folder. The model is loaded with its normaliser first. ValueError names a bad run, model
    (one that does not load, too), name, a model over 5 MB or a zoo folder that cannot be written;
    :class:`~upright.policies.folders.FolderLocked` while another process ships the same entry."""
    run_dir = Path(run_dir)
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; choose one of {', '.join(MODELS)}")
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"zoo name {name!r} must be letters, digits, '-' and '_'")
    config = load_run_config(run_dir)
    rows = read_learning_curve(run_dir / "learning_curve.csv")
    if model == "selected":
        picked = read_selection(run_dir)
        source = run_dir / picked["model"]
        steps = int(picked["steps"])
        selection = {key: picked[key] for key in ("seed", "episodes", *SELECTION_NUMBERS)
                     if key in picked}  # older selection.json files lack the walk's numbers
        selection["by"] = "upright experiment checkpoint-selection"
    else:
        source = run_dir / ("best_model.zip" if model == "best" else "model.zip")
        chosen = _chosen_row(rows, model)
        steps = int(chosen["steps"]) if chosen else None
        selection = {"seed": config.eval_seed, "episodes": config.eval_episodes,
                     "success_rate": chosen.get("success_rate") if chosen else None}
    if not source.is_file():
        raise ValueError(f"run {str(run_dir)!r} has no {source.name}")
    if source.stat().st_size > MAX_MODEL_BYTES:
        raise ValueError(f"{source} is {source.stat().st_size / 2**20:.1f} MB; shipped models must be under 5 MB")
    load_run_policy(str(source))  # the model loads with its normaliser (a truncated file ships nowhere)
    started_from = None
    if config.init:  # runs from before init/record.yml: read from the policy itself, which must still be there
        record = run_dir / INIT_RECORD
        started_from = read_yaml_mapping(record, "init record") if record.is_file() else init_record(config.init)
    entry = (Path(zoo) if zoo is not None else user_zoo()) / name
    writable_folder(entry.parent, "zoo folder")
    entry.parent.mkdir(parents=True, exist_ok=True)
    with locked(entry.with_name(f".{name}.lock"), f"zoo entry {entry}"):
        recover_folder(entry)  # what a killed ship left: the old entry put back, its temporary folders removed
        if entry.exists() and not overwrite:
            raise ValueError(f"zoo entry {str(entry)!r} exists (pass overwrite=True / --overwrite to replace it)")
        building = temporary_folder(entry)
        building.mkdir()
        try:
            _assemble(building, source, run_dir, _manifest(name, config, run_dir, rows, model, steps, selection,
                                                           started_from))
            replace_folder(building, entry)  # --overwrite: the old entry leaves only once the new one is complete
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
    return entry


def _assemble(building: Path, source: Path, run_dir: Path, manifest: dict[str, Any]) -> None:
    """Copy the model ``source`` of ``run_dir`` (with its normaliser) and the run's files into the
    folder ``building``, write its plain-SB3 files (``sb3/``, :mod:`upright.training.plain_sb3`) and
    ``manifest``."""
    shutil.copyfile(source, building / "model.zip")
    if normalizer_path(source).is_file():
        shutil.copyfile(normalizer_path(source), building / "vecnormalize.pkl")
    for extra in ("config.yml", "command.txt", "learning_curve.csv"):
        if (run_dir / extra).is_file():
            shutil.copyfile(run_dir / extra, building / extra)
    write_plain_sb3(str(source), building / SB3_DIR)
    (building / "manifest.yml").write_text(yaml.safe_dump(manifest, sort_keys=False))


def _manifest(name: str, config: TrainConfig, run_dir: Path, rows: list[dict[str, float | None]], model: str,
              steps: int | None, selection: dict[str, Any], started_from: dict[str, Any] | None) -> dict[str, Any]:
    """The ``manifest.yml`` of the zoo entry ``name`` (the module docstring lists its keys)."""
    return {
        "name": name,
        "env_id": config.env_id,
        "env_kwargs": config.eval_kwargs_with_prior,
        "algo": config.algo,
        "training_commands": ((run_dir / "command.txt").read_text().strip().splitlines()
                              if (run_dir / "command.txt").is_file() else []),
        "seed": config.seed,
        "model": model,
        "model_steps": steps,
        "total_steps": int(rows[-1]["steps"]) if rows else None,
        "wall_seconds": round(float(rows[-1]["wall_seconds"]), 1) if rows else None,
        "selection": selection,
        "init": started_from,
        "version": config.version,
        "code": config.code,
        "shipped_from": str(run_dir),
        "evaluation": {},
    }


def init_record(init: str) -> dict[str, Any]:
    """What a fine-tuned run started from (``upright train --init``): the policy, its training
    commands, model steps and wall-clock, and its own ``init`` — read from its zoo manifest or its
    run folder, so the chain that trained a shipped policy stays in its manifest."""
    path = resolve_run_path(init)
    if (path / "manifest.yml").is_file():
        manifest = read_manifest(path)
        return {"policy": init, **{key: manifest.get(key) for key in (
            "training_commands", "model_steps", "total_steps", "wall_seconds", "init")}}
    run_dir = find_run_dir(path)
    assert run_dir is not None  # upright train checked it
    rows = read_learning_curve(run_dir / "learning_curve.csv")
    return {"policy": init,
            "training_commands": (run_dir / "command.txt").read_text().strip().splitlines(),
            "total_steps": int(rows[-1]["steps"]) if rows else None,
            "wall_seconds": round(float(rows[-1]["wall_seconds"]), 1) if rows else None,
            "init": load_run_config(run_dir).init}


__all__ = ["INIT_RECORD", "MAX_MODEL_BYTES", "MODELS", "init_record", "ship"]
