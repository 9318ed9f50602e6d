"""The measurements behind ``docs/results/optimize.md``: ``upright optimize --measure NAME``.

* ``figure4``: the spline paper's Figure 4 for Wolfgang front and back: one study per sampler,
  objective and run (no hand-tuned trial enqueued, so the count starts from nothing), and per
  combination the trials to the first trial with a successful repetition (the paper's TTS), to the
  first with all repetitions successful, and the best mean time among fully successful trials.
* ``spline-thesis``: hand-tuned against optimised spline parameters, each direction evaluated with
  the environment's own metrics under the ``thesis`` conditions (turf + random pushes of up to 100 N).
  The optimised set is the best of a MOTPE/STH study (hand-tuned enqueued first) on turf.
* ``keyframe-competition``: the same for the keyframe stand-up on NAO, optimised and evaluated under
  ``competition`` (B-Human's hand-made compensation and balancer numbers against the optimised ones).
* ``workers``: trials per minute of one and of two local workers on one study in ``--storage``
  (a PostgreSQL URL), the same tiny trials for both.

Each writes ``OUT/<name>/results.json`` + ``results.md``; with ``--docs`` the parts found in OUT are
collected into ``docs/results/optimize.md``. Options come as ``--set KEY=VALUE`` (see
:data:`OPTIONS`); ``--trials``, ``--repetitions``, ``--workers`` (studies run side by side, or the
workers measured), ``--episodes`` and ``--seed`` keep their meaning.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import optuna
from optuna.trial import TrialState

from upright.envs.base import load_params_file
from upright.envs.registration import env_id
from upright.eval.runner import run_episodes
from upright.eval.tables import Column, Table, count, jsonable, mean_min_max, number, rate, text, write_tables
from upright.policies.builtin import ControllerPolicy
from upright.training.optimize.study import OptimizeConfig, open_study, optimize, resolve

#: ``--set`` options per measurement, with defaults.
OPTIONS: dict[str, dict[str, Any]] = {
    "figure4": {"samplers": ("motpe", "tpe", "cmaes", "random"), "objectives": ("ST", "STH", "STP", "STHP"),
                "directions": ("front", "back"), "runs": 1, "startup": 10},
    "spline-thesis": {"directions": ("front", "back"), "sampler": "motpe", "objective": "STH"},
    "keyframe-competition": {"starts": ("prone", "supine"), "sampler": "motpe", "objective": "STH"},
    "workers": {"worker_counts": (1, 2)},
}
PARTS = tuple(OPTIONS)


def _options(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    known = OPTIONS[name]
    unknown = set(settings) - set(known)
    if unknown:
        raise ValueError(f"unknown --set option(s) {sorted(unknown)} for --measure {name}; valid: {', '.join(known)}")
    out = dict(known)
    for key, value in settings.items():
        out[key] = tuple(value) if isinstance(known[key], tuple) and isinstance(value, (tuple, list)) else \
            ((value,) if isinstance(known[key], tuple) else value)
    return out


def _study(config: OptimizeConfig) -> dict[str, Any]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    started = time.perf_counter()
    summary = optimize(config)
    summary["wall_seconds"] = time.perf_counter() - started
    return summary


def _run_all(configs: list[OptimizeConfig], workers: int) -> list[dict[str, Any]]:
    if workers == 1:
        return [_study(c) for c in configs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_study, configs))


def figure4(out: Path, base: OptimizeConfig, options: dict[str, Any], workers: int) -> tuple[list[Table], Any]:
    """Figure 4: per direction, sampler and objective the mean TTS and best time over ``runs``."""
    configs = []
    for direction in options["directions"]:
        for sampler in options["samplers"]:
            for objective in options["objectives"]:
                for run in range(int(options["runs"])):
                    configs.append(replace(base, controller="spline", robot="wolfgang", start=direction,
                                           sampler=sampler, objective=objective, seed=base.seed + run,
                                           startup=int(options["startup"]), hand_tuned=False, progress=False,
                                           out=out / f"{direction}-{sampler}-{objective}-{run}"))
    summaries = _run_all(configs, workers)
    rows: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for config, summary in zip(configs, summaries):
        rows.setdefault((config.start, config.sampler, config.objective), []).append(summary["measures"])

    def stat(values: list[Any]) -> dict[str, Any] | None:
        found = [v for v in values if v is not None]
        return {"mean": float(np.mean(found)), "min": float(min(found)), "max": float(max(found))} if found else None

    tables = []
    for direction in options["directions"]:
        table_rows = []
        for sampler in options["samplers"]:
            for objective in options["objectives"]:
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


def _tuned_vs_hand(out: Path, base: OptimizeConfig, controller: str, robot: str, starts: tuple[str, ...],
                   optimise_conditions: str | None, eval_conditions: str, options: dict[str, Any],
                   episodes: int, workers: int, title: str) -> tuple[list[Table], Any]:
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


def workers_speed(out: Path, base: OptimizeConfig, options: dict[str, Any]) -> tuple[list[Table], Any]:
    """Trials per minute of 1 and 2 local workers on one study in ``base.storage``."""
    if not base.storage or base.storage.startswith(("sqlite", "journal")):
        raise ValueError("--measure workers needs --storage with a server URL, e.g. postgresql://user@host/db")
    rows = []
    for count_ in options["worker_counts"]:
        config = replace(base, controller="spline", robot="wolfgang", start=base.start or "back", sampler="random",
                         objective="STH", workers=int(count_), hand_tuned=False, progress=False,
                         study=f"workers-{count_}-{int(time.time())}", out=out / f"workers-{count_}")
        # The same parameter sets for every worker count (drawn with the seed), enqueued before the
        # workers start: both runs do the same episodes.
        plan = resolve(config)
        study = open_study(plan)
        rng = np.random.default_rng(base.seed)
        for _ in range(base.trials):
            study.enqueue_trial({p.name: float(np.exp(rng.uniform(np.log(p.low), np.log(p.high))) if p.log
                                               else rng.uniform(p.low, p.high)) for p in plan.space.params})
        started = time.perf_counter()
        optimize(config)
        wall = time.perf_counter() - started
        study = optuna.load_study(study_name=config.study, storage=config.storage)
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        first = min(t.datetime_start for t in done)
        last = max(t.datetime_complete for t in done)
        span = (last - first).total_seconds()
        rows.append({"workers": int(count_), "trials": len(done), "span": span,
                     "per_minute": 60.0 * len(done) / span, "wall": wall,
                     "numbers_unique": len({t.number for t in study.trials}) == len(study.trials)})
    single = [r["per_minute"] for r in rows if r["workers"] == 1]
    for row in rows:
        row["speedup"] = row["per_minute"] / float(np.mean(single)) if single else None
    table = Table("Local workers on one PostgreSQL study", [
        Column("workers", "workers"), Column("trials", "trials"),
        Column("first start → last end (s)", "span", number(1)), Column("trials / minute", "per_minute", number(1)),
        Column("speed-up over 1 worker (mean of its rows)", "speedup", number(2)), Column("wall incl. start-up (s)", "wall", number(1))], rows,
        notes=f"Spline on Wolfgang {base.start or 'back'}: the same {base.trials} random parameter sets (seed "
              f"{base.seed}) enqueued for each worker count, {base.repetitions} episode(s) per trial of at most "
              f"{base.settings.get('max_episode_seconds', 10.0)} s; one more trial than asked may start while "
              "the other worker finishes.")
    return [table], {"rows": rows}


def measure(name: str, base: OptimizeConfig, settings: dict[str, Any], *, episodes: int, workers: int,
            docs: bool, command: str | None = None) -> list[Table]:
    """Run measurement ``name`` (see the module docstring) into ``base.out / name``."""
    if name not in OPTIONS:
        raise ValueError(f"unknown measurement {name!r}; valid: {', '.join(PARTS)}")
    options = _options(name, settings)
    out = base.out / name
    runs: dict[str, Callable[[], tuple[list[Table], Any]]] = {
        "figure4": lambda: figure4(out, base, options, workers),
        "spline-thesis": lambda: _tuned_vs_hand(
            out, base, "spline", "wolfgang", tuple("prone" if d == "front" else "supine" if d == "back" else d
                                                   for d in options["directions"]),
            base.conditions, "thesis", options, episodes, workers,
            "Spline on Wolfgang under `thesis`: hand-tuned against optimised"),
        "keyframe-competition": lambda: _tuned_vs_hand(
            out, base, "keyframe", "nao", tuple(options["starts"]), "competition", "competition", options,
            episodes, workers, "Keyframe on NAO under `competition`: B-Human's compensation against optimised"),
        "workers": lambda: workers_speed(out, base, options),
    }
    started = time.perf_counter()
    tables, data = runs[name]()
    data = {"options": options, "wall_seconds": time.perf_counter() - started, **jsonable(data)}
    write_tables(tables, out, f"optimize {name}", command=command, data=data)
    if docs:
        write_docs(base.out)
    return tables


def write_docs(out: Path, path: Path = Path("docs/results/optimize.md")) -> Path:
    """Collect the measurements found in ``out`` into ``path`` (one page, the commands included)."""
    page = ["# upright optimize: measurements", "",
            "Generated by `upright optimize --measure NAME --docs` (training/optimize/measure.py); each part "
            "names the command that produced it and the machine it ran on.", ""]
    for name in PARTS:
        result = out / name / "results.md"
        if not result.is_file():
            continue
        wall = json.loads((out / name / "results.json").read_text())["data"].get("wall_seconds", 0.0)
        lines = result.read_text().splitlines()
        page += [f"#{lines[0]}", *lines[1:], "",
                 f"Wall time of this command's last run: {wall / 60:.1f} min (studies already finished in OUT "
                 "resume at once, so a re-run to regenerate the tables is quick).", ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(page) + "\n")
    return path


__all__ = ["OPTIONS", "PARTS", "figure4", "measure", "workers_speed", "write_docs"]
