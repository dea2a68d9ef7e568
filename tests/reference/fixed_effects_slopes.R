# Small-sample tests of the fixed effects of random-slope models as lmerTest and pbkrtest report them: the
# reference of Satterthwaite and Kenward-Roger for slope models (Fit.fixed_effects, glrt --reference).
# Run from anywhere:  Rscript tests/reference/fixed_effects_slopes.R [JSON_OUT]   (a few seconds)
#
# Per design, the REML fit with tight bobyqa tolerances and
#   satterthwaite / kenward_roger: summary(fit, ddf = ...)$coefficients: terms, estimate, std_error, df, t, p;
#   anova_satterthwaite / anova_kenward_roger: anova(fit, ddf = ...) (type III): terms, f, ndf, ddf, p.
# The data are tests/data/*.csv.gz (written by lme4_slopes.R); "crossed_categorical" reads the numeric
# condition c of crossed_slopes as a factor (levels -0.5, 0.5: bayesrepro's c[0.5], lme4's c0.5); the last two
# designs are singular fits (a correlation of -1; a zero variance).

here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
source(file.path(here, "lme4_common.R"))
suppressPackageStartupMessages({library(lmerTest); library(pbkrtest)})
args <- commandArgs(trailingOnly = TRUE)
json_out <- if (length(args) >= 1L) args[[1]] else file.path(here, "fixed_effects_slopes.json")
tight <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e5))

coefficients_of <- function(fit, ddf) {
  table <- summary(fit, ddf = ddf)$coefficients
  list(terms = rownames(table), estimate = unname(table[, "Estimate"]), std_error = unname(table[, "Std. Error"]),
       df = unname(table[, "df"]), t = unname(table[, "t value"]), p = unname(table[, "Pr(>|t|)"]))
}

anova_of <- function(fit, ddf) {
  table <- anova(fit, ddf = ddf, type = 3)
  list(terms = rownames(table), f = unname(table[, "F value"]), ndf = unname(table[, "NumDF"]),
       ddf = unname(table[, "DenDF"]), p = unname(table[, "Pr(>F)"]))
}

design <- function(file, formula, factors = character(0)) {
  data <- read.csv(file.path(here, "..", "data", file), stringsAsFactors = TRUE)
  for (f in factors) data[[f]] <- factor(data[[f]])
  fit <- lmerTest::lmer(as.formula(formula), data = data, REML = TRUE, control = tight)
  list(data = file, formula = formula, categorical = as.list(factors), singular = isSingular(fit),
       reml_criterion = REMLcrit(fit),
       satterthwaite = coefficients_of(fit, "Satterthwaite"), kenward_roger = coefficients_of(fit, "Kenward-Roger"),
       anova_satterthwaite = anova_of(fit, "Satterthwaite"), anova_kenward_roger = anova_of(fit, "Kenward-Roger"))
}

out <- list(producer = "tests/reference/fixed_effects_slopes.R",
            versions = c(versions(), list(lmerTest = as.character(packageVersion("lmerTest")),
                                          pbkrtest = as.character(packageVersion("pbkrtest")))),
            designs = list(
              sleep_correlated = design("sleepstudy.csv.gz", "Reaction ~ Days + (Days | Subject)"),
              sleep_independent = design("sleepstudy.csv.gz", "Reaction ~ Days + (Days || Subject)"),
              crossed_categorical = design("crossed_slopes.csv.gz", "y ~ c + (1 + c | subject) + (1 + c | item)",
                                           "c"),
              categorical_three_levels = design("categorical_slope.csv.gz", "score ~ cond + (1 + cond | g)"),
              singular_correlation = design("sleepstudy.csv.gz", "Reaction ~ Days + (1 + w | Subject)"),
              singular_nested = design("crossed_slopes.csv.gz", "y ~ c + (1 + c | subject/block)")))
write_json_exact(out, json_out)
