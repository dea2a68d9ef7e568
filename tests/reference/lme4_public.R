# lme4 reference fits on public datasets shipped with lme4.
# Run from anywhere:  Rscript tests/reference/lme4_public.R
#
# 1. Exports Dyestuff, Penicillin, Pastes and InstEval to tests/data/<name>.csv.gz
#    (write.csv, grouping columns quoted strings, responses numeric).
# 2. Reads those files back (grouping columns as factors) and fits each model with
#    REML and ML, writing tests/reference/lme4_public.json:
#    {
#      "producer": "tests/reference/lme4_public.R",
#      "versions": {"R", "lme4", "Matrix", "jsonlite"},
#      "datasets": {name: {"file", "n_rows", "columns"}},
#      "models": {key: {"dataset", "REML": fit record, "ML": fit record}}
#    }
#    The fit record is described in lme4_common.R.

script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
source(file.path(dirname(script), "lme4_common.R"))
ref_dir <- dirname(script)
data_dir <- file.path(dirname(ref_dir), "data")
dir.create(data_dir, showWarnings = FALSE)

# name -> (lme4 data frame, grouping columns, response, model formulas)
specs <- list(
  dyestuff = list(
    frame = lme4::Dyestuff[, c("Batch", "Yield")],
    factors = "Batch",
    models = list(dyestuff = Yield ~ 1 + (1 | Batch))
  ),
  penicillin = list(
    frame = lme4::Penicillin[, c("plate", "sample", "diameter")],
    factors = c("plate", "sample"),
    models = list(penicillin = diameter ~ 1 + (1 | plate) + (1 | sample))
  ),
  pastes = list(
    frame = lme4::Pastes[, c("batch", "cask", "sample", "strength")],
    factors = c("batch", "cask", "sample"),
    models = list(pastes = strength ~ 1 + (1 | batch/cask))
  ),
  insteval = list(
    frame = transform(lme4::InstEval, y = as.numeric(y)),
    factors = c("s", "d", "studage", "lectage", "service", "dept"),
    models = list(
      insteval = y ~ 1 + service + (1 | s) + (1 | d) + (1 | dept),
      insteval_sd = y ~ 1 + (1 | s) + (1 | d)
    )
  )
)

read_back <- function(path, factors) {
  classes <- stats::setNames(rep("character", length(factors)), factors)
  frame <- utils::read.csv(path, colClasses = classes)
  for (col in factors) frame[[col]] <- factor(frame[[col]])
  frame
}

out <- list(
  producer = "tests/reference/lme4_public.R",
  versions = versions(),
  datasets = list(),
  models = list()
)

for (name in names(specs)) {
  spec <- specs[[name]]
  frame <- spec$frame
  for (col in spec$factors) frame[[col]] <- as.character(frame[[col]])
  path <- file.path(data_dir, paste0(name, ".csv.gz"))
  con <- gzfile(path, "w")
  utils::write.csv(frame, con, row.names = FALSE)
  close(con)
  data <- read_back(path, spec$factors)
  stopifnot(nrow(data) == nrow(spec$frame))
  out$datasets[[name]] <- list(
    file = paste0("tests/data/", name, ".csv.gz"),
    n_rows = nrow(data),
    columns = I(names(data))
  )
  for (key in names(spec$models)) {
    formula <- spec$models[[key]]
    out$models[[key]] <- list(
      dataset = name,
      REML = fit_record(formula, data, "REML"),
      ML = fit_record(formula, data, "ML")
    )
    write_json_exact(out, file.path(ref_dir, "lme4_public.json"))
  }
}
