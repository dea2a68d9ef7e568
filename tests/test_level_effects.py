"""``Fit.level_effects`` without R: the closed form of a balanced one-way design, the same effects from every core
and route that computes them, and the refusals."""

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist import general_lmm, level_effects
from bayesrepro.simulate import simulate_crowd


def one_way(seed=0, groups=12, n=7):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(groups), n)
    y = 3.0 + rng.normal(0, 1.0, groups)[g] + rng.normal(0, 2.0, len(g))
    return pd.DataFrame({"g": [f"g{k}" for k in g], "y": y})


def crossed(seed=1, systems=15, items=40, binary=False):
    rng = np.random.default_rng(seed)
    table = pd.DataFrame([(f"s{s}", f"i{i}") for s in range(systems) for i in range(items)], columns=["system", "item"])
    table = table.sample(frac=0.7, random_state=seed).reset_index(drop=True)
    eta = (rng.normal(0, 0.5, systems)[table.system.str[1:].astype(int)]
           + rng.normal(0, 1.0, items)[table.item.str[1:].astype(int)])
    table["acc"] = rng.binomial(1, 1 / (1 + np.exp(-eta))) if binary else eta + rng.normal(0, 0.7, len(table))
    return table


def test_balanced_one_way_blups_have_their_closed_form():
    data = one_way()
    fit = br.Model("y ~ 1 + (1|g)", data).fit()
    sigma_a2, sigma2 = fit.variances["g"], fit.variances["Residual"]
    n = 7
    shrinkage = n * sigma_a2 / (n * sigma_a2 + sigma2)
    means = data.groupby("g")["y"].mean()
    effects = fit.level_effects().set_index("level")
    assert effects.loc[means.index, "estimate"].to_numpy() == pytest.approx(
        shrinkage * (means - data["y"].mean()).to_numpy(), abs=1e-10)
    assert effects["sd"].to_numpy() == pytest.approx(np.sqrt(sigma_a2 * sigma2 / (n * sigma_a2 + sigma2)), rel=1e-10)
    z = 1.959963984540054
    assert effects["high"].to_numpy() == pytest.approx((effects.estimate + z * effects.sd).to_numpy(), rel=1e-12)
    assert list(effects.columns) == ["group", "term", "estimate", "sd", "low", "high"]
    assert set(effects.term) == {"(Intercept)"}


def test_dense_and_sparse_cores_give_the_same_effects(monkeypatch):
    data = crossed()
    dense_fit = br.Model("acc ~ 1 + (1|system) + (1|item)", data, object="system").fit()
    monkeypatch.setattr(general_lmm, "DENSE_SCHUR_LEVELS", 0)
    sparse_model = br.Model("acc ~ 1 + (1|system) + (1|item)", data, object="system")
    sparse_fit = sparse_model.fit()
    assert any("sparse core" in note for note in sparse_fit.notes)
    dense, sparse = dense_fit.level_effects(), sparse_fit.level_effects()
    scale = np.sqrt(dense_fit.variances["item"])
    assert np.max(np.abs(dense.estimate - sparse.estimate)) < 1e-5 * scale
    assert np.max(np.abs(dense.sd - sparse.sd)) < 1e-5 * scale
    # at one fit, the grouped sums and the rows' sparse design give the same effects to rounding
    frame, engine_fit = sparse_model.frame, sparse_fit.engine_fit
    from_sums = level_effects._sums_effects(frame, engine_fit, iterative=False)
    from_rows = level_effects._row_effects(frame, engine_fit)
    for a, b in zip(from_sums.terms, from_rows.terms):
        order = b.levels.get_indexer(a.levels)
        assert a.estimate == pytest.approx(b.estimate[order], abs=1e-10)
        assert a.sd == pytest.approx(b.sd[order], abs=1e-10)


def test_selected_inverse_of_a_crowd_equals_the_dense_inverse():
    """Large enough for the sparse factor and its selected inverse (over 800 raters after the items are eliminated)."""
    from bayesrepro.frequentist.conditional_modes import PenalisedFactor
    import scipy.sparse as sp

    table, _ = simulate_crowd(1800, 700, 1400, skew=0.0, random_state=3)
    model = br.Model("score ~ 1 + (1|item) + (1|rater)", table, object="item")
    fit = model.fit()
    effects = fit.level_effects()
    frame = model.frame
    design_codes = [g.codes for g in frame.groups]
    sizes = [g.n_levels for g in frame.groups]
    z = sp.hstack([sp.csc_matrix((np.ones(len(c)), (np.arange(len(c)), c)), shape=(len(c), s))
                   for c, s in zip(design_codes, sizes)]).tocsc()
    sigma2 = fit.variances["Residual"]
    lam = np.repeat(np.sqrt([fit.variances[g.name] / sigma2 for g in frame.groups]), sizes)
    a = (z @ sp.diags(lam)).T @ (z @ sp.diags(lam)) + sp.identity(sum(sizes))
    dense_sd = np.sqrt(sigma2 * lam ** 2 * np.diag(np.linalg.inv(a.toarray())))
    ours = np.concatenate([effects[effects.group == g.name].set_index("level").loc[g.levels, "sd"]
                           for g in frame.groups])
    assert ours == pytest.approx(dense_sd, rel=1e-9)
    assert PenalisedFactor(a.tocsc(), np.arange(sizes[0])).factor.inverse_at is not None


def test_binary_cells_and_rows_give_the_same_modes(monkeypatch):
    data = crossed(seed=4, binary=True)
    model = br.Model("acc ~ 1 + (1|system) + (1|item)", data, object="system")
    fit = model.fit()
    cells = fit.level_effects()
    from bayesrepro.frequentist import cell_products

    monkeypatch.setattr(cell_products, "coupling_beyond_cells", lambda sizes: True)
    rows = level_effects.effects_table(level_effects.fitted_effects(model.frame, model.family, fit.engine_fit),
                                       ["system", "item"], 0.95)
    merged = cells.merge(rows, on=["group", "term", "level"])
    assert len(merged) == len(cells)
    assert np.max(np.abs(merged.estimate_x - merged.estimate_y)) < 1e-8
    assert np.max(np.abs(merged.sd_x - merged.sd_y)) < 1e-8
    assert np.all(cells.sd > 0) and np.all(cells.sd < np.sqrt(fit.variances["item"]))


def test_moment_estimates_give_modes_without_conditional_sds():
    table, _ = simulate_crowd(4000, 1500, 600, skew=1.0, random_state=5)
    model = br.Model("score ~ 1 + (1|item) + (1|rater)", table, object="item")
    fit = model.fit()
    exact = level_effects._sums_effects(model.frame, fit.engine_fit, iterative=False)
    iterative = level_effects._sums_effects(model.frame, fit.engine_fit, iterative=True)
    for a, b in zip(exact.terms, iterative.terms):
        assert b.estimate == pytest.approx(a.estimate, abs=1e-8)
        assert np.isnan(b.sd).all()
    assert iterative.notes == (level_effects.MOMENTS_NOTE,)


def test_a_fit_without_an_exact_factor_says_why_its_sds_are_missing():
    table, _ = simulate_crowd(6000, 2500, 2500, skew=0.0, random_state=5)
    fit = br.Model("score ~ 1 + (1|item) + (1|rater)", table, object="item", max_memory="64M").fit()
    assert not fit.engine_fit.exact   # Monte Carlo traces (or moments) where the exact factor passes the limit
    effects = fit.level_effects()
    assert effects.sd.isna().all() and effects.estimate.notna().all()
    assert effects.attrs["notes"] == [level_effects.MOMENTS_NOTE]


def test_level_effects_of_one_group_and_refusals():
    data = crossed()
    fit = br.Model("acc ~ 1 + (1|system) + (1|item)", data, object="system").fit()
    table = fit.level_effects("system", prob=0.5)
    assert set(table.group) == {"system"} and len(table) == data.system.nunique()
    assert np.all(table.high - table.low < 2 * table.sd)
    with pytest.raises(BayesreproError, match="group='seed' is not a grouping factor"):
        fit.level_effects("seed")
    with pytest.raises(BayesreproError, match="prob"):
        fit.level_effects(prob=1.5)


def test_slope_terms_give_one_row_per_level_and_column():
    rng = np.random.default_rng(8)
    data = pd.DataFrame({"s": np.repeat([f"s{k}" for k in range(20)], 10), "x": np.tile(np.arange(10.0), 20)})
    data["y"] = 1 + rng.normal(0, 1, 20)[np.repeat(np.arange(20), 10)] + (0.3 + rng.normal(0, 0.2, 20)[
        np.repeat(np.arange(20), 10)]) * data.x + rng.normal(0, 0.5, len(data))
    fit = br.Model("y ~ x + (x|s)", data).fit()
    table = fit.level_effects()
    assert list(table.term.unique()) == ["(Intercept)", "x"] and len(table) == 40
    assert np.all(table.sd > 0)


def test_entries_of_the_inverse_by_solves_where_the_factor_has_no_selected_inverse(monkeypatch):
    import dataclasses

    import scipy.sparse as sp

    from bayesrepro.frequentist import conditional_modes
    from bayesrepro.frequentist.conditional_modes import PenalisedFactor

    rng = np.random.default_rng(0)
    z = sp.random(300, 40, density=0.05, random_state=1, format="csc")
    a = (z.T @ z + sp.identity(40)).tocsc()
    factor = PenalisedFactor(a, np.zeros(0, dtype=int))
    factor.factor = dataclasses.replace(factor.factor, inverse_at=None)
    rows, cols = rng.integers(0, 40, 50), rng.integers(0, 40, 50)
    monkeypatch.setattr(conditional_modes, "SOLVE_BATCH", 7)   # several batches
    assert factor.inverse_at(rows, cols) == pytest.approx(np.linalg.inv(a.toarray())[rows, cols], abs=1e-12)
