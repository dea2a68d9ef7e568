# brms on lme4's VerbAgg with a random slope of Anger per item, r2 ~ btype + (1 + Anger | item) + (1 | id),
# under the priors bayesrepro's `phi` takes by default (--prior scaled), for benchmarks/bench_bayes_binary_slopes.py.
#
#   Rscript benchmarks/brms_verbagg.R PRIORS.json OUT.json [CHAINS ITER WARMUP SEED]
#
# PRIORS.json (written by the benchmark from bayesrepro's own prior table) holds, on the latent logit scale:
#   intercept_sd   Normal(0, s) on the intercept of the centred design (brms's class Intercept is that intercept)
#   fixed_sd       {column: s}: Normal(0, s) on each btype coefficient (class b)
#   sd_scale       {"item:Intercept", "item:Anger", "id:Intercept": s}: half-normal SD priors (class sd)
#   lkj_eta        LKJ(eta) on the correlation of the item term (class cor)
# Defaults: 4 chains, iter 2000 with 1000 warm-up (1,000 draws each), seed 1, one core (chains one after another).
# Writes {"versions", "settings", "priors" (brms's prior_summary), "quantiles" {parameter: {0.05, 0.5, 0.95}},
#  "ess_bulk", "ess_tail", "rhat", "sampling_seconds", "warmup_seconds" (Stan's clock, summed over chains),
#  "divergences", "leapfrog_per_draw"}.

suppressMessages({library(brms); library(jsonlite); library(posterior)})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 2L) stop("usage: brms_verbagg.R PRIORS.json OUT.json [CHAINS ITER WARMUP SEED]")
given <- as.integer(args[-(1:2)])
numbers <- replace(c(4L, 2000L, 1000L, 1L), seq_along(given), given)
settings <- list(chains = numbers[1], iter = numbers[2], warmup = numbers[3], seed = numbers[4])
p <- fromJSON(args[[1]])
file_arg <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1])
data_path <- file.path(dirname(dirname(normalizePath(file_arg))), "tests", "data", "verbagg.csv.gz")
data <- read.csv(gzfile(data_path), colClasses = c(id = "character", item = "character", btype = "character"))
data$btype <- factor(data$btype)

priors <- c(
  set_prior(sprintf("normal(0, %.17g)", p$intercept_sd), class = "Intercept"),
  set_prior(sprintf("normal(0, %.17g)", p$fixed_sd[["btypescold"]]), class = "b", coef = "btypescold"),
  set_prior(sprintf("normal(0, %.17g)", p$fixed_sd[["btypeshout"]]), class = "b", coef = "btypeshout"),
  set_prior(sprintf("normal(0, %.17g)", p$sd_scale[["item:Intercept"]]), class = "sd", group = "item",
            coef = "Intercept"),
  set_prior(sprintf("normal(0, %.17g)", p$sd_scale[["item:Anger"]]), class = "sd", group = "item", coef = "Anger"),
  set_prior(sprintf("normal(0, %.17g)", p$sd_scale[["id:Intercept"]]), class = "sd", group = "id",
            coef = "Intercept"),
  set_prior(sprintf("lkj(%.17g)", p$lkj_eta), class = "cor", group = "item")
)
fit <- brm(r2 ~ btype + (1 + Anger | item) + (1 | id), data = data, family = bernoulli("logit"), prior = priors,
           chains = settings$chains, cores = 1L, iter = settings$iter, warmup = settings$warmup,
           seed = settings$seed, refresh = 0, silent = 2)

names <- c(b_Intercept = "b_Intercept", b_btypescold = "b_btypescold", b_btypeshout = "b_btypeshout",
           sd_item_Intercept = "sd_item__Intercept", sd_item_Anger = "sd_item__Anger",
           cor_item = "cor_item__Intercept__Anger", sd_id_Intercept = "sd_id__Intercept")
draws <- as_draws_df(fit)
times <- rstan::get_elapsed_time(fit$fit)
sampler <- rstan::get_sampler_params(fit$fit, inc_warmup = FALSE)
out <- list(
  versions = list(R = R.version.string, brms = as.character(packageVersion("brms")),
                  rstan = as.character(packageVersion("rstan"))),
  settings = settings,
  priors = apply(as.data.frame(prior_summary(fit)), 1, function(r) paste(r[["class"]], r[["coef"]], r[["group"]],
                                                                         r[["prior"]])),
  quantiles = lapply(names, function(v) {
    q <- quantile(draws[[v]], c(0.05, 0.5, 0.95), names = FALSE)
    list("0.05" = q[1], "0.5" = q[2], "0.95" = q[3])
  }),
  ess_bulk = lapply(names, function(v) ess_bulk(extract_variable_matrix(draws, v))),
  ess_tail = lapply(names, function(v) ess_tail(extract_variable_matrix(draws, v))),
  rhat = lapply(names, function(v) rhat(extract_variable_matrix(draws, v))),
  sampling_seconds = sum(times[, "sample"]),
  warmup_seconds = sum(times[, "warmup"]),
  divergences = sum(sapply(sampler, function(s) sum(s[, "divergent__"]))),
  leapfrog_per_draw = mean(sapply(sampler, function(s) mean(s[, "n_leapfrog__"])))
)
write_json(out, args[[2]], auto_unbox = TRUE, digits = NA, pretty = TRUE)
cat("wrote", args[[2]], "\n")
