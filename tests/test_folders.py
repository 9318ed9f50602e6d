"""One writer per folder (``fcntl.flock`` held by real processes), folders replaced whole and put
back after a crash, and the checks of files and output folders (:mod:`upright.envs.files`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from upright.cli import main
from upright.envs.files import read_yaml_mapping, writable_folder
from upright.policies.folders import LOCK_FILE, FolderLocked, locked, recover_folder, replace_folder
from upright.policies.run_folder import TrainConfig

DATA = Path(__file__).parent / "data"


def _holder(lock_file: Path) -> subprocess.Popen:
    """Another process that takes the lock of ``lock_file``, says so, and keeps it until killed."""
    code = ("import sys, time; from upright.policies.folders import locked\n"
            f"with locked({str(lock_file)!r}, 'test'):\n    print('held', flush=True); time.sleep(120)")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def _end(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def test_a_second_writer_is_refused_naming_the_holder_and_a_dead_holders_lock_is_taken_over(tmp_path):
    lock_file = tmp_path / LOCK_FILE
    holder = _holder(lock_file)
    try:
        with pytest.raises(FolderLocked, match=f"run X is being written by process {holder.pid}"):
            with locked(lock_file, "run X"):
                pass
    finally:
        _end(holder)  # killed: its lock file stays, naming it
    assert lock_file.read_text().strip() == str(holder.pid)
    with locked(lock_file, "run X"):
        assert lock_file.read_text().strip() == str(os.getpid())


def test_train_resume_of_a_run_another_process_writes_is_one_line_naming_it(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yml").write_text(yaml.safe_dump(TrainConfig(env_id="upright/WolfgangGetUp-v0").to_yaml()))
    holder = _holder(run / LOCK_FILE)
    try:
        assert main(["train", "--resume", str(run), "--steps", "512"]) == 2
    finally:
        _end(holder)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"process {holder.pid}" in err and str(run) in err, err


def test_a_folder_moved_aside_by_a_killed_writer_is_put_back_and_leftovers_are_removed(tmp_path):
    target = tmp_path / "entry"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()  # a process id that no process has now
    old, tmp = tmp_path / f".entry.{dead}.old", tmp_path / f".entry.{dead}.tmp"
    old.mkdir()
    (old / "model.zip").write_text("old")
    tmp.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        theirs = tmp_path / f".entry.{live.pid}.tmp"  # a live writer's: not ours to remove
        theirs.mkdir()
        recover_folder(target)
        assert (target / "model.zip").read_text() == "old"
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["entry", theirs.name])
    finally:
        _end(live)
    new = tmp_path / "new"
    new.mkdir()
    (new / "model.zip").write_text("new")
    replace_folder(new, target)
    assert (target / "model.zip").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["entry", theirs.name])


def test_yaml_files_that_are_malformed_or_no_mapping_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"space '.*malformed.yml' is not valid YAML \(line 2"):
        read_yaml_mapping(DATA / "malformed.yml", "space")
    with pytest.raises(ValueError, match=r"space '.*list.yml' must hold a mapping .* not a list"):
        read_yaml_mapping(DATA / "list.yml", "space")
    with pytest.raises(ValueError, match="is a folder"):
        read_yaml_mapping(DATA, "space")


def test_an_output_folder_is_checked_before_anything_is_made(tmp_path):
    (tmp_path / "file").write_text("x")
    for path, message in ((tmp_path / "file", "is a file"), (tmp_path / "file" / "sub", "cannot be made"),
                          (Path("/proc/upright-test"), "not writable")):
        with pytest.raises(ValueError, match=message):
            writable_folder(path)
    writable_folder(tmp_path / "a" / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("args", [
    ["eval", "--env", "upright/NaoGetUp-v0", "--policy", "zero", "--episodes", "1"],
    ["experiment", "keyframe-ablation", "--episodes", "1"],
    ["optimize", "--controller", "spline", "--robot", "wolfgang", "--trials", "1", "--repetitions", "1"],
    ["soak", "--steps", "10", "--env", "upright/NaoGetUp-v0", "--no-progress"],
    ["train", "--env", "upright/NaoGetUp-v0", "--steps", "64"],
    ["report", "--episodes", "1"],
    ["export", "zoo:nao-getup-residual-keyframe"],
], ids=lambda args: args[0])
@pytest.mark.parametrize("out", ["file", "proc"])
def test_an_out_that_cannot_be_written_is_refused_before_any_episode(args, out, tmp_path, capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("an episode ran")

    for module in ("upright.eval.runner._Episodes.run", "upright.commands.episodes.run_episodes",
                   "upright.commands.report.write_report", "upright.commands.soak.soak",
                   "upright.commands.experiment.run_experiment"):
        monkeypatch.setattr(module, never)
    (tmp_path / "file").write_text("x")
    path = tmp_path / "file" if out == "file" else Path("/proc/upright-test")
    started = time.perf_counter()
    assert main([*args, "--out", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--out" in err and str(path) in err, err
    assert time.perf_counter() - started < 60


def test_a_file_that_cannot_be_written_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    """The command line's boundary: an OSError (a full disk, here) is one line with the file, exit 2."""
    def full(result, out):
        raise OSError(28, "No space left on device", str(out / "results.json"))

    monkeypatch.setattr("upright.commands.episodes.write_results", full)
    args = ["eval", "--env", "upright/NaoGetUp-v0", "--policy", "zero", "--episodes", "1", "--set",
            "max_episode_seconds=0.12", "--out", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"upright eval: error: [Errno 28] No space left on device: '{tmp_path / 'out' / 'results.json'}'"
