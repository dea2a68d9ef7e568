"""Every side-by-side notebook executes from its committed source without an error, and every result it reaches
reads in Python's words (no command-line option in its text, notes or warnings).

Together they take several minutes (NUTS runs and bootstrap refits on the
papers' data), so they are marked slow; CI runs them with `-m slow`.
"""

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ["significance", "annotation_reliability", "grid_reliability", "meta_parameter_importance", "quick_start"]
OTHER_NOTEBOOKS = ["instruments", "planning", "binary_benchmark", "model_checks"]
ALL_NOTEBOOKS = NOTEBOOKS + OTHER_NOTEBOOKS + ["harness_logs", "random_slopes"]


# cells put around a notebook's own: every result it reaches and every package warning it raises is recorded
# (tests/python_wording.py), and at the end the texts that name a command-line option are printed
TRACK = f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); from python_wording import Tracking; " \
        "_tracking = Tracking().start()"
REPORT = "import json; print('python wording: ' + json.dumps(_tracking.stop().options_named()))"


def _executed(name: str):
    """The notebook executed from its committed source; every result it reached named Python's arguments, never a
    command-line option."""
    notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    notebook.cells = [nbformat.v4.new_code_cell(TRACK), *notebook.cells, nbformat.v4.new_code_cell(REPORT)]
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    assert _printed_verdict(notebook, "python wording: ") == [], f"{name}: a result read from Python names an option"
    return notebook


def _printed_verdict(notebook, prefix: str) -> dict:
    """The JSON the notebook printed after ``prefix``, on the one line that starts with it."""
    lines = [line for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
             for line in output.get("text", "").splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, f"the notebook should print one line starting with {prefix!r}"
    return json.loads(lines[0].removeprefix(prefix))


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes_and_shows_both_engines(name):
    notebook = _executed(name)
    text = "\n".join(output.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                     for output in cell.get("outputs", []))
    assert "Frequentist and Bayesian answers for" in text
    images = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
              if "image/png" in output.get("data", {})]
    assert images, "the notebook should show its figures"


@pytest.mark.slow
@pytest.mark.parametrize("name", OTHER_NOTEBOOKS)
def test_notebook_executes_without_an_error(name):
    notebook = _executed(name)
    errors = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors


@pytest.mark.slow
def test_harness_logs_notebook_finds_the_simulated_difference_and_recovers_the_truth():
    verdict = _printed_verdict(_executed("harness_logs"), "truth check: ")
    assert verdict["glrt_rejects_at_1_percent"] and verdict["glrt_p"] < 0.01
    assert verdict["within_3_se"] == {"model effect (tuned - base)": True, "five shots - none": True,
                                      "item SD": True, "seed SD": True}
    assert verdict["posterior_converged"]


def test_committed_notebooks_are_executed():
    for name in ALL_NOTEBOOKS:
        notebook = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        code = [cell for cell in notebook.cells if cell.cell_type == "code"]
        assert code and all(cell.get("execution_count") for cell in code), f"{name}.ipynb is not committed executed"
        errors = [o for cell in code for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"{name}.ipynb holds an error output"


@pytest.mark.slow
def test_random_slopes_notebook_agrees_with_lme4():
    assert _printed_verdict(_executed("random_slopes"), "lme4 check: ") == {"criterion_no_worse": True,
                                                                          "within_1e-4": True, "glrt_df": 2}
