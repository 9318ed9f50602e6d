"""The README and the pages under ``docs/`` link only to files of the repository, and a link to a
heading (``page.md#heading``) names a heading that page has (GitHub's anchors) or an HTML anchor
(``<a id="NAME"></a>``, as the generated run table gives each run's row)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A Markdown link or image: ``[text](target)`` / ``![alt](target)``.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
#: An HTML anchor in a page: ``<a id="NAME">`` or ``<a name="NAME">``.
HTML_ANCHOR = re.compile(r'<a (?:id|name)="([^"]+)"')


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (word characters, hyphens and
    spaces kept), spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of ``page``'s headings and HTML anchors (outside code blocks)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("#"):
            found.add(anchor(line.lstrip("#")))
        if not fenced:
            found.update(HTML_ANCHOR.findall(line))
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """Each link of ``page`` that does not resolve, as ``page: target (why)`` (``page`` relative to
    ``root``)."""
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, heading = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{page.relative_to(root)}: {target} (no such file)")
        elif heading and file.suffix == ".md" and heading not in anchors(file):
            broken.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return broken


def test_readme_and_docs_links_resolve():
    pages = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "README.md",
                            "CHANGELOG.md", "docs/*.md"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    assert {"README.md", "CHANGELOG.md", "docs/README.md", "docs/training.md"} <= set(pages)
    broken = [b for page in pages for b in broken_links(ROOT / page)]
    assert not broken, "\n".join(broken)


def test_a_broken_link_and_a_missing_heading_are_named(tmp_path):
    (tmp_path / "guide.md").write_text("# The `spline` — a guide\n\n```\n# not a heading\n```\n"
                                       '| <a id="run-1"></a>`run-1` | 1 |\n')
    page = tmp_path / "README.md"
    page.write_text("[ok](guide.md#the-spline--a-guide) [row](guide.md#run-1) [web](https://example.org) "
                    "![gone](gone.png)\n"
                    "[bad heading](guide.md#not-a-heading) [here](#nowhere)\n")
    assert broken_links(page, tmp_path) == ["README.md: gone.png (no such file)",
                                  "README.md: guide.md#not-a-heading (no such heading)",
                                  "README.md: #nowhere (no such heading)"]
