"""Shared helpers and fixtures for the tests (real MuJoCo physics on the real models; a throwaway
PostgreSQL cluster for the Optuna studies of ``upright optimize`` and ``upright sweep``)."""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from upright import Simulation
from upright.envs.robots import ROBOT_NAMES


def assert_hyp_coupled(sim: Simulation) -> None:
    """NAO: the two HipYawPitch joints are one motor and must agree within 1e-3 rad."""
    if sim.robot.name != "nao":
        return
    q = sim.data.qpos
    m = sim.model
    left = q[m.jnt_qposadr[m.joint("LHipYawPitch").id]]
    right = q[m.jnt_qposadr[m.joint("RHipYawPitch").id]]
    assert abs(left - right) < 1e-3, f"HipYawPitch L={left:.5f} R={right:.5f}"


def hold(sim: Simulation, seconds: float, targets: np.ndarray | None = None, every_step=None) -> None:
    """Step ``sim`` for ``seconds`` holding ``targets`` (default: the current ctrl)."""
    targets = sim.data.ctrl.copy() if targets is None else targets
    for _ in range(int(round(seconds / sim.robot.control_period))):
        sim.step(targets)
        assert_hyp_coupled(sim)
        if every_step is not None:
            every_step(sim)


def python_without(code: str, unset: tuple[str, ...]) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python (a regression there must not take pytest down) whose
    environment lacks the variables ``unset``; its output as text."""
    import sys

    environ = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=120)


def last_bar(err: str, desc: str) -> tuple[int, int | None]:
    """The count and the total (None: the bar had none, and so no ETA) of the last state that tqdm
    drew of the progress bar ``desc`` into the captured ``err``."""
    states = [state for state in re.split(r"[\r\n]", err) if state.startswith(f"{desc}:")]
    assert states, f"no progress bar {desc!r} in {err!r}"
    counted = re.search(r"\| *(\d+)/(\d+) \[", states[-1])
    if counted:
        return int(counted[1]), int(counted[2])
    return int(re.match(rf"{re.escape(desc)}: (\d+)", states[-1])[1]), None


def no_gl(reason: str) -> None:
    """A rendering test found no OpenGL backend: skip, saying why, or fail where one is required
    (``UPRIGHT_REQUIRE_GL=1``, which ``.ci/run`` sets after installing one)."""
    if os.environ.get("UPRIGHT_REQUIRE_GL"):
        pytest.fail(f"UPRIGHT_REQUIRE_GL is set, but rendering failed: {reason}")
    pytest.skip(f"no OpenGL backend for off-screen rendering ({reason}); install one, e.g. "
                "`apt-get install libegl1 libgl1-mesa-dri` (MUJOCO_GL=egl) or `libosmesa6` (MUJOCO_GL=osmesa)")


@pytest.fixture(params=ROBOT_NAMES)
def robot(request) -> str:
    """Each robot of the registry (:data:`~upright.envs.robots.ROBOT_NAMES`) by name."""
    return request.param


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres_url():
    """A throwaway PostgreSQL cluster (own data directory, loopback on a free port, trust auth),
    stopped and removed at the end. As root the server runs as the ``postgres`` user (initdb refuses
    root), so the data directory lives in a folder of its own that user can reach (pytest's
    tmp_path is private to root)."""
    pytest.importorskip("psycopg", reason="pip install 'psycopg[binary]' (the 'optimize' extra)")
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found; install them, e.g. "
                    "`apt-get install postgresql` (Debian/Ubuntu) — .ci/run does this in CI")
    run_as: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="upright-pg-"))
    base.chmod(0o755)
    data = base / "pgdata"
    data.mkdir()
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base)
            pytest.skip("running as root without a 'postgres' user to run the server as")
        os.chown(data, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run([*run_as, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
                   check=True, capture_output=True)
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={data} -c fsync=off"
    subprocess.run([*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-w", "-t", "60",
                    "-l", str(data / "log"), "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*run_as, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


#: Test modules holding the suite's longest tests (tens of seconds each: held-out outcomes,
#: obstacle course, the PostgreSQL sweep), run first: pytest-xdist's workers then end the run on
#: short tests, instead of one worker finishing a long test alone while the other idles.
LONGEST_FIRST = ("test_outcomes.py", "test_obstacle_course.py", "test_sweep.py", "test_walk_experiments.py",
                 "test_getup_experiments.py")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Move the tests of :data:`LONGEST_FIRST` to the front (a stable sort: every module keeps
    its own order, so module-scoped fixtures are built once as before)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))
