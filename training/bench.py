"""Training speed (``upright bench --training``): end-to-end training steps per second against the
environment alone, for the residual configurations of the shipped hyperparameter files
(:data:`CONFIGS`), with the vector environment, normalisation and thread setting ``upright train``
uses (``train_env``; VecNormalize when the hyperparameters say so; one torch thread, or
``hp.update_threads`` during the updates).

Two tables:

- :func:`run_training_bench` (the default): PPO and SAC with ``TrainConfig.n_envs`` DummyVecEnv
  copies (what ``upright train`` runs below ``SUBPROC_MIN_CORES`` cores), rates per CPU second of
  this process (``time.process_time``: other processes' load does not count), and where PPO's
  time goes (:data:`PARTS`). Targets: training >= :data:`TARGET_RATIO`
  of the environment alone and >= :data:`TARGET_RATE` steps/s.
- :func:`run_scaling_bench` (``--n-envs 1,2,4``): PPO against the number of copies in DummyVecEnv
  and SubprocVecEnv, rates per wall-clock second (SubprocVecEnv's workers are other processes,
  whose CPU time this process's clock does not count; so the machine must be idle), and the
  scaling efficiency: the rate over ``n`` times the same configuration's one-copy DummyVecEnv rate
  (1 = linear in the copies);
- :func:`run_machine_ceiling` (with ``--n-envs``): the machine's own scaling, ``n`` processes each
  stepping one copy alone (no pipes, no policy, no other work), started together: the most any
  vector environment could reach on this machine (cores that are hyperthreads of one another, or
  a shared memory bus, show here, not in the training code).

Rates are environment steps (one per copy per ``VecEnv.step``) per second. "Training" is
``model.learn`` from a freshly built, zero-initialised model as ``upright train`` runs it (torch's
distribution checks off, the per-step reward-term callback; the periodic evaluations and
checkpoints left out, their cost is set by ``--eval-every`` and ``--checkpoint-every``), SAC with
``learning_starts=0`` so that every step includes its gradient step, as in steady state, PPO
rounded up to whole rollouts;
"environment alone" then replays the actions the training sent, in the same vector environment
from a reset with the training's seeds: the same transitions (a get-up's lying phase costs more
contacts than its standing one, and the policy's exploration noise more than zero actions), without
the policy, the buffer and the update.

For an off-policy algorithm the row also has the CPU cost of one gradient step alone
(``model.train`` after the run, :data:`UPDATE_REPEATS` steps on the filled buffer) and from it the
fewest environment steps per gradient step at which training could reach the ratio target:
``k`` env steps of ``1 / env rate`` s each and one gradient step of ``g`` s give at most
``k / env rate / (k / env rate + g)``, which is >= ``r`` from ``k = r / (1 - r) · g · env rate`` on
(a lower bound: the policy's forward pass and the buffer writes per vector step cost more still).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import CallbackList

from upright.eval.bench.columns import Column, text_table
from upright.policies.algorithms import ALGORITHMS, algorithm
from upright.policies.run import zoo_entry, zoo_names
from upright.policies.run_folder import TrainConfig, TrainingExtras, load_run_config
from upright.training.config import choose_vec_env, usable_cores
from upright.training.callbacks import RewardTerms, UpdateThreads
from upright.training.train import new_model, resolve, train_env, unchecked_distributions
from upright.training.vec_env import START_METHOD, make_train_env, worker_environment

#: (environment id, prior) of the residual configurations in training/hyperparams/*.yml.
CONFIGS = (("upright/NaoGetUp-v0", "keyframe"), ("upright/WolfgangGetUp-v0", "spline"),
           ("upright/NaoWalk-v0", "step_adjust"))
#: The source of rows built from the hyperparameter files (the other rows name a shipped residual).
HYPERPARAMS_SOURCE = "hyperparams"
#: Hyperparameters of a shipped run that act before steady-state training (the imitation, the
#: frozen-actor warm-up), left out of its training-speed row.
BEFORE_TRAINING = (*(key for key in TrainingExtras.model_fields if key.startswith("imitate")), "warmup_steps")
#: The algorithms benchmarked (their ``benched`` rows).
ALGOS = tuple(name for name, a in ALGORITHMS.items() if a.benched)
#: Targets: training / environment alone, and training steps per second.
TARGET_RATIO = 0.7
TARGET_RATE = 1000.0
#: Scaling target: training steps/s at ``n`` copies over ``n`` times one copy's.
TARGET_EFFICIENCY = 0.7
#: Gradient steps timed alone for an off-policy row's update cost.
UPDATE_REPEATS = 50
#: The parts of an on-policy ``learn`` timed separately: the vector environment's step
#: (VecNormalize included), the policy's forward pass while collecting, the rollout buffer (adds
#: and the advantages), the update epochs; "rest" is the remainder (tensor conversion, action
#: clipping, SB3's episode bookkeeping, logging).
PARTS = ("environment", "policy", "buffer", "update", "rest")
#: The clocks a measurement may use.
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


@dataclass(frozen=True)
class TrainingBenchRow:
    """One algorithm on one configuration: rates in environment steps per second of ``clock``."""

    algo: str
    env_id: str
    prior: str
    n_envs: int
    env_steps_per_s: float
    train_steps_per_s: float
    #: Environment steps per gradient step in this run (off-policy, inf without one; None for on-policy).
    steps_per_update: float | None = None
    #: Seconds of one gradient step alone (off-policy; None for on-policy).
    update_s: float | None = None
    #: The vector environment class (``dummy`` or ``subproc``) and the clock (``cpu``: this
    #: process's CPU time; ``wall``: elapsed time).
    vec_env: str = "dummy"
    clock: str = "cpu"
    #: torch threads of the update (``hp.update_threads``; collection runs on one).
    update_threads: int = 1
    #: On-policy: seconds per environment step of each of :data:`PARTS` during ``learn``.
    parts: Mapping[str, float] = field(default_factory=dict)
    #: Where the configuration comes from: :data:`HYPERPARAMS_SOURCE` (the hyperparameter file's
    #: settings for the environment and prior, default environment arguments) or the zoo name of a
    #: shipped residual whose training configuration it is.
    source: str = HYPERPARAMS_SOURCE

    @property
    def ratio(self) -> float:
        """Training rate / environment-alone rate."""
        return self.train_steps_per_s / self.env_steps_per_s

    @property
    def steps_per_update_for_target(self) -> float | None:
        """The fewest environment steps per gradient step at which training could reach
        :data:`TARGET_RATIO` of the environment alone (a lower bound, see the module docstring);
        None for on-policy rows."""
        if self.update_s is None:
            return None
        return TARGET_RATIO / (1.0 - TARGET_RATIO) * self.update_s * self.env_steps_per_s


def _env_rate(venv: Any, seed: int, actions: list[np.ndarray], clock: Callable[[], float]) -> float:
    """Environment steps per second of ``clock`` of ``venv`` replaying ``actions`` from a reset
    seeded ``seed`` (as the training's first reset was: the same transitions)."""
    venv.seed(seed)
    venv.reset()
    start = clock()
    for action in actions:
        venv.step(action)
    return len(actions) * venv.num_envs / (clock() - start)


def _timed(spent: dict[str, float], part: str, function: Callable[..., Any],
           clock: Callable[[], float]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return function(*args, **kwargs)
        finally:
            spent[part] += clock() - start

    return call


def _instrument(model: Any, clock: Callable[[], float], actions: list[np.ndarray]) -> dict[str, float]:
    """Record the actions ``model``'s learn sends to its environment into ``actions`` and, for an
    on-policy model, time its parts (:data:`PARTS` but ``rest``) into the returned dictionary, by
    wrapping the methods of this model's own objects (undone by :func:`_uninstrument`)."""
    spent = dict.fromkeys(PARTS[:-1], 0.0)
    step = model.env.step

    def recorded_step(action: np.ndarray) -> Any:
        actions.append(np.array(action))
        return step(action)

    model.env.step = _timed(spent, "environment", recorded_step, clock)
    if hasattr(model, "rollout_buffer"):  # on-policy
        policy, buffer = model.policy, model.rollout_buffer
        policy.forward = _timed(spent, "policy", policy.forward, clock)
        buffer.add = _timed(spent, "buffer", buffer.add, clock)
        buffer.compute_returns_and_advantage = _timed(spent, "buffer", buffer.compute_returns_and_advantage, clock)
        model.train = _timed(spent, "update", model.train, clock)
    return spent


def _uninstrument(model: Any) -> None:
    """Remove :func:`_instrument`'s wrappers."""
    buffer = getattr(model, "rollout_buffer", None)
    for owner, name in ((model.env, "step"), (model.policy, "forward"), (model, "train"), (buffer, "add"),
                        (buffer, "compute_returns_and_advantage")):
        if owner is not None and name in vars(owner):
            delattr(owner, name)


def measure(algo: str, env_id: str, prior: str, steps: int, n_envs: int = TrainConfig.n_envs,
            hp_overrides: Mapping[str, Any] | None = None, *, vec_env: str = "dummy",
            clock: str | None = None) -> TrainingBenchRow:
    """One row: ``model.learn(steps)`` with the shipped hyperparameters and ``hp_overrides`` (dotted
    keys) on ``n_envs`` copies in ``vec_env`` (``dummy``, ``subproc`` or ``auto``), then the
    environment alone on the same transitions (the module docstring). ``clock``: ``cpu`` (default for DummyVecEnv) or
    ``wall`` (default, and the only one that counts the workers, for SubprocVecEnv)."""
    return measure_config(TrainConfig(env_id=env_id, prior=prior, algo=algo, steps=steps, n_envs=n_envs,
                                      hp_overrides=dict(hp_overrides or {}), vec_env=vec_env), clock=clock)


def measure_config(config: TrainConfig, *, clock: str | None = None, source: str = HYPERPARAMS_SOURCE) -> TrainingBenchRow:
    """:func:`measure` of a whole training configuration (its environment arguments, copies and
    hyperparameters; its ``out``, ``progress``, ``init`` and evaluations are not used), the row
    labelled ``source``."""
    import torch  # torch: only when a model is built

    torch.set_num_threads(1)
    chosen = choose_vec_env(config.vec_env, config.n_envs)
    clock = clock or ("wall" if chosen == "subproc" else "cpu")
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    if chosen == "subproc" and clock == "cpu":
        raise ValueError("clock 'cpu' does not count SubprocVecEnv's workers: use 'wall' with vec_env 'subproc'")
    now = CLOCKS[clock]
    on_policy = algorithm(config.algo).on_policy
    overrides = {**({"learning_starts": 0} if not on_policy else {}), **config.hp_overrides}
    steps = config.steps
    with TemporaryDirectory() as tmp:
        config = resolve(replace(config, hp_overrides=overrides, out=tmp, progress=False, vec_env=chosen, init=None,
                                 eval_every=0))
        venv = train_env(config)
        try:
            model = new_model(config, venv, Path(tmp) / "tb")
            actions: list[np.ndarray] = []
            spent = _instrument(model, now, actions)
            start = now()
            update_threads = config.extras.update_threads
            callbacks = [RewardTerms(), UpdateThreads(update_threads)]
            with unchecked_distributions():
                model.learn(steps, callback=CallbackList(callbacks))
            elapsed = now() - start
            _uninstrument(model)
            parts = {}
            if on_policy:
                parts = {part: seconds / model.num_timesteps for part, seconds in spent.items()}
                parts["rest"] = elapsed / model.num_timesteps - sum(parts.values())
            train_rate = model.num_timesteps / elapsed
            steps_per_update = update_s = None
            if not on_policy:
                steps_per_update = model.num_timesteps / model._n_updates if model._n_updates else float("inf")
                start = now()
                model.train(gradient_steps=UPDATE_REPEATS, batch_size=model.batch_size)
                update_s = (now() - start) / UPDATE_REPEATS
            env_rate = _env_rate(venv, config.seed, actions, now)
        finally:
            venv.close()
    return TrainingBenchRow(config.algo, config.env_id, config.prior or "-", config.n_envs, env_rate, train_rate,
                            steps_per_update, update_s, vec_env=chosen, clock=clock, update_threads=update_threads,
                            parts=parts, source=source)


def shipped_configs(steps: int) -> list[tuple[str, TrainConfig]]:
    """(zoo name, training configuration) of every shipped on-policy residual (``policies/zoo``):
    the run's own environment arguments, copies and hyperparameters, for ``steps`` steps in
    DummyVecEnv, without the phases before steady-state training (:data:`BEFORE_TRAINING`: the
    imitation and the frozen-actor warm-up)."""
    configs = []
    for name in zoo_names():
        config = load_run_config(zoo_entry(name))
        if not algorithm(config.algo).on_policy:
            continue
        overrides = {key: value for key, value in config.hp_overrides.items()
                     if key.split(".")[0] not in BEFORE_TRAINING}
        configs.append((name, replace(config, steps=steps, hp_overrides=overrides, vec_env="dummy", init=None)))
    return configs


def run_training_bench(steps: int = 2048, configs: tuple[tuple[str, str], ...] = CONFIGS,
                       algos: tuple[str, ...] = ALGOS, hp_overrides: Mapping[str, Any] | None = None,
                       shipped: bool = True) -> list[TrainingBenchRow]:
    """Every algorithm on every configuration, ``steps`` environment steps per measurement
    (``TrainConfig.n_envs`` DummyVecEnv copies, CPU time), with ``hp_overrides`` (dotted keys);
    then, with ``shipped``, each shipped residual's own training configuration
    (:func:`shipped_configs`, ``hp_overrides`` over its hyperparameters)."""
    rows = [measure(algo, env_id, prior, steps, hp_overrides=hp_overrides) for env_id, prior in configs
            for algo in algos]
    if shipped:
        rows += [measure_config(replace(config, hp_overrides={**config.hp_overrides, **(hp_overrides or {})}),
                                source=name) for name, config in shipped_configs(steps)]
    return rows


def run_scaling_bench(steps: int = 4096, n_envs: Sequence[int] = (1, 2, 4),
                      vec_envs: Sequence[str] = ("dummy", "subproc"),
                      configs: tuple[tuple[str, str], ...] = CONFIGS, algo: str = "ppo",
                      hp_overrides: Mapping[str, Any] | None = None,
                      report: Callable[[TrainingBenchRow], None] | None = None) -> list[TrainingBenchRow]:
    """``algo`` (with ``hp_overrides``) on every configuration with each number of copies in each
    vector environment class, wall-clock rates. Each configuration's one-copy DummyVecEnv row with
    one update thread (the base of the efficiency: one core) is measured first whether or not it
    was asked for. SubprocVecEnv with one copy runs one worker, as asked; ``auto`` is resolved per
    number of copies. ``report`` is called with each row as soon as it is measured."""
    for n in n_envs:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n_envs must be integers >= 1, got {n!r}")
    overrides = dict(hp_overrides or {})
    base_overrides = {key: value for key, value in overrides.items() if key != "update_threads"}
    cells = list(dict.fromkeys((choose_vec_env(v, n), n) for v in vec_envs for n in n_envs))
    if base_overrides == overrides:
        cells = [cell for cell in cells if cell != ("dummy", 1)]
    rows: list[TrainingBenchRow] = []
    for env_id, prior in configs:
        for vec_env, n, hp in (("dummy", 1, base_overrides), *((v, n, overrides) for v, n in cells)):
            rows.append(measure(algo, env_id, prior, steps, n, hp, vec_env=vec_env, clock="wall"))
            if report is not None:
                report(rows[-1])
    return rows


#: The standard deviation of the machine ceiling's random actions (normalised action units): about
#: a fresh residual policy's exploration around its prior (log_std_init -2.5, std 0.08).
CEILING_ACTION_STD = 0.1


@dataclass(frozen=True)
class CeilingRow:
    """``n_envs`` processes each stepping one copy of ``env_id`` with ``prior`` alone: their summed
    rate (environment steps per wall-clock second)."""

    env_id: str
    prior: str
    n_envs: int
    env_steps_per_s: float


def _ceiling_worker(env_id: str, env_kwargs: dict[str, Any], seed: int, steps: int, barrier: Any) -> float:
    """One process of :func:`run_machine_ceiling`: ``steps`` steps of one training copy (DummyVecEnv,
    no normalisation) with :data:`CEILING_ACTION_STD` Gaussian actions, timed after all processes
    passed ``barrier``; returns steps per wall-clock second."""
    venv = make_train_env(env_id, env_kwargs, 1, seed, normalize=False, on_policy=True)
    rng = np.random.default_rng(seed)
    shape = (steps, 1, *venv.action_space.shape)
    actions = np.clip(rng.normal(0.0, CEILING_ACTION_STD, shape), -1.0, 1.0).astype(np.float32)
    venv.reset()
    barrier.wait()
    start = time.perf_counter()
    for action in actions:
        venv.step(action)
    rate = steps / (time.perf_counter() - start)
    venv.close()
    return rate


def run_machine_ceiling(steps: int = 4096, n_envs: Sequence[int] = (1, 2, 4),
                        configs: tuple[tuple[str, str], ...] = CONFIGS,
                        report: Callable[[CeilingRow], None] | None = None) -> list[CeilingRow]:
    """For every configuration and each ``n`` in ``n_envs`` (and 1, the base): ``n`` processes
    (spawned, one BLAS thread each) stepping one copy each for ``steps`` steps, started together;
    the row's rate is the sum of theirs. ``report`` is called with each row as soon as it is measured."""
    import multiprocessing

    context = multiprocessing.get_context(START_METHOD)
    rows = []
    for env_id, prior in configs:
        env_kwargs = {"prior": prior}
        for n in sorted({1, *n_envs}):
            with context.Manager() as manager, worker_environment(), context.Pool(n) as pool:
                barrier = manager.Barrier(n)
                rates = pool.starmap(_ceiling_worker, [(env_id, env_kwargs, rank, steps, barrier) for rank in range(n)])
            rows.append(CeilingRow(env_id, prior, n, float(sum(rates))))
            if report is not None:
                report(rows[-1])
    return rows


def format_machine_ceiling(rows: list[CeilingRow], width: int | None = None) -> str:
    """A plain-text table of :func:`run_machine_ceiling`'s rows with their efficiency over linear
    (fitted to a terminal's ``width`` when given, :func:`~upright.eval.bench.columns.text_table`)."""
    columns = [Column("environment", 26, left=True), Column("prior", 12, left=True), Column("processes", 9),
               Column("env steps/s", 11), Column("x linear", 8)]
    table = []
    for r in rows:
        base = next(b for b in rows if (b.env_id, b.prior, b.n_envs) == (r.env_id, r.prior, 1))
        table.append([r.env_id, r.prior, str(r.n_envs), f"{r.env_steps_per_s:.0f}",
                      f"{r.env_steps_per_s / (r.n_envs * base.env_steps_per_s):.2f}"])
    note = ("The machine's own scaling: processes each stepping one copy alone (Gaussian actions of std "
            f"{CEILING_ACTION_STD}, default arguments, no pipes, no policy), started together; env steps/s = their summed rates per wall-clock "
            "second; x linear = over processes times one process's rate. No vector environment can scale better "
            "than this on the same machine.")
    return "\n".join(text_table(columns, table, [note], keys=2, width=width))


def _base(rows: list[TrainingBenchRow], row: TrainingBenchRow) -> TrainingBenchRow | None:
    """The one-copy, one-update-thread DummyVecEnv row of ``row``'s configuration, algorithm and clock."""
    return next((r for r in rows if (r.env_id, r.prior, r.algo, r.clock, r.vec_env, r.n_envs, r.update_threads)
                 == (row.env_id, row.prior, row.algo, row.clock, "dummy", 1, 1)), None)


#: The columns that name a training bench's row (its key columns when fitted to a terminal).
_ROW_NAME = (Column("algo", 5, left=True), Column("environment", 26, left=True), Column("prior", 12, left=True))


def format_scaling_bench(rows: list[TrainingBenchRow], *, cores: int | None = None,
                         load: float | None = None, width: int | None = None) -> str:
    """A plain-text table of :func:`run_scaling_bench`'s rows: rates, their efficiency over linear
    and training over the environment alone; the footer says the clock, the usable ``cores`` and
    the one-minute ``load`` average when the bench started (default: now). Fitted to a terminal's
    ``width`` when given (:func:`~upright.eval.bench.columns.text_table`)."""
    cores = usable_cores() if cores is None else cores
    load = os.getloadavg()[0] if load is None and hasattr(os, "getloadavg") else load
    columns = [*_ROW_NAME, Column("vec env", 8, left=True), Column("envs", 4), Column("update thr", 10),
               Column("env steps/s", 11), Column("x linear", 8), Column("train steps/s", 13), Column("x linear", 8),
               Column("/ env", 6)]
    table = []
    for r in rows:
        base = _base(rows, r)
        env_eff = f"{r.env_steps_per_s / (r.n_envs * base.env_steps_per_s):.2f}" if base else "-"
        train_eff = f"{r.train_steps_per_s / (r.n_envs * base.train_steps_per_s):.2f}" if base else "-"
        table.append([r.algo, r.env_id, r.prior, r.vec_env, str(r.n_envs), str(r.update_threads),
                      f"{r.env_steps_per_s:.0f}", env_eff, f"{r.train_steps_per_s:.0f}", train_eff, f"{r.ratio:.2f}"])
    clocks = {r.clock for r in rows}
    per = "wall-clock second" if clocks == {"wall"} else "second of " + "/".join(sorted(clocks))
    note = (f"steps/s = environment steps per {per} (SubprocVecEnv's workers are other processes: this "
            "process's CPU time does not count them, so every row is timed by the wall clock and the machine "
            f"must be idle; {cores} usable cores, load average {'-' if load is None else f'{load:.2f}'} at the "
            "start). x linear = the rate over envs times the same configuration's 1-environment DummyVecEnv "
            f"rate (target for training: >= {TARGET_EFFICIENCY}); / env = training over the environment alone "
            f"(target: >= {TARGET_RATIO}). One torch thread in the parent while it collects (update thr during the "
            "updates, hp.update_threads), one BLAS/torch thread per worker.")
    return "\n".join(text_table(columns, table, [note], keys=len(_ROW_NAME), width=width) + _format_parts(rows, width))


def format_training_bench(rows: list[TrainingBenchRow], width: int | None = None) -> str:
    """A plain-text table of the rows with the targets, then where the on-policy rows' time goes;
    fitted to a terminal's ``width`` when given (:func:`~upright.eval.bench.columns.text_table`)."""
    def optional(value: float | None, spec: str) -> str:
        return f"{value:{spec}}" if value is not None else "-"

    columns = [*_ROW_NAME, Column("envs", 4), Column("env steps/s", 11), Column("train steps/s", 13),
               Column("/ env", 7), Column("steps/update", 12), Column("update ms", 9), Column("needed", 7),
               Column("configuration", 0, left=True, gap=2)]
    table = []
    for r in rows:
        update_ms = r.update_s * 1e3 if r.update_s is not None else None
        table.append([r.algo, r.env_id, r.prior, str(r.n_envs), f"{r.env_steps_per_s:.0f}",
                      f"{r.train_steps_per_s:.0f}", f"{r.ratio:.2f}", optional(r.steps_per_update, ".1f"),
                      optional(update_ms, ".2f"), optional(r.steps_per_update_for_target, ".0f"), r.source])
    clocks = {r.clock for r in rows}
    per = "CPU second of this process" if clocks == {"cpu"} else "second (" + "/".join(sorted(clocks)) + " clock)"
    classes = "/".join(sorted({"DummyVecEnv" if r.vec_env == "dummy" else "SubprocVecEnv" for r in rows}))
    note = (f"steps/s = environment steps per {per} ({classes}, one torch thread); env = the same vector env "
            "replaying the training's actions from its seeds (the same transitions); SAC with learning_starts=0. "
            f"configuration = {HYPERPARAMS_SOURCE} (training/hyperparams/*.yml for the environment and prior, "
            f"{TrainConfig.n_envs} copies, default environment arguments) or the shipped residual whose "
            "training configuration the row runs (its copies, environment arguments and hyperparameters, "
            "without the imitation and warm-up before training; PPO rounded up to whole rollouts). "
            f"Targets: / env >= {TARGET_RATIO}, train >= {TARGET_RATE:.0f} steps/s. Off-policy: steps/update = "
            "environment steps per gradient step in the run, update ms = one gradient step alone, needed = "
            f"the fewest environment steps per gradient step that could reach / env >= {TARGET_RATIO} at that cost.")
    return "\n".join(text_table(columns, table, [note], keys=len(_ROW_NAME), width=width) + _format_parts(rows, width))


def _format_parts(rows: list[TrainingBenchRow], width: int | None = None) -> list[str]:
    """Where the on-policy rows' training time goes (:data:`PARTS`, µs per environment step of
    ``learn``, by each row's clock), one line per row (fitted to ``width`` when given); no lines
    when no row was timed by parts."""
    timed = [r for r in rows if r.parts]
    if not timed:
        return []
    columns = [*_ROW_NAME, Column("vec env", 8, left=True), Column("envs", 4), *(Column(part, 11) for part in PARTS),
               Column("total", 7), Column("configuration", 0, left=True, gap=2)]
    table = [[r.algo, r.env_id, r.prior, r.vec_env, str(r.n_envs), *(f"{r.parts[part] * 1e6:.1f}" for part in PARTS),
              f"{sum(r.parts.values()) * 1e6:.1f}", r.source] for r in timed]
    note = ("Where the training time goes, µs per environment step of learn: environment = the vector "
            "env's step (VecNormalize included; with SubprocVecEnv the wait for the workers), policy = the "
            "forward pass while collecting, buffer = the rollout buffer's adds and advantages, update = the "
            "epochs of gradient steps, rest = the remainder (tensor conversion, clipping, SB3's episode "
            "bookkeeping, logging).")
    return ["", *text_table(columns, table, [note], keys=len(_ROW_NAME), width=width)]


__all__ = ["ALGOS", "BEFORE_TRAINING", "CLOCKS", "CONFIGS", "HYPERPARAMS_SOURCE", "PARTS", "TARGET_EFFICIENCY",
           "TARGET_RATE", "TARGET_RATIO", "UPDATE_REPEATS", "CeilingRow", "TrainingBenchRow", "format_machine_ceiling",
           "format_scaling_bench", "format_training_bench", "measure", "measure_config", "run_machine_ceiling",
           "run_scaling_bench", "run_training_bench", "shipped_configs"]
