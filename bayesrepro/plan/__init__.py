"""Planning the next evaluation: power, sample size, and the cheapest allocation of items, seeds and prompts.

- ``analyse_pilot`` / ``assume``: the assumptions (design structure, components, effect, counts);
- ``plan_power``: power per planned size, in closed form (``closed_form``, ``planned_test``) and by simulation
  (``simulation``; binary scores from the GLMM, ``binary``);
- ``allocate``: the cheapest counts for a target power or φ, or the best within a budget (``allocation``);
  ``d_study``: φ and cost of the designs along an allocation;
- ``assurance``: power averaged over the pilot's posterior (``assurance``);
- ``miller``: Miller's (2024) formulas for two models on independent items;
- ``next_evaluation``: the planning section of ``compare`` and ``report``;
- ``figures``: power curves and the cost frontier.
"""

from .allocation import Allocation, CostModel, allocate, parse_costs, phi_criterion, power_criterion
from .assumptions import Assumptions, assume
from .assurance import PilotPosterior, assurance, pilot_posterior
from .closed_form import ContrastModel, ContrastPrecision, rejection_probability
from .pilot import Pilot, analyse_pilot, parse_contrast
from .planned_test import PlannedTest
from .power import PowerPlan, plan_power
from .simulation import simulate_power

__all__ = [
    "Allocation", "Assumptions", "ContrastModel", "ContrastPrecision", "CostModel", "Pilot", "PilotPosterior",
    "PlannedTest", "PowerPlan", "allocate", "analyse_pilot", "assume", "assurance", "parse_contrast", "parse_costs",
    "phi_criterion", "pilot_posterior", "plan_power", "power_criterion", "rejection_probability", "simulate_power",
]
