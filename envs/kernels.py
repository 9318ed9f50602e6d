"""The control step's inner loop, compiled with Numba: what every ``env.step`` reads from MuJoCo's
arrays (the robot's sensors, the blow-up check, the posture) and the reward inputs that loop over
joints and contacts, each in one pass over the arrays instead of a few dozen small NumPy calls
(each of which costs microseconds of Python overhead on arrays of 20-30 values).

Every kernel has a readable reference it is tested against (``tests/test_kernels.py``): MuJoCo's
own ``mj_contactForce`` for the contact forces, SciPy's rotation matrices for the fused angles,
NumPy expressions for the rest. The results agree to rounding (a few ulp), not to the bit: the
kernels sum in their own order and use the C library's trigonometry.

Compiled on first use and cached beside the module (``cache=True``), so later processes load the
machine code instead of compiling it again.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Block order of :func:`read_sensors`' output.
SENSOR_BLOCKS = ("joint_pos", "joint_vel", "joint_target", "gyro", "accel", "quat", "fused", "foot_pressure")


@njit(cache=True)
def fused_angles(w: float, x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """Fused pitch, roll, yaw (rad) and hemisphere (±1) of the body-to-world quaternion
    ``(w, x, y, z)`` (normalised here): pitch ``asin(-R[2,0])``, roll ``asin(R[2,1])`` (arguments
    clipped to [-1, 1]), yaw ``2·atan2(z, w)`` wrapped to (-π, π], hemisphere +1 when
    ``R[2,2] >= 0``. See :func:`upright.envs.sensors.fused_angles` for the definition."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    r20 = 2.0 * (x * z - w * y)
    r21 = 2.0 * (y * z + w * x)
    r22 = 1.0 - 2.0 * (x * x + y * y)
    pitch = math.asin(min(1.0, max(-1.0, -r20)))
    roll = math.asin(min(1.0, max(-1.0, r21)))
    half_yaw = 2.0 * math.atan2(z, w)
    yaw = math.atan2(math.sin(half_yaw), math.cos(half_yaw))
    return pitch, roll, yaw, 1.0 if r22 >= 0.0 else -1.0


@njit(cache=True)
def read_sensors(qpos: np.ndarray, qvel: np.ndarray, sensordata: np.ndarray, joint_qadr: np.ndarray,
                 joint_dofadr: np.ndarray, last_command: np.ndarray, gyro: int, accel: int, quat: int,
                 pressure: np.ndarray) -> np.ndarray:
    """The noise-free sensor values of one control cycle as one new float64 array, blocks in the
    order of :data:`SENSOR_BLOCKS`: joint angles (rad, at the ``joint_qadr`` addresses of
    ``qpos``), joint velocities (rad/s, ``joint_dofadr`` of ``qvel``), the last commanded targets
    (rad), gyro (rad/s), accelerometer (m/s²) and quaternion (w, x, y, z) from ``sensordata``
    starting at the ``gyro``, ``accel`` and ``quat`` addresses, the quaternion's fused angles
    (pitch, roll, yaw, hemisphere), and the foot pressures (N) at the ``pressure`` addresses."""
    nj, nu, npr = joint_qadr.size, last_command.size, pressure.size
    out = np.empty(2 * nj + nu + 14 + npr)
    for i in range(nj):
        out[i] = qpos[joint_qadr[i]]
        out[nj + i] = qvel[joint_dofadr[i]]
    k = 2 * nj
    for i in range(nu):
        out[k + i] = last_command[i]
    k += nu
    for i in range(3):
        out[k + i] = sensordata[gyro + i]
        out[k + 3 + i] = sensordata[accel + i]
    k += 6
    for i in range(4):
        out[k + i] = sensordata[quat + i]
    pitch, roll, yaw, hemisphere = fused_angles(out[k], out[k + 1], out[k + 2], out[k + 3])
    out[k + 4], out[k + 5], out[k + 6], out[k + 7] = pitch, roll, yaw, hemisphere
    k += 8
    for i in range(npr):
        out[k + i] = sensordata[pressure[i]]
    return out


@njit(cache=True)
def blew_up(qpos: np.ndarray, qvel: np.ndarray, max_speed: float) -> bool:
    """Whether any ``qpos`` is not finite or any ``|qvel|`` exceeds ``max_speed`` (or is NaN)."""
    for v in qpos:
        if not math.isfinite(v):
            return True
    for v in qvel:
        if not abs(v) <= max_speed:
            return True
    return False


@njit(cache=True)
def posture_values(xquat: np.ndarray, xmat: np.ndarray, head_top: np.ndarray, sensordata: np.ndarray,
                   gyro: int) -> tuple[float, float, float, float, float, float]:
    """Simulator truth for the metrics: the torso's fused pitch and roll (rad) and hemisphere
    (±1) from its world quaternion ``xquat``, its tilt (rad, the angle of its z axis against the
    vertical, from the rotation matrix ``xmat``, row-major), the height (m) of the ``head_top``
    point, and the norm (rad/s) of the noise-free gyro at ``gyro`` in ``sensordata``."""
    pitch, roll, _, hemisphere = fused_angles(xquat[0], xquat[1], xquat[2], xquat[3])
    tilt = math.acos(min(1.0, max(-1.0, xmat[8])))
    g0, g1, g2 = sensordata[gyro], sensordata[gyro + 1], sensordata[gyro + 2]
    return pitch, roll, hemisphere, tilt, head_top[2], math.sqrt(g0 * g0 + g1 * g1 + g2 * g2)


@njit(cache=True)
def clip_between(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, bool]:
    """``values`` as a new float64 array clipped to [``low``, ``high``] element-wise, and whether
    every value was finite."""
    out = np.empty(values.size)
    finite = True
    for i in range(values.size):
        v = float(values[i])
        if not math.isfinite(v):
            finite = False
        out[i] = low[i] if v < low[i] else high[i] if v > high[i] else v
    return out, finite


@njit(cache=True)
def affine(base: np.ndarray, gain: float, scale: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``base + (gain · x) · scale`` element-wise, as a new array (an action's joint targets: the
    mid-range or the prior's targets, the residual scale, the half ranges, the clipped action;
    multiplied in this order, as the environments always have)."""
    out = np.empty(base.size)
    for i in range(base.size):
        out[i] = base[i] + (gain * x[i]) * scale[i]
    return out


@njit(cache=True)
def effort(actuator_force: np.ndarray, force_limit: np.ndarray, qpos: np.ndarray, actuated_qadr: np.ndarray,
           near_low: np.ndarray, near_high: np.ndarray) -> tuple[float, float]:
    """The mean squared actuator load (force / its current limit) and the fraction of actuated
    joints (angles at ``actuated_qadr`` of ``qpos``, rad) below ``near_low`` or above ``near_high``."""
    nu = actuator_force.size
    load = 0.0
    near = 0
    for i in range(nu):
        f = actuator_force[i] / force_limit[i]
        load += f * f
        q = qpos[actuated_qadr[i]]
        if q < near_low[i] or q > near_high[i]:
            near += 1
    return load / nu, near / nu


@njit(cache=True)
def mean_squared_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The mean of ``(a - b)²`` (e.g. the change of an action between two steps)."""
    total = 0.0
    for i in range(a.size):
        d = a[i] - b[i]
        total += d * d
    return total / a.size


@njit(cache=True)
def hardest_ground_force(geom: np.ndarray, efc_address: np.ndarray, dim: np.ndarray, frame: np.ndarray,
                         friction: np.ndarray, efc_force: np.ndarray, pyramidal: bool, geom_body: np.ndarray,
                         ground_geom: np.ndarray, counted_body: np.ndarray) -> float:
    """The largest norm (N) of the total ground-contact force on one body, over the bodies
    ``counted_body`` marks; 0 without such contacts.

    Per contact ``i`` (arrays of ``data.contact``: ``geom`` (ncon, 2), ``efc_address``, ``dim``,
    ``frame`` (ncon, 9), ``friction`` (ncon, 5)) between a ground geom and a counted body's geom,
    the force in the contact frame is read from ``efc_force`` as ``mj_contactForce`` does
    (pyramidal cones decoded: normal = sum of the pyramid's edge forces, tangential ``j`` =
    (edge 2j − edge 2j+1) · friction ``j``; elliptic and frictionless: copied), turned into the
    world frame (the frame's rows are the contact axes), and added with the sign of the force
    on the robot's geom (the contact normal points from geom 1 to geom 2)."""
    nbody = counted_body.size
    total = np.zeros((nbody, 3))
    touched = np.zeros(nbody, dtype=np.bool_)
    for i in range(geom.shape[0]):
        g1, g2 = geom[i, 0], geom[i, 1]
        if ground_geom[g1]:
            body, sign = geom_body[g2], 1.0
        elif ground_geom[g2]:
            body, sign = geom_body[g1], -1.0
        else:
            continue
        if not counted_body[body]:
            continue
        touched[body] = True
        adr = efc_address[i]
        if adr < 0:
            continue  # excluded from the constraint solver: no force
        n = dim[i]
        f0, f1, f2 = 0.0, 0.0, 0.0
        if pyramidal and n > 1:
            for j in range(2 * (n - 1)):
                f0 += efc_force[adr + j]
            f1 = (efc_force[adr] - efc_force[adr + 1]) * friction[i, 0]
            f2 = (efc_force[adr + 2] - efc_force[adr + 3]) * friction[i, 1]
        else:
            f0 = efc_force[adr]
            if n > 1:
                f1, f2 = efc_force[adr + 1], efc_force[adr + 2]
        for k in range(3):
            total[body, k] += sign * (f0 * frame[i, k] + f1 * frame[i, 3 + k] + f2 * frame[i, 6 + k])
    hardest = 0.0
    for b in range(nbody):
        if touched[b]:
            s = math.sqrt(total[b, 0] ** 2 + total[b, 1] ** 2 + total[b, 2] ** 2)
            if s > hardest:
                hardest = s
    return hardest


@njit(cache=True)
def heading_motion(xquat: np.ndarray, velocity: np.ndarray, xpos: np.ndarray,
                   last_x: float, last_y: float) -> tuple[float, float, float, float, float, float]:
    """The torso's velocity in the heading frame of its world quaternion ``xquat`` (w, x, y, z):
    (vx m/s, vy m/s, yaw rate rad/s) from ``velocity`` (``mj_objectVelocity``'s world-frame
    output: angular rad/s, then linear m/s), the horizontal distance (m) from (``last_x``,
    ``last_y``) to its position ``xpos``, and that position's x and y (m, world)."""
    w, x, y, z = xquat[0], xquat[1], xquat[2], xquat[3]
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    c, s = math.cos(yaw), math.sin(yaw)
    vx, vy = velocity[3], velocity[4]
    dx, dy = xpos[0] - last_x, xpos[1] - last_y
    return c * vx + s * vy, -s * vx + c * vy, velocity[2], math.sqrt(dx * dx + dy * dy), xpos[0], xpos[1]


@njit(cache=True)
def absolute_power(actuator_force: np.ndarray, qvel: np.ndarray, actuated_dofadr: np.ndarray) -> float:
    """The sum over actuators of ``|force · joint speed|`` (W): the mechanical power spent, with
    braking counted as spent too."""
    total = 0.0
    for i in range(actuator_force.size):
        total += abs(actuator_force[i] * qvel[actuated_dofadr[i]])
    return total


@njit(cache=True)
def observation(joint_pos: np.ndarray, joint_vel: np.ndarray, joint_target: np.ndarray, gyro: np.ndarray,
                accel: np.ndarray, quat: np.ndarray, fused: np.ndarray, foot_pressure: np.ndarray,
                task_block: np.ndarray, prior_targets: np.ndarray) -> np.ndarray:
    """The observation vector (float32) of one cycle's sensor values, in the block order of
    :func:`upright.envs.sensors.observation_from_sensors`: joint angles, joint velocities, last
    targets, gyro, accelerometer, the unit gravity direction in the IMU frame (the third row of
    the quaternion's rotation matrix, negated), fused pitch and roll, the hemisphere, foot
    pressures, ``task_block``, ``prior_targets`` (empty when there is none)."""
    w, x, y, z = quat[0], quat[1], quat[2], quat[3]
    blocks = (joint_pos, joint_vel, joint_target, gyro, accel)
    size = 0
    for b in blocks:
        size += b.size
    out = np.empty(size + 3 + 3 + foot_pressure.size + task_block.size + prior_targets.size, dtype=np.float32)
    k = 0
    for b in blocks:
        for v in b:
            out[k] = v
            k += 1
    out[k] = -(2.0 * (x * z - w * y))
    out[k + 1] = -(2.0 * (y * z + w * x))
    out[k + 2] = -(1.0 - 2.0 * (x * x + y * y))
    out[k + 3], out[k + 4], out[k + 5] = fused[0], fused[1], fused[3]
    k += 6
    for b in (foot_pressure, task_block, prior_targets):
        for v in b:
            out[k] = v
            k += 1
    return out
