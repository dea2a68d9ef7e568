# Shared helpers for the lme4 reference scripts in this directory
# (sourced by lme4_public.R, lme4_papers.R, lme4_full_grid.R and small_sample.R).
#
# fit_record(formula, data, method) fits one lmer model and returns a list that is
# written to JSON as one "fit record":
#   formula          the model formula as written
#   method           "REML" or "ML"
#   n_obs            rows used by the fit
#   variances        {name: variance} for each random intercept in formula order, then
#                    "Residual". Names follow bayesrepro: (1|a/b) gives "a" and "a:b".
#   lme4_names       {name: lme4 group name}; differs only for nested terms
#                    (bayesrepro "a:b" from (1|a/b) is lme4 "b:a")
#   n_levels         {name: number of levels}
#   fixed_effects    {lme4 coefficient name: estimate}
#   std_errors       {lme4 coefficient name: standard error}
#   loglik           logLik(fit) (the REML log-likelihood for REML fits)
#   deviance         ML fits: deviance(fit) = -2 loglik; null for REML fits
#   reml_criterion   REML fits: REMLcrit(fit); null for ML fits
#   singular         isSingular(fit) (default tolerance 1e-4)
#   convergence_messages   fit@optinfo$conv$lme4$messages (empty list when none)
#   warnings         warnings and messages raised during the lmer call
#   optimizer        optimizer used (lmer default nloptwrap unless stated)
#   elapsed_seconds  system.time(...)["elapsed"] of the lmer call alone
#   cpu_seconds      user + system CPU time of the same call (less sensitive than
#                    elapsed time to other load on the machine)
# Numbers are written with the shortest decimal that reads back as the same double
# (jsonlite's digits = NA stops at 15 significant digits, which is not exact).

suppressPackageStartupMessages({
  library(lme4)
  library(jsonlite)
})

versions <- function() {
  list(
    R = R.version.string,
    lme4 = as.character(packageVersion("lme4")),
    Matrix = as.character(packageVersion("Matrix")),
    jsonlite = as.character(packageVersion("jsonlite"))
  )
}

# bayesrepro names -> lme4 group names for the random intercepts of a formula.
random_names <- function(formula) {
  text <- paste(deparse(formula, width.cutoff = 500L), collapse = " ")
  hits <- regmatches(text, gregexpr("\\(1 *\\| *[^)]+\\)", text))[[1]]
  ours <- character(0)
  theirs <- character(0)
  for (hit in hits) {
    rhs <- gsub("\\s", "", sub("^\\(1 *\\| *", "", sub("\\)$", "", hit)))
    parts <- strsplit(rhs, "/", fixed = TRUE)[[1]]
    if (length(parts) == 1L) {
      ours <- c(ours, rhs)
      theirs <- c(theirs, rhs)
    } else if (length(parts) == 2L) {
      ours <- c(ours, parts[1], paste(parts[1], parts[2], sep = ":"))
      theirs <- c(theirs, parts[1], paste(parts[2], parts[1], sep = ":"))
    } else {
      stop("only two-level nesting is handled: ", hit)
    }
  }
  stats::setNames(theirs, ours)
}

# Where a reference script writes: its arguments [JSON_OUT DATA_DIR], by default json_name next to the script
# and tests/data.
output_paths <- function(script, json_name) {
  args <- commandArgs(trailingOnly = TRUE)
  ref_dir <- dirname(script)
  list(json = if (length(args) >= 1L) args[[1]] else file.path(ref_dir, json_name),
       data = if (length(args) >= 2L) args[[2]] else file.path(dirname(ref_dir), "data"))
}

# Shortest decimal that round-trips, inserted verbatim into the JSON.
num_json <- function(x) {
  if (!is.finite(x)) return(structure("null", class = "json"))
  for (digits in 15:17) {
    s <- sprintf(paste0("%.", digits, "g"), x)
    if (as.numeric(s) == x) break
  }
  structure(s, class = "json")
}

exact <- function(obj) {
  if (inherits(obj, "json")) return(obj)
  if (is.list(obj)) {
    out <- lapply(obj, exact)
    attributes(out) <- attributes(obj)
    return(out)
  }
  if (is.numeric(obj) && !is.integer(obj)) {
    if (length(obj) == 1L && is.null(names(obj))) return(num_json(obj))
    return(stats::setNames(lapply(unname(obj), num_json), names(obj)))
  }
  obj
}

write_json_exact <- function(obj, path) {
  text <- toJSON(exact(obj), auto_unbox = TRUE, json_verbatim = TRUE,
                 pretty = TRUE, null = "null", na = "null")
  writeLines(text, path)
  invisible(path)
}

fit_lmer <- function(formula, data, method, optimizer = NULL) {
  stopifnot(method %in% c("REML", "ML"))
  control <- if (is.null(optimizer)) lmerControl() else lmerControl(optimizer = optimizer)
  caught <- character(0)
  timing <- system.time(
    fit <- withCallingHandlers(
      lmer(formula, data = data, REML = (method == "REML"), control = control),
      warning = function(w) {
        caught <<- c(caught, conditionMessage(w))
        invokeRestart("muffleWarning")
      },
      message = function(m) {
        caught <<- c(caught, trimws(conditionMessage(m)))
        invokeRestart("muffleMessage")
      }
    )
  )
  list(fit = fit, caught = caught,
       elapsed = round(timing[["elapsed"]], 3),
       cpu = round(timing[["user.self"]] + timing[["sys.self"]], 3))
}

record_of <- function(formula, run, method) {
  fit <- run$fit
  map <- random_names(formula)
  vc <- as.data.frame(VarCorr(fit))
  grp_var <- stats::setNames(vc$vcov, vc$grp)
  stopifnot(setequal(unname(map), setdiff(vc$grp, "Residual")))
  variances <- as.list(grp_var[unname(map)])
  names(variances) <- names(map)
  variances$Residual <- grp_var[["Residual"]]
  n_levels <- as.list(vapply(unname(map), function(g) nlevels(fit@flist[[g]]), integer(1)))
  names(n_levels) <- names(map)
  conv <- fit@optinfo$conv$lme4$messages
  list(
    formula = paste(deparse(formula, width.cutoff = 500L), collapse = " "),
    method = method,
    n_obs = nobs(fit),
    variances = variances,
    lme4_names = as.list(map),
    n_levels = n_levels,
    fixed_effects = as.list(fixef(fit)),
    std_errors = as.list(stats::setNames(sqrt(diag(as.matrix(vcov(fit)))), names(fixef(fit)))),
    loglik = as.numeric(logLik(fit)),
    deviance = if (method == "ML") deviance(fit) else NULL,
    reml_criterion = if (method == "REML") REMLcrit(fit) else NULL,
    singular = isSingular(fit),
    convergence_messages = I(if (is.null(conv)) character(0) else conv),
    warnings = I(run$caught),
    optimizer = fit@optinfo$optimizer,
    elapsed_seconds = run$elapsed,
    cpu_seconds = run$cpu
  )
}

# Fit and record; keep = TRUE also returns the merMod for further use.
# optimizer = NULL uses lmer's default (nloptwrap in lme4 1.1-31).
fit_record <- function(formula, data, method, keep = FALSE, optimizer = NULL) {
  run <- fit_lmer(formula, data, method, optimizer)
  rec <- record_of(formula, run, method)
  message(sprintf("%-5s %-11s %7.1fs  %s", method, rec$optimizer, run$elapsed, rec$formula))
  if (keep) list(record = rec, fit = run$fit) else rec
}

# Likelihood-ratio statistic between two nested fits (h0 inside h1).
lrt <- function(fit0, fit1) {
  chi2 <- 2 * (as.numeric(logLik(fit1)) - as.numeric(logLik(fit0)))
  df <- attr(logLik(fit1), "df") - attr(logLik(fit0), "df")
  list(chi2 = chi2, df = df, p = stats::pchisq(chi2, df, lower.tail = FALSE))
}

# A dataset bundled in bayesrepro/datasets/, every column a factor except the numeric ones.
numeric_columns <- c("ter", "src_length", "score", "accuracy")
load_bundled <- function(name, repo) {
  path <- file.path(repo, "bayesrepro", "datasets", paste0(name, ".csv.gz"))
  frame <- utils::read.csv(path, colClasses = "character")
  for (col in names(frame)) {
    frame[[col]] <- if (col %in% numeric_columns) as.numeric(frame[[col]]) else factor(frame[[col]])
  }
  frame
}
