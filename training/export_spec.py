"""The robot-side sections of an export's spec (``policy.yml``): what a team needs besides the
graph to run a policy on its robot without reading this code.

- :func:`joints_spec`: every joint in the robot's joint order with its actuator (or the joint it
  is coupled to), parent body, position and axis in the parent frame, sign convention, zero and
  limits, and which of the two index orders each array uses.
- :func:`kinematics_check`: forward kinematics of the soles and hands in the torso frame at the
  robot's reference poses (its MJCF keyframes), to compare a team's own kinematics with.
- :func:`observation_semantics`: per observation block what the simulator gave the policy in
  training (read from the training conditions: exact or estimated velocity, exact or filtered
  orientation, noise, latency) and what the robot must supply; the foot-pressure sensors' positions.
- :func:`timing_spec`: the actuation delay the policy was trained with, the order of calls, the
  clock, the graph's output.
- :func:`prior_vectors_spec` and :func:`record_prior_vectors`: whole episodes of the prior's inputs
  and targets (``prior_vectors.npz``) that a port of the prior must reproduce.

Every number comes from the robot's MJCF (``mujoco``, through
:class:`~upright.baselines.kinematics.forward.ForwardKinematics`) or the conditions; the words
say what the numbers mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np

from upright.baselines import make_controller
from upright.baselines.kinematics.forward import SIDES, ForwardKinematics, chain_data
from upright.envs.base import UprightEnv
from upright.envs.residual import StepResidual, TempoResidual
from upright.envs.conditions import Conditions, get_conditions
from upright.envs.robots import RobotSpec
from upright.envs.sensing import GRAVITY, OrientationFilter
from upright.policies.base import Policy
from upright.policies.controller_record import SENSOR_FIELDS, ControllerEpisode, record_prior_episode
from upright.policies.onnx_policy import load_spec

#: The file of an export that holds the prior's test vectors.
PRIOR_VECTORS_FILE = "prior_vectors.npz"
#: Largest target difference (rad) of the Python prior on another machine from the recorded
#: targets: last-bit differences of trigonometry and MuJoCo's kinematics between CPUs, which no
#: physics amplifies in a replay (``tests/test_controller_targets.py`` holds the priors to it).
PRIOR_PYTHON_TOLERANCE = 1e-9
#: Largest target difference (rad) a port of the prior in double precision may have from the
#: recorded targets: see :data:`PRIOR_TOLERANCE_REASON`.
PRIOR_TOLERANCE = 1e-6
PRIOR_TOLERANCE_REASON = (
    "a port evaluates the same equations in another order, with another maths library and its own "
    "kinematics in place of MuJoCo's; the last-bit differences that leaves are carried over cycles by the "
    "prior's filters and integrators, and an iterative IK (the priors' stops at a pose error of 1e-7) "
    "can grow them to its own stopping tolerance. 1e-6 rad leaves room for that, lies far below any "
    "servo's resolution, and still catches a wrong formula, sign, parameter or branch; it assumes "
    "double precision (float32 alone rounds 1 rad to about 6e-8). The Python prior itself is held "
    f"to {PRIOR_PYTHON_TOLERANCE:g} rad on any machine.")

#: Unit directions of the torso frame in words, per axis and sign.
_DIRECTIONS = (("forward (+x)", "backward (-x)"), ("left (+y)", "right (-y)"), ("up (+z)", "down (-z)"))
#: Below this lever (m/rad) a joint's end point hardly moves (the axis passes through it): the
#: joint is described by how it turns the end instead.
_TWIST_LEVER = 0.02


def training_conditions(env_kwargs: Mapping[str, Any]) -> Conditions:
    """The conditions a run trained under, from its training environment's keyword arguments: a
    preset name (none: ``lab``) or the fields :meth:`Conditions.to_dict` writes."""
    value = env_kwargs.get("conditions")
    return Conditions.from_dict(value) if isinstance(value, Mapping) else get_conditions(value)


def _round(values: Any, digits: int = 6) -> list[float]:
    """``values`` as a list of floats rounded to ``digits`` decimals (m: micrometres)."""
    return [round(float(v), digits) + 0.0 for v in np.ravel(values)]  # + 0.0: no -0.0 in the YAML


def _rotate(quat: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``vector`` rotated by the unit quaternion ``quat`` (w, x, y, z)."""
    out = np.empty(3)
    mujoco.mju_rotVecQuat(out, np.asarray(vector, dtype=float), np.asarray(quat, dtype=float))
    return out


def axis_sign(axis: np.ndarray) -> str:
    """``+x``, ``-y``, ... for an axis along a frame axis; else the unit vector written out."""
    k = int(np.argmax(np.abs(axis)))
    if abs(abs(axis[k]) - 1.0) < 1e-6:
        return f"{'+' if axis[k] > 0 else '-'}{'xyz'[k]}"
    return "(" + ", ".join(f"{v:+.4f}" for v in axis) + ")"


def direction_words(vector: np.ndarray) -> str:
    """The torso-frame direction of ``vector`` in words: its components of at least 40 % of its
    length, largest first (``backward (-x) and up (+z)``)."""
    unit = np.asarray(vector, dtype=float) / np.linalg.norm(vector)
    order = np.argsort(-np.abs(unit))
    return " and ".join(_DIRECTIONS[k][int(unit[k] < 0)] for k in order if abs(unit[k]) >= 0.4)


def _kinematics(robot: RobotSpec) -> tuple[ForwardKinematics, dict[str, str]]:
    """The robot's forward kinematics (torso fixed at the origin) and the check points: point
    name -> the site of the private model (the soles, and the hand points of
    ``baselines/data/kinematics_<robot>.yaml`` as the sites ``left_hand`` / ``right_hand``)."""
    points = {**{sole: sole for sole in robot.sole_sites}, **{f"{side[0]}_hand": f"{side}_hand" for side in SIDES}}
    return ForwardKinematics(robot), points


def _end_site(model: mujoco.MjModel, body: int, sites: list[int]) -> int:
    """The first of ``sites`` that ``body`` moves (the site's body is ``body`` or below it)."""
    for site in sites:
        b = int(model.site_bodyid[site])
        while b > 0:
            if b == body:
                return site
            b = int(model.body_parentid[b])
    raise ValueError(f"body {model.body(body).name!r} moves none of the end sites")


def _positive_effect(fk: ForwardKinematics, joint: int, ends: list[int], names: dict[int, str]) -> str:
    """What a positive angle of ``joint`` does at the zero pose, in words: how its limb's end
    point (sole, hand or head top) moves, or, where the axis passes through the end point, how it
    turns the end (its front, or its top when the axis is the front)."""
    m, d = fk.model, fk.data
    end = _end_site(m, int(m.jnt_bodyid[joint]), ends)
    axis = d.xaxis[joint]
    velocity = np.cross(axis, d.site_xpos[end] - d.xanchor[joint])  # m per rad
    if np.linalg.norm(velocity) >= _TWIST_LEVER:
        return f"{names[end]} moves {direction_words(velocity)}"
    reference, label = (np.array([1.0, 0.0, 0.0]), "front (+x)")
    if np.linalg.norm(np.cross(axis, reference)) < 0.5:
        reference, label = (np.array([0.0, 0.0, 1.0]), "top (+z)")
    return f"{names[end]} turns: its {label} moves {direction_words(np.cross(axis, reference))}"


def joints_spec(robot: RobotSpec) -> dict[str, Any]:
    """The ``joints`` section: the index orders, the conventions, and per joint in the robot's
    joint order its index, name, actuator index (the actuator whose target it follows; a coupled
    joint also names the joint it follows), body and parent body, origin and axis in the parent
    body's frame (m; the frames are those of the MJCF), sign, zero (rad) and limits (rad), and
    what a positive angle does at the zero pose (computed from the model)."""
    fk, points = _kinematics(robot)
    m = fk.model
    fk.set_joints(np.zeros(len(robot.joint_names)))
    ends = [fk.site_id(site) for site in (*points.values(), robot.head_top_site)]
    names = dict(zip(ends, (*points, robot.head_top_site)))
    actuators = robot.joint_actuator_index
    entries = []
    for k, name in enumerate(robot.joint_names):
        j = m.joint(name).id
        body = int(m.jnt_bodyid[j])
        axis = _rotate(m.body_quat[body], m.jnt_axis[j])
        entry: dict[str, Any] = {"index": k, "name": name, "actuator": actuators[k]}
        if name in robot.coupled_joints:
            entry["coupled_to"] = robot.coupled_joints[name]
        entry.update({
            "body": m.body(body).name, "parent": m.body(int(m.body_parentid[body])).name,
            "origin_m": _round(m.body_pos[body] + _rotate(m.body_quat[body], m.jnt_pos[j])),
            "axis": _round(axis), "sign": axis_sign(axis), "zero_rad": float(m.qpos0[m.jnt_qposadr[j]]),
            "lower_rad": float(m.jnt_range[j, 0]), "upper_rad": float(m.jnt_range[j, 1]),
            "positive": _positive_effect(fk, j, ends, names)})
        entries.append(entry)
    return {
        "count": len(robot.joint_names), "actuators": len(robot.actuator_names),
        "orders": (f"joint order (the {len(robot.joint_names)} entries below, index): joint_pos, joint_vel, "
                   f"Sensors.joint_pos and joint_vel, kinematics_check joint_pos; actuator order "
                   f"({len(robot.actuator_names)}, actuator): joint_target, prior_target, the action and every "
                   f"target sent"
                   + "".join(f"; {j} has no actuator of its own: it follows {c} (one motor), and its angle is "
                             f"read from its own encoder" for j, c in robot.coupled_joints.items())),
        "convention": ("angles in rad; a positive angle turns the body about `axis` (a unit vector in the parent "
                       "body's frame) by the right-hand rule; `origin_m` is the joint's position in the parent "
                       "body's frame (m); at zero_rad (the MJCF's ref) every body frame is parallel to its parent's, "
                       "and `positive` says what a positive angle does from there, in the torso frame"),
        "torso_frame": robot.torso_frame_text,
        "zero_pose": robot.zero_pose_text,
        "required": ("all: the graph and the prior take every joint; a robot lacking one cannot run this policy "
                     "(docs/export.md, 'A robot with fewer joints')" if not robot.missing_joints else
                     f"the joints of the model it was trained on ({robot.model.name}), which lacks "
                     f"{', '.join(robot.missing_joints)}: those were held at the {robot.standing_pose} pose's angles "
                     "(kinematics_check), so feed those angles as joint_pos, 0 as joint_vel and the targets sent "
                     "as joint_target (docs/your-robot.md)"),
        "entries": entries,
    }


def kinematics_check(robot: RobotSpec) -> dict[str, Any]:
    """The ``kinematics_check`` section: the check points (the body each is fixed to and its
    position in that body's frame, m) and, per reference pose (the MJCF keyframes: standing,
    prone, supine), the joint angles (rad, joint order) and each point's position in the torso
    frame (m), computed by MuJoCo's forward kinematics with the torso fixed."""
    fk, points = _kinematics(robot)
    m = fk.model
    hands = chain_data(robot.name)["hands"]
    definitions = {}
    for point, site in points.items():
        i = fk.site_id(site)
        definitions[point] = {"body": m.body(int(m.site_bodyid[i])).name, "pos_m": _round(m.site_pos[i])}
    for side in SIDES:
        definitions[f"{side[0]}_hand"]["what"] = (f"the hand point on {hands[side]['body']} "
                                                  f"(baselines/data/kinematics_{robot.name}.yaml)")
    for point in robot.sole_sites:
        definitions[point]["what"] = "the sole frame's origin: the ground contact plane under the ankle"
    poses = {}
    for pose in robot.poses:
        joints = fk.keyframe_joints(pose)
        fk.set_joints(joints)
        poses[pose] = {"joint_pos_rad": _round(joints, 9),
                       "points_m": {point: _round(fk.site_pose(site)[0]) for point, site in points.items()}}
    return {"frame": f"torso frame ({robot.torso_frame_text}); positions in m, rounded to 1e-6",
            "use": "set the joint angles of a pose, run your forward kinematics and compare each point's position "
                   "(1e-6 m with the joints section's geometry; a team's own model shows where it differs)",
            "points": definitions, "poses": poses}


def pressure_sensors(robot: RobotSpec, model: mujoco.MjModel) -> list[dict[str, Any]]:
    """The foot-pressure sensors in observation order: name, the sole on whose foot it sits, its
    position in that sole's frame (m) and the half size of the box (m, the site's axes) over whose
    contacts it sums the normal forces."""
    soles = {int(model.site(s).bodyid[0]): model.site(s) for s in robot.sole_sites}
    rows = []
    for k, name in enumerate(robot.pressure_sensors):
        sensor = model.site(name)
        sole = soles.get(int(sensor.bodyid[0]))
        if sole is None:
            raise ValueError(f"pressure sensor {name!r} of {robot.name} is not on the body of a sole site")
        inverse = np.empty(4)
        mujoco.mju_negQuat(inverse, sole.quat)
        rows.append({"index": k, "name": name, "sole": sole.name,
                     "pos_m": _round(_rotate(inverse, sensor.pos - sole.pos)), "half_size_m": _round(sensor.size)})
    return rows


def _noise(sigma: float, unit: str) -> str:
    """`` plus Gaussian noise of σ ...`` or nothing for ``sigma`` 0."""
    return f" plus Gaussian noise (sigma {sigma:g} {unit})" if sigma else ""


def observation_semantics(env: UprightEnv, conditions: Conditions) -> dict[str, Any]:
    """Per observation block of ``env`` (the first part of each layout name): ``simulation``, what
    the simulator gave the policy under the training ``conditions``, and ``robot``, what the robot
    must supply; ``latency`` (what the readings' age was in training) and the foot-pressure
    sensors. The blocks' values are ``observation_from_sensors``'s of one cycle's Sensors."""
    robot, period = env.robot, env.robot.control_period
    c = conditions
    slices = env.observation_slices()
    readings = "joint_pos, joint_vel, gyro, accel, quat (gravity, fused) and foot_pressure"
    latency = c.sensor_latency_cycles
    jitter = c.sensor_latency_jitter_cycles
    difference = ("(joint_pos[t] - joint_pos[t-1]) / control_period over one control cycle (rad/s; 0 in the "
                  "first cycle)")
    if c.joint_velocity == "difference":
        velocity_sim = f"the backward difference of the measured angles (joint_pos, noise included): {difference}"
        velocity_trained = "trained with exactly this estimate"
    else:
        spread = math.sqrt(2.0) * c.joint_noise / period
        velocity_sim = "the simulator's exact joint velocities (no noise)"
        velocity_trained = ("trained with exact velocities: the estimate's noise"
                            + (f" (about sqrt(2) x {c.joint_noise:g} rad / {period:g} s = {spread:.2g} rad/s from "
                               "the joint noise it was trained with)" if c.joint_noise else "")
                            + " is new to the policy")
    if c.orientation == "filter":
        orientation_sim = (f"the complementary filter upright.envs.sensing.OrientationFilter on the noisy gyro and "
                           f"accelerometer: it integrates the gyro and turns the estimate towards the accelerometer's "
                           f"up at {OrientationFilter.GAIN:g}/s times the angle between them, that gain fading from "
                           f"full to zero as the accelerometer's magnitude departs from {GRAVITY} m/s^2 by "
                           f"{OrientationFilter.FADE[0]:.0%} to {OrientationFilter.FADE[1]:.0%}; no magnetometer; "
                           f"started from the true orientation")
        orientation_trained = "trained with this filter's lag: the same filter on the robot gives it what it saw"
    else:
        orientation_sim = "the simulator's exact orientation of the IMU"
        orientation_trained = "trained with the exact orientation: a filter's lag and tilt error are new to the policy"
    pressure_noise = c.pressure_noise * env.sim.weight
    blocks: dict[str, dict[str, str]] = {
        "joint_pos": {
            "simulation": "each joint's angle" + _noise(c.joint_noise, "rad")
                          + (f", minus its actuator's encoder zero error drawn per episode uniformly in "
                             f"+-{c.zero_offset:g} rad" if c.zero_offset else ""),
            "robot": "each joint's encoder angle (rad, joint order), zero and sign as in `joints`"},
        "joint_vel": {
            "simulation": velocity_sim,
            "robot": f"the backward difference of the encoder angles: {difference} (a NAO has no velocity sensor); "
                     + velocity_trained},
        "joint_target": {
            "simulation": "the targets sent to the servos last cycle (actuator order) after clipping to the joint "
                          "limits (action.joints lower_rad, upper_rad); in an episode's first cycle the targets the "
                          "servos held at the start",
            "robot": "the targets this runtime sent last cycle, clipped to the joint limits as sent (not the "
                     "unclipped prior_target + residual); in the first cycle the position commands in force (the "
                     "measured angles if the servos were off)"},
        "gyro": {
            "simulation": "the IMU's angular velocity" + _noise(c.gyro_noise, "rad/s"),
            "robot": "the gyroscope (rad/s, bias removed) in the IMU frame: fixed to the torso, x forward, y left, "
                     "z up (rotate the readings into it if the chip is mounted otherwise)"},
        "accel": {
            "simulation": "the IMU's specific force" + _noise(c.accel_noise, "m/s^2"),
            "robot": "the accelerometer (m/s^2) in the IMU frame: specific force, +9.81 on z standing still upright"},
        "gravity": {
            "simulation": "the unit gravity direction in the IMU frame, of the orientation (see orientation)",
            "robot": "the same of the robot's orientation estimate, by the layout's formulas"},
        "fused": {
            "simulation": "fused pitch, fused roll and hemisphere (Allgeuer & Behnke 2015) of the orientation (see "
                          "orientation)",
            "robot": "upright.envs.sensors.fused_angles of the robot's orientation estimate; the fused yaw is not "
                     "observed, so yaw drift does not matter"},
        "foot_pressure": {
            "simulation": "per sensor the summed normal force (N) of the foot's contacts inside its box"
                          + (f", plus Gaussian noise (sigma {c.pressure_noise:g} of the weight = "
                             f"{pressure_noise:.3g} N), floored at 0" if c.pressure_noise else ""),
            "robot": f"per sensor (order and positions: pressure_sensors) the normal force in N: "
                     f"{robot.pressure_readings_text}"},
    }
    if "command" in slices:
        blocks["command"] = {"simulation": "the episode's walk command (vx m/s, vy m/s, yaw rate rad/s)",
                             "robot": "the command given to the prior (prior.set_command): the same three numbers"}
    for block in ("odometry", "gait"):
        if block in slices:
            blocks[block] = {"simulation": "the prior's own state after this cycle's step (layout: source)",
                             "robot": "the same, read from the prior the runtime runs"}
    if "prior_target" in slices:
        blocks["prior_target"] = {"simulation": "the prior's targets this cycle: prior.step(this cycle's Sensors)",
                                  "robot": "the same from the prior fed the robot's Sensors (prior_vectors checks "
                                           "a port)"}
    return {
        "trained_with": {"joint_velocity": c.joint_velocity, "orientation": c.orientation,
                         "sensor_latency_cycles": latency, "sensor_latency_jitter_cycles": jitter,
                         "joint_noise_rad": c.joint_noise, "gyro_noise_rad_s": c.gyro_noise,
                         "accel_noise_m_s2": c.accel_noise, "pressure_noise_weight": c.pressure_noise,
                         "zero_offset_rad": c.zero_offset},
        "latency": (f"in training the readings ({readings}) were "
                    + (f"measured {latency}" + (f" to {latency + jitter} (drawn per episode)" if jitter else "")
                       + f" control cycles before the cycle that reads them ({latency * period * 1000:g}"
                       + (f" to {(latency + jitter) * period * 1000:g}" if jitter else "") + " ms)"
                       if latency or jitter else "those of the cycle that reads them (no latency)")
                    + "; Sensors.time and joint_target are always the cycle's own. On the robot give the newest "
                      "readings; their age is the robot's own latency"),
        "orientation": {"simulation": orientation_sim,
                        "robot": "the robot's estimate of the IMU frame's orientation as a quaternion (w, x, y, z) "
                                 "from the IMU frame to a world frame with z up; " + orientation_trained},
        "imu": {"site": robot.imu_site, "pos_m": _round(env.sim.model.site(robot.imu_site).pos),
                "frame": "the torso frame's axes (x forward, y left, z up); position in the torso frame"},
        "blocks": blocks,
        "pressure_sensors": pressure_sensors(robot, env.sim.model),
    }


#: What a residual that acts inside its prior passes each of :func:`prior_cycle_inputs`' calls.
_CALL_ARGUMENTS = {"set_tempo": "the last action's tempo factor (action.tempo.factor)",
                   "set_step_residual": "the last action's offsets (action.offset: m, m, rad)"}


def timing_spec(env: UprightEnv, conditions: Conditions, residual: bool,
                calls: tuple[str, ...] = ()) -> dict[str, Any]:
    """The ``timing`` section: the control period, the actuation delay the policy was trained
    with (the robot's own delay plus the conditions' extra; the runtime must not add it), the
    order of calls, the clock and the graph's output (``residual``: a policy on a prior;
    ``calls``: :func:`prior_cycle_inputs`)."""
    robot = env.robot
    delay = robot.delay_cycles + conditions.extra_delay_cycles
    jitter = conditions.delay_jitter_cycles
    walk = env.task == "walk"
    order = ["prior = make_controller(prior.name, robot, task, params=prior.params)"] if residual else []
    if residual and walk:
        order.append("prior.set_command(command) before reset (vx m/s, vy m/s, yaw rate rad/s)")
    if residual:
        order.append("first cycle: prior.reset(sensors, numpy.random.default_rng(seed)) with the first Sensors (any "
                     "seed; prior_vectors names each recorded episode's), then prior_targets = prior.step(sensors) "
                     "with the same Sensors")
    task_block = ("task_block" if walk else "None")
    order.append(f"every cycle: observation = observation_from_sensors(sensors, {task_block}"
                 + (", prior_targets" if residual else "")
                 + "); action = graph(observation); targets "
                 + ("= the prior's targets" if "set_step_residual" in calls else "from the action (action.target_rad)")
                 + ", clipped to the joint limits; send them at once"
                 + ("; task_block: the command, then (observe_odometry) the prior's feedback.measured (zeros "
                    "before one) and feedback.correction, then (observe_gait) prior.gait, as the layout's "
                    "command, odometry and gait entries" if walk else ""))
    order.append("next cycle: read the Sensors (joint_target = the targets sent)"
                 + "".join(f"; prior.{call}({_CALL_ARGUMENTS[call]})" for call in calls)
                 + ("; prior_targets = prior.step(sensors)" if residual else ""))
    return {
        "control_period_s": robot.control_period,
        "actuation_delay_cycles": delay,
        "actuation_delay_jitter_cycles": jitter,
        "meaning": (f"a target commanded in cycle t reaches the servos in cycle t + {delay}"
                    + (f" (+ 0..{jitter} more, drawn per episode)" if jitter else "")
                    + f"; one cycle is {robot.control_period * 1000:g} ms. This is the delay the policy was "
                      "trained with: the robot's physical delay (its servo bus and loop) as modelled, which it "
                      "learned to expect. The runtime must NOT emulate it: send every target in the cycle it is "
                      "computed"),
        "call_order": order,
        "sensors_time": "Sensors.time: seconds since the episode started, 0 in the first cycle (the one of "
                        "prior.reset) and one control period more each cycle; on a robot the seconds since the "
                        "motion (get-up, walk) started",
        "graph_output": "action, float32 [batch, size] in [-1, 1] (clipped in the graph); ExportedActor returns "
                        "(size,) for an observation of shape (n,) and (batch, size) for (batch, n)",
    }


def prior_cycle_inputs(env: UprightEnv) -> tuple[str, ...]:
    """The :data:`~upright.policies.controller_record.CYCLE_INPUTS` through which ``env``'s residual
    acts inside its prior: ``set_tempo`` for a get-up with ``tempo_range``, ``set_step_residual``
    for a walk with ``residual_on="steps"``."""
    if isinstance(env.residual, TempoResidual):
        return ("set_tempo",)
    if isinstance(env.residual, StepResidual):
        return ("set_step_residual",)
    return ()


def prior_vectors_spec(prior: str, episodes: int, first_seed: int, calls: tuple[str, ...] = ()) -> dict[str, Any]:
    """The ``prior_vectors`` section for a policy on the prior ``prior`` whose vectors hold
    ``episodes`` episodes from seed ``first_seed`` and that acts inside its prior through ``calls``
    (:func:`prior_cycle_inputs`): the file, its keys, how to feed them and the tolerances."""
    fields = ", ".join(SENSOR_FIELDS)
    return {
        "file": PRIOR_VECTORS_FILE, "prior": prior, "episodes": episodes, "first_seed": first_seed,
        "keys": (f"per episode k (0..{episodes - 1}): episode<k>.seed (the episode's seed, also the seed of "
                 f"the generator given to prior.reset), episode<k>.command (walk: vx m/s, vy m/s, yaw rate rad/s), "
                 f"episode<k>.<field> for every Sensors field ({fields}; float64, one row per cycle, as the prior "
                 f"was given them), episode<k>.targets (rad, actuator order, one row per cycle)"
                 + "".join(f", episode<k>.{call} (the argument of prior.{call} per cycle, called before that "
                           f"cycle's step; NaN where it was not called)" for call in calls)),
        "feed": ("a fresh prior (timing.call_order): set_command(command) (walk), reset(Sensors of cycle 0, "
                 "default_rng(seed)), then per cycle "
                 + "".join(f"{call}(its value, unless NaN), " for call in calls)
                 + "step(Sensors of that cycle); compare each cycle's targets with episode<k>.targets"),
        "tolerance_rad": PRIOR_TOLERANCE,
        "tolerance_reason": PRIOR_TOLERANCE_REASON,
        "python_tolerance_rad": PRIOR_PYTHON_TOLERANCE,
    }


def record_prior_vectors(policy: Policy, env_id: str, env_kwargs: dict[str, Any], episodes: int,
                         first_seed: int, on_episode: Callable[[], object] | None = None) -> dict[str, np.ndarray]:
    """``episodes`` whole episodes from seed ``first_seed`` of the residual ``policy`` in its
    environment: the inputs its prior was given and the prior's targets every cycle, as the
    arrays of :data:`PRIOR_VECTORS_FILE` (keys ``episode<k>.<name>``). ``on_episode`` is called
    after each episode (a progress bar's ``update``)."""
    arrays: dict[str, np.ndarray] = {}
    for k in range(episodes):
        env = gym.make(env_id, **env_kwargs)
        try:
            arrays.update(record_prior_episode(env, policy, first_seed + k).arrays(f"episode{k}."))
        finally:
            env.close()
        if on_episode is not None:
            on_episode()
    return arrays


def replay_prior_vectors(directory: str | Path) -> list[tuple[ControllerEpisode, np.ndarray]]:
    """The episodes of the export folder ``directory``'s :data:`PRIOR_VECTORS_FILE`, each with
    the targets ``(cycles, nu)`` (rad) a fresh prior built from the spec's ``prior`` section gives
    their recorded inputs (:meth:`~upright.policies.controller_record.ControllerEpisode.replay`):
    the Python reference a port is compared with."""
    spec = load_spec(directory)
    prior = spec["prior"]
    with np.load(Path(directory) / PRIOR_VECTORS_FILE) as data:
        episodes = [ControllerEpisode.from_arrays(data, f"episode{k}.")
                    for k in range(spec["prior_vectors"]["episodes"])]
    return [(episode, episode.replay(make_controller(prior["name"], spec["robot"], spec["task"],
                                                     params=prior["params"])))
            for episode in episodes]


__all__ = ["PRIOR_PYTHON_TOLERANCE", "PRIOR_TOLERANCE",
           "PRIOR_TOLERANCE_REASON", "PRIOR_VECTORS_FILE", "axis_sign",
           "direction_words", "joints_spec", "kinematics_check", "observation_semantics", "pressure_sensors",
           "prior_cycle_inputs", "prior_vectors_spec", "record_prior_vectors", "replay_prior_vectors", "timing_spec",
           "training_conditions"]
