# Small-sample references: lmerTest (Satterthwaite), pbkrtest (Kenward-Roger) and
# RLRsim (exact restricted LRT), on the papers' data and on simulated designs.
# Run from anywhere:  Rscript tests/reference/small_sample.R   (about 10 minutes)
#
# Writes tests/reference/small_sample.json and the simulated designs
# tests/data/small_sample_<name>.csv.gz (written once with a fixed seed; rerunning
# the script rewrites them identically).
#
# JSON layout:
#   producer, versions (R, lme4, lmerTest, pbkrtest, RLRsim)
#   fixed: {design: {
#     data, where (null or a row filter described in words), formula (H1, REML), formula_h0,
#     reml_criterion, coefficients [lme4 names, in order], beta [...],
#     L [[...]]                 rows of the tested hypothesis L beta = 0 (columns as coefficients)
#     satterthwaite {F, ndf, ddf, p}        lmerTest::contestMD(fit, L)
#     kenward_roger {F, ndf, ddf, p, scaling}   pbkrtest's KRmodcomp(fit, L), or null when not run
#     contrasts: [{l [...], estimate,
#                  satterthwaite {se, df, t, p}    lmerTest::contest1D(fit, l, ddf = "Satterthwaite")
#                  kenward_roger {se, df, t, p}    as lmerTest::contest1D(fit, l, ddf = "Kenward-Roger"), or null}]
#   }}
#   rlrt: {design: {
#     data, formula (H1, REML), formula_h0, tested, statistic (2 (l_R(H1) - l_R(H0))),
#     mu [...]    eigenvalues of Z'(I - P_X)Z / max, as RLRsim::RLRTSim computes them
#     p, nsim     RLRsim::exactRLRT(m, mA, m0, nsim) with m the model with the tested effect alone
#   }}
# Fits use lmerTest::lmer with bobyqa run to rhoend = 1e-12, so that the optimum
# is reached to far below the 1e-4 agreement the tests ask for.
# pbkrtest inverts the n x n covariance of the observations (sparse while it is block
# diagonal by item): it runs on the full kreutzer_ter for models with the item effect alone,
# and on subsets of items (first_levels) where seeds or replications couple the items.
# where: null for the whole dataset, or the subset in words.

script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
source(file.path(dirname(script), "lme4_common.R"))
suppressPackageStartupMessages({
  library(lmerTest)
  library(pbkrtest)
  library(RLRsim)
})
ref_dir <- dirname(script)
repo <- dirname(dirname(ref_dir))
out_path <- file.path(ref_dir, "small_sample.json")
tight <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e5))

out <- list(producer = "tests/reference/small_sample.R",
            versions = c(versions(), list(lmerTest = as.character(packageVersion("lmerTest")),
                                          pbkrtest = as.character(packageVersion("pbkrtest")),
                                          RLRsim = as.character(packageVersion("RLRsim")))),
            fixed = list(), rlrt = list())
save <- function() write_json_exact(out, out_path)

# The first n levels of a factor in sorted (C-locale) order: a reproducible subset of items.
first_levels <- function(factor, n) sort(levels(factor), method = "radix")[seq_len(n)]

fit_reml <- function(formula, data) lmerTest::lmer(formula, data = data, REML = TRUE, control = tight)

# Rows of L for the coefficients whose names match `pattern` (a selection matrix).
selection <- function(fit, pattern) {
  names <- names(fixef(fit))
  picked <- grep(pattern, names)
  L <- matrix(0, nrow = length(picked), ncol = length(names))
  L[cbind(seq_along(picked), picked)] <- 1
  L
}

# Kenward-Roger t test of one contrast as lmerTest's contest1D(ddf = "Kenward-Roger") computes it
# (get_KR1D: the adjusted covariance and pbkrtest::Lb_ddf), with pbkrtest's adjusted covariance
# computed once per model instead of once per contrast.
kr_contrast <- function(fit, l, adjusted) {
  estimate <- sum(l * fixef(fit))
  se <- sqrt(sum(l * (as.matrix(adjusted) %*% l)))
  df <- pbkrtest::Lb_ddf(L = l, V0 = vcov(fit), Vadj = adjusted)
  list(se = se, df = df, t = estimate / se, p = 2 * pt(abs(estimate / se), df, lower.tail = FALSE))
}

one_contrast <- function(fit, l, adjusted) {
  s <- contest1D(fit, l, ddf = "Satterthwaite")
  list(l = as.list(l), estimate = sum(l * fixef(fit)),
       satterthwaite = list(se = s[["Std. Error"]], df = s[["df"]], t = s[["t value"]], p = s[["Pr(>|t|)"]]),
       kenward_roger = if (is.null(adjusted)) NULL else kr_contrast(fit, l, adjusted))
}

fixed_record <- function(data_name, where, data, formula, formula_h0, pattern, contrasts, kr = TRUE) {
  t0 <- proc.time()[["elapsed"]]
  fit <- fit_reml(formula, data)
  L <- selection(fit, pattern)
  s <- contestMD(fit, L, ddf = "Satterthwaite")
  # KRmodcomp(fit, L) is vcovAdj followed by .KR_adjust; the adjusted covariance is kept for the contrasts
  adjusted <- if (kr) vcovAdj(fit) else NULL
  k <- if (kr) pbkrtest:::.KR_adjust(adjusted, Phi = vcov(fit), L, beta = fixef(fit), betaH = 0) else NULL
  rec <- list(
    data = data_name, where = where,
    formula = paste(deparse(formula, width.cutoff = 500L), collapse = " "),
    formula_h0 = formula_h0,
    reml_criterion = REMLcrit(fit),
    coefficients = I(names(fixef(fit))),
    beta = as.list(unname(fixef(fit))),
    L = lapply(seq_len(nrow(L)), function(i) as.list(L[i, ])),
    satterthwaite = list(F = s[["F value"]], ndf = s[["NumDF"]], ddf = s[["DenDF"]], p = s[["Pr(>F)"]]),
    kenward_roger = if (kr) list(F = k$Fstat, ndf = k$ndf, ddf = k$ddf, p = k$p.value, scaling = k$F.scaling)
                    else NULL,
    contrasts = lapply(contrasts, function(l) one_contrast(fit, l, adjusted))
  )
  message(sprintf("%-28s %6.1fs  %s", data_name, proc.time()[["elapsed"]] - t0, rec$formula))
  rec
}

# --- the papers' data ------------------------------------------------------------
ter <- load_bundled("kreutzer_ter", repo)
ter$len <- factor(
  ifelse(ter$src_length <= 15, "short", ifelse(ter$src_length <= 55, "typical", "very long")),
  levels = c("short", "typical", "very long")
)
# coefficients: (Intercept), systemMarking, systemPostEdit
pairwise3 <- list(c(0, 1, 0), c(0, 0, 1), c(0, -1, 1))
out$fixed$ter_system <- fixed_record(
  "kreutzer_ter", NULL, ter, ter ~ system + (1 | sentence_id), "ter ~ 1 + (1|sentence_id)",
  "^system", pairwise3)
save()
f_replication <- ter ~ system + (1 | sentence_id) + (1 | system:replication)
out$fixed$ter_system_replication <- fixed_record(
  "kreutzer_ter", NULL, ter, f_replication, "ter ~ 1 + (1|sentence_id) + (1|system:replication)",
  "^system", pairwise3, kr = FALSE)
save()
ter250 <- droplevels(ter[ter$sentence_id %in% first_levels(ter$sentence_id, 250), ])
out$fixed$ter250_system_replication <- fixed_record(
  "kreutzer_ter", "the first 250 sentence ids in sorted order", ter250, f_replication,
  "ter ~ 1 + (1|sentence_id) + (1|system:replication)", "^system", pairwise3)
save()
# system x length class: the Marking - Baseline difference within very long sentences is
# systemMarking + systemMarking:lenvery long (coefficients 2 and 7 of 9)
out$fixed$ter_length_interaction <- fixed_record(
  "kreutzer_ter", NULL, ter, ter ~ system * len + (1 | sentence_id),
  "ter ~ system + len + (1|sentence_id)", ":", list(c(0, 1, 0, 0, 0, 0, 1, 0, 0), c(0, 0, 0, 0, 0, 0, 1, 0, -1)))
save()

partial <- load_bundled("kreutzer_marking_partial", repo)
# coefficients: (Intercept), learning_rate3e-04, learning_rate5e-04
out$fixed$partial_learning_rate <- fixed_record(
  "kreutzer_marking_partial", NULL, partial, ter ~ learning_rate + (1 | sentence_id) + (1 | learning_rate:seed),
  "ter ~ 1 + (1|sentence_id) + (1|learning_rate:seed)", "^learning_rate", pairwise3, kr = FALSE)
save()
partial30 <- droplevels(partial[partial$sentence_id %in% first_levels(partial$sentence_id, 30), ])
out$fixed$partial30_learning_rate <- fixed_record(
  "kreutzer_marking_partial", "the first 30 sentence ids in sorted order", partial30,
  ter ~ learning_rate + (1 | sentence_id) + (1 | learning_rate:seed) + (1 | encoder_dropout),
  "ter ~ 1 + (1|sentence_id) + (1|learning_rate:seed) + (1|encoder_dropout)", "^learning_rate", pairwise3)
save()

# --- simulated designs: items crossed with systems, seeds nested in systems ------
simulate_design <- function(name, items, systems, seeds, variances, effects, drop = 0, seed) {
  set.seed(seed)
  grid <- expand.grid(seed = seq_len(seeds), system = seq_len(systems), item = seq_len(items))
  length <- round(stats::runif(items, 5, 60))
  y <- effects[grid$system] +
    stats::rnorm(items, 0, sqrt(variances[["item"]]))[grid$item] +
    stats::rnorm(systems * seeds, 0, sqrt(variances[["seed"]]))[(grid$system - 1) * seeds + grid$seed] +
    0.002 * (grid$system - 1) * (length[grid$item] - 30) +
    stats::rnorm(nrow(grid), 0, sqrt(variances[["residual"]]))
  frame <- data.frame(score = round(y, 6), item = sprintf("i%03d", grid$item),
                      system = LETTERS[grid$system], seed = sprintf("s%d", grid$seed),
                      length = length[grid$item])
  if (drop > 0) frame <- frame[stats::runif(nrow(frame)) >= drop, ]
  path <- file.path(repo, "tests", "data", sprintf("small_sample_%s.csv.gz", name))
  con <- gzfile(path, "w")
  utils::write.csv(frame, con, row.names = FALSE)
  close(con)
  frame$item <- factor(frame$item)
  frame$system <- factor(frame$system)
  frame$seed <- factor(frame$seed)
  frame
}

v <- c(item = 0.01, seed = 0.0005, residual = 0.01)
nested3 <- simulate_design("nested3", 60, 2, 3, v, c(0, 0), seed = 15001)
out$fixed$sim_nested3 <- fixed_record(
  "tests/data/small_sample_nested3.csv.gz", NULL, nested3, score ~ system + (1 | item) + (1 | system:seed),
  "score ~ 1 + (1|item) + (1|system:seed)", "^system", list(c(0, 1)))
save()
unbalanced <- simulate_design("unbalanced", 40, 3, 4, v, c(0, 0.02, 0.01), drop = 0.15, seed = 15002)
out$fixed$sim_unbalanced_system <- fixed_record(
  "tests/data/small_sample_unbalanced.csv.gz", NULL, unbalanced,
  score ~ system + (1 | item) + (1 | system:seed), "score ~ 1 + (1|item) + (1|system:seed)",
  "^system", pairwise3)
save()
# coefficients: (Intercept), systemB, systemC, length, systemB:length, systemC:length
out$fixed$sim_unbalanced_interaction <- fixed_record(
  "tests/data/small_sample_unbalanced.csv.gz", NULL, unbalanced,
  score ~ system * length + (1 | item) + (1 | system:seed), "score ~ system + length + (1|item) + (1|system:seed)",
  ":length", list(c(0, 0, 0, 0, 1, 0), c(0, 0, 0, 0, -1, 1)))
save()

# --- exact restricted LRT of one variance component --------------------------------
rlrt_record <- function(data_name, data, formula, formula_h0, formula_alone, tested, nsim = 100000) {
  mA <- lme4::lmer(formula, data = data, REML = TRUE, control = tight)
  m0 <- lme4::lmer(formula_h0, data = data, REML = TRUE, control = tight)
  m <- lme4::lmer(formula_alone, data = data, REML = TRUE, control = tight)
  X <- getME(m, "X")
  Z <- as.matrix(getME(m, "Z"))
  mu <- (svd(t(qr.resid(qr(X), Z)), nu = 0, nv = 0)$d)^2
  test <- exactRLRT(m, mA, m0, nsim = nsim, seed = 15003)
  list(data = data_name,
       formula = paste(deparse(formula, width.cutoff = 500L), collapse = " "),
       formula_h0 = paste(deparse(formula_h0, width.cutoff = 500L), collapse = " "),
       tested = tested,
       statistic = unname(test$statistic),
       mu = as.list(sort(mu / max(mu), decreasing = TRUE)),
       p = test$p.value, nsim = nsim)
}

out$rlrt$ter_replication <- rlrt_record(
  "kreutzer_ter", ter, ter ~ system + (1 | sentence_id) + (1 | system:replication),
  ter ~ system + (1 | sentence_id), ter ~ system + (1 | system:replication), "system:replication")
save()
vc4 <- simulate_design("vc4", 60, 2, 2, c(item = 0.01, seed = 0.0002, residual = 0.01), c(0, 0), seed = 15004)
out$rlrt$sim_vc4 <- rlrt_record(
  "tests/data/small_sample_vc4.csv.gz", vc4, score ~ system + (1 | item) + (1 | system:seed),
  score ~ system + (1 | item), score ~ system + (1 | system:seed), "system:seed")
save()
vc8 <- simulate_design("vc8", 60, 2, 4, c(item = 0.01, seed = 0.0002, residual = 0.01), c(0, 0), seed = 15005)
out$rlrt$sim_vc8 <- rlrt_record(
  "tests/data/small_sample_vc8.csv.gz", vc8, score ~ system + (1 | item) + (1 | system:seed),
  score ~ system + (1 | item), score ~ system + (1 | system:seed), "system:seed")
save()
message("wrote ", out_path)
