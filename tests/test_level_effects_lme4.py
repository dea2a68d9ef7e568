"""Level effects and predictions against lme4 (run through Rscript; skipped without R and lme4).

lme4 writes its own data (sleepstudy, Penicillin, VerbAgg) and fits them and five simulated designs (a
leaderboard of systems × items, seeds nested in systems, a crossed design with a random slope, a factor's random
slope, 0/1 scores with a random slope); ``ranef(condVar = TRUE)`` gives the conditional modes and
SDs, ``fitted``/``predict`` the predictions (new levels with ``allow.new.levels = TRUE``, the fixed part with
``re.form = NA``). glmer is converged tightly (tolPwrss = 1e-12: its default leaves the criterion uncertain in the
third decimal, see test_glmm_lme4.py), lmer by BOBYQA with rhoend = 1e-12 (its default nloptwrap stops 2e-11
of the criterion short of the optimum on the slope design, which moves predictions by 1e-6 of the scale).
Each run of R takes several seconds: the tests are slow ones.

Tolerances: Gaussian modes and conditional SDs within 1e-4 of the term's SD, predictions within 1e-6 of the
response's scale (its largest absolute value): both fits are converged optimisations of one criterion, and
what differs is the optimum's last digits. Binary modes and SDs within 2e-3 of the term's SD.
"""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br

pytestmark = [pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed"), pytest.mark.slow]

R_SCRIPT = r"""
suppressMessages(library(lme4))
out <- commandArgs(TRUE)[1]
save <- function(name, m, data, new) {
  re <- as.data.frame(ranef(m, condVar = TRUE))
  vc <- as.data.frame(VarCorr(m))
  write.csv(re, file.path(out, paste0(name, "_ranef.csv")), row.names = FALSE)
  write.csv(vc, file.path(out, paste0(name, "_varcorr.csv")), row.names = FALSE)
  write.csv(data, file.path(out, paste0(name, "_data.csv")), row.names = FALSE)
  write.csv(new, file.path(out, paste0(name, "_new.csv")), row.names = FALSE)
  write.csv(data.frame(fitted = fitted(m)), file.path(out, paste0(name, "_fitted.csv")), row.names = FALSE)
  write.csv(data.frame(new = predict(m, new, allow.new.levels = TRUE, type = "response"),
                       fixed = predict(m, new, re.form = NA, type = "response")),
            file.path(out, paste0(name, "_predict.csv")), row.names = FALSE)
}
which <- commandArgs(TRUE)[2]
tight <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12))
if (which == "gaussian") {
  save("sleepstudy", lmer(Reaction ~ Days + (Days | Subject), sleepstudy, control = tight), sleepstudy,
       data.frame(Days = c(0, 4, 9), Subject = c("308", "new", "372")))
  save("penicillin", lmer(diameter ~ 1 + (1 | plate) + (1 | sample), Penicillin, control = tight), Penicillin,
       data.frame(plate = c("a", "zz", "x"), sample = c("A", "B", "new")))
  board <- read.csv(file.path(out, "leaderboard_input.csv"), colClasses = c(system = "character", item = "character"))
  save("leaderboard", lmer(acc ~ 1 + (1 | system) + (1 | item), board, control = tight), board,
       data.frame(system = c("s1", "new"), item = c("new", "i2")))
  nested <- read.csv(file.path(out, "nested_input.csv"), colClasses = c(system = "character", seed = "character"))
  save("nested", lmer(score ~ 1 + (1 | system) + (1 | system:seed), nested, control = tight), nested,
       data.frame(system = c("a1", "a2", "new"), seed = c("1", "new", "2")))
  factor_slopes <- read.csv(file.path(out, "factor_slopes_input.csv"), colClasses = c(subj = "character"))
  save("factor_slopes", lmer(y ~ cond + (cond | subj), factor_slopes, control = tight), factor_slopes,
       data.frame(cond = c("a", "b", "c"), subj = c("u1", "new", "u4")))
  slopes <- read.csv(file.path(out, "slopes_input.csv"), colClasses = c(subj = "character", item = "character"))
  save("slopes", lmer(y ~ x + (x | subj) + (1 | item), slopes, control = tight), slopes,
       data.frame(x = c(-1, 0.5), subj = c("u1", "new"), item = c("new", "w3")))
} else {
  v <- VerbAgg
  v$r2 <- as.integer(v$r2 == "Y")
  v <- v[, c("r2", "btype", "item", "id")]
  m <- glmer(r2 ~ btype + (1 | item) + (1 | id), v, family = binomial,
             control = glmerControl(tolPwrss = 1e-12))
  save("verbagg", m, v, data.frame(btype = c("curse", "shout"), item = c("S1WantCurse", "new"), id = c("new", "5")))
  b <- read.csv(file.path(out, "binary_slopes_input.csv"), colClasses = c(subj = "character"))
  m <- glmer(y ~ x + (x | subj), b, family = binomial, control = glmerControl(tolPwrss = 1e-12))
  save("binary_slopes", m, b, data.frame(x = c(-1, 0.5, 2), subj = c("u1", "new", "u7")))
}
"""

CASES = {"sleepstudy": "Reaction ~ Days + (Days|Subject)", "penicillin": "diameter ~ 1 + (1|plate) + (1|sample)",
         "leaderboard": "acc ~ 1 + (1|system) + (1|item)", "slopes": "y ~ x + (x|subj) + (1|item)",
         "verbagg": "r2 ~ btype + (1|item) + (1|id)", "binary_slopes": "y ~ x + (x|subj)",
         "nested": "score ~ 1 + (1|system) + (1|system:seed)", "factor_slopes": "y ~ cond + (cond|subj)"}
OBJECTS = {"factor_slopes": "subj", "binary_slopes": "subj", "nested": "system", "leaderboard": "system",
           "slopes": "subj", "penicillin": "plate", "verbagg": "id"}
TEXT = {"cond": str, "seed": str, "Subject": str, "plate": str, "sample": str, "system": str, "item": str, "subj": str,
        "id": str, "btype": str}


def run_lme4(directory: Path, which: str) -> Path:
    script = directory / "reference.R"
    script.write_text(R_SCRIPT)
    result = subprocess.run(["Rscript", str(script), str(directory), which], capture_output=True, text=True)
    if result.returncode != 0:
        if "there is no package called" in result.stderr:
            pytest.skip("the R package lme4 is not installed")
        raise AssertionError(result.stderr)
    return directory


def simulated_inputs(directory: Path) -> None:
    rng = np.random.default_rng(29)
    systems, items = 25, 60
    board = pd.DataFrame([(f"s{s}", f"i{i}") for s in range(systems) for i in range(items)], columns=["system", "item"])
    board = board.sample(frac=0.8, random_state=1).reset_index(drop=True)   # unbalanced: some pairs missing
    system_effect = dict(zip([f"s{s}" for s in range(systems)], rng.normal(0, 0.05, systems)))
    item_effect = dict(zip([f"i{i}" for i in range(items)], rng.normal(0, 0.15, items)))
    board["acc"] = 0.6 + board.system.map(system_effect) + board.item.map(item_effect) + rng.normal(0, 0.1, len(board))
    board.to_csv(directory / "leaderboard_input.csv", index=False)
    nested = pd.DataFrame([(f"a{s}", str(k), i) for s in range(12) for k in range(5) for i in range(8)],
                          columns=["system", "seed", "item"])
    nested["score"] = (rng.normal(0, 1.0, 12)[nested.system.str[1:].astype(int)]
                       + rng.normal(0, 0.4, 60)[nested.system.str[1:].astype(int) * 5 + nested.seed.astype(int)]
                       + rng.normal(0, 1, len(nested)))
    nested.to_csv(directory / "nested_input.csv", index=False)
    factor_slopes = pd.DataFrame([(f"u{s}", c) for s in range(25) for c in "abc" for _ in range(6)],
                                 columns=["subj", "cond"])
    effects = rng.normal(0, [1.0, 0.5, 0.7], (25, 3))
    subject = factor_slopes.subj.str[1:].astype(int)
    column = factor_slopes.cond.map({"a": 0, "b": 1, "c": 2})
    factor_slopes["y"] = (1 + 0.5 * (column == 1) - 0.3 * (column == 2) + effects[subject, 0]
                          + np.where(column > 0, effects[subject, column], 0.0)
                          + rng.normal(0, 0.8, len(factor_slopes)))
    factor_slopes.to_csv(directory / "factor_slopes_input.csv", index=False)
    subjects, words = 30, 20
    slopes = pd.DataFrame([(f"u{s}", f"w{w}") for s in range(subjects) for w in range(words)], columns=["subj", "item"])
    slopes["x"] = rng.normal(0, 1, len(slopes))
    intercept, slope = rng.multivariate_normal([0, 0], [[1.0, 0.3], [0.3, 0.5]], subjects).T
    subject = slopes.subj.str[1:].astype(int)
    slopes["y"] = (2 + intercept[subject] + (0.5 + slope[subject]) * slopes.x
                   + rng.normal(0, 0.7, words)[slopes.item.str[1:].astype(int)] + rng.normal(0, 1, len(slopes)))
    slopes.to_csv(directory / "slopes_input.csv", index=False)


@pytest.fixture(scope="module")
def gaussian_reference(tmp_path_factory):
    directory = tmp_path_factory.mktemp("lme4_effects")
    simulated_inputs(directory)
    return run_lme4(directory, "gaussian")


@pytest.fixture(scope="module")
def binary_reference(tmp_path_factory):
    directory = tmp_path_factory.mktemp("glmer_effects")
    rng = np.random.default_rng(31)
    table = pd.DataFrame({"subj": np.repeat([f"u{s}" for s in range(40)], 30), "x": rng.normal(0, 1, 1200)})
    intercept, slope = rng.multivariate_normal([0, 0], [[1.0, 0.2], [0.2, 0.4]], 40).T
    subject = table.subj.str[1:].astype(int)
    table["y"] = rng.binomial(1, 1 / (1 + np.exp(-(0.3 + intercept[subject] + (0.8 + slope[subject]) * table.x))))
    table.to_csv(directory / "binary_slopes_input.csv", index=False)
    return run_lme4(directory, "binary")


def compare(directory: Path, name: str, tolerance: float):
    data = pd.read_csv(directory / f"{name}_data.csv", dtype=TEXT)
    fit = br.Model(CASES[name], data, object=OBJECTS.get(name)).fit()
    assert fit.converged
    ours = fit.level_effects().set_index(["group", "term", "level"])
    theirs = pd.read_csv(directory / f"{name}_ranef.csv", dtype={"grp": str}).set_index(["grpvar", "term", "grp"])
    assert len(ours) == len(theirs)
    varcorr = pd.read_csv(directory / f"{name}_varcorr.csv")
    scale = varcorr[varcorr.var2.isna()].set_index(["grp", "var1"])["sdcor"]
    for (group, term, level), row in theirs.iterrows():
        mine = ours.loc[(group, term, level)]
        sd_scale = scale[(group, term)]
        assert abs(mine.estimate - row.condval) <= tolerance * sd_scale, (group, term, level)
        assert abs(mine.sd - row.condsd) <= tolerance * sd_scale, (group, term, level)
    return fit, data


def compare_predictions(directory: Path, name: str, fit, data: pd.DataFrame):
    response = CASES[name].split("~")[0].strip()
    scale = float(np.abs(data[response]).max())
    fitted = pd.read_csv(directory / f"{name}_fitted.csv")["fitted"].to_numpy()
    assert np.max(np.abs(fit.predict() - fitted)) <= 1e-6 * scale
    new = pd.read_csv(directory / f"{name}_new.csv", dtype=TEXT)
    predicted = pd.read_csv(directory / f"{name}_predict.csv")
    assert np.max(np.abs(fit.predict(new) - predicted["new"])) <= 1e-6 * scale
    assert np.max(np.abs(fit.predict(new, random_effects=False) - predicted["fixed"])) <= 1e-6 * scale


@pytest.mark.parametrize("name", ["sleepstudy", "penicillin", "leaderboard", "nested", "slopes", "factor_slopes"])
def test_gaussian_level_effects_and_predictions_match_lme4(gaussian_reference, name):
    fit, data = compare(gaussian_reference, name, 1e-4)
    compare_predictions(gaussian_reference, name, fit, data)


@pytest.mark.parametrize("name", ["verbagg", "binary_slopes"])
def test_binary_level_effects_and_predictions_match_glmer(binary_reference, name):
    fit, data = compare(binary_reference, name, 2e-3)
    new = pd.read_csv(binary_reference / f"{name}_new.csv", dtype=TEXT)
    predicted = pd.read_csv(binary_reference / f"{name}_predict.csv")
    fitted = pd.read_csv(binary_reference / f"{name}_fitted.csv")["fitted"].to_numpy()
    assert np.max(np.abs(fit.predict() - fitted)) <= 2e-3
    assert np.max(np.abs(fit.predict(new) - predicted["new"])) <= 2e-3
    assert np.max(np.abs(fit.predict(new, random_effects=False) - predicted["fixed"])) <= 2e-3
