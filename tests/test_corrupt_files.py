"""Corrupt, foreign and half-written files of runs, zoo entries and exports: one line naming the
file (exit 2), never a traceback, a policy that runs silently changed, or a zoo entry that cannot
load. Works on copies of a shipped entry (a run folder with one model) and its ONNX export."""

from __future__ import annotations

import pickle
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from upright.cli import main
from upright.policies.onnx_policy import GRAPH_FILE, SPEC_FILE, SUMS_FILE, sha256_bytes, sums_text
from upright.policies.run import zoo_entry

ENTRY = "nao-getup-residual-keyframe"
ENV = "upright/NaoGetUp-v0"
EVAL = ["eval", "--env", ENV, "--episodes", "1", "--set", "max_episode_seconds=0.12"]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of a shipped entry (without its export) in a zoo of its own: a run folder with one
    model, loadable as a folder and as ``zoo:run``."""
    copy = tmp_path / "zoo" / "run"
    shutil.copytree(zoo_entry(ENTRY), copy, ignore=shutil.ignore_patterns("onnx"))
    config = yaml.safe_load((copy / "config.yml").read_text())
    (copy / "config.yml").write_text(yaml.safe_dump({**config, "init": None}))  # its start lies in the other zoo
    monkeypatch.setenv("UPRIGHT_ZOO", str(tmp_path / "zoo"))
    return copy


def _one_line(capsys: pytest.CaptureFixture[str], *named: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert all(name in err for name in named), err
    return err


def _corrupt_weights(model: Path) -> None:
    """``model`` with its zip intact but the policy's weights replaced by bytes that are no tensor."""
    members = {}
    with zipfile.ZipFile(model) as archive:
        for name in archive.namelist():
            members[name] = archive.read(name)
    members["policy.pth"] = b"not a tensor" * 100
    with zipfile.ZipFile(model, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


NORMALISERS = {"truncated": lambda data: data[:100], "empty": lambda data: b"",
               "wrong": lambda data: pickle.dumps({"not": "a normaliser"})}


@pytest.mark.parametrize("kind", NORMALISERS)
@pytest.mark.parametrize("command", ["eval", "resume", "export"])
def test_a_bad_normaliser_is_one_line_naming_it(run, kind, command, tmp_path, capsys):
    path = run / "vecnormalize.pkl"
    path.write_bytes(NORMALISERS[kind](path.read_bytes()))
    args = {"eval": [*EVAL, "--policy", str(run), "--out", str(tmp_path / "out")],
            "resume": ["train", "--resume", str(run), "--steps", "100000000", "--no-progress"],
            "export": ["export", "zoo:run", "--out", str(tmp_path / "out")]}[command]
    assert main(args) == 2
    _one_line(capsys, "vecnormalize.pkl")
    assert not (tmp_path / "out").exists()


def test_a_fine_tuning_run_from_a_bad_normaliser_is_refused_before_its_run_folder_is_made(run, tmp_path, capsys):
    path = run / "vecnormalize.pkl"
    path.write_bytes(path.read_bytes()[:100])
    assert main(["train", "--env", ENV, "--prior", "keyframe", "--init", "zoo:run", "--steps", "64",
                 "--set", "hp.privileged_critic=true",
                 "--out", str(tmp_path / "runs")]) == 2
    _one_line(capsys, "vecnormalize.pkl")
    assert not (tmp_path / "runs").exists()


def test_a_zoo_entry_whose_manifest_is_damaged_is_refused_naming_it(run, tmp_path, capsys):
    (run / "manifest.yml").write_text("name: [run\n")
    assert main([*EVAL, "--policy", "zoo:run", "--out", str(tmp_path / "out")]) == 2
    _one_line(capsys, "manifest.yml", "not valid YAML")


def test_model_weights_that_do_not_load_are_one_line_and_never_shipped(run, tmp_path, capsys):
    _corrupt_weights(run / "model.zip")
    assert main([*EVAL, "--policy", "zoo:run", "--out", str(tmp_path / "out")]) == 2
    _one_line(capsys, "model.zip", "does not load")
    assert main(["ship", str(run), "--name", "copy", "--model", "final", "--zoo", str(tmp_path / "shipped")]) == 2
    _one_line(capsys, "model.zip", "does not load")
    assert not (tmp_path / "shipped" / "copy").exists()


@pytest.mark.parametrize("text", ["env_id: [a\nalgo: : b\n", "- a\n- b\n"], ids=["malformed", "list"])
def test_a_runs_config_that_is_no_yaml_mapping_is_one_line_naming_it(run, text, tmp_path, capsys):
    (run / "config.yml").write_text(text)
    assert main(["train", "--resume", str(run), "--steps", "100000000", "--no-progress"]) == 2
    _one_line(capsys, "config.yml")
    assert main([*EVAL, "--policy", str(run), "--out", str(tmp_path / "out")]) == 2
    _one_line(capsys, "config.yml")


def test_a_zoo_entry_being_shipped_by_another_process_is_refused_naming_it(run, tmp_path, capsys):
    zoo = tmp_path / "shipped"
    zoo.mkdir()
    code = ("import time; from upright.policies.folders import locked\n"
            f"with locked({str(zoo / '.copy.lock')!r}, 'zoo entry'):\n    print('held', flush=True); time.sleep(120)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["ship", str(run), "--name", "copy", "--model", "final", "--zoo", str(zoo)]) == 2
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    _one_line(capsys, f"process {holder.pid}", "copy")
    assert not (zoo / "copy").exists()
    assert main(["ship", str(run), "--name", "copy", "--model", "final", "--zoo", str(zoo)]) == 0  # taken over


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """A copy of a shipped ONNX export."""
    copy = tmp_path / "export"
    shutil.copytree(zoo_entry(ENTRY) / "onnx", copy)
    return copy


def _edit_spec(export: Path, edit, resum: bool) -> None:
    spec = yaml.safe_load((export / SPEC_FILE).read_text())
    edit(spec)
    (export / SPEC_FILE).write_text(yaml.safe_dump(spec, sort_keys=False))
    if resum:  # the checksums made to fit the edited spec: what the loader must still catch
        (export / SUMS_FILE).write_text(sums_text(export))


def _garbage_graph(export: Path) -> None:
    garbage = b"not a graph" * 10
    (export / GRAPH_FILE).write_bytes(garbage)
    _edit_spec(export, lambda spec: spec["model"].update(sha256=sha256_bytes(garbage)), resum=True)


@pytest.mark.parametrize(("change", "named"), [
    (lambda e: _edit_spec(e, lambda s: s["environment"]["kwargs"].update(prior="spline"), resum=False),
     ["policy.yml", "checksum", SUMS_FILE]),
    (lambda e: (e / SUMS_FILE).unlink(), [SUMS_FILE, "export it again"]),
    (lambda e: _edit_spec(e, lambda s: s["model"].pop("sha256"), resum=True), ["policy.yml", "model.sha256"]),
    (lambda e: _edit_spec(e, lambda s: s["environment"].pop("kwargs"), resum=True),
     ["policy.yml", "environment.kwargs"]),
    (_garbage_graph, ["policy.onnx", "does not load as an ONNX graph"]),
], ids=["changed-prior", "no-checksums", "no-model-sha256", "no-environment-kwargs", "garbage-graph"])
def test_an_export_that_is_changed_or_incomplete_is_one_line_naming_the_file(export, change, named, tmp_path,
                                                                              capsys):
    change(export)
    assert main([*EVAL, "--policy", f"onnx:{export}", "--out", str(tmp_path / "out")]) == 2
    _one_line(capsys, *named)
    assert not (tmp_path / "out").exists()
