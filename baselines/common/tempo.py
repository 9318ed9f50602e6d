"""The motion clock of a timed stand-up (keyframes, splines): a planned motion's time against the
real time, at a rate that a residual's ``tempo`` action entry may set from one control cycle to the
next (``tempo_range``: :class:`~upright.envs.residual.TempoResidual`)."""

from __future__ import annotations

import math


class MotionClock:
    """A motion's time (s) as the real time plus the ``gain`` a tempo other than 1 built up:
    :meth:`advance` to each control cycle's real time adds ``(tempo - 1) · elapsed``. At tempo 1
    the gain stays exactly 0, so the motion time is the real time to the bit."""

    def __init__(self, t: float = 0.0) -> None:
        """A clock at tempo 1 on the real time ``t`` (s)."""
        self.tempo = 1.0
        self.gain = 0.0
        self._since = t

    def set_tempo(self, factor: float) -> None:
        """Run ``factor`` times as fast from the last advance on; ValueError for a factor that is
        not a finite number > 0."""
        if not (math.isfinite(factor) and factor > 0.0):
            raise ValueError(f"tempo factor must be a finite number > 0, got {factor!r}")
        self.tempo = float(factor)

    def restart(self, t: float) -> None:
        """No gain from the real time ``t`` (s) on; the tempo stays."""
        self.gain = 0.0
        self._since = t

    def advance(self, t: float) -> None:
        """Move to the real time ``t`` (s): the time since the last advance counts ``tempo`` times."""
        self.gain += (self.tempo - 1.0) * (t - self._since)
        self._since = t
