"""Every configuration file checked by one schema mechanism (:mod:`upright.envs.schema`): the files
the repository holds pass their checks and the JSON schemas published in ``docs/schemas/``, those
schemas are current, a typo of each kind of file is one line naming the file, the key and the
valid keys (exit 2 from the command line), and the training extras are one typed object that a
run's ``config.yml`` records and old run folders still load into."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from upright.baselines.common.data import read_yaml, si_units
from upright.baselines.keyframe.library import load_library
from upright.baselines.spline.params import SplineParams
from upright.cli import main
from upright.envs.robots import get_robot
from upright.envs.schema import field_names, validate
from upright.eval.experiments.schemas import PROTOCOL_SCHEMAS, Walk
from upright.policies.feedback import FeedbackSpec, FeedbackTerm, feedback_dir, load_feedback_spec
from upright.policies.run_folder import TrainConfig, TrainingExtras, load_run_config
from upright.policies.run import packaged_zoo, zoo_names
from upright.training.config import hyperparameter_schema, load_hyperparams
from upright.training.schemas import ROOT, committed_files, config_files, published, stale
from upright.training.sweep import SweepSpace, SweepTrain, load_sweep_space
from upright.tuning.space import SearchSpace, load_space, spaces_dir

KINDS = config_files()
SPACE_KEYS = ", ".join(field_names(SearchSpace))


def _one_line(error: pytest.ExceptionInfo[ValueError]) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


# ------------------------------------------------------------------ the committed files


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_every_committed_file_passes_the_check_the_project_loads_it_with(kind):
    files = committed_files(kind)
    assert files or not kind.files, f"{kind.name}: no file matches {kind.files}"
    for path in files:
        kind.check(path)


def test_every_configuration_file_of_the_repository_has_a_schema():
    """Each YAML file the packages ship is a file of one of the kinds (none left unchecked)."""
    covered = {path for kind in KINDS for path in committed_files(kind)}
    shipped = {path for folder in ("baselines/data", "tuning/spaces", "training/sweeps", "training/hyperparams",
                                   "policies/feedback", "eval/experiments")
               for path in (ROOT / folder).rglob("*.y*ml")}
    assert shipped and shipped <= covered, sorted(shipped - covered)


@pytest.mark.parametrize("kind", [kind for kind in KINDS if kind.files], ids=lambda kind: kind.name)
def test_committed_files_pass_their_published_json_schema(kind):
    """What an editor checks with: the JSON schema accepts every committed file (as JSON sees
    YAML: keys are strings)."""
    validator = Draft202012Validator(json.loads(published(kind)))
    for path in committed_files(kind):
        data = json.loads(json.dumps(yaml.safe_load(path.read_text())))
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        assert not errors, f"{path}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_the_published_json_schema_refuses_a_typo_as_upright_does():
    space = yaml.safe_load((spaces_dir() / "spline_wolfgang.yaml").read_text())
    space["fixd"] = space.pop("fixed")
    kind = next(kind for kind in KINDS if kind.name == "search-space")
    errors = list(Draft202012Validator(json.loads(published(kind))).iter_errors(space))
    assert [e.message for e in errors] == ["Additional properties are not allowed ('fixd' was unexpected)"]


def test_a_data_file_key_in_degrees_passes_the_json_schema_as_it_loads():
    kind = next(kind for kind in KINDS if kind.name == "baselines-spline")
    validator = Draft202012Validator(json.loads(published(kind)))
    data = yaml.safe_load((ROOT / "baselines/data/spline_nao.yaml").read_text())
    assert "trunk_pitch_deg" in data and validator.is_valid(data)
    data["trunk_pitch"] = 0.0  # both units at once: one of them is too many
    assert not validator.is_valid(data)
    del data["trunk_pitch"], data["trunk_pitch_deg"]
    assert not validator.is_valid(data)  # a value the dataclass needs


def test_the_schemas_in_docs_are_current():
    assert stale() == [], "docs/schemas/ is not current: run python -m upright.training.schemas"


# ------------------------------------------------------------------ typos: one line, the file, the key, valid keys


def _typo(source: Path, tmp_path: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert text.count(old) >= 1, old
    path = tmp_path / source.name
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize("old, new, key", [("\nfixed:", "\nfixd:", "fixd"), ("\nobjective:", "\nobjectiv:", "objectiv")])
def test_a_search_space_typo_names_the_file_the_key_and_the_valid_keys(tmp_path, old, new, key):
    path = _typo(spaces_dir() / "spline_wolfgang.yaml", tmp_path, old, new)
    with pytest.raises(ValueError) as error:
        load_space("spline", "wolfgang", path)
    assert _one_line(error) == f"search space file {str(path)!r}: unknown key {key!r}; valid keys: {SPACE_KEYS}"


def test_a_search_space_typo_in_the_trial_rules_is_named_with_its_block(tmp_path):
    path = _typo(spaces_dir() / "spline_wolfgang.yaml", tmp_path, "  hold_seconds:", "  hold_second:")
    with pytest.raises(ValueError, match=r"unknown key 'trial.hold_second'; valid keys of trial: hold_seconds, "):
        load_space("spline", "wolfgang", path)


def test_a_feedback_typo_names_the_file_the_key_and_the_valid_keys(tmp_path):
    path = _typo(feedback_dir() / "wolfgang-getup-bend-ankle-rise.yml", tmp_path, "    reference:", "    refrence:")
    with pytest.raises(ValueError) as error:
        load_feedback_spec(str(path))
    assert _one_line(error) == (f"hand-designed residual {str(path)!r}: unknown key 'feedback.0.refrence'; "
                                f"valid keys of feedback.0: {', '.join(field_names(FeedbackTerm))}")
    top = _typo(feedback_dir() / "wolfgang-getup-bend-ankle-rise.yml", tmp_path, "offsets:", "offset:")
    with pytest.raises(ValueError, match=f"unknown key 'offset'; valid keys: {', '.join(field_names(FeedbackSpec))}$"):
        load_feedback_spec(str(top))


def test_an_hp_key_typo_is_one_line_with_the_valid_keys_and_exit_2(tmp_path, capsys):
    assert main(["train", "--env", "upright/NaoGetUp-v0", "--prior", "keyframe", "--out", str(tmp_path / "runs"),
                 "--no-progress", "--set", "hp.warmup_stps=5000"]) == 2
    err = capsys.readouterr().err.strip()
    valid = ", ".join(field_names(hyperparameter_schema("ppo")))
    assert err == f"upright train: error: --set: unknown key 'hp.warmup_stps'; valid keys of hp: {valid}", err
    assert not (tmp_path / "runs").exists()


def test_a_hyperparameter_file_typo_names_its_block(tmp_path):
    path = _typo(ROOT / "training/hyperparams/ppo.yml", tmp_path, "  n_epochs:", "  n_epoch:")
    with pytest.raises(ValueError) as error:
        load_hyperparams("ppo", "upright/NaoGetUp-v0", "keyframe", path)
    assert _one_line(error).startswith(f"hyperparameter file {str(path)!r}: unknown key 'default.n_epoch'; "
                                       "valid keys of default: normalize, warmup_steps, ")


def test_a_sweep_typo_names_the_file_the_key_and_the_valid_keys(tmp_path):
    path = _typo(ROOT / "training/sweeps/sweep-workers.yml", tmp_path, "  eval_episodes:", "  eval_episode:")
    with pytest.raises(ValueError) as error:
        load_sweep_space(path)
    assert _one_line(error) == (f"sweep space file {str(path)!r}: unknown key 'train.eval_episode'; valid keys of "
                                f"train: {', '.join(field_names(SweepTrain))}")
    assert "set" in field_names(SweepSpace) and "eval_set" in field_names(SweepSpace)  # the keys as files write them


def test_a_baseline_parameter_typo_names_the_key_and_the_valid_keys():
    raw = si_units(read_yaml("spline_nao.yaml"))
    raw["rise_tme"] = raw.pop("rise_time")
    with pytest.raises(ValueError) as error:
        validate(SplineParams, raw, "baselines/data/spline_nao.yaml")
    assert _one_line(error).startswith("baselines/data/spline_nao.yaml: unknown key 'rise_tme'; valid keys: "
                                       "arm_extended_length, foot_distance, ")
    with pytest.raises(ValueError, match="^SplineParams overrides: unknown key 'rise_tme'; valid keys: "):
        SplineParams.load("nao").with_overrides({"rise_tme": 1.0})


def test_a_keyframe_library_typo_names_the_keyframe(tmp_path):
    path = _typo(ROOT / "baselines/data/keyframe_wolfgang.yaml", tmp_path, "    interpolation: quintic",
                 "    interpolaton: quintic")
    with pytest.raises(ValueError, match=r"unknown key 'blocks\.standUpFront\.interpolaton'; valid keys of "
                                         r"blocks\.standUpFront: stiffness, interpolation, self_compensation"):
        load_library(get_robot("wolfgang"), path)


def test_an_experiment_cells_typo_names_the_key():
    data = yaml.safe_load((ROOT / "eval/experiments/walk.yaml").read_text())
    data["push"]["duratoin"] = data["push"].pop("duration")
    with pytest.raises(ValueError) as error:
        validate(Walk, data, "walk.yaml")
    assert _one_line(error) == "walk.yaml: unknown key 'push.duratoin'; valid keys of push: times, duration, direction"
    assert set(PROTOCOL_SCHEMAS) == {path.stem for path in (ROOT / "eval/experiments").glob("*.yaml")}


def test_the_command_line_turns_a_file_typo_into_exit_2(tmp_path, capsys):
    space = _typo(spaces_dir() / "spline_wolfgang.yaml", tmp_path, "\nfixed:", "\nfixd:")
    assert main(["optimize", "--controller", "spline", "--robot", "wolfgang", "--trials", "1", "--space", str(space),
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"upright optimize: error: search space file {str(space)!r}: unknown key 'fixd'; valid keys: {SPACE_KEYS}"
    residual = _typo(feedback_dir() / "nao-walk-lean-roll.yml", tmp_path, "  - angle:", "  - angel:")
    assert main(["eval", "--episodes", "1", "--env", "upright/NaoWalk-v0", "--policy", str(residual)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"upright eval: error: hand-designed residual {str(residual)!r}: unknown key 'feedback.0.angel'")
    assert len(err.splitlines()) == 1


# ------------------------------------------------------------------ the training extras


def test_each_training_extra_has_one_default_that_the_hyperparameter_files_share():
    extras = TrainingExtras()
    assert (extras.normalize, extras.warmup_steps, extras.zero_init, extras.update_threads) == (False, 0, None, 1)
    for algo in ("ppo", "sac", "td3"):
        block = hyperparameter_schema(algo).model_fields
        for name, info in TrainingExtras.model_fields.items():
            assert block[name].default == info.default and block[name].annotation == info.annotation, (algo, name)
    assert extras.zero_initialised("keyframe") and not extras.zero_initialised(None)
    assert not TrainingExtras(zero_init=False).zero_initialised("keyframe")


def test_sb3_hyperparameters_stay_sb3_s_dictionary_and_the_extras_are_typed():
    hp, extras = load_hyperparams("ppo", "upright/NaoWalk-v0", "step_adjust",
                                  overrides={"warmup_steps": 5e3, "initial_residual.LHipRoll": 0.08, "n_steps": 512.0})
    assert set(hp) & set(TrainingExtras.model_fields) == set()
    assert hp["n_steps"] == 512 and type(hp["n_steps"]) is int and hp["policy_kwargs"]["activation_fn"] == "relu"
    assert extras.normalize is True and extras.warmup_steps == 5000 and extras.initial_residual == {"LHipRoll": 0.08}
    assert extras.curricula() == {}
    _, pushed = load_hyperparams("ppo", "upright/NaoWalk-v0", None, overrides={"push_curriculum_start": 0.25,
                                                                               "push_curriculum_steps": 1e5})
    assert pushed.curricula() == {"push_curriculum": (0.25, 100_000)}


def test_a_run_s_config_records_the_extras_and_old_run_folders_load(tmp_path):
    config = TrainConfig(env_id="upright/NaoGetUp-v0", prior="keyframe", hyperparams={"n_steps": 64},
                         extras=TrainingExtras(normalize=True, imitate="feedback:x", warmup_steps=300))
    written = yaml.safe_load(yaml.safe_dump(config.to_yaml(), sort_keys=False))
    assert written["extras"]["warmup_steps"] == 300 and written["extras"]["imitate_steps"] == 100_000
    assert written["hyperparams"] == {"n_steps": 64} and TrainConfig.from_yaml(written) == config
    # a run folder written when the extras were hyperparameters among SB3's
    old = {**written, "hyperparams": {"n_steps": 64, "normalize": True, "imitate": "feedback:x", "warmup_steps": 300}}
    del old["extras"]
    (tmp_path / "config.yml").write_text(yaml.safe_dump(old))
    assert load_run_config(tmp_path) == TrainConfig.from_yaml(written)
    old["hyperparams"]["warmup_steps"] = -1
    (tmp_path / "config.yml").write_text(yaml.safe_dump(old))
    with pytest.raises(ValueError, match="config.yml': extras: warmup_steps: input should be greater than or equal to 0"):
        load_run_config(tmp_path)


@pytest.mark.parametrize("entry", zoo_names(packaged_zoo()))
def test_the_shipped_policies_load_with_their_extras(entry):
    config = load_run_config(packaged_zoo() / entry)
    assert config.extras.normalize is True  # every shipped run normalised its observations
    assert set(config.hyperparams) & set(TrainingExtras.model_fields) == set()
    assert "learning_rate" in config.hyperparams
