"""The fast exact path and Bambi's own model sample the same posterior.

Criterion: for every SD and for φ, the 5 %, 50 % and 95 % posterior
quantiles of the two runs differ by at most 4 × the combined Monte-Carlo
standard error, sqrt(MCSE_fast² + MCSE_bambi²), each MCSE from
``arviz.mcse(method="quantile")``. With 3·(k+1) comparisons per model the
chance that one honest difference exceeds 4 combined MCSEs is below 0.2 %.
"""

import pytest

from bayesrepro.bayes import fit_bayes
from bayesrepro.bayes.diagnostics import quantile_agreement
from bayesrepro.datasets import load_dataset

ANNOTATION = (
    "score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater) + (1|sentence:occasion) + (1|rater:occasion)"
)
TER = "ter ~ system + (1|sentence_id)"


def _agree(formula, data, draws, noncentered, target_accept=0.9, object=None):
    common = dict(object=object, draws=draws, tune=draws, chains=4, allow_unconverged=True, target_accept=target_accept, effects=False)
    bambi = fit_bayes(formula, data, backend="bambi", seed=5, bambi_noncentered=noncentered, **common)
    fast = fit_bayes(formula, data, backend="fast", seed=6, **common)
    assert fast.diagnostics.converged, fast.diagnostics.line()
    # Bambi's model may have divergences on few-level facets; its SDs must still have mixed
    assert bambi.diagnostics.r_hat_max <= 1.01 and bambi.diagnostics.ess_bulk_min >= 400, bambi.diagnostics.line()
    table = quantile_agreement(bambi.idata, fast.idata, list(fast.diagnostics.table.index), k=4.0)
    assert table["agree"].all(), table.to_string()
    return table


def test_fast_path_matches_bambi_on_a_slice_of_kreutzer_ter():
    data = load_dataset("kreutzer_ter")
    data = data[data["sentence_id"].isin(data["sentence_id"].cat.categories[:60])]
    # many observations per level: Bambi's centred parameterisation mixes well here
    _agree(TER, data, draws=500, noncentered=False)


def test_finite_population_variance_of_the_items_is_the_same_from_both_backends():
    data = load_dataset("kreutzer_ter")
    data = data[data["sentence_id"].isin(data["sentence_id"].cat.categories[:60])]
    common = dict(draws=500, tune=500, chains=4, allow_unconverged=True, target_accept=0.9)
    bambi = fit_bayes(TER, data, backend="bambi", seed=5, bambi_noncentered=False, **common)
    fast = fit_bayes(TER, data, backend="fast", seed=6, effects=True, **common)
    for fit in (bambi, fast):  # Bambi draws the item effects itself, the fast path from their exact conditional
        fit.idata.posterior["fp_items"] = fit.idata.posterior["fp_variance"].sel(component="sentence_id")
    table = quantile_agreement(bambi.idata, fast.idata, ["fp_items"], k=4.0)
    assert table["agree"].all(), table.to_string()


@pytest.mark.ondemand   # the slice of the same data runs in the default suite
def test_fast_path_matches_bambi_on_kreutzer_ter():
    _agree(TER, load_dataset("kreutzer_ter"), draws=1000, noncentered=False)


@pytest.mark.parametrize("mode", [pytest.param("Marking", marks=pytest.mark.slow),
                                  pytest.param("Post Edit", marks=pytest.mark.ondemand)])   # the same model
def test_fast_path_matches_bambi_on_each_annotation_mode(mode):
    data = load_dataset("kreutzer_annotation")
    _agree(ANNOTATION, data[data["mode"] == mode], draws=2000, noncentered=True, target_accept=0.95,
           object="sentence")
