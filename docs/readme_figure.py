"""Draw the README's figure, docs/readme_figure.png: both engines' answer on the bundled kreutzer_ter data.

Run from the repository root: ``python docs/readme_figure.py`` (about a minute on two cores).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import bayesrepro as br  # noqa: E402

FORMULA = "ter ~ system + (1|sentence_id) + (1|system:replication)"


def main() -> None:
    side = br.Model(FORMULA, "kreutzer_ter", object="sentence_id").compare(seed=1)
    figure = side.plot("contrasts", title="kreutzer_ter: TER differences of the systems, both engines")
    figure.set_size_inches(8, 3.2)
    figure.savefig(Path(__file__).with_name("readme_figure.png"), dpi=110, bbox_inches="tight")


if __name__ == "__main__":
    main()
