"""The simulation core, without Gymnasium: one robot on one terrain under one set of conditions.

``Simulation(robot, conditions)`` loads the robot's MJCF into a scene built in code, ``reset(pose,
seed)`` starts an episode, and ``step(joint_targets)`` advances one control period of the robot
(NAO 12 ms, Wolfgang 10 ms) and returns the robot's :class:`~upright.envs.sensors.Sensors`.
Privileged getters (CoM, head height, torso pose, contact forces) are for ``info`` and metrics,
never for controllers. A physics blow-up sets :attr:`Simulation.unstable` instead of raising.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import mujoco
import numpy as np

from upright.envs.conditions import Conditions, SampledConditions, get_conditions
from upright.envs.robots import RobotSpec, get_robot
from upright.envs.sensors import Sensors, fused_angles
from upright.envs.servo import Servos
from upright.envs.terrain import build_scene, randomize_turf

#: Joint speeds above this (rad/s, m/s for the free joint) mean the physics has blown up.
MAX_SANE_VELOCITY = 200.0


class Simulation:
    """MuJoCo model + data of one robot in one scene, with servo, sensor and disturbance models.

    Args:
        robot: robot name (``"nao"``, ``"wolfgang"``) or a :class:`RobotSpec`.
        conditions: a preset name or a :class:`Conditions` (default ``lab``).
    """

    def __init__(self, robot: str | RobotSpec, conditions: str | Conditions | None = None) -> None:
        self.robot = get_robot(robot) if isinstance(robot, str) else robot
        self.conditions = get_conditions(conditions)
        self.model = build_scene(self.robot, self.conditions).compile()
        self.data = mujoco.MjData(self.model)
        self._check_model()
        m, r = self.model, self.robot
        self.n_substeps = int(round(r.control_period / m.opt.timestep))
        if not np.isclose(self.n_substeps * m.opt.timestep, r.control_period):
            raise ValueError(
                f"control period {r.control_period} s is not a multiple of the timestep {m.opt.timestep} s"
            )
        self._jnt_qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in r.joint_names])
        self._jnt_vadr = np.array([m.jnt_dofadr[m.joint(j).id] for j in r.joint_names])
        self._torso = m.body(r.torso_body).id
        self._imu = m.site(r.imu_site).id
        self._head_top = m.site(r.head_top_site).id
        self._soles = [m.site(s).id for s in r.sole_sites]
        self._sensor_slices = {}
        for name in (r.gyro_sensor, r.accel_sensor, r.quat_sensor, *r.pressure_sensors):
            sensor = m.sensor(name)
            start = int(sensor.adr[0])
            self._sensor_slices[name] = slice(start, start + int(sensor.dim[0]))
        self._pressure_adr = np.array([self._sensor_slices[s].start for s in r.pressure_sensors], dtype=int)
        self._robot_bodies = np.array([b for b in range(m.nbody) if m.body_rootid[b] == self._torso])
        self._is_ground = m.geom_bodyid == 0
        self._body_names = [m.body(b).name for b in range(m.nbody)]
        self._nominal = {
            "body_mass": m.body_mass.copy(),
            "body_inertia": m.body_inertia.copy(),
            "body_ipos": m.body_ipos.copy(),
            "geom_friction": m.geom_friction.copy(),
        }
        self.total_mass = float(m.body_subtreemass[self._torso])
        self.servos = Servos(m, r.control_period)
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

    # ------------------------------------------------------------------ set-up
    def _check_model(self) -> None:
        m, r = self.model, self.robot
        joints = tuple(m.joint(i).name for i in range(m.njnt) if m.jnt_type[i] == mujoco.mjtJoint.mjJNT_HINGE)
        actuators = tuple(m.actuator(i).name for i in range(m.nu))
        if joints != r.joint_names:
            raise ValueError(f"{r.mjcf} joint order {joints} differs from the robot description {r.joint_names}")
        if actuators != r.actuator_names:
            raise ValueError(f"{r.mjcf} actuator order {actuators} differs from the robot description")
        missing = [k for k in r.poses if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, k) < 0]
        if missing:
            raise ValueError(f"{r.mjcf} lacks the keyframes {missing}")

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
        if pose not in self.robot.poses:
            raise ValueError(f"unknown pose {pose!r} for {self.robot.name}; valid poses: {', '.join(self.robot.poses)}")
        m, d = self.model, self.data
        self.rng = np.random.default_rng(seed)
        self.sampled = self.conditions.sample(self.robot.actuator_names, self.rng)
        self._apply_sampled(self.sampled)
        if self.conditions.terrain == "turf":
            randomize_turf(m, self.rng)
        mujoco.mj_resetDataKeyframe(m, d, m.key(pose).id)
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
        self._warnings = int(d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number)
        return self.restart_clock()

    def _apply_sampled(self, s: SampledConditions) -> None:
        m, nom = self.model, self._nominal
        bodies = self._robot_bodies
        m.body_mass[bodies] = nom["body_mass"][bodies] * s.mass_scale
        m.body_inertia[bodies] = nom["body_inertia"][bodies] * s.mass_scale
        m.body_ipos[bodies] = nom["body_ipos"][bodies] + s.com_offset
        m.geom_friction[:, 0] = nom["geom_friction"][:, 0] * s.friction_scale
        mujoco.mj_setConst(m, self.data)

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
        if targets.shape != (m.nu,):
            raise ValueError(f"joint_targets must have shape ({m.nu},) for {self.robot.name}, got {targets.shape}")
        if not np.isfinite(targets).all():
            raise ValueError(f"joint_targets contain non-finite values: {targets}")
        targets = np.minimum(np.maximum(targets, self._ctrl_low), self._ctrl_high)
        self._last_command = targets
        self._setpoint = self.servos.command(targets, d.time, d.qpos)
        if self.unstable:
            return self.sensors()
        push = self._random_push() + self.torso_force
        if self.servos.has_play:
            # Play needs the joint angle every physics step.
            ctrl, setpoint = self.servos.ctrl, self._setpoint
            for _ in range(self.n_substeps):
                d.ctrl[:] = ctrl(setpoint, d.qpos)
                d.xfrc_applied[self._torso, :2] = self._impulse_force(d.time, push.copy())
                mujoco.mj_step(m, d)
        else:
            d.ctrl[:] = self._setpoint
            if self.conditions.impulses or push.any():
                self._step_with_forces(push)
            else:
                d.xfrc_applied[self._torso, :2] = 0.0
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

    def _random_push(self) -> np.ndarray:
        """This control period's random horizontal force on the torso (N, world x/y): magnitude
        uniform in [0, push scale / √n] for a period of n physics steps, direction uniform, held for
        the whole period (zero without pushes).

        A force drawn anew every physics step of ``dt`` with magnitude uniform in [0, F] gives a
        zero-mean impulse per control period ``T = n dt`` with per-axis variance ``n dt² F²/6``;
        one draw held for ``T`` with magnitude uniform in [0, F/√n] gives ``T² F²/(6 n)``, the same.
        So the RMS impulse per control period (and per second, the statistic the thesis protocol is
        matched on, see :attr:`Conditions.push_force`) is unchanged, and the period runs as one
        batched ``mj_step(nstep)``."""
        if self._push_scale <= 0.0:
            return np.zeros(2)
        magnitude = self.rng.uniform(0.0, self._push_scale / np.sqrt(self.n_substeps))
        angle = self.rng.uniform(0.0, 2.0 * np.pi)
        return magnitude * np.array([np.cos(angle), np.sin(angle)])

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

    def _step_with_forces(self, push: np.ndarray) -> None:
        """One control period with ``push`` (N: the random push plus :attr:`torso_force`) and the
        scheduled impulses on the torso:
        the substeps run in batches of ``mj_step(nstep)`` between the instants where an impulse
        starts or ends (the same physics steps with the same forces as one ``mj_step`` each)."""
        m, d = self.model, self.data
        done = 0
        while done < self.n_substeps:
            impulse = self._impulse_force(d.time)
            d.xfrc_applied[self._torso, :2] = self._impulse_force(d.time, push.copy())
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
        d = self.data
        warnings = int(d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number)
        # A NaN speed fails the comparison too.
        if (
            warnings != self._warnings
            or not np.isfinite(d.qpos).all()
            or not np.abs(d.qvel).max() <= MAX_SANE_VELOCITY
        ):
            self.unstable = True
        self._warnings = warnings

    # ------------------------------------------------------------------ what the robot measures
    def sensors(self) -> Sensors:
        """The robot's measurements now (with the conditions' sensor noise)."""
        d, c, rng = self.data, self.conditions, self.rng
        s = self._sensor_slices
        r = self.robot
        joint_pos = d.qpos[self._jnt_qadr].copy()
        gyro = d.sensordata[s[r.gyro_sensor]].copy()
        accel = d.sensordata[s[r.accel_sensor]].copy()
        if c.joint_noise:
            joint_pos += rng.normal(0.0, c.joint_noise, joint_pos.shape)
        if c.gyro_noise:
            gyro += rng.normal(0.0, c.gyro_noise, 3)
        if c.accel_noise:
            accel += rng.normal(0.0, c.accel_noise, 3)
        quat = d.sensordata[s[r.quat_sensor]].copy()
        return Sensors(
            time=float(d.time),
            joint_pos=joint_pos,
            joint_vel=d.qvel[self._jnt_vadr].copy(),
            joint_target=self._last_command.copy(),
            gyro=gyro,
            accel=accel,
            quat=quat,
            fused=fused_angles(quat),
            foot_pressure=d.sensordata[self._pressure_adr].copy(),
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
        return self.data.sensordata[self._sensor_slices[self.robot.gyro_sensor]].copy()

    def torso_velocity(self) -> np.ndarray:
        """Torso linear velocity (m/s, world frame) and angular velocity (rad/s, world frame), (6,)."""
        out = np.zeros(6)
        mujoco.mj_objectVelocity(self.model, self.data, mujoco.mjtObj.mjOBJ_BODY, self._torso, out, 0)
        return np.concatenate([out[3:], out[:3]])

    def restart_clock(self) -> Sensors:
        """Set the time to zero and refill the delay queue with the current set-points, e.g. after a
        pre-roll that brought the robot into its start state; wear windows count from here."""
        self.data.time = 0.0
        self.servos.reset(self.sampled.wear, self.robot.delay_cycles + self.sampled.extra_delay_cycles, self.data.ctrl)
        self._last_command = self.data.ctrl.copy()
        return self.sensors()

    def com(self) -> np.ndarray:
        """Whole-robot centre of mass, world frame (m)."""
        return self.data.subtree_com[self._torso].copy()

    def head_height(self) -> float:
        """Height of the top of the head above z = 0 (m)."""
        return float(self.data.site_xpos[self._head_top, 2])

    def torso_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Torso origin position (m) and orientation quaternion (w, x, y, z), world frame."""
        return self.data.xpos[self._torso].copy(), self.data.xquat[self._torso].copy()

    def torso_tilt(self) -> float:
        """Angle (rad) between the torso's z axis and the world's z axis."""
        return float(np.arccos(np.clip(self.data.xmat[self._torso].reshape(3, 3)[2, 2], -1.0, 1.0)))

    def sole_positions(self) -> np.ndarray:
        """Positions (m, world) of the left and right sole sites, shape (2, 3)."""
        return self.data.site_xpos[self._soles].copy()

    def contact_forces(self) -> dict[str, np.ndarray]:
        """Total ground-contact force (N, world frame) on each robot body that touches the ground."""
        m, d = self.model, self.data
        forces: dict[str, np.ndarray] = {}
        ncon = d.ncon
        if ncon == 0:
            return forces
        geom1, geom2 = d.contact.geom1[:ncon], d.contact.geom2[:ncon]
        on_ground1, on_ground2 = self._is_ground[geom1], self._is_ground[geom2]
        frames = d.contact.frame
        wrench = np.zeros(6)
        for i in np.flatnonzero(on_ground1 | on_ground2):
            if on_ground1[i]:
                body, sign = m.geom_bodyid[geom2[i]], 1.0
            else:
                body, sign = m.geom_bodyid[geom1[i]], -1.0
            mujoco.mj_contactForce(m, d, i, wrench)
            # The contact frame's normal points from geom1 to geom2; force on geom2 is +f.
            f_world = frames[i].reshape(3, 3).T @ wrench[:3] * sign
            name = self._body_names[body]
            forces[name] = forces.get(name, np.zeros(3)) + f_world
        return forces

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
