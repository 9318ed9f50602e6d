"""What one ``upright optimize`` run is asked for (:class:`OptimizeConfig`) and what it resolves to
against its search space (:class:`Plan`): the data the trial loop (:mod:`upright.tuning.study`)
works from and the summary (:mod:`upright.tuning.summary`) writes about, in a module of its own so
that neither of those two imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upright.tuning.space import SearchSpace
from upright.tuning.storage import StudyWorkers


@dataclass(frozen=True)
class OptimizeConfig(StudyWorkers):
    """Everything one ``upright optimize`` run needs (the command line's arguments; where the
    study lives and who works on it: :class:`~upright.tuning.storage.StudyWorkers`).

    ``start`` is the get-up start (``front``/``back`` are the paper's names for prone/supine;
    None for walks); ``settings`` are ``--set`` items: environment keyword arguments, and
    ``params.KEY`` overrides held fixed for every trial. ``trials`` counts the study's finished
    trials (complete or pruned) over all workers and runs: a resumed study runs the rest.
    """

    controller: str
    robot: str
    start: str | None = None
    conditions: str | None = None
    sampler: str = "motpe"
    objective: str | None = None
    trials: int = 100
    repetitions: int = 3
    out: Path = Path("results/optimize")
    space: str | None = None
    startup: int | None = None
    prune: bool = False
    hand_tuned: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    progress: bool = True


@dataclass(frozen=True)
class Plan:
    """A config resolved against its space: what every worker builds its objective from."""

    config: OptimizeConfig
    space: SearchSpace
    env_id: str
    env_kwargs: dict[str, Any]
    fixed: dict[str, Any]
    objective: tuple[str, ...]
    objective_letters: str
    multi: bool
    storage: str
    study_name: str


__all__ = ["OptimizeConfig", "Plan"]
