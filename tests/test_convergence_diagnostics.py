"""A diagnostic that is not defined never passes for convergence, and the package's own numerical warnings are
never silenced."""

import warnings

import numpy as np
import pytest

from bayesrepro.bayes.diagnostics import diagnose, require_convergence
from bayesrepro.bayes.draws import Draws
from bayesrepro.bayes.priors import default_priors
from bayesrepro.design import model_frame
from bayesrepro.errors import BayesreproError, NotConvergedError
from bayesrepro.runtime import numerical_work, one_line_warning


def posterior(constant: str | None = None, chains: int = 4, draws: int = 1000):
    rng = np.random.default_rng(1)
    values = {name: rng.normal(1, 0.1, (chains, draws)) for name in ("sigma", "1|item_sigma", "phi")}
    if constant:
        values[constant] = np.full((chains, draws), 1e-300)   # a sampler that never moved
    return Draws(values, stats={"diverging": np.zeros((chains, draws), bool)})


def test_a_well_mixed_posterior_converges():
    diagnostics = diagnose(posterior(), ["sigma", "1|item_sigma", "phi"])
    assert diagnostics.converged and diagnostics.undefined == []


def test_an_undefined_r_hat_is_not_converged_and_names_its_component():
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # and says so without a raw warning
        diagnostics = diagnose(posterior(constant="1|item_sigma"), ["sigma", "1|item_sigma", "phi"])
    assert np.isnan(diagnostics.r_hat_max) and not diagnostics.converged
    assert diagnostics.undefined == ["1|item_sigma"]
    assert diagnostics.as_dict()["converged"] is False
    with pytest.raises(NotConvergedError, match=r"R-hat and ESS are not defined for 1\|item_sigma"):
        require_convergence(diagnostics, allow_unconverged=False)


def test_a_vector_variable_with_one_undefined_element_is_not_converged():
    draws = posterior()
    values = np.random.default_rng(2).normal(size=(4, 1000, 3))
    values[:, :, 1] = 0.5
    draws.add("variance", values, ("component",), {"component": ["a", "b", "c"]})
    assert not diagnose(draws, ["sigma", "variance"]).converged


def test_prior_scales_far_from_the_scores_are_refused():
    frame = model_frame("ter ~ system + (1|sentence_id)", "kreutzer_ter")
    spec = default_priors(frame)
    sd = spec.residual_sigma
    assert spec.with_overrides({"sentence_id": sd * 1e-5}).group_sigma["sentence_id"] == pytest.approx(sd * 1e-5)
    for value in (1e-300, sd * 1e-7, sd * 1e7, 1e300):
        with pytest.raises(BayesreproError, match=r"--prior-scale sentence_id=.* must lie from .* within a factor of "
                                                  r"1e\+06 of the SD of the scores"):
            spec.with_overrides({"sentence_id": value})
    with pytest.raises(BayesreproError, match="--prior-scale concentration=1e-05 must lie from 0.01 to 100"):
        default_priors(frame, "r2d2").with_overrides({"concentration": 1e-5})


def _warn_from(module: str):
    """Evaluate log(-1) as code of ``module`` would: NumPy attributes the warning to that module."""
    exec(compile("np.log(-1.0)", f"<{module}>", "exec"), {"__name__": module, "np": np})


def test_inside_numerical_work_a_library_warning_is_silenced_and_ours_is_not():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with numerical_work():
            _warn_from("pytensor.tensor")
            _warn_from("bayesrepro.reliability")
    assert len(caught) == 1 and caught[0].filename == "<bayesrepro.reliability>"


def test_the_command_line_shows_a_warning_in_one_line(capsys):
    one_line_warning(RuntimeWarning("invalid value\nencountered in log"), RuntimeWarning, "/x/bayesrepro/reliability.py", 12)
    err = capsys.readouterr().err
    assert err == ("bayesrepro: warning: invalid value encountered in log (RuntimeWarning in reliability.py:12)\n")
