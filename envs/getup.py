"""The get-up task: from lying (prone, supine, on the side, or after a random fall) to standing.

Episodes last ``max_episode_seconds`` (default 20 s, the RoboCup limit) and end early only when the
physics blows up (``info["sim_unstable"]``). Success and ``time_to_stand`` follow
:mod:`upright.envs.metrics`; ``info["episode_metrics"]`` holds them at the end of every episode.

Reward (dense, every term in ``info["reward_terms"]``):

* ``head_progress``: 10 × the rise of the head this step over the standing head height
  (potential-based: it sums to the net rise);
* ``head_height``: 0.5 × head height / standing head height (capped at 1);
* ``upright``: 0.5 × (1 + cos tilt) / 2;
* ``still``: 1.0 × exp(-|ω|²) while upright and the head is high (stillness once up);
* ``torque``: −0.05 × mean squared actuator torque / stall torque;
* ``action_rate``: −0.05 × mean squared change of the action;
* ``joint_limits``: −0.1 × fraction of joints within 2 % of a limit;
* ``impact``: −0.5 × (largest ground-contact force on a body other than the feet / weight − 3)
  when above 3 × the robot's weight.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from upright.envs.base import UprightEnv
from upright.envs.conditions import Conditions
from upright.envs.metrics import GetUpTracker, is_upright

#: Lying starts (``random`` draws one of them) and ``standing`` (for tests and push recovery).
LYING_STARTS = ("prone", "supine", "side", "fall")
STARTS = (*LYING_STARTS, "random", "standing")
#: Simulated seconds allowed for a side or fall start to come to rest before the episode begins.
PREROLL_SECONDS = 2.0


class GetUpEnv(UprightEnv):
    """Get up from the floor. See the module docstring for reward and metrics, and
    :mod:`upright.envs.base` for the observation and action layout.

    Args:
        robot: ``"nao"`` or ``"wolfgang"``.
        start: ``prone``, ``supine``, ``side``, ``fall`` (a random fall from standing with a random
            joint configuration), ``random`` (any of these, drawn per episode), or ``standing``.
        conditions: preset name or :class:`~upright.envs.conditions.Conditions`.
        prior: ``None``, a baseline name, or a controller; the action is then a residual.
        residual_scale: residual range as a fraction of each joint's half range.
        max_episode_seconds: episode length (s).
        render_mode: ``rgb_array`` or ``human``.
    """

    task = "getup"

    def __init__(
        self,
        robot: str = "nao",
        start: str = "prone",
        conditions: str | Conditions | None = "lab",
        prior: Any = None,
        residual_scale: float = 0.2,
        max_episode_seconds: float = 20.0,
        render_mode: str | None = None,
    ) -> None:
        if start not in STARTS:
            raise ValueError(f"unknown start {start!r}; valid starts: {', '.join(STARTS)}")
        super().__init__(robot, conditions, prior, residual_scale, max_episode_seconds, render_mode)
        self.start = start
        self._tracker: GetUpTracker | None = None
        self._weight = self.sim.total_mass * 9.81
        self._feet = {self.sim.model.body(self.sim.model.site_bodyid[self.sim.model.site(s).id]).name
                      for s in self.robot.sole_sites}
        self._head_prev = 0.0

    # ---------------------------------------------------------------- start states
    def _start_state(self, start: str, seed: int) -> str:
        rng = self.np_random
        if start == "random":
            start = str(rng.choice(LYING_STARTS))
        if start in ("prone", "supine"):
            self.sim.reset(start, seed=seed)
            return start
        if start == "standing":
            self.sim.reset(self.robot.standing_pose, seed=seed)
            return start
        if start == "side":
            self._start_on_side(seed, side=float(rng.choice([-1.0, 1.0])))
        else:
            self._start_after_fall(seed)
        self.sim.restart_clock()
        return start

    def _start_on_side(self, seed: int, side: float) -> None:
        """Standing joint angles, torso rolled 90° to one side, then left to come to rest."""
        sim = self.sim
        qpos = sim.model.key(self.robot.standing_pose).qpos.copy()
        qpos[3:7] = [np.cos(np.pi / 4), side * np.sin(np.pi / 4), 0.0, 0.0]
        qpos[2] = 0.25
        sim.reset(self.robot.standing_pose, seed=seed, qpos=qpos)
        self._preroll(sim.data.ctrl.copy())

    def _start_after_fall(self, seed: int) -> None:
        """From standing, random joint targets and a push in a random direction until at rest."""
        sim, rng = self.sim, self.np_random
        sim.reset(self.robot.standing_pose, seed=seed)
        targets = np.clip(self.standing_targets + rng.uniform(-0.5, 0.5, self._mid.size) * self._half * 0.5,
                          self._low, self._high)
        angle = rng.uniform(0, 2 * np.pi)
        torso = sim.model.body(self.robot.torso_body).id
        sim.data.xfrc_applied[torso, :2] = 0.6 * self._weight * np.array([np.cos(angle), np.sin(angle)])
        for _ in range(int(0.3 / self.robot.control_period)):
            sim.step(targets)
        sim.data.xfrc_applied[torso, :2] = 0.0
        self._preroll(targets)

    def _preroll(self, targets: np.ndarray) -> None:
        for _ in range(int(PREROLL_SECONDS / self.robot.control_period)):
            self.sim.step(targets)
            if self.sim.kinetic_energy() < 1e-3 and self.sim.time > 0.5:
                break

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        episode_seed = int(self.np_random.integers(2**31)) if seed is None else seed
        start = self._start_state(self.start, episode_seed)
        sensors = self.sim.sensors()
        self._sensors = sensors
        self._tracker = GetUpTracker(self.standing, start)
        self._tracker.update(self.posture())
        self._head_prev = self.sim.head_height()
        self._last_action = np.zeros(self.action_space.shape)
        self._start_prior(sensors)
        info = self._base_info(sensors)
        info["start"] = start
        return self._observe(sensors), info

    def step(self, action: np.ndarray):
        sensors = self._advance(action)
        posture = self.posture()
        self._tracker.update(posture)
        terms = self._reward_terms(np.asarray(action, dtype=float), posture)
        self._last_action = np.clip(np.asarray(action, dtype=float), -1, 1)
        return self._finish_step(sensors, terms, False, self._tracker, success=self._tracker.success,
                                 fallen=self._tracker.fallen, upright=is_upright(posture, self.standing),
                                 start=self._tracker.start)

    def _reward_terms(self, action: np.ndarray, p) -> dict[str, float]:
        m, d = self.sim.model, self.sim.data
        h_stand = self.standing.head_height
        head = p.head_height
        progress = 10.0 * (head - self._head_prev) / h_stand
        self._head_prev = head
        up = is_upright(p, self.standing)
        torque = float(np.mean((d.actuator_force / m.actuator_forcerange[:, 1]) ** 2))
        q = d.qpos[m.jnt_qposadr[m.actuator_trnid[:, 0]]]
        near_limit = float(np.mean((q < self._low + 0.02 * 2 * self._half) | (q > self._high - 0.02 * 2 * self._half)))
        forces = self.sim.contact_forces()
        hardest = max((np.linalg.norm(f) for body, f in forces.items() if body not in self._feet), default=0.0)
        return {
            "head_progress": progress,
            "head_height": 0.5 * min(head / h_stand, 1.0),
            "upright": float(0.5 * (1.0 + np.cos(p.tilt)) / 2.0),
            "still": float(np.exp(-p.angular_speed**2)) if up else 0.0,
            "torque": -0.05 * torque,
            "action_rate": -0.05 * float(np.mean((np.clip(action, -1, 1) - self._last_action) ** 2)),
            "joint_limits": -0.1 * near_limit,
            "impact": -0.5 * max(hardest / self._weight - 3.0, 0.0),
        }
