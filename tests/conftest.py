import pytest

from bayesrepro.datasets import load_dataset


@pytest.fixture(scope="session")
def ter():
    return load_dataset("kreutzer_ter")


@pytest.fixture(scope="session")
def annotation():
    return load_dataset("kreutzer_annotation")


@pytest.fixture(scope="session")
def harness_grid(tmp_path_factory):
    """lm-eval logs of models × seeds × few-shot settings with known effects (bayesrepro.harness.simulate)."""
    from bayesrepro.harness.simulate import simulate_grid

    return simulate_grid(tmp_path_factory.mktemp("harness_grid"), seeds=(1, 2, 3), items=60, tasks=2)
