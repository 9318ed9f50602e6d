#!/usr/bin/env bash
# Set up upright in ./.venv (first run only) and run the main job or the tests.
#   bash quickstart.sh main   # evaluate/simulate, benchmark, write results/report.md
#   bash quickstart.sh test   # the test suite without the slow ones (.ci/run adds pytest -m slow)
set -euo pipefail
cd "$(dirname "$0")"
job=${1:-}
case "$job" in main|test) ;; *) echo "usage: bash quickstart.sh main|test" >&2; exit 2 ;; esac

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.upright-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # Every version from the lock (constraints.txt, written by .ci/lock), so a new machine gets what
  # was tested; the CPU build of torch first, so that nothing pulls the CUDA packages.
  pip=(.venv/bin/python -m pip install -q --no-compile -c constraints.txt)
  "${pip[@]}" pip
  "${pip[@]}" torch
  "${pip[@]}" -e ".[all,test]"  # every extra: the robot side, the environments, training (pyproject.toml)
  echo "$want" > "$stamp"
fi

# Off-screen rendering needs an OpenGL library (EGL or OSMesa); install one if we can.
if [ "$(uname)" = Linux ] && ! ldconfig -p 2>/dev/null | grep -qE 'libEGL\.so\.1|libOSMesa\.so'; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq libegl1 libosmesa6) >/dev/null 2>&1 \
      || echo "note: could not install an OpenGL library; pictures and videos will be skipped" >&2
  else
    echo "note: no OpenGL library (libEGL/libOSMesa) found; pictures and videos will be skipped" >&2
  fi
fi

# Cache compiled bytecode in .venv even where the environment sets PYTHONDONTWRITEBYTECODE: the
# packages are installed with --no-compile (compiling all of torch takes longer than the imports
# need), and the tests and the main job start many interpreters (pytest's workers, the commands
# they run, vector-environment and evaluation workers), each of which would otherwise compile
# torch, SB3 and SciPy from source again, seconds per process.
unset PYTHONDONTWRITEBYTECODE

if [ "$job" = main ]; then
  exec .venv/bin/upright report --out results
else
  exec .venv/bin/python -m pytest -n 2 --dist worksteal -q -m "not slow"
fi
