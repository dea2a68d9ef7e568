#!/bin/sh
# The API reference as HTML in build/docs; any warning (an undocumented public name or parameter) fails the build.
# Arguments go to pip (CI passes its constraints file).
set -eu
cd "$(dirname "$0")/.."
.venv/bin/pip install -q "$@" '.[docs]'
.venv/bin/python -m sphinx -W --keep-going -b html docs build/docs
