"""One fit type for both engines: what ``MixedFit`` gives a Gaussian LMM and a binary GLMM alike."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrepro.frequentist.fit_result import MixedFit
from bayesrepro.frequentist.glmm import fit_glmm
from bayesrepro.frequentist.lmm import fit_lmm
from bayesrepro.reliability import RESIDUAL
from bayesrepro.simulate import binary_grid

DYESTUFF = Path(__file__).parent / "data" / "dyestuff.csv.gz"


@pytest.fixture(scope="module")
def gaussian():
    return fit_lmm("Yield ~ 1 + (1|Batch)", pd.read_csv(DYESTUFF), method="ml")


@pytest.fixture(scope="module")
def binary():
    return fit_glmm("correct ~ system + (1|item) + (1|system:seed)", binary_grid(items=60, seeds=3, prompts=2,
                                                                                  random_state=4))


def test_components_end_with_the_residual_of_each_family(gaussian, binary):
    assert isinstance(gaussian, MixedFit) and isinstance(binary, MixedFit)
    assert gaussian.components == gaussian.variances   # a Gaussian fit estimates its residual
    assert list(binary.components) == [*binary.variances, RESIDUAL]
    assert binary.components[RESIDUAL] == pytest.approx(np.pi**2 / 3)   # the logit link's latent residual


def test_phi_is_the_object_share_of_the_components(gaussian, binary):
    assert gaussian.phi("Batch") == pytest.approx(gaussian.variances["Batch"] / sum(gaussian.variances.values()))
    total = sum(binary.variances.values()) + np.pi**2 / 3
    assert binary.phi("item") == pytest.approx(binary.variances["item"] / total)
    assert 0 < binary.phi_observed("item") < binary.phi("item")


def test_parameters_count_the_residual_only_where_it_is_estimated(gaussian, binary):
    assert gaussian.n_parameters == 1 + 1 + 1          # intercept, θ of Batch, residual variance
    assert binary.n_parameters == 3 + 2                # intercept and two system effects, θ of item and system:seed


def test_varcorr_has_a_residual_row_for_the_gaussian_fit_only(gaussian, binary):
    assert [row["group"] for row in gaussian.varcorr()] == ["Batch", RESIDUAL]
    assert [row["group"] for row in binary.varcorr()] == ["item", "system:seed"]
    assert gaussian.varcorr()[-1]["var1"] is None


def test_tables_and_dicts_share_their_parts(gaussian, binary):
    shared = {"formula", "method", "n_obs", "variances", "fixed_effects", "loglik", "converged", "boundary",
              "random_effects"}
    assert set(gaussian.to_dict()) == shared | {"reml_criterion"}
    assert set(binary.to_dict()) == shared | {"family", "link", "scale", "approximation", "n_cells", "latent_residual"}
    gaussian_text, binary_text = str(gaussian).splitlines(), str(binary).splitlines()
    assert gaussian_text[0] == "Linear mixed model fit by ML: Yield ~ 1 + (1|Batch)"
    assert gaussian_text[2].startswith("  deviance: ")
    assert binary_text[1].startswith(f"  observations: {binary.n_obs} in {binary.n_cells} binomial cells; ")
    assert binary_text[2].startswith("  log-likelihood: ")
    assert "Fixed effects (logit scale):" in binary_text and "Fixed effects:" in gaussian_text
