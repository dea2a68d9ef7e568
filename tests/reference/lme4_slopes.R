# lme4 reference fits of random-slope models (correlated and independent terms, crossed maximal designs with
# missing cells, a categorical slope) and likelihood-ratio tests between covariance structures.
# Run from anywhere:  Rscript tests/reference/lme4_slopes.R [JSON_OUT DATA_DIR]
# (by default tests/reference/lme4_slopes.json and tests/data/)
#
# 1. Writes the data to tests/data/:
#    - sleepstudy.csv.gz: lme4's `sleepstudy` (Belenky et al. 2003, J. Sleep Res. 12:1-12), shipped with lme4
#      under the GPL (>= 2), with a column w = sin(1.7 * row) added for singular fits;
#    - crossed_slopes.csv.gz: simulated here (seed below), 30 subjects x 20 items, a within-subject and
#      within-item condition c (-0.5/0.5), correlated slopes on both factors, 20% of the cells removed, and
#      a column block (the items' first two characters) for a nested term subject/block;
#    - categorical_slope.csv.gz: simulated here, 25 groups x a three-level condition x 4 replicates, with
#      correlated effects of every contrast.
# 2. Fits every model by REML and ML and writes tests/reference/lme4_slopes.json:
#    {"producer", "versions", "models": {key: {"data", "formula", "REML": fit, "ML": fit}},
#     "tests": {key: {"data", "h0", "h1", "chisq", "df"}}}
#    fit = {"varcorr": as.data.frame(VarCorr(m)) rows (grp, var1, var2, vcov, sdcor), "loglik",
#           "criterion" (REMLcrit or deviance), "fixef", "singular" (isSingular)}.

suppressMessages({library(lme4); library(jsonlite)})
script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
ref_dir <- dirname(script)
args <- commandArgs(trailingOnly = TRUE)
json_out <- if (length(args) >= 1L) args[[1]] else file.path(ref_dir, "lme4_slopes.json")
data_dir <- if (length(args) >= 2L) args[[2]] else file.path(dirname(ref_dir), "data")

write_gz <- function(frame, name) {
  con <- gzfile(file.path(data_dir, name), "w")
  utils::write.csv(frame, con, row.names = FALSE)
  close(con)
}

sleep <- lme4::sleepstudy
sleep$Subject <- as.character(sleep$Subject)
sleep$w <- sin(seq_len(nrow(sleep)) * 1.7)   # a covariate without a slope in the data: singular fits
write_gz(sleep, "sleepstudy.csv.gz")

set.seed(20261125)
n_subject <- 30; n_item <- 20
grid <- expand.grid(subject = seq_len(n_subject), item = seq_len(n_item), c = c(-0.5, 0.5))
s_eff <- MASS::mvrnorm(n_subject, c(0, 0), matrix(c(1.0, 0.3, 0.3, 0.5), 2))
i_eff <- MASS::mvrnorm(n_item, c(0, 0), matrix(c(0.6, -0.2, -0.2, 0.4), 2))
grid$y <- 2 + 0.8 * grid$c + s_eff[grid$subject, 1] + s_eff[grid$subject, 2] * grid$c +
  i_eff[grid$item, 1] + i_eff[grid$item, 2] * grid$c + rnorm(nrow(grid), 0, 1)
grid <- grid[sample(nrow(grid), round(0.8 * nrow(grid))), ]
grid$subject <- sprintf("s%02d", grid$subject); grid$item <- sprintf("i%02d", grid$item)
grid$block <- substr(grid$item, 1, 2)   # items in three blocks: blocks nested in subjects
write_gz(grid[order(grid$subject, grid$item, grid$c), ], "crossed_slopes.csv.gz")

cat_grid <- expand.grid(g = seq_len(25), cond = c("a", "b", "c"), rep = 1:4, stringsAsFactors = FALSE)
g_eff <- MASS::mvrnorm(25, c(0, 0, 0), matrix(c(1.0, 0.4, 0.2, 0.4, 0.8, 0.3, 0.2, 0.3, 0.6), 3))
contrast <- cbind(1, cat_grid$cond == "b", cat_grid$cond == "c")
cat_grid$score <- drop(contrast %*% c(1, 0.5, -0.3)) + rowSums(contrast * g_eff[cat_grid$g, ]) +
  rnorm(nrow(cat_grid), 0, 0.7)
cat_grid$g <- sprintf("g%02d", cat_grid$g)
write_gz(cat_grid[, c("g", "cond", "rep", "score")], "categorical_slope.csv.gz")

read_data <- function(name) utils::read.csv(file.path(data_dir, name), stringsAsFactors = TRUE)
frames <- list(sleepstudy = read_data("sleepstudy.csv.gz"), crossed_slopes = read_data("crossed_slopes.csv.gz"),
               categorical_slope = read_data("categorical_slope.csv.gz"))

control <- lmerControl(optimizer = "bobyqa", optCtrl = list(maxfun = 1e5))
record <- function(m) {
  vc <- as.data.frame(VarCorr(m))
  list(varcorr = lapply(seq_len(nrow(vc)), function(i) list(grp = vc$grp[i], var1 = vc$var1[i], var2 = vc$var2[i],
                                                          vcov = vc$vcov[i], sdcor = vc$sdcor[i])),
       loglik = as.numeric(logLik(m)), criterion = if (isREML(m)) REMLcrit(m) else deviance(m),
       fixef = as.list(fixef(m)), singular = isSingular(m))
}
models <- list(
  sleep_correlated = list("sleepstudy", "Reaction ~ Days + (Days | Subject)"),
  sleep_independent = list("sleepstudy", "Reaction ~ Days + (Days || Subject)"),
  sleep_intercept = list("sleepstudy", "Reaction ~ Days + (1 | Subject)"),
  sleep_slope_only = list("sleepstudy", "Reaction ~ Days + (0 + Days | Subject)"),
  singular_correlation = list("sleepstudy", "Reaction ~ Days + (1 + w | Subject)"),
  singular_variance = list("sleepstudy", "Reaction ~ Days + (1 | Subject) + (0 + w | Subject)"),
  crossed_maximal = list("crossed_slopes", "y ~ c + (1 + c | subject) + (1 + c | item)"),
  crossed_intercepts = list("crossed_slopes", "y ~ c + (1 | subject) + (1 | item)"),
  crossed_independent = list("crossed_slopes", "y ~ c + (c || subject) + (c || item)"),
  nested = list("crossed_slopes", "y ~ c + (1 + c | subject/block)"),
  categorical = list("categorical_slope", "score ~ cond + (1 + cond | g)"),
  categorical_cell_means = list("categorical_slope", "score ~ cond + (0 + cond | g)")
)
fits <- list()
out_models <- list()
for (key in names(models)) {
  data <- frames[[models[[key]][[1]]]]
  formula <- as.formula(models[[key]][[2]])
  reml <- lmer(formula, data, REML = TRUE, control = control)
  ml <- lmer(formula, data, REML = FALSE, control = control)
  fits[[key]] <- ml
  out_models[[key]] <- list(data = models[[key]][[1]], formula = models[[key]][[2]], REML = record(reml),
                            ML = record(ml))
}
tests <- list(
  sleep_slope = c("sleep_intercept", "sleep_correlated"),
  sleep_correlation = c("sleep_independent", "sleep_correlated"),
  crossed_slopes = c("crossed_intercepts", "crossed_maximal")
)
out_tests <- list()
for (key in names(tests)) {
  h0 <- tests[[key]][1]; h1 <- tests[[key]][2]
  a <- anova(fits[[h0]], fits[[h1]], refit = FALSE)
  out_tests[[key]] <- list(data = models[[h1]][[1]], h0 = models[[h0]][[2]], h1 = models[[h1]][[2]],
                           chisq = a$Chisq[2], df = a$Df[2])
}
out <- list(producer = "tests/reference/lme4_slopes.R",
            versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                            Matrix = as.character(packageVersion("Matrix"))),
            models = out_models, tests = out_tests)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, na = "null"),
           json_out)
