#!/usr/bin/env bash
# Installs what the build and the tests need when it is missing, and records the Python to use.
# Idempotent: a second run installs nothing. Needs no GPU.
#   - ninja and doctest through the system package manager (apt-get; as root or through sudo -n)
#   - a Python with matplotlib and pytest: the current python3 if it has them, otherwise a virtual
#     environment in .venv with plots/requirements.txt
# Writes the chosen interpreter's path to build/python.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "deps: $*"; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo "$@"
  else return 1; fi
}
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1 && return 0
  as_root apt-get update -q >/dev/null 2>&1 || return 1
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null 2>&1
}

command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] ||
  say "WARNING: nvcc not found; install the CUDA toolkit (>= 12) and put its bin/ on PATH"

if ! command -v ninja >/dev/null 2>&1; then
  say "installing ninja"
  apt_install ninja-build || { say "ERROR: ninja is missing and could not be installed (apt-get install ninja-build)"; exit 1; }
fi

if [ ! -f /usr/include/doctest/doctest.h ] && [ ! -f /usr/local/include/doctest/doctest.h ]; then
  say "installing doctest (doctest-dev)"
  apt_install doctest-dev || say "WARNING: could not install doctest-dev; the unit tests will not be built"
fi

py_ok() { "$1" -c "import matplotlib, pytest" >/dev/null 2>&1; }
if [ -x .venv/bin/python ] && py_ok .venv/bin/python; then
  py=$(pwd)/.venv/bin/python
elif command -v python3 >/dev/null 2>&1 && py_ok python3; then
  py=$(python3 -c 'import sys; print(sys.executable)')
else
  command -v python3 >/dev/null 2>&1 || { say "ERROR: python3 not found"; exit 1; }
  say "creating .venv with plots/requirements.txt"
  python3 -m venv .venv 2>/dev/null || { apt_install python3-venv && python3 -m venv .venv; } ||
    { say "ERROR: could not create a virtual environment (apt-get install python3-venv)"; exit 1; }
  .venv/bin/python -m pip install -q --disable-pip-version-check -r plots/requirements.txt ||
    { say "ERROR: pip could not install plots/requirements.txt"; exit 1; }
  py=$(pwd)/.venv/bin/python
fi
mkdir -p build
echo "$py" > build/python
say "python: $py"
