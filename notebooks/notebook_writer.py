"""Shared by the notebook builders: cells in, an executed notebook file out."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def write_executed(cells, path: Path, timeout: int) -> None:
    """Build a notebook from ("md" | "code", source) pairs, execute it from the project root, write it to ``path``."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for kind, source in cells:
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        notebook.cells.append(make(source))
    NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    nbformat.write(notebook, path)
