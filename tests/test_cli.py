"""The ``upright`` command line and the benchmark's plumbing (no timing assertions)."""

from __future__ import annotations

import subprocess
import sys

import imageio.v3 as iio

from conftest import no_gl
from upright.cli import main
from upright.envs.registration import ENVIRONMENTS
from upright.eval.bench.speed import format_bench, run_bench


def test_help_lists_subcommands():
    out = subprocess.run([sys.executable, "-m", "upright", "--help"], capture_output=True, text=True, check=True)
    for command in ("info", "view", "bench", "report", "eval", "video", "experiment"):
        assert command in out.stdout


def test_info_prints_joints_and_mass(robot, capsys):
    assert main(["info", robot]) == 0
    out = capsys.readouterr().out
    assert "total mass" in out
    assert ("LHipYawPitch" if robot == "nao" else "LKnee") in out


def test_info_unknown_robot_names_it():
    out = subprocess.run([sys.executable, "-m", "upright", "info", "asimo"], capture_output=True, text=True)
    assert out.returncode == 2 and "asimo" in out.stderr


def test_view_writes_png_or_says_why(tmp_path, capsys):
    out = tmp_path / "nao.png"
    code = main(["view", "nao", "--pose", "prone", "--scene", "turf", "--out", str(out), "--width", "160", "--height", "120"])
    if code == 3:
        err = capsys.readouterr().err
        assert "OpenGL" in err
        no_gl(err.strip())
    assert code == 0
    image = iio.imread(out)
    assert image.shape == (120, 160, 3) and image.std() > 5  # a picture, not a blank frame


def test_view_bad_pose_is_clear(capsys):
    assert main(["view", "nao", "--pose", "handstand", "--out", "x.png"]) == 2
    assert "handstand" in capsys.readouterr().err


def test_bench_measures_all_models():
    rows = run_bench(steps=20, presets=("turf", "lab"))
    assert [(r.env_id, r.conditions) for r in rows] == [("HumanoidStandup-v5", "-")] + [
        (env_id, preset) for env_id in ENVIRONMENTS for preset in ("lab", "turf")]
    assert all(r.env_steps_per_s > 0 and r.ratio_reference > 0 for r in rows)
    assert all(r.ratio_raw > 0 and r.ratio_lab > 0 for r in rows[1:])
    # without servo play the raw loop replays the environment's own physics: the same last state to the bit
    assert rows[0].exact is None and all(r.exact for r in rows[1:])
    table = format_bench(rows)
    assert "/ raw" in table and table.splitlines()[-1].startswith("Machine: ")
