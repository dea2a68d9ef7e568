# Pairwise contrasts of a categorical fixed effect of a random-slope model as lmerTest reports them: the
# reference of the REML side of `bayesrepro compare` on slope models.
# Run from anywhere:  Rscript tests/reference/compare_slopes.R [JSON_OUT]   (a few seconds)
#
# Data: tests/data/categorical_slope.csv.gz (written by lme4_slopes.R; 25 groups x three conditions x 4
# replicates, true condition effects b - a = 0.5, c - a = -0.3). Per pair of levels (i, j) of cond, the
# contrast mean(i) - mean(j) by contest(fit, L, ddf = "Satterthwaite", joint = FALSE): estimate, std_error,
# df, t, p; and the omnibus anova(fit, ddf = "Satterthwaite") F test of cond. "by_numeric": the same for the
# differences of the slopes in rep (a numeric column) between the levels of cond, score ~ cond * rep + (1 + cond | g),
# and the F test of cond:rep (compare --by rep).

here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
source(file.path(here, "lme4_common.R"))
suppressPackageStartupMessages(library(lmerTest))
args <- commandArgs(trailingOnly = TRUE)
json_out <- if (length(args) >= 1L) args[[1]] else file.path(here, "compare_slopes.json")
tight <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e5))

data <- read.csv(file.path(here, "..", "data", "categorical_slope.csv.gz"), stringsAsFactors = TRUE)
formula <- "score ~ cond + (1 + cond | g)"
fit <- lmerTest::lmer(as.formula(formula), data = data, REML = TRUE, control = tight)
levels <- levels(data$cond)
# treatment coding: the mean of level k is (Intercept) + its coefficient (none for the first level)
mean_row <- function(k) c(1, as.numeric(seq_along(levels)[-1] == k))
pairs <- combn(seq_along(levels), 2)
contrasts <- lapply(seq_len(ncol(pairs)), function(p) {
  i <- pairs[1, p]; j <- pairs[2, p]
  row <- contest(fit, matrix(mean_row(i) - mean_row(j), nrow = 1), ddf = "Satterthwaite", joint = FALSE)
  list(contrast = paste(levels[i], "-", levels[j]), estimate = row$Estimate, std_error = row[["Std. Error"]],
       df = row$df, t = row[["t value"]], p = row[["Pr(>|t|)"]])
})
omnibus <- anova(fit, ddf = "Satterthwaite", type = 3)

# --by a numeric property: the slope in rep per level of cond, rep + cond_k:rep, and the differences of slopes
by_formula <- "score ~ cond * rep + (1 + cond | g)"
by_fit <- lmerTest::lmer(as.formula(by_formula), data = data, REML = TRUE, control = tight)
slope_row <- function(k) {
  row <- setNames(numeric(length(fixef(by_fit))), names(fixef(by_fit)))
  row["rep"] <- 1
  if (k > 1) row[paste0("cond", levels[k], ":rep")] <- 1
  row
}
slope_contrasts <- lapply(seq_len(ncol(pairs)), function(p) {
  i <- pairs[1, p]; j <- pairs[2, p]
  row <- contest(by_fit, matrix(slope_row(i) - slope_row(j), nrow = 1), ddf = "Satterthwaite", joint = FALSE)
  list(contrast = paste(levels[i], "-", levels[j]), estimate = row$Estimate, std_error = row[["Std. Error"]],
       df = row$df, t = row[["t value"]], p = row[["Pr(>|t|)"]])
})
interaction <- anova(by_fit, ddf = "Satterthwaite", type = 3)["cond:rep", ]

out <- list(producer = "tests/reference/compare_slopes.R",
            versions = c(versions(), list(lmerTest = as.character(packageVersion("lmerTest")))),
            data = "categorical_slope.csv.gz", formula = formula, reml_criterion = REMLcrit(fit),
            contrasts = contrasts,
            anova = list(f = omnibus[["F value"]], ndf = omnibus$NumDF, ddf = omnibus$DenDF, p = omnibus[["Pr(>F)"]]),
            by_numeric = list(formula = by_formula, reml_criterion = REMLcrit(by_fit), contrasts = slope_contrasts,
                              anova = list(f = interaction[["F value"]], ndf = interaction$NumDF,
                                           ddf = interaction$DenDF, p = interaction[["Pr(>F)"]])))
write_json_exact(out, json_out)
