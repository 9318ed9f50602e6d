"""Privileged simulator state for an asymmetric critic: :data:`PRIVILEGED`, its layout, and
:class:`PrivilegedObservation`, the training wrapper that appends it to the observation.

An asymmetric actor-critic (:mod:`upright.policies.asymmetric`) trains a value function on what
the robot cannot sense (the torso's true velocity and height, which bodies bear the robot's
weight, the pushes, the episode's wear, friction, mass and delay, the drawn model of the robot
(servo factors, zero offsets, torso load, sensor latency), the time left in the episode), while the actor keeps the robot's observation: the first ``n`` entries of the wrapped
observation are exactly the environment's, the privileged blocks follow. Only the actor acts, on a
robot or in ``upright eval``, so nothing here reaches a deployed policy. Every entry is of order
one (forces in units of the robot's weight) so that it normalises like the observation.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from upright.envs.observation import ObservationBlock, block_slices, observation_size
from upright.envs.robots import RobotSpec

#: The privileged blocks, in order, after the observation.
PRIVILEGED: tuple[ObservationBlock, ...] = (
    ObservationBlock("episode_time", "1", "simulated time over the episode's length (0 at the start, 1 at its end)"),
    ObservationBlock("torso_height", "1", "height of the torso origin above z = 0 (m)"),
    ObservationBlock("head_height", "1", "height of the top of the head above z = 0 (m)"),
    ObservationBlock("torso_velocity", "6", "true torso linear (m/s) then angular (rad/s) velocity, torso frame"),
    ObservationBlock("gravity_true", "3", "unit gravity direction in the torso frame, noise-free"),
    ObservationBlock("support", "3", "vertical ground force on the left foot, the right foot and every other "
                     "body together, in units of the robot's weight"),
    ObservationBlock("push", "2", "the horizontal force on the torso in the last physics step (random push and "
                     "impulses; world x, y), in units of the robot's weight"),
    ObservationBlock("strength", "nu", "this episode's servo strength per actuator (1 = new)"),
    ObservationBlock("play", "nu", "this episode's gear play per actuator (rad)"),
    ObservationBlock("lag", "nu", "this episode's set-point lag time constant per actuator (s)"),
    ObservationBlock("stuck", "nu", "1 where the actuator is in a stuck window now, else 0"),
    ObservationBlock("episode", "3", "friction scale, mass scale, control cycles of extra delay"),
    # The model-variation draws (Conditions.servo_factors, zero_offset, torso_mass,
    # torso_com_offset, sensor_latency_cycles) come last, so that a critic trained before they
    # existed widens by zero columns at the end (upright.policies.asymmetric.widen_critic).
    ObservationBlock("servo_gain", "nu", "this episode's position-gain factor per actuator (1 = our model)"),
    ObservationBlock("servo_torque", "nu", "this episode's torque-limit factor per actuator (1 = our model)"),
    ObservationBlock("servo_damping", "nu", "this episode's joint-damping factor per actuator (1 = our model)"),
    ObservationBlock("zero_offset", "nu", "this episode's encoder zero offset per actuator (rad) times 10"),
    ObservationBlock("torso_load", "4", "mass added to the torso in units of the robot's mass, then the "
                     "offset of the torso's CoM (torso frame, m) times 10"),
    ObservationBlock("sensor_latency", "1", "control cycles between a measurement and the cycle that reads it"),
)


def privileged_size(robot: RobotSpec) -> int:
    """The number of privileged values on ``robot``."""
    return observation_size(PRIVILEGED, robot)


def privileged_slices(robot: RobotSpec) -> dict[str, slice]:
    """Privileged block name → its slice within the privileged values (not the wrapped observation)."""
    return block_slices(PRIVILEGED, robot)


class PrivilegedState:
    """Reads :data:`PRIVILEGED` from an :class:`~upright.envs.base.UprightEnv`'s simulation."""

    def __init__(self, env: Any) -> None:
        self.env = env
        sim = env.sim
        m = sim.model
        self.size = privileged_size(env.robot)
        feet = [m.body(m.site_bodyid[m.site(site).id]).name for site in env.robot.sole_sites]
        self._feet = feet
        self._weight = sim.weight
        self._mass = sim.total_mass
        self._rotation = np.zeros(9)
        # our model's servos and calibration: what the blocks read when the conditions vary neither
        self._unit_factors = np.ones((sim.model.nu, 3))
        self._no_offset = np.zeros(sim.model.nu)

    def __call__(self) -> np.ndarray:
        """The privileged values now (float64, :data:`PRIVILEGED`'s order)."""
        env, sim = self.env, self.env.sim
        sampled = sim.sampled
        position, quat = sim.torso_pose()
        mujoco.mju_quat2Mat(self._rotation, quat)
        to_torso = self._rotation.reshape(3, 3).T  # world → torso
        velocity = sim.torso_velocity()
        forces = sim.contact_forces()
        left, right = (float(forces.pop(foot, np.zeros(3))[2]) for foot in self._feet)
        other = float(sum(force[2] for force in forces.values()))
        time = sim.time
        wear = sampled.wear
        stuck = [any(start <= time < start + duration for start, duration in w.stuck) for w in wear]
        factors = self._unit_factors if sampled.servo_factors is None else sampled.servo_factors[:, :3]
        offset = self._no_offset if sampled.zero_offset is None else sampled.zero_offset
        return np.concatenate((
            [time / env.max_episode_seconds, position[2], sim.head_height()],
            to_torso @ velocity[:3], to_torso @ velocity[3:],
            -to_torso[:, 2],
            np.array([left, right, other]) / self._weight,
            sim.torso_push() / self._weight,
            [w.strength for w in wear], [w.play for w in wear], [w.lag for w in wear], stuck,
            [sampled.friction_scale, sampled.mass_scale, sampled.extra_delay_cycles],
            factors[:, 0], factors[:, 1], factors[:, 2], 10.0 * offset,
            [sampled.torso_mass / self._mass], 10.0 * sampled.torso_com_offset,
            [sampled.sensor_latency_cycles],
        ))


class PrivilegedObservation(gym.ObservationWrapper):
    """The environment's observation with the privileged values (:data:`PRIVILEGED`) appended, as
    float32: what an asymmetric critic trains on. ``actor_size`` is the environment's own
    observation size, the entries the actor reads."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.actor_size = int(env.observation_space.shape[0])
        self._state = PrivilegedState(env.unwrapped)
        size = self.actor_size + self._state.size
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(size,), dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.concatenate((observation, self._state())).astype(np.float32)


__all__ = ["PRIVILEGED", "PrivilegedObservation", "PrivilegedState", "privileged_size",
           "privileged_slices"]
