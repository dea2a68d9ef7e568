# Shared by the brms reference scripts in this directory (brms_slopes.R, brms_binary_slopes.R): their paths, one
# brm fit with the settings they record, and the JSON they write,
# {"producer", "versions", "settings", "priors", "quantiles": {parameter: {"0.05", "0.5", "0.95"}},
#  "ess_bulk": {parameter: ...}, "sampling_seconds", "warmup_seconds"}: quantiles of the pooled post-warmup draws,
# bulk ESS (posterior package) and the time of sampling and of warmup (compilation excluded), summed over chains.

suppressMessages({library(brms); library(jsonlite); library(posterior)})

# The script's folder, its data file (under tests/data) and its JSON (the first argument, else json_name there).
reference_paths <- function(data_name, json_name) {
  file_arg <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1])
  ref_dir <- dirname(normalizePath(file_arg))
  out_arg <- commandArgs(trailingOnly = TRUE)
  list(json = if (length(out_arg)) out_arg[[1]] else file.path(ref_dir, json_name),
       data = file.path(dirname(ref_dir), "data", data_name))
}

# brm(formula, family) on data with the settings (chains, iter, warmup, seed), one core, no progress.
fit_brms <- function(formula, data, family, settings) {
  brm(formula, data = data, family = family, chains = settings$chains, cores = 1L, iter = settings$iter,
      warmup = settings$warmup, seed = settings$seed, refresh = 0, silent = 2)
}

# Writes the JSON of fit: names maps the recorded parameters to brms's variables.
write_brms_record <- function(fit, names, producer, settings, json_out) {
  draws <- as_draws_df(fit)
  quantiles <- lapply(names, function(v) {
    q <- quantile(draws[[v]], c(0.05, 0.5, 0.95), names = FALSE)
    list("0.05" = q[1], "0.5" = q[2], "0.95" = q[3])
  })
  times <- rstan::get_elapsed_time(fit$fit)
  out <- list(
    producer = producer,
    versions = list(R = R.version.string, brms = as.character(packageVersion("brms")),
                    rstan = as.character(packageVersion("rstan"))),
    settings = settings,
    priors = lapply(split(as.data.frame(prior_summary(fit)), seq_len(nrow(prior_summary(fit)))),
                    function(r) paste(r$class, r$coef, r$group, r$prior)),
    quantiles = quantiles,
    ess_bulk = lapply(names, function(v) ess_bulk(extract_variable_matrix(draws, v))),
    sampling_seconds = sum(times[, "sample"]),
    warmup_seconds = sum(times[, "warmup"])
  )
  write_json(out, json_out, auto_unbox = TRUE, digits = NA, pretty = TRUE)
  cat("wrote", json_out, "\n")
}
