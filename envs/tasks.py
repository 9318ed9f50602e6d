"""The tasks, the one list: each task's environment class and the word its ids carry. Stands alone
(entry points as ``"module:Class"`` strings, nothing imported), so that the robot-side baselines can
name tasks without seeing the simulation."""

from __future__ import annotations

#: task → (entry point ``"module:Class"``, the id's task word ``upright/<Robot><Word>-v0``).
TASK_ENTRIES: dict[str, tuple[str, str]] = {
    "getup": ("upright.envs.getup:GetUpEnv", "GetUp"),
    "walk": ("upright.envs.walk:WalkEnv", "Walk"),
}
#: The tasks an environment (and a baseline) can have.
TASKS = tuple(TASK_ENTRIES)

__all__ = ["TASKS", "TASK_ENTRIES"]
