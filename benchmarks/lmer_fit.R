# One lmer fit, as an R user runs it: read the CSV, make factors, fit, print.
# Used by benchmarks/bench_frequentist.py, which times the whole Rscript command.
#
#   Rscript benchmarks/lmer_fit.R DATA.csv[.gz] "FORMULA" FACTOR1,FACTOR2,... [ML]
#
# FORMULA is an lme4 formula such as "y ~ 1 + service + (1|s) + (1|d)". The named
# columns are read as text and turned into factors; every other column is read by
# read.csv's own rules. The fit is REML unless a fourth argument "ML" is given.
# Prints one JSON line on stdout:
#   {"n_obs", "variances": {group: variance, ..., "Residual": variance},
#    "reml_criterion" (null for ML), "loglik", "warnings": [...], "lme4": version,
#    "read_seconds", "fit_seconds"}

script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
# fit_lmer (lme4 and jsonlite loaded there): the lmer call with its warnings caught and timed
source(file.path(dirname(dirname(script)), "tests", "reference", "lme4_common.R"))

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 3L) stop("usage: lmer_fit.R DATA FORMULA FACTORS [ML]")
path <- args[[1]]
formula <- stats::as.formula(args[[2]])
factors <- strsplit(args[[3]], ",", fixed = TRUE)[[1]]
reml <- !(length(args) >= 4L && toupper(args[[4]]) == "ML")

read_time <- system.time({
  classes <- stats::setNames(rep("character", length(factors)), factors)
  data <- utils::read.csv(path, colClasses = classes)
  for (col in factors) data[[col]] <- factor(data[[col]])
})

timed <- fit_lmer(formula, data, if (reml) "REML" else "ML")
fit <- timed$fit

vc <- as.data.frame(VarCorr(fit))
out <- list(
  n_obs = nobs(fit),
  variances = as.list(stats::setNames(vc$vcov, vc$grp)),
  reml_criterion = if (reml) REMLcrit(fit) else NULL,
  loglik = as.numeric(logLik(fit)),
  warnings = I(timed$caught),
  lme4 = as.character(utils::packageVersion("lme4")),
  read_seconds = read_time[["elapsed"]],
  fit_seconds = timed$elapsed
)
cat(toJSON(out, auto_unbox = TRUE, digits = NA, null = "null"), "\n", sep = "")
