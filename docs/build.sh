#!/bin/sh
# The documentation site as HTML in build/docs: user guide, notebook gallery (rendered from the notebooks'
# committed outputs, never executed here), the command-line reference generated from the argparse parser and the
# API reference. Any warning (a broken internal link, an undocumented public name or parameter) fails the build.
# Arguments go to pip (CI passes its constraints file).
set -eu
cd "$(dirname "$0")/.."
.venv/bin/pip install -q "$@" '.[docs]'
.venv/bin/python -m sphinx -W --keep-going -b html docs build/docs
