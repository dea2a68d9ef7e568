# lme4 reference fit of the seven-component model on the full Marking grid
# (bayesrepro/datasets/kreutzer_marking_full.csv.gz, 337,284 rows). Slow: minutes.
# Run from anywhere:  Rscript tests/reference/lme4_full_grid.R
#
# Writes tests/reference/lme4_full_grid.json:
#   {
#     "producer": "tests/reference/lme4_full_grid.R",
#     "versions": {"R", "lme4", "Matrix", "jsonlite"},
#     "dataset": "kreutzer_marking_full",
#     "REML": fit record with lmer's default optimizer (nloptwrap),
#     "REML_bobyqa": the same model with optimizer = "bobyqa"
#   }
# Fit records: see lme4_common.R. The file is rewritten after each fit, so
# "REML_bobyqa" is missing while the second fit runs.
# Every column except ter and src_length is read as a factor.

script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
source(file.path(dirname(script), "lme4_common.R"))
ref_dir <- dirname(script)
repo <- dirname(dirname(ref_dir))

path <- file.path(repo, "bayesrepro", "datasets", "kreutzer_marking_full.csv.gz")
data <- utils::read.csv(path, colClasses = "character")
for (col in names(data)) {
  data[[col]] <- if (col %in% c("ter", "src_length")) as.numeric(data[[col]]) else factor(data[[col]])
}

formula <- ter ~ 1 + (1 | sentence_id) + (1 | learning_rate) + (1 | seed) +
  (1 | encoder_dropout) + (1 | decoder_dropout) + (1 | decoder_dropout_hidden) +
  (1 | delta_scheme)

out <- list(
  producer = "tests/reference/lme4_full_grid.R",
  versions = versions(),
  dataset = "kreutzer_marking_full"
)
out_path <- file.path(ref_dir, "lme4_full_grid.json")
out$REML <- fit_record(formula, data, "REML")
write_json_exact(out, out_path)
out$REML_bobyqa <- fit_record(formula, data, "REML", optimizer = "bobyqa")
write_json_exact(out, out_path)
