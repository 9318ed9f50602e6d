"""Off-screen rendering through the environments (``render_mode="rgb_array"``); without an OpenGL
backend the tests skip and say what to install (``.ci/run`` installs one and requires them)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from conftest import no_gl, python_without
from upright.envs.render import RenderingUnavailable


def _frame(env) -> np.ndarray:
    try:
        return env.render()
    except RenderingUnavailable as error:
        no_gl(str(error))


@pytest.mark.parametrize("env_id", ["upright/NaoGetUp-v0", "upright/WolfgangWalk-v0"])
def test_rgb_array_frames_show_the_robot_on_its_terrain(env_id):
    env = gym.make(env_id, render_mode="rgb_array", conditions="turf", max_episode_seconds=0.1)
    env.reset(seed=0)
    first = _frame(env)
    assert first.shape == (480, 640, 3) and first.dtype == np.uint8 and first.std() > 5
    for _ in range(3):
        env.step(env.action_space.sample())
    env.reset(seed=1)  # another turf height field, uploaded again
    second = _frame(env)
    assert second.shape == first.shape and not np.array_equal(first, second)
    env.close()


def test_human_rendering_without_a_display_raises_instead_of_ending_python():
    """GLFW ends the process when it finds no display; the environment says what to do instead (in
    a subprocess: a regression must not take pytest down with it)."""
    code = ("import gymnasium as gym, numpy as np, upright\n"
            "from upright.envs.render import RenderingUnavailable\n"
            "env = gym.make('upright/NaoGetUp-v0', render_mode='human'); env.reset(seed=0)\n"
            "try:\n    env.step(np.zeros(23, np.float32))\n"
            "except RenderingUnavailable as error:\n    print('raised:', error)\n")
    out = python_without(code, unset=("DISPLAY", "WAYLAND_DISPLAY"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "raised:" in out.stdout and "rgb_array" in out.stdout
