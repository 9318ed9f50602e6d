"""The papers' experiments as protocols registered by name (``upright experiment NAME``).

A protocol is a function ``run(ctx: ExperimentContext) -> list[Table]`` in a module of this
package, registered with :func:`register_experiment`; its cells and robot data live in a YAML file
of the same name next to the module (read with :func:`protocol_data`). It runs its episodes through
:meth:`ExperimentContext.run` (the one runner, with the command line's workers, seed and progress
bar) and returns :class:`~upright.eval.tables.Table` rows; :func:`run_experiment` prints the
tables and writes ``OUT/results.json`` + ``OUT/results.md`` (and ``docs/results/NAME.md`` with
``--docs``). One progress bar counts every episode of the run; a protocol that knows its episodes
before it runs them says so with :meth:`ExperimentContext.plan`, which gives the bar its total and
so its ETA (one whose runs depend on what earlier runs measured, as a speed ladder does, plans
what it can, and its bar shows a count and a rate).

    @register_experiment("hold-standing", "the hold policy from standing", options={"robot": "nao"})
    def hold_standing(ctx: ExperimentContext) -> list[Table]:
        env = env_id(ctx.options["robot"], "getup")
        episodes = ctx.episodes_or(10)
        ctx.plan(episodes)  # before the runs: the progress bar's total, and so its ETA
        result = ctx.run_cell("hold", env, ctx.policy("hold"), {"start": "standing"}, episodes)
        return [Table("hold from standing", [Column("success", "success", rate)],
                      [{"success": (result["successes"], result["episodes"])}])]
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from upright.baselines import controller_names
from upright.envs.conditions import Conditions
from upright.envs.files import read_yaml_mapping
from upright.envs.schema import validate
from upright.eval.experiments.schemas import PROTOCOL_SCHEMAS
from upright.eval.results import aggregate, write_results
from upright.eval.runner import EvalRun, Observer, Wrap, overall_progress, resolve_policy, run_episodes
from upright.eval.settings import env_settings, split_settings
from upright.eval.tables import Table, jsonable, print_tables, write_tables
from upright.policies.base import Policy
from upright.policies.registry import policy_digest

#: Where ``--docs`` writes a protocol's page (relative to the working directory, the repository root).
DOCS_RESULTS = Path("docs", "results")
#: The packages whose modules register protocols: this one and the compute benchmarks'. They are
#: plugins, imported by name when the registry is read: they import this module, it never imports them.
PROTOCOL_PACKAGES = (__name__, "upright.eval.bench")


@dataclass
class ExperimentContext:
    """What one ``upright experiment`` run gives its protocol.

    ``out``: the results folder; ``episodes``: ``--episodes`` (None: the protocol's default);
    ``workers``: worker processes per run; ``settings``: the parsed ``--set`` items other than the
    protocol's options (keys ``params.*`` go to controller parameters, the others to the
    environments); ``seed``: seed of episode 0; ``progress``: show progress bars; ``docs``: also
    write ``docs/results/NAME.md``; ``options``: the protocol's declared options with the values
    given by ``--set`` (else their defaults); ``data``: extra JSON-able results the protocol wants
    in ``results.json`` next to its tables; ``resume``: :meth:`run_cell` reads back a cell that an
    earlier run into the same ``out`` finished with the same environment, policy name, arguments,
    seed and episode count instead of running it again (a changed policy file under the same name
    is not noticed); ``bar``: the run's overall progress bar (:meth:`plan`; None: none).
    """

    out: Path
    episodes: int | None = None
    workers: int = 1
    settings: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    progress: bool = True
    docs: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    resume: bool = False
    bar: Any = field(default=None, repr=False, compare=False)

    def plan(self, episodes: int) -> None:
        """Say that the protocol is about to run ``episodes`` more episodes (through :meth:`run`,
        :meth:`run_cell` or the runner), before it runs them: the overall progress bar's total
        becomes the episodes already run (when nothing was planned yet) or planned, plus these,
        so its ETA comes from the work that is really left. A cell that :meth:`run_cell` reads
        back with :attr:`resume` leaves the total again. ValueError for a negative count."""
        if episodes < 0:
            raise ValueError(f"a protocol plans a count of episodes >= 0, got {episodes!r}")
        if self.bar is not None:
            self.bar.total = (self.bar.n if self.bar.total is None else self.bar.total) + episodes
            self.bar.refresh()

    def episodes_or(self, default: int) -> int:
        """``--episodes`` if given, else the protocol's ``default``."""
        return default if self.episodes is None else self.episodes

    def option_names(self, key: str, valid: Iterable[Any] | None = None) -> tuple[Any, ...]:
        """The option ``key`` as a tuple of names or numbers (``--set key=a`` gives one, ``key=a,b``
        several), checked against ``valid`` when given (a ValueError naming the unknown ones)."""
        value = self.options[key]
        names = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        if valid is not None:
            valid = tuple(valid)
            unknown = [name for name in names if name not in valid]
            if unknown:
                raise ValueError(f"unknown {key} {', '.join(map(str, unknown))}; valid: {', '.join(valid)}")
        return names

    @property
    def params(self) -> dict[str, Any]:
        """The ``--set params.*`` controller parameter overrides (prefix removed)."""
        return split_settings(self.settings)[1]

    def env_kwargs(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """A cell's environment keyword arguments ``base`` with the ``--set`` environment settings
        over them (dotted ``prior_params.*`` keys over the cell's prior parameters, see
        :func:`~upright.eval.settings.env_settings`)."""
        return env_settings(split_settings(self.settings)[0], {}, base)

    def policy(self, name: str, params: Mapping[str, Any] | None = None, label: str | None = None) -> str | Policy:
        """The policy ``name`` with the overrides ``params`` and the ``--set params.*`` overrides
        over them (see :func:`~upright.eval.runner.resolve_policy`; named ``label`` in the
        results). The ``--set params.*`` overrides reach controllers only; other policies (e.g.
        ``hold``) are returned by name."""
        overrides = {**(params or {}), **self.params}
        return resolve_policy(name, overrides if name in controller_names() else params, label)

    def run(self, env_id: str, policy: str | Policy, env_kwargs: Mapping[str, Any], episodes: int, *,
            observers: Sequence[Observer] = (), wrappers: Sequence[Wrap] = ()) -> EvalRun:
        """``episodes`` episodes through :func:`~upright.eval.runner.run_episodes` with this run's
        workers, seed and progress bar; ``env_kwargs`` get the ``--set`` settings over them (see
        :meth:`env_kwargs`). Raises KeyboardInterrupt after an interrupted run."""
        run = self._episodes(env_id, policy, env_kwargs, episodes, observers, wrappers)
        if run.interrupted:
            raise KeyboardInterrupt
        return run

    def run_cell(self, cell: str, env_id: str, policy: str | Policy, env_kwargs: Mapping[str, Any],
                 episodes: int, *, observers: Sequence[Observer] = (), wrappers: Sequence[Wrap] = ()
                 ) -> dict[str, Any]:
        """One cell: like :meth:`run`, then :func:`~upright.eval.results.aggregate`, written to
        ``out/CELL/results.json`` + ``results.md`` (like ``upright eval``); returns the aggregate.
        An interrupted cell writes the episodes that finished, then raises KeyboardInterrupt.
        With :attr:`resume`, a finished matching ``out/CELL/results.json`` (the same environment,
        policy, files behind the policy, settings, seed and episodes) is returned instead."""
        if self.resume:
            done = self._finished_cell(cell, env_id, policy, env_kwargs, episodes)
            if done is not None:
                if self.bar is not None and self.bar.total is not None:  # planned, but not run
                    self.bar.total -= episodes
                    self.bar.refresh()
                return done
        run = self._episodes(env_id, policy, env_kwargs, episodes, observers, wrappers)
        result = aggregate(run)
        if isinstance(policy, str):
            result["policy_digest"] = policy_digest(policy)
        write_results(result, self.out / cell)
        if run.interrupted:
            raise KeyboardInterrupt
        return result

    def _finished_cell(self, cell: str, env_id: str, policy: str | Policy, env_kwargs: Mapping[str, Any],
                       episodes: int) -> dict[str, Any] | None:
        """The results of ``cell`` in :attr:`out` if a finished earlier run matches this one, else None."""
        path = self.out / cell / "results.json"
        if not path.is_file():
            return None
        done = json.loads(path.read_text())
        wanted = {"env": env_id, "policy": policy if isinstance(policy, str) else policy.name,
                  "env_kwargs": json.loads(json.dumps(jsonable(self.env_kwargs(env_kwargs)))), "seed": self.seed,
                  "episodes_requested": episodes, "interrupted": False}
        if isinstance(policy, str):  # the same name, but a re-trained or re-shipped policy: run it again
            wanted["policy_digest"] = policy_digest(policy)
        return done if all(done.get(key) == value for key, value in wanted.items()) else None

    def _episodes(self, env_id: str, policy: str | Policy, env_kwargs: Mapping[str, Any], episodes: int,
                  observers: Sequence[Observer], wrappers: Sequence[Wrap]) -> EvalRun:
        return run_episodes(env_id, policy, episodes, env_kwargs=self.env_kwargs(env_kwargs), seed=self.seed,
                            workers=self.workers, progress=self.progress, observers=observers, wrappers=wrappers)


Protocol = Callable[[ExperimentContext], list[Table]]


@dataclass(frozen=True)
class Experiment:
    """A registered protocol: ``name``, one-line ``summary``, the function, and its options
    (``--set`` keys the protocol reads itself, with their defaults)."""

    name: str
    summary: str
    run: Protocol
    options: Mapping[str, Any]


def factor_removed(preset: Conditions, change: dict[str, Any]) -> Conditions:
    """``preset`` with the fields of ``change`` replaced; a ``random_wear`` mapping replaces those
    fields of the preset's wear (``{lag: [0, 0]}``: the same wear without lag), ``None`` removes it."""
    wear = change.get("random_wear")
    if isinstance(wear, dict):
        if preset.random_wear is None:
            raise ValueError(f"a random_wear change {wear!r} needs a preset with random wear")
        change = {**change, "random_wear": replace(preset.random_wear, **wear)}
    return preset.with_(**change)


_REGISTRY: dict[str, Experiment] = {}


def register_experiment(name: str, summary: str, options: Mapping[str, Any] | None = None
                        ) -> Callable[[Protocol], Protocol]:
    """Decorator: register the protocol function as ``name`` with a one-line ``summary`` and its
    ``options`` (``--set`` keys with defaults that the protocol reads from ``ctx.options``)."""
    def decorate(run: Protocol) -> Protocol:
        if name in _REGISTRY:
            raise ValueError(f"experiment {name!r} is already registered")
        _REGISTRY[name] = Experiment(name, summary, run, dict(options or {}))
        return run

    return decorate


def experiments() -> dict[str, Experiment]:
    """Every registered protocol by name (importing the modules of :data:`PROTOCOL_PACKAGES`), sorted."""
    for package in PROTOCOL_PACKAGES:
        for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
            importlib.import_module(f"{package}.{module.name}")
    return dict(sorted(_REGISTRY.items()))


def get_experiment(name: str) -> Experiment:
    """The protocol ``name``; a ValueError listing the valid names otherwise."""
    registry = experiments()
    if name not in registry:
        raise ValueError(f"unknown experiment {name!r}; valid experiments: {', '.join(registry)}")
    return registry[name]


def protocol_data(module: str) -> dict[str, Any]:
    """The YAML file next to the protocol module ``module`` (its ``__name__``), e.g.
    ``keyframe.yaml`` for ``upright.eval.experiments.keyframe``, checked against its schema
    (:data:`~upright.eval.experiments.schemas.PROTOCOL_SCHEMAS`; ValueError naming the file and its
    first unknown key or bad value) and returned as read."""
    name = module.rsplit(".", 1)[-1]
    path = Path(__file__).with_name(name + ".yaml")
    data = read_yaml_mapping(path, "protocol data")
    validate(PROTOCOL_SCHEMAS[name], data, f"protocol data {str(path)!r}")
    return data


def run_experiment(name: str, out: Path, *, episodes: int | None = None, workers: int = 1,
                   settings: Mapping[str, Any] | None = None, seed: int = 0, progress: bool = True,
                   docs: bool = False, command: str | None = None, resume: bool = False) -> list[Table]:
    """Run the protocol ``name``: its options are taken out of ``settings`` (the rest reach the
    environments and controllers), its tables printed and written under ``out`` with ``command``
    (and to ``docs/results/NAME.md`` with ``docs``); with ``resume`` the cells an earlier run into
    ``out`` finished are read back (see :class:`ExperimentContext`). Returns the tables."""
    experiment = get_experiment(name)
    if seed < 0:
        raise ValueError(f"seed must be >= 0 (the protocols seed episodes from it upwards), got {seed!r}")
    settings = dict(settings or {})
    options = {key: settings.pop(key, default) for key, default in experiment.options.items()}
    # One bar over every episode of the protocol instead of one per run; its total is what the
    # protocol plans (ExperimentContext.plan).
    with overall_progress(None, name, enabled=progress) as bar:
        ctx = ExperimentContext(out, episodes, workers, settings, seed, progress, docs, options, resume=resume, bar=bar)
        tables = experiment.run(ctx)
    print_tables(tables)
    write_tables(tables, out, name, command=command, data=ctx.data, docs=DOCS_RESULTS if docs else None)
    return tables


__all__ = ["DOCS_RESULTS", "Experiment", "ExperimentContext", "Protocol", "experiments", "factor_removed",
           "get_experiment", "protocol_data", "register_experiment", "run_experiment"]
