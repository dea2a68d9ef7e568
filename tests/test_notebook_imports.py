"""The notebooks use the public API alone: ``import bayesrepro as br``, never a module inside the package."""

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def internal_imports(path: Path) -> list[str]:
    """Every import of a bayesrepro module other than ``import bayesrepro`` in the notebook's code cells."""
    found = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names if alias.name.startswith("bayesrepro.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "bayesrepro":
                found.append(f"from {node.module} import {', '.join(alias.name for alias in node.names)}")
    return found


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebook_imports_only_the_public_api(path):
    assert internal_imports(path) == []


def test_the_check_sees_internal_imports(tmp_path):
    cell = {"cell_type": "code", "source": ["%matplotlib inline\n", "import bayesrepro as br\n",
                                            "from bayesrepro.compare import compare\n", "import bayesrepro.plots\n"]}
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(json.dumps({"cells": [cell]}))
    assert internal_imports(notebook) == ["from bayesrepro.compare import compare", "bayesrepro.plots"]
