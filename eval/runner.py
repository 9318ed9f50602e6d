"""The one episode runner: evaluation episodes in parallel worker processes, with a progress bar
and observers.

Episode ``i`` of a run is seeded ``seed + i`` (environment and policy), so its result does not
depend on the number of workers or on which worker ran it. Each worker builds the environment and
the policy once and reuses them for its episodes. Ctrl-C (or SIGTERM, in the main thread) stops
the run and keeps the episodes that had finished (``EvalRun.interrupted``).

An episode that raises, or whose worker process dies (killed for memory, a crash in native code),
fails the run: the exception is raised again, or with ``keep_failed=True`` the run goes on and
returns the finished episodes with the failed ones in ``EvalRun.failed``. A dead worker is not
replaced: the run starts no further episode, and the other workers finish the ones they run. A
policy whose ``reset`` raises before any episode finished refuses the environment (another robot,
task or prior, parameters it does not know): that is the same for every episode, so the run stops
and raises it in either case. Once an episode has finished with the policy, a ``reset`` that raises
fails its own episode like any other exception.

The workers are processes of their own, each with a pipe, rather than a
``concurrent.futures.ProcessPoolExecutor``: when one of that pool's processes dies, the pool fails
every running and queued task with the same ``BrokenProcessPool``, so the dead worker's episode
cannot be named and the episodes the other workers were running are lost, and tasks already queued
to a worker still start after the death.

Everything that runs episodes (``upright eval``, ``upright video``, ``upright report``, the
protocols of :mod:`upright.eval.experiments`) goes through :func:`run_episodes`; what a protocol
measures beyond the environment's ``episode_metrics`` it measures with an :class:`Observer`.
"""

from __future__ import annotations

import contextlib
import inspect
import multiprocessing
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
import numpy as np
from tqdm import tqdm

from upright.baselines import controller_names
from upright.envs.base import UprightEnv
from upright.envs.conditions import PRESETS, Conditions
from upright.policies.base import Policy
from upright.policies.builtin import ControllerPolicy
from upright.policies.registry import load_policy

#: An environment wrapper: a picklable callable ``env -> env``.
Wrap = Callable[[gym.Env], gym.Env]


class Observer:
    """Watches the episodes of a run and adds fields to their records; the hooks do nothing by
    default, so a subclass defines only the ones it needs.

    An observer must be picklable: every worker process gets its own copy (with ``workers=1`` the
    run uses the object itself). It keeps per-episode state (reset it in :meth:`on_reset`) and
    hands its results back only through :meth:`on_episode_end`. ``policy`` is the episode's
    :class:`~upright.policies.base.Policy` after its ``reset`` (for example a
    :class:`~upright.policies.builtin.ControllerPolicy` whose ``controller`` can be read).
    """

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        """Called once per episode after ``env.reset`` and ``policy.reset``; ``info`` is the
        reset's info."""

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> bool | None:
        """Called after every ``env.step(action)`` with the step's ``info``. Return True to end
        the episode now (its record then has ``stopped: True`` and no ``episode_metrics``)."""
        return None

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        """Called once at the end of an episode with its record so far; returns the fields to add
        to it (the default: none)."""
        return {}


@dataclass(frozen=True)
class EvalRun:
    """What :func:`run_episodes` ran and the per-episode records it got, ordered by episode."""

    env_id: str
    policy: str
    env_kwargs: dict[str, Any]
    #: The episodes' conditions: a preset name, or the fields of a custom ``Conditions``.
    conditions: str | dict[str, Any]
    seed: int
    episodes_requested: int
    records: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    #: The episodes that failed (``run_episodes(..., keep_failed=True)``), ordered by episode:
    #: ``{"episode", "seed", "error"}``, ``error`` the exception's type and message.
    failed: list[dict[str, Any]] = field(default_factory=list)


class _Refused(Exception):
    """The policy's ``reset`` raised ``error``: before any episode finished, it refuses the
    environment (another robot, task or prior, parameters it does not know), the same for every
    episode, so the run stops and raises ``error`` whatever ``keep_failed`` says; after one
    finished, it is that episode's failure."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


class _Episodes:
    """One environment, one policy and the observers, reused for every episode a process runs."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], policy: str | Policy, seed: int,
                 observers: Sequence[Observer], wrappers: Sequence[Wrap]) -> None:
        self.env = gym.make(env_id, **env_kwargs)
        if not isinstance(self.env.unwrapped, UprightEnv):  # the records are upright's task metrics
            self.env.close()
            valid = ", ".join(sorted(k for k in gym.registry if k.startswith("upright/")))
            raise ValueError(f"{env_id} is no upright environment (the runner measures upright's get-up and walk "
                             f"tasks); valid environments: {valid}")
        for wrap in wrappers:
            self.env = wrap(self.env)
        self.policy = load_policy(policy) if isinstance(policy, str) else policy
        self.seed = seed
        self.observers = tuple(observers)

    def run(self, index: int) -> dict[str, Any]:
        """Episode ``index`` (seed ``seed + index``): ``episode``, ``seed``, ``task`` (``getup`` or
        ``walk``), ``steps`` and ``return`` (the undiscounted sum of rewards), the environment's
        ``episode_metrics`` (unless an observer stopped the episode: then ``stopped: True``) and
        the observers' fields."""
        seed = self.seed + index
        observation, info = self.env.reset(seed=seed)
        try:
            self.policy.reset(self.env, seed)
        except Exception as error:
            raise _Refused(error) from error
        for observer in self.observers:
            observer.on_reset(self.env, self.policy, info)
        total, steps = 0.0, 0
        record: dict[str, Any] = {"episode": index, "seed": seed, "task": self.env.unwrapped.task}
        while True:
            action = self.policy.act(observation, info)
            observation, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            steps += 1
            stop = [observer.on_step(self.env, self.policy, action, info) for observer in self.observers]
            if terminated or truncated:
                record |= {"steps": steps, "return": total, **info["episode_metrics"]}
                break
            if any(stop):
                record |= {"steps": steps, "return": total, "stopped": True}
                break
        for observer in self.observers:
            record.update(observer.on_episode_end(self.env, self.policy, dict(record)))
        return record

    def close(self) -> None:
        self.policy.close()
        self.env.close()


class WorkerDied(RuntimeError):
    """The worker process running an episode ended without its result (killed, out of memory, a
    crash in native code)."""

    def __init__(self, episode: int, seed: int, exitcode: int | None) -> None:
        super().__init__(f"the worker process running episode {episode} (seed {seed}) died with exit code "
                         f"{exitcode} (a negative code is the signal that killed it: -9 also when out of memory)")


class _RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker process, shown as its cause."""

    def __str__(self) -> str:
        return f'\n"""\n{self.args[0]}"""'


#: What running one episode gave: its index, and its record or the exception it failed with.
_Outcome = tuple[int, dict[str, Any] | None, BaseException | None]


def _in_process(local: _Episodes, episodes: int) -> Iterator[_Outcome]:
    """Episodes ``0 .. episodes - 1`` in this process, one outcome each; a policy that refuses the
    environment before any episode finished raises its exception (after one finished, its
    ``reset`` failing is that episode's failure)."""
    finished = False
    for index in range(episodes):
        try:
            record = local.run(index)
        except _Refused as refused:
            if not finished:
                raise refused.error from None
            yield index, None, refused.error
        except Exception as error:  # the episode failed; the caller decides whether the run goes on
            yield index, None, error
        else:
            finished = True
            yield index, record, None


def _portable(error: Exception) -> Exception:
    """``error`` if it survives pickling (to be raised again in the parent as it is), else a
    RuntimeError with its type and message."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


def _serve(connection: Connection, setup: bytes) -> None:
    """A worker process: set up from the pickled ``(env_id, env_kwargs, policy, seed, observers,
    wrappers)``, then run the episode indices that arrive over ``connection`` until None, answering
    each with ``("done", index, record)``, ``("failed", index, exception, traceback)`` or, when the
    policy refused the environment, ``("refused", index, exception, traceback)``. Ctrl-C is
    the parent's business; one BLAS/torch thread each. The arguments arrive pickled and are unpickled
    here, so that a failure (a policy class the worker cannot import, an environment that does not
    build) is answered with ``("setup failed", message)`` instead of killing the process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        episodes = _Episodes(*pickle.loads(setup))
    except Exception as error:  # reported by the parent, which stops the run
        connection.send(("setup failed", f"{type(error).__name__}: {error}"))
        return
    try:
        while (index := connection.recv()) is not None:
            try:
                connection.send(("done", index, episodes.run(index)))
            except _Refused as refused:  # the parent stops the run
                text = "".join(traceback.format_exception(refused.error))
                connection.send(("refused", index, _portable(refused.error), text))
            except Exception as error:  # the episode failed; the worker goes on with the next one
                connection.send(("failed", index, _portable(error), traceback.format_exc()))
    except EOFError:  # the parent went away
        pass
    finally:
        episodes.close()


@dataclass
class _Worker:
    """A worker process, the parent's end of its pipe and the episode it runs (None: none)."""

    process: BaseProcess
    connection: Connection
    episode: int | None = None

    def give(self, episode: int | None) -> None:
        """Send ``episode`` to run next (None: stop)."""
        self.episode = episode
        try:
            self.connection.send(episode)
        except BrokenPipeError:  # the process has died: its end of the pipe reads as EOF next
            pass


def _in_workers(setup: bytes, count: int, episodes: int, seed: int) -> Iterator[_Outcome]:
    """Episodes ``0 .. episodes - 1`` on ``count`` worker processes (``count`` <= ``episodes``), one
    episode at a time each, one outcome per episode as it ends. A worker that dies fails its episode
    (:class:`WorkerDied`); then no further episode starts and the other workers finish theirs. A
    worker that cannot set up raises RuntimeError; a policy that refuses the environment raises its
    exception. Leaving the iteration early (an exception, Ctrl-C, ``close``) terminates the workers."""
    context = multiprocessing.get_context("spawn")
    workers: list[_Worker] = []
    pending = iter(range(episodes))
    finished = False
    try:
        for _ in range(count):
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(theirs, setup), daemon=True)
            process.start()
            theirs.close()  # so that the process's death reads as EOF on ours
            workers.append(_Worker(process, ours))
            workers[-1].give(next(pending))
        busy = {worker.connection: worker for worker in workers}
        stopped = False
        finished_one = False  # after an episode finished, a policy.reset that raises fails its episode only
        while busy:
            for connection in wait(list(busy)):
                worker = busy[connection]
                episode = worker.episode
                assert episode is not None
                try:
                    message = connection.recv()
                except (EOFError, ConnectionResetError):  # reset: it died with our message unread
                    worker.process.join(timeout=5)
                    del busy[connection]
                    stopped = True
                    yield episode, None, WorkerDied(episode, seed + episode, worker.process.exitcode)
                    continue
                kind = message[0]
                if kind == "setup failed":
                    raise RuntimeError(f"a worker process could not set up its episodes: {message[1]}")
                if kind != "done":
                    message[2].__cause__ = _RemoteTraceback(message[3])
                if kind == "refused" and not finished_one:
                    raise message[2]
                finished_one = finished_one or kind == "done"
                worker.give(None if stopped else next(pending, None))
                if worker.episode is None:
                    del busy[connection]
                yield (episode, message[2], None) if kind == "done" else (episode, None, message[2])
        finished = True
    finally:
        for worker in workers:
            if not finished:
                worker.process.terminate()
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.connection.close()


def resolve_policy(name: str, params: Mapping[str, Any] | None = None, label: str | None = None) -> str | Policy:
    """The policy ``name`` with controller parameter overrides ``params`` (dotted keys, e.g. from
    ``--set params.KEY=VALUE``): a baseline becomes a
    :class:`~upright.policies.builtin.ControllerPolicy` (named ``label`` in the results, default
    ``name``); without overrides or label any name is returned as it is (loaded by the runner). A
    policy that is no controller takes no overrides (ValueError naming it)."""
    if not params and label is None:
        return name
    if name not in controller_names():
        raise ValueError(f"policy {name!r} is no controller and takes no params, got {dict(params or {})}")
    return ControllerPolicy(name, params=dict(params) if params else None, label=label)


def conditions_label(conditions: Conditions) -> str | dict[str, Any]:
    """The preset name of ``conditions``, or its fields (and class) when it is no preset, as
    :meth:`Conditions.to_dict <upright.envs.conditions.Conditions.to_dict>` writes them."""
    return next((name for name, preset in PRESETS.items() if preset == conditions), None) or conditions.to_dict()


def check_env_id(env_id: str) -> None:
    """Raise a ValueError naming ``env_id`` and listing the upright environments if it is unknown."""
    if env_id not in gym.registry:
        valid = ", ".join(sorted(k for k in gym.registry if k.startswith("upright/")))
        raise ValueError(f"unknown environment {env_id!r}; valid environments: {valid}")


def check_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any]) -> None:
    """Raise a ValueError naming the first keyword of ``env_kwargs`` that neither the environment
    ``env_id`` (registered) nor ``gym.make`` takes, and listing the valid ones: ``gym.make`` would
    raise a TypeError from deep inside the environment's constructor."""
    creator = gym.registry[env_id].entry_point
    creator = load_env_creator(creator) if isinstance(creator, str) else creator
    takes = inspect.signature(creator).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in takes):
        return
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    valid = sorted(({p.name for p in takes if p.kind in named}
                    | {p.name for p in inspect.signature(gym.make).parameters.values() if p.kind in named}) - {"id"})
    for key in env_kwargs:
        if key not in valid:
            raise ValueError(f"unknown keyword argument {key!r} for {env_id}; valid: {', '.join(valid)}")


#: The bars of the :func:`overall_progress` blocks open in this process that count episodes, innermost last.
_OVERALL: list[Any] = []


@contextlib.contextmanager
def overall_progress(total: int | None, desc: str, *, unit: str = "episode", enabled: bool = True) -> Iterator[Any]:
    """One progress bar, with its ETA when ``total`` is known, over the work of many runs (a
    report's cells, a protocol's runs, the zoo's exports). With ``unit="episode"``, every
    :func:`run_episodes` in this process while the block runs advances it by each episode that
    ends and shows no bar of its own, so the terminal has one line; with another unit the caller
    advances the yielded bar (``bar.update()``)."""
    bar = tqdm(total=total, desc=desc, unit=unit, disable=not enabled, dynamic_ncols=True)
    counting = unit == "episode"
    if counting:
        _OVERALL.append(bar)
    try:
        yield bar
    finally:
        if counting:
            _OVERALL.remove(bar)
        bar.close()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM raises KeyboardInterrupt as Ctrl-C does, so that a run stopped
    by ``kill`` (a job scheduler, a closed session) keeps its finished episodes; the handler before
    is restored after. Outside the main thread (where handlers cannot be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def check_episodes(env_id: str, policy: str | Policy, env_kwargs: Mapping[str, Any] | None = None,
                   seed: int = 0) -> None:
    """Build the environment and the policy of a run once, reset both with ``seed`` and close them:
    ValueError for what :func:`run_episodes` would refuse (an unknown id, keyword argument, preset,
    start or parameter; a policy that refuses the environment). For work that runs many short
    runs of one setting (a study's trials, the report's cells), so that a bad setting fails before
    any of them instead of being counted as a failed episode."""
    if seed < 0:
        raise ValueError(f"seed must be >= 0 (episode i is seeded seed + i), got {seed!r}")
    check_env_id(env_id)
    env_kwargs = dict(env_kwargs or {})
    check_env_kwargs(env_id, env_kwargs)
    episodes = _Episodes(env_id, env_kwargs, policy, seed, (), ())
    try:
        episodes.env.reset(seed=seed)
        episodes.policy.reset(episodes.env, seed)
    finally:
        episodes.close()


def run_episodes(
    env_id: str,
    policy: str | Policy,
    episodes: int,
    *,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
    observers: Sequence[Observer] = (),
    wrappers: Sequence[Wrap] = (),
    keep_failed: bool = False,
) -> EvalRun:
    """Run ``episodes`` episodes of ``policy`` (a name, an SB3 ``.zip`` or a picklable
    :class:`Policy`) in ``gym.make(env_id, **env_kwargs)`` on ``workers`` processes (1 = in this
    process), watched by ``observers`` (see :class:`Observer`). ``wrappers`` are picklable callables
    ``env -> env`` applied in order after ``gym.make`` (e.g. a ``gym.Wrapper`` subclass). Bad names
    and arguments fail here, before any worker starts.

    The first episode that fails stops the run and is raised again: the episode's own exception (a
    note names the episode and its seed; from a worker, its traceback is the cause) or
    :class:`WorkerDied`. With ``keep_failed`` the run goes on past an episode that raised (a dead
    worker still stops it, see the module docstring) and returns the failures in ``EvalRun.failed``
    beside the finished episodes, so a sample that lacks episodes is never mistaken for a whole one.
    An exception of the policy's ``reset`` before any episode finished (it refuses the environment)
    is raised in either case. SIGTERM stops the run as Ctrl-C does (``EvalRun.interrupted``)."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0 (episode i is seeded seed + i), got {seed!r}")
    check_env_id(env_id)
    env_kwargs = dict(env_kwargs or {})
    check_env_kwargs(env_id, env_kwargs)
    local = _Episodes(env_id, env_kwargs, policy, seed, observers, wrappers)  # validates the arguments
    name = policy if isinstance(policy, str) else policy.name
    conditions = conditions_label(local.env.unwrapped.sim.conditions)
    records: list[dict[str, Any]] = []
    failures: list[tuple[int, BaseException]] = []
    interrupted = False
    overall = _OVERALL[-1] if _OVERALL else None  # an overall bar counts these episodes instead
    bar = tqdm(total=episodes, desc=f"{env_id} · {name}", unit="episode", disable=not progress or overall is not None)
    workers = min(workers, episodes)  # no idle workers; a single episode runs here, sparing a process start
    try:
        if workers == 1:
            outcomes = _in_process(local, episodes)
        else:
            local.close()
            try:
                setup = pickle.dumps((env_id, env_kwargs, policy, seed, tuple(observers), tuple(wrappers)))
            except (pickle.PicklingError, AttributeError, TypeError) as error:
                raise ValueError(f"workers > 1 need a picklable policy, observers and wrappers: {error}") from None
            outcomes = _in_workers(setup, workers, episodes, seed)
        with _sigterm_as_interrupt(), contextlib.closing(outcomes):
            for index, record, error in outcomes:
                # Kept before the bar counts it: a Ctrl-C right after the bar shows an episode
                # (the terminal's user saw it finish) must not lose it.
                if error is None:
                    records.append(record)
                else:
                    failures.append((index, error))
                bar.update()
                if overall is not None:
                    overall.update()
                if error is not None and not keep_failed:
                    break
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
        if workers == 1:
            local.close()
    if failures and not keep_failed:
        index, error = failures[0]
        if not isinstance(error, WorkerDied):
            error.add_note(f"in episode {index} (seed {seed + index}) of {env_id} · {name}")
        raise error
    records.sort(key=lambda r: r["episode"])
    failed = [{"episode": index, "seed": seed + index, "error": f"{type(error).__name__}: {error}"}
              for index, error in sorted(failures, key=lambda failure: failure[0])]
    return EvalRun(env_id, name, env_kwargs, conditions, seed, episodes, records, interrupted, failed)


__all__ = ["EvalRun", "Observer", "WorkerDied", "Wrap", "check_env_id", "check_episodes", "check_env_kwargs", "conditions_label",
           "overall_progress", "resolve_policy", "run_episodes"]
