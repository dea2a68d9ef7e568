# brms reference posterior of the correlated random-slope model Reaction ~ Days + (Days | Subject) on
# tests/data/sleepstudy.csv.gz, with brms's default priors (flat on Days, student_t(3, median, mad) on the
# centred intercept, student_t(3, 0, mad) on the SDs and sigma, lkj(1) on the correlation).
# Run from anywhere:  Rscript tests/reference/brms_slopes.R [JSON_OUT]   (default tests/reference/brms_slopes.json)
# Writes {"producer", "versions", "settings", "priors", "quantiles": {parameter: {"0.05", "0.5", "0.95"}},
#         "ess_bulk": {parameter: ...}, "sampling_seconds"}: quantiles of the pooled post-warmup draws,
# bulk ESS (posterior package) and the time of sampling alone (compilation excluded), summed over chains.

suppressMessages({library(brms); library(jsonlite); library(posterior)})
file_arg <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1])
ref_dir <- dirname(normalizePath(file_arg))
out_arg <- commandArgs(trailingOnly = TRUE)
json_out <- if (length(out_arg)) out_arg[[1]] else file.path(ref_dir, "brms_slopes.json")
data <- read.csv(gzfile(file.path(dirname(ref_dir), "data", "sleepstudy.csv.gz")))

chains <- 4L
iter <- 6000L
warmup <- 1000L
seed <- 20261125L
formula <- Reaction ~ Days + (Days | Subject)
fit <- brm(formula, data = data, family = gaussian(), chains = chains, cores = 1L, iter = iter,
           warmup = warmup, seed = seed, refresh = 0, silent = 2)
draws <- as_draws_df(fit)
names <- c(sd_Intercept = "sd_Subject__Intercept", sd_Days = "sd_Subject__Days",
           cor = "cor_Subject__Intercept__Days", sigma = "sigma")
quantiles <- lapply(names, function(v) {
  q <- quantile(draws[[v]], c(0.05, 0.5, 0.95), names = FALSE)
  list("0.05" = q[1], "0.5" = q[2], "0.95" = q[3])
})
ess <- lapply(names, function(v) ess_bulk(extract_variable_matrix(draws, v)))
times <- rstan::get_elapsed_time(fit$fit)
out <- list(
  producer = "tests/reference/brms_slopes.R",
  versions = list(R = R.version.string, brms = as.character(packageVersion("brms")),
                  rstan = as.character(packageVersion("rstan"))),
  settings = list(formula = "Reaction ~ Days + (Days | Subject)", chains = chains, iter = iter, warmup = warmup,
                  seed = seed),
  priors = lapply(split(as.data.frame(prior_summary(fit)), seq_len(nrow(prior_summary(fit)))),
                  function(r) paste(r$class, r$coef, r$group, r$prior)),
  quantiles = quantiles,
  ess_bulk = ess,
  sampling_seconds = sum(times[, "sample"]),
  warmup_seconds = sum(times[, "warmup"])
)
write_json(out, json_out, auto_unbox = TRUE, digits = NA, pretty = TRUE)
cat("wrote", json_out, "\n")
