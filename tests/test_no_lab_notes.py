"""No lab notebook in code or config: comments, docstrings and strings of the tracked ``*.py``,
``*.yml`` and ``*.yaml`` files say what and why (units, frames, equations, design reasons). The
story of a measurement — issue numbers, dates, the CPU it ran on, before → after numbers, rounds of
training runs, probe logs, what was tried, and counts of falls or episodes per variant — belongs
in commit messages and the generated ``docs/results/`` pages (the run table keeps every training
run), and a pointer to a file must point into the repository.

Two kinds of file are not scanned: ``tests/data/`` (recorded data, not prose) and this module,
whose patterns are the one place that has to spell out what is forbidden."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What a hit is, to the pattern that finds it in one line.
PATTERNS: dict[str, re.Pattern[str]] = {
    "issue number": re.compile(r"\b(?:issues?|PR|pull request)\s*#?\d+\b|\b(?:fix(?:es|ed)?|close[sd]?|see)\s+#\d+\b",
                               re.IGNORECASE),
    "date": re.compile(r"(?<![\d-])(?:19|20)\d\d-[01]\d-[0-3]\d(?![\d-])"),
    "CPU name": re.compile(r"\b(?:EPYC|Xeon|Ryzen|Threadripper|Opteron|Graviton|Neoverse|Core i[3579]|Apple M[1-9])\b"
                           r"|Intel\(R\)", re.IGNORECASE),
    "path outside the repository": re.compile(r"\.\./shared\b|\b(?:reference|papers)/[\w.-]+\.(?:md|pdf)\b"
                                              r"|(?<![\w.~])/(?:work|home|tmp|Users|root)/"),
    # A measured change: a number (or a range) then an arrow then a number, where one side has a
    # decimal point or a unit follows ("27.3-27.6 -> 23.4 %", "52 -> 48 mm"), or counts in a
    # comment ("prone 7 -> 12"). A blend's range in a comment ("0 → 1") or a step count in a
    # program's message ("steps 256 -> 640") is not one.
    "before -> after numbers": re.compile(
        r"\d+\.\d+[\d.\-–]*\s*(?:->|→)\s*-?\d|\d[\d.\-–]*\s*(?:->|→)\s*-?\d+\.\d"
        r"|\d[\d.\-–]*\s*(?:->|→)\s*-?\d[\d.]*\s*(?:%|mm|ms|s\b|rad|deg|°|m/s|steps/s|MB)"
        r"|(?:^|\s)#\s.*\b(?:[2-9]|\d\d+)\s*(?:->|→)\s*\d"),
    # The training history's own labels: "round 25", "rounds 32, 33", "r22's recipe", a quoted
    # label "… (r24)", a study's "trial 14 of". A quantity is not one ("rounds 1 rad to 6e-8"), nor
    # a variable (r22 of a rotation matrix).
    "round label": re.compile(
        r"\b[Rr]ounds? \d+(?:\s*(?:,|and|–|-)\s*\d+)*(?![\d.]|\s*(?:rad|mm|ms|m|s|deg|°|%)\b)"
        r"|\br\d{1,2}(?:'s)? (?:recipe|reward|model|runs?)\b"
        r"|\"[^\"]*\(r\d{1,2}(?:, r\d{1,2})*[;)][^\"]*\""
        r"|\btrial \d+ of\b"),
    # A probe log: the throwaway scripts a number was found with, probes and their counts.
    "probe log": re.compile(
        r"\bthrowaway (?:scripts?|probes?|evaluations?|loops?|patch(?:es)?|subclass)\b"
        r"|\bprobes?\b[^\"']*\b\d+ (?:of|in) \d+\b|\bprobe[sd]? (?:ran|found|showed|on the)\b"
        r"|\bwhose file lists every probe\b"),
    # What someone tried; "each candidate is tried on N seeds" describes the code and is not one.
    "what was tried": re.compile(r"\b(?:was|were|we|I|been) tried\b"
                                 r"|\btried (?:to see|against|out|first|before|again|it|them|this|that)\b"),
    # Falls or episodes counted per variant: "fell in 25 + 27", "stood up 197 of 200", "13 of 200".
    "fall or episode counts": re.compile(
        r"\b(?:fell|falls?|stood(?: up)?|stands?|failed|failures|caught|topples?|walks? with a fall)\b(?: in)?"
        r" \d+(?: \+ \d+)? (?:of|/) (?:the )?\d+\b"
        r"|\b(?:fell|falls?|stood(?: up)?|failed) in \d+(?:,| and| \+) \d+\b"),
}

#: A page of ``docs/`` named in code must be in the repository (placeholders in capitals such as
#: ``docs/results/NAME.md`` aside).
DOCS_PATH = re.compile(r"\bdocs/[\w./-]*[\w-]\.(?:md|png)\b")


def scanned_files(root: Path = ROOT) -> list[Path]:
    """The tracked ``*.py``, ``*.yml`` and ``*.yaml`` files under ``root`` that are scanned."""
    listed = subprocess.run(["git", "ls-files", "*.py", "*.yml", "*.yaml"], cwd=root, check=True,
                            capture_output=True, text=True).stdout.split()
    own = Path(__file__).resolve()
    return [root / name for name in listed
            if not name.startswith("tests/data/") and (root / name).resolve() != own and (root / name).is_file()]


def lab_notes(files: list[Path], root: Path = ROOT) -> list[str]:
    """Every hit in ``files`` as ``path:line: what: the line`` (paths relative to ``root``)."""
    hits = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            found = [what for what, pattern in PATTERNS.items() if pattern.search(line)]
            found += [f"{page} is not in the repository" for page in DOCS_PATH.findall(line)
                      if not re.search(r"/[A-Z]+\.", page) and not (root / page).exists()]
            hits += [f"{path.relative_to(root)}:{number}: {what}: {line.strip()}" for what in found]
    return hits


def test_code_and_config_hold_no_lab_notes():
    hits = lab_notes(scanned_files())
    assert not hits, "lab-notebook lines (move them to a commit message or a docs/results page):\n" + "\n".join(hits)


def test_each_kind_of_lab_note_is_found_with_its_file_and_line(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# guide\n")
    clean = ("import numpy as np\n"
             "def blend(ratio: float) -> float:  # smooth 0 → 1 over the swing\n"
             "    return 0.5 - 0.5 * np.cos(np.pi * ratio)  # see docs/guide.md\n"
             "SEED = 3000000000  # held out from 2500000000 + i\n"
             "NOTE = 'changed steps 256 -> 640'\n"
             "KEY_POSE = 2  # FRONT #2 of the key poses\n"
             "(r20, r21, r22) = rows  # the rotation's last row\n"
             "DOC = 'float32 alone rounds 1 rad to about 6e-8; each candidate is tried on N seeds'\n"
             "PROBE = SupportProbe(robot)  # the probe notes the support edge\n"
             "FALLS = 'walks with a fall, of the episodes'  # a column title\n")
    (tmp_path / "clean.py").write_text(clean)
    planted = {
        "issue number": "# faster since issue 16",
        "date": "    gamma: 0.995   # measured 2026-11-25",
        "CPU name": "# on an AMD EPYC, 27 % of the step",
        "path outside the repository": "# the numbers of reference/controllers.md A.4",
        "before -> after numbers": "ik_period: 2   # 27.3-27.6 -> 23.4-24.0 % of the env step",
        "docs/results/gone.md is not in the repository": "# table: docs/results/gone.md",
        "round label": "# the teacher of round 25 (docs/guide.md)",
        "probe log": "# found with throwaway scripts on the selection seeds",
        "what was tried": "# tried to see whether SAC still learns at that ratio",
        "fall or episode counts": "# with 0.4 rad the teacher stood up 197 of 200",
    }
    dirty = tmp_path / "config.yaml"
    dirty.write_text("".join(line + "\n" for line in ["a: 1", *planted.values()]))
    assert lab_notes([tmp_path / "clean.py"], tmp_path) == []
    hits = lab_notes([dirty], tmp_path)
    assert hits == [f"config.yaml:{n}: {what}: {line.strip()}"
                    for n, (what, line) in enumerate(planted.items(), start=2)]
    for line in ("# after /work/shared/papers/x.pdf", "# from ../shared/reference", "# 52 -> 48 mm steps",
                 "# 0.57 → 0.67 with 4 envs", "# Xeon Gold", "# fixes #12",
                 "  # stood up: prone 7 -> 12", "# the teacher of rounds 32, 33", "# r22's recipe with the gait",
                 '"SAC residual (r24)": [r24-sac-s1]', "# trial 14 of the study", "# fell in 25 + 27",
                 "# this file lists every probe: 3 of 5 caught", "# a change was tried", "# falls in 13 of the 200"):
        (tmp_path / "one.py").write_text(line + "\n")
        assert len(lab_notes([tmp_path / "one.py"], tmp_path)) == 1, line
