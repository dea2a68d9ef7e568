"""The response family of a model, resolved once from the formula, the scores and the user's choice.

``auto`` fits 0/1 scores as Bernoulli (and says so in one note), Bambi's
``p(successes, trials)`` as binomial, anything else as Gaussian. A Gaussian
model of 0/1 scores (a linear probability model) is fitted only when asked
for. Binary families take a logit (default) or probit link.
"""

from __future__ import annotations

from dataclasses import dataclass


from ..errors import BayesreproError

FAMILIES = ("auto", "gaussian", "bernoulli", "binomial")
BINARY_LINKS = ("logit", "probit")


@dataclass(frozen=True)
class Family:
    name: str          # gaussian, bernoulli or binomial
    link: str          # identity, logit or probit
    note: str = ""     # how auto chose, when it chose a binary family

    @property
    def binary(self) -> bool:
        return self.name != "gaussian"

    @property
    def scale(self) -> str:
        """The scale the variance components live on."""
        return "latent" if self.binary else "observed"


def resolve_family(frame, family: str | None = "auto", link: str | None = None) -> Family:
    """The family of ``frame``'s model given the user's ``family`` and ``link`` (None: the default)."""
    family = (family or "auto").lower()
    if family not in FAMILIES:
        raise BayesreproError(f"--family '{family}' is unknown; choose one of: {', '.join(FAMILIES)}")
    if link is not None and link not in BINARY_LINKS:
        raise BayesreproError(f"--link '{link}' is unknown; choose one of: {', '.join(BINARY_LINKS)}")
    if frame.spec.trials is not None:
        return _binomial_response(frame, family, link)
    if family == "gaussian" or (family == "auto" and not _binary_scores(frame)):
        if link is not None:
            raise BayesreproError(
                f"--link {link} applies to 0/1 scores; '{frame.response}' is modelled as Gaussian (identity link)"
            )
        return Family("gaussian", "identity")
    if not _binary_scores(frame):
        raise BayesreproError(
            f"--family {family} needs 0/1 scores in '{frame.response}'; use --family gaussian, or write the "
            "response as p(successes, trials) for counts"
        )
    link = link or "logit"
    note = ""
    if family == "auto":
        note = (f"scores in '{frame.response}' are 0/1: fitted as a Bernoulli model with {link} link (variance "
                "components on the latent scale); --family gaussian fits a linear probability model instead")
    return Family("bernoulli", link, note)


def _binomial_response(frame, family: str, link: str | None) -> Family:
    if family not in ("auto", "binomial"):
        raise BayesreproError(
            f"the response {frame.spec.response_term} of {frame.formula!r} is binomial; use --family binomial "
            "(or auto), or model a score column instead"
        )
    return Family("binomial", link or "logit")


def _binary_scores(frame) -> bool:
    return frame.is_binary()
