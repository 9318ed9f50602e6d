"""The observation's layout: :data:`OBSERVATION`, the one table of its blocks in order.

The environments' observation size and :meth:`~upright.envs.base.UprightEnv.observation_slices`
are computed from it, and the layout tables of the environments' docstrings are rendered from it
(:func:`document_observation`); ``docs/environments.md`` holds :func:`markdown_table`'s rendering
(checked by the tests). :func:`~upright.envs.sensors.observation_from_sensors` assembles the
values at the offsets :func:`assembled_slices` computes from it, and the simulation reads one
cycle's sensors in the order of :data:`READINGS`, which is derived from it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from upright.envs.robots import ROBOTS, RobotSpec

#: An environment option that adds a block → how the tables name it (``code`` marks a code span).
OPTIONS = {"observe_odometry": "{code}observe_odometry{code}", "observe_gait": "{code}observe_gait{code}",
           "prior": "a prior"}

#: The tables' header row.
HEADER = ("block", "size", "meaning (units, frame)")
#: Where :func:`document_observation` puts the table: a docstring line holding only this.
PLACEHOLDER = "{observation table}"


def robot_counts(robot: RobotSpec) -> dict[str, int]:
    """The robot's counts that block sizes name: ``nj`` joints, ``nu`` actuators, ``np`` foot
    pressure sensors."""
    return {"nj": len(robot.joint_names), "nu": len(robot.actuator_names), "np": len(robot.pressure_sensors)}


@dataclass(frozen=True)
class ObservationBlock:
    """One block of the observation: ``name``, ``size`` (``"nj"``: one per joint, ``"nu"``: one
    per actuator, ``"np"``: one per foot pressure sensor, or a fixed count), ``meaning`` (units,
    frame), and when it is there: ``task``, the one task that has it (None: both), and ``option``,
    the option it needs (a key of :data:`OPTIONS`; None: none)."""

    name: str
    size: str
    meaning: str
    task: str | None = None
    option: str | None = None

    def length(self, robot: RobotSpec) -> int:
        """The number of values of this block for ``robot``."""
        return self.count(robot_counts(robot))

    def count(self, counts: Mapping[str, int]) -> int:
        """The number of values of this block, given the counts its size may name
        (:func:`robot_counts`)."""
        return counts[self.size] if self.size in counts else int(self.size)


#: The observation's blocks in order (all of them; :func:`observation_blocks` picks an environment's).
OBSERVATION: tuple[ObservationBlock, ...] = (
    ObservationBlock("joint_pos", "nj", "measured joint angles (rad), robot joint order"),
    ObservationBlock("joint_vel", "nj", "joint velocities (rad/s), robot joint order"),
    ObservationBlock("joint_target", "nu", "the targets commanded last cycle (rad), actuator order"),
    ObservationBlock("gyro", "3", "IMU angular velocity (rad/s), IMU frame"),
    ObservationBlock("accel", "3", "IMU specific force (m/s²), IMU frame"),
    ObservationBlock("gravity", "3", "unit gravity direction in the IMU frame (from the IMU quaternion)"),
    ObservationBlock("fused", "3", "fused pitch, fused roll (rad), hemisphere (±1)"),
    ObservationBlock("foot_pressure", "np",
                     "foot pressure sensors (N), the left foot's then the right's (NAO FSRs, Wolfgang cleats)"),
    ObservationBlock("command", "3", "commanded vx (m/s), vy (m/s), yaw rate (rad/s)", task="walk"),
    ObservationBlock("odometry", "6", "the prior's velocity over its last step cycle (zeros before one), then its "
                     "speed correction: vx, vy (m/s), yaw rate (rad/s), heading frame",
                     task="walk", option="observe_odometry"),
    ObservationBlock("gait", "2", "the prior's support foot (+1 left, −1 right, 0 on both feet) and the fraction of "
                     "its current step that has passed", task="walk", option="observe_gait"),
    ObservationBlock("prior_target", "nu", "the prior's joint targets this cycle (rad), actuator order",
                     option="prior"),
)


#: The blocks every observation has: what one cycle's :class:`~upright.envs.sensors.Sensors` give.
SENSOR_BLOCKS = tuple(block for block in OBSERVATION if block.task is None and block.option is None)
#: The blocks a cycle's readings hold in another form than the observation's (name → the reading):
#: the orientation quaternion that the gravity direction is computed from, the fused angles with
#: their yaw.
READ_AS = {
    "gravity": ObservationBlock("quat", "4", "IMU orientation quaternion (w, x, y, z), IMU frame to world"),
    "fused": ObservationBlock("fused", "4", "fused pitch, roll, yaw (rad), hemisphere (±1)"),
}
#: What the simulation reads of the robot's sensors each control cycle, in one vector in this
#: order (:meth:`~upright.envs.simulation.Simulation.sensors`): the sensor blocks in the
#: observation's order, read as :data:`READ_AS` says, without the targets (the controller's own).
READINGS: tuple[ObservationBlock, ...] = tuple(READ_AS.get(block.name, block) for block in SENSOR_BLOCKS
                                               if block.name != "joint_target")


def observation_blocks(task: str, options: Collection[str] = ()) -> tuple[ObservationBlock, ...]:
    """The blocks of an environment of ``task`` with ``options`` (``"prior"`` with a prior,
    ``"observe_odometry"`` when it observes the prior's odometry), in order."""
    return tuple(block for block in OBSERVATION
                 if block.task in (None, task) and (block.option is None or block.option in options))


def block_slices(blocks: Iterable[ObservationBlock], robot: RobotSpec) -> dict[str, slice]:
    """Block name → the slice of the observation it occupies, for ``blocks`` in order on ``robot``."""
    slices, start = {}, 0
    for block in blocks:
        end = start + block.length(robot)
        slices[block.name], start = slice(start, end), end
    return slices


def assembled_slices(counts: Mapping[str, int], task: int, prior: int) -> dict[str, slice]:
    """Block name → slice of an observation assembled from one cycle's sensors (the
    :data:`SENSOR_BLOCKS`, sized by ``counts``, :func:`robot_counts`), ``task`` values of the
    task's blocks together (under the name ``"task"``) and ``prior`` values of the prior's targets
    (``"prior_target"``), in the table's order: what
    :func:`~upright.envs.sensors.observation_from_sensors` writes where."""
    slices, start = {}, 0
    for block in OBSERVATION:
        if block.task is not None:  # the task's blocks: one group, where the first of them is
            name, size = "task", task
        elif block.option == "prior":
            name, size = block.name, prior
        else:
            name, size = block.name, block.count(counts)
        if name not in slices:
            slices[name], start = slice(start, start + size), start + size
    return slices


def observation_size(blocks: Iterable[ObservationBlock], robot: RobotSpec) -> int:
    """The number of values of an observation of ``blocks`` on ``robot``."""
    return sum(block.length(robot) for block in blocks)


def _rows(task: str | None, code: str) -> list[tuple[str, str, str]]:
    """The table's rows (name, size, meaning) for ``task`` (None: every block), code spans
    marked with ``code``; a block's meaning starts with when it is there (its task unless that is
    ``task``, its option)."""
    blocks = OBSERVATION if task is None else observation_blocks(task, OPTIONS)
    rows = []
    for block in blocks:
        when = [block.task] if block.task not in (None, task) else []
        when += [f"with {OPTIONS[block.option].format(code=code)}"] if block.option is not None else []
        meaning = f"{' '.join(when)} only: {block.meaning}" if when else block.meaning
        rows.append((f"{code}{block.name}{code}", block.size, meaning))
    return rows


def _sizes_line(task: str | None) -> str:
    """The robots' counts (nj, nu, np) and, for ``task``, the observation size n without and with a prior."""
    parts = []
    for robot in ROBOTS.values():
        part = f"{robot.name}: " + ", ".join(f"{key} = {value}" for key, value in robot_counts(robot).items())
        if task is not None:
            alone, residual = (observation_size(observation_blocks(task, options), robot)
                               for options in ((), ("prior",)))
            part += f", n = {alone} ({residual} with a prior)"
        parts.append(part)
    return "; ".join(parts) + "."


def markdown_table(task: str | None = None) -> str:
    """The layout table of ``docs/environments.md`` (``task`` None: every block), then the
    robots' sizes."""
    lines = [f"| {' | '.join(HEADER)} |", "|---|---|---|"]
    lines += [f"| {' | '.join(row)} |" for row in _rows(task, "`")]
    return "\n".join(lines) + "\n\n" + _sizes_line(task)


def docstring_table(task: str | None = None) -> str:
    """The layout table for a docstring: :func:`markdown_table`'s rows with aligned columns and
    reStructuredText code spans, then the robots' sizes (with ``task``, the observation size n)."""
    rows = [HEADER, *_rows(task, "``")]
    widths = [max(len(row[k]) for row in rows) for k in range(len(HEADER))]

    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths)) + " |"

    lines = [line(rows[0]), "|" + "|".join("-" * (width + 2) for width in widths) + "|", *map(line, rows[1:])]
    return "\n".join(lines) + "\n\n" + _sizes_line(task)


def with_observation_table(doc: str | None, task: str | None) -> str | None:
    """``doc`` with its :data:`PLACEHOLDER` line replaced by :func:`docstring_table` of ``task``,
    indented as that line (None stays None: docstrings stripped by ``python -OO``)."""
    if doc is None:
        return None
    lines = doc.splitlines()
    found = [k for k, text in enumerate(lines) if text.strip() == PLACEHOLDER]
    if len(found) != 1:
        raise ValueError(f"the docstring must hold one line {PLACEHOLDER!r}, it holds {len(found)}")
    k = found[0]
    indent = lines[k][:len(lines[k]) - len(lines[k].lstrip())]
    table = [indent + text if text else text for text in docstring_table(task).splitlines()]
    return "\n".join([*lines[:k], *table, *lines[k + 1:]]) + ("\n" if doc.endswith("\n") else "")


EnvClass = TypeVar("EnvClass", bound=type)


def document_observation(cls: EnvClass) -> EnvClass:
    """Class decorator: renders the observation table of ``cls.task`` into its docstring's
    :data:`PLACEHOLDER` line, so that ``help(env)`` shows the layout."""
    cls.__doc__ = with_observation_table(cls.__doc__, cls.task)
    return cls
