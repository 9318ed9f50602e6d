"""``upright sweep SPACE.yml``: a study of training runs on Optuna, with the search-space
format, storage, worker and summary machinery of :mod:`upright.tuning` (``upright optimize``).

Every trial is a full ``upright train`` run (:func:`upright.training.train.train`) in its own run
folder ``OUT/runs/<env>/trial-<n>``, made from the space's ``train`` options, its ``set`` items, the
command line's ``--set`` items and the trial's sampled values; the equivalent ``upright train``
command is the run's ``command.txt`` and the trial's ``command`` user attribute.

The space file (``training/sweeps/*.yml``; its schema :class:`SweepSpace`, an unknown key an error
naming it)::

    train:      # upright train's options of every trial run: env_id, prior, algo, steps, n_envs,
                # seed, hyperparams_file, init, eval_every, eval_episodes, checkpoint_every, vec_env
    set:        # --set items held in every trial: env kwargs, reward_scales.*, params.*, hp.*
    eval_set:   # --eval-set items (the evaluation's environment, when it differs)
    objective:  # a learning-curve column (OBJECTIVES); default: success_rate (get-up), fall_rate (walk)
    prune:      # optional: {startup_trials: N, warmup_steps: S}, Optuna's median pruner
    params:     # the searched values, upright optimize's format (tuning.space.ParamSpec), named as
                # --set keys: hp.learning_rate, reward_scales.upright, residual_scale, params.period

The objective is measured on selection seeds, never on held-out ones: it is the ``objective``
column of the run's best periodic evaluation (``learning_curve.csv``, the row that
:func:`upright.training.callbacks.score` ranks first, which made ``best_model.zip``). Those
evaluations run on the training's evaluation seeds (``TrainConfig.eval_seed``, from 1000000), the
selection seeds that choose a run's best model, disjoint from the training episodes (below 2^31)
and from the held-out seeds (from 3000000000), which a sweep cannot reach. The best evaluation rather than a new
evaluation of the final model, because it is the number of the model that ``upright ship RUN
--model best`` ships, and it costs nothing beyond the training run's own evaluations. With
``prune``, each evaluation's ``objective`` is reported to Optuna and a run that its median pruner
stops is saved as it stands (the trial is PRUNED).

Storage as in :mod:`upright.tuning.storage`: SQLite in ``OUT`` by default, a journal file with
local ``--workers``, or a PostgreSQL URL that workers on many machines share; a worker killed
mid-run has its trial failed (heartbeat, or :func:`upright.tuning.storage.fail_orphans`) and
retried with the same values in a new run folder. Re-running the command (``--resume``: the study must exist) continues
the study up to ``--trials`` finished trials.
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from pydantic import Field, field_validator, model_validator
from stable_baselines3.common.callbacks import BaseCallback

from upright.envs.registration import ENVIRONMENTS
from upright.eval.results import score
from upright.eval.tables import Column, Table, jsonable, number, page_head, text
from upright.envs.schema import Schema, load_config
from upright.policies.run_folder import TrainConfig, read_learning_curve
from upright.training.config import choose_vec_env, next_run_dir, split_train_settings, usable_cores
from upright.training.train import OPTIONS as TRAIN_OPTIONS
from upright.training.train import TrainingFailed, TrainingInterrupted, train
from upright.training.train import resolve as resolve_run
from upright.tuning.space import SearchedParams
from upright.tuning.storage import (WORKER_ATTR, StudyWorkers, check_storage, continued_seed, default_storage,
                                    fail_orphans, open_storage, shown_storage, worker_id)
from upright.tuning.study import run_trials, run_workers
from upright.tuning.summary import write_plots, write_trials_csv

#: Learning-curve columns a sweep may optimise and whether more is better, per task.
OBJECTIVES = {
    "getup": {"success_rate": "maximize", "success_ci_low": "maximize", "stood_up_rate": "maximize",
              "falls": "minimize", "mean_return": "maximize"},
    "walk": {"fall_rate": "minimize", "falls": "minimize", "linear_tracking_error": "minimize",
             "yaw_tracking_error": "minimize", "vx": "maximize", "mean_return": "maximize"},
}
DEFAULT_OBJECTIVE = {"getup": "success_rate", "walk": "fall_rate"}
#: The selection numbers each trial records (the best evaluation's), per task.
SELECTION = {"getup": ("success_rate", "stood_up_rate", "falls", "mean_return"),
             "walk": ("fall_rate", "linear_tracking_error", "yaw_tracking_error", "vx", "mean_return")}


class SweepTrain(Schema):
    """A sweep space's ``train`` block: the ``upright train`` options of every trial run
    (:class:`TrainConfig` fields; a key left out: ``upright train``'s default)."""

    env_id: str
    prior: str | None = None
    algo: str | None = None
    steps: int | None = Field(None, ge=1)
    n_envs: int | None = Field(None, ge=1)
    seed: int | None = Field(None, ge=0)
    hyperparams_file: str | None = None
    init: str | None = None
    #: At least 1: the objective is the run's best periodic evaluation.
    eval_every: int | None = Field(None, ge=1)
    eval_episodes: int | None = Field(None, ge=1)
    checkpoint_every: int | None = Field(None, ge=1)
    vec_env: str | None = None

    @field_validator("env_id")
    @classmethod
    def _environment(cls, env_id: str) -> str:
        if env_id not in ENVIRONMENTS:
            raise ValueError(f"{env_id!r} is no environment; ids: {', '.join(ENVIRONMENTS)}")
        return env_id

    def options(self) -> dict[str, Any]:
        """The options the block gives, as :class:`TrainConfig` fields."""
        return self.model_dump(exclude_unset=True)


class Prune(Schema):
    """Optuna's median pruner of a sweep: no trial is pruned before ``startup_trials`` trials have
    finished, nor before ``warmup_steps`` environment steps of its run."""

    startup_trials: int = Field(5, ge=0)
    warmup_steps: int = Field(0, ge=0)


class SweepSpace(Schema):
    """A sweep's space file, its schema (see the module docstring): ValueError for an objective
    the task has no such number for, or a searched value also held fixed."""

    train: SweepTrain
    #: ``--set`` items held in every trial.
    settings: dict[str, Any] = Field(default_factory=dict, alias="set")
    #: ``--eval-set`` items (the evaluation's environment, when it differs).
    eval_settings: dict[str, Any] = Field(default_factory=dict, alias="eval_set")
    #: A learning-curve column of :data:`OBJECTIVES` (default: :data:`DEFAULT_OBJECTIVE` of the task).
    objective: str
    prune: Prune | None = None
    params: SearchedParams

    @model_validator(mode="before")
    @classmethod
    def _default_objective(cls, data: Any) -> Any:
        train = data.get("train") if isinstance(data, Mapping) else None
        env_id = train.get("env_id") if isinstance(train, Mapping) else None
        if isinstance(data, Mapping) and data.get("objective") is None and env_id in ENVIRONMENTS:
            return {**data, "objective": DEFAULT_OBJECTIVE[ENVIRONMENTS[env_id].task]}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> SweepSpace:
        if self.objective not in OBJECTIVES[self.task]:
            raise ValueError(f"objective {self.objective!r} is no {self.task} selection number; valid: "
                             f"{', '.join(OBJECTIVES[self.task])}")
        clash = sorted({p.name for p in self.params} & set(self.settings))
        if clash:
            raise ValueError(f"{clash[0]!r} is both searched (params) and held fixed (set)")
        return self

    @property
    def task(self) -> str:
        """The environment's task: ``getup`` or ``walk``."""
        return ENVIRONMENTS[self.train.env_id].task

    @property
    def direction(self) -> str:
        """Optuna's direction of the objective: ``maximize`` or ``minimize``."""
        return OBJECTIVES[self.task][self.objective]


@dataclass(frozen=True)
class SweepConfig(StudyWorkers):
    """One ``upright sweep`` run: ``trials`` counts the study's finished (complete or
    pruned) trials over every worker and run; ``settings`` are ``--set`` items held in every trial;
    ``resume``: the study must exist; ``out`` None: ``results/sweeps/<space file name>``; where
    the study lives and who works on it: :class:`~upright.tuning.storage.StudyWorkers`."""

    space: str
    trials: int = 20
    out: Path | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    resume: bool = False


@dataclass(frozen=True)
class SweepPlan:
    """A config resolved against its space: what every worker builds its trials from."""

    config: SweepConfig
    space: SweepSpace
    out: Path
    storage: str
    study_name: str


def load_sweep_space(path: str | Path) -> SweepSpace:
    """The sweep space in ``path``: ValueError naming a missing file, or what its schema refuses
    (an unknown key, an unknown environment, an objective the task has no such number for, a
    ``prune`` of the wrong form, a searched value also held fixed)."""
    return load_config(SweepSpace, path, "sweep space file")


def _shown(value: Any) -> str:
    """``value`` as ``--set`` parses it back."""
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(_shown(v) for v in value)
    return str(value)


def trial_config(plan: SweepPlan, values: dict[str, Any], name: str) -> TrainConfig:
    """The :class:`TrainConfig` of the trial run ``name`` with the sampled ``values`` (its
    ``command`` the equivalent ``upright train`` command line); a ``vec_env`` of ``auto`` is chosen
    for the trial's share of the machine's cores (usable cores over the local ``--workers``)."""
    space = plan.space
    train = space.train.options()
    if train.get("vec_env", "auto") == "auto":
        # The local workers share this machine's cores: each trial chooses for its share of them.
        share = max(1, usable_cores() // plan.config.workers)
        train["vec_env"] = choose_vec_env("auto", int(train.get("n_envs", TrainConfig.n_envs)), share)
    settings = {**space.settings, **plan.config.settings, **values}
    env_kwargs, hp = split_train_settings(settings)
    eval_env_kwargs, _ = split_train_settings(space.eval_settings)
    out = plan.out / "runs"
    words = ["upright", "train"]
    for key in SweepTrain.model_fields:
        if train.get(key) is not None:
            words += [TRAIN_OPTIONS[key], str(train[key])]
    words += ["--set", *[f"{k}={_shown(v)}" for k, v in settings.items()]] if settings else []
    words += ["--eval-set", *[f"{k}={_shown(v)}" for k, v in space.eval_settings.items()]] if space.eval_settings else []
    words += ["--out", str(out), "--name", name, "--no-progress"]
    return TrainConfig(**train, env_kwargs=env_kwargs, hp_overrides=hp, eval_env_kwargs=eval_env_kwargs,
                       out=str(out), name=name, progress=False, command=shlex.join(words))


def resolve(config: SweepConfig) -> SweepPlan:
    """Check ``config`` and its space (ValueError naming a bad value): the trial run with every
    searched value at the middle of its range must be one ``upright train`` accepts (this names an
    unknown hyperparameter, environment argument or reward term)."""
    if config.trials < 1 or config.workers < 1:
        raise ValueError(f"--trials and --workers must be >= 1, got {config.trials}, {config.workers}")
    if config.seed < 0:
        raise ValueError(f"--seed must be >= 0 (the sampler's seed), got {config.seed}")
    space = load_sweep_space(config.space)
    clash = sorted({p.name for p in space.params} & set(config.settings))
    if clash:
        raise ValueError(f"--set {clash[0]} fixes a searched value; drop it or edit the space")
    out = config.out or Path("results", "sweeps", Path(config.space).stem)
    storage = config.storage or default_storage(out, config.workers)
    check_storage(storage, config.workers)
    plan = SweepPlan(config=config, space=space, out=out, storage=storage,
                     study_name=config.study or Path(config.space).stem)
    middle = {p.name: math.sqrt(p.low * p.high) if p.log else (p.low + p.high) / 2 for p in space.params}
    try:
        resolve_run(trial_config(plan, middle, "check"))
    except ValueError as error:
        raise ValueError(f"{config.space}: {error}") from None
    return plan


def open_sweep(plan: SweepPlan, seed: int | None = None, *, create: bool = True) -> optuna.Study:
    """Create or load the study of ``plan`` (TPE sampler seeded ``seed``; the space and ``--set``
    items stored as a study attribute: a study of the same name made for another space is refused).
    ``create`` False: ValueError when the study does not exist."""
    config = plan.config
    storage = open_storage(plan.storage, heartbeat_interval=config.heartbeat_interval,
                           grace_period=config.grace_period, max_retry=config.max_retry)
    if not create and plan.study_name not in optuna.study.get_all_study_names(storage):
        raise ValueError(f"no study {plan.study_name!r} in {shown_storage(plan.storage)} to resume; "
                         "leave --resume out to start it")
    prune = plan.space.prune
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=prune.startup_trials, n_warmup_steps=prune.warmup_steps)
              if prune else optuna.pruners.NopPruner())
    study = optuna.create_study(study_name=plan.study_name, storage=storage, direction=plan.space.direction,
                                sampler=optuna.samplers.TPESampler(seed=continued_seed(
                                    storage, plan.study_name, config.seed if seed is None else seed)),
                                pruner=pruner, load_if_exists=True)
    space = plan.space
    identity = jsonable({"path": None, "train": space.train.options(), "settings": space.settings,
                         "eval_settings": space.eval_settings, "objective": space.objective,
                         "direction": space.direction, "prune": space.prune and space.prune.model_dump(),
                         "params": [asdict(p) for p in space.params], "cli_set": config.settings})
    stored = study.user_attrs.get("sweep")
    if stored is None:
        study.set_user_attr("sweep", identity)
    elif stored != identity:
        raise ValueError(f"study {plan.study_name!r} in {shown_storage(plan.storage)} was made for another sweep "
                         "space or --set items; pick another --study name or --out folder")
    return study


class Pruning(BaseCallback):
    """SB3 callback (after the run's :class:`~upright.training.callbacks.Evaluation`, on the same
    ``every`` steps): reports the objective of each new ``learning_curve.csv`` row to the trial and
    stops the training when Optuna's pruner says so (:attr:`pruned`)."""

    def __init__(self, trial: optuna.Trial, run_dir: Path, objective: str, every: int) -> None:
        super().__init__()
        self.trial, self.curve, self.objective, self.every = trial, run_dir / "learning_curve.csv", objective, every
        self.last = 0
        self.pruned = False

    def _on_step(self) -> bool:
        if self.num_timesteps - self.last < self.every:
            return True
        self.last = self.num_timesteps
        rows = read_learning_curve(self.curve)
        if not rows or rows[-1][self.objective] is None:
            return True
        self.trial.report(float(rows[-1][self.objective]), int(rows[-1]["steps"]))
        self.pruned = self.trial.should_prune()
        return not self.pruned


def best_evaluation(run_dir: Path) -> dict[str, float | None]:
    """The row of ``run_dir``'s ``learning_curve.csv`` that made ``best_model.zip`` (the first with
    the highest :func:`~upright.training.callbacks.score`); ValueError for a run without one."""
    rows = read_learning_curve(run_dir / "learning_curve.csv")
    if not rows:
        raise ValueError(f"run {str(run_dir)!r} has no evaluation in learning_curve.csv")
    return max(rows, key=score)


class SweepObjective:
    """The objective Optuna calls: one ``upright train`` run per trial, valued by its best
    evaluation's ``objective`` (see the module docstring). A run whose optimiser diverged fails its
    trial (recorded as the ``error`` attribute; not retried: the same values would diverge again), as
    does a sampled combination of values that ``upright train`` refuses (the error names it)."""

    def __init__(self, plan: SweepPlan) -> None:
        self.plan = plan

    def __call__(self, trial: optuna.Trial) -> float:
        plan, space = self.plan, self.plan.space
        trial.set_user_attr(WORKER_ATTR, worker_id())
        values = {p.name: trial.suggest_float(p.name, p.low, p.high, step=p.step, log=p.log) for p in space.params}
        config = trial_config(plan, values, f"trial-{trial.number}")
        run_dir = next_run_dir(config.out, config.env_id, config.algo, config.prior, config.name)
        trial.set_user_attr("run_dir", str(run_dir))
        trial.set_user_attr("command", config.command)
        try:
            resolve_run(config)
        except ValueError as error:
            # A sampled combination upright train refuses (e.g. a residual range too small for a
            # fixed initial residual) fails its trial, not the worker: the sweep goes on.
            trial.set_user_attr("error", str(error))
            return math.nan
        pruning = Pruning(trial, run_dir, space.objective, config.eval_every) if space.prune else None
        try:
            train(config, callbacks=[pruning] if pruning else [])
        except TrainingInterrupted:
            raise KeyboardInterrupt from None
        except TrainingFailed as failed:
            trial.set_user_attr("error", str(failed))
            return math.nan
        best = best_evaluation(run_dir)
        trial.set_user_attr("selection", {k: best[k] for k in SELECTION[space.task]})
        trial.set_user_attr("best_steps", int(best["steps"]))
        if pruning is not None and pruning.pruned:
            raise optuna.TrialPruned()
        return float(best[space.objective])


def _worker(plan: SweepPlan, index: int) -> None:
    """One local worker process: load the study and run trials until it has enough."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_sweep(plan, seed=plan.config.seed + index)
    run_trials(study, SweepObjective(plan), plan.config.trials, plan.config.max_retry)


def sweep(config: SweepConfig, *, run: bool = True, docs: Path | None = None, command: str | None = None
          ) -> dict[str, Any]:
    """Run (or continue) the sweep of ``config`` and write its summary to its output folder (and,
    with ``docs``, a results folder, the study's page there with ``command`` and its plots, see
    :func:`write_sweep_summary`); with ``run`` False only the summary of the trials so far. Ctrl-C fails and
    retries the running trials, writes the summary, then KeyboardInterrupt goes on. Returns the
    summary."""
    plan = resolve(config)
    study = open_sweep(plan, create=run and not config.resume)
    plan.out.mkdir(parents=True, exist_ok=True)
    interrupted = False
    if run:
        fail_orphans(study, None, config.max_retry, unnamed_after=config.grace_period)
        try:
            if config.workers == 1:
                run_trials(study, SweepObjective(plan), config.trials, config.max_retry)
            else:
                run_workers(study, partial(_worker, plan), config.workers, config.max_retry, "sweep")
        except KeyboardInterrupt:
            interrupted = True
    summary = write_sweep_summary(study, plan, docs=docs, command=command)
    if interrupted:
        raise KeyboardInterrupt
    return summary


def _significant(value: float | None) -> str:
    """A sampled value with 4 significant digits (learning rates span decades)."""
    return "" if value is None else f"{value:.4g}"


def ship_command(trial: FrozenTrial, study_name: str) -> str:
    """The command that ships ``trial``'s run (its best model) into the zoo."""
    return shlex.join(["upright", "ship", trial.user_attrs["run_dir"], "--name", f"{study_name}-trial-{trial.number}",
                       "--model", "best"])


def write_sweep_summary(study: optuna.Study, plan: SweepPlan, docs: Path | None = None,
                        command: str | None = None) -> dict[str, Any]:
    """Write ``summary.md`` / ``summary.json`` (every trial: parameters, selection numbers, run
    folder; the best trial and the command that ships it), ``trials.csv``, and Optuna's
    ``history.png`` and ``importance.png`` into the output folder; with ``docs`` (a results
    folder) also the page ``sweep-<study>.md`` there, headed by ``command`` and the machine, and the
    plots as ``<study>-history.png`` and ``<study>-importance.png`` in its ``sweeps`` folder; return
    the summary."""
    out, space = plan.out, plan.space
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    best = study.best_trial if complete else None
    numbers = SELECTION[space.task]
    rows = [{"number": t.number, "state": t.state.name.lower(), **t.params, **(t.user_attrs.get("selection") or {}),
             "best_steps": t.user_attrs.get("best_steps"), "run_dir": t.user_attrs.get("run_dir", ""),
             "worker": t.user_attrs.get(WORKER_ATTR, "")} for t in trials]
    columns = [Column("trial", "number"), Column("state", "state", text),
               *[Column(p.name, p.name, _significant) for p in space.params],
               *[Column(n + (" (objective)" if n == space.objective else ""), n, number(3)) for n in numbers],
               Column("best at step", "best_steps"), Column("run folder", "run_dir", text)]
    states = {s.name.lower(): sum(t.state == s for t in trials) for s in TrialState}
    ship = ship_command(best, plan.study_name) if best else None
    notes = (f"{states['complete']} complete, {states['pruned']} pruned, {states['fail']} failed trials; "
             f"objective: {space.direction} {space.objective} of each run's best evaluation on its selection seeds "
             f"(from {TrainConfig.eval_seed}); storage {shown_storage(plan.storage)}")
    table = Table(f"Sweep {plan.study_name}: every trial", columns, rows, notes=notes)
    plots = write_plots(study, out, [space.objective], f"{space.objective} (best evaluation)") if complete else {}
    write_trials_csv(study, out / "trials.csv", numbers="selection", attrs=("best_steps", "run_dir", "command"))
    summary = {"study": plan.study_name, "storage": shown_storage(plan.storage), "space": plan.config.space, "states": states,
               "objective": space.objective, "direction": space.direction,
               "best": {"number": best.number, "value": best.value, "params": best.params,
                        "selection": best.user_attrs.get("selection"), "run_dir": best.user_attrs.get("run_dir"),
                        "command": best.user_attrs.get("command")} if best else None,
               "ship": ship, "plots": plots, "table": table.to_json()}
    page = [f"# sweep {plan.study_name}", "", f"Space: `{plan.config.space}`.", "", table.markdown()]
    if best:
        page += [f"Best: trial {best.number}, {space.objective} {best.value:.4g}. Ship it with", "", "```", ship, "```", ""]
    (out / "summary.md").write_text("\n".join(page))
    (out / "summary.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
    if docs is not None:
        _write_docs_page(page, plots, plan, docs, command)
    return summary


def _write_docs_page(page: list[str], plots: dict[str, str], plan: SweepPlan, docs: Path, command: str | None) -> None:
    """The summary ``page`` as ``sweep-<study>.md`` in the results folder ``docs`` (with the command
    that wrote it and the machine) and the drawn ``plots`` in its ``sweeps`` folder."""
    figures = docs / "sweeps"
    figures.mkdir(parents=True, exist_ok=True)
    shown = []
    for name, skipped in plots.items():
        if not skipped:
            target = figures / f"{plan.study_name}-{name}"
            shutil.copyfile(plan.out / name, target)
            shown.append(f"![{name}](sweeps/{target.name})")
    head = page_head(f"sweep {plan.study_name}", command)
    (docs / f"sweep-{plan.study_name}.md").write_text("\n".join([*head, *page[2:], *shown, ""]))


__all__ = ["DEFAULT_OBJECTIVE", "OBJECTIVES", "SELECTION", "SweepConfig", "SweepObjective", "SweepPlan", "SweepSpace",
           "best_evaluation", "load_sweep_space", "open_sweep", "resolve", "ship_command", "sweep", "trial_config",
           "write_sweep_summary"]
