"""The ``upright`` command line and the benchmark's plumbing (no timing assertions)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import pytest

from conftest import no_gl
import upright
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


#: Malformed YAML (``malformed.yml``) and a list where a mapping belongs (``list.yml``).
DATA = Path(__file__).parent / "data"
#: ``upright eval`` of one episode, then the policy and the arguments that differ.
EVAL = ["eval", "--episodes", "1", "--env", "upright/NaoGetUp-v0"]
#: ``upright optimize`` of one trial, then ``--storage``.
OPTIMIZE = ["optimize", "--controller", "spline", "--robot", "wolfgang", "--trials", "1", "--repetitions", "1"]
#: ``upright sweep`` of one tiny trial.
SWEEP = ["sweep", str(Path(__file__).parent / "data" / "sweep-tiny.yml"), "--trials", "1"]


@pytest.mark.parametrize(("args", "named"), [
    pytest.param(["eval", "--episodes", "1", "--env", "upright/NaoGetUpp-v0", "--policy", "zero"], ["NaoGetUpp-v0"],
                 id="unknown-env"),
    pytest.param([*EVAL, "--policy", "hodl"], ["hodl"], id="unknown-policy"),
    pytest.param([*EVAL, "--policy", "zero", "--start", "handstand"], ["handstand"], id="unknown-start"),
    pytest.param([*EVAL, "--policy", "zero", "--start", "prone", "--set", "start=supine"], ["start"],
                 id="start-twice"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "max_episode_seconds"], ["max_episode_seconds"], id="no-value"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "max_episode_second=1"], ["'max_episode_second'"],
                 id="unknown-key"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "residual_scale=abc"], ["residual_scale", "abc"],
                 id="residual-scale-text"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "max_episode_seconds=abc"], ["max_episode_seconds", "abc"],
                 id="episode-seconds-text"),
    pytest.param(["eval", "--episodes", "1", "--env", "upright/NaoWalk-v0", "--policy", "zero", "--set", "command=abc"],
                 ["command", "abc"], id="command-text"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "reward_scales.upright=2", "reward_scales=none"],
                 ["reward_scales=", "reward_scales.upright="], id="sub-key-then-key"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "reward_scales=none", "reward_scales.upright=2"],
                 ["reward_scales=", "reward_scales.upright="], id="key-then-sub-key"),
    pytest.param([*EVAL, "--policy", "zoo:nao-getup-residual-keyframe", "--set", "prior=spline"],
                 ["'keyframe'", "'spline'"], id="residual-on-another-prior"),
    pytest.param([*OPTIMIZE, "--storage", "foo"], ["'foo'"], id="storage-no-url"),
    pytest.param([*OPTIMIZE, "--storage", "postgres://u:p@127.0.0.1:1/db"], ["postgres://", "postgresql://"],
                 id="storage-postgres-spelling"),
    pytest.param([*OPTIMIZE, "--storage", "sqlite://study.db"], ["sqlite://study.db", "sqlite:///"],
                 id="storage-sqlite-two-slashes"),
    pytest.param([*OPTIMIZE, "--storage", "postgresql://u:p@127.0.0.1:1/db"], ["127.0.0.1:1", "refused"],
                 id="storage-unreachable"),
    pytest.param([*OPTIMIZE, "--storage", "journal:"], ["'journal:'"], id="storage-journal-no-file"),
    pytest.param([*SWEEP, "--storage", "foo"], ["'foo'"], id="sweep-storage-no-url"),
    pytest.param([*SWEEP, "--seed", "-1"], ["--seed", "got -1"], id="sweep-negative-seed"),
    pytest.param([*SWEEP, "--storage", "postgresql://u:p@127.0.0.1:1/db"], ["127.0.0.1:1", "refused"],
                 id="sweep-storage-unreachable"),
    pytest.param([*EVAL, "--policy", "zero", "--seed", "-1"], ["seed", "got -1"], id="eval-negative-seed"),
    pytest.param(["experiment", "keyframe-ablation", "--episodes", "1", "--seed", "-1"], ["seed", "got -1"],
                 id="experiment-negative-seed"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "max_episode_seconds=inf"], ["max_episode_seconds", "inf"],
                 id="endless-episode"),
    pytest.param([*EVAL, "--policy", "zero", "--set", "residual_scale=inf", "prior=keyframe"],
                 ["residual_scale", "inf"], id="infinite-residual-scale"),
    pytest.param(["eval", "--episodes", "1", "--env", "upright/NaoWalk-v0", "--policy", "zero", "--set",
                  "command=1e9,0,0"], ["command", "1000000000.0"], id="command-absurd-speed"),
    pytest.param(["eval", "--episodes", "1", "--env", "upright/NaoWalk-v0", "--policy", "step_adjust", "--set",
                  "params.max_forward=nan"], ["max_forward", "finite"], id="params-nan"),
    pytest.param(["eval", "--episodes", "1", "--env", "CartPole-v1", "--policy", "zero"],
                 ["CartPole-v1", "no upright environment"], id="eval-foreign-env"),
    pytest.param([*EVAL, "--policy", "keyframe", "--params", str(DATA / "malformed.yml")],
                 ["malformed.yml", "not valid YAML", "line 2"], id="params-malformed-yaml"),
    pytest.param([*EVAL, "--policy", "keyframe", "--params", str(DATA / "list.yml")], ["list.yml", "mapping"],
                 id="params-list"),
    pytest.param([*EVAL, "--policy", str(DATA / "malformed.yml"), "--set", "prior=keyframe"],
                 ["malformed.yml", "not valid YAML"], id="policy-yml-malformed"),
    pytest.param([*EVAL, "--policy", str(DATA / "list.yml"), "--set", "prior=keyframe"], ["list.yml", "mapping"],
                 id="policy-yml-list"),
    pytest.param([*EVAL, "--policy", "zoo:../zoo/nao-getup-residual-keyframe"], ["zoo:../", "not a path"],
                 id="zoo-name-leaves-the-zoo"),
    pytest.param([*OPTIMIZE, "--conditions", "foo"], ["'foo'", "conditions"], id="optimize-unknown-conditions"),
    pytest.param([*OPTIMIZE, "--start", "foo"], ["'foo'"], id="optimize-unknown-start"),
    pytest.param([*OPTIMIZE, "--set", "nope=1"], ["'nope'"], id="optimize-unknown-setting"),
    pytest.param([*OPTIMIZE, "--set", "params.nope=1"], ["'nope'"], id="optimize-unknown-parameter"),
    pytest.param([*OPTIMIZE, "--seed", "-1"], ["--seed", "-1"], id="optimize-negative-seed"),
    pytest.param([*OPTIMIZE, "--space", str(DATA / "malformed.yml")], ["malformed.yml", "not valid YAML"],
                 id="optimize-space-malformed"),
    pytest.param([*OPTIMIZE, "--space", str(DATA / "list.yml")], ["list.yml", "mapping"], id="optimize-space-list"),
    pytest.param([*OPTIMIZE, "--storage", f"journal:{DATA}"], ["journal:", "folder"], id="storage-journal-folder"),
    pytest.param(["report", "--episodes", "-1"], ["--episodes", "-1"], id="report-negative-episodes"),
    pytest.param(["report", "--bench-steps", "0"], ["--bench-steps", "0"], id="report-no-bench-steps"),
    pytest.param(["report", "--episode-seconds", "nan"], ["--episode-seconds", "nan"], id="report-nan-seconds"),
    pytest.param(["soak", "--steps", "10", "--conditions", "foo"], ["foo"], id="soak-unknown-conditions"),
    pytest.param(["soak", "--steps", "10", "--seed", "-1"], ["seed", "-1"], id="soak-negative-seed"),
    pytest.param(["train", "--env", "upright/NaoGetUp-v0", "--hyperparams", str(DATA / "malformed.yml")],
                 ["hyperparameter file", "malformed.yml", "not valid YAML"], id="hyperparams-malformed"),
    pytest.param(["train", "--env", "upright/NaoGetUp-v0", "--hyperparams", str(DATA / "list.yml")],
                 ["hyperparameter file", "list.yml", "mapping"], id="hyperparams-list"),
    pytest.param(["sweep", str(DATA / "malformed.yml")], ["sweep space file", "not valid YAML"], id="sweep-malformed"),
    pytest.param(["sweep", str(DATA / "list.yml")], ["sweep space file", "mapping"], id="sweep-list"),
    pytest.param(["view", "nao", "--settle", "inf"], ["settle", "inf"], id="view-endless-settle"),
    pytest.param(["view", "nao", "--width", "0"], ["width", "0"], id="view-no-width"),
])
def test_bad_input_is_one_line_and_exit_2(args, named, capsys, tmp_path):
    out = tmp_path / "out"
    assert main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert all(name in err for name in named) and "u:p@" not in err, err  # a URL's password is hidden
    assert not out.exists()


@pytest.mark.parametrize(("args", "named"), [
    ([*SWEEP, "--steps", "10"], "--steps"),  # the space file holds every trial run's options
    ([*SWEEP, "--env", "upright/NaoWalk-v0"], "--env"),
    (["train", "--env", "upright/NaoWalk-v0", "--trials", "2"], "--trials"),  # a study's option, not a run's
    (["train", "--sweep", str(DATA / "list.yml")], "--sweep"),
])
def test_an_option_of_the_other_command_is_refused_by_the_parser(args, named, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert f"unrecognized arguments: {named}" in capsys.readouterr().err


#: Packages that only some commands load (training, studies, exports).
HEAVY = ("torch", "stable_baselines3", "optuna", "sqlalchemy", "onnx", "onnxruntime")


@pytest.mark.parametrize("args", [["--help"], ["info", "nao"], ["check-same", "--list"]], ids=lambda args: args[0])
def test_the_light_commands_start_without_torch_sb3_or_optuna(args):
    code = ("import sys; from upright.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr


def test_bench_refuses_no_steps(capsys):
    assert main(["bench", "--steps", "0"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "upright bench: error: --steps must be >= 1, got 0", err


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
    assert [p.name for p in tmp_path.iterdir()] == ["nao.png"]  # written atomically: no temporary left


def test_view_bad_pose_is_clear(capsys):
    assert main(["view", "nao", "--pose", "handstand", "--out", "x.png"]) == 2
    assert "handstand" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--n-envs", "2"], "--n-envs and --vec-env are options of --training"),
    (["--training", "--vec-env", "subproc"], "--vec-env goes with --n-envs"),
    (["--training", "--n-envs", "1,0"], "--n-envs takes integers >= 1 separated by commas, got '0'"),
    (["--training", "--n-envs", "2,four"], "got 'four'"),
    (["--training", "--n-envs", "2", "--vec-env", "dummy,threads"], "--vec-env takes auto, dummy, subproc, batched separated by "
                                                                    "commas, got 'threads'"),
])
def test_bench_training_options_name_the_bad_value(args, message, capsys):
    assert main(["bench", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


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


def test_eval_results_folder_is_one_component_whatever_the_policy_path():
    """`upright eval` writes results/eval/<env>-<policy>/: a run given by a path (absolute, or its
    model file) must not nest folders (or escape results/) through the path's separators."""
    from upright.commands.episodes import folder_name

    assert folder_name("keyframe") == "keyframe" and folder_name("zoo:nao-walk") == "zoo:nao-walk"
    assert folder_name(str(Path.cwd() / "runs" / "a2c-demo")) == "a2c-demo"
    assert folder_name("runs/NaoGetUp-v0/demo/best_model.zip") == "demo-best_model"


@pytest.mark.parametrize(("args", "message"), [
    (["--set", "hp.update_threads=2"], "--set is an option of --training"),
    (["--training", "--set", "conditions=lab"], "takes hyperparameters (hp.KEY=VALUE), got ['conditions=lab']"),
])
def test_bench_set_takes_hyperparameters_of_the_training_bench(args, message, capsys):
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err


def test_version_is_the_packages(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"upright {upright.__version__}"
