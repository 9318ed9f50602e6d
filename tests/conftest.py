"""Shared helpers for the tests (real MuJoCo physics on the real models)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from upright import Simulation


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


def no_gl(reason: str) -> None:
    """A rendering test found no OpenGL backend: skip, saying why, or fail where one is required
    (``UPRIGHT_REQUIRE_GL=1``, which ``.ci/run`` sets after installing one)."""
    if os.environ.get("UPRIGHT_REQUIRE_GL"):
        pytest.fail(f"UPRIGHT_REQUIRE_GL is set, but rendering failed: {reason}")
    pytest.skip(f"no OpenGL backend for off-screen rendering ({reason}); install one, e.g. "
                "`apt-get install libegl1 libgl1-mesa-dri` (MUJOCO_GL=egl) or `libosmesa6` (MUJOCO_GL=osmesa)")


@pytest.fixture(params=["nao", "wolfgang"])
def robot(request) -> str:
    return request.param
