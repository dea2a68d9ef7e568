# pbkrtest's parametric-bootstrap LRT, as an R user runs it: read the CSV, make factors,
# fit both models by ML with lmer, then PBmodcomp. Used by benchmarks/bench_bootstrap.py.
#
#   Rscript benchmarks/pbmodcomp.R DATA.csv[.gz] "H1" "H0" FACTOR1,FACTOR2,... NSIM
#
# Prints one JSON line on stdout:
#   {"n_obs", "lrt" (2 (l1 - l0)), "p" (PBmodcomp's bootstrap p-value), "nsim" (simulations that
#    ran), "read_seconds", "fit_seconds" (both lmer fits), "pb_seconds" (PBmodcomp alone),
#    "pbkrtest", "lme4"}

script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
source(file.path(dirname(dirname(script)), "tests", "reference", "lme4_common.R"))
suppressPackageStartupMessages(library(pbkrtest))

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 5L) stop("usage: pbmodcomp.R DATA H1 H0 FACTORS NSIM")
factors <- strsplit(args[[4]], ",", fixed = TRUE)[[1]]
nsim <- as.integer(args[[5]])

read_time <- system.time({
  data <- utils::read.csv(args[[1]], colClasses = stats::setNames(rep("character", length(factors)), factors))
  for (col in factors) data[[col]] <- factor(data[[col]])
})
fit_time <- system.time({
  m1 <- suppressMessages(lmer(stats::as.formula(args[[2]]), data = data, REML = FALSE))
  m0 <- suppressMessages(lmer(stats::as.formula(args[[3]]), data = data, REML = FALSE))
})
pb_time <- system.time(pb <- suppressWarnings(suppressMessages(PBmodcomp(m1, m0, nsim = nsim, seed = 1))))
test <- as.data.frame(pb$test)
out <- list(
  n_obs = nobs(m1),
  lrt = 2 * (as.numeric(logLik(m1)) - as.numeric(logLik(m0))),
  p = test["PBtest", "p.value"],
  nsim = length(pb$ref),
  read_seconds = read_time[["elapsed"]],
  fit_seconds = fit_time[["elapsed"]],
  pb_seconds = pb_time[["elapsed"]],
  pbkrtest = as.character(utils::packageVersion("pbkrtest")),
  lme4 = as.character(utils::packageVersion("lme4"))
)
cat(toJSON(out, auto_unbox = TRUE, digits = NA), "\n", sep = "")
