"""The get-up protocols (keyframe ablation and conditions, spline stand-up and tuning) through their
public API: the registered name, a tiny run through ``upright experiment``. ``slow`` ones run whole
episodes of every cell."""

from __future__ import annotations

import json

import pytest

from upright.cli import main
from upright.eval.experiments import ExperimentContext, experiments, get_experiment, register_experiment, run_experiment
from upright.eval.tables import Table

from conftest import last_bar
from interrupting import InterruptingPolicy

SHORT = "max_episode_seconds=0.6"


def test_the_getup_protocols_are_registered_with_a_summary():
    registry = experiments()
    for name in ("keyframe-ablation", "keyframe-conditions", "spline-standup", "spline-tune"):
        assert registry[name].summary and registry[name].run.__module__.startswith("upright.eval.experiments.")


def test_experiment_list_names_each_protocol_with_its_summary_below_within_80_columns(capsys):
    assert main(["experiment", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if not line.startswith(" ")] == list(experiments())
    assert max(map(len, lines)) <= 80
    assert lines[lines.index("keyframe-ablation") + 1].startswith("  keyframe stand-up")


def test_unknown_experiment_and_option_values_are_named(capsys, tmp_path):
    assert main(["experiment", "keyframe-ablaton", "--out", str(tmp_path)]) == 2
    assert "keyframe-ablaton" in capsys.readouterr().err
    assert main(["experiment", "keyframe-ablation", "--episodes", "1", "--set", "starts=sideways",
                 "--out", str(tmp_path)]) == 2
    assert "sideways" in capsys.readouterr().err
    assert main(["experiment", "spline-tune", "--set", "robot=asimo", "direction=back", "--out", str(tmp_path)]) == 2
    assert "asimo" in capsys.readouterr().err


def test_keyframe_ablation_tiny_run_writes_tables_and_cells(tmp_path):
    out = tmp_path / "ablation"
    assert main(["experiment", "keyframe-ablation", "--episodes", "1", "--set", "starts=supine", "check=1", SHORT,
                 "--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["name"] == "keyframe-ablation" and result["command"].startswith("upright experiment keyframe-ablation")
    ablation, peaks = result["tables"]
    assert [(r["start"], r["compensation"]) for r in ablation["rows"]] == [("supine", "on"), ("supine", "off")]
    assert peaks["rows"][0]["episodes"] == 1 and peaks["rows"][0]["max"] >= 0.0
    cell = json.loads((out / "supine_off" / "results.json").read_text())
    assert cell["policy"] == "keyframe-compensation-off" and cell["conditions"]["weak_joints"]
    assert "peak_LHipYawPitch_error_deg" in cell["episodes_data"][0]
    assert "| supine | on |" in (out / "results.md").read_text()


def test_keyframe_conditions_tiny_run(tmp_path, capsys):
    """Its cells, under one progress bar whose total (and so ETA) is the episodes the protocol runs."""
    tables = run_experiment("keyframe-conditions", tmp_path, episodes=1,
                            settings={"variants": "no_wear", "starts": "prone", "max_episode_seconds": 0.6})
    assert [(r["policy"], r["start"]) for r in tables[0].rows] == [("keyframe", "prone"), ("hold", "standing")]
    assert (tmp_path / "no_wear_hold_standing" / "results.json").exists()
    assert last_bar(capsys.readouterr().err, "keyframe-conditions") == (2, 2)


def test_a_resumed_experiments_bar_counts_only_the_cells_it_runs(tmp_path, capsys):
    """The overall bar's total is what the protocol plans less the cells ``--resume`` reads back."""
    args = ["experiment", "keyframe-ablation", "--episodes", "1", "--out", str(tmp_path), "--set", "check=0", SHORT]
    assert main([*args, "starts=supine"]) == 0
    assert last_bar(capsys.readouterr().err, "keyframe-ablation") == (2, 2)  # both arms
    assert main([*args, "starts=supine,prone", "--resume"]) == 0
    assert last_bar(capsys.readouterr().err, "keyframe-ablation") == (2, 2)  # supine's cells read back
    assert main([*args, "starts=supine,prone", "--resume"]) == 0
    assert last_bar(capsys.readouterr().err, "keyframe-ablation") == (0, None)  # every cell read back


def test_keyframe_per_try_reads_the_papers_counts_and_names_the_intervals_a_rate_lies_in():
    """Table 2's tries and percentages become counts; a simulated rate is placed in the Wilson
    intervals that hold it (RoboCup 2024: 147/180, [0.754, 0.866])."""
    from upright.eval.experiments.keyframe import inside_intervals, paper_tries

    paper = paper_tries()
    assert paper["RoboCup 2024"] == (147, 180) and paper["German Open 2025"] == (128, 131)
    assert inside_intervals((160, 200), paper) == "RoboCup 2024"
    assert inside_intervals((74, 100), paper) == "none"
    assert "German Open 2025" in inside_intervals((97, 100), paper)
    assert inside_intervals((0, 0), paper) == "—"


def test_spline_standup_tiny_run(tmp_path, capsys):
    tables = run_experiment("spline-standup", tmp_path, episodes=1,
                            settings={"only": "nao-lab", "max_episode_seconds": 0.6})
    assert [(r["robot"], r["start"]) for r in tables[0].rows] == [("nao", "prone"), ("nao", "supine")]
    assert last_bar(capsys.readouterr().err, "spline-standup") == (2, 2)


def test_spline_tune_tiny_run_keeps_the_best_point(tmp_path, capsys):
    tables = run_experiment("spline-tune", tmp_path,
                            settings={"robot": "wolfgang", "direction": "back", "trials": 2})
    done, total = last_bar(capsys.readouterr().err, "spline-tune")
    assert done == total and total % 3 == 0  # the starting point and two trials, each on the same episodes
    result = json.loads((tmp_path / "results.json").read_text())["data"]
    assert len(result["trace"]) == 3 and [t[0] for t in result["trace"]] == [0, 1, 2]
    assert result["best_score"] == min(t[1] for t in result["trace"])
    assert {r["parameter"] for r in tables[0].rows} == set(result["params"])
    assert (tmp_path / "spline_tune_wolfgang_back_lab.json").exists()


@pytest.mark.slow
def test_keyframe_ablation_is_reproducible_across_workers(tmp_path):
    settings = {"starts": "prone", "arms": "off", "check": 2}
    one = run_experiment("keyframe-ablation", tmp_path / "one", episodes=2, progress=False, settings=settings)
    two = run_experiment("keyframe-ablation", tmp_path / "two", episodes=2, workers=2, progress=False, settings=settings)
    assert [t.to_json() for t in one] == [t.to_json() for t in two]


def test_get_experiment_names_the_valid_ones():
    with pytest.raises(ValueError, match="keyframe-ablation"):
        get_experiment("nope")


@register_experiment("test-interrupted", "two cells; Ctrl-C in the second")
def _interrupted(ctx: ExperimentContext) -> list[Table]:
    kwargs = {"start": "prone", "max_episode_seconds": 0.1}
    ctx.run_cell("first", "upright/NaoGetUp-v0", "zero", kwargs, 2)
    ctx.run_cell("second", "upright/NaoGetUp-v0", InterruptingPolicy(), kwargs, 5)
    return []


def test_ctrl_c_in_a_protocol_keeps_the_finished_cells_and_episodes(tmp_path):
    assert main(["experiment", "test-interrupted", "--out", str(tmp_path)]) == 130
    assert json.loads((tmp_path / "first" / "results.json").read_text())["episodes"] == 2
    second = json.loads((tmp_path / "second" / "results.json").read_text())
    assert second["interrupted"] and [r["episode"] for r in second["episodes_data"]] == [0, 1]
