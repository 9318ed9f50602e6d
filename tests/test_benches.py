"""The compute benchmarks: real controllers in real environments, timed side by side (short episodes).

Times themselves are not asserted (they depend on the machine); what is checked is that the
benchmarks time what they say: every cycle, the work counted, the summaries consistent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from upright.envs.robots import get_robot
from upright.eval import controller_bench, spline_bench


def test_timing_summary_and_cycle_minimum():
    runs = [{"ctrl": np.array([3.0, 1.0, 2.0]) * 1e-6, "step": np.array([10.0, 30.0, 20.0]) * 1e-6},
            {"ctrl": np.array([1.0, 2.0, 2.0]) * 1e-6, "step": np.array([20.0, 10.0, 20.0]) * 1e-6}]
    ctrl, step = controller_bench.cycle_minimum(runs, "test")
    np.testing.assert_allclose(ctrl * 1e6, [1.0, 1.0, 2.0])
    np.testing.assert_allclose(step * 1e6, [10.0, 10.0, 20.0])
    summary = controller_bench.timing_summary(ctrl, step)
    assert summary["cycles"] == 3
    assert summary["ctrl_mean_us"] == pytest.approx(4.0 / 3.0)
    assert summary["ratio_mean"] == pytest.approx((4.0 / 3.0) / (40.0 / 3.0))
    assert summary["ratio_median"] == pytest.approx(1.0 / 10.0)
    assert summary["ratio_worst"] == pytest.approx(2.0 / (40.0 / 3.0))
    with pytest.raises(RuntimeError, match="not deterministic"):
        controller_bench.cycle_minimum([runs[0], {"ctrl": ctrl[:2], "step": step[:2]}], "test")


@pytest.mark.parametrize("repeats", [0, -1, 1.5])
def test_bad_repeats_named(repeats):
    with pytest.raises(ValueError, match="repeats"):
        controller_bench.measure("lipm", "nao", None, seconds=0.2, repeats=repeats)


def test_controller_bench_times_every_cycle_of_a_walk(tmp_path):
    row = controller_bench.measure("step_adjust", "nao", None, seconds=0.5, repeats=2)
    assert row["task"] == "walk" and row["start"] == "standing"
    assert row["cycles"] == round(0.5 / get_robot("nao").control_period)
    assert 0 < row["ctrl_median_us"] <= row["ctrl_max_us"] and row["env_mean_us"] > 0
    assert row["ratio_mean"] == pytest.approx(row["ctrl_mean_us"] / row["env_mean_us"])
    controller_bench.main(["--controllers", "keyframe", "--robots", "wolfgang", "--seconds", "0.3",
                           "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "controller_bench.json").read_text())
    assert [(r["controller"], r["start"]) for r in rows] == [("keyframe", "prone"), ("keyframe", "supine")]
    assert "| keyframe | wolfgang | prone |" in (tmp_path / "controller_bench.md").read_text()


def test_spline_bench_counts_the_ik_samples():
    row = spline_bench.measure("wolfgang", "supine", "lab", seconds=1.0)
    assert row["tries"] == 1 and row["cycles"] == round(1.0 / get_robot("wolfgang").control_period)
    # samples are solved lazily inside the cycles: some cycles solve, each at least one sample
    assert 0 < row["solving_cycles"] <= row["ik_samples"]
    assert row["solving_cycles"] < row["cycles"]
    assert row["motion_cycles"] == row["cycles"]  # not finished within 1 s
    assert row["ratio_episode"] == pytest.approx(row["ctrl_mean_us"] / row["env_mean_us"])
