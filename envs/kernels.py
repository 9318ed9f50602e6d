"""Compiled inner loops of the environment step (numba, cached beside this module on first use).

Each kernel replaces per-step NumPy and MuJoCo calls; the tests compare it with those calls, written
out readably, on states of real episodes (``tests/test_kernels.py``; the contact forces against
:meth:`~upright.envs.simulation.Simulation.contact_forces`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: ``geom_body`` entry of a ground geom (the world body's).
GROUND = -2
#: ``geom_body`` entry of a geom whose contacts do not count (an excluded body's).
IGNORED = -1


@numba.njit(cache=True, nogil=True)
def max_ground_force(geom: np.ndarray, efc_address: np.ndarray, dim: np.ndarray, frame: np.ndarray,
                     friction: np.ndarray, efc_force: np.ndarray, geom_body: np.ndarray,
                     pyramidal: bool) -> float:
    """The largest norm (N) of one body's total ground-contact force, 0 without such contacts.

    Per contact ``i`` of ``geom`` (ncon × 2 geom ids): ``geom_body`` maps a geom to :data:`GROUND`,
    :data:`IGNORED` or the index (≥ 0) of the body whose force it adds to. The contact's force in
    its own frame (normal first) is decoded from ``efc_force`` as ``mj_contactForce`` does it: the
    normal force alone for ``dim`` 1; for a pyramidal cone the normal force is the sum of the
    2 (dim − 1) edge forces and friction component k is (edge 2k − edge 2k + 1) · ``friction[i, k]``;
    for an elliptic cone the forces as they are. A contact without constraint rows
    (``efc_address`` −1) adds nothing. ``frame`` holds the contact frame's axes as rows (world),
    so the world force is f · frame, acting on geom2 (and its opposite on geom1)."""
    nbody = 0
    for g in range(geom_body.shape[0]):
        nbody = max(nbody, geom_body[g] + 1)
    sums = np.zeros((nbody, 3))
    touched = np.zeros(nbody, np.bool_)
    force = np.zeros(3)
    for i in range(geom.shape[0]):
        body1, body2 = geom_body[geom[i, 0]], geom_body[geom[i, 1]]
        if body1 == GROUND and body2 >= 0:
            body, sign = body2, 1.0
        elif body2 == GROUND and body1 >= 0:
            body, sign = body1, -1.0
        else:
            continue
        touched[body] = True
        adr, n = efc_address[i], dim[i]
        if adr < 0:
            continue
        force[:] = 0.0
        if n == 1:
            force[0] = efc_force[adr]
        elif pyramidal:
            normal = 0.0
            for k in range(2 * (n - 1)):
                normal += efc_force[adr + k]
            force[0] = normal
            for k in range(min(n - 1, 2)):
                force[k + 1] = (efc_force[adr + 2 * k] - efc_force[adr + 2 * k + 1]) * friction[i, k]
        else:
            for k in range(min(n, 3)):
                force[k] = efc_force[adr + k]
        for j in range(3):
            sums[body, j] += sign * (force[0] * frame[i, j] + force[1] * frame[i, 3 + j] + force[2] * frame[i, 6 + j])
    largest = 0.0
    for b in range(nbody):
        if touched[b]:
            largest = max(largest, math.sqrt(sums[b, 0] ** 2 + sums[b, 1] ** 2 + sums[b, 2] ** 2))
    return largest


@numba.njit(cache=True, nogil=True)
def effort_terms(force: np.ndarray, force_limit: np.ndarray, qpos: np.ndarray, qpos_adr: np.ndarray,
                 near_low: np.ndarray, near_high: np.ndarray, action: np.ndarray,
                 last_action: np.ndarray) -> tuple[float, float, float]:
    """The get-up reward's effort quantities in one pass over the actuators: the mean squared load
    (actuator ``force`` over its ``force_limit``), the share of joint angles (rad, ``qpos`` at
    ``qpos_adr``, actuator order) below ``near_low`` or above ``near_high``, and the mean squared
    change from ``last_action`` to ``action`` (both clipped actions in [-1, 1])."""
    n = force.shape[0]
    torque = 0.0
    near = 0
    rate = 0.0
    for i in range(n):
        load = force[i] / force_limit[i]
        torque += load * load
        q = qpos[qpos_adr[i]]
        if q < near_low[i] or q > near_high[i]:
            near += 1
        change = action[i] - last_action[i]
        rate += change * change
    return torque / n, near / n, rate / n


@numba.njit(cache=True, nogil=True)
def horizontal_velocity(point: np.ndarray, cvel: np.ndarray, subtree_com: np.ndarray, body: int,
                        root: int) -> tuple[float, float]:
    """World x and y velocity (m/s) of ``point`` (m, world) moving with ``body``, as
    ``mj_objectVelocity`` computes it in the world frame: the body's com-based velocity ``cvel``
    (angular, then linear, about the ``subtree_com`` of its tree ``root``) moved to the point,
    linear = linear − (point − subtree com) × angular."""
    dx = point[0] - subtree_com[root, 0]
    dy = point[1] - subtree_com[root, 1]
    dz = point[2] - subtree_com[root, 2]
    wx, wy, wz = cvel[body, 0], cvel[body, 1], cvel[body, 2]
    return cvel[body, 3] - (dy * wz - dz * wy), cvel[body, 4] - (dz * wx - dx * wz)


@numba.njit(cache=True, nogil=True)
def walk_effort_terms(force: np.ndarray, qvel: np.ndarray, qvel_adr: np.ndarray, pressure: np.ndarray,
                      loaded: float, pressure_foot: np.ndarray, sole_sites: np.ndarray, site_bodyid: np.ndarray,
                      body_rootid: np.ndarray, site_xpos: np.ndarray, cvel: np.ndarray,
                      subtree_com: np.ndarray) -> tuple[float, float]:
    """The walk reward's effort quantities: the summed absolute mechanical power (W) of the
    actuators (actuator ``force`` × joint speed, ``qvel`` at ``qvel_adr``, actuator order) and the foot slip: over the soles
    (``sole_sites``, left then right) whose foot ``pressure`` sensors (N; ``pressure_foot``: each
    one's sole, an index into ``sole_sites``) carry more than ``loaded`` (N) together, the squared
    horizontal speed (m²/s², world) of the sole site.

    The site's velocity is ``mj_objectVelocity``'s in the world frame
    (:func:`horizontal_velocity`)."""
    energy = 0.0
    for i in range(force.shape[0]):
        energy += abs(force[i] * qvel[qvel_adr[i]])
    slip = 0.0
    loads = np.zeros(sole_sites.shape[0])
    for k in range(pressure.shape[0]):
        loads[pressure_foot[k]] += pressure[k]
    for foot in range(sole_sites.shape[0]):
        if loads[foot] > loaded:
            site = sole_sites[foot]
            body = site_bodyid[site]
            vx, vy = horizontal_velocity(site_xpos[site], cvel, subtree_com, body, body_rootid[body])
            slip += vx * vx + vy * vy
    return energy, slip


@numba.njit(cache=True, nogil=True)
def quaternion_fused_angles(w: float, x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """Fused pitch, roll, yaw (rad) and hemisphere (±1) of the quaternion ``(w, x, y, z)``
    (normalised here; Allgeuer & Behnke 2015): pitch ``asin(−R[2,0])``, roll ``asin(R[2,1])`` with
    the sines clipped to [−1, 1] (a NaN to 1), yaw ``2·atan2(z, w)`` wrapped to (−π, π], hemisphere
    +1 where ``R[2,2] ≥ 0``."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    r20 = 2.0 * (x * z - w * y)
    r21 = 2.0 * (y * z + w * x)
    r22 = 1.0 - 2.0 * (x * x + y * y)
    pitch = math.asin(max(-1.0, min(1.0, -r20)))  # min first: a NaN becomes 1
    roll = math.asin(max(-1.0, min(1.0, r21)))
    half_yaw = 2.0 * math.atan2(z, w)
    yaw = math.atan2(math.sin(half_yaw), math.cos(half_yaw))
    return pitch, roll, yaw, 1.0 if r22 >= 0.0 else -1.0


@numba.njit(cache=True, nogil=True)
def _gather(source: np.ndarray, index: np.ndarray, out: np.ndarray, start: int) -> None:
    """``out[start:start + n] = source[index]`` for the ``n`` entries of ``index``."""
    for i in range(index.shape[0]):
        out[start + i] = source[index[i]]


@numba.njit(cache=True, nogil=True)
def _put(block: np.ndarray, out: np.ndarray, start: int) -> None:
    """``out[start:start + n] = block`` for the ``n`` entries of ``block``."""
    for i in range(block.shape[0]):
        out[start + i] = block[i]


@numba.njit(cache=True, nogil=True)
def read_sensors(qpos: np.ndarray, qvel: np.ndarray, sensordata: np.ndarray, qpos_adr: np.ndarray,
                 qvel_adr: np.ndarray, imu_adr: np.ndarray, pressure_adr: np.ndarray, at: np.ndarray,
                 out: np.ndarray) -> None:
    """The robot's noise-free measurements into ``out``, each block from its start in ``at`` (the
    layout of :data:`~upright.envs.observation.READINGS`): ``at[0]`` the joint angles (rad,
    ``qpos`` at ``qpos_adr``), ``at[1]`` the joint velocities (rad/s, ``qvel`` at ``qvel_adr``);
    from ``sensordata`` at ``imu_adr`` (the first entries of the gyro, the accelerometer and the
    orientation sensor) ``at[2]`` the angular velocity (rad/s), ``at[3]`` the specific force (m/s²)
    and ``at[4]`` the quaternion (w, x, y, z); ``at[5]`` the quaternion's fused angles (pitch, roll,
    yaw, hemisphere, :func:`quaternion_fused_angles`); ``at[6]`` the foot pressures (N,
    ``sensordata`` at ``pressure_adr``)."""
    _gather(qpos, qpos_adr, out, at[0])
    _gather(qvel, qvel_adr, out, at[1])
    for sensor, size in ((0, 3), (1, 3), (2, 4)):
        for i in range(size):
            out[at[2 + sensor] + i] = sensordata[imu_adr[sensor] + i]
    q = at[4]
    pitch, roll, yaw, hemisphere = quaternion_fused_angles(out[q], out[q + 1], out[q + 2], out[q + 3])
    f = at[5]
    out[f], out[f + 1], out[f + 2], out[f + 3] = pitch, roll, yaw, hemisphere
    _gather(sensordata, pressure_adr, out, at[6])


@numba.njit(cache=True, nogil=True)
def posture_values(torso_xquat: np.ndarray, torso_xmat: np.ndarray, head_top: np.ndarray,
                   gyro: np.ndarray) -> tuple[float, float, float, float, float, float]:
    """Simulator truth about the posture: the torso's fused pitch and roll (rad) and hemisphere
    (±1) from its world quaternion, its tilt (rad, the angle between its z axis and the world's,
    ``acos`` of ``torso_xmat[8]`` clipped to [−1, 1]), the head top's height (m) and the norm of
    the noise-free ``gyro`` (rad/s)."""
    pitch, roll, _, hemisphere = quaternion_fused_angles(torso_xquat[0], torso_xquat[1], torso_xquat[2], torso_xquat[3])
    tilt = math.acos(min(max(torso_xmat[8], -1.0), 1.0))
    speed = math.sqrt(gyro[0] * gyro[0] + gyro[1] * gyro[1] + gyro[2] * gyro[2])
    return pitch, roll, hemisphere, tilt, head_top[2], speed


@numba.njit(cache=True, nogil=True)
def fill_observation(joint_pos: np.ndarray, joint_vel: np.ndarray, joint_target: np.ndarray, gyro: np.ndarray,
                     accel: np.ndarray, quat: np.ndarray, fused: np.ndarray, foot_pressure: np.ndarray,
                     task_block: np.ndarray, prior_targets: np.ndarray, at: np.ndarray, out: np.ndarray) -> None:
    """The observation's blocks into the float32 ``out``, each from its start in ``at`` (the layout
    of :func:`~upright.envs.observation.assembled_slices`): ``at[0]`` to ``at[4]`` the joint angles,
    velocities and last targets, the gyro and the accelerometer as they are; ``at[5]`` the unit
    gravity direction in the IMU frame (the third row of the quaternion's rotation matrix,
    negated); ``at[6]`` fused pitch, roll and hemisphere; ``at[7]`` the foot pressures; ``at[8]``
    ``task_block`` and ``at[9]`` ``prior_targets`` (either may be empty)."""
    for k, block in enumerate((joint_pos, joint_vel, joint_target, gyro, accel)):
        _put(block, out, at[k])
    w, x, y, z = quat[0], quat[1], quat[2], quat[3]
    g = at[5]
    out[g] = -(2 * (x * z - w * y))
    out[g + 1] = -(2 * (y * z + w * x))
    out[g + 2] = -(1 - 2 * (x * x + y * y))
    f = at[6]
    out[f], out[f + 1], out[f + 2] = fused[0], fused[1], fused[3]
    _put(foot_pressure, out, at[7])
    _put(task_block, out, at[8])
    _put(prior_targets, out, at[9])


@numba.njit(cache=True, nogil=True)
def clip_finite(values: np.ndarray, low: np.ndarray, high: np.ndarray, out: np.ndarray) -> bool:
    """``out`` = ``values`` (as float64) clipped to [``low``, ``high``] entry by entry (NumPy's
    ``minimum(maximum(values, low), high)``); whether every value was finite."""
    finite = True
    for i in range(values.shape[0]):
        v = float(values[i])
        if not math.isfinite(v):
            finite = False
        out[i] = min(max(v, low[i]), high[i])
    return finite


@numba.njit(cache=True, nogil=True)
def sane_state(qpos: np.ndarray, qvel: np.ndarray, max_speed: float) -> bool:
    """Whether every ``qpos`` entry is finite and every ``qvel`` entry within ±``max_speed`` (a NaN
    is not)."""
    for i in range(qpos.shape[0]):
        if not math.isfinite(qpos[i]):
            return False
    for i in range(qvel.shape[0]):
        if not (-max_speed <= qvel[i] <= max_speed):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def heading_motion(cvel: np.ndarray, subtree_com: np.ndarray, xipos: np.ndarray, xpos: np.ndarray,
                   xquat: np.ndarray, body: int, root: int, last_xy: np.ndarray, out: np.ndarray) -> float:
    """The walk's motion of ``body`` (the torso) in one pass: its velocity in the heading frame
    into ``out`` (vx m/s, vy m/s, yaw rate rad/s) and the horizontal distance (m) its origin moved
    from ``last_xy`` (world x, y), which then holds the origin's new x, y.

    The velocity is ``mj_objectVelocity``'s for the body (at its centre of mass ``xipos``; tree
    ``root``) in the world frame (:func:`horizontal_velocity`), turned into the heading frame by the
    yaw ``atan2(2 (w z + x y), 1 − 2 (y² + z²))`` of the body's world quaternion ``xquat``
    (w, x, y, z); the yaw rate is the world z angular velocity."""
    vx, vy = horizontal_velocity(xipos[body], cvel, subtree_com, body, root)
    w, x, y, z = xquat[body, 0], xquat[body, 1], xquat[body, 2], xquat[body, 3]
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    c, s = math.cos(yaw), math.sin(yaw)
    out[0] = c * vx + s * vy
    out[1] = -s * vx + c * vy
    out[2] = cvel[body, 2]
    step_x = xpos[body, 0] - last_xy[0]
    step_y = xpos[body, 1] - last_xy[1]
    last_xy[0], last_xy[1] = xpos[body, 0], xpos[body, 1]
    return math.sqrt(step_x * step_x + step_y * step_y)


@numba.njit(cache=True, nogil=True)
def play_ctrl(setpoint: np.ndarray, qpos: np.ndarray, qpos_adr: np.ndarray, half_play: np.ndarray,
              out: np.ndarray) -> None:
    """Actuator ``ctrl`` under gear play into ``out``: per actuator the ``setpoint`` (rad) with a
    dead band of ``half_play`` (rad) around the joint angle ``q`` (``qpos`` at ``qpos_adr``): with
    the error ``e = setpoint − q``, ``q + copysign(max(|e| − h, 0), e)`` (a NaN stays NaN, as
    with ``np.maximum``)."""
    for i in range(setpoint.shape[0]):
        q = qpos[qpos_adr[i]]
        error = setpoint[i] - q
        out[i] = q + math.copysign(max(abs(error) - half_play[i], 0.0), error)
