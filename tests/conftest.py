import pytest

from bayesrepro.datasets import load_dataset


@pytest.fixture(scope="session")
def ter():
    return load_dataset("kreutzer_ter")


@pytest.fixture(scope="session")
def annotation():
    return load_dataset("kreutzer_annotation")
