# One glmer fit of 0/1 scores, as an R user runs it: read the CSV, make factors, fit, print.
# Used by benchmarks/bench_binary.py, which times the whole Rscript command.
#
#   Rscript benchmarks/glmer_fit.R DATA.csv[.gz] "FORMULA" FACTOR1,FACTOR2,...
#
# FORMULA is an lme4 formula with a 0/1 response, e.g. "correct ~ system + (1|item) + (1|prompt)";
# the named columns are read as text and made factors. glmer's defaults: binomial(logit), Laplace.
# Prints one JSON line: {"n_obs", "variances": {group: variance}, "fixed_effects", "loglik",
#  "warnings": [...], "lme4": version, "read_seconds", "fit_seconds"}

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 3L) stop("usage: glmer_fit.R DATA FORMULA FACTORS")
formula <- stats::as.formula(args[[2]])
factors <- strsplit(args[[3]], ",", fixed = TRUE)[[1]]

read_time <- system.time({
  data <- utils::read.csv(args[[1]], colClasses = stats::setNames(rep("character", length(factors)), factors))
  for (col in factors) data[[col]] <- factor(data[[col]])
})
caught <- character(0)
fit_time <- system.time(
  fit <- withCallingHandlers(
    glmer(formula, data = data, family = binomial),
    warning = function(w) { caught <<- c(caught, conditionMessage(w)); invokeRestart("muffleWarning") },
    message = function(m) { caught <<- c(caught, trimws(conditionMessage(m))); invokeRestart("muffleMessage") }
  )
)
vc <- as.data.frame(VarCorr(fit))
out <- list(
  n_obs = nobs(fit),
  variances = as.list(stats::setNames(vc$vcov, vc$grp)),
  fixed_effects = as.list(fixef(fit)),
  loglik = as.numeric(logLik(fit)),
  warnings = I(caught),
  lme4 = as.character(utils::packageVersion("lme4")),
  read_seconds = read_time[["elapsed"]],
  fit_seconds = fit_time[["elapsed"]]
)
cat(toJSON(out, auto_unbox = TRUE, digits = NA, null = "null"), "\n", sep = "")
