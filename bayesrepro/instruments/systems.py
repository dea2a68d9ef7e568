"""Long evaluation data → per-system blocks of item scores, aligned on items."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import as_factor, check_score, require_columns
from ..errors import BayesreproError


@dataclass(frozen=True)
class SystemScores:
    """Scores of one system: one row per trained instance, one column per item."""

    system: str
    instances: tuple[str, ...]
    items: tuple[str, ...]
    scores: np.ndarray  # (n_instances, n_items)

    def instance_means(self) -> pd.Series:
        return pd.Series(self.scores.mean(axis=1), index=list(self.instances), name=self.system)

    def best_instance(self, lower_is_better: bool) -> tuple[str, np.ndarray]:
        """The instance with the best mean score (ties: the first) and its item scores."""
        means = self.scores.mean(axis=1)
        best = int(np.argmin(means) if lower_is_better else np.argmax(means))
        return self.instances[best], self.scores[best]


def system_scores(frame: pd.DataFrame, item: str, system: str, score: str,
                  instance: str | None = None) -> dict[str, SystemScores]:
    """Split long data into per-system score blocks over the same items.

    Every (system, instance, item) must occur exactly once, and every
    instance of every system must score the same items.
    """
    roles = {"--item": item, "--system": system, "--score": score}
    if instance is not None:
        roles["--instance"] = instance
    named_by = {}
    for option, column in roles.items():
        if column in named_by:
            raise BayesreproError(f"{named_by[column]} and {option} both name the column '{column}'; each role "
                                  "needs a column of its own")
        named_by[column] = option
    columns = [item, system] + ([instance] if instance is not None else [])
    require_columns(frame, columns, "column")
    values = check_score(frame, score)
    keys = pd.DataFrame({name: np.asarray(as_factor(frame, name).astype(str)) for name in columns})
    keys["_score"] = values
    if instance is None:
        keys["_instance"] = "1"
        instance_key = "_instance"
    else:
        instance_key = instance
    duplicated = keys.duplicated([system, instance_key, item])
    if duplicated.any():
        row = keys[duplicated].iloc[0]
        which = f"system {row[system]!r}" + (f", {instance} {row[instance]!r}" if instance else "")
        raise BayesreproError(
            f"{which} has more than one score for {item} {row[item]!r}; "
            + ("pass --instance with the column that tells the trained instances apart"
               if instance is None else "each instance may score each item once")
        )
    items = sorted(keys[item].unique())
    blocks = {}
    for name, rows in keys.groupby(system, sort=True):
        wide = rows.pivot(index=instance_key, columns=item, values="_score").reindex(columns=items)
        missing = wide.isna()
        if missing.any().any():
            inst = wide.index[missing.any(axis=1)][0]
            count = int(missing.loc[inst].sum())
            raise BayesreproError(
                f"system {name!r}" + (f" {instance} {inst!r}" if instance else "")
                + f" has no score for {count} of the {len(items)} values of {item}; "
                "the tests compare systems on the same items, so drop the unmatched items"
            )
        blocks[str(name)] = SystemScores(str(name), tuple(map(str, wide.index)), tuple(items),
                                         wide.to_numpy(dtype=float))
    return blocks


def pick_systems(blocks: dict[str, SystemScores], a: str, b: str, option: str = "--a/--b"):
    """The two systems to compare, with an error naming the option when absent."""
    for name in (a, b):
        if name not in blocks:
            raise BayesreproError(
                f"{option}: no system named {name!r}; systems in the data: {', '.join(blocks)}"
            )
    if a == b:
        raise BayesreproError(f"{option}: compare two different systems, not {a!r} with itself")
    return blocks[a], blocks[b]
