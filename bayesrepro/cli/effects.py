"""`bayesrepro effects`: each level's random effects with an interval (conditional modes, or the posterior)."""

from __future__ import annotations

from .. import limits
from .common import add_count, add_data_options, add_family_options, add_formula_options, convergence_status, \
    model_of, print_json

HELP = ("each level's random effects with an interval: conditional modes and SDs of the REML/ML fit (lme4's "
        "ranef with condVar), or posterior medians with --bayes")
# the sampler's options, passed to Model.sample only with --bayes
SAMPLER_OPTIONS = ("draws", "tune", "chains", "seed", "prior", "target_accept")


def register(subparsers) -> None:
    from ..choices import PRIOR_CHOICES

    parser = subparsers.add_parser("effects", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    add_family_options(parser)
    parser.add_argument("--group", metavar="FACTOR", help="one grouping factor (default: every one)")
    parser.add_argument("--prob", type=float, default=0.95, help="probability of every interval (default 0.95)")
    parser.add_argument("--bayes", action="store_true",
                        help="summarise the posterior (NUTS, as phi samples it) instead of the REML/ML fit")
    sampler = parser.add_argument_group("sampler options (with --bayes)")
    add_count(sampler, limits.DRAWS, None, "posterior draws per chain", default_text="1,000")
    add_count(sampler, limits.TUNE, None, "tuning steps per chain", default_text="1,000")
    add_count(sampler, limits.CHAINS, None, "NUTS chains", default_text="4")
    add_count(sampler, limits.SEED, None, "seed of the sampler", default_text="1", metavar="S")
    sampler.add_argument("--prior", choices=PRIOR_CHOICES, help="family of priors, as for phi (default scaled)")
    sampler.add_argument("--target-accept", type=float,
                         help="NUTS's target acceptance rate, in [0.5, 1) (default 0.95)")
    sampler.add_argument("--allow-unconverged", action="store_true",
                         help="report the draws even if the sampler did not converge (the exit status is still 3)")
    parser.set_defaults(func=run)


def run(args) -> int:
    options = {name: getattr(args, name) for name in SAMPLER_OPTIONS if getattr(args, name) is not None}
    if args.allow_unconverged:
        options["allow_unconverged"] = True
    effects = model_of(args, args.formula, args.object).effects(args.group, args.prob, args.bayes, **options)
    if args.json:
        print_json(effects.to_dict())
    else:
        print(effects.summary())
    return convergence_status(effects.not_converged())
