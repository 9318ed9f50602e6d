"""Where a study lives, and how trials of dead workers are failed and retried.

* Default, one worker: a SQLite file ``OUT/study.db`` (embedded, nothing to start). Optuna's RDB
  storage with a heartbeat: a trial whose process stops beating for ``grace_period`` seconds (killed,
  machine gone) is marked failed by the next process that starts a trial on the study, and
  :class:`optuna.storages.RetryHeartbeatStaleTrialCallback` enqueues it again with the same parameters.
* Default, ``--workers W`` > 1: a journal file ``OUT/study.journal`` (Optuna's JournalStorage with
  a file lock). SQLite is refused for W > 1: it locks the whole database file on every write, and W
  processes writing trials, intermediate values and heartbeats every few seconds run into
  ``database is locked`` errors (Optuna's documentation advises against SQLite for parallel work).
  The journal is an append-only log whose appends take a lock, so any number of local processes may
  write. Optuna's journal has no heartbeat; the parent process of the local workers fails and
  retries the running trials of a worker that died (:func:`fail_orphans`).
* Every run first fails and retries the trials left running by processes of this machine that no
  longer exist (any storage; this also catches a trial killed before its first heartbeat).
* ``--storage URL``: any Optuna RDB URL (``postgresql://user@host/db``, ``mysql://...``,
  ``sqlite:///file.db``) with heartbeat and retry as above, so processes on many machines can work on
  one study; or ``journal:PATH`` for a journal file. A URL that cannot hold the study (no URL, an
  unknown database, SQLite without a file, a server that does not answer) is a ValueError naming it
  (:func:`check_storage`, :func:`open_storage`), raised before the output folder is made.
"""

from __future__ import annotations

import datetime
import logging
import os
import re
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock, JournalStorage
from optuna.trial import TrialState
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from upright.policies.folders import process_running


#: Default seconds between heartbeats and after which a silent trial counts as dead.
HEARTBEAT_INTERVAL = 10
GRACE_PERIOD = 30
#: How often one trial is retried after its worker died or was interrupted.
MAX_RETRY = 2
#: User attribute naming the process that runs a trial ("host:pid").
WORKER_ATTR = "worker"


@dataclass(frozen=True, kw_only=True)
class StudyWorkers:
    """Where a study lives and who works on it, the settings that ``upright optimize`` and
    ``upright sweep`` share: ``storage`` a URL (None: :func:`default_storage`), ``study``
    its name (None: the command's default), ``workers`` local processes, ``seed`` the sampler's
    seed (local worker i: ``seed + i``), and the dead-worker handling of the module docstring
    (``heartbeat_interval`` and ``grace_period`` in s, ``max_retry`` retries per trial)."""

    storage: str | None = None
    study: str | None = None
    workers: int = 1
    seed: int = 0
    heartbeat_interval: int = HEARTBEAT_INTERVAL
    grace_period: int = GRACE_PERIOD
    max_retry: int = MAX_RETRY


#: A study's sampler seed moves on by this much per trial the study already holds (the seeds of one
#: run's workers, seed + worker index, stay below it), see :func:`continued_seed`.
RESUME_SEED_STRIDE = 1000


def continued_seed(storage: optuna.storages.BaseStorage, study_name: str, seed: int) -> int:
    """The sampler seed for the study ``study_name`` in ``storage``: ``seed`` for a new study, and for
    one that holds trials ``seed`` moved on by :data:`RESUME_SEED_STRIDE` per trial. Without this a
    continued study's workers, seeded as in its first run, would draw that run's values again (the
    random startup trials); with it the draws stay reproducible from the study's state."""
    for summary in optuna.study.get_all_study_summaries(storage, include_best_trial=False):
        if summary.study_name == study_name:
            return seed + RESUME_SEED_STRIDE * summary.n_trials
    return seed


def default_storage(out: Path, workers: int) -> str:
    """The storage URL used without ``--storage``: the journal if one exists in ``out`` or
    ``workers`` > 1, else the SQLite file."""
    journal = Path(out) / "study.journal"
    if workers > 1 or journal.exists():
        return f"journal:{journal}"
    return f"sqlite:///{Path(out) / 'study.db'}"


def shown_storage(url: str) -> str:
    """``url`` as it may be printed or written: a database URL with its password replaced by ``***``.
    Storage URLs reach the terminal, error messages, summaries, recorded command lines and
    ``docs/results``, none of which may hold a database password. A string SQLAlchemy cannot parse
    as a URL (``storage=URL`` of a ``--set`` item, a bad port) has the password between ``USER:``
    and ``@`` hidden the same way; a journal or SQLite URL has none and is returned unchanged."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)


#: The storage URLs ``--storage`` takes, for the messages that refuse one.
_FORMS = ("sqlite:///RELATIVE.db, sqlite:////ABSOLUTE.db, postgresql://USER:PASSWORD@HOST[:PORT]/DB, "
          "mysql://USER:PASSWORD@HOST/DB or journal:FILE")


def check_storage(url: str, workers: int) -> None:
    """Refuse, before anything is created, a storage URL that cannot hold the study: one SQLAlchemy
    cannot parse or has no dialect for (``postgres://`` is spelt ``postgresql://``), SQLite without
    a file or with a host (``sqlite://study.db`` for ``sqlite:///study.db``), and SQLite with several
    local workers (see the module docstring for why). ValueError naming the URL (password hidden)."""
    if url.startswith("journal:"):
        if not url[len("journal:"):]:
            raise ValueError(f"--storage {url!r} names no journal file; give journal:FILE")
        if Path(url[len("journal:"):]).is_dir():
            raise ValueError(f"--storage {url!r} names a folder; give journal:FILE (a file in it)")
        return
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        raise ValueError(f"--storage {shown_storage(url)!r} is no storage URL; give {_FORMS}") from None
    shown = shown_storage(url)
    try:
        parsed.get_dialect()
    except NoSuchModuleError:
        hint = " (SQLAlchemy spells it postgresql://)" if parsed.get_backend_name() == "postgres" else ""
        raise ValueError(
            f"--storage {shown!r}: unknown database {parsed.drivername!r}{hint}; give {_FORMS}") from None
    if parsed.get_backend_name() == "sqlite":
        if parsed.host or not parsed.database or parsed.database == ":memory:":
            raise ValueError(f"--storage {shown!r} names no SQLite file: a file is sqlite:///RELATIVE.db or "
                             "sqlite:////ABSOLUTE.db (three slashes before the path)")
        if workers > 1:
            raise ValueError(
                f"--workers {workers} with SQLite storage {shown!r}: SQLite locks the whole file on every write and "
                "parallel Optuna workers fail with 'database is locked'; leave --storage out (a journal file in "
                "--out is used), or give --storage journal:PATH or a server URL such as postgresql://user@host/db")


def open_storage(url: str, *, heartbeat_interval: int = HEARTBEAT_INTERVAL, grace_period: int = GRACE_PERIOD,
                 max_retry: int = MAX_RETRY) -> optuna.storages.BaseStorage:
    """The Optuna storage for ``url`` (``journal:PATH`` or an RDB URL, see the module docstring).
    A database that cannot be reached or opened (no server, wrong password, no driver) is a
    ValueError naming the URL (password hidden) and the database's own one-line reason."""
    if url.startswith("journal:"):
        path = Path(url[len("journal:"):])
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(path))))
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    engine_kwargs = {"pool_pre_ping": True} if not url.startswith("sqlite") else {"connect_args": {"timeout": 60}}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval,
                              grace_period=grace_period, heartbeat_stale_trial_callback=retry_callback(max_retry))
    except (SQLAlchemyError, ImportError) as error:
        reason = getattr(error, "orig", None) or error
        hint = " (the database driver is in the optimize extra: pip install 'upright[optimize]')" \
            if isinstance(error, ImportError) else ""
        raise ValueError(f"--storage {shown_storage(url)!r} cannot be opened: "
                         f"{' '.join(str(reason).split())}{hint}") from None


def retry_callback(max_retry: int = MAX_RETRY) -> RetryHeartbeatStaleTrialCallback:
    """Optuna's callback that enqueues a failed trial again with the same parameters (at most
    ``max_retry`` times per original trial)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return RetryHeartbeatStaleTrialCallback(max_retry=max_retry)


def retried_trial(trial: Any) -> int | None:
    """The number of the failed trial that ``trial`` (FrozenTrial) retries, or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return RetryHeartbeatStaleTrialCallback.retried_trial_number(trial)


def worker_id(pid: int | None = None) -> str:
    """This process's (or ``pid``'s) worker name: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid() if pid is None else pid}"


def fail_and_retry(study: optuna.Study, trial: Any, max_retry: int = MAX_RETRY) -> None:
    """Mark a running ``trial`` (FrozenTrial) failed and enqueue its retry (same parameters), as
    Optuna's heartbeat does for a stale trial (failed through ``Study.tell``, as Optuna fails a
    trial whose objective raised)."""
    try:
        study.tell(trial.number, state=TrialState.FAIL)
    except (ValueError, RuntimeError, optuna.exceptions.UpdateFinishedTrialError):
        return  # finished meanwhile
    failed = study.get_trials(deepcopy=False)[trial.number]  # a study's trials are numbered 0, 1, ... in order
    try:
        retry_callback(max_retry)(study, failed)
    except ValueError as error:  # a value outside the space (a hand-edited space or enqueued trial)
        logging.getLogger(__name__).warning("trial %d failed and cannot be retried: %s", trial.number, error)


def fail_orphans(study: optuna.Study, dead: set[str] | None = None, max_retry: int = MAX_RETRY,
                 unnamed_after: float | None = None) -> list[int]:
    """Fail and retry running trials whose worker is in ``dead`` (``host:pid`` names), or, with
    ``dead`` None, whose worker ran on this machine and no longer exists. With ``unnamed_after``
    (seconds), also a running trial that no worker has named that long after it started: its process
    died between Optuna creating the trial and the objective naming it (a live worker names it within
    milliseconds), before any heartbeat, so neither the heartbeat nor the name can catch it.
    Returns their numbers."""
    host = socket.gethostname()
    now = datetime.datetime.now()
    failed = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get(WORKER_ATTR)
        if worker is None:
            orphan = (dead is None and unnamed_after is not None and trial.datetime_start is not None
                      and (now - trial.datetime_start).total_seconds() > unnamed_after)
        elif dead is not None:
            orphan = worker in dead
        else:
            name, _, pid = worker.rpartition(":")
            orphan = name == host and pid.isdigit() and not process_running(int(pid))
        if orphan:
            fail_and_retry(study, trial, max_retry)
            failed.append(trial.number)
    return failed


__all__ = ["GRACE_PERIOD", "HEARTBEAT_INTERVAL", "MAX_RETRY", "WORKER_ATTR", "check_storage", "default_storage",
           "fail_and_retry", "fail_orphans", "open_storage", "retried_trial", "retry_callback", "shown_storage",
           "worker_id"]
