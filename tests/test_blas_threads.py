"""BLAS threads: one per process, more only for a large dense system and only on cores idle at that moment."""

import os
import sys
import types

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import ThreadpoolController

from bayesrepro import runtime
from bayesrepro.datasets import load_dataset
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist import deviance


def blas_threads() -> int:
    # the class as imported here, which the count of searches below does not see
    return max(pool["num_threads"] for pool in ThreadpoolController().info() if pool["user_api"] == "blas")


@pytest.mark.parametrize("idle, limit, expected", [(0, 4, 1), (1, 4, 2), (5, 4, 4), (3, 1, 1)])
def test_threads_follow_the_idle_cores_at_each_call(monkeypatch, idle, limit, expected):
    monkeypatch.setattr(runtime, "_idle_cores", lambda: idle)
    with runtime.numerical_work():
        with runtime.idle_core_threads(limit):
            inside = blas_threads()
        assert blas_threads() == 1
    assert inside == expected


def count_searches(monkeypatch) -> list:
    import threadpoolctl

    searches = []

    class Counted(threadpoolctl.ThreadpoolController):
        def __init__(self):
            searches.append(1)
            super().__init__()

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counted)
    monkeypatch.setattr(runtime, "_controller", None)
    return searches


def test_the_blas_libraries_are_searched_for_again_only_after_an_import(monkeypatch):
    searches = count_searches(monkeypatch)
    with runtime.numerical_work():
        with runtime.numerical_work():
            assert blas_threads() == 1
        assert len(searches) == 1
        # a module imported since the last search (it could have brought a BLAS of its own)
        monkeypatch.setitem(sys.modules, "bayesrepro_test_imported_since", types.ModuleType("imported_since"))
        with runtime.numerical_work():
            assert blas_threads() == 1
        assert len(searches) == 2
    with runtime.numerical_work():
        assert blas_threads() == 1
    assert len(searches) == 2


def test_a_block_inside_more_threads_sets_one_thread_again(monkeypatch):
    monkeypatch.setattr(runtime, "_idle_cores", lambda: 3)
    with runtime.numerical_work():
        with runtime.idle_core_threads(4):
            assert blas_threads() == 4
            with runtime.numerical_work():
                assert blas_threads() == 1
            assert blas_threads() == 4
        assert blas_threads() == 1


def test_idle_cores_are_counted_from_the_kernels_running_tasks():
    # this process is running while it reads the count: at most every other core of it is idle
    assert 0 <= runtime._idle_cores() <= len(os.sched_getaffinity(0)) - 1


def test_only_a_large_dense_system_asks_for_more_than_one_thread():
    small = build_model_frame("ter ~ system + (1|sentence_id) + (1|replication)", load_dataset("kreutzer_ter"))
    assert deviance.ProfiledDeviance(small.stats(), reml=True).blas_threads == 1
    rng = np.random.default_rng(1)
    # two crossed factors of 600 levels each: the second one's dense block has 600 rows
    data = pd.DataFrame({"a": rng.integers(0, 600, 6000).astype(str), "b": rng.integers(0, 600, 6000).astype(str),
                         "y": rng.normal(size=6000)})
    large = build_model_frame("y ~ 1 + (1|a) + (1|b)", data)
    assert deviance.ProfiledDeviance(large.stats(), reml=True).blas_threads == deviance.MAX_BLAS_THREADS


def test_a_dense_system_past_the_threaded_factors_limit_takes_one_thread(monkeypatch):
    # OpenBLAS's threaded Cholesky factor crashes the process on large orders (docs/guide/native_crashes.md)
    monkeypatch.setattr(runtime, "_idle_cores", lambda: 7)
    limit = deviance.THREADED_ORDER_LIMIT
    assert deviance.dense_threads(deviance.PARALLEL_BLAS_SIZE - 1) == 1
    assert deviance.dense_threads(deviance.PARALLEL_BLAS_SIZE) == deviance.dense_threads(limit - 1) == 4
    assert deviance.dense_threads(limit) == deviance.dense_threads(10 * limit) == 1
    with runtime.idle_core_threads(4):   # a Python caller's own threads, no numerical_work around the criterion
        with deviance.dense_blas(limit - 1):
            assert blas_threads() == 4
        with deviance.dense_blas(limit):
            assert blas_threads() == 1
        assert blas_threads() == 4


FROM_START = """
import sys
import threadpoolctl
searches = []
class Counted(threadpoolctl.ThreadpoolController):
    def __init__(self):
        searches.append(1)
        super().__init__()
threadpoolctl.ThreadpoolController = Counted
from bayesrepro import runtime
runtime.blas_single_threaded_from_start()
import numpy, scipy.linalg
def threads():
    return sorted({pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"})
with runtime.numerical_work():
    with runtime.one_blas_thread():
        before = len(searches)
runtime._idle_cores = lambda: 3
with runtime.numerical_work():
    with runtime.idle_core_threads(2):
        raised = threads()
        with runtime.one_blas_thread():
            inner = threads()
print(before, raised, inner, threads())
"""


@pytest.mark.parametrize("user_setting, searches_before", [(None, 0), ("1", 1)])
def test_a_process_that_starts_single_threaded_searches_only_to_raise_the_threads(user_setting, searches_before):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in runtime.BLAS_THREAD_VARIABLES}
    if user_setting is not None:
        env["OPENBLAS_NUM_THREADS"] = user_setting
    run = subprocess.run([sys.executable, "-c", FROM_START], capture_output=True, text=True, env=env, check=True)
    assert run.stdout.split() == [str(searches_before), "[2]", "[1]", "[1]"]


def test_nothing_is_set_once_numpy_is_loaded(monkeypatch):
    for name in runtime.BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    runtime.blas_single_threaded_from_start()
    assert not runtime._single_threaded
    assert not any(name in os.environ for name in runtime.BLAS_THREAD_VARIABLES)
