# glmer reference fits of binary GLMMs with random slopes (Laplace, nAGQ = 1), for tests/test_binary_slopes.py.
# Run from anywhere:  Rscript tests/reference/glmer_slopes.R [JSON_OUT DATA_DIR]
# (by default tests/reference/glmer_slopes.json and tests/data/)
#
# Data: tests/data/verbagg.csv.gz (lme4's VerbAgg, written by lme4_binomial.R; read here, not rewritten) and
# binary_crossed.csv.gz, simulated here (seed below): 60 subjects x 40 items, a within-subject and within-item
# condition c (-0.5/0.5), a two-level text column arm (items' half), 0/1 scores from a logit model with
# correlated intercepts and slopes on both factors (subject SDs 1.0 and 0.7, correlation 0.4; item SDs 0.8 and
# 0.5, correlation -0.3), 15% of the rows removed; and binary_counts.csv.gz, its successes s out of n items per
# subject, condition and arm (binomial counts, fitted as p(s, n)).
#
# Every model is fitted with glmerControl(optimizer = "bobyqa", tolPwrss = 1e-12): glmer's default penalized
# IRLS tolerance leaves its Laplace criterion uncertain in about the third decimal, so the tight fit is the
# optimum to compare with. JSON: {"producer", "versions", "models": {key: {"data", "formula", "link", fit}},
# "tests": {key: {"data", "h0", "h1", "link", "chisq", "df"}}}, fit = {"varcorr": as.data.frame(VarCorr(m)) rows
# (grp, var1, var2, vcov, sdcor), "loglik", "fixef", "std_errors" (of vcov(m), glmer's Hessian-based default),
# "singular", "elapsed_seconds"}.

script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1]))
source(file.path(dirname(script), "lme4_common.R"))
paths <- output_paths(script, "glmer_slopes.json")
json_out <- paths$json
data_dir <- paths$data

set.seed(20261125)
n_subject <- 60; n_item <- 40
grid <- expand.grid(subject = seq_len(n_subject), item = seq_len(n_item), c = c(-0.5, 0.5))
s_eff <- MASS::mvrnorm(n_subject, c(0, 0), matrix(c(1.0, 0.28, 0.28, 0.49), 2))
i_eff <- MASS::mvrnorm(n_item, c(0, 0), matrix(c(0.64, -0.12, -0.12, 0.25), 2))
eta <- 0.3 + 0.8 * grid$c + s_eff[grid$subject, 1] + s_eff[grid$subject, 2] * grid$c +
  i_eff[grid$item, 1] + i_eff[grid$item, 2] * grid$c
grid$y <- rbinom(nrow(grid), 1, plogis(eta))
grid$arm <- ifelse(grid$item <= n_item / 2, "early", "late")
grid <- grid[sample(nrow(grid), round(0.85 * nrow(grid))), ]
grid$subject <- sprintf("s%02d", grid$subject); grid$item <- sprintf("i%02d", grid$item)
con <- gzfile(file.path(data_dir, "binary_crossed.csv.gz"), "w")
utils::write.csv(grid[order(grid$subject, grid$item, grid$c), c("subject", "item", "c", "arm", "y")], con,
                 row.names = FALSE)
close(con)

# binomial counts: the crossed scores of each subject in each condition and arm, summed over the items
counts <- aggregate(cbind(s = y, n = 1) ~ subject + c + arm, data = grid, FUN = sum)
con <- gzfile(file.path(data_dir, "binary_counts.csv.gz"), "w")
utils::write.csv(counts[order(counts$subject, counts$c, counts$arm), ], con, row.names = FALSE)
close(con)

read_data <- function(name) utils::read.csv(file.path(data_dir, name), stringsAsFactors = TRUE)
frames <- list(verbagg = read_data("verbagg.csv.gz"), binary_crossed = read_data("binary_crossed.csv.gz"),
               binary_counts = read_data("binary_counts.csv.gz"))

control <- glmerControl(optimizer = "bobyqa", tolPwrss = 1e-12, optCtrl = list(maxfun = 1e5))
# p(successes, trials) on the left is glmer's cbind(successes, trials - successes)
glmer_formula <- function(formula) sub("^p\\((\\w+), (\\w+)\\)", "cbind(\\1, \\2 - \\1)", formula)
fit <- function(data, formula, link) {
  elapsed <- system.time(m <- glmer(as.formula(glmer_formula(formula)), data = frames[[data]], family = binomial(link),
                                    control = control))[["elapsed"]]
  list(model = m, elapsed = elapsed)
}
record <- function(fitted) {
  m <- fitted$model
  vc <- as.data.frame(VarCorr(m))
  list(varcorr = lapply(seq_len(nrow(vc)), function(i) list(grp = vc$grp[i], var1 = vc$var1[i], var2 = vc$var2[i],
                                                          vcov = vc$vcov[i], sdcor = vc$sdcor[i])),
       loglik = as.numeric(logLik(m)), fixef = as.list(fixef(m)),
       std_errors = as.list(stats::setNames(sqrt(diag(as.matrix(vcov(m)))), names(fixef(m)))), singular = isSingular(m),
       elapsed_seconds = fitted$elapsed)
}
models <- list(
  verbagg_slope = list("verbagg", "r2 ~ Anger + Gender + btype + (1 + Anger | item) + (1 | id)", "logit"),
  verbagg_slope_probit = list("verbagg", "r2 ~ Anger + Gender + btype + (1 + Anger | item) + (1 | id)", "probit"),
  verbagg_intercepts = list("verbagg", "r2 ~ Anger + Gender + btype + (1 | item) + (1 | id)", "logit"),
  verbagg_categorical = list("verbagg", "r2 ~ Anger + Gender + btype + (1 + Gender | item) + (1 | id)", "logit"),
  crossed_maximal = list("binary_crossed", "y ~ c + (1 + c | subject) + (1 + c | item)", "logit"),
  crossed_maximal_probit = list("binary_crossed", "y ~ c + (1 + c | subject) + (1 + c | item)", "probit"),
  crossed_subject_slope = list("binary_crossed", "y ~ c + (1 + c | subject) + (1 | item)", "logit"),
  crossed_intercepts = list("binary_crossed", "y ~ c + (1 | subject) + (1 | item)", "logit"),
  crossed_independent = list("binary_crossed", "y ~ c + (1 + c || subject) + (1 | item)", "logit"),
  crossed_slope_only = list("binary_crossed", "y ~ c + (0 + c | subject) + (1 | item)", "logit"),
  crossed_categorical = list("binary_crossed", "y ~ c + arm + (1 + arm | subject) + (1 | item)", "logit"),
  counts_slope = list("binary_counts", "p(s, n) ~ c + arm + (1 + c | subject)", "logit")
)
fitted <- lapply(models, function(m) fit(m[[1]], m[[2]], m[[3]]))
tests <- list(
  verbagg_item_slope = c("verbagg_intercepts", "verbagg_slope"),
  crossed_item_slope = c("crossed_subject_slope", "crossed_maximal"),
  crossed_subject_slope = c("crossed_intercepts", "crossed_subject_slope")
)
out <- list(
  producer = "tests/reference/glmer_slopes.R",
  versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4"))),
  models = mapply(function(m, f) c(list(data = m[[1]], formula = m[[2]], link = m[[3]]), record(f)),
                  models, fitted, SIMPLIFY = FALSE),
  tests = lapply(tests, function(pair) {
    a <- anova(fitted[[pair[1]]]$model, fitted[[pair[2]]]$model)
    list(data = models[[pair[2]]][[1]], h0 = models[[pair[1]]][[2]], h1 = models[[pair[2]]][[2]],
         link = models[[pair[2]]][[3]], chisq = a$Chisq[2], df = a$Df[2])
  })
)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, null = "null", na = "null"), json_out)
