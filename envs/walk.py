"""The walk task: follow a velocity command (vx, vy, yaw rate) from standing.

The command is fixed by ``command=(vx, vy, wz)`` or drawn per episode from ``command_ranges``
(m/s, m/s, rad/s). A fall ends the episode. Velocities are measured in the robot's heading frame
(the torso's yaw). ``info["episode_metrics"]``: mean velocity, tracking error, falls, distance
before the first fall (see :class:`~upright.envs.metrics.WalkTracker`).

Reward (every term in ``info["reward_terms"]``):

* ``tracking_xy``: exp(-|v_xy − command_xy|² / 0.25²);
* ``tracking_yaw``: 0.5 × exp(-(ω_z − command_yaw)² / 0.5²);
* ``upright``: 0.2 × (1 + cos tilt) / 2;
* ``energy``: −0.001 × Σ |τ · q̇| (W);
* ``foot_slip``: −0.5 × Σ horizontal speed² of soles that carry weight;
* ``fall``: −10 when the robot falls (the episode ends).
"""

from __future__ import annotations

from typing import Any, Sequence

import mujoco
import numpy as np

from upright.envs.base import UprightEnv
from upright.envs.conditions import Conditions
from upright.envs.metrics import WalkTracker, is_fallen

DEFAULT_COMMAND_RANGES = ((-0.2, 0.3), (-0.1, 0.1), (-0.5, 0.5))


def _yaw(quat: np.ndarray) -> float:
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


class WalkEnv(UprightEnv):
    """Walk following a velocity command; see the module docstring and :mod:`upright.envs.base`."""

    task = "walk"

    def __init__(
        self,
        robot: str = "nao",
        command: Sequence[float] | None = None,
        command_ranges: Sequence[Sequence[float]] = DEFAULT_COMMAND_RANGES,
        conditions: str | Conditions | None = "lab",
        prior: Any = None,
        residual_scale: float = 0.2,
        max_episode_seconds: float = 20.0,
        start: str = "standing",
        render_mode: str | None = None,
    ) -> None:
        if start != "standing":
            raise ValueError(f"unknown start {start!r} for a walk; valid starts: standing")
        if command is not None:
            command = np.asarray(command, dtype=float)
            if command.shape != (3,) or not np.all(np.isfinite(command)):
                raise ValueError(f"command must be three finite numbers (vx, vy, yaw rate), got {command!r}")
        ranges = np.asarray(command_ranges, dtype=float)
        if ranges.shape != (3, 2) or np.any(ranges[:, 0] > ranges[:, 1]):
            raise ValueError(f"command_ranges must be three (low, high) pairs, got {command_ranges!r}")
        self._fixed_command = command
        self.command_ranges = ranges
        self.command = np.zeros(3) if command is None else command
        super().__init__(robot, conditions, prior, residual_scale, max_episode_seconds, render_mode)
        self._tracker: WalkTracker | None = None
        self._sole_sites = [self.sim.model.site(s).id for s in self.robot.sole_sites]

    def _extra_observation(self) -> np.ndarray:
        return self.command

    def _heading_velocity(self) -> np.ndarray:
        v = self.sim.torso_velocity()
        yaw = _yaw(self.sim.torso_pose()[1])
        c, s = np.cos(yaw), np.sin(yaw)
        return np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1], v[5]])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        episode_seed = int(self.np_random.integers(2**31)) if seed is None else seed
        if self._fixed_command is None:
            self.command = self.np_random.uniform(self.command_ranges[:, 0], self.command_ranges[:, 1])
        sensors = self.sim.reset(self.robot.standing_pose, seed=episode_seed)
        self._sensors = sensors
        self._tracker = WalkTracker(self.command.copy())
        self._last_action = np.zeros(self.action_space.shape)
        self._xy = self.sim.torso_pose()[0][:2].copy()
        self._start_prior(sensors)
        info = self._base_info(sensors)
        info["command"] = self.command.copy()
        return self._observe(sensors), info

    def step(self, action: np.ndarray):
        sensors = self._advance(action)
        velocity = self._heading_velocity()
        xy = self.sim.torso_pose()[0][:2]
        fallen = bool(is_fallen(self.posture(), self.standing))
        self._tracker.update(velocity, float(np.linalg.norm(xy - self._xy)), fallen)
        self._xy = xy.copy()
        terms = self._reward_terms(velocity, sensors, fallen)
        return self._finish_step(sensors, terms, fallen, self._tracker, fallen=fallen,
                                 command=self.command.copy(), velocity=velocity)

    def _reward_terms(self, velocity: np.ndarray, sensors, fallen: bool) -> dict[str, float]:
        m, d = self.sim.model, self.sim.data
        q_dot = d.qvel[m.jnt_dofadr[m.actuator_trnid[:, 0]]]
        slip = 0.0
        loads = (sensors.foot_pressure[:4].sum(), sensors.foot_pressure[4:].sum())
        for site, load in zip(self._sole_sites, loads):
            if load > 0.1 * self.sim.total_mass * 9.81:
                v = np.zeros(6)
                mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, site, v, 0)
                slip += float(v[3] ** 2 + v[4] ** 2)
        return {
            "tracking_xy": float(np.exp(-np.sum((velocity[:2] - self.command[:2]) ** 2) / 0.25**2)),
            "tracking_yaw": 0.5 * float(np.exp(-((velocity[2] - self.command[2]) ** 2) / 0.5**2)),
            "upright": 0.2 * float(1.0 + np.cos(self.sim.torso_tilt())) / 2.0,
            "energy": -0.001 * float(np.sum(np.abs(d.actuator_force * q_dot))),
            "foot_slip": -0.5 * slip,
            "fall": -10.0 if fallen else 0.0,
        }
