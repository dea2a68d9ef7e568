"""Response, Pearson and deviance residuals against lme4's ``residuals(m, type)`` (run through Rscript; skipped
without R and lme4).

lme4 fits the same data (a Gaussian leaderboard by lmer, 0/1 scores and binomial counts by glmer, converged
tightly); the residuals differ only by the two optima's last digits: within 2e-3 (the fitted probabilities agree
to about 1e-4, and a Pearson residual divides by √(μ(1 − μ)) ≥ 0.1 here), Gaussian ones within 1e-5 of the
scores' SD.
"""

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br

pytestmark = [pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed"), pytest.mark.slow]

R_SCRIPT = r"""
suppressMessages(library(lme4))
folder <- commandArgs(TRUE)[1]
d <- read.csv(file.path(folder, "data.csv"), colClasses = c(item = "character", system = "character"))
tight <- glmerControl(tolPwrss = 1e-12, optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12))
fits <- list(
  gaussian = lmer(y ~ system + (1 | item), d, control = lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12))),
  binary = glmer(correct ~ system + (1 | item), d, family = binomial, control = tight),
  counts = glmer(cbind(k, n - k) ~ system + (1 | item), d, family = binomial, control = tight))
for (name in names(fits)) {
  m <- fits[[name]]
  write.csv(data.frame(response = residuals(m, type = "response"), pearson = residuals(m, type = "pearson"),
                       deviance = residuals(m, type = "deviance")),
            file.path(folder, paste0(name, ".csv")), row.names = FALSE)
}
"""


def test_residuals_are_lme4s(tmp_path):
    if subprocess.run(["Rscript", "-e", "library(lme4)"], capture_output=True).returncode != 0:
        pytest.skip("the R package lme4 is not installed")
    rng = np.random.default_rng(11)
    item = np.repeat(np.arange(50), 4)
    system = np.tile(["a", "a", "b", "b"], 50)
    eta = 0.4 * (system == "b") + rng.normal(0, 1, 50)[item]
    n = rng.integers(3, 12, len(item))
    data = pd.DataFrame({"item": np.char.add("i", item.astype(str)), "system": system,
                         "y": eta + rng.normal(0, 0.8, len(item)),
                         "correct": (rng.random(len(item)) < 1 / (1 + np.exp(-eta))).astype(int),
                         "k": rng.binomial(n, 1 / (1 + np.exp(-eta))), "n": n})
    data.to_csv(tmp_path / "data.csv", index=False)
    script = tmp_path / "fit.R"
    script.write_text(R_SCRIPT)
    result = subprocess.run(["Rscript", str(script), str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    formulas = {"gaussian": "y ~ system + (1|item)", "binary": "correct ~ system + (1|item)",
                "counts": "p(k, n) ~ system + (1|item)"}
    for name, formula in formulas.items():
        fit = br.Model(formula, data).fit()
        expected = pd.read_csv(tmp_path / f"{name}.csv")
        tolerance = 1e-5 * data["y"].std() if name == "gaussian" else 2e-3
        for kind in ("response", "pearson", "deviance"):
            np.testing.assert_allclose(fit.residuals(kind), expected[kind], atol=tolerance, err_msg=f"{name} {kind}")
