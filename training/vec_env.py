"""The training environments: ``n_envs`` copies of the environment, each in a Monitor that records
``is_success``, optionally in VecNormalize, in one of SB3's two vector environment classes:

- ``dummy``: SB3's DummyVecEnv, every copy stepped in turn in this process;
- ``subproc``: SB3's SubprocVecEnv, one worker process per copy, started with the ``spawn`` method
  (a fresh interpreter: no state forked from a parent that already runs torch threads) and with one
  OpenMP/MKL/OpenBLAS thread (:data:`WORKER_THREADS`, so ``n_envs`` workers do not each start a
  thread per core); workers ignore Ctrl-C, which is the parent's to handle (it saves the run and
  closes them);
- ``batched``: :class:`BatchedSubprocVecEnv`, the copies spread over one worker process per usable
  core (at most one per copy), each stepping its share of them in turn (a DummyVecEnv in the
  worker): one message per worker and vector step instead of one per copy, and no more processes
  than cores; started and threaded as ``subproc``;
- ``auto``: one of them by the machine's cores (:func:`upright.training.config.choose_vec_env`).

Every class gives the same transitions for the same seed (each copy is seeded ``seed + rank``, its
observations, rewards and infos arrive unchanged through the pipes, rewards as float32 in all), so
a seeded run learns the same weights with any of them: the choice changes how fast it goes.

Each copy's step info is slimmed where the copy runs (:class:`TrainingInfo`): training reads only
the episode's end (``is_success``, ``episode_metrics``, Monitor's ``episode``) and the reward terms'
episode sums, so the per-step records (the sensors, the prior's targets, each step's reward terms)
are not copied (DummyVecEnv deep-copies every info) or pickled through a pipe (SubprocVecEnv) on
every step, unless a teacher that reads them is imitated (``keep``). A failure
inside a worker reaches the parent as a broken pipe (``EOFError``), the worker's traceback on
stderr.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecNormalize

from upright.envs.privileged import PrivilegedObservation
from upright.eval.runner import check_env_id
from upright.policies.run import load_normalizer
from upright.training.config import batch_workers, choose_vec_env

#: The thread-count variables set to 1 for the workers (read when numpy's BLAS and torch load, so
#: they must be in the environment the worker process starts with).
WORKER_THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: How SubprocVecEnv starts its workers (see the module docstring).
START_METHOD = "spawn"


@contextmanager
def worker_environment() -> Iterator[None]:
    """:data:`WORKER_THREADS` set to 1 while the workers start (they copy this process's
    environment), then restored."""
    saved = {name: os.environ.get(name) for name in WORKER_THREADS}
    os.environ.update({name: "1" for name in WORKER_THREADS})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


#: The step-info entries a training run reads (SB3's success buffer, Monitor's episode record, the
#: episode's metrics); :class:`TrainingInfo` keeps these, adds :data:`EPISODE_REWARD_TERMS` at an
#: episode's end and drops the others.
TRAINING_INFO = ("is_success", "episode_metrics", "episode")
#: The info entry with each reward term's sum over the episode just ended (term name → sum, in
#: the order of ``info["reward_terms"]``).
EPISODE_REWARD_TERMS = "episode_reward_terms"
#: The step-info entries a hand-designed teacher reads (:mod:`upright.policies.feedback`: the
#: robot's sensors and the prior's status; a walk's command), kept while one is imitated.
TEACHER_INFO = ("sensors", "prior_status", "command")


class TrainingInfo(gym.Wrapper):
    """Step infos with only what training reads (:data:`TRAINING_INFO`, plus ``keep``): the reward
    terms (``info["reward_terms"]``) are summed here, term by term in step order, and handed over
    once, as :data:`EPISODE_REWARD_TERMS` in the info of the episode's last step. Reset infos pass
    unchanged (one per episode)."""

    def __init__(self, env: gym.Env, keep: tuple[str, ...] = ()) -> None:
        super().__init__(env)
        self._kept = TRAINING_INFO + tuple(keep)
        self._sums: dict[str, float] = {}

    def reset(self, **kwargs: Any) -> Any:
        self._sums = {}
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        observation, reward, terminated, truncated, info = self.env.step(action)
        sums = self._sums
        for term, value in info.get("reward_terms", {}).items():
            sums[term] = sums.get(term, 0.0) + float(value)
        slim = {key: info[key] for key in self._kept if key in info}
        if terminated or truncated:
            slim[EPISODE_REWARD_TERMS] = sums
            self._sums = {}
        return observation, reward, terminated, truncated, slim


def _training_wrappers(env: gym.Env, privileged: bool, keep: tuple[str, ...]) -> gym.Env:
    """``env`` (in its Monitor) with the privileged observation when ``privileged`` and
    :class:`TrainingInfo` outermost."""
    return TrainingInfo(PrivilegedObservation(env) if privileged else env, keep)


def _in_worker(make_env: Callable[[], gym.Env]) -> gym.Env:
    """Build the worker's environment with Ctrl-C ignored: the parent stops the run and closes
    the workers itself (a worker interrupted mid-step would break the parent's pipe)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return make_env()


def _batch_worker(remote: Any, parent_remote: Any, env_fns: Any) -> None:
    """A :class:`BatchedSubprocVecEnv` worker: its copies in a DummyVecEnv, driven by the parent's
    messages (``(command, data)``; each answered, except ``close``). Ctrl-C is ignored, as in
    :func:`_in_worker`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent_remote.close()
    venv = DummyVecEnv(env_fns.var)
    try:
        while True:
            command, data = remote.recv()
            if command == "step":
                observations, rewards, dones, infos = venv.step(data)
                resets = {int(i): venv.reset_infos[i] for i in np.flatnonzero(dones)}
                remote.send((observations, rewards, dones, infos, resets))
            elif command == "reset":
                remote.send((venv.reset(), venv.reset_infos))
            elif command == "seed":
                remote.send(venv.seed(data))
            elif command == "set_options":
                remote.send(venv.set_options(data))
            elif command == "get_attr":
                remote.send(venv.get_attr(*data))
            elif command == "set_attr":
                remote.send(venv.set_attr(*data))
            elif command == "env_method":
                name, args, kwargs, indices = data
                remote.send(venv.env_method(name, *args, indices=indices, **kwargs))
            elif command == "env_is_wrapped":
                remote.send(venv.env_is_wrapped(*data))
            elif command == "close":
                break
            else:
                raise ValueError(f"unknown command {command!r}")
    except EOFError:  # the parent went away
        pass
    except Exception:  # the traceback first: the parent stops the workers once the pipe breaks
        traceback.print_exc()
        sys.stderr.flush()
        raise SystemExit(1) from None
    finally:
        venv.close()
        remote.close()


class BatchedSubprocVecEnv(VecEnv):
    """``len(env_fns)`` copies in ``workers`` worker processes, the copies split into consecutive
    shares as even as they go (worker ``w`` holds copies ``starts[w]`` to ``starts[w + 1] - 1``), each
    share stepped in turn by a DummyVecEnv in its worker. The parent sends each worker its copies'
    actions in one message and reads their observations, rewards, dones and infos in one answer. Copy
    ``i`` is seeded ``seed + i`` as in DummyVecEnv, so both give the same transitions. Workers are
    started as :class:`TrainSubprocVecEnv`'s (``spawn``, one BLAS thread, Ctrl-C ignored)."""

    def __init__(self, env_fns: list[Callable[[], gym.Env]], workers: int) -> None:
        import multiprocessing

        from stable_baselines3.common.vec_env.base_vec_env import CloudpickleWrapper

        n = len(env_fns)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= n:
            raise ValueError(f"workers must be an integer from 1 to the {n} copies, got {workers!r}")
        self.starts = [w * n // workers for w in range(workers + 1)]
        self.waiting, self.closed = False, False
        context = multiprocessing.get_context(START_METHOD)
        self.remotes, self.processes = [], []
        with worker_environment():
            for w in range(workers):
                remote, worker_remote = context.Pipe()
                fns = CloudpickleWrapper(env_fns[self.starts[w]:self.starts[w + 1]])
                process = context.Process(target=_batch_worker, args=(worker_remote, remote, fns), daemon=True)
                process.start()
                worker_remote.close()
                self.remotes.append(remote)
                self.processes.append(process)
        self.remotes[0].send(("get_attr", ("observation_space", [0])))
        observation_space = self.remotes[0].recv()[0]
        self.remotes[0].send(("get_attr", ("action_space", [0])))
        action_space = self.remotes[0].recv()[0]
        if not isinstance(observation_space, gym.spaces.Box):
            raise ValueError(f"BatchedSubprocVecEnv needs a Box observation space, got {observation_space}")
        super().__init__(n, observation_space, action_space)

    def _shares(self, indices: Any) -> list[tuple[int, list[int]]]:
        """(worker, its local copy indices) for the global copy ``indices`` (None: every copy), in
        the order of the copies."""
        by_worker: dict[int, list[int]] = {}
        for i in self._get_indices(indices):
            w = next(w for w in range(len(self.remotes)) if i < self.starts[w + 1])
            by_worker.setdefault(w, []).append(i - self.starts[w])
        return sorted(by_worker.items())

    def _ask(self, command: str, make_data: Callable[[int, list[int]], Any], indices: Any = None) -> list[Any]:
        """Send ``command`` with ``make_data(worker, local indices)`` to the workers holding
        ``indices`` and return their answers, flattened into one list in the copies' order."""
        shares = self._shares(indices)
        for w, local in shares:
            self.remotes[w].send((command, make_data(w, local)))
        return [answer for w, _ in shares for answer in self.remotes[w].recv()]

    def step_async(self, actions: np.ndarray) -> None:
        for w, remote in enumerate(self.remotes):
            remote.send(("step", actions[self.starts[w]:self.starts[w + 1]]))
        self.waiting = True

    def step_wait(self) -> Any:
        answers = [remote.recv() for remote in self.remotes]
        self.waiting = False
        for w, (*_, resets) in enumerate(answers):
            for i, info in resets.items():
                self.reset_infos[self.starts[w] + i] = info
        observations, rewards, dones, infos, _ = zip(*answers)
        return (np.concatenate(observations), np.concatenate(rewards), np.concatenate(dones),
                [info for share in infos for info in share])

    def reset(self) -> np.ndarray:
        for remote in self.remotes:
            remote.send(("reset", None))
        answers = [remote.recv() for remote in self.remotes]
        self.reset_infos = [info for _, infos in answers for info in infos]
        self._reset_seeds()
        self._reset_options()
        return np.concatenate([observations for observations, _ in answers])

    def seed(self, seed: int | None = None) -> list[int | None]:
        """Copy ``i`` is reset with ``seed + i`` at the next reset (a random ``seed`` for None), as in
        DummyVecEnv."""
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        for w, remote in enumerate(self.remotes):
            remote.send(("seed", seed + self.starts[w]))
        return [s for remote in self.remotes for s in remote.recv()]

    def set_options(self, options: list[dict] | dict | None = None) -> None:
        if not isinstance(options, list):
            options = [options] * self.num_envs
        for w, remote in enumerate(self.remotes):
            remote.send(("set_options", options[self.starts[w]:self.starts[w + 1]]))
        for remote in self.remotes:
            remote.recv()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return self._ask("get_attr", lambda w, local: (attr_name, local), indices)

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        shares = self._shares(indices)
        for w, local in shares:
            self.remotes[w].send(("set_attr", (attr_name, value, local)))
        for w, _ in shares:
            self.remotes[w].recv()

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        return self._ask("env_method", lambda w, local: (method_name, method_args, method_kwargs, local), indices)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: Any = None) -> list[bool]:
        return self._ask("env_is_wrapped", lambda w, local: (wrapper_class, local), indices)

    def get_images(self) -> list[Any]:
        raise NotImplementedError("BatchedSubprocVecEnv does not render; evaluate with upright eval or video")

    def close(self) -> None:
        """Close the workers; after a step cut short (Ctrl-C while waiting) end them instead, as
        :meth:`TrainSubprocVecEnv.close` does."""
        if self.closed:
            return
        if self.waiting:
            for process in self.processes:
                process.terminate()
        else:
            for remote in self.remotes:
                remote.send(("close", None))
        for process in self.processes:
            process.join()
        for remote in self.remotes:
            remote.close()
        self.closed = True


class TrainSubprocVecEnv(SubprocVecEnv):
    """SB3's SubprocVecEnv started as the module docstring says, whose rewards are float32 as
    DummyVecEnv's (SubprocVecEnv stacks the workers' Python floats as float64, and VecNormalize's
    return statistics would then differ in the last bits between the two classes)."""

    def __init__(self, env_fns: list[Callable[[], gym.Env]]) -> None:
        with worker_environment():
            super().__init__([partial(_in_worker, fn) for fn in env_fns], start_method=START_METHOD)

    def step_wait(self) -> Any:
        observations, rewards, dones, infos = super().step_wait()
        return observations, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        """Close the workers; after a step cut short (Ctrl-C while waiting for the workers) end them
        instead: SubprocVecEnv would wait for every worker's answer again, and the answers already
        read before the interrupt never come twice."""
        if not self.closed and self.waiting:
            for process in self.processes:
                process.terminate()
            for process in self.processes:
                process.join()
            self.closed = True
            return
        super().close()


def make_train_env(env_id: str, env_kwargs: dict[str, Any], n_envs: int, seed: int, *, normalize: bool,
                   on_policy: bool, monitor_dir: Path | None = None, normalizer: Path | None = None,
                   vec_env: str = "dummy", privileged: bool = False, keep_info: tuple[str, ...] = ()) -> VecEnv:
    """``n_envs`` environments ``gym.make(env_id, **env_kwargs)`` seeded ``seed``, ``seed + 1``, ...
    in the vector environment ``vec_env`` (``dummy``, ``subproc``, or ``auto`` resolved by
    :func:`~upright.training.config.choose_vec_env`), each with the privileged state appended to
    its observation (:class:`~upright.envs.privileged.PrivilegedObservation`) when ``privileged``,
    and with step infos slimmed to what training reads (:class:`TrainingInfo`) and the entries
    named in ``keep_info`` (e.g. :data:`TEACHER_INFO` for an imitation).
    With ``normalize`` the observations are normalised (and the rewards too for on-policy
    algorithms, as rl-baselines3-zoo does); ``normalizer`` reloads saved statistics (resume, or
    fine-tuning a trained policy: :func:`load_train_normalizer`)."""
    chosen = choose_vec_env(vec_env, n_envs)
    classes = {"dummy": DummyVecEnv, "subproc": TrainSubprocVecEnv, "batched": BatchedSubprocVecEnv}
    venv = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs, vec_env_cls=classes[chosen],
                        vec_env_kwargs={"workers": batch_workers(n_envs)} if chosen == "batched" else None,
                        monitor_dir=None if monitor_dir is None else str(monitor_dir),
                        monitor_kwargs={"info_keywords": ("is_success",)},
                        wrapper_class=_training_wrappers,
                        wrapper_kwargs={"privileged": privileged, "keep": tuple(keep_info)})
    if normalizer is not None:
        return load_train_normalizer(normalizer, venv)
    if normalize:
        return VecNormalize(venv, norm_obs=True, norm_reward=on_policy, gamma=0.99)
    return venv


def load_train_normalizer(path: Path, venv: VecEnv) -> VecNormalize:
    """The VecNormalize saved at ``path`` on ``venv``, updating its statistics again. Statistics of
    the robot's observation on a ``venv`` that appends privileged entries (fine-tuning a symmetric
    policy with an asymmetric critic) are widened with mean 0 and variance 1 for those entries,
    which are of order one (:mod:`upright.envs.privileged`), and then learnt as training goes on.
    The action space is always ``venv``'s."""
    loaded = load_normalizer(path)  # ValueError naming a file that is no VecNormalize
    size, wanted = loaded.observation_space.shape[0], venv.observation_space.shape[0]
    if size < wanted:
        rms = loaded.obs_rms
        rms.mean = np.concatenate((rms.mean, np.zeros(wanted - size)))
        rms.var = np.concatenate((rms.var, np.ones(wanted - size)))
        loaded.observation_space = venv.observation_space
    loaded.set_venv(venv)  # ValueError when the shapes differ otherwise
    # the statistics are the observation's; the action space is the venv's (the pickled one is the
    # saving run's, one entry short when a run adds the get-up's tempo entry)
    loaded.action_space = venv.action_space
    loaded.training = True  # statistics saved beside an evaluated model may have been frozen
    return loaded


def check_env(env_id: str, env_kwargs: dict[str, Any], privileged: bool = False) -> gym.Env:
    """Build one environment (ValueError naming a bad id, keyword argument or prior) and return it,
    with the privileged state appended to its observation when ``privileged``."""
    check_env_id(env_id)
    try:
        env = gym.make(env_id, **env_kwargs)
    except TypeError as error:  # an unknown keyword argument
        raise ValueError(f"{env_id}: {error}") from None
    return PrivilegedObservation(env) if privileged else env


__all__ = ["BatchedSubprocVecEnv", "EPISODE_REWARD_TERMS", "START_METHOD", "TEACHER_INFO", "TRAINING_INFO", "TrainSubprocVecEnv",
           "TrainingInfo", "WORKER_THREADS", "check_env", "worker_environment", "load_train_normalizer", "make_train_env"]
