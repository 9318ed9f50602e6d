"""Servo parameters identified from a robot's recorded joint trajectories (``upright identify``).

Our MJCF of a robot is one model among several published ones; a team's robot is another. This
module fits our servo model to a robot's logs, after HULKs' learned identification (recorded
commands replayed in a model rebuilt with ``MjSpec`` per Optuna trial, squared error of the
simulated joint angles) and ToddlerBot's system identification (chirp and sine excitation per
joint; damping, armature, friction loss and P gain; plots of measured against simulated tracking):

* a :class:`Recording` is time (s) and, per joint, the commanded target and the measured angle
  (rad), read from NPZ, CSV or MCAP (JSON or ROS 2 messages on a command and a joint-state topic)
  and written to NPZ or CSV (:func:`read_recording`, :func:`write_recording`; the formats:
  ``docs/identify.md``); a log of a user's model of the robot names the joints and gives the angles
  as that model does (:func:`in_our_convention`, :func:`in_model_convention`);
* :func:`excitation` writes a schedule of held levels, a chirp and sines within each joint's
  limits and its range without self-contact, for the robot to play while it hangs on a stand;
* :func:`simulate` replays a recording's targets in our model of the robot hanging with its torso
  fixed (:func:`hang`), through the environments' servo model (a
  :class:`~upright.envs.simulation.Simulation` with its delay queue);
* :func:`identify` fits factors on the position gain, torque limit, damping, armature and friction
  loss per servo class (or per joint) with CMA-ES (Optuna), for each whole number of extra delay
  cycles, and keeps the best; :class:`Identification` holds the result as ``Conditions`` data
  (``servo_parameters`` with absolute values and ``extra_delay_cycles``), which
  :func:`write_identification` writes as YAML with a plot of the tracking before and after.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import optuna
import yaml
from scipy.interpolate import interp1d
from scipy.signal import chirp
from scipy.signal.windows import tukey
from tqdm import tqdm

from upright.envs.conditions import SERVO_PARAMETERS, Conditions, ServoParameters
from upright.envs.robots import RobotSpec, get_robot, with_model
from upright.envs.robots.user_model import joint_conventions
from upright.envs.simulation import Simulation

#: The file formats of a recording, by suffix (MCAP is read only).
RECORDING_SUFFIXES = (".npz", ".csv", ".mcap")
#: The formats :func:`write_recording` writes.
WRITTEN_SUFFIXES = (".npz", ".csv")
#: An MCAP log's default topics: the commanded targets and the measured angles (``sensor_msgs/JointState``).
MCAP_TOPICS = ("/joint_commands", "/joint_states")
#: The fields of an MCAP message: joint names and angles (rad), as ``sensor_msgs/JointState`` and
#: command messages such as ``bitbots_msgs/JointCommand`` name them.
MCAP_NAME_FIELDS = ("name", "joint_names")
MCAP_POSITION_FIELDS = ("position", "positions")
#: The CSV columns, one row per joint per sample (``measured`` empty in a schedule to play).
CSV_COLUMNS = ("time", "joint", "target", "measured")
#: Groupings of the fitted parameters: one set per servo class (the MJCF default class of the
#: actuator: Wolfgang ``mx106``, NAO ``leg_t5``) or one per joint.
GROUPINGS = ("class", "joint")
#: Ranges of the factors on our model's servo parameters that the fit searches (log-uniform,
#: each centred on 1 in log space so that CMA-ES starts at our model): the published models'
#: gains differ by about 3x, the other parameters are less well known.
FACTOR_RANGES: dict[str, tuple[float, float]] = {
    "gain": (0.2, 5.0),
    "torque": (1.0 / 3.0, 3.0),
    "damping": (0.2, 5.0),
    "armature": (0.2, 5.0),
    "frictionloss": (0.1, 10.0),
}
#: Extra command delays (whole control cycles on top of the robot's own) tried by default: 0..3.
MAX_EXTRA_DELAY = 3
#: Height (m) of the hanging robot's torso origin above the ground: its feet and hands stay clear.
HANG_HEIGHT = 1.0
#: A log's median sample spacing must be the robot's control period within this relative
#: tolerance: a log at another rate is another robot, or a motion loop our model does not run.
PERIOD_TOLERANCE = 0.05
#: Sample spacings within this relative tolerance of the control period count as on the grid; a
#: log with others (timestamp jitter, dropped samples) is resampled onto it.
JITTER_TOLERANCE = 0.01
#: The longest gap between two samples (control periods) that resampling bridges: the commands in
#: a longer gap are unknown.
MAX_GAP_CYCLES = 3
#: The error (rad²) of a trial whose simulation blew up: above any tracking error within joint limits.
BLOW_UP_ERROR = 100.0
#: Excitation: the largest amplitude (rad) about the standing pose.
EXCITATION_AMPLITUDE = 0.3
#: Excitation: seconds held at the start pose at the beginning (the robot at rest when the
#: simulation starts from the first measured angles) and at the end.
EXCITATION_HOLD = 0.5
#: Excitation: seconds over which the chirp and each sine fade in and out (a Tukey window).
EXCITATION_FADE = 0.2
#: Excitation: the logarithmic chirp's frequencies (Hz, start and end) and the frequencies of the
#: sines after it (Hz): from slow tracking, where gravity against the gain shows, to fast, where
#: the delay, damping, armature and the torque limit show.
CHIRP_FREQUENCIES = (0.2, 3.0)
SINE_FREQUENCIES = (0.5, 1.5, 3.0)


@dataclass(frozen=True)
class Recording:
    """Joint trajectories of one robot: ``time`` (s, increasing, shape (samples,)), the ``joints``'
    names (actuator names of the robot), the commanded ``target`` angles and the ``measured``
    angles (rad, encoder angles, shape (samples, joints)); ``measured`` is ``None`` in a schedule
    to play (a file's all-NaN or empty measured values read as ``None``). A ValueError names a bad
    shape, a time that does not increase, a non-finite value or a repeated joint."""

    time: np.ndarray
    joints: tuple[str, ...]
    target: np.ndarray
    measured: np.ndarray | None = None

    def __post_init__(self) -> None:
        time = np.asarray(self.time, dtype=float)
        joints = tuple(str(j) for j in np.atleast_1d(self.joints))
        if time.ndim != 1 or len(time) < 2:
            raise ValueError(f"time must be one-dimensional with at least 2 samples, got shape {time.shape}")
        repeated = sorted({j for j in joints if joints.count(j) > 1})
        if not joints or repeated:
            raise ValueError(f"joints must name each joint once, got {list(joints)}")
        if not np.all(np.isfinite(time)):
            raise ValueError(f"time holds a non-finite value at sample {int(np.argmin(np.isfinite(time)))}")
        steps = np.diff(time)
        if np.any(steps <= 0.0):
            k = int(np.argmax(steps <= 0.0)) + 1
            raise ValueError(f"time must increase: sample {k} at {time[k]!r} s follows {time[k - 1]!r} s")
        shape = (len(time), len(joints))
        target = np.asarray(self.target, dtype=float)
        measured = None if self.measured is None else np.asarray(self.measured, dtype=float)
        if measured is not None and measured.shape == shape and np.all(np.isnan(measured)):
            measured = None
        for name, values in (("target", target), ("measured", measured)):
            if values is None:
                continue
            if values.shape != shape:
                raise ValueError(f"{name} must have shape (samples, joints) = {shape}, got {values.shape}")
            if not np.all(np.isfinite(values)):
                k, j = np.argwhere(~np.isfinite(values))[0]
                raise ValueError(f"{name} of joint {joints[j]} is {values[k, j]} at sample {k} ({time[k]!r} s)")
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "joints", joints)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "measured", measured)


def read_recording(path: str | Path, topics: tuple[str, str] = MCAP_TOPICS) -> Recording:
    """The recording in ``path``: NPZ (arrays ``time``, ``joints``, ``target``, optional
    ``measured``), CSV (columns :data:`CSV_COLUMNS`, one row per joint per sample, every joint at
    the same times) or MCAP (:func:`_read_mcap`: the command and joint-state ``topics``), by
    suffix; a ValueError names a missing file, an unknown suffix, a missing array, column or
    topic, or a bad value."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in RECORDING_SUFFIXES:
        raise ValueError(f"unknown recording format {path.suffix!r} of {path}; valid: {', '.join(RECORDING_SUFFIXES)}")
    if not path.is_file():
        raise ValueError(f"no recording file {path}")
    if suffix == ".mcap":
        return _read_mcap(path, topics)
    return _read_npz(path) if suffix == ".npz" else _read_csv(path)


def _read_npz(path: Path) -> Recording:
    with np.load(path, allow_pickle=False) as data:
        missing = [name for name in ("time", "joints", "target") if name not in data]
        if missing:
            raise ValueError(f"{path} lacks the arrays {missing}; it has {sorted(data.files)}")
        return Recording(time=data["time"], joints=tuple(data["joints"].tolist()), target=data["target"],
                         measured=data["measured"] if "measured" in data else None)


def _read_csv(path: Path) -> Recording:
    with path.open(newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        missing = [c for c in CSV_COLUMNS[:3] if c not in (reader.fieldnames or ())]
        if missing:
            raise ValueError(f"{path} lacks the columns {missing}; a recording has the columns "
                             f"{', '.join(CSV_COLUMNS)}")
        rows: dict[str, list[tuple[float, float, float]]] = {}
        for line, row in enumerate(reader, start=2):
            try:
                values = (float(row["time"]), float(row["target"]), float(row.get("measured") or "nan"))
            except (TypeError, ValueError):
                raise ValueError(f"{path} line {line}: time, target and measured must be numbers, got {row}") from None
            rows.setdefault(row["joint"], []).append(values)
    if not rows:
        raise ValueError(f"{path} holds no samples")
    columns = {joint: np.array(samples) for joint, samples in rows.items()}  # joint → (samples, 3)
    first, reference = next(iter(columns.items()))
    for joint, samples in columns.items():
        if len(samples) != len(reference) or not np.array_equal(samples[:, 0], reference[:, 0]):
            raise ValueError(f"{path}: joint {joint} has {len(samples)} samples at other times than joint {first} "
                             f"({len(reference)}); every joint needs one row per sample time")
    stacked = np.stack(list(columns.values()), axis=1)  # (samples, joints, 3)
    return Recording(time=reference[:, 0], joints=tuple(columns), target=stacked[..., 1], measured=stacked[..., 2])


class _JsonDecoderFactory:
    """An mcap decoder factory for messages encoded as JSON (``message_encoding: json``, whatever
    their schema): each becomes a mapping."""

    def decoder_for(self, message_encoding: str, schema: object) -> Callable[[bytes], Any] | None:
        return json.loads if message_encoding == "json" else None


def _field(message: object, names: tuple[str, ...]) -> object:
    """The first of the fields ``names`` that ``message`` has (a JSON mapping or a decoded ROS 2
    message), else None."""
    for name in names:
        value = message.get(name) if isinstance(message, dict) else getattr(message, name, None)
        if value is not None:
            return value
    return None


def _stamp(message: object, log_time: int) -> int:
    """A message's time (ns): its ``header.stamp`` (``sec``, ``nanosec``), else, absent or zero,
    the MCAP record's log time."""
    stamp = _field(_field(message, ("header",)) or {}, ("stamp",))
    if stamp is not None:
        nanoseconds = int(_field(stamp, ("sec",)) or 0) * 10**9 + int(_field(stamp, ("nanosec",)) or 0)
        if nanoseconds > 0:
            return nanoseconds
    return int(log_time)


def _read_mcap(path: Path, topics: tuple[str, str]) -> Recording:
    """The recording in the MCAP file ``path``: the messages of the command topic (the targets,
    one message per control cycle, each naming every recorded joint) and of the joint-state topic
    (the measured angles), ``topics``. A message holds joint names (:data:`MCAP_NAME_FIELDS`) and
    angles in rad (:data:`MCAP_POSITION_FIELDS`), and its time is its ``header.stamp`` or its log
    time: ``sensor_msgs/JointState`` on both, or any command message with those fields. Messages
    are JSON (``message_encoding: json``) or ROS 2 CDR with a ``ros2msg`` schema (a ROS 2 bag).
    A command's measured angles are the joint states interpolated linearly at its time; commands
    before the first or after the last joint state are left out. The recording's time is counted
    from the first command."""
    from mcap.exceptions import DecoderNotFoundError, McapError  # mcap: only when a log is read
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory as Ros2DecoderFactory

    def file_topics() -> dict[str, str]:  # every topic of the file → its message encoding, for errors
        with path.open("rb") as file:
            return {channel.topic: channel.message_encoding for _, channel, _ in make_reader(file).iter_messages()}

    command_topic, state_topic = topics
    messages: dict[str, list[tuple[int, dict[str, float]]]] = {command_topic: [], state_topic: []}
    try:
        with path.open("rb") as file:
            reader = make_reader(file, decoder_factories=[_JsonDecoderFactory(), Ros2DecoderFactory()])
            for _, channel, message, decoded in reader.iter_decoded_messages(topics=list(topics),
                                                                              log_time_order=True):
                names, positions = _field(decoded, MCAP_NAME_FIELDS), _field(decoded, MCAP_POSITION_FIELDS)
                if names is None or positions is None or len(names) != len(positions):
                    raise ValueError(f"{path}: a message on {channel.topic} at log time {message.log_time} ns has no "
                                     f"joint names ({' or '.join(MCAP_NAME_FIELDS)}) and as many angles "
                                     f"({' or '.join(MCAP_POSITION_FIELDS)})")
                messages[channel.topic].append((_stamp(decoded, message.log_time),
                                                dict(zip(map(str, names), map(float, positions)))))
    except DecoderNotFoundError:
        seen = file_topics()
        encodings = ", ".join(f"{topic} ({seen[topic]})" for topic in topics if topic in seen)
        raise ValueError(f"{path}: cannot decode the messages of {encodings}; upright reads json and ROS 2 cdr "
                         "(ros2msg schemas)") from None
    except McapError as error:
        raise ValueError(f"{path} is no readable MCAP file: {error}") from None
    for topic, role in zip(topics, ("command", "joint-state")):
        if not messages[topic]:
            raise ValueError(f"{path} has no messages on the {role} topic {topic!r}; its topics: "
                             f"{', '.join(sorted(file_topics())) or 'none'} (--topics COMMAND STATE)")
    commands, states = messages[command_topic], messages[state_topic]
    joints = tuple(commands[0][1])
    start = commands[0][0]  # the times are taken from the first command on, in s: exact in a float
    for k, (stamp, values) in enumerate(commands):
        if set(values) != set(joints):
            raise ValueError(f"{path}: command {k} on {command_topic} ({1e-9 * (stamp - start):.4f} s after the first) "
                             f"names {sorted(values)}, the first {sorted(joints)}; every command names every recorded "
                             "joint")
    time = np.array([1e-9 * (t - start) for t, _ in commands])
    target = np.array([[values[j] for j in joints] for _, values in commands])
    measured = np.empty_like(target)
    inside = np.ones(len(time), dtype=bool)
    for j, joint in enumerate(joints):
        read = sorted((1e-9 * (t - start), values[joint]) for t, values in states if joint in values)
        if not read:
            raise ValueError(f"{path}: the joint states on {state_topic} never name the commanded joint {joint!r}")
        read_time, angle = np.array(read).T
        measured[:, j] = np.interp(time, read_time, angle)
        inside &= (time >= read_time[0]) & (time <= read_time[-1])
    if inside.sum() < 2:
        raise ValueError(f"{path}: fewer than 2 commands on {command_topic} fall within the joint states' time span")
    return Recording(time=time[inside], joints=joints, target=target[inside], measured=measured[inside])


def our_actuator_names(names: tuple[str, ...], robot: RobotSpec, whose: str = "") -> tuple[str, ...]:
    """Our actuator names of the joints ``names`` of ``robot.model`` (its joint or actuator names;
    ours without a user's model); a ValueError names a joint that is no actuated joint of the
    model (``whose``: how the message names where they come from, e.g. ``of the recording ``)."""
    conventions = joint_conventions(robot)
    ours = {name: actuator for actuator, c in conventions.items() for name in (c.joint, c.actuator)}
    unknown = [j for j in names if j not in ours]
    if unknown:
        where = f"the model {robot.model}" if robot.model is not None else robot.name
        raise ValueError(f"joints {unknown} {whose}are no actuated joints of {where}; valid: "
                         f"{', '.join(c.joint for c in conventions.values())}")
    return tuple(ours[j] for j in names)


def in_our_convention(recording: Recording, robot: RobotSpec) -> Recording:
    """``recording`` of the robot of ``robot.model`` (joints named by that model's joint or actuator
    names, its angles) in our actuator names and angles, through the model map
    (:func:`~upright.envs.robots.user_model.joint_conventions`); without a user's model the names
    are ours and the angles unchanged. A ValueError names a joint the model does not have."""
    conventions = joint_conventions(robot)
    joints = our_actuator_names(recording.joints, robot, "of the recording ")

    def convert(angles: np.ndarray | None) -> np.ndarray | None:
        if angles is None:
            return None
        return np.stack([conventions[a].to_ours(angles[:, k]) for k, a in enumerate(joints)], axis=1)

    return Recording(recording.time, joints, convert(recording.target), convert(recording.measured))


def in_model_convention(recording: Recording, robot: RobotSpec) -> Recording:
    """``recording`` in our actuator names and angles, in the joint names and angles of
    ``robot.model`` (the inverse of :func:`in_our_convention`): what the user's robot is sent."""
    conventions = joint_conventions(robot)

    def convert(angles: np.ndarray | None) -> np.ndarray | None:
        if angles is None:
            return None
        return np.stack([conventions[a].to_theirs(angles[:, k]) for k, a in enumerate(recording.joints)], axis=1)

    return Recording(recording.time, tuple(conventions[a].joint for a in recording.joints), convert(recording.target),
                     convert(recording.measured))


def write_recording(recording: Recording, path: str | Path) -> Path:
    """Write ``recording`` to ``path`` as NPZ or CSV (by suffix, as :func:`read_recording` reads
    them; a schedule without measured angles has no ``measured`` array or empty ``measured``
    cells); return the path."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in WRITTEN_SUFFIXES:
        raise ValueError(f"unknown recording format {path.suffix!r} of {path} to write; valid: "
                         f"{', '.join(WRITTEN_SUFFIXES)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".npz":
        arrays = {"time": recording.time, "joints": np.array(recording.joints), "target": recording.target}
        if recording.measured is not None:
            arrays["measured"] = recording.measured
        np.savez(path, **arrays)
        return path
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for k, time in enumerate(recording.time.tolist()):  # floats as repr: they read back exactly
            for j, joint in enumerate(recording.joints):
                measured = "" if recording.measured is None else recording.measured[k, j]
                writer.writerow((time, joint, recording.target[k, j], measured))
    return path


def on_control_grid(recording: Recording, robot: RobotSpec) -> Recording:
    """``recording`` checked against ``robot`` and sampled at its control period: a ValueError
    names a joint that is no actuator of the robot, a median sample spacing that is not the
    control period (within :data:`PERIOD_TOLERANCE`) or a gap of more than
    :data:`MAX_GAP_CYCLES` control periods. A recording whose every spacing is the control period
    (within :data:`JITTER_TOLERANCE`) is returned as it is; one with timestamp jitter or dropped
    samples is resampled onto the grid from its first sample, the targets held until the next
    command (a servo holds its last command), the measured angles linearly interpolated."""
    unknown = [j for j in recording.joints if j not in robot.actuator_names]
    if unknown:
        raise ValueError(f"joints {unknown} of the recording are not actuators of {robot.name}; valid: "
                         f"{', '.join(robot.actuator_names)}")
    missing = [j for j in recording.joints if j in robot.missing_joints]
    if missing:
        raise ValueError(f"joints {missing} of the recording are missing in the model {robot.model}: it has no servo "
                         "of theirs to fit")
    period = robot.control_period
    steps = np.diff(recording.time)
    median = float(np.median(steps))
    if abs(median - period) > PERIOD_TOLERANCE * period:
        raise ValueError(f"the recording is sampled every {median:.4g} s (median), {robot.name}'s control period is "
                         f"{period} s: record one sample per control cycle")
    if np.allclose(steps, period, rtol=JITTER_TOLERANCE, atol=0.0):
        return recording
    if steps.max() > MAX_GAP_CYCLES * period:
        k = int(np.argmax(steps))
        raise ValueError(f"the recording has a gap of {steps[k]:.4g} s after {recording.time[k]:.4g} s, more than "
                         f"{MAX_GAP_CYCLES} control periods of {robot.name} ({period} s); the commands in it are "
                         "unknown")
    count = int(math.floor((recording.time[-1] - recording.time[0]) / period + 1e-9)) + 1
    grid = recording.time[0] + period * np.arange(count)
    held = interp1d(recording.time, recording.target, kind="previous", axis=0)(grid)
    measured = None if recording.measured is None else interp1d(recording.time, recording.measured, axis=0)(grid)
    return Recording(time=grid, joints=recording.joints, target=held, measured=measured)


def hang(spec: mujoco.MjSpec, robot: RobotSpec) -> None:
    """Edit the scene ``spec`` of ``robot`` into the robot on a test stand: the torso's free joint
    removed (so the keyframes lose its 7 qpos and 6 qvel values) and the torso fixed upright with
    its origin :data:`HANG_HEIGHT` above the ground, where the limbs swing free. Removing the joint
    rather than welding the torso keeps the stand rigid, as a real one nearly is, and saves the
    six degrees of freedom (a :class:`~upright.envs.simulation.Simulation` ``edit``)."""
    torso = spec.body(robot.torso_body)
    for joint in [j for j in torso.joints if j.type == mujoco.mjtJoint.mjJNT_FREE]:
        spec.delete(joint)
    torso.pos = [0.0, 0.0, HANG_HEIGHT]
    torso.quat = [1.0, 0.0, 0.0, 0.0]
    for key in spec.keys:
        key.qpos = list(key.qpos)[7:]
        key.qvel = list(key.qvel)[6:]


def hanging_simulation(robot: RobotSpec, conditions: Conditions | None = None) -> Simulation:
    """A :class:`~upright.envs.simulation.Simulation` of ``robot`` hanging (:func:`hang`) under
    ``conditions`` (default ``lab``)."""
    return Simulation(robot, conditions, edit=partial(hang, robot=robot))


def simulate(recording: Recording, robot: RobotSpec, conditions: Conditions | None = None) -> np.ndarray:
    """The angles (rad, shape (samples, joints) of the recording, noise-free) the model of
    ``robot`` (ours, or the user's ``robot.model``) hanging on a stand reaches when it is sent the
    recording's targets, one per control period, through the environments' servo model (delay
    queue; ``conditions``, default ``lab``, may change the servos and add delay). Sample k is the
    angle when target k is sent, so sample 0 is the start: at rest in the standing pose, the
    recorded joints at their first measured angle (a schedule's: its first target) and commanded to
    their first target; joints the recording does not name hold the standing pose. After a physics
    blow-up the angles are NaN."""
    sim = hanging_simulation(robot, conditions)
    m = sim.model
    columns = np.array([robot.actuator_names.index(j) for j in recording.joints])
    key = m.key(robot.standing_pose).id
    qpos, ctrl = m.key_qpos[key].copy(), m.key_ctrl[key].copy()
    start = dict(zip(recording.joints, recording.target[0] if recording.measured is None else recording.measured[0]))
    for joint, actuator in zip(robot.joint_names, robot.joint_actuator_index):  # a coupled joint follows its driver
        if robot.actuator_names[actuator] in start:
            qpos[m.jnt_qposadr[m.joint(joint).id]] = start[robot.actuator_names[actuator]]
    ctrl[columns] = recording.target[0]
    sim.reset(seed=0, qpos=qpos, ctrl=ctrl)
    commands = np.tile(ctrl, (len(recording.time), 1))
    commands[:, columns] = recording.target
    angles = np.full(recording.target.shape, np.nan)
    for k, command in enumerate(commands):
        angles[k] = sim.actuated_joint_pos()[columns]
        sim.step(command)
        if sim.unstable:
            break
    return angles


def tracking_error(recording: Recording, robot: RobotSpec, conditions: Conditions | None = None) -> float:
    """Mean squared error (rad²) between :func:`simulate`'s angles and the measured ones, over
    every sample and joint (:data:`BLOW_UP_ERROR` when the simulation blew up)."""
    if recording.measured is None:
        raise ValueError("the recording has no measured angles to compare with")
    error = float(np.mean((simulate(recording, robot, conditions) - recording.measured) ** 2))
    return error if math.isfinite(error) else BLOW_UP_ERROR


def servo_groups(robot: RobotSpec, joints: tuple[str, ...], per: str) -> dict[str, tuple[str, ...]]:
    """The fit's groups of the recorded ``joints``: servo class (``per="class"``) or joint name
    (``per="joint"``) → the recorded joints whose servos share one set of parameters."""
    if per not in GROUPINGS:
        raise ValueError(f"unknown grouping {per!r}; valid: {', '.join(GROUPINGS)}")
    classes = dict(zip(robot.actuator_names, hanging_simulation(robot).servo_classes))
    groups: dict[str, tuple[str, ...]] = {}
    for joint in joints:
        group = classes[joint] if per == "class" else joint
        groups[group] = (*groups.get(group, ()), joint)
    return groups


def model_servo_parameters(robot: RobotSpec) -> dict[str, dict[str, float]]:
    """The servo parameters of ``robot``'s model (ours, or the user's) per actuator name: position
    ``gain`` (N·m/rad), ``torque`` limit (N·m), and the driven joint's ``damping`` (N·m·s/rad),
    ``armature`` (kg·m²) and ``frictionloss`` (N·m)."""
    m = hanging_simulation(robot).model
    out = {}
    for i, name in enumerate(robot.actuator_names):
        dof = m.jnt_dofadr[m.actuator_trnid[i, 0]]
        out[name] = {"gain": float(m.actuator_gainprm[i, 0]), "torque": float(m.actuator_forcerange[i, 1]),
                     "damping": float(m.dof_damping[dof]), "armature": float(m.dof_armature[dof]),
                     "frictionloss": float(m.dof_frictionloss[dof])}
    return out


@dataclass(frozen=True)
class Identification:
    """The result of :func:`identify`: per group (servo class or joint, :func:`servo_groups`) the
    ``factors`` on our model's fitted parameters and the absolute ``parameters`` they give (units
    of :class:`~upright.envs.conditions.ServoParameters`; a parameter not fitted is not named),
    the ``extra_delay_cycles`` (control cycles on top of the robot's own), the mean squared
    tracking errors (rad²) of the model (``model_error``) and of the best fit at each extra delay
    0, 1, ... (``error_by_delay``), the fit's ``trials`` per delay and ``seed``, and the user's
    ``model`` and ``model_map`` fitted (paths; None: ours), whose servos the factors are on."""

    robot: str
    per: str
    groups: dict[str, tuple[str, ...]]
    factors: dict[str, dict[str, float]]
    parameters: dict[str, dict[str, float]]
    extra_delay_cycles: int
    model_error: float
    error_by_delay: tuple[float, ...]
    trials: int
    seed: int
    model: str | None = None
    model_map: str | None = None

    @property
    def robot_spec(self) -> RobotSpec:
        """The description of the robot fitted: ours, or on the user's model through its map."""
        return with_model(get_robot(self.robot), self.model, self.model_map)

    @property
    def error(self) -> float:
        """Mean squared tracking error (rad²) of the fitted model."""
        return self.error_by_delay[self.extra_delay_cycles]

    def conditions_data(self) -> dict[str, object]:
        """The identified servos as plain data that :meth:`Conditions.from_dict
        <upright.envs.conditions.Conditions.from_dict>` and :meth:`Conditions.changed
        <upright.envs.conditions.Conditions.changed>` read: ``servo_parameters`` keyed by
        ``ROBOT/GROUP`` (a servo class applies to every actuator of the class, recorded or not)
        and ``extra_delay_cycles``."""
        servos = {f"{self.robot}/{group}": dict(values) for group, values in self.parameters.items()}
        return {"servo_parameters": servos, "extra_delay_cycles": self.extra_delay_cycles}

    def conditions(self) -> Conditions:
        """The identified servos as :class:`~upright.envs.conditions.Conditions` (``lab`` otherwise)."""
        return Conditions.from_dict(self.conditions_data())


def _fitted_parameters(nominal: dict[str, dict[str, float]], groups: dict[str, tuple[str, ...]],
                       factors: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each group's servo parameters: ``factors`` times our model's values (those of the group's
    first joint: the actuators of a servo class share them), for the parameters ``factors`` names."""
    return {group: {p: nominal[joints[0]][p] * f for p, f in factors[group].items()}
            for group, joints in groups.items()}


def _fitted_conditions(robot: RobotSpec, parameters: dict[str, dict[str, float]], extra_delay: int) -> Conditions:
    """Conditions with each group's servo ``parameters`` (the others: the model file's) and
    ``extra_delay`` control cycles."""
    return Conditions(extra_delay_cycles=extra_delay, servo_parameters={
        f"{robot.name}/{group}": ServoParameters(**values) for group, values in parameters.items()})


def identify(recording: Recording, robot: RobotSpec, *, per: str = "class",
             parameters: tuple[str, ...] = SERVO_PARAMETERS, trials: int = 300, seed: int = 0,
             max_extra_delay: int = MAX_EXTRA_DELAY, progress: bool = False) -> Identification:
    """Fit the servos of ``robot``'s model (ours, or the user's ``robot.model``: the factors are on
    its values) to ``recording`` (measured angles required, in our names and angles:
    :func:`in_our_convention` converts a log of a user's model).

    For each extra delay of 0..``max_extra_delay`` whole control cycles, one Optuna study with the
    CMA-ES sampler (seeded with ``seed``) runs ``trials`` trials over the factors of
    :data:`FACTOR_RANGES` on ``parameters`` (of :data:`SERVO_PARAMETERS`; the others keep our
    model's values: a torque limit the recording never reaches is not identifiable) per group
    (``per``: :data:`GROUPINGS`), its first trial our model (every factor 1); a trial's value is
    :func:`tracking_error`. The delay with the lowest error wins: each whole number fitted on its
    own comes out exact, where an integer parameter in one CMA-ES search can settle on a wrong
    delay before its factors have converged. CMA-ES needs about 100 trials for two parameters and
    a few hundred for five. Deterministic for a seed on one machine."""
    if recording.measured is None:
        raise ValueError("the recording has no measured angles: record the robot playing it first")
    if trials < 1 or max_extra_delay < 0:
        raise ValueError(f"trials must be >= 1 and max_extra_delay >= 0, got {trials!r} and {max_extra_delay!r}")
    unknown = [p for p in parameters if p not in SERVO_PARAMETERS]
    if not parameters or unknown:
        raise ValueError(f"parameters must name some of {', '.join(SERVO_PARAMETERS)}, got {list(parameters)}")
    recording = on_control_grid(recording, robot)
    groups = servo_groups(robot, recording.joints, per)
    nominal = model_servo_parameters(robot)
    ones = {f"{group}.{p}": 1.0 for group in groups for p in parameters}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    best: list[dict[str, float]] = []
    errors: list[float] = []
    model_errors: list[float] = []  # our model's, the first trial of each delay
    with tqdm(total=trials * (max_extra_delay + 1), desc=f"identify {robot.name}", disable=not progress) as bar:
        for delay in range(max_extra_delay + 1):
            def objective(trial: optuna.Trial, delay: int = delay) -> float:
                factors = {group: {p: trial.suggest_float(f"{group}.{p}", *FACTOR_RANGES[p], log=True)
                                   for p in parameters} for group in groups}
                return tracking_error(recording, robot,
                                      _fitted_conditions(robot, _fitted_parameters(nominal, groups, factors), delay))

            study = optuna.create_study(sampler=optuna.samplers.CmaEsSampler(seed=seed))
            study.enqueue_trial(ones)
            study.optimize(objective, n_trials=trials, callbacks=[lambda *_: bar.update()])
            best.append(study.best_params)
            errors.append(float(study.best_value))
            model_errors.append(float(study.trials[0].value))
    delay = int(np.argmin(errors))
    factors = {group: {p: float(best[delay][f"{group}.{p}"]) for p in parameters} for group in groups}
    values = {group: {p: float(f"{v:.6g}") for p, v in fitted.items()}
              for group, fitted in _fitted_parameters(nominal, groups, factors).items()}
    return Identification(robot=robot.name, per=per, groups=groups, factors=factors, parameters=values,
                          extra_delay_cycles=delay, model_error=model_errors[0], error_by_delay=tuple(errors),
                          trials=trials, seed=seed, model=None if robot.model is None else str(robot.model),
                          model_map=None if robot.model_map is None else str(robot.model_map))


def excitation(robot: RobotSpec, seconds: float, *, joints: tuple[str, ...] | None = None,
               amplitude: float = EXCITATION_AMPLITUDE, margin: float = 0.1, max_speed: float = 3.0) -> Recording:
    """A schedule for ``robot`` to play on a stand (a :class:`Recording` without measured angles,
    one target per control period for ``seconds`` s) that moves ``joints`` (default: every
    actuator the model has) all at once about the standing pose, each the same motion in units of its amplitude
    (:func:`_excitation_shape`: held levels, a chirp, sines; at rest at both ends).

    A joint's amplitude (rad) is ``amplitude`` where its range without self-contact
    (:func:`contact_free_ranges`, within its limits) less ``margin`` (rad) at both ends allows;
    its centre is the standing pose's angle, moved inside that range by the amplitude where it
    lies too near an end. No target moves faster than ``max_speed`` (rad/s): the chirp and
    sines are smaller at high frequencies."""
    present = tuple(a for a in robot.actuator_names if a not in robot.missing_joints)
    joints = present if joints is None else tuple(joints)
    unknown = [j for j in joints if j not in present]
    if unknown:
        raise ValueError(f"joints {unknown} are not actuators of {robot.name}"
                         + (f" in the model {robot.model}" if robot.model is not None else "")
                         + f"; valid: {', '.join(present)}")
    if not (amplitude > 0.0 and margin >= 0.0 and max_speed > 0.0):
        raise ValueError(f"amplitude and max_speed must be > 0 and margin >= 0, got {amplitude!r}, {max_speed!r}, "
                         f"{margin!r}")
    period = robot.control_period
    moving = seconds - 2.0 * EXCITATION_HOLD
    if not moving >= 1.0:
        raise ValueError(f"seconds must be at least {2.0 * EXCITATION_HOLD + 1.0:g} (holds at both ends and 1 s of "
                         f"motion), got {seconds!r}")
    columns = [robot.actuator_names.index(j) for j in joints]
    low, high = contact_free_ranges(robot, joints) + np.array([[margin], [-margin]])
    if np.any(high <= low):
        j = int(np.argmax(high <= low))
        raise ValueError(f"the range of {joints[j]} without self-contact is narrower than twice the margin "
                         f"{margin!r} rad")
    largest = np.minimum(amplitude, (high - low) / 2.0)
    m = hanging_simulation(robot).model
    centre = np.clip(m.key_ctrl[m.key(robot.standing_pose).id][columns], low + largest, high - largest)
    shape = _excitation_shape(seconds, period, max_speed / amplitude)
    return Recording(time=np.arange(len(shape)) * period, joints=joints,
                     target=centre + np.outer(shape, largest))


def _excitation_shape(seconds: float, period: float, max_rate: float) -> np.ndarray:
    """The excitation's motion in units of the amplitude (within [-1, 1], one value per control
    period over ``seconds`` s): held at 0 for :data:`EXCITATION_HOLD` s; then, for a third of the
    rest each, levels +1, -1 and 0 (raised-cosine moves between them; at rest, gravity's sag
    against the gain shows apart from the damping), a logarithmic chirp over
    :data:`CHIRP_FREQUENCIES` and a sine at each of :data:`SINE_FREQUENCIES` (faded in and out
    over :data:`EXCITATION_FADE` s); held at 0 to the end. Each part is scaled down where it would
    move faster than ``max_rate`` amplitudes per second, the chirp at each instant by its frequency."""
    part = (seconds - 2.0 * EXCITATION_HOLD) / 3.0
    level_time = np.arange(round(part / period)) * period
    levels = np.zeros(len(level_time))
    for k, change in enumerate((1.0, -2.0, 1.0)):  # to +1, to -1, back to 0
        duration = np.pi * abs(change) / (2.0 * max_rate)  # a raised cosine's top speed is pi/2 x its mean
        ramp = np.clip((level_time - k * part / 3.0) / duration, 0.0, 1.0)
        levels += change * (1.0 - np.cos(np.pi * ramp)) / 2.0
    chirp_time = np.arange(round(part / period)) * period
    f0, f1 = CHIRP_FREQUENCIES
    frequency = f0 * (f1 / f0) ** (chirp_time / chirp_time[-1])  # the logarithmic chirp's instantaneous frequency
    wave = chirp(chirp_time, f0, chirp_time[-1], f1, method="logarithmic", phi=-90.0)  # a sine: starts at 0
    waves = [wave * np.minimum(1.0, max_rate / (2.0 * np.pi * frequency))]
    sine_time = np.arange(round(part / len(SINE_FREQUENCIES) / period)) * period
    waves += [np.sin(2.0 * np.pi * f * sine_time) for f in SINE_FREQUENCIES]
    parts = [levels, *(w * tukey(len(w), min(1.0, 2.0 * EXCITATION_FADE / (len(w) * period))) for w in waves)]
    parts = [p * min(1.0, max_rate * period / np.abs(np.diff(p)).max()) for p in parts]
    hold = np.zeros(round(EXCITATION_HOLD / period))
    return np.concatenate([hold, *parts, np.zeros(round(seconds / period) + 1 - len(hold) - sum(map(len, parts)))])


def contact_free_ranges(robot: RobotSpec, joints: tuple[str, ...], resolution: float = 0.01) -> np.ndarray:
    """Per actuator of ``joints``, the range (rad; shape (2, joints): low, high) within its
    control range over which our hanging model of ``robot`` touches nothing while every other
    joint holds the standing pose: the joint limits of the file alone let a Wolfgang's shoulder
    roll drive the arm into the torso and a hip roll one leg into the other. Scanned in steps of
    ``resolution`` (rad) outwards from the standing angle (kinematics and collision only)."""
    sim = hanging_simulation(robot)
    m, d = sim.model, sim.data
    key = m.key(robot.standing_pose).id
    ranges = np.empty((2, len(joints)))
    for j, joint in enumerate(joints):
        actuator = robot.actuator_names.index(joint)
        driven = [m.jnt_qposadr[m.joint(name).id] for name, a in zip(robot.joint_names, robot.joint_actuator_index)
                  if a == actuator]  # the joint and the joints coupled to it
        lo, hi = m.actuator_ctrlrange[actuator]
        standing = float(np.clip(m.key_ctrl[key][actuator], lo, hi))

        def touches(angle: float) -> bool:
            d.qpos[:] = m.key_qpos[key]
            d.qpos[driven] = angle
            mujoco.mj_kinematics(m, d)
            mujoco.mj_collision(m, d)
            return d.ncon > 0

        if touches(standing):
            raise ValueError(f"{robot.name}'s standing pose touches itself at {joint}; no range without contact")
        for end, limit in enumerate((lo, hi)):
            steps = np.linspace(standing, limit, max(2, int(np.ceil(abs(limit - standing) / resolution)) + 1))
            hits = [touches(a) for a in steps]
            ranges[end, j] = steps[hits.index(True) - 1] if True in hits else limit
    return ranges


def write_identification(identification: Identification, recording: Recording, out: str | Path, *,
                         command: str = "upright identify") -> tuple[Path, Path]:
    """Write ``out/conditions.yaml`` (the :meth:`Identification.conditions_data`, headed by a
    comment that says what it is and how to load it) and ``out/tracking.png`` (per joint: target,
    measured, our model and the fit over time); return both paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    robot_spec = identification.robot_spec
    recording = on_control_grid(recording, robot_spec)
    fitted = next(iter(identification.factors.values()))
    errors = ", ".join(f"{d}: {e:.3g}" for d, e in enumerate(identification.error_by_delay))
    model = ("" if identification.model is None else
             f" on the model {identification.model}" + (f" (map {identification.model_map})"
                                                        if identification.model_map else ""))
    label = "our model" if identification.model is None else "the model"
    header = [
        f"# Servo parameters of {identification.robot}{model} identified by `{command}`",
        f"# from recorded joint trajectories of the robot hanging on a stand: per {identification.per} "
        f"({', '.join(identification.groups)}),",
        f"# {', '.join(fitted)} (the others as in the model file) and the extra delay, fitted with CMA-ES "
        f"(Optuna, seed {identification.seed},",
        f"# {identification.trials} trials per extra delay) to the measured angles. Units of ServoParameters: gain "
        "N m/rad, torque N m,",
        "# damping N m s/rad, armature kg m^2, frictionloss N m; extra_delay_cycles (control cycles) adds to the "
        "robot's own delay.",
        f"# Mean squared tracking error (rad^2): {label} {identification.model_error:.3g}, the fit "
        f"{identification.error:.3g}; best fit per extra delay {errors}.",
        "# Load: Conditions.from_dict(yaml.safe_load(open('conditions.yaml'))), or PRESETS[name].changed(...)"
        + ("." if identification.model is None else ", with gym.make(..., model=, model_map=) of that model."),
    ]
    yaml_path = out / "conditions.yaml"
    yaml_path.write_text("\n".join(header) + "\n" + yaml.safe_dump(identification.conditions_data(), sort_keys=False))
    png_path = out / "tracking.png"
    _plot_tracking(recording, simulate(recording, robot_spec),
                   simulate(recording, robot_spec, identification.conditions()), png_path, label)
    return yaml_path, png_path


def _plot_tracking(recording: Recording, model: np.ndarray, fit: np.ndarray, path: Path,
                   label: str = "our model") -> None:
    """Per joint, one panel over the time since the first sample: the target, the measured angle,
    and the angles of the model fitted (``label``) and of the fitted one (deg), each model with its
    RMS error."""
    import matplotlib  # matplotlib: only when a figure is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(recording.joints)
    time = recording.time - recording.time[0]
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.8 * n + 0.6), sharex=True, squeeze=False)
    for j, (ax, joint) in enumerate(zip(axes[:, 0], recording.joints)):
        ax.plot(time, np.degrees(recording.target[:, j]), color="0.6", lw=0.8, label="target")
        ax.plot(time, np.degrees(recording.measured[:, j]), color="black", lw=1.0, label="measured")
        for angles, name, color in ((model, label, "tab:red"), (fit, "fit", "tab:blue")):
            rms = np.degrees(np.sqrt(np.mean((angles[:, j] - recording.measured[:, j]) ** 2)))
            ax.plot(time, np.degrees(angles[:, j]), color=color, lw=0.9, ls="--" if name == "fit" else "-",
                    label=f"{name} (RMS {rms:.2f} deg)")
        ax.set_ylabel(f"{joint} (deg)")
        ax.legend(loc="upper right", fontsize=7, ncol=4)
    axes[-1, 0].set_xlabel("time since the first sample (s)")
    fig.suptitle(f"Measured against simulated tracking: {label} and the fit")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
