# lme4 reference fits on the paper datasets bundled in bayesrepro/datasets/*.csv.gz.
# Run from anywhere:  Rscript tests/reference/lme4_papers.R
# Every column except ter, src_length, score and accuracy is read as a factor (load_bundled).
# The seven-component model on the full Marking grid is slow and lives in
# lme4_full_grid.R (output lme4_full_grid.json).
#
# Writes tests/reference/lme4_papers.json ("fit record": see lme4_common.R;
# "test" = {"chi2", "df", "p"} with p from chi2(df)):
#   producer, versions
#   kreutzer_annotation: {mode ("Marking", "Post Edit"): {"REML": fit, "ML": fit}}
#   kreutzer_ter:
#     m1 {"ML", "REML"}, m0 {"ML"}          ter ~ system (+ nothing) + (1|sentence_id)
#     system_lrt_ml: test (m0 vs m1, ML)
#     residual_sd_m1 {"ML", "REML"}         sigma(m1)
#     effect_size {"ML", "REML"}: {"Baseline-Marking", "Baseline-PostEdit"}
#                                           (Baseline - system) / sigma(m1)
#     length_classes: {definition, counts, interaction {"ML"}, additive {"ML"}, lrt_ml: test}
#     averaged: mean ter per sentence_id x system, then lm ter ~ system vs ter ~ 1:
#               {n_obs, coefficients, residual_sd, f_test {F, df1, df2, p}, lrt: test}
#     replication_variance: {h1 {"ML","REML"}, lrt_ml: test, lrt_reml: test}
#                           h1 adds (1|system:replication) to m1; each test also has
#                           "p_boundary" = p / 2 (chi2_0:1 mixture, variance on the boundary)
#   sofa_mlp_grid: {"REML": fit, "ML": fit, "REML_bobyqa": fit}
#   kreutzer_marking_partial: {design_note, seven {"REML", "REML_bobyqa"},
#                              minimal {"REML"}, nested {"REML"}}
# "REML" uses lmer's default optimizer (nloptwrap); "REML_bobyqa" refits with
# optimizer = "bobyqa", which reaches a slightly lower REML criterion on these two
# nearly flat likelihoods.
#   kreutzer_marking_full: {minimal: {"REML": fit}, seven: "lme4_full_grid.json"}

script <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  normalizePath(sub("^--file=", "", arg[1]))
})
source(file.path(dirname(script), "lme4_common.R"))
ref_dir <- dirname(script)
repo <- dirname(dirname(ref_dir))
out_path <- file.path(ref_dir, "lme4_papers.json")


with_boundary <- function(test) c(test, list(p_boundary = test$p / 2))

out <- list(producer = "tests/reference/lme4_papers.R", versions = versions())
save <- function() write_json_exact(out, out_path)

# --- kreutzer_annotation: G-study per mode -------------------------------------
annotation <- load_bundled("kreutzer_annotation", repo)
f_annot <- score ~ 1 + (1 | sentence) + (1 | rater) + (1 | occasion) +
  (1 | sentence:rater) + (1 | sentence:occasion) + (1 | rater:occasion)
out$kreutzer_annotation <- list()
for (mode in c("Marking", "Post Edit")) {
  rows <- droplevels(annotation[annotation$mode == mode, ])
  out$kreutzer_annotation[[mode]] <- list(
    REML = fit_record(f_annot, rows, "REML"),
    ML = fit_record(f_annot, rows, "ML")
  )
}
save()

# --- kreutzer_ter: system comparison -------------------------------------------
ter <- load_bundled("kreutzer_ter", repo)
stopifnot(identical(levels(ter$system), c("Baseline", "Marking", "PostEdit")))
f1 <- ter ~ system + (1 | sentence_id)
f0 <- ter ~ 1 + (1 | sentence_id)
m1_ml <- fit_record(f1, ter, "ML", keep = TRUE)
m1_reml <- fit_record(f1, ter, "REML", keep = TRUE)
m0_ml <- fit_record(f0, ter, "ML", keep = TRUE)

effect_sizes <- function(fit) {
  b <- fixef(fit)
  list(`Baseline-Marking` = -b[["systemMarking"]] / sigma(fit),
       `Baseline-PostEdit` = -b[["systemPostEdit"]] / sigma(fit))
}

ter$len <- factor(
  ifelse(ter$src_length <= 15, "short", ifelse(ter$src_length <= 55, "typical", "very long")),
  levels = c("short", "typical", "very long")
)
m_int <- fit_record(ter ~ system * len + (1 | sentence_id), ter, "ML", keep = TRUE)
m_add <- fit_record(ter ~ system + len + (1 | sentence_id), ter, "ML", keep = TRUE)

averaged <- stats::aggregate(ter ~ sentence_id + system, data = ter, FUN = mean)
lm1 <- stats::lm(ter ~ system, data = averaged)
lm0 <- stats::lm(ter ~ 1, data = averaged)
f_test <- stats::anova(lm0, lm1)

f_rep <- ter ~ system + (1 | sentence_id) + (1 | system:replication)
rep_ml <- fit_record(f_rep, ter, "ML", keep = TRUE)
rep_reml <- fit_record(f_rep, ter, "REML", keep = TRUE)

out$kreutzer_ter <- list(
  m1 = list(ML = m1_ml$record, REML = m1_reml$record),
  m0 = list(ML = m0_ml$record),
  system_lrt_ml = lrt(m0_ml$fit, m1_ml$fit),
  residual_sd_m1 = list(ML = sigma(m1_ml$fit), REML = sigma(m1_reml$fit)),
  effect_size = list(ML = effect_sizes(m1_ml$fit), REML = effect_sizes(m1_reml$fit)),
  length_classes = list(
    definition = "short: src_length <= 15; typical: 16-55; very long: > 55",
    counts = as.list(table(ter$len)),
    interaction = list(ML = m_int$record),
    additive = list(ML = m_add$record),
    lrt_ml = lrt(m_add$fit, m_int$fit)
  ),
  averaged = list(
    n_obs = nrow(averaged),
    coefficients = as.list(stats::coef(lm1)),
    residual_sd = sigma(lm1),
    f_test = list(F = f_test$F[2], df1 = f_test$Df[2], df2 = f_test$Res.Df[2],
                  p = f_test$`Pr(>F)`[2]),
    lrt = lrt(lm0, lm1)
  ),
  replication_variance = list(
    h1 = list(ML = rep_ml$record, REML = rep_reml$record),
    lrt_ml = with_boundary(lrt(m1_ml$fit, rep_ml$fit)),
    lrt_reml = with_boundary(lrt(m1_reml$fit, rep_reml$fit))
  )
)
save()

# --- sofa_mlp_grid: meta-parameter importance -----------------------------------
sofa <- load_bundled("sofa_mlp_grid", repo)
f_sofa <- accuracy ~ 1 + (1 | hidden_size_max) + (1 | hidden_number) + (1 | learning_rate) +
  (1 | batch_size) + (1 | random_seed) + (1 | epochs) + (1 | dropout)
out$sofa_mlp_grid <- list(REML = fit_record(f_sofa, sofa, "REML"),
                          ML = fit_record(f_sofa, sofa, "ML"),
                          REML_bobyqa = fit_record(f_sofa, sofa, "REML", optimizer = "bobyqa"))
save()

# --- kreutzer_marking_partial / _full: reliability of the grids -----------------
f_seven <- ter ~ 1 + (1 | sentence_id) + (1 | learning_rate) + (1 | seed) +
  (1 | encoder_dropout) + (1 | decoder_dropout) + (1 | decoder_dropout_hidden) +
  (1 | delta_scheme)
f_minimal <- ter ~ 1 + (1 | sentence_id)
f_nested <- ter ~ 1 + (1 | sentence_id) + (1 | learning_rate/src_length_class)

partial <- load_bundled("kreutzer_marking_partial", repo)
configs <- unique(partial[, c("encoder_dropout", "decoder_dropout", "decoder_dropout_hidden")])
# The partial grid pairs encoder_dropout and decoder_dropout_hidden one to one, and
# decoder_dropout is a function of them: only the sum of those variances is identified.
stopifnot(nrow(unique(configs[, c("encoder_dropout", "decoder_dropout_hidden")])) == 3L,
          nrow(unique(configs)) == 3L)
out$kreutzer_marking_partial <- list(
  design_note = paste(
    "encoder_dropout and decoder_dropout_hidden take the same 3-way split of the",
    "54 configurations and decoder_dropout merges two of its groups, so only the sum",
    "of these variances is identified in the seven-component model"),
  seven = list(REML = fit_record(f_seven, partial, "REML"),
               REML_bobyqa = fit_record(f_seven, partial, "REML", optimizer = "bobyqa")),
  minimal = list(REML = fit_record(f_minimal, partial, "REML")),
  nested = list(REML = fit_record(f_nested, partial, "REML"))
)
save()

full <- load_bundled("kreutzer_marking_full", repo)
out$kreutzer_marking_full <- list(
  minimal = list(REML = fit_record(f_minimal, full, "REML")),
  seven = "lme4_full_grid.json"
)
save()
