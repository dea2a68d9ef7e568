"""Named analysis specs: the papers' models as TOML templates both engines load.

A spec (``models/<name>.toml``) names its data columns as template
parameters with defaults (``[columns] score = "ter"``) and writes its
formulas with them (``"{score} ~ {system} + (1|{item})"``), so the same
analysis applies to another table by renaming columns:
``load_spec("system_comparison", score="bleu", item="segment")``.

Keys: ``title``, ``description``, ``analysis`` (comparison, conditional,
reliability, importance), ``dataset`` (the bundled data it was written for),
``[columns]``, ``[[derive]]`` (columns computed when absent: ``kind =
"length_class"`` from a ``source`` length column) and ``[model]`` with
``formula`` or ``h0``/``h1``, and optionally ``factor``, ``by``, ``object``,
``facets`` (D-study facets) and ``split`` (fit once per level of a column).
"""

from __future__ import annotations

import difflib
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .errors import BayesreproError, first_line

# the repository's models/ (installed as bayesrepro/specfiles), then ./models for the user's own
SPEC_DIRS = (
    Path(__file__).resolve().parent / "specfiles",
    Path(__file__).resolve().parent.parent / "models",
    Path.cwd() / "models",
)
ANALYSES = ("comparison", "conditional", "reliability", "importance")
DERIVE_KINDS = ("length_class",)
_MODEL_KEYS = {"formula", "h0", "h1", "factor", "by", "object", "facets", "split"}
_TOP_KEYS = {"title", "description", "analysis", "dataset", "columns", "derive", "model"}


@dataclass(frozen=True)
class Derived:
    column: str
    kind: str
    source: str


@dataclass(frozen=True)
class Spec:
    """A spec with every column template filled in."""

    name: str
    title: str
    description: str
    analysis: str
    dataset: str | None
    columns: dict[str, str]          # parameter -> column name
    formula: str                     # the model both engines fit (H1 of a test)
    h0: str | None = None
    factor: str | None = None
    by: str | None = None
    object: str | None = None
    facets: tuple[str, ...] = ()
    split: str | None = None
    derive: tuple[Derived, ...] = ()
    source: str = ""                 # how the spec is shown: the path as given, or the bundled name
    templates: dict = field(default_factory=dict, compare=False)

    def prepare(self, data: pd.DataFrame) -> pd.DataFrame:
        """Add derived columns that are absent and check that every column the spec names exists."""
        from .properties import length_class

        frame = data
        for item in self.derive:
            if item.column in frame.columns:
                continue
            self._require(frame, item.source)
            frame = frame.copy()
            frame[item.column] = length_class(frame[item.source])
        for column in self.columns.values():
            if not any(d.column == column for d in self.derive):
                self._require(frame, column)
        return frame

    def _require(self, frame: pd.DataFrame, column: str) -> None:
        if column in frame.columns:
            return
        parameter = next((p for p, c in self.columns.items() if c == column), column)
        names = {str(c).lower(): str(c) for c in frame.columns}
        close = difflib.get_close_matches(column.lower(), list(names), n=1)
        hint = f" (did you mean '{names[close[0]]}'?)" if close else ""
        raise BayesreproError(
            f"spec '{self.name}' needs column '{column}' for {{{parameter}}}, which the data lacks{hint}; "
            f"name the right column with --column {parameter}=COLUMN"
        )

    def to_dict(self) -> dict:
        return {
            "name": self.name, "title": self.title, "analysis": self.analysis, "columns": dict(self.columns),
            "formula": self.formula, "h0": self.h0, "factor": self.factor, "by": self.by, "object": self.object,
            "facets": list(self.facets), "split": self.split,
            "derive": [vars(d) for d in self.derive], "source": self.source,
        }


def list_specs() -> list[str]:
    """Names of the specs found in the models/ directories."""
    names = set()
    for directory in SPEC_DIRS:
        if directory.is_dir():
            names |= {path.stem for path in directory.glob("*.toml")}
    return sorted(names)


def load_spec(name_or_path: str | Path, **columns: str) -> Spec:
    """Load a spec by name (``models/<name>.toml``) or path, with column names overridden by keyword."""
    path, shown = _locate(name_or_path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BayesreproError(f"spec file '{shown}' is not valid TOML: {first_line(exc)}") from None
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise BayesreproError(f"spec file '{shown}' is nested too deeply to read; a spec nests a few levels") from None
    return _build(path, raw, columns, shown)


def parse_column_options(pairs) -> dict[str, str]:
    """``["score=bleu", "item=segment"]`` (the command line's --column) as a mapping."""
    columns = {}
    for pair in pairs or ():
        key, sep, value = str(pair).partition("=")
        if not sep or not key.strip() or not value.strip():
            raise BayesreproError(f"--column {pair!r} needs the form PARAMETER=COLUMN, e.g. --column score=bleu")
        columns[key.strip()] = value.strip()
    return columns


def _locate(name_or_path) -> tuple[Path, str]:
    """The spec file, and how reports show it: the path as given, ``models/NAME.toml`` or the bundled name.

    The install location of a bundled spec is no business of a report's reader.
    """
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            problem = "is not a regular file" if path.exists() else "does not exist"
            raise BayesreproError(f"spec file '{path}' {problem}")
        return path, str(name_or_path)
    for directory in SPEC_DIRS:
        candidate = directory / f"{name_or_path}.toml"
        if candidate.is_file():
            bundled = directory != Path.cwd() / "models"
            return candidate, f"bundled spec {name_or_path}" if bundled else f"models/{name_or_path}.toml"
    raise BayesreproError(
        f"no spec named '{name_or_path}'; choose one of: {', '.join(list_specs()) or 'none found'}, or give a .toml path"
    )


def _build(path: Path, raw: dict, overrides: dict, shown: str) -> Spec:
    name = path.stem
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise BayesreproError(f"spec '{name}' has unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    for key in ("title", "description", "analysis", "dataset"):
        _require_type(name, key, raw.get(key, ""), str, "a text")
    analysis = raw.get("analysis")
    if analysis not in ANALYSES:
        raise BayesreproError(f"spec '{name}' has analysis {analysis!r}; choose one of: {', '.join(ANALYSES)}")
    defaults = _require_type(name, "[columns]", raw.get("columns", {}), dict, "a table of PARAMETER = \"column\"")
    for key, value in defaults.items():
        _require_type(name, f"[columns] {key}", value, str, "a column name in quotes")
    bad = set(overrides) - set(defaults)
    if bad:
        raise BayesreproError(
            f"spec '{name}' has no column parameter {', '.join(sorted(bad))}; its parameters are: {', '.join(defaults)} "
            "(--column PARAMETER=COLUMN)"
        )
    for key, value in overrides.items():
        _require_type(name, f"column parameter {key}", value, str, "a column name")
    columns = {**defaults, **overrides}
    for key, value in columns.items():
        if not value.isidentifier():
            raise BayesreproError(
                f"spec '{name}': column name {value!r} for {{{key}}} cannot appear in a formula; "
                "rename the column to letters, digits and underscores"
            )
    model = _require_type(name, "[model]", raw.get("model", {}), dict, "a table")
    derive_tables = _require_type(name, "[[derive]]", raw.get("derive", []), list, "an array of tables")
    for item in derive_tables:
        _require_type(name, "[[derive]]", item, dict, "an array of tables")
    unknown = set(model) - _MODEL_KEYS
    if unknown:
        raise BayesreproError(f"spec '{name}' [model] has unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_MODEL_KEYS))}")
    for key, value in model.items():
        if key == "facets":
            _require_type(name, "[model] facets", value, list, "a list of texts")
            for facet in value:
                _require_type(name, "[model] facets", facet, str, "a list of texts")
        else:
            _require_type(name, f"[model] {key}", value, str, "a text")
    fill = lambda text: _fill(name, text, columns)  # noqa: E731
    if "formula" in model:
        formula, h0 = fill(model["formula"]), None
    elif "h1" in model and "h0" in model:
        formula, h0 = fill(model["h1"]), fill(model["h0"])
    else:
        raise BayesreproError(f"spec '{name}' [model] needs 'formula', or 'h0' and 'h1'")
    if analysis in ("comparison", "conditional") and (h0 is None or "factor" not in model):
        raise BayesreproError(f"spec '{name}': a {analysis} needs [model] h0, h1 and factor")
    if analysis == "conditional" and "by" not in model:
        raise BayesreproError(f"spec '{name}': a conditional comparison needs [model] by (the data property)")
    derive = []
    for item in derive_tables:
        if item.get("kind") not in DERIVE_KINDS or set(item) != {"column", "source", "kind"}:
            raise BayesreproError(f"spec '{name}' [[derive]] needs column, source and kind (one of: {', '.join(DERIVE_KINDS)})")
        for key in ("column", "source"):
            _require_type(name, f"[[derive]] {key}", item[key], str, "a text")
        derive.append(Derived(fill(item["column"]), item["kind"], fill(item["source"])))
    optional = {key: fill(model[key]) if key in model else None for key in ("factor", "by", "object", "split")}
    return Spec(
        name=name,
        title=raw.get("title", name),
        description=raw.get("description", ""),
        analysis=analysis,
        dataset=raw.get("dataset"),
        columns=columns,
        formula=formula,
        h0=h0,
        facets=tuple(fill(f) for f in model.get("facets", [])),
        derive=tuple(derive),
        source=shown,
        templates={"columns": dict(defaults), "model": dict(model)},
        **optional,
    )


def _require_type(name: str, key: str, value, kind: type, described: str):
    if not isinstance(value, kind):
        shown = type(value).__name__ if isinstance(value, (dict, list)) else repr(value)
        raise BayesreproError(f"spec '{name}': {key} must be {described}, not {shown}")
    return value


def _fill(name: str, template: str, columns: dict[str, str]) -> str:
    """``template`` with every ``{parameter}`` replaced by its column name; nothing else in braces is accepted
    (no format specs or conversions, no attribute or index access): a spec names columns, it computes nothing."""
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise BayesreproError(f"spec '{name}': the template {template!r} is malformed ({exc}); "
                              "write {parameter} for a column and {{ }} for a brace") from None
    text = []
    for literal, field_name, format_spec, conversion in pieces:
        text.append(literal)
        if field_name is None:
            continue
        if format_spec or conversion or not field_name.isidentifier():
            written = "{" + field_name + (f"!{conversion}" if conversion else "") + (f":{format_spec}" if format_spec else "") + "}"
            raise BayesreproError(f"spec '{name}': {written} in {template!r} is not a column parameter; write "
                                  "{parameter} with a name from [columns], nothing else inside the braces")
        if field_name not in columns:
            raise BayesreproError(
                f"spec '{name}' uses {{{field_name}}} in {template!r} but [columns] does not define it"
            )
        text.append(columns[field_name])
    return "".join(text)
