# brms reference of leave-one-subject-out PSIS-LOO for random-slope models on tests/data/sleepstudy.csv.gz:
# H1 Reaction ~ Days + (Days | Subject) and H0 Reaction ~ 1 + (Days | Subject), brms's default priors.
# A subject's log-likelihood per draw is its marginal Gaussian density with its own effects integrated out,
# log N(y_i; X_i b, sigma^2 I + Z_i Sigma Z_i'), Z_i = [1, Days]; loo::loo gives elpd_loo and its SE, and
# loo::loo_compare the difference H1 - H0 and its SE.
# Run from anywhere:  Rscript tests/reference/brms_slope_loo.R [JSON_OUT]   (default tests/reference/brms_slope_loo.json)

suppressMessages({library(brms); library(jsonlite); library(loo)})
script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
json_out <- c(commandArgs(TRUE), file.path(dirname(script), "brms_slope_loo.json"))[[1]]
data <- read.csv(gzfile(file.path(dirname(dirname(script)), "data", "sleepstudy.csv.gz")))
# 4 chains of 1,000 draws after 1,000 warm-up iterations, one seed for both models
settings <- list(chains = 4L, iter = 2000L, warmup = 1000L, seed = 20261125L)
formulas <- list(h1 = Reaction ~ Days + (Days | Subject), h0 = Reaction ~ 1 + (Days | Subject))

subject_loglik <- function(fit) {
  draws <- as_draws_df(fit)
  beta <- cbind(draws$b_Intercept, if ("b_Days" %in% names(draws)) draws$b_Days else 0)
  sd0 <- draws$sd_Subject__Intercept
  sd1 <- draws$sd_Subject__Days
  rho <- draws$cor_Subject__Intercept__Days
  sigma <- draws$sigma
  subjects <- sort(unique(as.character(data$Subject)))
  ll <- matrix(NA_real_, nrow(draws), length(subjects))
  for (k in seq_along(subjects)) {
    rows <- data[as.character(data$Subject) == subjects[k], ]
    Z <- cbind(1, rows$Days)
    for (d in seq_len(nrow(draws))) {
      Sigma <- matrix(c(sd0[d]^2, rho[d] * sd0[d] * sd1[d], rho[d] * sd0[d] * sd1[d], sd1[d]^2), 2)
      V <- Z %*% Sigma %*% t(Z) + diag(sigma[d]^2, nrow(rows))
      r <- rows$Reaction - Z %*% beta[d, ]
      U <- chol(V)
      w <- backsolve(U, r, transpose = TRUE)
      ll[d, k] <- -0.5 * nrow(rows) * log(2 * pi) - sum(log(diag(U))) - 0.5 * sum(w^2)
    }
  }
  list(ll = ll, chain = draws$.chain)
}

results <- list()
loos <- list()
for (name in names(formulas)) {
  fit <- brm(formulas[[name]], data = data, family = gaussian(), chains = settings$chains, cores = 1L,
             iter = settings$iter, warmup = settings$warmup, seed = settings$seed, refresh = 0, silent = 2)
  ll <- subject_loglik(fit)
  r_eff <- relative_eff(exp(ll$ll), chain_id = ll$chain)
  loos[[name]] <- loo(ll$ll, r_eff = r_eff)
  est <- loos[[name]]$estimates
  results[[name]] <- list(elpd_loo = est["elpd_loo", "Estimate"], se = est["elpd_loo", "SE"],
                          p_loo = est["p_loo", "Estimate"],
                          max_pareto_k = max(loos[[name]]$diagnostics$pareto_k))
}
comparison <- loo_compare(loos$h1, loos$h0)
sign <- if (rownames(comparison)[1] == "model1") -1 else 1   # elpd_diff is relative to the better model
out <- list(
  producer = "tests/reference/brms_slope_loo.R",
  versions = list(R = R.version.string, brms = as.character(packageVersion("brms")),
                  loo = as.character(packageVersion("loo"))),
  settings = c(list(h1 = "Reaction ~ Days + (Days | Subject)", h0 = "Reaction ~ 1 + (Days | Subject)"), settings),
  models = results,
  elpd_diff = sign * comparison[2, "elpd_diff"],
  se_diff = comparison[2, "se_diff"]
)
write_json(out, json_out, auto_unbox = TRUE, digits = NA, pretty = TRUE)
cat("wrote", json_out, "\n")
