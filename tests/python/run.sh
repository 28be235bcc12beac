#!/usr/bin/env bash
# The Python module as a user installs it: a venv over Debian's Python with --system-site-packages (pybind11 and
# setuptools are Debian packages: no package index), `pip install --no-build-isolation SOURCE`, then
# tests/python/test_kvfit.py compares kvfit.plan() with the CLI's --json and checks kvfit.Error's messages.
# BUILD_DIR (optional): a tree configured with KVFIT_BUILD_PYTHON=ON whose module pip then reuses (setup.py,
# KVFIT_PYTHON_BUILD_DIR) instead of building the library again in SOURCE/build-python.
# Usage: run.sh SOURCE_DIR KVFIT_BINARY [BUILD_DIR]
set -euo pipefail
src=$1 kvfit=$2 build=${3:-}
tmp=$(mktemp -d /tmp/kvfit-python.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv"
if [[ -n $build ]]; then export KVFIT_PYTHON_BUILD_DIR=$build; fi
# --no-index: nothing may come from a package index; a copy of the source keeps the checkout free of build files
"$tmp/venv/bin/pip" install --quiet --no-index --no-build-isolation "$src" 2>&1 | grep -v "^$" || true
"$tmp/venv/bin/python" -c "import kvfit" # fails loudly when pip did not install it
cd "$tmp" # not the checkout: the installed package must be the one imported
KVFIT_BINARY=$kvfit "$tmp/venv/bin/python" "$src/tests/python/test_kvfit.py"
