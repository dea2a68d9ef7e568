# brms reference posterior of the correlated random-slope model Reaction ~ Days + (Days | Subject) on
# tests/data/sleepstudy.csv.gz, with brms's default priors (flat on Days, student_t(3, median, mad) on the
# centred intercept, student_t(3, 0, mad) on the SDs and sigma, lkj(1) on the correlation).
# Run from anywhere:  Rscript tests/reference/brms_slopes.R [JSON_OUT]   (default tests/reference/brms_slopes.json)
# Writes the JSON of brms_common.R's write_brms_record.

file_arg <- sub("^--file=", "", grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1])
source(file.path(dirname(normalizePath(file_arg)), "brms_common.R"))
paths <- reference_paths("sleepstudy.csv.gz", "brms_slopes.json")
data <- read.csv(gzfile(paths$data))

settings <- list(formula = "Reaction ~ Days + (Days | Subject)", chains = 4L, iter = 6000L, warmup = 1000L,
                 seed = 20261125L)
fit <- fit_brms(as.formula(settings$formula), data, gaussian(), settings)
write_brms_record(fit, c(sd_Intercept = "sd_Subject__Intercept", sd_Days = "sd_Subject__Days",
                         cor = "cor_Subject__Intercept__Days", sigma = "sigma"),
                  "tests/reference/brms_slopes.R", settings, paths$json)
