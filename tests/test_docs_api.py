"""The API reference documents every name in ``bayesrepro.__all__`` (the build itself runs in CI)."""

import importlib.util
import types
from pathlib import Path

import pytest

import bayesrepro

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def conf():
    spec = importlib.util.spec_from_file_location("docs_conf", DOCS / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def documented(lines):
    return [line.split("::")[1].strip() for line in lines if line.startswith(".. auto")]


def test_each_kind_of_name_gets_its_directive(conf):
    package = types.ModuleType("pkg")

    class Failure(ValueError):
        """A failure."""

    class Thing:
        """A thing."""

    package.Failure, package.Thing, package.make, package.LIMIT = Failure, Thing, lambda: None, 3
    package.__all__ = ["make", "Thing", "Failure", "LIMIT"]
    assert conf.api_entries(package) == [
        ".. autofunction:: pkg.make", "",
        ".. autoclass:: pkg.Thing", "   :members:", "   :undoc-members:", "",
        ".. autoexception:: pkg.Failure", "",
        ".. autodata:: pkg.LIMIT", "",
    ]


def test_a_package_without_public_names_documents_nothing(conf):
    assert conf.api_entries(types.ModuleType("empty")) == []


def test_the_reference_lists_the_packages_public_names(conf):
    assert documented(conf.api_entries(bayesrepro)) == [f"bayesrepro.{name}" for name in
                                                         getattr(bayesrepro, "__all__", [])]
    assert ".. public-api:: bayesrepro" in (DOCS / "api.rst").read_text()
    assert "-m sphinx -W" in (DOCS / "build.sh").read_text()


def test_a_missing_docstring_or_parameter_is_validated(conf):
    # the build turns these into errors; here the check set must hold the completeness checks
    assert conf.numpydoc_validation_checks >= {"all"}
    assert not conf.numpydoc_validation_checks & {"GL08", "PR01", "PR02", "PR07", "RT01", "RT03"}


@pytest.mark.parametrize("name", ["bayesrepro.instruments.agreement.krippendorff_alpha", "bayesrepro.data.read_table",
                                  "bayesrepro.datasets.load_dataset", "bayesrepro.errors.BayesreproError"])
def test_the_names_meant_for_the_public_api_pass_the_reference_checks(conf, name):
    validate = pytest.importorskip("numpydoc.validate", reason="numpydoc comes with the docs extra")
    excluded = conf.numpydoc_validation_checks - {"all"}
    errors = [f"{code}: {message}" for code, message in validate.validate(name)["errors"] if code not in excluded]
    assert errors == []
