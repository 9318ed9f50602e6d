"""The optimisation loop: a study per controller, robot, start, sampler and objective; trials that
run ``repetitions`` episodes through the shared runner; local worker processes.

See :func:`optimize` and ``docs/optimize.md``.
"""

from __future__ import annotations

import logging
import multiprocessing
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import partial
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from upright.baselines import baseline_entry, default_params
from upright.envs.registration import env_id
from upright.eval.runner import check_episodes, run_episodes
from upright.eval.settings import split_settings
from upright.policies.builtin import ControllerPolicy
from upright.tuning.objectives import (DEFAULT_OBJECTIVE, GetUpScore, episode_succeeded,
                                       mean_components, parse_objective)
from upright.tuning.plan import OptimizeConfig, Plan
from upright.tuning.space import load_space
from upright.tuning.storage import (WORKER_ATTR, check_storage, continued_seed, default_storage,
                                    fail_and_retry, fail_orphans, open_storage, retry_callback, shown_storage,
                                    worker_id)
from upright.tuning.summary import write_summary

SAMPLERS = ("tpe", "motpe", "cmaes", "random")
#: ``--start`` aliases of the paper's directions.
START_ALIASES = {"front": "prone", "back": "supine"}


def resolve(config: OptimizeConfig) -> Plan:
    """Check ``config`` and resolve the space, environment, objective and storage (ValueError
    naming a bad value)."""
    if config.sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {config.sampler!r}; valid samplers: {', '.join(SAMPLERS)}")
    if config.trials < 1 or config.repetitions < 1 or config.workers < 1:
        raise ValueError(f"--trials, --repetitions and --workers must be >= 1, got {config.trials}, "
                         f"{config.repetitions}, {config.workers}")
    if config.seed < 0:
        raise ValueError(f"--seed must be >= 0 (the sampler's seed and the first episode seed), got {config.seed}")
    task = baseline_entry(config.controller).task
    space = load_space(config.controller, config.robot, config.space)
    start = START_ALIASES.get(config.start, config.start)
    if task == "walk" and start is not None:
        raise ValueError(f"--start is for get-up controllers; {config.controller!r} walks")
    if task == "getup":
        start = start or "prone"
        space = space.for_start(start)
    env_settings, param_settings = split_settings(config.settings)
    env_kwargs = {**space.env, **({"start": start} if task == "getup" else {}), **env_settings}
    if config.conditions is not None:
        env_kwargs["conditions"] = config.conditions
    searched = {p.name for p in space.params}
    clash = searched & set(param_settings)
    if clash:
        raise ValueError(f"--set params.{sorted(clash)[0]} fixes a searched parameter; drop it or edit the space")
    fixed = {**space.fixed, **param_settings}
    letters = (config.objective or space.objective or DEFAULT_OBJECTIVE[task]).upper()
    names = parse_objective(letters, task)
    storage = config.storage or default_storage(config.out, config.workers)
    check_storage(storage, config.workers)
    label = start or "walk"
    study_name = config.study or f"{config.controller}-{config.robot}-{label}-{config.sampler}-{letters}"
    return Plan(config=config, space=replace(space, fixed=fixed), env_id=env_id(config.robot, task),
                env_kwargs=env_kwargs, fixed=fixed, objective=names, objective_letters=letters,
                multi=config.sampler == "motpe", storage=storage, study_name=study_name)


def check_plan(plan: Plan) -> None:
    """Build the study's environment and controller once, with the fixed parameters and every
    searched one at the middle of its range: ValueError naming a bad environment setting
    (``--conditions``, ``--start``, ``--set KEY=VALUE``) or parameter name (``--set params.KEY``, the
    space's), before the study opens. Inside a trial a ValueError is the controller failing on its
    parameters (the worst score); a setting that fails every trial must not get that far."""
    middle = {p.name: (p.low + p.high) / 2 for p in plan.space.params}
    policy = ControllerPolicy(plan.config.controller, params=plan.space.overrides(middle))
    check_episodes(plan.env_id, policy, plan.env_kwargs, seed=plan.config.seed)


def make_sampler(plan: Plan, seed: int) -> optuna.samplers.BaseSampler:
    """The sampler of ``plan`` seeded with ``seed``. Startup trials (random before the model):
    ``--startup`` or TPE 10, MOTPE 11·k − 1 (k objectives, the paper's default), CMA-ES 1."""
    startup = plan.config.startup
    if plan.config.sampler == "tpe":
        return optuna.samplers.TPESampler(n_startup_trials=10 if startup is None else startup, seed=seed,
                                          multivariate=False)
    if plan.config.sampler == "motpe":
        k = len(plan.objective)
        return optuna.samplers.TPESampler(n_startup_trials=11 * k - 1 if startup is None else startup, seed=seed)
    if plan.config.sampler == "cmaes":
        return optuna.samplers.CmaEsSampler(n_startup_trials=1 if startup is None else startup, seed=seed,
                                            warn_independent_sampling=False)
    return optuna.samplers.RandomSampler(seed=seed)


def _pruner(plan: Plan) -> optuna.pruners.BasePruner:
    if plan.config.prune and not plan.multi:
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)
    return optuna.pruners.NopPruner()


def open_study(plan: Plan, seed: int | None = None) -> optuna.Study:
    """Create or load the study of ``plan`` (its settings stored as study attributes; a study of the
    same name made for something else is refused)."""
    storage = open_storage(plan.storage, heartbeat_interval=plan.config.heartbeat_interval,
                           grace_period=plan.config.grace_period, max_retry=plan.config.max_retry)
    directions = ["minimize"] * (len(plan.objective) if plan.multi else 1)
    study = optuna.create_study(study_name=plan.study_name, storage=storage, directions=directions,
                                sampler=make_sampler(plan, continued_seed(
                                    storage, plan.study_name, plan.config.seed if seed is None else seed)),
                                pruner=_pruner(plan), load_if_exists=True)
    identity = {"controller": plan.config.controller, "robot": plan.config.robot,
                "env_id": plan.env_id, "start": plan.env_kwargs.get("start"), "objective": plan.objective_letters,
                "sampler": plan.config.sampler, "repetitions": plan.config.repetitions}
    stored = study.user_attrs
    if stored.get("identity") is None:
        study.set_user_attr("identity", identity)
        study.set_user_attr("objective_names", list(plan.objective))
        study.set_user_attr("space", [asdict(p) for p in plan.space.params])
        study.set_user_attr("fixed", plan.fixed)
        study.set_user_attr("env_kwargs", {k: v for k, v in plan.env_kwargs.items()})
    elif stored["identity"] != identity:
        raise ValueError(f"study {plan.study_name!r} in {shown_storage(plan.storage)} was made for "
                         f"{stored['identity']}, not {identity}; pick another --study name or --out folder")
    if study.metric_names is None:  # also a study made before the names were set
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(metric_names(plan))
    return study


def metric_names(plan: Plan) -> list[str]:
    """The objective names a study of ``plan`` carries (``study.set_metric_names``; optuna-dashboard
    shows them): each component of a multi-objective study, the sum of a single one's."""
    return list(plan.objective) if plan.multi else [" + ".join(plan.objective)]


class TrialProgress:
    """A progress bar (tqdm, the terminal's width) over a study's finished trials, complete or
    pruned, of every worker, with the time left and a single objective's best value so far;
    :meth:`update` reads the count from the study (an Optuna callback, or a poll while workers run)."""

    def __init__(self, study: optuna.Study, total: int, label: str) -> None:
        from tqdm import tqdm  # only with a progress bar

        self.study = study
        self.bar = tqdm(total=total, initial=min(_finished(study), total), desc=label, unit="trial",
                        dynamic_ncols=True)

    def update(self, *_: Any) -> None:
        done = min(_finished(self.study), self.bar.total)
        if done != self.bar.n:
            if len(self.study.directions) == 1:
                try:
                    self.bar.set_postfix_str(f"best {self.study.best_value:.3g}", refresh=False)
                except ValueError:  # no complete trial yet
                    pass
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


class TrialObjective:
    """The objective function Optuna calls: suggest, run ``repetitions`` episodes, score.

    Repetition r of trial n is seeded ``seed + n·repetitions + r`` (every trial meets new terrain and
    noise, as in the paper). With ``--prune`` (single objective only) the running mean score is
    reported after each repetition and Optuna's median pruner may stop the trial.
    """

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.task = "getup" if plan.space.task == "getup" else "walk"
        self.rules = plan.space.trial if self.task == "getup" else None

    def __call__(self, trial: optuna.Trial) -> float | tuple[float, ...]:
        plan, config = self.plan, self.plan.config
        trial.set_user_attr(WORKER_ATTR, worker_id())
        with warnings.catch_warnings():
            # Trial 0 holds the hand-tuned values, which need not lie on the space's grid.
            warnings.filterwarnings("ignore", message="Fixed parameter", category=UserWarning)
            values = plan.space.suggest(trial)
        policy = ControllerPolicy(config.controller, params=plan.space.overrides(values))
        observers = [GetUpScore(self.rules)] if self.rules is not None else []
        records: list[dict[str, Any]] = []
        started = time.perf_counter()
        for r in range(config.repetitions):
            seed = config.seed + trial.number * config.repetitions + r
            try:
                run = run_episodes(plan.env_id, policy, 1, env_kwargs=plan.env_kwargs, seed=seed, progress=False,
                                   observers=observers)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError) as error:
                # Parameters the controller cannot execute (IK out of reach and similar): the worst score.
                trial.set_user_attr("error", f"{type(error).__name__}: {error}")
                records.append(self._worst())
                continue
            if run.interrupted:
                raise KeyboardInterrupt
            records.extend(run.records)
            if config.prune and not plan.multi:
                trial.report(self._score(mean_components(self.task, records)), step=r)
                if trial.should_prune():
                    self._record(trial, records, started)
                    raise optuna.TrialPruned()
        comps = self._record(trial, records, started)
        return tuple(comps[n] for n in plan.objective) if plan.multi else self._score(comps)

    def _score(self, comps: dict[str, float]) -> float:
        return float(sum(comps[n] for n in self.plan.objective))

    def _worst(self) -> dict[str, Any]:
        if self.task == "getup":
            return {"opt_success": False, "opt_settle_time": 10.0, "opt_min_pitch_deg": 90.0, "opt_max_head_m": 0.0,
                    "opt_end": "error"}
        return {"falls": 1, "linear_tracking_error": 1e3, "yaw_tracking_error": 1e3, "mean_velocity": (0, 0, 0),
                "command": self.plan.env_kwargs.get("command", (0.0, 0.0, 0.0))}

    def _record(self, trial: optuna.Trial, records: list[dict[str, Any]], started: float) -> dict[str, float]:
        comps = mean_components(self.task, records)
        successes = [episode_succeeded(self.task, r) for r in records]
        trial.set_user_attr("components", comps)
        trial.set_user_attr("successes", int(sum(successes)))
        trial.set_user_attr("episodes", len(records))
        trial.set_user_attr("wall_seconds", round(time.perf_counter() - started, 3))
        if self.task == "getup":
            times = [float(r["opt_settle_time"]) for r, ok in zip(records, successes) if ok]
            trial.set_user_attr("settle_times", times)
            trial.set_user_attr("ends", [r.get("opt_end") for r in records])
        return comps


def _worker(plan: Plan, index: int) -> None:
    """One local worker process: load the study and run trials until the study has enough."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(plan, seed=plan.config.seed + index)
    run_trials(study, TrialObjective(plan), plan.config.trials, plan.config.max_retry)


def _finished(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))


def run_trials(study: optuna.Study, objective: Callable[[optuna.Trial], Any], trials: int, max_retry: int,
               progress: TrialProgress | None = None) -> None:
    """Run ``objective`` on trials of ``study`` until it has ``trials`` finished ones (complete or
    pruned, over every worker), advancing ``progress`` after each; on Ctrl-C the running trial is
    failed (by Optuna) and enqueued again (at most ``max_retry`` times), then the interrupt goes on."""
    if _finished(study) >= trials:
        return
    callbacks = [optuna.study.MaxTrialsCallback(trials, states=(TrialState.COMPLETE, TrialState.PRUNED))]
    if progress is not None:
        callbacks.append(progress.update)
    try:
        study.optimize(objective, callbacks=callbacks, gc_after_trial=False)
    except KeyboardInterrupt:
        # Optuna has failed the running trial; enqueue it again (a killed worker's trial gets the
        # same from the heartbeat or from fail_orphans).
        mine = [t for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL, TrialState.RUNNING))
                if t.user_attrs.get(WORKER_ATTR) == worker_id()]
        if mine:
            last = max(mine, key=lambda t: t.number)
            if last.state == TrialState.RUNNING:
                fail_and_retry(study, last, max_retry)
            else:
                retry_callback(max_retry)(study, last)
        raise


def optimize(config: OptimizeConfig) -> dict[str, Any]:
    """Run (or resume) the study of ``config`` and write its summary to ``config.out``.

    The hand-tuned parameters are enqueued first in a new study (unless ``hand_tuned`` is False).
    With ``workers`` > 1, that many local processes share the study; a worker that dies has its
    running trial failed and retried.
    Ctrl-C stops every worker after failing (and enqueuing again) the running trials; the summary
    of the trials so far is written, then KeyboardInterrupt goes on. Returns the summary (see
    :func:`upright.tuning.summary.summarize`).
    """
    plan = resolve(config)
    check_plan(plan)
    # Optuna's INFO line per trial holds the whole parameter dict: the progress bar says what it did.
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(plan)  # a storage that cannot be opened fails here, before --out exists
    config.out.mkdir(parents=True, exist_ok=True)
    # Trials left running by dead processes of this machine: failed and retried now (the heartbeat
    # would catch them later, but not one killed before its first beat, nor a journal's).
    fail_orphans(study, None, config.max_retry, unnamed_after=config.grace_period)
    if config.hand_tuned and not study.trials:
        study.enqueue_trial(plan.space.hand_tuned(default_params(config.controller, config.robot)),
                            user_attrs={"hand_tuned": True}, skip_if_exists=True)
    interrupted = False
    progress = (TrialProgress(study, config.trials, f"optimize {config.controller} {config.robot}")
                if config.progress else None)
    try:
        if config.workers == 1:
            run_trials(study, TrialObjective(plan), config.trials, config.max_retry, progress)
        else:
            run_workers(study, partial(_worker, plan), config.workers, config.max_retry, "optimize",
                        progress.update if progress is not None else None)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if progress is not None:
            progress.close()
    summary = write_summary(optuna.load_study(study_name=plan.study_name, storage=open_storage(plan.storage)), plan,
                            interrupted=interrupted)
    if interrupted:
        raise KeyboardInterrupt
    return summary


def run_workers(study: optuna.Study, worker: Callable[[int], None], workers: int, max_retry: int,
                label: str, poll: Callable[[], None] | None = None) -> None:
    """Start ``workers`` processes running ``worker(index)`` (picklable: a module function or a
    partial of one) on the study and wait, calling ``poll`` (e.g. a progress bar's update) about
    every half second; fail and retry (at most ``max_retry`` times) the running trials of any that
    die (needed for the journal file, which has no heartbeat). ``label`` names the processes
    (``LABEL-worker-I``)."""
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=worker, args=(i,), name=f"{label}-worker-{i}") for i in range(workers)]
    for p in processes:
        p.start()
    try:
        alive = list(processes)
        while alive:
            for p in list(alive):
                p.join(timeout=0.5)
                if p.exitcode is not None:
                    alive.remove(p)
                    if p.exitcode != 0:
                        logging.getLogger(__name__).warning("worker %s (pid %s) ended with code %s", p.name, p.pid,
                                                            p.exitcode)
                        fail_orphans(study, {worker_id(p.pid)}, max_retry)
            if poll is not None:
                poll()
    except KeyboardInterrupt:
        for p in processes:
            p.join(timeout=30)
        fail_orphans(study, {worker_id(p.pid) for p in processes}, max_retry)
        raise


__all__ = ["SAMPLERS", "START_ALIASES", "TrialObjective", "TrialProgress", "check_plan",
           "make_sampler", "metric_names", "open_study", "optimize", "resolve", "run_trials", "run_workers"]
