# Fixed-effect tables as lmerTest reports them: estimate, SE, Satterthwaite df, t and p of every coefficient
# (summary(fit)$coefficients of a REML fit), the reference of Fit.fixed_effects and of vca --json's rows.
# Run from anywhere:  Rscript tests/reference/fixed_effects.R   (a few seconds)
#
# JSON layout: producer, versions, designs: {name: {data, formula, terms [...], estimate [...], std_error [...],
# df [...], t [...], p [...]}} with the terms in lme4's order (bayesrepro's names for the same columns).

here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
source(file.path(here, "lme4_common.R"))
suppressPackageStartupMessages(library(lmerTest))
tight <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhoend = 1e-12, maxfun = 1e5))

design <- function(file, formula, factors) {
  data <- read.csv(file.path(here, "..", "data", file))
  for (f in factors) data[[f]] <- factor(data[[f]])
  fit <- lmerTest::lmer(as.formula(formula), data = data, REML = TRUE, control = tight)
  table <- summary(fit)$coefficients
  list(data = file, formula = formula, terms = rownames(table), estimate = unname(table[, "Estimate"]),
       std_error = unname(table[, "Std. Error"]), df = unname(table[, "df"]), t = unname(table[, "t value"]),
       p = unname(table[, "Pr(>|t|)"]))
}

out <- list(producer = "tests/reference/fixed_effects.R",
            versions = c(versions(), list(lmerTest = as.character(packageVersion("lmerTest")))),
            designs = list(
              unbalanced = design("small_sample_unbalanced.csv.gz", "score ~ system + length + (1|item) + (1|seed)",
                                  c("system", "item", "seed")),
              penicillin = design("penicillin.csv.gz", "diameter ~ 1 + (1|plate) + (1|sample)", c("plate", "sample"))))
write_json_exact(out, file.path(here, "fixed_effects.json"))
