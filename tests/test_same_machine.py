"""``upright check-same``: two recordings of the same code on one machine are identical, and the tool
finds a one-line change of a reward weight at a git revision, at the step where it starts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from upright.eval.same_machine import CASES, check_same, compare, record_case

ROOT = Path(__file__).resolve().parents[1]


def test_the_same_code_records_the_same_bits_and_compare_names_where_they_part():
    case = "nao-walk-step-adjust-lab"
    first, second = record_case(case, CASES[case], steps=30), record_case(case, CASES[case], steps=30)
    assert compare({case: first}, {case: second}) == []
    env_id, kwargs, scale = CASES[case]
    changed = record_case(case, (env_id, {**kwargs, "reward_scales": {"upright": 0.201}}, scale), steps=30)
    differences = compare({case: first}, {case: changed})
    assert [(d.case, d.step) for d in differences] == [(case, 0)]
    assert compare({case: first}, {}) and compare({}, {case: first})


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout")
def test_check_same_finds_a_changed_reward_weight_at_a_revision(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", "HEAD"], check=True)
    rewards = clone / "envs" / "rewards.py"
    text = rewards.read_text()
    line = "    torque: float = 0.05  #"
    assert line in text
    rewards.write_text(text.replace(line, "    torque: float = 0.0505  #"))
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet",
                    "-am", "torque weight +1 %"], check=True)
    commit, differences = check_same("HEAD", ["nao-getup-lab", "nao-walk-lab"], steps=20, repo=clone)
    assert len(commit) == 40
    # The get-up reward weighs torques, the walk's does not.
    assert [(d.case, d.step) for d in differences] == [("nao-getup-lab", 0)]
    with pytest.raises(ValueError, match="no-such-rev"):
        check_same("no-such-rev", ["nao-getup-lab"], steps=1, repo=clone)
    with pytest.raises(ValueError, match="nao-getup-nowhere"):
        check_same("HEAD", ["nao-getup-nowhere"], steps=1, repo=clone)
