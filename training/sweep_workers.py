"""``upright experiment sweep-workers``: trials per hour of one and of several local workers on one
training sweep (:mod:`upright.training.sweep`) in a PostgreSQL study, the storage that workers on
many machines share. Every worker count trains the same trials: the same parameter sets, drawn with
``--seed``, are enqueued in a fresh study before its workers start. The rate is the finished trials
over the span from the first trial's start to the last one's end, so the workers' start-up is
outside it (the wall time with it is its own column). On a machine of ``c`` cores, ``w`` workers
can at best reach ``min(w, c)`` times one worker's rate, less what the trials' own processes
(vector environments, evaluations) already spread over the cores."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from upright.eval.experiments import ExperimentContext, register_experiment
from upright.eval.tables import Column, Table, number
from upright.training.sweep import SweepConfig, open_sweep, resolve, sweep
from upright.tuning.protocols import measured
from upright.tuning.space import ParamSpec

#: The measurement's space file: short whole training runs (see the file).
SPACE = Path(__file__).parent / "sweeps" / "sweep-workers.yml"


def _draw(param: ParamSpec, rng: np.random.Generator) -> float:
    """A uniform draw of ``param`` (log-uniform with ``log``, on its grid with ``step``)."""
    if param.log:
        return float(np.exp(rng.uniform(np.log(param.low), np.log(param.high))))
    value = rng.uniform(param.low, param.high)
    if param.step:
        value = param.low + round((value - param.low) / param.step) * param.step
    return float(min(value, param.high))


@register_experiment("sweep-workers", "trials per hour of local workers on one PostgreSQL training sweep",
                     options={"storage": None, "trials": 8, "worker_counts": (1, 2), "space": str(SPACE)})
@measured
def sweep_workers(ctx: ExperimentContext) -> tuple[list[Table], dict[str, Any]]:
    """Trials per hour of each of ``worker_counts`` local workers on a study of ``trials`` trials of
    ``space`` in ``storage`` (a server URL)."""
    options = ctx.options
    storage = options["storage"]
    if not storage or str(storage).startswith(("sqlite", "journal")):
        raise ValueError("sweep-workers needs --set storage=URL with a server URL, e.g. postgresql://user@host/db")
    trials = int(options["trials"])
    rows = []
    for count_ in ctx.option_names("worker_counts"):
        workers = int(count_)
        config = SweepConfig(space=str(options["space"]), trials=trials, workers=workers, storage=str(storage),
                             study=f"sweep-workers-{workers}-{time.time_ns()}", seed=ctx.seed,
                             out=ctx.out / f"workers-{workers}")
        plan = resolve(config)
        study = open_sweep(plan)
        rng = np.random.default_rng(ctx.seed)
        for _ in range(trials):
            study.enqueue_trial({p.name: _draw(p, rng) for p in plan.space.params})
        started = time.perf_counter()
        sweep(config)
        wall = time.perf_counter() - started
        study = optuna.load_study(study_name=plan.study_name, storage=plan.storage)
        done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if not done:
            raise RuntimeError(f"no trial of the {workers}-worker sweep completed; see {config.out}")
        span = (max(t.datetime_complete for t in done) - min(t.datetime_start for t in done)).total_seconds()
        rows.append({"workers": workers, "trials": len(done), "span": span, "per_hour": 3600.0 * len(done) / span,
                     "wall": wall, "numbers_unique": len({t.number for t in study.trials}) == len(study.trials)})
    single = [r["per_hour"] for r in rows if r["workers"] == 1]
    for row in rows:
        row["speedup"] = row["per_hour"] / float(np.mean(single)) if single else None
    table = Table("Local workers on one PostgreSQL training sweep", [
        Column("workers", "workers"), Column("trials", "trials"),
        Column("first start → last end (s)", "span", number(1)), Column("trials / hour", "per_hour", number(0)),
        Column("speed-up over 1 worker (mean of its rows)", "speedup", number(2)),
        Column("wall incl. start-up (s)", "wall", number(1))], rows,
        notes=f"The same {trials} parameter sets of `{Path(options['space']).name}` (seed {ctx.seed}) enqueued for "
              "each worker count; each trial a whole `upright train` run in its own process tree. One more trial "
              "than asked may start while another worker finishes.")
    return [table], {"rows": rows}


__all__ = ["SPACE", "sweep_workers"]
