"""The simulation core, without Gymnasium: one robot on one terrain under one set of conditions.

``Simulation(robot, conditions)`` loads the robot's MJCF into a scene built in code, ``reset(pose,
seed)`` starts an episode, and ``step(joint_targets)`` advances one control period of the robot
(NAO 12 ms, Wolfgang 10 ms) and returns the robot's :class:`~upright.envs.sensors.Sensors`.
Privileged getters (CoM, head height, torso pose, contact forces) are for ``info`` and metrics,
never for controllers. A physics blow-up sets :attr:`Simulation.unstable` instead of raising.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Collection, Iterator
from typing import NamedTuple

import mujoco
import numpy as np

from upright.envs.conditions import (SERVO_PARAMETERS, Conditions, SampledConditions, check_servo_keys,
                                     get_conditions, servo_entry)
from upright.envs.kernels import (GROUND, IGNORED, clip_finite, heading_motion, max_ground_force, posture_values,
                                  read_sensors, sane_state)
from upright.envs.numeric import consecutive, gather, norm
from upright.envs.observation import READINGS, block_slices, observation_size
from upright.envs.robots import RobotSpec, get_robot
from upright.envs.sensing import SensingModel
from upright.envs.sensors import Sensors, fused_tilt
from upright.envs.servo import Servos
from upright.envs.terrain import build_scene, randomize_turf

#: Joint speeds above this (rad/s, m/s for the free joint) mean the physics has blown up.
MAX_SANE_VELOCITY = 200.0
#: The warning MuJoCo counts when the accelerations become NaN or huge (a blow-up).
BADQACC = int(mujoco.mjtWarning.mjWARN_BADQACC)
#: MuJoCo's pyramidal friction cone (``opt.cone``), whose contact forces are decoded from edge forces.
PYRAMIDAL = int(mujoco.mjtCone.mjCONE_PYRAMIDAL)
#: Reorders mj_objectVelocity's (angular, linear) into (linear, angular).
LINEAR_FIRST = np.array([3, 4, 5, 0, 1, 2])
#: The readings :func:`~upright.envs.kernels.read_sensors` writes, in the order of its argument ``at``.
_READ = ("joint_pos", "joint_vel", "gyro", "accel", "quat", "fused", "foot_pressure")


class Actuation(NamedTuple):
    """Live views of MuJoCo's arrays that the compiled reward terms read (a tuple, so that a kernel
    call can unpack it)."""

    force: np.ndarray  # actuator forces (N or N m), actuator order
    force_limit: np.ndarray  # their limits, which wear lowers
    qpos: np.ndarray  # the data's qpos
    qvel: np.ndarray  # the data's qvel
    qpos_adr: np.ndarray  # qpos addresses of the actuated joints, actuator order
    qvel_adr: np.ndarray  # qvel addresses of the actuated joints, actuator order


class Simulation:
    """MuJoCo model + data of one robot in one scene, with servo, sensor and disturbance models.

    Args:
        robot: a robot name (:data:`~upright.envs.robots.ROBOT_NAMES`) or a :class:`RobotSpec`.
        conditions: a preset name or a :class:`Conditions` (default ``lab``).
        edit: changes the scene's :class:`mujoco.MjSpec` before it compiles, for a model other
            than the free-moving robot (the identification's robot hanging with its torso fixed,
            :func:`upright.tuning.identify.hang`). It keeps the robot's joints, actuators and
            keyframes; :meth:`reset`'s ``height_offset`` and its lift out of the ground move the
            free joint's z, so an edit that removes the free joint keeps the robot off the ground
            and resets with ``height_offset`` 0.
    """

    def __init__(self, robot: str | RobotSpec, conditions: str | Conditions | None = None, *,
                 edit: Callable[[mujoco.MjSpec], None] | None = None) -> None:
        self.robot = get_robot(robot) if isinstance(robot, str) else robot
        self.conditions = get_conditions(conditions)
        spec = build_scene(self.robot, self.conditions)
        if edit is not None:
            edit(spec)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self._check_model()
        m, r = self.model, self.robot
        #: Each actuator's servo class: the MJCF default class it takes its parameters from.
        self.servo_classes = tuple(spec.actuator(name).classname.name for name in r.actuator_names)
        #: dof addresses of the hinge joints (robot joint order) and the actuator each one follows.
        self._joint_dofs = np.array([m.jnt_dofadr[m.joint(j).id] for j in r.joint_names])
        self._joint_actuator = np.array(r.joint_actuator_index)
        self._set_servo_parameters()
        self.n_substeps = int(round(r.control_period / m.opt.timestep))
        if not np.isclose(self.n_substeps * m.opt.timestep, r.control_period):
            raise ValueError(
                f"control period {r.control_period} s is not a multiple of the timestep {m.opt.timestep} s"
            )
        # Where the robot's quantities lie in the data's arrays (slices where they are consecutive).
        self._torso = m.body(r.torso_body).id
        self._imu = m.site(r.imu_site).id
        self._head_top = m.site(r.head_top_site).id
        self._soles = [m.site(s).id for s in r.sole_sites]
        self._gyro, self._accel, self._quat = (self._sensor_slice(s) for s in (r.gyro_sensor, r.accel_sensor,
                                                                               r.quat_sensor))
        # The joints', IMU's and pressure sensors' addresses for the compiled read-out (read_sensors),
        # and where each Sensors field lies in its output (the layout of READINGS).
        self._sensor_adr = (np.array([m.jnt_qposadr[m.joint(j).id] for j in r.joint_names]),
                            np.array([m.jnt_dofadr[m.joint(j).id] for j in r.joint_names]),
                            np.array([self._gyro.start, self._accel.start, self._quat.start]),
                            np.array([self._sensor_slice(s).start for s in r.pressure_sensors]))
        self._sensor_slices = block_slices(READINGS, r)
        self._read_slices = tuple(self._sensor_slices[name] for name in _READ)
        self._read_at = np.array([part.start for part in self._read_slices])
        self._sensor_size = observation_size(READINGS, r)
        #: qpos and qvel addresses of the actuated joints, actuator order.
        actuated_qadr, actuated_vadr = m.jnt_qposadr[m.actuator_trnid[:, 0]], m.jnt_dofadr[m.actuator_trnid[:, 0]]
        self._actuated_qadr, self._actuated_vadr = consecutive(actuated_qadr), consecutive(actuated_vadr)
        # Views of the data's arrays, read every step: MuJoCo allocates an MjData's arrays once, so
        # they stay valid and always show the current values.
        d = self.data
        self._qpos, self._qvel, self._ctrl, self._sensordata = d.qpos, d.qvel, d.ctrl, d.sensordata
        self._warning_counts = d.warning.number
        self._actuator_force = d.actuator_force
        self._force_limit = m.actuator_forcerange[:, 1]  # a view of the model's, which wear changes
        self._torso_xfrc = d.xfrc_applied[self._torso, :2]  # horizontal force on the torso (N, world)
        self._torso_xpos, self._torso_xquat = d.xpos[self._torso], d.xquat[self._torso]
        self._torso_xmat, self._torso_com = d.xmat[self._torso], d.subtree_com[self._torso]
        self._head_top_xpos = d.site_xpos[self._head_top]
        self._gyro_data = self._sensordata[self._gyro]  # noise-free
        self._velocity = np.zeros(6)  # mj_objectVelocity's output: angular, then linear
        # The whole arrays heading_motion reads the torso's motion from, and the root of its tree.
        self._motion_arrays = (d.cvel, d.subtree_com, d.xipos, d.xpos, d.xquat)
        self._torso_root = int(m.body_rootid[self._torso])
        self._ctrl_shape = (m.nu,)  # of a joint-target vector (actuator order)
        #: For compiled reward terms (``upright.envs.kernels``): live views of the actuator state.
        self.actuation = Actuation(self._actuator_force, self._force_limit, self._qpos, self._qvel, actuated_qadr,
                                   actuated_vadr)
        self._wrench = np.zeros(6)  # mj_contactForce's output: force, then torque (contact frame)
        self._robot_bodies = np.array([b for b in range(m.nbody) if m.body_rootid[b] == self._torso])
        self._is_ground = m.geom_bodyid == 0
        # Per geom (lists, for the per-contact loop): whether it is the ground's, its body's name.
        self._ground_geom = self._is_ground.tolist()
        self._geom_body_name = [m.body(b).name for b in m.geom_bodyid.tolist()]
        #: Per set of excluded bodies: the geom → body index map of :meth:`max_ground_force`.
        self._geom_body_index: dict[frozenset[str], np.ndarray] = {}
        self._nominal = {
            "body_mass": m.body_mass.copy(),
            "body_inertia": m.body_inertia.copy(),
            "body_ipos": m.body_ipos.copy(),
            "geom_friction": m.geom_friction.copy(),
            "dof_damping": m.dof_damping.copy(),
            "dof_armature": m.dof_armature.copy(),
            "dof_frictionloss": m.dof_frictionloss.copy(),
        }
        #: The mass scale, CoM offsets, torso mass and servo factors the model's inertials and
        #: joints were last set to (none yet).
        self._inertial: tuple[object, ...] | None = None
        self.total_mass = float(m.body_subtreemass[self._torso])
        #: The robot's weight (N): its mass times the model's gravity (along -z in every scene).
        self.weight = self.total_mass * abs(float(m.opt.gravity[2]))
        self.servos = Servos(m, r.control_period)
        self.sensing = SensingModel(self._sensor_slices, self.conditions.joint_velocity, self.conditions.orientation)
        #: Per joint (robot joint order), the encoder's zero offset (rad) this episode, or None.
        self._joint_offset: np.ndarray | None = None
        self.rng = np.random.default_rng(0)
        self.sampled: SampledConditions | None = None
        self.unstable = False
        self._last_command = np.zeros(m.nu)
        self._setpoint = np.zeros(m.nu)
        self._ctrl_low = m.actuator_ctrlrange[:, 0].copy()
        self._ctrl_high = m.actuator_ctrlrange[:, 1].copy()
        #: A constant horizontal force on the torso (N, world x/y) that the caller sets, e.g. a start's
        #: push; it adds to the preset's random pushes and impulses on every physics step.
        self.torso_force = np.zeros(2)
        #: Whether the scheduled impulses act; :meth:`pre_roll` switches them off, since their times
        #: count from the episode's clock, which starts after the pre-roll.
        self.impulses_on = True
        self._push_scale = self.conditions.push_force * (
            self.total_mass / self.conditions.push_reference_mass if self.conditions.push_reference_mass else 1.0
        )
        #: The fraction of the preset's random push that acts (1: the preset's ``push_force``). A
        #: training curriculum raises it towards 1 (:meth:`UprightEnv.set_push_strength`); the
        #: random numbers drawn do not depend on it.
        self.push_strength = 1.0
        #: How much of the conditions' model variation (servo factors, zero offsets, torso load,
        #: sensor latency) each reset's draw keeps (1: all of it, 0: our own model;
        #: :meth:`SampledConditions.toward_nominal`). A training curriculum raises it towards 1
        #: (:meth:`UprightEnv.set_model_variation`); the random numbers drawn do not depend on it.
        self.model_variation = 1.0

    # ------------------------------------------------------------------ set-up
    def _sensor_slice(self, name: str) -> slice:
        """Where the sensor ``name``'s values lie in ``data.sensordata``."""
        sensor = self.model.sensor(name)
        start = int(sensor.adr[0])
        return slice(start, start + int(sensor.dim[0]))

    def _set_servo_parameters(self) -> None:
        """Replace the robot file's servo parameters by the conditions' ``servo_parameters`` (by
        servo class or actuator name): the position gain (kp, its bias to match), the torque limit,
        and the damping, armature and friction loss of every joint the actuator drives."""
        m, r, params = self.model, self.robot, self.conditions.servo_parameters
        check_servo_keys("servo_parameters", params, r.actuator_names, self.servo_classes, r.name)
        for i, (name, servo_class) in enumerate(zip(r.actuator_names, self.servo_classes)):
            entry = servo_entry(params, name, servo_class, r.name)
            if entry is None:
                continue
            if entry.gain is not None:
                m.actuator_gainprm[i, 0], m.actuator_biasprm[i, 1] = entry.gain, -entry.gain
            if entry.torque is not None:
                m.actuator_forcerange[i] = (-entry.torque, entry.torque)
            dofs = self._joint_dofs[self._joint_actuator == i]
            for parameter, array in (("damping", m.dof_damping), ("armature", m.dof_armature),
                                     ("frictionloss", m.dof_frictionloss)):
                if getattr(entry, parameter) is not None:
                    array[dofs] = getattr(entry, parameter)

    def _check_model(self) -> None:
        m, r = self.model, self.robot
        joints = tuple(m.joint(i).name for i in range(m.njnt) if m.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE)
        actuators = tuple(m.actuator(i).name for i in range(m.nu))
        # A user's model keeps its own tree, so its joints may come in another order (every joint is
        # read by name); our own file keeps the description's order.
        order = sorted if r.model is not None else tuple
        if order(joints) != order(r.joint_names):
            raise ValueError(f"{r.simulated_mjcf} joint order {joints} differs from the robot description "
                             f"{r.joint_names}")
        if actuators != r.actuator_names:
            raise ValueError(f"{r.simulated_mjcf} actuator order {actuators} differs from the robot description")
        missing = [k for k in r.poses if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, k) < 0]
        if missing:
            raise ValueError(f"{r.simulated_mjcf} lacks the keyframes {missing}")
        #: Pose name → keyframe id (a name lookup in the model costs microseconds per reset).
        self._keyframes = {k: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, k) for k in r.poses}

    def reset(
        self,
        pose: str | None = None,
        seed: int | None = None,
        *,
        height_offset: float = 0.0,
        qpos: np.ndarray | None = None,
        ctrl: np.ndarray | None = None,
    ) -> Sensors:
        """Start an episode in the named ``pose`` (default: standing), ``height_offset`` (m) above
        its keyframe, or in an explicit ``qpos``/``ctrl``; conditions are drawn from ``seed``.
        The robot is lifted out of the terrain if the pose would penetrate it."""
        pose = pose or self.robot.standing_pose
        if pose not in self._keyframes:
            raise ValueError(f"unknown pose {pose!r} for {self.robot.name}; valid poses: {', '.join(self.robot.poses)}")
        m, d = self.model, self.data
        self.rng = np.random.default_rng(seed)
        self.sampled = self.conditions.sample(self.robot.actuator_names, self.rng, self.servo_classes, self.robot.name)
        if self.model_variation != 1.0:
            self.sampled = self.sampled.toward_nominal(self.model_variation)
        self._apply_sampled(self.sampled)
        if self.conditions.terrain == "turf":
            randomize_turf(m, self.rng)
        mujoco.mj_resetDataKeyframe(m, d, self._keyframes[pose])
        if qpos is not None:
            if np.shape(qpos) != (m.nq,):
                raise ValueError(f"qpos must have shape ({m.nq},), got {np.shape(qpos)}")
            d.qpos[:] = qpos
        if ctrl is not None:
            if np.shape(ctrl) != (m.nu,):
                raise ValueError(f"ctrl must have shape ({m.nu},), got {np.shape(ctrl)}")
            d.ctrl[:] = ctrl
        d.qpos[2] += height_offset
        mujoco.mj_forward(m, d)
        self._lift_out_of_ground()
        self.unstable = False
        self._setpoint = d.ctrl.copy()
        self._warnings = int(self._warning_counts[BADQACC])
        return self.restart_clock()

    def _apply_sampled(self, s: SampledConditions) -> None:
        m, nom = self.model, self._nominal
        bodies = self._robot_bodies
        m.geom_friction[:, 0] = nom["geom_friction"][:, 0] * s.friction_scale
        factors = s.servo_factors
        inertial = (s.mass_scale, tuple(s.com_offset.tolist()), s.torso_mass, tuple(s.torso_com_offset.tolist()),
                    None if factors is None else factors.tobytes())
        if inertial == self._inertial:
            return  # the masses, joints and the constants derived from them are as the last reset left them
        m.body_mass[bodies] = nom["body_mass"][bodies] * s.mass_scale
        m.body_inertia[bodies] = nom["body_inertia"][bodies] * s.mass_scale
        m.body_ipos[bodies] = nom["body_ipos"][bodies] + s.com_offset
        if s.torso_mass:
            torso, mass = self._torso, float(m.body_mass[self._torso])
            if mass + s.torso_mass <= 0.0:
                raise ValueError(f"torso_mass {s.torso_mass:g} kg leaves the torso of {mass:g} kg without mass")
            m.body_inertia[torso] *= (mass + s.torso_mass) / mass
            m.body_mass[torso] = mass + s.torso_mass
        m.body_ipos[self._torso] += s.torso_com_offset
        dofs = self._joint_dofs
        for column, parameter in enumerate(SERVO_PARAMETERS[2:], start=2):
            array = getattr(m, f"dof_{parameter}")
            array[dofs] = nom[f"dof_{parameter}"][dofs] * (1.0 if factors is None else
                                                           factors[self._joint_actuator, column])
        mujoco.mj_setConst(m, self.data)
        self._inertial = inertial

    def place(self, qpos: np.ndarray, ctrl: np.ndarray) -> Sensors:
        """Put the robot at rest into ``qpos`` with the servos holding ``ctrl`` (what a helper does
        who stands a fallen robot back up), keeping everything else: the sampled robot (wear,
        masses, friction), the terrain and the clock, so wear windows that have passed do not recur."""
        m, d = self.model, self.data
        if np.shape(qpos) != (m.nq,) or np.shape(ctrl) != (m.nu,):
            raise ValueError(f"qpos and ctrl must have shapes ({m.nq},) and ({m.nu},), got {np.shape(qpos)} and {np.shape(ctrl)}")
        d.qpos[:] = qpos
        d.qvel[:] = 0.0
        d.ctrl[:] = ctrl
        mujoco.mj_forward(m, d)
        self._lift_out_of_ground()
        self.unstable = False
        self.servos.refill(d.ctrl)
        self._setpoint = d.ctrl.copy()
        self._last_command = d.ctrl.copy()
        self.sensing.restart(self.sampled.sensor_latency_cycles)
        return self.sensors()

    def _lift_out_of_ground(self) -> None:
        depth = self.floor_penetration()
        if depth > 0.0:
            self.data.qpos[2] += depth
            mujoco.mj_forward(self.model, self.data)

    # ------------------------------------------------------------------ stepping
    def step(self, joint_targets: np.ndarray) -> Sensors:
        """Send joint position targets (rad, actuator order) and simulate one control period."""
        m, d = self.model, self.data
        targets = np.asarray(joint_targets, dtype=float)
        if targets.shape != self._ctrl_shape:
            raise ValueError(f"joint_targets must have shape ({m.nu},) for {self.robot.name}, got {targets.shape}")
        clipped = np.empty(self._ctrl_shape)
        if not clip_finite(targets, self._ctrl_low, self._ctrl_high, clipped):
            raise ValueError(f"joint_targets contain non-finite values: {targets}")
        self._last_command = clipped
        self._setpoint = self.servos.command(clipped, d.time, d.qpos)
        if self.unstable:
            return self.sensors()
        push = self._period_force()
        if self.servos.has_play:
            self._step_with_play(push)
        elif self._impulses_act():
            self._ctrl[:] = self._setpoint
            self._step_with_impulses(push)
        else:
            self._ctrl[:] = self._setpoint
            self._torso_xfrc[:] = push
            mujoco.mj_step(m, d, nstep=self.n_substeps)
        self._check_stability()
        return self.sensors()

    @contextlib.contextmanager
    def pre_roll(self) -> Iterator[None]:
        """Steps inside this block bring the robot into its start state: the preset's random pushes,
        servo play and wear act, the scheduled impulses do not (their times count from the episode's
        clock, :meth:`restart_clock`)."""
        self.impulses_on = False
        try:
            yield
        finally:
            self.impulses_on = True

    def _period_force(self) -> np.ndarray:
        """This control period's horizontal force on the torso (N, world x/y) besides the scheduled
        impulses: :attr:`torso_force` plus a random push of magnitude uniform in [0, push scale / √n]
        times :attr:`push_strength` for a period of n physics steps, direction uniform, held for the
        whole period (no push, and no draw, without pushes).

        A force drawn anew every physics step of ``dt`` with magnitude uniform in [0, F] gives a
        zero-mean impulse per control period ``T = n dt`` with per-axis variance ``n dt² F²/6``;
        one draw held for ``T`` with magnitude uniform in [0, F/√n] gives ``T² F²/(6 n)``, the same.
        So the RMS impulse per control period (and per second, the statistic the thesis protocol is
        matched on, see :attr:`Conditions.push_force`) is unchanged, and the period runs as one
        batched ``mj_step(nstep)``."""
        if self._push_scale <= 0.0:
            return self.torso_force
        magnitude = self.push_strength * self.rng.uniform(0.0, self._push_scale / np.sqrt(self.n_substeps))
        angle = self.rng.uniform(0.0, 2.0 * np.pi)
        return magnitude * np.array([np.cos(angle), np.sin(angle)]) + self.torso_force

    def _impulse_force(self, time: float, force: np.ndarray | None = None) -> np.ndarray:
        """``force`` (N, world x/y; default zero) plus the scheduled impulses acting at ``time`` (s)
        (none while :attr:`impulses_on` is off)."""
        force = np.zeros(2) if force is None else force
        if not self.impulses_on:
            return force
        for imp in self.conditions.impulses:
            if imp.time <= time < imp.time + imp.duration:
                force += imp.force
        return force

    def _impulses_act(self) -> bool:
        """Whether scheduled impulses can act in this control period (there are some, and
        :attr:`impulses_on`)."""
        return self.impulses_on and bool(self.conditions.impulses)

    def _step_with_play(self, push: np.ndarray) -> None:
        """One control period with servo play, which needs the joint angles every physics step:
        the substeps one ``mj_step`` each, the ``ctrl`` of each from the set-point and the joint
        angles before it, ``push`` (N: the random push plus :attr:`torso_force`) and the scheduled
        impulses on the torso."""
        m, d = self.model, self.data
        ctrl, setpoint, qpos, out, force = self.servos.ctrl, self._setpoint, self._qpos, self._ctrl, self._torso_xfrc
        impulses = self._impulses_act()
        force[:] = self._impulse_force(d.time, push.copy())
        for _ in range(self.n_substeps):
            ctrl(setpoint, qpos, out)
            if impulses:
                force[:] = self._impulse_force(d.time, push.copy())
            mujoco.mj_step(m, d)

    def _step_with_impulses(self, push: np.ndarray) -> None:
        """One control period with ``push`` (N: the random push plus :attr:`torso_force`) and the
        scheduled impulses on the torso:
        the substeps run in batches of ``mj_step(nstep)`` between the instants where an impulse
        starts or ends (the same physics steps with the same forces as one ``mj_step`` each)."""
        m, d = self.model, self.data
        done = 0
        while done < self.n_substeps:
            impulse = self._impulse_force(d.time)
            self._torso_xfrc[:] = self._impulse_force(d.time, push.copy())
            batch = 1
            # The times of the following substeps as mj_step advances them (time += timestep).
            t = d.time
            for _ in range(self.n_substeps - done - 1):
                t += m.opt.timestep
                if not np.array_equal(self._impulse_force(t), impulse):
                    break
                batch += 1
            mujoco.mj_step(m, d, nstep=batch)
            done += batch

    def _check_stability(self) -> None:
        warnings = int(self._warning_counts[BADQACC])
        if warnings != self._warnings or not sane_state(self._qpos, self._qvel, MAX_SANE_VELOCITY):
            self.unstable = True
        self._warnings = warnings

    # ------------------------------------------------------------------ what the robot measures
    def sensors(self) -> Sensors:
        """The robot's measurements now (with the conditions' sensor noise)."""
        c, rng = self.conditions, self.rng
        values = np.empty(self._sensor_size)  # the fields below are parts of this one array
        read_sensors(self._qpos, self._qvel, self._sensordata, *self._sensor_adr, self._read_at, values)
        at_pos, at_vel, at_gyro, at_accel, at_quat, at_fused, at_pressure = self._read_slices
        joint_pos, gyro, accel = values[at_pos], values[at_gyro], values[at_accel]
        if c.joint_noise:
            joint_pos += rng.normal(0.0, c.joint_noise, joint_pos.shape)
        if c.gyro_noise:
            gyro += rng.normal(0.0, c.gyro_noise, 3)
        if c.accel_noise:
            accel += rng.normal(0.0, c.accel_noise, 3)
        if c.pressure_noise:
            pressure = values[at_pressure]
            pressure += rng.normal(0.0, c.pressure_noise * self.weight, pressure.shape)
            np.maximum(pressure, 0.0, out=pressure)
        if self._joint_offset is not None:
            joint_pos -= self._joint_offset
        if self.sensing.active:
            values = self.sensing.process(float(self.data.time), values)
            joint_pos, gyro, accel = values[at_pos], values[at_gyro], values[at_accel]
        return Sensors(
            time=float(self.data.time),
            joint_pos=joint_pos,
            joint_vel=values[at_vel],
            joint_target=self._last_command.copy(),
            gyro=gyro,
            accel=accel,
            quat=values[at_quat],
            fused=values[at_fused],
            foot_pressure=values[at_pressure],
        )

    # ------------------------------------------------------------------ privileged simulator truth
    @property
    def time(self) -> float:
        """Simulated time since the episode started (s)."""
        return float(self.data.time)

    @property
    def setpoint(self) -> np.ndarray:
        """The set-points the servos follow now (after delay, lag and stuck windows), rad."""
        return self._setpoint.copy()

    def angular_velocity(self) -> np.ndarray:
        """Noise-free IMU angular velocity (rad/s, IMU frame)."""
        return self._sensordata[self._gyro].copy()

    def angular_speed(self) -> float:
        """Norm of the noise-free IMU angular velocity (rad/s)."""
        return norm(self._sensordata[self._gyro])

    def torso_velocity(self) -> np.ndarray:
        """Torso linear velocity (m/s, world frame) and angular velocity (rad/s, world frame), (6,)."""
        out = self._velocity
        mujoco.mj_objectVelocity(self.model, self.data, mujoco.mjtObj.mjOBJ_BODY, self._torso, out, 0)
        return out[LINEAR_FIRST]

    def torso_heading_motion(self, last_xy: np.ndarray) -> tuple[np.ndarray, float]:
        """The torso's velocity in its heading frame, (vx m/s, vy m/s, yaw rate rad/s): the linear
        part of :meth:`torso_velocity` turned by the torso's yaw, and the world z angular velocity;
        and the horizontal distance (m) the torso's origin moved from ``last_xy`` (world x, y),
        which then holds the origin's x, y now (:func:`~upright.envs.kernels.heading_motion`)."""
        velocity = np.empty(3)
        distance = heading_motion(*self._motion_arrays, self._torso, self._torso_root, last_xy, velocity)
        return velocity, distance

    def restart_clock(self) -> Sensors:
        """Set the time to zero and refill the delay queue with the current set-points, e.g. after a
        pre-roll that brought the robot into its start state; wear windows count from here."""
        self.data.time = 0.0
        sampled = self.sampled
        factors, offset = sampled.servo_factors, sampled.zero_offset
        self.servos.reset(sampled.wear, self.robot.delay_cycles + sampled.extra_delay_cycles, self.data.ctrl,
                          gain=None if factors is None else factors[:, 0],
                          torque=None if factors is None else factors[:, 1], offset=offset)
        self._joint_offset = None if offset is None else offset[self._joint_actuator]
        self._last_command = self.data.ctrl.copy()
        self.sensing.restart(sampled.sensor_latency_cycles)
        return self.sensors()

    def torso_push(self) -> np.ndarray:
        """The horizontal force on the torso in the last physics step (N, world x/y): the random
        push, :attr:`torso_force` and the scheduled impulses together."""
        return self._torso_xfrc.copy()

    def com(self) -> np.ndarray:
        """Whole-robot centre of mass, world frame (m)."""
        return self._torso_com.copy()

    def head_height(self) -> float:
        """Height of the top of the head above z = 0 (m)."""
        return float(self._head_top_xpos[2])

    def torso_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Torso origin position (m) and orientation quaternion (w, x, y, z), world frame."""
        return self._torso_xpos.copy(), self._torso_xquat.copy()

    def torso_fused_tilt(self) -> tuple[float, float, float]:
        """Fused pitch, fused roll (rad) and hemisphere (±1) of the torso orientation (see
        :func:`~upright.envs.sensors.fused_tilt`)."""
        return fused_tilt(self._torso_xquat)

    def posture_values(self) -> tuple[float, float, float, float, float, float]:
        """:meth:`torso_fused_tilt` (pitch, roll, hemisphere), :meth:`torso_tilt`,
        :meth:`head_height` and :meth:`angular_speed` in one compiled call
        (:func:`~upright.envs.kernels.posture_values`)."""
        return posture_values(self._torso_xquat, self._torso_xmat, self._head_top_xpos, self._gyro_data)

    def torso_tilt(self) -> float:
        """Angle (rad) between the torso's z axis and the world's z axis."""
        cos_tilt = float(self._torso_xmat[8])  # R[2, 2], clipped to [-1, 1] (NaN stays NaN)
        return math.acos(min(max(cos_tilt, -1.0), 1.0))

    def actuated_joint_pos(self) -> np.ndarray:
        """Angles (rad) of the actuated joints, actuator order, noise-free."""
        return gather(self._qpos, self._actuated_qadr)

    def actuator_load(self) -> np.ndarray:
        """Actuator forces as fractions of their current limits (which wear lowers), actuator order."""
        return self._actuator_force / self._force_limit

    def actuator_power(self) -> np.ndarray:
        """Mechanical power of each actuator, force × joint speed (W), actuator order."""
        return self._actuator_force * self._qvel[self._actuated_vadr]

    def sole_positions(self) -> np.ndarray:
        """Positions (m, world) of the left and right sole sites, shape (2, 3)."""
        return self.data.site_xpos[self._soles].copy()

    def _ground_contacts(self, exclude: Collection[str]) -> Iterator[tuple[int, str, bool]]:
        """The contacts between the ground and a robot body not named in ``exclude``: (contact index,
        the body's name, whether the body is the contact's geom2)."""
        ncon = self.data.ncon
        if ncon == 0:
            return
        ground, body_name = self._ground_geom, self._geom_body_name
        for i, (geom1, geom2) in enumerate(self.data.contact.geom[:ncon].tolist()):
            if ground[geom1]:
                name, on_geom2 = body_name[geom2], True
            elif ground[geom2]:
                name, on_geom2 = body_name[geom1], False
            else:
                continue
            if name not in exclude:
                yield i, name, on_geom2

    def contact_forces(self, exclude: Collection[str] = ()) -> dict[str, np.ndarray]:
        """Total ground-contact force (N, world frame) on each robot body that touches the ground,
        except the bodies named in ``exclude``."""
        m, d = self.model, self.data
        forces: dict[str, np.ndarray] = {}
        frames = None
        wrench = self._wrench
        force = wrench[:3]  # in the contact frame, whose normal points from geom1 to geom2
        for i, name, on_geom2 in self._ground_contacts(exclude):
            if frames is None:
                # The contact frames' rows are their axes in world coordinates (normal first), so
                # f · frame is the force in the world frame.
                frames = d.contact.frame[: d.ncon].reshape(-1, 3, 3)
            mujoco.mj_contactForce(m, d, i, wrench)
            f_world = force @ frames[i]  # the force on geom2 is +f
            forces[name] = forces.get(name, 0.0) + (f_world if on_geom2 else -f_world)
        return forces

    def max_ground_force(self, exclude: Collection[str] = ()) -> float:
        """The largest norm (N) of one robot body's total ground-contact force, over the bodies not
        named in ``exclude`` (0 without such contacts): ``max(norm(f) for f in
        contact_forces(exclude).values())``, computed in one compiled pass over the contacts
        (:func:`~upright.envs.kernels.max_ground_force`)."""
        d = self.data
        key = frozenset(exclude)  # free for a frozenset, which the get-up passes every step
        geom_body = self._geom_body_index.get(key)
        if geom_body is None:
            geom_body = np.array([GROUND if ground else IGNORED if name in key else body
                                  for ground, name, body in zip(self._ground_geom, self._geom_body_name,
                                                                self.model.geom_bodyid.tolist())])
            self._geom_body_index[key] = geom_body
        contact = d.contact
        return max_ground_force(contact.geom, contact.efc_address, contact.dim, contact.frame, contact.friction,
                                d.efc_force, geom_body, self.model.opt.cone == PYRAMIDAL)

    def kinetic_energy(self) -> float:
        """Kinetic energy of the robot (J)."""
        m, d = self.model, self.data
        mv = np.zeros(m.nv)
        mujoco.mj_mulM(m, d, mv, d.qvel)
        return float(0.5 * d.qvel @ mv)

    def floor_penetration(self) -> float:
        """Deepest penetration (m, >= 0) of any robot geom into the ground right now."""
        d = self.data
        ncon = d.ncon
        if ncon == 0:
            return 0.0
        touching = self._is_ground[d.contact.geom1[:ncon]] | self._is_ground[d.contact.geom2[:ncon]]
        return max(0.0, float(np.max(-d.contact.dist[:ncon][touching], initial=0.0)))
