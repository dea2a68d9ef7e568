"""The papers' analyses on the bundled data, printed as their tables (`bayesrepro demo`)."""

from __future__ import annotations

from .datasets import load_dataset
from .frequentist.lmm import fit_lmm
from .frequentist.analyses import averaged_comparison, compare_conditional, compare_levels, variance_component_test
from .properties import length_class
from .reliability import consistency_across, d_study, koo_li_label, phi

ANNOTATION = (
    "score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater)"
    " + (1|sentence:occasion) + (1|rater:occasion)"
)
GRID = (
    "ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout)"
    " + (1|decoder_dropout) + (1|decoder_dropout_hidden) + (1|delta_scheme)"
)
SOFA = (
    "accuracy ~ 1 + (1|hidden_size_max) + (1|hidden_number) + (1|learning_rate) + (1|batch_size)"
    " + (1|random_seed) + (1|epochs) + (1|dropout)"
)


def run_demo(out=print) -> None:
    _significance(out)
    _annotation_reliability(out)
    _meta_parameter_importance(out)
    _grid_reliability(out)
    _hyperparameter_assessment(out)


def _heading(out, text: str) -> None:
    out("")
    out(text)
    out("=" * len(text))


def _significance(out) -> None:
    ter = load_dataset("kreutzer_ter")
    ter["len"] = length_class(ter["src_length"])
    _heading(out, "Significance: Baseline vs Marking vs PostEdit on kreutzer_ter (TER, lower is better)")
    out(str(averaged_comparison(ter, "ter", "system", "sentence_id")))
    out("")
    out(str(compare_levels("ter ~ system + (1|sentence_id)", ter, "system")))
    out("")
    out("Conditional on sentence length (short <= 15 < typical <= 55 < very long):")
    out(str(compare_conditional("ter ~ system*len + (1|sentence_id)", ter, "system", "len")))
    out("")
    out("Does the replication (random seed) matter?")
    out(str(variance_component_test("ter ~ system + (1|sentence_id) + (1|system:replication)", "system:replication", ter)))


def _annotation_reliability(out) -> None:
    annotation = load_dataset("kreutzer_annotation")
    for mode in ("Marking", "Post Edit"):
        _heading(out, f"Annotation reliability, mode {mode} (sentence x rater x occasion G-study)")
        fit = fit_lmm(ANNOTATION, annotation, where=f"mode == '{mode}'")
        out(str(fit))
        value = float(phi(fit.variances, "sentence"))
        out(f"phi (sentence) = {value:.3f}: {koo_li_label(value)}")
        out(f"intra-rater reliability (same rater, another occasion) = {float(consistency_across(fit.variances, 'occasion')):.3f}")
        out(f"inter-rater reliability (another rater, same occasion) = {float(consistency_across(fit.variances, 'rater')):.3f}")
        out("D-study, scores averaged over n raters (one occasion): n, Phi, E rho^2")
        for n in (1, 2, 3, 5, 10, 20):
            study = d_study(fit.variances, "sentence", {"rater": n})
            out(f"  {n:>3}  {float(study['phi']):.3f}  {float(study['e_rho2']):.3f}")


def _meta_parameter_importance(out) -> None:
    _heading(out, "Meta-parameter importance on sofa_mlp_grid (one accuracy per trained MLP)")
    out(str(fit_lmm(SOFA, load_dataset("sofa_mlp_grid"))))


def _grid_reliability(out) -> None:
    for name in ("kreutzer_marking_partial", "kreutzer_marking_full"):
        data = load_dataset(name)
        _heading(out, f"Reliability of the meta-parameter grid {name} ({len(data)} scores)")
        fit = fit_lmm(GRID, data)
        out(str(fit))
        value = float(phi(fit.variances, "sentence_id"))
        out(f"phi (sentence_id) = {value:.3f}: {koo_li_label(value)}")
    out("")
    out("Learning rate x sentence length (nested facet, full grid):")
    data["len"] = length_class(data["src_length"])
    out(str(fit_lmm("ter ~ 1 + (1|sentence_id) + (1|learning_rate/len)", data)))


def _hyperparameter_assessment(out) -> None:
    data = load_dataset("kreutzer_marking_partial")
    _heading(out, "Hyperparameter assessment on kreutzer_marking_partial: the learning rate as fixed effect")
    out(str(compare_levels("ter ~ learning_rate + (1|sentence_id)", data, "learning_rate")))
    out("")
    out("Conditional on the sentence length class:")
    out(str(compare_conditional("ter ~ learning_rate*src_length_class + (1|sentence_id)", data, "learning_rate", "src_length_class")))
    out("")
    out("Does the seed matter beyond the learning rate?")
    out(str(variance_component_test("ter ~ learning_rate + (1|sentence_id) + (1|seed)", "seed", data)))
