"""Progress of long work: shown where someone watches (a terminal, a notebook) or when asked, never otherwise."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bayesrepro.bayes.sampling import SamplingSettings

ROOT = Path(__file__).resolve().parents[1]
SMALL_TER = ["kreutzer_ter", "--where", "sentence_id < '11'", "--formula", "ter ~ system + (1|sentence_id)"]
QUICK = ["--bootstrap", "100", "--draws", "100", "--tune", "100", "--chains", "2", "--allow-unconverged"]


def test_progress_is_shown_when_asked_and_by_default_only_where_someone_watches():
    assert SamplingSettings(progress=True).show_progress
    assert not SamplingSettings(progress=False).show_progress
    assert not SamplingSettings().show_progress  # under pytest stderr is no terminal and there is no notebook


def _compare(*extra: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "bayesrepro", "compare", *SMALL_TER, *QUICK, *extra],
                            capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            timeout=900)
    assert result.returncode in (0, 3), result.stderr  # 3: a quick run may not converge
    return result


@pytest.fixture(scope="module")
def with_progress():
    return _compare("--progress")


def test_compare_shows_the_bootstrap_and_the_sampling_when_asked(with_progress):
    assert "bootstrap [" in with_progress.stderr
    assert "bayesrepro: sampling: " in with_progress.stderr


def test_compare_is_quiet_on_a_pipe_unless_asked():
    stderr = _compare().stderr
    assert "bootstrap [" not in stderr and "sampling" not in stderr
