# Reference degrees of freedom of the B - A contrast on a balanced design, for
# bayesrepro.plan.closed_form (tests/test_plan.py).
#
# tests/data/plan_balanced.csv: 2 systems x 40 items x 4 seeds per system (seeds
# nested in systems, labels s0..s3 reused), one score per cell, drawn once with
# numpy (seed 20240613) from score = 0.5 + 0.03 [B] + item + system:seed +
# item:system + residual, variances 0.05, 0.004, 0.01, 0.01.
#
# For each model: the REML variance components, lmerTest's Satterthwaite and
# pbkrtest's Kenward-Roger denominator df of the test of systemB, and its SE.
# Run: Rscript tests/reference/plan_satterthwaite.R > tests/reference/plan_satterthwaite.json
suppressPackageStartupMessages({
  library(lmerTest)
  library(pbkrtest)
  library(jsonlite)
})
data <- read.csv("tests/data/plan_balanced.csv", stringsAsFactors = TRUE)
models <- list(
  seeds = score ~ system + (1 | item) + (1 | system:seed),
  interaction = score ~ system + (1 | item) + (1 | system:seed) + (1 | item:system)
)
out <- list()
for (name in names(models)) {
  fit <- lmer(models[[name]], data = data, REML = TRUE)
  vc <- as.data.frame(VarCorr(fit))
  variances <- setNames(as.list(vc$vcov), ifelse(vc$grp == "Residual", "Residual", vc$grp))
  L <- matrix(c(0, 1), nrow = 1)
  satterthwaite <- contest(fit, L, ddf = "Satterthwaite")
  kenward_roger <- contest(fit, L, ddf = "Kenward-Roger")
  out[[name]] <- list(
    formula = paste(deparse(models[[name]]), collapse = " "),
    variances = variances,
    se = sqrt(vcov(fit)[2, 2]),
    satterthwaite_df = satterthwaite$DenDF,
    kenward_roger_df = kenward_roger$DenDF
  )
}
out$versions <- list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                     lmerTest = as.character(packageVersion("lmerTest")), pbkrtest = as.character(packageVersion("pbkrtest")))
cat(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE), "\n")
