"""Type-I error and power of the GLRT's references with few seeds, by simulation.

Design of the papers' seed studies: 60 items crossed with two systems, seeds
nested in systems (every item scored by every seed), variances item 0.01,
seed 0.0005, residual 0.01.

- Fixed effect (does the system matter?), 3, 4 and 10 seeds per system:
  H1 ``score ~ system + (1|item) + (1|system:seed)`` against H0 without
  ``system``. Null: no system effect. Alternative: a system effect of 2.5
  standard errors of the contrast (√(2(σ²_seed + σ²/60)/seeds)).
- Variance component (does the seed matter?), 4, 6 and 8 seed levels (2, 3, 4
  per system): H1 as above against H0 without ``(1|system:seed)``. Null: seed
  variance 0. Alternative: seed variance 0.0005.

Each dataset is tested against every reference: ``chi2`` (the boundary
mixture for the variance component), ``kenward-roger``, ``satterthwaite``
(fixed effect), ``exact-rlrt`` (variance component) and ``bootstrap``. The
study (1,000 datasets per design and more, see REGENERATE: several hours on two
cores) writes its figures to ``studies/results/small_sample_calibration.json``,
which ``tests/test_studies.py`` checks for freshness and against the targets:

    python studies/small_sample_calibration.py [--datasets 1000] [--bootstrap-samples 99] [--record]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout's bayesrepro and studies

from studies.record import write_record  # noqa: E402

ITEMS = 60
VARIANCES = {"item": 0.01, "seed": 0.0005, "residual": 0.01}
H1 = "score ~ system + (1|item) + (1|system:seed)"
H0_FIXED = "score ~ 1 + (1|item) + (1|system:seed)"
H0_COMPONENT = "score ~ system + (1|item)"
FIXED_REFERENCES = ("chi2", "kenward-roger", "satterthwaite", "bootstrap", "anova-f")
COMPONENT_REFERENCES = ("chi2", "exact-rlrt", "bootstrap")
ALPHA = 0.05
# what the figures depend on: the study, the model frames and the references' engine
SOURCES = ["studies/small_sample_calibration.py", "bayesrepro/design/*.py", "bayesrepro/frequentist/*.py"]


@dataclass(frozen=True)
class Design:
    name: str
    kind: str                 # "fixed" or "component"
    seeds: int                # per system
    null: bool
    bootstrap: bool = True    # also the (slow) bootstrap reference
    seed_scale: float = 1.0   # seed variance relative to VARIANCES["seed"] (robustness designs)

    @property
    def hypothesis(self) -> str:
        return "null" if self.null else "alternative"

    @property
    def h0(self) -> str:
        return H0_FIXED if self.kind == "fixed" else H0_COMPONENT

    @property
    def references(self) -> tuple[str, ...]:
        references = FIXED_REFERENCES if self.kind == "fixed" else COMPONENT_REFERENCES
        return references if self.bootstrap else tuple(r for r in references if r != "bootstrap")

    @property
    def effect(self) -> float:
        if self.kind == "component" or self.null:
            return 0.0
        return 2.5 * np.sqrt(2 * (self.seed_variance + VARIANCES["residual"] / ITEMS) / self.seeds)

    @property
    def seed_variance(self) -> float:
        return 0.0 if self.kind == "component" and self.null else self.seed_scale * VARIANCES["seed"]


def simulate(design: Design, rng: np.random.Generator) -> pd.DataFrame:
    item = np.repeat(np.arange(ITEMS), 2 * design.seeds)
    instance = np.tile(np.arange(2 * design.seeds), ITEMS)            # system-seed combination
    system = instance // design.seeds
    score = (design.effect * system
             + rng.normal(0, np.sqrt(VARIANCES["item"]), ITEMS)[item]
             + rng.normal(0, np.sqrt(design.seed_variance), 2 * design.seeds)[instance]
             + rng.normal(0, np.sqrt(VARIANCES["residual"]), len(item)))
    return pd.DataFrame({"score": score, "item": [f"i{i:02d}" for i in item],
                         "system": np.where(system == 0, "A", "B"), "seed": [f"s{i % design.seeds}" for i in instance]})


def rejections(design: Design, datasets: range, seed: int, samples: int, references=None) -> pd.DataFrame:
    """p-values of each dataset against each reference (rows: datasets).

    Beside the package's references: ``anova-f``, the exact F test of the
    balanced fixed-effect design (system mean square over seed-within-system
    mean square, F(1, 2(seeds − 1))), whose rate checks the simulation itself;
    and ``seed_at_zero``, whether H1's REML fit puts the seed variance at zero.
    """
    from bayesrepro.frequentist.bootstrap_test import bootstrap_job, observed_statistic, sequential_p
    from bayesrepro.frequentist.ddf import small_sample_inference
    from bayesrepro.frequentist.glrt import (_h0_design_on_h1_cells, calibrate, compare_fits, fixed_parts_equal,
                                             nested_frames, restriction_matrix)
    from bayesrepro.frequentist.lmm import fit_model_frame
    from bayesrepro.frequentist.optimise import BOUNDARY_THETA

    references = references or design.references
    frame0, frame1 = nested_frames(design.h0, H1, simulate(design, np.random.default_rng([seed, 0])))
    seed_factor = frame1.group_names.index("system:seed")
    component_only = fixed_parts_equal(frame0, frame1)
    x0 = _h0_design_on_h1_cells(frame0, frame1)
    restriction = None if component_only else restriction_matrix(frame1, x0)
    rows = []
    for k in datasets:
        y = simulate(design, np.random.default_rng([seed, k]))["score"].to_numpy()
        f0, f1 = frame0.with_response(y), frame1.with_response(y)
        test = compare_fits(fit_model_frame(f0, "ml"), fit_model_frame(f1, "ml"), component_only)
        reml1 = fit_model_frame(f1, "reml")
        row = {"dataset": k, "seed_at_zero": bool(reml1.theta[seed_factor] < BOUNDARY_THETA)}
        small = None
        for reference in references:
            if reference == "anova-f":
                row[reference] = anova_f(y, design.seeds)
            elif reference in ("kenward-roger", "satterthwaite"):        # what calibrate does, one REML fit for both
                small = small or small_sample_inference(f1.stats(), reml1)
                row[reference] = small.f_test(restriction, reference).p
            elif reference == "bootstrap":           # the decisions at p <= 0.10 of `samples` refits
                job = bootstrap_job(f0, f1, test.h0, test.h1, x0)
                row[reference] = sequential_p(job, observed_statistic(test.h0.criterion, test.h1.criterion),
                                              samples, [seed, k, 1])
            else:
                row[reference] = calibrate(test, f0, f1, reference, samples, seed=[seed, k, 1], workers=1).p
        rows.append(row)
    return pd.DataFrame(rows)


def anova_f(y: np.ndarray, seeds: int) -> float:
    """p of the exact F test of the system effect in the balanced design ``simulate`` draws."""
    means = y.reshape(ITEMS, 2, seeds).mean(axis=0)                    # (system, seed) means over the items
    system_ms = ITEMS * seeds * np.sum((means.mean(axis=1) - means.mean()) ** 2)        # 1 df
    seed_ms = ITEMS * np.sum((means - means.mean(axis=1, keepdims=True)) ** 2) / (2 * (seeds - 1))
    return float(scipy.stats.f.sf(system_ms / seed_ms, 1, 2 * (seeds - 1)))


def _chunk(args):
    design, datasets, seed, samples, references = args
    return rejections(design, datasets, seed, samples, references)


def study(design: Design, n_datasets: int, samples: int, seed: int, references=None, processes: int = 2,
          progress: bool = False) -> pd.DataFrame:
    """p-values of ``n_datasets`` simulated datasets, shared out over ``processes``."""
    bounds = np.linspace(0, n_datasets, 10 * processes + 1).astype(int)
    jobs = [(design, range(a, b), seed, samples, references) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    parts = []
    with ProcessPoolExecutor(max_workers=processes) as pool:
        for part in pool.map(_chunk, jobs):
            parts.append(part)
            if progress:
                print(f"  {sum(len(p) for p in parts)} of {n_datasets} datasets", flush=True)
    return pd.concat(parts, ignore_index=True)


def rates(p_values: pd.DataFrame) -> pd.DataFrame:
    """Rejection rate at 5 % of each reference, with its binomial standard error."""
    columns = [c for c in p_values.columns if c not in ("dataset", "seed_at_zero")]
    rate = (p_values[columns] <= ALPHA).mean()
    n = len(p_values)
    return pd.DataFrame({"reference": columns, "rate": rate.to_numpy(),
                         "se": np.sqrt(rate.to_numpy() * (1 - rate.to_numpy()) / n), "datasets": n})


# ---------------------------------------------------------------- the full study, as a script

# the designs of the targets; the fixed-effect null with no seed variance and with ten times as much (how
# the references depend on what the seeds carry); larger designs (without the bootstrap) that locate where
# the χ² and the mixture become accurate: the basis of the rule's limit of levels
DESIGNS = [Design(f"fixed{s}", "fixed", s, null) for s in (3, 4, 10) for null in (True, False)] + \
          [Design(f"component{2 * s}", "component", s, null) for s in (2, 3, 4) for null in (True, False)] + \
          [Design("fixed3-noseed", "fixed", 3, True, seed_scale=0.0),
           Design("fixed3-bigseed", "fixed", 3, True, seed_scale=10.0)] + \
          [Design(f"fixed{s}", "fixed", s, True, bootstrap=False) for s in (15, 25)] + \
          [Design(f"component{2 * s}", "component", s, True, bootstrap=False) for s in (10, 25)]


def main() -> int:
    parser = argparse.ArgumentParser(description="type-I error and power of the GLRT's references")
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--bootstrap-samples", type=int, default=99, help="99: p <= 0.05 is an exact 5 % test")
    parser.add_argument("--seed", type=int, default=15000, help="design k of DESIGNS simulates with seed + k")
    parser.add_argument("--designs", default=",".join(dict.fromkeys(d.name for d in DESIGNS)))
    parser.add_argument("--hypotheses", default="null,alternative")
    parser.add_argument("--references", help="only these references (default: every one of the design)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--p-values", default="calibration-p-values", help="directory of the p-values per dataset")
    parser.add_argument("--record", action="store_true",
                        help="summarise every design of the p-values directory into studies/results/")
    parser.add_argument("--summarise-only", action="store_true", help="run nothing, only write --record")
    parser.add_argument("--markdown", action="store_true", help="print the tables of README's 'Few seeds' too")
    args = parser.parse_args()
    chosen, hypotheses = set(args.designs.split(",")), set(args.hypotheses.split(","))
    directory = Path(args.p_values)
    directory.mkdir(parents=True, exist_ok=True)
    for design in [] if args.summarise_only else DESIGNS:
        if design.name not in chosen or design.hypothesis not in hypotheses:
            continue
        start = time.time()
        references = [r for r in args.references.split(",") if r in design.references] if args.references else None
        p_values = study(design, args.datasets, args.bootstrap_samples, args.seed + DESIGNS.index(design), references,
                         args.processes, progress=True)
        p_values["bootstrap_samples"] = args.bootstrap_samples
        name = f"{design.name}-{design.hypothesis}" + ("-" + "-".join(references) if references else "")
        p_values.to_csv(directory / f"{name}.csv", index=False)
        print(f"{design.name} ({design.hypothesis}): {time.time() - start:.0f} s", flush=True)
        print(rates(p_values.drop(columns="bootstrap_samples")).to_string(index=False, float_format=lambda v: f"{v:.4f}"),
              flush=True)
    if args.record:
        rows = summarise(directory)
        write_record("small_sample_calibration", SOURCES, {"regenerate": REGENERATE, "variances": VARIANCES,
                                                           "items": ITEMS, "alpha": ALPHA, "rows": rows})
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        if args.markdown:
            print(markdown(rows))
    return 0


COLUMNS = {"chi2": "χ² (mixture)", "kenward-roger": "Kenward–Roger", "satterthwaite": "Satterthwaite",
           "exact-rlrt": "exact RLRT", "bootstrap": "bootstrap", "auto": "default (auto)",
           "anova-f": "exact ANOVA F"}


def markdown(rows: list[dict]) -> str:
    """Type-I error and power of every reference (%), the default's in bold: README's tables."""
    table = pd.DataFrame(rows)
    lines = []
    for hypothesis, title in (("null", "rejected true nulls, % ± binomial SE"),
                              ("alternative", "power, % at α = 5 % (at matched size)")):
        part = table[table["hypothesis"] == hypothesis]
        if part.empty:
            continue
        columns = [c for c in COLUMNS if c in set(part["reference"])]
        lines += [f"| design ({title}) | levels | datasets | " + " | ".join(COLUMNS[c] for c in columns) + " |",
                  "|---" * (3 + len(columns)) + "|"]
        for design in dict.fromkeys(part["design"]):
            rows_of = part[part["design"] == design].set_index("reference")
            first = rows_of.iloc[0]
            cells = []
            for c in columns:
                if c not in rows_of.index:
                    cells.append("")
                    continue
                row = rows_of.loc[c]
                cell = f"{100 * row['rate']:.1f} ± {100 * row['se']:.1f}" if hypothesis == "null" else \
                    f"{100 * row['rate']:.1f} ({100 * row['power_matched']:.1f})"
                cells.append(f"**{cell}**" if c == "auto" else cell)
            datasets = "/".join(f"{n:,}" for n in sorted(set(rows_of["datasets"]), reverse=True))
            lines.append(f"| {_describe(design, first)} | {2 * int(first['seeds_per_system'])} | {datasets} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _describe(name: str, row) -> str:
    seeds = int(row["seeds_per_system"])
    if name.startswith("component"):
        return f"seed variance, {seeds} seeds per system"
    variance = {"fixed3-noseed": ", no seed variance", "fixed3-bigseed": ", 10 × the seed variance"}.get(name, "")
    return f"system effect, {seeds} seeds per system{variance}"


def summarise(directory: Path) -> list[dict]:
    """Rejection rate, its SE and (alternatives) the power at matched size, of every design and reference found.

    A design's p-values may come from several runs (files ``DESIGN-HYPOTHESIS*.csv``, joined on the
    dataset); ``auto`` is the reference the package's rule picks for the design.
    """
    rows = []
    for design in DESIGNS:
        p_values = _read_p_values(directory, design)
        if p_values is None:
            continue
        null = _read_p_values(directory, dataclasses.replace(design, null=True)) if not design.null else None
        for frame in (p_values, null):
            if frame is not None:
                frame["auto"] = _auto_p(design, frame)
        for reference in [r for r in (*design.references, "auto") if r in p_values and p_values[r].notna().any()]:
            p = p_values[reference].dropna()
            rate = float((p <= ALPHA).mean())
            row = {"design": design.name, "hypothesis": design.hypothesis, "seeds_per_system": design.seeds,
                   "effect": design.effect, "seed_variance": design.seed_variance, "reference": reference,
                   "datasets": len(p), "rate": rate,
                   "se": float(np.sqrt(rate * (1 - rate) / len(p))),
                   "seed_at_zero": float(p_values.loc[p.index, "seed_at_zero"].mean())}
            if reference == "bootstrap":
                row["bootstrap_samples"] = int(p_values.loc[p.index, "bootstrap_samples"].iloc[0])
            if null is not None and reference in null:
                row["power_matched"] = matched_power(null[reference].dropna().to_numpy(), p.to_numpy())
            rows.append(row)
    return rows


def _read_p_values(directory: Path, design: Design) -> pd.DataFrame | None:
    files = sorted(directory.glob(f"{design.name}-{design.hypothesis}*.csv"))
    files = [f for f in files if f.stem == f"{design.name}-{design.hypothesis}"
             or f.stem.startswith(f"{design.name}-{design.hypothesis}-")]
    if not files:
        return None
    merged = None
    for file in files:
        part = pd.read_csv(file).set_index("dataset")
        if merged is None:
            merged = part
        else:
            merged = merged.combine_first(part)
    return merged


def matched_power(null: np.ndarray, alternative: np.ndarray, alpha: float = ALPHA) -> float:
    """Power at exactly the size ``alpha`` under the null: reject below the null's alpha-quantile of p (ties randomised)."""
    levels = np.unique(null)
    below = np.array([np.mean(null <= t) for t in levels])
    t = levels[np.searchsorted(below, alpha)]                       # the smallest t with P0(p <= t) >= alpha
    at, under = np.mean(null == t), np.mean(null < t)
    share = (alpha - under) / at                                   # of the ties at t to reject
    return float(np.mean(alternative < t) + share * np.mean(alternative == t))


def _auto_p(design: Design, p_values: pd.DataFrame) -> pd.Series:
    """The p of ``--reference auto`` on each dataset: that of the rule's reference, the bootstrap where the rule
    turns to it because REML puts the seed variance (the carrier's) at zero; missing where either was not run."""
    from bayesrepro.frequentist import reference as ref
    from bayesrepro.frequentist.glrt import _h0_design_on_h1_cells, nested_frames

    frame0, frame1 = nested_frames(design.h0, H1, simulate(design, np.random.default_rng(0)))
    method = ref.choose(frame0, frame1, _h0_design_on_h1_cells(frame0, frame1), ref.AUTO).method
    missing = pd.Series(np.nan, index=p_values.index)
    chosen = p_values.get(method, missing)
    if method == ref.KENWARD_ROGER:
        bootstrap = p_values.get(ref.BOOTSTRAP, missing)
        chosen = chosen.where(~p_values["seed_at_zero"].astype(bool), bootstrap)
        chosen = chosen.where(bootstrap.notna())   # only where both ran: else the datasets it reads depend on p
    return chosen


REGENERATE = [    # the runs behind studies/results/small_sample_calibration.json
    "python studies/small_sample_calibration.py --datasets 3000 --designs fixed3,fixed4,fixed10 --hypotheses null "
    "--references chi2,kenward-roger,satterthwaite,anova-f",
    "python studies/small_sample_calibration.py --datasets 3000 --designs fixed3 --hypotheses null",
    "python studies/small_sample_calibration.py --datasets 2000 --designs fixed4,fixed10 --hypotheses null "
    "--references bootstrap",
    "python studies/small_sample_calibration.py --datasets 1000 --designs component4,component6,component8",
    "python studies/small_sample_calibration.py --datasets 1000 --designs fixed3,fixed4,fixed10 "
    "--hypotheses alternative",
    "python studies/small_sample_calibration.py --summarise-only --record --markdown",
]


if __name__ == "__main__":
    sys.exit(main())
