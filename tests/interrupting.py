"""A policy for the tests of Ctrl-C: it interrupts a run at the start of a chosen episode."""

from __future__ import annotations

from upright.policies.builtin import ZeroPolicy


class InterruptingPolicy(ZeroPolicy):
    """Zero actions; raises KeyboardInterrupt (as Ctrl-C does) at the start of episode ``at`` (1-based)."""

    def __init__(self, at: int = 3) -> None:
        super().__init__()
        self.at = at
        self.episodes = 0

    def reset(self, env, seed) -> None:
        self.episodes += 1
        if self.episodes == self.at:
            raise KeyboardInterrupt
        super().reset(env, seed)


class TerminatingPolicy(ZeroPolicy):
    """Zero actions; sends its own process SIGTERM (as ``kill`` or a job scheduler does) at the start
    of the episode seeded ``seed``."""

    def __init__(self, seed: int = 2) -> None:
        super().__init__()
        self.stop_seed = seed

    def reset(self, env, seed) -> None:
        import os
        import signal

        if seed == self.stop_seed:
            os.kill(os.getpid(), signal.SIGTERM)
        super().reset(env, seed)
