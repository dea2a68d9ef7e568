# The simr-style peer of `bayesrepro plan`: simulate from the pilot's lmer fit in
# each planned design, refit with lmer, Wald z test of systemB.
# Used by benchmarks/bench_plan.py, which times the whole command.
#
#   Rscript benchmarks/plan_lme4.R PILOT.csv EFFECT ITEMS1,ITEMS2,... SEEDS SIMULATIONS SEED
#
# The pilot is fitted with score ~ system + (1|item) + (1|system:seed) (REML).
# Each planned design has ITEMS items crossed with systems A and B and SEEDS
# seeds per system, one score per cell; data are drawn by lme4's simulate()
# with the pilot's theta and sigma and beta = (0, EFFECT), refitted by refit().
# Prints one JSON line: {"fit_seconds", "rows": [{"item", "power", "simulations", "seconds"}]}
suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})
args <- commandArgs(trailingOnly = TRUE)
pilot <- utils::read.csv(args[[1]], colClasses = c(system = "character", item = "character", seed = "character"))
effect <- as.numeric(args[[2]])
items <- as.integer(strsplit(args[[3]], ",", fixed = TRUE)[[1]])
seeds <- as.integer(args[[4]])
simulations <- as.integer(args[[5]])
set.seed(as.integer(args[[6]]))
formula <- score ~ system + (1 | item) + (1 | system:seed)
fit_time <- system.time(fit <- lmer(formula, data = pilot, REML = TRUE))[["elapsed"]]
rows <- list()
for (n in items) {
  design <- expand.grid(system = c("A", "B"), item = sprintf("i%05d", seq_len(n)), seed = sprintf("s%02d", seq_len(seeds)),
                        stringsAsFactors = TRUE)
  design$score <- 0
  seconds <- system.time({
    responses <- simulate(formula[-2], newdata = design, nsim = simulations, allow.new.levels = TRUE,
                          newparams = list(theta = getME(fit, "theta"), sigma = sigma(fit), beta = c("(Intercept)" = 0, systemB = effect)))
    template <- lmer(formula, data = transform(design, score = responses[[1]]), REML = TRUE)
    rejected <- 0
    for (k in seq_len(simulations)) {
      refitted <- suppressMessages(suppressWarnings(refit(template, responses[[k]])))
      z <- coef(summary(refitted))["systemB", "t value"]
      rejected <- rejected + (abs(z) > qnorm(0.975))
    }
  })[["elapsed"]]
  rows[[length(rows) + 1L]] <- list(item = n, power = rejected / simulations, simulations = simulations, seconds = seconds)
}
cat(toJSON(list(fit_seconds = fit_time, rows = rows), auto_unbox = TRUE, digits = NA), "\n")
