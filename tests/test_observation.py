"""The observation's layout table (``envs/observation.py``): the environments' observations are
its blocks in order, and ``docs/environments.md`` and the docstrings show its rendering."""

from __future__ import annotations

import difflib
from pathlib import Path

import gymnasium as gym
import numpy as np

import upright  # noqa: F401  (registers the environments)
from upright.envs import base
from upright.envs.getup import GetUpEnv
from upright.envs.observation import OBSERVATION, PLACEHOLDER, docstring_table, markdown_table
from upright.envs.walk import WalkEnv

ROOT = Path(__file__).resolve().parents[1]
#: One environment of each robot, task and option (prior, odometry): every block of the table.
CASES = [
    ("upright/NaoGetUp-v0", {}), ("upright/NaoGetUp-v0", {"prior": "keyframe"}),
    ("upright/WolfgangGetUp-v0", {}), ("upright/WolfgangGetUp-v0", {"prior": "spline"}),
    ("upright/NaoWalk-v0", {}), ("upright/NaoWalk-v0", {"prior": "step_adjust", "observe_odometry": True}),
    ("upright/WolfgangWalk-v0", {}), ("upright/WolfgangWalk-v0", {"prior": "lipm", "command": (0.1, 0.0, 0.2)}),
    ("upright/NaoWalk-v0", {"prior": "lipm", "observe_odometry": True, "observe_gait": True}),
]


def test_observations_are_the_tables_blocks():
    seen = set()
    for env_id, kwargs in CASES:
        env = gym.make(env_id, **kwargs).unwrapped
        obs, info = env.reset(seed=1)
        slices, sensors = env.observation_slices(), info["sensors"]
        bounds = [(part.start, part.stop) for part in slices.values()]
        assert [start for start, _ in bounds] == [0] + [stop for _, stop in bounds[:-1]], (env_id, bounds)
        assert obs.shape == env.observation_space.shape == (bounds[-1][1],), (env_id, kwargs)
        blocks = {name: obs[part] for name, part in slices.items()}
        for name in ("joint_pos", "joint_vel", "joint_target", "gyro", "accel", "foot_pressure"):
            np.testing.assert_array_equal(blocks[name], getattr(sensors, name).astype(np.float32), err_msg=name)
        np.testing.assert_array_equal(blocks["fused"], sensors.fused[[0, 1, 3]].astype(np.float32))
        assert abs(np.linalg.norm(blocks["gravity"]) - 1.0) < 1e-5
        if env.task == "walk":
            np.testing.assert_array_equal(blocks["command"], env.command.astype(np.float32))
        assert ("odometry" in slices) == bool(kwargs.get("observe_odometry"))
        assert ("gait" in slices) == bool(kwargs.get("observe_gait"))
        if "gait" in slices:  # the prior's clock before it walks
            np.testing.assert_array_equal(blocks["gait"], np.array(env.prior.gait, dtype=np.float32))
        if env.prior is not None:
            np.testing.assert_array_equal(blocks["prior_target"], info["prior_targets"].astype(np.float32))
        seen |= set(slices)
    assert seen == {block.name for block in OBSERVATION}


def test_docs_and_docstrings_show_the_rendered_table():
    """``docs/environments.md`` holds :func:`markdown_table` (the table and the sizes line after
    it); the docstrings hold :func:`docstring_table`, rendered at import."""
    table = markdown_table().splitlines()
    lines = (ROOT / "docs/environments.md").read_text().splitlines()
    start = lines.index(table[0]) if table[0] in lines else len(lines)
    end = next((k for k in range(start, len(lines)) if not lines[k].startswith("|")), len(lines))
    shown = lines[start:end + 2]
    diff = "\n".join(difflib.unified_diff(shown, table, "docs/environments.md", "markdown_table()", lineterm=""))
    assert shown == table, f"docs/environments.md's observation table is not markdown_table()'s:\n{diff}"
    for doc, task in ((base.__doc__, None), (GetUpEnv.__doc__, "getup"), (WalkEnv.__doc__, "walk")):
        assert PLACEHOLDER not in doc
        rendered = "\n".join(line.strip() for line in docstring_table(task).splitlines())
        assert rendered in "\n".join(line.strip() for line in doc.splitlines()), task
