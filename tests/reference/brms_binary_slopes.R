# brms reference posterior of a Bernoulli (logit) model with a correlated random slope,
# y ~ c + (1 + c | subject) + (1 | item) on tests/data/binary_crossed.csv.gz (written by glmer_slopes.R), with
# brms's default priors for the bernoulli family (flat on c, student_t(3, 0, 2.5) on the centred intercept and
# on every SD, lkj(1) on the correlation), for tests/test_bayes_binary_slopes.py.
# Run from anywhere:  Rscript tests/reference/brms_binary_slopes.R [JSON_OUT]
# (default tests/reference/brms_binary_slopes.json). Writes the JSON of brms_common.R's write_brms_record.

file_arg <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1])
source(file.path(dirname(normalizePath(file_arg)), "brms_common.R"))
paths <- reference_paths("binary_crossed.csv.gz", "brms_binary_slopes.json")
data <- read.csv(gzfile(paths$data))

settings <- list(formula = "y ~ c + (1 + c | subject) + (1 | item)", family = "bernoulli(logit)", chains = 4L,
                 iter = 4000L, warmup = 1000L, seed = 20261125L)
fit <- fit_brms(as.formula(settings$formula), data, bernoulli("logit"), settings)
write_brms_record(fit, c(b_Intercept = "b_Intercept", b_c = "b_c", sd_subject_Intercept = "sd_subject__Intercept",
                         sd_subject_c = "sd_subject__c", cor_subject = "cor_subject__Intercept__c",
                         sd_item_Intercept = "sd_item__Intercept"),
                  "tests/reference/brms_binary_slopes.R", settings, paths$json)
