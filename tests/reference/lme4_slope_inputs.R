# lme4 references of tests/test_slope_inputs.py on tests/data/sleepstudy.csv.gz.
# Usage: Rscript tests/reference/lme4_slope_inputs.R tests/reference/lme4_slope_inputs.json
suppressMessages({library(lme4); library(jsonlite)})
out <- commandArgs(trailingOnly = TRUE)[1]
d <- read.csv(gzfile("tests/data/sleepstudy.csv.gz"))
d$Subject <- factor(d$Subject)
d$parity <- ifelse(d$Days %% 2 == 0, "even", "odd")
d$half <- ifelse(d$Days < 5, "early", "late")
uncorrelated <- lmer(Reaction ~ Days + (Days || Subject), d)
vc <- as.data.frame(VarCorr(uncorrelated))
interaction <- suppressMessages(lmer(Reaction ~ Days + (1 + parity * half | Subject), d))
result <- list(
  producer = "tests/reference/lme4_slope_inputs.R",
  versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4"))),
  uncorrelated = list(formula = "Reaction ~ Days + (Days||Subject)", reml = REMLcrit(uncorrelated),
                      intercept_variance = vc$vcov[vc$var1 == "(Intercept)" & is.na(vc$var2)][1],
                      slope_variance = vc$vcov[vc$var1 == "Days" & is.na(vc$var2)][1],
                      residual_variance = sigma(uncorrelated)^2,
                      mean_days_squared = mean(d$Days^2)),
  interaction = list(formula = "Reaction ~ Days + (1 + parity*half|Subject)", reml = REMLcrit(interaction),
                     singular = isSingular(interaction))
)
write_json(result, out, auto_unbox = TRUE, digits = NA, pretty = TRUE)
