# brms reference posterior of a binary leaderboard's level effects, for tests/test_bayes_level_effects.py:
# a Bernoulli (logit) model of DATA (columns correct, system, item) with FORMULA and brms's default priors for the
# bernoulli family (student_t(3, 0, 2.5) on the centred intercept and on every SD, flat on the other coefficients).
# Run:  Rscript tests/reference/brms_level_effects.R DATA FORMULA JSON_OUT [SEED]
# Writes {"formula", "versions", "priors", "levels": [{"group", "level", "term", "0.05", "0.5", "0.95"}],
# "ess_bulk_min"}: quantiles of the pooled post-warmup draws of every r_<group>[level,term] (4 chains of 4,000
# draws after 1,000 of warmup).

suppressMessages({library(brms); library(jsonlite); library(posterior)})
args <- commandArgs(trailingOnly = TRUE)
data <- read.csv(args[[1]], colClasses = c(system = "character", item = "character"))
formula <- args[[2]]
seed <- if (length(args) > 3) as.integer(args[[4]]) else 20261128L
fit <- brm(as.formula(formula), data = data, family = bernoulli("logit"), chains = 4L, cores = 1L, iter = 5000L,
           warmup = 1000L, seed = seed, refresh = 0, silent = 2)
draws <- as_draws_df(fit)
variables <- grep("^r_", variables(draws), value = TRUE)
parts <- regmatches(variables, regexec("^r_([^[]+)\\[(.*),([^,]+)\\]$", variables))
levels <- lapply(seq_along(variables), function(k) {
  q <- quantile(draws[[variables[[k]]]], c(0.05, 0.5, 0.95), names = FALSE)
  list(group = parts[[k]][2], level = parts[[k]][3], term = parts[[k]][4], "0.05" = q[1], "0.5" = q[2], "0.95" = q[3])
})
ess <- sapply(variables, function(v) ess_bulk(extract_variable_matrix(draws, v)))
write_json(list(formula = formula,
                versions = list(R = R.version.string, brms = as.character(packageVersion("brms"))),
                priors = apply(as.data.frame(prior_summary(fit)), 1, function(r) paste(r["class"], r["group"], r["prior"])),
                levels = levels, ess_bulk_min = min(ess)),
           args[[3]], auto_unbox = TRUE, digits = NA, pretty = TRUE)
