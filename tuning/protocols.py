"""The optimisation papers' measurements as protocols of ``upright experiment`` (see
:mod:`upright.eval.experiments`), each with its page ``docs/results/NAME.md`` (``--docs``):

* ``optimize-figure4``: the spline paper's Figure 4 for Wolfgang front and back: one study per
  sampler, objective and run (no hand-tuned trial enqueued, so the count starts from nothing), and
  per combination the trials to the first trial with a successful repetition (the paper's TTS), to
  the first with all repetitions successful, and the best mean time among fully successful trials.
* ``optimize-spline-thesis``: hand-tuned against optimised spline parameters, each direction
  evaluated with the environment's own metrics under the ``thesis`` conditions (turf + random
  pushes of up to 100 N). The optimised set is the best of a MOTPE/STH study (hand-tuned enqueued
  first) on turf.
* ``optimize-keyframe-competition``: the same for the keyframe stand-up on NAO, optimised and
  evaluated under ``competition`` (B-Human's hand-made compensation and balancer numbers against
  the optimised ones).
* ``optimize-workers``: trials per minute of one and of two local workers on one study in
  ``storage`` (a PostgreSQL URL), the same tiny trials for both.

The studies' budget and storage are options (``--set trials=50 repetitions=3 storage=URL``, the
defaults those of ``upright optimize``); ``--workers`` is the number of studies run side by side
(and of evaluation worker processes, or the worker counts measured: ``worker_counts``),
``--episodes`` the evaluation episodes per start (default 100) and ``--seed`` the studies' seed.
The other ``--set`` items (environment keyword arguments, ``params.*``) are held fixed in every
trial. Each study lives in its folder under ``--out``, so a re-run resumes the finished ones at
once. The module registers into :mod:`upright.eval.experiments`' registry from this layer (it runs
Optuna studies); ``upright experiment`` imports it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from upright.envs.residual import load_params_file
from upright.envs.registration import env_id
from upright.eval.experiments import ExperimentContext, Protocol, register_experiment
from upright.eval.runner import run_episodes
from upright.eval.tables import Column, Table, count, mean_min_max, number, rate, text
from upright.policies.builtin import ControllerPolicy
from upright.tuning.plan import OptimizeConfig
from upright.tuning.space import ParamSpec
from upright.tuning.study import SAMPLERS, START_ALIASES, open_study, optimize, resolve

#: The studies' budget and storage: the options every protocol here takes, with
#: ``upright optimize``'s defaults (``storage`` None: each study's own file in its folder).
BUDGET: dict[str, Any] = {"trials": 100, "repetitions": 3, "storage": None}

#: Evaluation episodes per start when ``--episodes`` is not given.
EPISODES = 100

#: A measurement: the tables of a protocol and the extra data it keeps in ``results.json``.
Measurement = Callable[[ExperimentContext], tuple[list[Table], dict[str, Any]]]


def measured(measure: Measurement) -> Protocol:
    """The protocol that runs ``measure`` and keeps its data, the options and its wall time (s)
    in ``results.json``."""
    @functools.wraps(measure)
    def protocol(ctx: ExperimentContext) -> list[Table]:
        started = time.perf_counter()
        tables, data = measure(ctx)
        ctx.data.update(options=dict(ctx.options), wall_seconds=time.perf_counter() - started, **data)
        return tables

    return protocol


def base_config(ctx: ExperimentContext) -> OptimizeConfig:
    """The settings every study of ``ctx`` shares: the budget and storage options, the optional
    ``conditions``, ``startup`` and ``start`` options, ``--seed``, ``--out`` and the ``--set``
    items held fixed; controller and robot are set per study."""
    options = ctx.options
    return OptimizeConfig(controller="", robot="", start=options.get("start"), conditions=options.get("conditions"),
                          trials=int(options["trials"]), repetitions=int(options["repetitions"]),
                          storage=options["storage"], seed=ctx.seed, out=ctx.out, startup=options.get("startup"),
                          settings=dict(ctx.settings), progress=False)


def _study(config: OptimizeConfig) -> dict[str, Any]:
    """One study's summary, with its wall time (s) added."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.perf_counter()
    summary = optimize(config)
    summary["wall_seconds"] = time.perf_counter() - started
    return summary


def _run_all(configs: list[OptimizeConfig], workers: int) -> list[dict[str, Any]]:
    """The studies ``configs``, ``workers`` of them side by side in worker processes."""
    if workers == 1:
        return [_study(c) for c in configs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_study, configs))


@register_experiment("optimize-figure4", "the spline paper's Figure 4: trials to success per sampler and objective",
                     options={**BUDGET, "samplers": ("motpe", "tpe", "cmaes", "random"),
                              "objectives": ("ST", "STH", "STP", "STHP"), "directions": ("front", "back"), "runs": 1,
                              "startup": 10, "conditions": None})
@measured
def figure4(ctx: ExperimentContext) -> tuple[list[Table], dict[str, Any]]:
    """Figure 4: per direction, sampler and objective the mean TTS and best time over ``runs``."""
    base, out, options = base_config(ctx), ctx.out, ctx.options
    samplers = ctx.option_names("samplers", SAMPLERS)
    objectives, directions = ctx.option_names("objectives"), ctx.option_names("directions")
    configs = []
    for direction in directions:
        for sampler in samplers:
            for objective in objectives:
                for run in range(int(options["runs"])):
                    configs.append(replace(base, controller="spline", robot="wolfgang", start=direction,
                                           sampler=sampler, objective=objective, seed=base.seed + run,
                                           startup=int(options["startup"]), hand_tuned=False, progress=False,
                                           out=out / f"{direction}-{sampler}-{objective}-{run}"))
    summaries = _run_all(configs, ctx.workers)
    rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for config, summary in zip(configs, summaries):
        rows.setdefault((config.start, config.sampler, config.objective), []).append(summary["measures"])

    def stat(values: list[Any]) -> dict[str, Any] | None:
        found = [v for v in values if v is not None]
        return {"mean": float(np.mean(found)), "min": float(min(found)), "max": float(max(found))} if found else None

    tables = []
    for direction in directions:
        table_rows = []
        for sampler in samplers:
            for objective in objectives:
                ms = rows[(direction, sampler, objective)]
                table_rows.append({
                    "sampler": sampler, "objective": objective,
                    "found_any": (sum(m["tts_any"] is not None for m in ms), len(ms)),
                    "tts_any": stat([m["tts_any"] for m in ms]),
                    "found_all": (sum(m["tts_all"] is not None for m in ms), len(ms)),
                    "tts_all": stat([m["tts_all"] for m in ms]),
                    "best_time": stat([m["best_time_all_success"] for m in ms])})
        tables.append(Table(
            f"Figure 4, Wolfgang {direction} ({'prone' if direction == 'front' else 'supine'})",
            [Column("sampler", "sampler"), Column("objective", "objective"),
             Column("runs finding ≥1 success", "found_any", count),
             Column("TTS: trials to ≥1 of the repetitions standing (mean / min / max)", "tts_any", mean_min_max(1)),
             Column("runs finding all-repetition success", "found_all", count),
             Column("trials to all repetitions standing", "tts_all", mean_min_max(1)),
             Column("best time, all repetitions standing (s)", "best_time", mean_min_max(2))],
            table_rows,
            notes=f"Budget per study: {base.trials} trials × {base.repetitions} repetitions (episodes, max "
                  f"{base.settings.get('max_episode_seconds', 10.0)} s each, turf), {options['runs']} run(s) per "
                  f"combination (the paper: 500 trials × 3 repetitions, 5 runs); {options['startup']} random startup "
                  "trials for every sampler; no hand-tuned trial. Time = the settle time (last |ω| > 0.05 rad/s), "
                  "as the paper's optimisation measures it. Run r of every combination has seed r, and Optuna draws "
                  "the random startup trials from the seed alone, so all samplers share their first "
                  f"{options['startup']} trials within a run (a TTS up to that is the same for all), and random "
                  "search does not depend on the objective."))
    return tables, {"studies": [{"config": {"start": c.start, "sampler": c.sampler, "objective": c.objective,
                                            "seed": c.seed}, "measures": s["measures"],
                                 "wall_seconds": s["wall_seconds"]} for c, s in zip(configs, summaries)]}


def _evaluate(env_id: str, policy: Any, env_kwargs: dict[str, Any], episodes: int, seed: int,
              workers: int) -> dict[str, Any]:
    """Success and stood-up counts, their times (s) and the per-episode values of ``episodes``
    episodes from ``seed`` (the ``--set`` items do not reach them: the evaluation's conditions are
    the protocol's)."""
    run = run_episodes(env_id, policy, episodes, env_kwargs=env_kwargs, seed=seed, workers=workers, progress=False)
    if run.interrupted:
        raise KeyboardInterrupt
    recs = run.records

    def spread(key: str, flag: str) -> dict[str, float] | None:
        values = [float(r[key]) for r in recs if r.get(flag) and r.get(key) is not None]
        return {"mean": float(np.mean(values)), "min": min(values), "max": max(values)} if values else None

    n = len(recs)
    return {"success": (sum(bool(r.get("success")) for r in recs), n),
            "stood_up": (sum(bool(r.get("stood_up")) for r in recs), n),
            "time_to_stand": spread("time_to_stand", "success"),
            "time_upright": spread("time_upright", "stood_up"),
            "episodes": [{k: r.get(k) for k in ("seed", "success", "stood_up", "time_to_stand", "time_upright",
                                                "falls")} for r in recs]}


def tuned_vs_hand(ctx: ExperimentContext, controller: str, robot: str, starts: tuple[str, ...],
                  optimise_conditions: str | None, eval_conditions: str, title: str
                  ) -> tuple[list[Table], dict[str, Any]]:
    """Per start: the best trial of a study (the hand-tuned set enqueued first) optimised under
    ``optimise_conditions`` (None: the space's), and the hand-tuned and optimised sets evaluated on
    ``--episodes`` episodes under ``eval_conditions``."""
    base, out, options, workers = base_config(ctx), ctx.out, ctx.options, ctx.workers
    episodes = ctx.episodes_or(EPISODES)
    configs = [replace(base, controller=controller, robot=robot, start=start, sampler=options["sampler"],
                       objective=options["objective"], conditions=optimise_conditions, hand_tuned=True,
                       progress=False, out=out / f"study-{start}") for start in starts]
    summaries = _run_all(configs, min(workers, len(configs)))
    rows, data = [], []
    eid = env_id(robot, "getup")
    for start, config, summary in zip(starts, configs, summaries):
        params = load_params_file(config.out / "best_params.yaml")
        env_kwargs = {"start": start, "conditions": eval_conditions}
        hand = _evaluate(eid, controller, env_kwargs, episodes, base.seed + 10_000, workers)
        rows.append({"start": start, "set": "hand-tuned", **hand})
        if summary["best"] and summary["best"]["hand_tuned"]:  # the same parameters: the same episodes
            rows.append({"start": start, "set": "optimised = hand-tuned (no better trial found)", **hand})
        else:
            policy = ControllerPolicy(controller, params=params, label=f"{controller}-optimised")
            rows.append({"start": start, "set": "optimised",
                         **_evaluate(eid, policy, env_kwargs, episodes, base.seed + 10_000, workers)})
        data.append({"start": start, "study": summary["study"], "best": summary["best"],
                     "hand_tuned_trial": summary["hand_tuned"], "wall_seconds": summary["wall_seconds"]})
    table = Table(title, [Column("start", "start"), Column("parameters", "set", text),
                          Column("success", "success", rate), Column("stood up", "stood_up", rate),
                          Column("time to stand (s, successes)", "time_to_stand", mean_min_max(2)),
                          Column("time upright (s, stood up)", "time_upright", mean_min_max(2))],
                  rows,
                  notes=f"Optimised: the best trial of a {options['sampler']}/{options['objective']} study "
                        f"({base.trials} trials × {base.repetitions} repetitions, "
                        f"{optimise_conditions or 'the space’s conditions'}, hand-tuned set enqueued first); "
                        f"evaluated on {episodes} episodes per start under `{eval_conditions}` "
                        f"(seeds {base.seed + 10_000}…) with the environment's metrics: success = stood up (upright, "
                        "head high, |ω| < 0.15 rad/s for 1 s) and no fall afterwards until the episode ends at 20 s; "
                        "stood up = upright with the head high at some time (the thesis's measure; under its pushes a "
                        "robot that stands may still be toppled); times from the episode start. Per-episode values in "
                        "results.json.")
    return [table], {"studies": data}


def random_params(params: Sequence[ParamSpec], rng: np.random.Generator) -> dict[str, float]:
    """One uniform draw of each of ``params`` (log-uniform with ``log``, on its grid with ``step``)."""
    values = {}
    for p in params:
        if p.log:
            value = float(np.exp(rng.uniform(np.log(p.low), np.log(p.high))))
        else:
            value = rng.uniform(p.low, p.high)
            if p.step:
                value = min(p.low + round((value - p.low) / p.step) * p.step, p.high)
        values[p.name] = float(value)
    return values


def worker_rates(counts: Sequence[str], trials: int, seed: int, storage: str,
                 start: Callable[[int, int], tuple[optuna.Study, Sequence[ParamSpec]]],
                 run: Callable[[int], None], per_seconds: float) -> list[dict[str, Any]]:
    """Finished trials per ``per_seconds`` for each worker count of ``counts``: ``start(k, count)``
    makes a fresh study in ``storage`` (a server URL) for the ``k``-th count (its own output folder:
    a count may come more than once) and returns it with its searched parameters, into which the same
    ``trials`` random parameter sets (drawn with ``seed``) are enqueued before ``run(count)`` works
    on it, so every count does the same trials. The rate is the finished trials over the span from
    the first start to the last end; ``wall`` (s) includes the workers' start-up; ``speedup`` is
    against the mean rate of the one-worker rows."""
    rows = []
    for k, count_ in enumerate(counts):
        count = int(count_)
        study, params = start(k, count)
        rng = np.random.default_rng(seed)
        for _ in range(trials):
            study.enqueue_trial(random_params(params, rng))
        started = time.perf_counter()
        run(count)
        wall = time.perf_counter() - started
        study = optuna.load_study(study_name=study.study_name, storage=storage)
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if not done:
            raise RuntimeError(f"no trial of the {count}-worker study {study.study_name!r} completed")
        span = (max(t.datetime_complete for t in done) - min(t.datetime_start for t in done)).total_seconds()
        rows.append({"workers": count, "trials": len(done), "span": span, "rate": per_seconds * len(done) / span,
                     "wall": wall, "numbers_unique": len({t.number for t in study.trials}) == len(study.trials)})
    single = [r["rate"] for r in rows if r["workers"] == 1]
    for row in rows:
        row["speedup"] = row["rate"] / float(np.mean(single)) if single else None
    return rows


def workers_table(title: str, rows: list[dict[str, Any]], rate_label: str, digits: int, notes: str) -> Table:
    """The table of :func:`worker_rates` rows, the rate column headed ``rate_label`` (e.g. "trials / minute")."""
    return Table(title, [
        Column("workers", "workers"), Column("trials", "trials"),
        Column("first start → last end (s)", "span", number(1)), Column(rate_label, "rate", number(digits)),
        Column("speed-up over 1 worker (mean of its rows)", "speedup", number(2)),
        Column("wall incl. start-up (s)", "wall", number(1))], rows, notes=notes)


def server_storage(name: str, storage: str | None) -> str:
    """``storage`` when it is a server URL; ValueError naming the protocol ``name`` otherwise."""
    if not storage or str(storage).startswith(("sqlite", "journal")):
        raise ValueError(f"{name} needs --set storage=URL with a server URL, e.g. postgresql://user@host/db")
    return str(storage)


@register_experiment("optimize-workers", "trials per minute of local workers on one PostgreSQL study",
                     options={**BUDGET, "start": "back", "worker_counts": (1, 2)})
@measured
def workers_speed(ctx: ExperimentContext) -> tuple[list[Table], dict[str, Any]]:
    """Trials per minute of each of ``worker_counts`` local workers on one study in ``storage``."""
    base, out = base_config(ctx), ctx.out
    storage = server_storage("optimize-workers", base.storage)
    configs: list[OptimizeConfig] = []

    def start(k: int, count: int) -> tuple[optuna.Study, Sequence[ParamSpec]]:
        configs.append(replace(base, controller="spline", robot="wolfgang", start=base.start, sampler="random",
                               objective="STH", workers=count, hand_tuned=False, progress=False,
                               study=f"workers-{count}-{time.time_ns()}", out=out / f"workers-{count}-{k}"))
        plan = resolve(configs[-1])
        return open_study(plan), plan.space.params

    rows = worker_rates(ctx.option_names("worker_counts"), base.trials, base.seed, storage, start,
                        lambda count: optimize(configs[-1]), 60.0)
    table = workers_table("Local workers on one PostgreSQL study", rows, "trials / minute", 1,
                          f"Spline on Wolfgang {base.start}: the same {base.trials} random parameter sets (seed "
                          f"{base.seed}) enqueued for each worker count, {base.repetitions} episode(s) per trial of at "
                          f"most {base.settings.get('max_episode_seconds', 10.0)} s; one more trial than asked may "
                          "start while the other worker finishes.")
    return [table], {"rows": rows}


@register_experiment("optimize-spline-thesis", "hand-tuned against optimised spline parameters on Wolfgang "
                     "under `thesis`", options={**BUDGET, "startup": None, "conditions": None,
                                                "directions": ("front", "back"), "sampler": "motpe", "objective": "STH"})
@measured
def spline_thesis(ctx: ExperimentContext) -> tuple[list[Table], dict[str, Any]]:
    """The spline on Wolfgang, optimised under ``conditions`` (the space's by default), evaluated
    under ``thesis``; ``directions`` front/back are the starts prone/supine."""
    starts = tuple(START_ALIASES.get(direction, direction) for direction in ctx.option_names("directions"))
    return tuned_vs_hand(ctx, "spline", "wolfgang", starts, ctx.options["conditions"], "thesis",
                         "Spline on Wolfgang under `thesis`: hand-tuned against optimised")


@register_experiment("optimize-keyframe-competition", "B-Human's keyframe compensation against optimised "
                     "parameters on NAO under `competition`",
                     options={**BUDGET, "startup": None, "starts": ("prone", "supine"), "sampler": "motpe",
                              "objective": "STH"})
@measured
def keyframe_competition(ctx: ExperimentContext) -> tuple[list[Table], dict[str, Any]]:
    """The keyframe stand-up on NAO, optimised and evaluated under ``competition``."""
    return tuned_vs_hand(ctx, "keyframe", "nao", ctx.option_names("starts"), "competition", "competition",
                         "Keyframe on NAO under `competition`: B-Human's compensation against optimised")


__all__ = ["BUDGET", "EPISODES", "base_config", "figure4", "keyframe_competition", "measured", "random_params",
           "server_storage", "spline_thesis", "tuned_vs_hand", "worker_rates", "workers_speed", "workers_table"]


