"""``upright experiment sweep-workers``: trials per hour of one and of several local workers on one
training sweep (:mod:`upright.training.sweep`) in a PostgreSQL study, the storage that workers on
many machines share. Every worker count trains the same trials: the same parameter sets, drawn with
``--seed``, are enqueued in a fresh study before its workers start (the measurement of
``optimize-workers``, :func:`upright.tuning.protocols.worker_rates`). On a machine of ``c`` cores,
``w`` workers can at best reach ``min(w, c)`` times one worker's rate, less what the trials' own
processes (vector environments, evaluations) already spread over the cores."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna

from upright.eval.experiments import ExperimentContext, register_experiment
from upright.eval.tables import Table
from upright.training.sweep import SweepConfig, open_sweep, resolve, sweep
from upright.tuning.protocols import measured, server_storage, worker_rates, workers_table
from upright.tuning.space import ParamSpec

#: The measurement's space file: short whole training runs (see the file).
SPACE = Path(__file__).parent / "sweeps" / "sweep-workers.yml"


@register_experiment("sweep-workers", "trials per hour of local workers on one PostgreSQL training sweep",
                     options={"storage": None, "trials": 8, "worker_counts": (1, 2), "space": str(SPACE)})
@measured
def sweep_workers(ctx: ExperimentContext) -> tuple[list[Table], dict[str, Any]]:
    """Trials per hour of each of ``worker_counts`` local workers on a study of ``trials`` trials of
    ``space`` in ``storage`` (a server URL)."""
    options = ctx.options
    storage = server_storage("sweep-workers", options["storage"])
    trials = int(options["trials"])
    configs: list[SweepConfig] = []

    def start(k: int, count: int) -> tuple[optuna.Study, Sequence[ParamSpec]]:
        configs.append(SweepConfig(space=str(options["space"]), trials=trials, workers=count, storage=storage,
                                   study=f"sweep-workers-{count}-{time.time_ns()}", seed=ctx.seed,
                                   out=ctx.out / f"workers-{count}-{k}"))
        plan = resolve(configs[-1])
        return open_sweep(plan), plan.space.params

    rows = worker_rates(ctx.option_names("worker_counts"), trials, ctx.seed, storage, start,
                        lambda count: sweep(configs[-1]), 3600.0)
    table = workers_table("Local workers on one PostgreSQL training sweep", rows, "trials / hour", 0,
                          f"The same {trials} parameter sets of `{Path(options['space']).name}` (seed {ctx.seed}) "
                          "enqueued for each worker count; each trial a whole `upright train` run in its own process "
                          "tree. One more trial than asked may start while another worker finishes.")
    return [table], {"rows": rows}


__all__ = ["SPACE", "sweep_workers"]
