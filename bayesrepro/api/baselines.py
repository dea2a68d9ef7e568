"""``br.baselines``: the field's usual error bars of 0/1 scores beside the binary GLMM, as ``bayesrepro baselines``
reports them."""

from __future__ import annotations

from .display import Result, public


class Baselines(Result):
    """The field's error bars of 0/1 scores per system and pair of systems, and optionally the binary GLMM's.

    Accuracies with naive and clustered intervals, paired differences and McNemar's test; with a formula, the
    binary GLMM's likelihood-ratio test and contrasts of the same systems. Returned by ``baselines``.

    Parameters
    ----------
    baselines : BinaryBaselines
        The error bars.
    comparison : Comparison or None
        The GLMM's test, means and contrasts, when a formula was given.

    Attributes
    ----------
    systems : pandas.DataFrame
        One row per system: accuracy, Wilson interval (rows independent) and clustered interval (by item).
    pairs : pandas.DataFrame
        One row per pair of systems: unpaired and paired differences with their p-values, McNemar's counts and
        exact p (one score per item and system only).
    glmm_means, glmm_contrasts : pandas.DataFrame or None
        The GLMM's estimated probabilities per system, and its contrasts on the link scale, as odds ratios (logit)
        and as differences of probabilities; None without a formula.
    """

    def __init__(self, baselines, comparison=None):
        self.baselines, self.comparison = baselines, comparison
        self.systems, self.pairs = baselines.systems, baselines.pairs
        self.glmm_means = None if comparison is None else comparison.means
        self.glmm_contrasts = None if comparison is None else comparison.contrasts

    def _problems(self) -> list[str]:
        fits = [] if self.comparison is None else [("H0", self.comparison.test.h0), ("the GLMM", self.comparison.fit)]
        return [f"the ML fit of {name} did not converge ({fit.message})" for name, fit in fits if not fit.converged]

    def _payload(self) -> dict:
        return {"baselines": self.baselines.to_dict(),
                "glmm": self.comparison.to_dict() if self.comparison else None}

    def _text(self) -> str:
        if self.comparison is None:
            return str(self.baselines)
        return (f"{self.baselines}\n\nThe binary GLMM ({self.comparison.fit.approximation}), which also counts the "
                f"variation the formula's other random effects describe:\n{self.comparison}")


@public
def baselines(data, score: str, item: str, system: str, formula: str | None = None, where: str | None = None,
              categorical=None, drop_missing: bool = False, link: str | None = None) -> Baselines:
    """The field's usual error bars of 0/1 scores, optionally beside the binary GLMM's answer.

    Parameters
    ----------
    data : pandas.DataFrame or str
        The scores: a DataFrame, a file, harness logs or a bundled dataset name, as ``read`` takes them.
    score : str
        Column of 0/1 scores.
    item : str
        Column of the test items (the clusters of the clustered standard errors, the pairs of the paired tests).
    system : str
        Column of the systems compared.
    formula : str, optional
        A binary GLMM with ``system`` as a fixed effect, e.g. ``"correct ~ system + (1|item) + (1|system:seed)"``:
        its likelihood-ratio test of the systems and its contrasts are added.
    where : str, optional
        A condition selecting rows (the user guide's page "Your data" describes the language).
    categorical : list of str, optional
        Columns read as categories of their text whatever they hold.
    drop_missing : bool, default False
        Drop rows with a missing value in a column of the formula instead of refusing them.
    link : {"logit", "probit"}, optional
        Link of the GLMM (default logit).

    Returns
    -------
    Baselines
        ``to_dict()`` equals ``bayesrepro baselines --json``.
    """
    from ..data import read_table
    from ..instruments.binary_baselines import binary_baselines
    from .reading import column_list

    table = read_table(data, where=where, categorical=column_list(categorical))
    comparison = None
    if formula:
        from ..design import model_frame, resolve_family
        from ..errors import BayesreproError
        from ..frequentist.analyses import compare_binary_levels, require_fixed

        frame = model_frame(formula, table, None, drop_missing)
        require_fixed(frame.spec, system)
        family = resolve_family(frame, "auto", link)
        if not family.binary:
            raise BayesreproError(f"'{frame.response}' is not binary; compare the levels of a Gaussian model with "
                                  "compare_levels")
        comparison = compare_binary_levels(frame, family, system)
    return Baselines(binary_baselines(table, score, item, system), comparison)
