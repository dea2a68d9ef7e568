# glmer reference of `compare` on a binary model with a random slope of the compared factor, for
# tests/test_compare_binary_slopes.py. Run from anywhere:
#   Rscript tests/reference/glmer_compare_slopes.R [JSON_OUT DATA_DIR]
# (by default tests/reference/glmer_compare_slopes.json and tests/data/)
#
# Data: binary_system_slopes.csv.gz, simulated here (seed below): 16 subjects x 3 systems (a, b, c) x 24 items,
# 0/1 scores from a logit model with correlated subject intercepts and system slopes (SDs 1.0, 0.6, 0.5;
# correlations 0.3, 0.2, 0.4) and item intercepts (SD 0.8); system effects b - a = 0.5, c - a = -0.3.
#
# H1: y ~ system + (1 + system | subject) + (1 | item); H0 drops the fixed system terms and keeps the random
# structure. Both by glmer (Laplace) with glmerControl(optimizer = "bobyqa", tolPwrss = 1e-12), as
# glmer_slopes.R. JSON: {"producer", "versions", "data", "h0", "h1", "loglik0", "loglik1", "chisq", "df",
# "fixef", "contrasts": [{"contrast" ("b - a" style, level minus level), "estimate", "std_error", "z", "p"}]},
# the contrasts' standard errors from vcov(m1) (glmer's Hessian-based default).

script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1]))
source(file.path(dirname(script), "lme4_common.R"))
paths <- output_paths(script, "glmer_compare_slopes.json")

set.seed(20261126)
n_subject <- 16; n_item <- 24; systems <- c("a", "b", "c")
sd <- c(1.0, 0.6, 0.5)
corr <- matrix(c(1, 0.3, 0.2, 0.3, 1, 0.4, 0.2, 0.4, 1), 3)
s_eff <- MASS::mvrnorm(n_subject, rep(0, 3), diag(sd) %*% corr %*% diag(sd))
i_eff <- rnorm(n_item, 0, 0.8)
grid <- expand.grid(subject = seq_len(n_subject), item = seq_len(n_item), system = systems,
                    stringsAsFactors = FALSE)
k <- match(grid$system, systems)
eta <- 0.2 + c(0, 0.5, -0.3)[k] + s_eff[cbind(grid$subject, 1)] + ifelse(k > 1, s_eff[cbind(grid$subject, pmax(k, 2))], 0) +
  i_eff[grid$item]
grid$y <- rbinom(nrow(grid), 1, plogis(eta))
grid$subject <- sprintf("s%02d", grid$subject); grid$item <- sprintf("i%02d", grid$item)
grid <- grid[order(grid$subject, grid$item, grid$system), c("subject", "item", "system", "y")]
con <- gzfile(file.path(paths$data, "binary_system_slopes.csv.gz"), "w")
utils::write.csv(grid, con, row.names = FALSE)
close(con)

data <- utils::read.csv(file.path(paths$data, "binary_system_slopes.csv.gz"), stringsAsFactors = TRUE)
control <- glmerControl(optimizer = "bobyqa", tolPwrss = 1e-12, optCtrl = list(maxfun = 1e5))
h1 <- "y ~ system + (1 + system | subject) + (1 | item)"
h0 <- "y ~ 1 + (1 + system | subject) + (1 | item)"
m1 <- glmer(as.formula(h1), data = data, family = binomial, control = control)
m0 <- glmer(as.formula(h0), data = data, family = binomial, control = control)
a <- anova(m0, m1)
beta <- fixef(m1); V <- as.matrix(vcov(m1))
weights <- function(level) { w <- stats::setNames(rep(0, length(beta)), names(beta)); if (level != "a") w[paste0("system", level)] <- 1; w }
contrasts <- lapply(combn(systems, 2, simplify = FALSE), function(pair) {
  w <- weights(pair[1]) - weights(pair[2])
  estimate <- sum(w * beta); se <- sqrt(drop(t(w) %*% V %*% w))
  list(contrast = paste(pair[1], "-", pair[2]), estimate = estimate, std_error = se, z = estimate / se,
       p = 2 * pnorm(-abs(estimate / se)))
})
out <- list(producer = "tests/reference/glmer_compare_slopes.R",
            versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4"))),
            data = "binary_system_slopes.csv.gz", h0 = h0, h1 = h1,
            loglik0 = as.numeric(logLik(m0)), loglik1 = as.numeric(logLik(m1)), chisq = a$Chisq[2], df = a$Df[2],
            fixef = as.list(beta), singular = c(isSingular(m0), isSingular(m1)), contrasts = contrasts)
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE, null = "null", na = "null"), paths$json)
