"""The figures of a model check, each built without pyplot and with mathtext off (labels are user strings)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import ndtri

from ..plots import _figure, _literal_text
from .run import binned_means


@_literal_text
def panels(draws: list, title: str):
    """Several figures of a check side by side, two per row.

    Parameters
    ----------
    draws : list of callable
        Functions drawing one figure each on the axes they are given.
    title : str
        The figure's title.

    Returns
    -------
    matplotlib.figure.Figure
        The figures as panels of one.
    """
    from matplotlib.figure import Figure

    rows = (len(draws) + 1) // 2
    figure = Figure(figsize=(10.0, 4.2 * rows), layout="constrained")
    axes = figure.subplots(rows, 2, squeeze=False).ravel()
    for draw, ax in zip(draws, axes):
        draw(ax)
    for ax in axes[len(draws):]:
        ax.set_visible(False)
    figure.suptitle(title)
    return figure


@_literal_text
def residuals_against_fitted(fitted: np.ndarray, residuals: np.ndarray, title: str, ylabel: str, ax=None):
    """Residuals against fitted values, with the mean residual of each tenth of the fitted values.

    Parameters
    ----------
    fitted : numpy.ndarray
        The fitted values.
    residuals : numpy.ndarray
        The residuals.
    title : str
        The figure's title.
    ylabel : str
        What the residuals are.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure's).

    Returns
    -------
    matplotlib.figure.Figure
        The scatter, the binned means and the zero line.
    """
    figure, ax = _axes(ax, 6.0, 4.0)
    ax.scatter(fitted, residuals, s=6, alpha=0.35, color="#1f4e79", linewidths=0)
    centres, means = binned_means(fitted, residuals)
    ax.plot(centres, means, color="#c0392b", marker="o", label="mean residual per tenth of the fitted values")
    ax.axhline(0.0, color="black", lw=0.8)
    _label(ax, "fitted value", ylabel, title, "best")
    return figure


@_literal_text
def uniform_qq(residuals: np.ndarray, band: np.ndarray, title: str, ax=None):
    """Q–Q plot of quantile residuals against U(0, 1), with the simulated data sets' 95 % band.

    Parameters
    ----------
    residuals : numpy.ndarray
        The observed quantile residuals.
    band : numpy.ndarray
        2 × n: the simulated data sets' 2.5 % and 97.5 % points of each ordered residual.
    title : str
        The figure's title.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure's).

    Returns
    -------
    matplotlib.figure.Figure
        Ordered residuals against uniform quantiles, the band of the simulated ones at each order.
    """
    figure, ax = _axes(ax, 4.6, 4.4)
    n = len(residuals)
    expected = (np.arange(1, n + 1) - 0.5) / n
    ax.fill_between(expected, band[0], band[1], color="#d9d9d9", label="95 % of simulated data sets")
    ax.plot(expected, np.sort(residuals), color="#1f4e79", lw=1.4, label="observed")
    ax.plot([0, 1], [0, 1], color="black", lw=0.8)
    _label(ax, "uniform quantile", "quantile residual", title, "upper left")
    return figure


@_literal_text
def level_effects_qq(table: pd.DataFrame, title: str, ax=None):
    """Normal Q–Q plot of the standardized level effects of every term of a grouping factor.

    Parameters
    ----------
    table : pandas.DataFrame
        ``group``, ``term``, ``level`` and ``z`` (each level effect over its SD under the model).
    title : str
        The figure's title.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure's).

    Returns
    -------
    matplotlib.figure.Figure
        One line of points per term, against standard normal quantiles.
    """
    figure, ax = _axes(ax, 4.6, 4.4)
    for term, rows in table.groupby("term", sort=False):
        z = np.sort(rows["z"].to_numpy())
        expected = ndtri((np.arange(1, len(z) + 1) - 0.5) / len(z))
        ax.plot(expected, z, marker="o", ms=3, lw=0, label=str(term))
    limit = np.nanmax(np.abs(ax.get_xlim() + ax.get_ylim()))
    ax.plot([-limit, limit], [-limit, limit], color="black", lw=0.8)
    _label(ax, "standard normal quantile", "standardized level effect", title, "upper left")
    return figure


@_literal_text
def loo_pit_ecdf(values: np.ndarray, title: str, ax=None):
    """The empirical CDF of the LOO-PIT values minus the uniform CDF, with the 95 % band of the KS test.

    Parameters
    ----------
    values : numpy.ndarray
        The LOO-PIT values.
    title : str
        The figure's title.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure's).

    Returns
    -------
    matplotlib.figure.Figure
        ECDF(u) − u against u; the curve leaves the band where the KS test rejects uniformity at 5 %.
    """
    from scipy.stats import kstwo

    figure, ax = _axes(ax, 6.0, 4.0)
    n = len(values)
    ordered = np.sort(values)
    bound = float(kstwo.isf(0.05, n))
    ax.axhspan(-bound, bound, color="#d9d9d9", label="95 % band of the KS test")
    steps = np.arange(n + 1) / n        # the ECDF just before and just after each value; linear in u between
    u = np.concatenate([[0.0], np.repeat(ordered, 2), [1.0]])
    ecdf = np.concatenate([[0.0], np.column_stack([steps[:-1], steps[1:]]).ravel(), [1.0]])
    ax.plot(u, ecdf - u, color="#1f4e79", lw=1.4, label="LOO-PIT")
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xlim(0.0, 1.0)
    _label(ax, "LOO-PIT value u", "ECDF(u) − u", title, "best")
    return figure


@_literal_text
def predictive_density(observed: np.ndarray, simulated: np.ndarray, label: str, title: str, ax=None):
    """ArviZ's posterior predictive check: densities of simulated data sets over the observed one.

    Parameters
    ----------
    observed : numpy.ndarray
        The observed values.
    simulated : numpy.ndarray
        n × S simulated values.
    label : str
        What the values are.
    title : str
        The figure's title.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure's).

    Returns
    -------
    matplotlib.figure.Figure
        ``arviz.plot_ppc`` of the values.
    """
    import arviz as az

    figure, ax = _axes(ax, 6.0, 4.0)
    data = az.from_dict(posterior_predictive={"values": simulated.T[None]}, observed_data={"values": observed})
    az.plot_ppc(data, ax=ax, num_pp_samples=min(100, simulated.shape[1]), random_seed=0, legend=True)
    ax.set_xlabel(label)
    ax.set_title(title)
    return figure


def _axes(ax, width: float, height: float):
    """The figure and axes to draw on: ``ax`` and its figure, or a new figure of this size and its axes."""
    return _figure(width, height) if ax is None else (ax.figure, ax)


def _label(ax, xlabel: str, ylabel: str, title: str, legend_loc: str) -> None:
    """The axes' labels, title and small legend."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc=legend_loc, fontsize="small")
