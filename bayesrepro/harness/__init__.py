"""Readers of the logs evaluation harnesses write (lm-evaluation-harness, Inspect AI) into one long table.

One row per run, task, item (and epoch, for Inspect) with the columns
``item``, ``task``, ``model``, ``run``, the run's settings, its model
arguments and one column per metric under the harness's own name. The
formats are parsed directly (the harnesses themselves are not needed):
see ``lm_eval.py`` and ``inspect_log.py`` for what is read from where,
``importer.py`` for what is checked on the way (each run's means against
the harness's own aggregates: ``aggregates.py``).
"""

from .importer import HARNESSES, ImportSummary, import_logs, read_logs

__all__ = ["HARNESSES", "ImportSummary", "import_logs", "read_logs"]
