"""The walk protocols (walk-speeds, walk-turf, walk-observer, walk-push) and the step_adjust
calibration, through the registry with short real episodes."""

from __future__ import annotations

import json

import pytest

from conftest import last_bar
from upright.baselines import default_params
from upright.eval.experiments import run_experiment
from upright.eval.experiments.walk import highest_sustained


def _rows(*outcomes: tuple[float, bool]) -> list[dict]:
    return [{"speed": speed, "fell": fell} for speed, fell in outcomes]


def _data(out) -> dict:
    return json.loads((out / "results.json").read_text())["data"]


def test_highest_sustained_needs_every_lower_command_without_a_fall():
    assert highest_sustained(_rows((0.1, False), (0.2, False), (0.3, True)))["speed"] == 0.2
    # A success above a fall does not count: the ladder's limit is below the first fall.
    assert highest_sustained(_rows((0.1, False), (0.2, True), (0.3, False)))["speed"] == 0.1
    # Order of the rows does not matter; no fall at all: the highest command.
    assert highest_sustained(_rows((0.3, False), (0.1, False), (0.2, False)))["speed"] == 0.3
    assert highest_sustained(_rows((0.1, True), (0.2, False))) is None
    assert highest_sustained([]) is None


def test_speed_ladder_runs_real_episodes_up_the_ladder(tmp_path):
    run_experiment("walk-speeds", tmp_path, episodes=1, progress=False,
                   settings={"policy": "lipm", "robot": "wolfgang", "directions": "backward", "seconds": 1.0})
    ladder = _data(tmp_path)["ladders"]["backward"]
    assert [r["command"] for r in ladder["rows"]][:2] == [[-0.05, 0.0, 0.0], [-0.1, 0.0, 0.0]]
    assert ladder["highest_command"] == 0.5 and ladder["fell_at"] == []  # 1 s: no fall yet
    # Reported as a speed in the direction: backward velocity measured, sign flipped.
    assert ladder["highest_measured"] == -ladder["rows"][-1]["late_velocity"][0]
    assert "| backward | 0.500 m/s |" in (tmp_path / "results.md").read_text()


def test_push_ladder_stops_at_the_first_impulse_with_a_fall(tmp_path):
    run_experiment("walk-push", tmp_path, progress=False,
                   settings={"policy": "step_adjust", "min_impulse": 20.0, "impulse_step": 20.0, "max_impulse": 60.0,
                             "seconds": 5.0})
    push = _data(tmp_path)["push"]
    assert [r["impulse"] for r in push["rows"]] == [20.0] and any(push["rows"][0]["falls"])
    assert push["largest_survived_Ns"] is None and push["first_fall_Ns"] == 20.0
    assert "below 20 N·s" in (tmp_path / "results.md").read_text()


def test_observer_errors_need_a_controller_with_diagnostics(tmp_path, capsys):
    run_experiment("walk-observer", tmp_path / "lipm", episodes=1,
                   settings={"policy": "lipm", "speed": 0.1, "seconds": 3.0})
    assert last_bar(capsys.readouterr().err, "walk-observer") == (1, 1)  # a speed given: no ladder first
    row = _data(tmp_path / "lipm")["observer"]
    assert row["cycles"] > 0 and 0.0 < row["measured_minus_truth_mm"] < 20.0
    run_experiment("walk-observer", tmp_path / "step_adjust", episodes=1, progress=False,
                   settings={"policy": "step_adjust", "speed": 0.1, "seconds": 3.0})
    row = _data(tmp_path / "step_adjust")["observer"]
    assert row["cycles"] is None and row["measured_minus_expected_mm"] is None


def test_bad_directions_and_params_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="upwards"):
        run_experiment("walk-speeds", tmp_path, progress=False, settings={"directions": "upwards"})
    with pytest.raises(ValueError, match="speed_cap"):
        run_experiment("walk-speeds", tmp_path, progress=False,
                       settings={"directions": "forward", "params.player.speed_cap": 1.0})


def test_calibration_measures_the_support_rectangle_in_the_parameters(tmp_path, capsys):
    run_experiment("step-adjust-calibration", tmp_path)
    assert last_bar(capsys.readouterr().err, "step-adjust-calibration") == (4, 4)  # one episode per direction
    data, params = _data(tmp_path), default_params("step_adjust", "nao")
    assert round(data["support_back"], 4) == params.support_back
    assert round(data["support_front"], 4) == params.support_front
    assert data["support_left"] > 0.0 > data["support_right"]


def test_tracked_axes_follow_the_rule():
    from upright.eval.experiments.walk import tracked

    floor, drift = (0.01, 0.01, 0.02), (0.02, 0.02, 0.05)
    # 10 % of a commanded axis, the floor for a slow one, the drift bound for one not commanded
    assert tracked((0.25, 0.0, 0.0), (0.23, 0.015, -0.04), False, 0.1, floor, drift) == [True, True, True]
    assert tracked((0.25, 0.0, 0.0), (0.22, 0.025, 0.06), False, 0.1, floor, drift) == [False, False, False]
    assert tracked((0.05, 0.0, 0.0), (0.041, 0.0, 0.0), False, 0.1, floor, drift) == [True, True, True]
    assert tracked((0.0, 0.0, 0.5), (0.0, 0.0, 0.44), False, 0.1, floor, drift) == [True, True, False]
    # a fall or no measurement fails every axis
    assert tracked((0.1, 0.0, 0.0), (0.1, 0.0, 0.0), True, 0.1, floor, drift) == [False, False, False]
    assert tracked((0.1, 0.0, 0.0), None, False, 0.1, floor, drift) == [False, False, False]


def test_tracking_protocol_measures_every_cell_and_counts_the_passes(tmp_path, capsys):
    run_experiment("walk-tracking", tmp_path, episodes=1,
                   settings={"policies": "step_adjust", "robots": "nao", "conditions": "lab", "seconds": 1.0})
    data = _data(tmp_path)
    from upright.eval.experiments.walk import DATA

    assert len(data["rows"]) == len(DATA["tracking"]["commands"])
    commands = len(DATA["tracking"]["commands"])
    assert last_bar(capsys.readouterr().err, "walk-tracking") == (commands, commands)
    assert data["summary"] == [{"policy": "step_adjust", "robot": "nao", "conditions": "lab",
                                "passed": [sum(r["ok"] for r in data["rows"]), len(data["rows"])]}]
    # 1 s: the walk is still in its start posture, nothing is tracked yet
    assert not any(r["ok"] for r in data["rows"])
    assert "| step_adjust | nao | lab |" in (tmp_path / "results.md").read_text()


def test_speed_table_runs_each_walk_with_its_raised_caps(tmp_path):
    run_experiment("walk-speed-table", tmp_path, episodes=1, progress=False,
                   settings={"policies": "lipm", "robots": "nao", "directions": "backward", "seconds": 1.0})
    ladder = _data(tmp_path)["ladders"]["lipm/nao/backward"]
    assert ladder["params"]["player.max_step_backward"] == 0.16
    assert ladder["highest_command"] == 0.6 and ladder["fell_at"] == []  # 1 s: no fall yet
    assert "| lipm | nao | backward | 0.600 m/s |" in (tmp_path / "results.md").read_text()


def test_speed_table_walks_a_residual_on_its_prior_with_the_priors_caps(tmp_path):
    """A shipped residual climbs its own robot's ladders (the other robot is skipped) on its prior,
    whose caps are raised as on the prior's own ladder; it runs its real network (the environment
    must have the prior's observation, or the policy refuses it)."""
    run_experiment("walk-speed-table", tmp_path, episodes=1, progress=False,
                   settings={"policies": "zoo:nao-walk-residual-step_adjust", "robots": ("nao", "wolfgang"),
                             "directions": "forward", "seconds": 0.5})
    data = _data(tmp_path)
    assert list(data["ladders"]) == ["zoo:nao-walk-residual-step_adjust/nao/forward"]
    ladder = data["ladders"]["zoo:nao-walk-residual-step_adjust/nao/forward"]
    assert ladder["params"]["max_forward"] == 0.5  # step_adjust's raised cap
    assert ladder["highest_command"] == 0.5 and ladder["fell_at"] == []  # 0.5 s: no fall yet
    assert "zoo:nao-walk-residual-step_adjust nao: max_forward=0.5" in (tmp_path / "results.md").read_text()


def test_walk_conditions_removes_one_factor_per_cell(tmp_path, capsys):
    """A cell's conditions are the preset's with one factor removed (a part of the wear: only that
    field of the wear), each cell a real run on the same seeds."""
    from upright.envs.conditions import PRESETS
    from upright.eval.experiments import factor_removed
    from upright.eval.results import result_conditions

    run_experiment("walk-conditions", tmp_path, episodes=1,
                   settings={"policies": "lipm", "robots": "wolfgang", "variants": ("competition", "wear_no_lag"),
                             "seconds": 0.5})
    assert last_bar(capsys.readouterr().err, "walk-conditions") == (2, 2)
    competition = PRESETS["competition"]
    cell = result_conditions(json.loads((tmp_path / "lipm_wolfgang_wear_no_lag" / "results.json").read_text()))
    assert cell.random_wear.lag == (0.0, 0.0) and cell.random_wear.strength == competition.random_wear.strength
    assert cell.with_(random_wear=competition.random_wear) == competition
    rows = _data(tmp_path)["rows"]
    assert [(r["variant"], r["fell"][1]) for r in rows] == [("competition", 1), ("wear_no_lag", 1)]
    with pytest.raises(ValueError, match="random wear"):
        factor_removed(PRESETS["lab"], {"random_wear": {"lag": [0.0, 0.0]}})


def test_error_parts_recompute_the_environment_metric_and_split_it(tmp_path, capsys):
    """With nothing skipped and the metric's own window, the recomputed error is the environment's
    (the same WalkTracker); the bias is the distance of the mean velocity from the command."""
    import numpy as np

    from upright.eval.experiments.walk_error import ErrorParts
    from upright.eval.runner import run_episodes

    run = run_episodes("upright/NaoWalk-v0", "step_adjust", 2, env_kwargs={"max_episode_seconds": 3.0}, seed=4,
                       observers=[ErrorParts(0.0, 1.0)], progress=False)
    for record in run.records:
        parts = record["error_parts"]
        assert parts["after_start"] == pytest.approx([record["linear_tracking_error"], record["yaw_tracking_error"]],
                                                     abs=1e-12)
        assert parts["long_window"] == parts["after_start"]  # 1 s: the metric's window
        mean = np.array(record["mean_velocity"]) - np.array(record["command"])
        assert parts["bias"] == pytest.approx([np.linalg.norm(mean[:2]), abs(mean[2])], abs=1e-12)
    tables = run_experiment("walk-error-parts", tmp_path, episodes=1, settings={"max_episode_seconds": 4.5,
                                                                                 "conditions": "lab"})
    assert last_bar(capsys.readouterr().err, "walk-error-parts") == (1, 1)
    row = tables[0].rows[0]
    assert row["conditions"] == "lab" and row["counted"] == 1 and row["long_window"] is not None
    with pytest.raises(ValueError, match="long_seconds"):
        ErrorParts(1.0, 0.0)
