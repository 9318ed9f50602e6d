"""The turf-equivalence protocol: its intervals and verdicts, and one tiny run."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import last_bar
from upright.eval.experiments import run_experiment
from upright.eval.experiments.turf import difference_interval, t_interval


def test_intervals_and_differences():
    values = [1.0, 2.0, 3.0, 4.0]
    interval = t_interval(values)
    # t(0.975, 3) = 3.182; sd = 1.291; half = 3.182 * 1.291 / 2
    assert interval["mean"] == 2.5 and interval["high"] - 2.5 == pytest.approx(2.0540, abs=1e-3)
    assert t_interval([1.0])["low"] is None and t_interval([])["mean"] is None
    low, high = difference_interval(t_interval(values), t_interval(values), (values, values))
    assert low < 0.0 < high and low == pytest.approx(-high)
    low, high = difference_interval(t_interval(values), None, (values, [v + 10.0 for v in values]))
    assert high < 0.0
    # rates: Newcombe's interval contains the difference and excludes 0 only for clear differences
    low, high = difference_interval((20, 40), (20, 40))
    assert low < 0.0 < high
    low, high = difference_interval((5, 40), (35, 40))
    assert high < 0.0 and low < -0.75 < high


def test_protocol_runs_a_tiny_cell(tmp_path, capsys):
    tables = run_experiment("turf-equivalence", tmp_path, episodes=1,
                            settings={"only": ("nao-lipm-turf",), "max_episode_seconds": 1.0})
    assert last_bar(capsys.readouterr().err, "turf-equivalence") == (2, 2)  # one per collision cell
    surface, walk = tables
    assert [row["turf_cell"] for row in surface.rows] == [2.0, 4.0]
    reference, coarse = surface.rows
    assert reference["deviation_rms"] == 0.0 and 0.0 < coarse["deviation_rms"] < 0.5  # mm
    for key in ("std", "slope", "correlation", "relief"):
        assert coarse[key] == pytest.approx(reference[key], rel=0.1), key
    assert [row["verdict"] for row in walk.rows][0] == "reference"
    assert np.isfinite(walk.rows[1]["linear"]["mean"])
