# brms's posterior ranks of the systems of a binary leaderboard, correct ~ system + (1 | item), Bernoulli (logit),
# brms's default priors (flat on the system coefficients, student_t(3, 0, 2.5) on the centred intercept and on the
# item SD), for the slow test of tests/test_rank.py.
# Run:  Rscript tests/reference/brms_rank.R DATA_CSV JSON_OUT
# Writes {"systems": [...], "p_best": [...], "expected_rank": [...], "draws": n, "versions": {...}}: per system (in
# the order of its levels), the share of posterior draws in which its mean is the largest, and its mean rank
# (rank 1 the largest mean).

suppressMessages({library(brms); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
data <- read.csv(args[[1]], stringsAsFactors = TRUE)
fit <- brm(correct ~ system + (1 | item), data = data, family = bernoulli("logit"), chains = 4L, cores = 1L,
           iter = 2000L, warmup = 1000L, seed = 20261128L, refresh = 0, silent = 2)
draws <- as.data.frame(fit)
systems <- levels(data$system)
means <- sapply(systems, function(s) {
  coefficient <- paste0("b_system", s)
  draws$b_Intercept + (if (coefficient %in% names(draws)) draws[[coefficient]] else 0)
})
ranks <- t(apply(-means, 1, rank, ties.method = "random"))
out <- list(systems = systems, p_best = unname(colMeans(ranks == 1)), expected_rank = unname(colMeans(ranks)),
            draws = nrow(draws),
            versions = list(R = R.version.string, brms = as.character(packageVersion("brms"))))
write_json(out, args[[2]], auto_unbox = TRUE, digits = NA)
