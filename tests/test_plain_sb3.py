"""The shipped policies as plain stable-baselines3 loads them (``policies/zoo/NAME/sb3/``, ``upright
export --sb3``): ``PPO.load`` and ``VecNormalize.load`` in a fresh interpreter without upright's
training code, ``evaluate_policy`` in ``gym.make(ID, **kwargs)``, the actions of the ONNX export
and of ``zoo:NAME``; and the user's zoo, where ``upright ship`` writes, searched before the
package's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from upright.cli import main
from upright.policies.registry import load_policy, policy_names
from upright.policies.run import load_normalizer, load_run_policy, packaged_zoo, zoo_entry, zoo_names
from upright.training.export import EXAMPLE_TOLERANCE, zoo_export_dir
from upright.training.plain_sb3 import ENV_FILE, MODEL_FILE, NORMALIZER_FILE, actor_only_model, zoo_sb3_dir

#: What a user of plain SB3 runs (policies/zoo/README.md), for each folder given: one short episode
#: through evaluate_policy, the actions on the ONNX export's example observations, and which of
#: upright's modules above the environments were imported.
PLAIN = """
import json, sys
import gymnasium as gym
import numpy as np
import yaml
from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

import upright

out = {}
for folder, examples in zip(sys.argv[1::2], sys.argv[2::2]):
    env = yaml.safe_load(open(f"{folder}/env.yml"))
    venv = DummyVecEnv([lambda: Monitor(gym.make(env["id"], **env["kwargs"], max_episode_seconds=0.3))])
    venv = VecNormalize.load(f"{folder}/vecnormalize.pkl", venv)
    model = PPO.load(f"{folder}/model.zip", device="cpu")
    venv.seed(3)
    mean, _ = evaluate_policy(model, venv, n_eval_episodes=1)
    data = np.load(examples)
    actions, _ = model.predict(venv.normalize_obs(data["observation"]), deterministic=True)
    out[folder] = {"return": float(mean), "difference": float(np.abs(actions - data["action"]).max())}
out["imported"] = sorted(m for m in sys.modules if m.split(".")[:2] in (["upright", "training"],
                                                                         ["upright", "policies"]))
print(json.dumps(out))
"""


def test_every_shipped_policy_loads_and_acts_in_plain_sb3():
    """In a fresh interpreter, each entry's ``sb3/`` loads with ``PPO.load`` (no upright class in
    it), its normaliser fits ``gym.make(ID, **kwargs)``'s observation, ``evaluate_policy`` runs an
    episode, and the actions on the export's examples are the graph's within its tolerance."""
    names = zoo_names(packaged_zoo())
    assert names
    arguments = [str(a) for name in names for a in (zoo_sb3_dir(name), zoo_export_dir(name) / "example_io.npz")]
    result = subprocess.run([sys.executable, "-c", PLAIN, *arguments], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out.pop("imported") == []
    for name in names:
        run = out[str(zoo_sb3_dir(name))]
        assert np.isfinite(run["return"]) and run["difference"] <= EXAMPLE_TOLERANCE, (name, run)


@pytest.mark.parametrize("name", zoo_names(packaged_zoo()))
def test_the_committed_sb3_files_are_the_trained_actor(name):
    """``sb3/`` holds the trained actor weight for weight, SB3's own policy class on the actor's
    observation (a privileged critic's value network zeroed), the normaliser's statistics of the
    actor's entries and the environment the policy was evaluated in."""
    folder = zoo_sb3_dir(name)
    policy = load_run_policy(f"zoo:{name}")
    fresh = actor_only_model(policy.model)
    from stable_baselines3 import PPO
    from stable_baselines3.common.policies import ActorCriticPolicy

    committed = PPO.load(folder / MODEL_FILE, device="cpu")
    assert type(committed.policy) is ActorCriticPolicy
    assert committed.observation_space.shape == fresh.observation_space.shape
    theirs, ours = committed.policy.state_dict(), fresh.policy.state_dict()
    assert theirs.keys() == ours.keys() and all(torch.equal(theirs[k], ours[k]) for k in theirs)
    trained = policy.model.policy.state_dict()
    for key in ours:
        if key.startswith(("mlp_extractor.policy_net.", "action_net.", "log_std")):
            assert torch.equal(ours[key], trained[key]), key
    privileged = policy.model.observation_space.shape != committed.observation_space.shape
    assert privileged == (name == "nao-getup-residual-keyframe")
    if privileged:
        assert not committed.policy.value_net.weight.any()
    normalizer = load_normalizer(folder / NORMALIZER_FILE)
    size = committed.observation_space.shape[0]
    np.testing.assert_array_equal(normalizer.obs_rms.mean, policy.normalizer.obs_rms.mean[:size])
    np.testing.assert_array_equal(normalizer.obs_rms.var, policy.normalizer.obs_rms.var[:size])
    assert not normalizer.training and not normalizer.norm_reward
    manifest = yaml.safe_load((zoo_entry(name) / "manifest.yml").read_text())
    environment = yaml.safe_load((folder / ENV_FILE).read_text())
    assert environment == {"id": manifest["env_id"], "kwargs": manifest["env_kwargs"]}


def test_export_sb3_writes_one_policy_and_refuses_what_it_cannot(tmp_path, capsys):
    name = "wolfgang-getup-residual-spline"
    out = tmp_path / "plain"
    assert main(["export", f"zoo:{name}", "--sb3", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [ENV_FILE, MODEL_FILE, NORMALIZER_FILE]
    from stable_baselines3 import PPO

    observations = np.load(zoo_export_dir(name) / "example_io.npz")["observation"][:20]
    model = PPO.load(out / MODEL_FILE, device="cpu")
    normalizer = load_normalizer(out / NORMALIZER_FILE)
    policy = load_policy(f"zoo:{name}")
    ours = np.stack([policy.act(observation, {}) for observation in observations])
    np.testing.assert_allclose(model.predict(normalizer.normalize_obs(observations), deterministic=True)[0], ours,
                               rtol=0, atol=EXAMPLE_TOLERANCE)
    capsys.readouterr()
    assert main(["export", "spline", "--sb3", "--out", str(tmp_path / "x")]) == 2
    assert main(["export", f"zoo:{name}", "--sb3", "--ops", "compiled-nn", "--out", str(tmp_path / "y")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and "'spline'" in errors[0] and "--ops compiled-nn" in errors[1], errors


def test_ship_writes_into_the_current_projects_zoo_and_both_zoos_are_searched(tmp_path, monkeypatch, capsys):
    """Without ``--zoo`` or ``$UPRIGHT_ZOO``, ``upright ship`` writes ``policies/zoo/NAME`` of the
    current directory (with its ``sb3/``), not the package's folder; ``zoo:NAME`` then finds it,
    and the package's policies still load."""
    name = "wolfgang-getup-residual-spline"
    run = tmp_path / "run"
    shutil.copytree(zoo_entry(name), run, ignore=shutil.ignore_patterns("onnx", "sb3", "manifest.yml"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.delenv("UPRIGHT_ZOO", raising=False)
    packaged = sorted(p.name for p in packaged_zoo().iterdir())
    assert main(["ship", str(run), "--name", "mine", "--model", "final"]) == 0
    entry = project / "policies" / "zoo" / "mine"
    assert (entry / "manifest.yml").is_file() and (entry / "sb3" / MODEL_FILE).is_file()
    assert sorted(p.name for p in packaged_zoo().iterdir()) == packaged
    assert zoo_entry("mine") == Path("policies", "zoo", "mine") and zoo_entry(name) == packaged_zoo() / name
    assert {"zoo:mine", f"zoo:{name}"} <= set(policy_names())
    assert load_policy("zoo:mine").name == "mine"
    capsys.readouterr()
    assert main(["eval", "--env", "upright/WolfgangGetUp-v0", "--policy", "zoo:nope", "--episodes", "1"]) == 2
    error = capsys.readouterr().err
    assert "zoo:nope" in error and "policies/zoo" in error and "mine" in error
