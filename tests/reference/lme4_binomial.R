# Reference fits of binomial GLMMs by lme4's glmer, for tests/test_glmm_lme4.py.
#
#   Rscript tests/reference/lme4_binomial.R
#
# Writes tests/reference/lme4_binomial.json and the data it fits to tests/data/:
#   cbpp.csv.gz          lme4's cbpp (herd, period, incidence, size)
#   verbagg.csv.gz       lme4's VerbAgg with r2 as 0/1 (id, item, Anger, Gender, btype, situ, r2)
#   binary_grid.csv.gz   a simulated evaluation grid: 150 items x 3 systems x 3 seeds per system
#                        (nested in system) x 4 prompts, 0/1 scores from a logit model with known
#                        components (item 1.2, system:seed 0.15, prompt 0.3, system 0.25)
#
# Each model (nAGQ = 1 is the Laplace approximation) names its data, formulas (ours in Bambi syntax and
# glmer's), link and nAGQ, and holds two fit records: "default", glmer as users run it, and "tight",
# with glmerControl(tolPwrss = 1e-12). glmer's default stops penalized IRLS at a relative change of
# 1e-7 in the penalized deviance, which leaves its Laplace criterion (and the finite-difference Hessian
# behind vcov) uncertain in about the third decimal: the tight fits are the optimum of the criterion to
# compare estimates and standard errors with, the default ones what a user's log-likelihood is. Each
# record holds:
#   n_obs
#   variances               {bayesrepro name: variance} in formula order (latent scale, no residual)
#   fixed_effects, std_errors   {lme4 name: value}; vcov(fit), lme4's Hessian-based default
#   loglik                  logLik(fit) as lme4 reports it
#   saturated_loglik        sum(dbinom(y, n, y/n, log = TRUE)): for nAGQ > 1 lme4's deviance uses
#                           deviance residuals, so its logLik lacks this constant; the binomial
#                           log-likelihood is loglik + saturated_loglik there (it is loglik itself
#                           for nAGQ = 1)
#   singular, convergence_messages, warnings, elapsed_seconds
# Tests of nested models ("tests") give anova()'s chi-square and df for the default and the tight
# fits; contrasts ("emmeans", of the tight fits) give emmeans' pairwise differences on the logit
# scale, as odds ratios and, after regrid(), as differences of probabilities, all without
# multiplicity adjustment.

script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
source(file.path(dirname(script), "lme4_common.R"))
suppressPackageStartupMessages(library(emmeans))
ref_dir <- dirname(script)
data_dir <- file.path(dirname(ref_dir), "data")

write_gz <- function(frame, name) {
  path <- file.path(data_dir, paste0(name, ".csv.gz"))
  con <- gzfile(path, "w")
  utils::write.csv(frame, con, row.names = FALSE)
  close(con)
  paste0("tests/data/", name, ".csv.gz")
}

glmer_record <- function(formula, data, link, nAGQ, control) {
  caught <- character(0)
  timing <- system.time(
    fit <- withCallingHandlers(
      glmer(formula, data = data, family = binomial(link = link), nAGQ = nAGQ, control = control),
      warning = function(w) { caught <<- c(caught, conditionMessage(w)); invokeRestart("muffleWarning") },
      message = function(m) { caught <<- c(caught, trimws(conditionMessage(m))); invokeRestart("muffleMessage") }
    )
  )
  map <- random_names(formula)
  vc <- as.data.frame(VarCorr(fit))
  variances <- as.list(stats::setNames(vc$vcov, vc$grp)[unname(map)])
  names(variances) <- names(map)
  resp <- fit@resp
  n <- resp$weights
  y <- round(resp$y * n)
  conv <- fit@optinfo$conv$lme4$messages
  list(
    record = list(
      n_obs = nobs(fit),
      variances = variances,
      fixed_effects = as.list(fixef(fit)),
      std_errors = as.list(stats::setNames(sqrt(diag(as.matrix(vcov(fit)))), names(fixef(fit)))),
      loglik = as.numeric(logLik(fit)),
      saturated_loglik = sum(dbinom(y, n, ifelse(n > 0, y / n, 0), log = TRUE)),
      singular = isSingular(fit),
      convergence_messages = I(if (is.null(conv)) character(0) else conv),
      warnings = I(caught),
      elapsed_seconds = round(timing[["elapsed"]], 3)
    ),
    fit = fit
  )
}

contrast_table <- function(fit, factor) {
  means <- emmeans(fit, factor)
  logit <- as.data.frame(pairs(means, adjust = "none"))
  odds <- as.data.frame(pairs(means, type = "response", adjust = "none"))
  probability <- as.data.frame(pairs(regrid(means), adjust = "none"))
  response_means <- as.data.frame(regrid(means))
  list(
    factor = factor,
    contrast = I(as.character(logit$contrast)),
    logit_estimate = I(logit$estimate), logit_se = I(logit$SE), logit_p = I(logit$p.value),
    odds_ratio = I(odds$odds.ratio),
    probability_difference = I(probability$estimate), probability_se = I(probability$SE),
    probability_p = I(probability$p.value),
    levels = I(as.character(response_means[[factor]])),
    probability = I(response_means$prob), probability_mean_se = I(response_means$SE)
  )
}

# --- data -----------------------------------------------------------------------------------------------

cbpp_frame <- transform(lme4::cbpp, herd = as.character(herd), period = as.character(period))
verbagg_frame <- with(lme4::VerbAgg, data.frame(
  id = as.character(id), item = as.character(item), Anger = Anger, Gender = as.character(Gender),
  btype = as.character(btype), situ = as.character(situ), r2 = as.integer(r2 == "Y")
))
set.seed(20240612)
grid <- expand.grid(item = sprintf("q%03d", 1:150), seed = 1:3, prompt = sprintf("p%d", 1:4),
                    system = c("base", "mid", "top"), stringsAsFactors = FALSE)
grid$seed <- paste0(grid$system, "-s", grid$seed)
effects <- function(levels, variance) stats::setNames(rnorm(length(levels), 0, sqrt(variance)), levels)
item_effect <- effects(unique(grid$item), 1.2)
seed_effect <- effects(unique(grid$seed), 0.15)
prompt_effect <- effects(unique(grid$prompt), 0.3)
system_effect <- c(base = 0, mid = 0.35, top = 0.7)
eta <- 0.2 + system_effect[grid$system] + item_effect[grid$item] + seed_effect[grid$seed] + prompt_effect[grid$prompt]
grid$correct <- rbinom(nrow(grid), 1, plogis(eta))
grid <- grid[, c("item", "system", "seed", "prompt", "correct")]

out <- list(
  producer = "tests/reference/lme4_binomial.R",
  versions = c(versions(), emmeans = as.character(packageVersion("emmeans"))),
  datasets = list(cbpp = write_gz(cbpp_frame, "cbpp"), verbagg = write_gz(verbagg_frame, "verbagg"),
                  binary_grid = write_gz(grid, "binary_grid")),
  models = list(), tests = list(), emmeans = list()
)
factorised <- function(frame, columns) { for (col in columns) frame[[col]] <- factor(frame[[col]]); frame }
cbpp <- factorised(cbpp_frame, c("herd", "period"))
verbagg <- factorised(verbagg_frame, c("id", "item", "Gender", "btype", "situ"))
grid <- factorised(grid, c("item", "system", "seed", "prompt"))

# --- fits -------------------------------------------------------------------------------------------------

# Fits one model twice (glmer's default and tight PIRLS tolerance); returns both fits.
add <- function(key, dataset, ours, formula, data, link = "logit", nAGQ = 1L) {
  default <- glmer_record(formula, data, link, nAGQ, glmerControl())
  tight <- glmer_record(formula, data, link, nAGQ, glmerControl(tolPwrss = 1e-12))
  out$models[[key]] <<- list(
    dataset = dataset, formula = ours, lme4_formula = paste(deparse(formula, width.cutoff = 500L), collapse = " "),
    link = link, nAGQ = nAGQ, default = default$record, tight = tight$record
  )
  write_json_exact(out, file.path(ref_dir, "lme4_binomial.json"))
  invisible(list(default = default$fit, tight = tight$fit))
}

cbpp_f <- cbind(incidence, size - incidence) ~ period + (1 | herd)
cbpp_ours <- "p(incidence, size) ~ period + (1|herd)"
m_cbpp <- add("cbpp", "cbpp", cbpp_ours, cbpp_f, cbpp)
add("cbpp_agq5", "cbpp", cbpp_ours, cbpp_f, cbpp, nAGQ = 5L)
add("cbpp_agq12", "cbpp", cbpp_ours, cbpp_f, cbpp, nAGQ = 12L)
add("cbpp_probit", "cbpp", cbpp_ours, cbpp_f, cbpp, link = "probit")
m_cbpp0 <- add("cbpp_null", "cbpp", "p(incidence, size) ~ 1 + (1|herd)",
               cbind(incidence, size - incidence) ~ 1 + (1 | herd), cbpp)

verb_f <- r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 | item)
verb_ours <- "r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)"
m_verb <- add("verbagg", "verbagg", verb_ours, verb_f, verbagg)
add("verbagg_probit", "verbagg", verb_ours, verb_f, verbagg, link = "probit")
m_verb0 <- add("verbagg_no_btype", "verbagg", "r2 ~ Anger + Gender + situ + (1|id) + (1|item)",
               r2 ~ Anger + Gender + situ + (1 | id) + (1 | item), verbagg)
m_verb_id <- add("verbagg_id_only", "verbagg", "r2 ~ Anger + Gender + btype + situ + (1|id)",
                 r2 ~ Anger + Gender + btype + situ + (1 | id), verbagg)

grid_f <- correct ~ system + (1 | item) + (1 | seed) + (1 | prompt)
grid_ours <- "correct ~ system + (1|item) + (1|seed) + (1|prompt)"
m_grid <- add("grid_crossed", "binary_grid", grid_ours, grid_f, grid)
add("grid_nested", "binary_grid", "correct ~ 1 + (1|item) + (1|system/seed)",
    correct ~ 1 + (1 | item) + (1 | system/seed), grid)
add("grid_probit", "binary_grid", grid_ours, grid_f, grid, link = "probit")
m_grid0 <- add("grid_null", "binary_grid", "correct ~ 1 + (1|item) + (1|seed) + (1|prompt)",
               correct ~ 1 + (1 | item) + (1 | seed) + (1 | prompt), grid)

# --- likelihood-ratio tests and contrasts -----------------------------------------------------------------

chisq <- function(small, large) {
  default <- anova(small$default, large$default)
  tight <- anova(small$tight, large$tight)
  list(chisq = default$Chisq[2], chisq_tight = tight$Chisq[2], df = default$Df[2])
}
out$tests <- list(
  cbpp_period = c(list(h0 = "cbpp_null", h1 = "cbpp"), chisq(m_cbpp0, m_cbpp)),
  verbagg_btype = c(list(h0 = "verbagg_no_btype", h1 = "verbagg"), chisq(m_verb0, m_verb)),
  verbagg_item = c(list(h0 = "verbagg_id_only", h1 = "verbagg"), chisq(m_verb_id, m_verb)),
  grid_system = c(list(h0 = "grid_null", h1 = "grid_crossed"), chisq(m_grid0, m_grid))
)
out$emmeans <- list(
  cbpp_period = c(list(model = "cbpp"), contrast_table(m_cbpp$tight, "period")),
  verbagg_btype = c(list(model = "verbagg"), contrast_table(m_verb$tight, "btype")),
  grid_system = c(list(model = "grid_crossed"), contrast_table(m_grid$tight, "system"))
)
write_json_exact(out, file.path(ref_dir, "lme4_binomial.json"))
