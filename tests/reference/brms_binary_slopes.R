# brms reference posterior of a Bernoulli (logit) model with a correlated random slope,
# y ~ c + (1 + c | subject) + (1 | item) on tests/data/binary_crossed.csv.gz (written by glmer_slopes.R), with
# brms's default priors for the bernoulli family (flat on c, student_t(3, 0, 2.5) on the centred intercept and
# on every SD, lkj(1) on the correlation), for tests/test_bayes_binary_slopes.py.
# Run from anywhere:  Rscript tests/reference/brms_binary_slopes.R [JSON_OUT]
# (default tests/reference/brms_binary_slopes.json)
# Writes {"producer", "versions", "settings", "priors", "quantiles": {parameter: {"0.05", "0.5", "0.95"}},
#         "ess_bulk": {parameter: ...}, "sampling_seconds"}: quantiles of the pooled post-warmup draws and their
# bulk ESS (posterior package).

suppressMessages({library(brms); library(jsonlite); library(posterior)})
file_arg <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1])
ref_dir <- dirname(normalizePath(file_arg))
out_arg <- commandArgs(trailingOnly = TRUE)
json_out <- if (length(out_arg)) out_arg[[1]] else file.path(ref_dir, "brms_binary_slopes.json")
data <- read.csv(gzfile(file.path(dirname(ref_dir), "data", "binary_crossed.csv.gz")))

chains <- 4L
iter <- 4000L
warmup <- 1000L
seed <- 20261125L
formula <- y ~ c + (1 + c | subject) + (1 | item)
fit <- brm(formula, data = data, family = bernoulli("logit"), chains = chains, cores = 1L, iter = iter,
           warmup = warmup, seed = seed, refresh = 0, silent = 2)
draws <- as_draws_df(fit)
names <- c(b_Intercept = "b_Intercept", b_c = "b_c", sd_subject_Intercept = "sd_subject__Intercept",
           sd_subject_c = "sd_subject__c", cor_subject = "cor_subject__Intercept__c",
           sd_item_Intercept = "sd_item__Intercept")
quantiles <- lapply(names, function(v) {
  q <- quantile(draws[[v]], c(0.05, 0.5, 0.95), names = FALSE)
  list("0.05" = q[1], "0.5" = q[2], "0.95" = q[3])
})
ess <- lapply(names, function(v) ess_bulk(extract_variable_matrix(draws, v)))
times <- rstan::get_elapsed_time(fit$fit)
out <- list(
  producer = "tests/reference/brms_binary_slopes.R",
  versions = list(R = R.version.string, brms = as.character(packageVersion("brms")),
                  rstan = as.character(packageVersion("rstan"))),
  settings = list(formula = "y ~ c + (1 + c | subject) + (1 | item)", family = "bernoulli(logit)", chains = chains,
                  iter = iter, warmup = warmup, seed = seed),
  priors = lapply(split(as.data.frame(prior_summary(fit)), seq_len(nrow(prior_summary(fit)))),
                  function(r) paste(r$class, r$coef, r$group, r$prior)),
  quantiles = quantiles,
  ess_bulk = ess,
  sampling_seconds = sum(times[, "sample"]),
  warmup_seconds = sum(times[, "warmup"])
)
write_json(out, json_out, auto_unbox = TRUE, digits = NA, pretty = TRUE)
cat("wrote", json_out, "\n")
