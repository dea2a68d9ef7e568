"""The documentation site's sources: the command-line reference is what ``bayesrepro COMMAND --help`` shows, the
gallery shows every committed notebook, the user guide lists every page, the README is a landing page whose links
hold, and the facts the README held before it became one live on the pages they moved to.

The build itself (``sh docs/build.sh``, warnings as errors) runs in CI.
"""

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path

import pytest

from bayesrepro.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# the two copy-paste commands of the README, unchanged
INSTALL_AND_DEMO = "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/bayesrepro demo"
INSTALL_AND_TEST = ("python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && "
                    ".venv/bin/python -m pytest -q -n 2")


@pytest.fixture(scope="module")
def cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "_ext" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["cli_reference"] = module   # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def help_text(*argv: str) -> str:
    """What ``bayesrepro ARGV --help`` prints (the console script runs this same ``main``)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    assert exited.value.code == 0
    return out.getvalue()


def words(text: str) -> str:
    """Whitespace as one space; argparse wraps lines after a hyphen too ("exact-\\n rlrt"), so none follows one."""
    return re.sub(r"-\s+", "-", " ".join(text.split()))


def listed_options(text: str) -> set[str]:
    """The option strings ``--help`` lists: each entry of its option sections starts with them."""
    options = set()
    for line in text.splitlines():
        entry = re.match(r"^  (-\S.*?)(?:\s{2,}|$)", line)
        if entry:
            options.update(part.split()[0] for part in entry.group(1).split(", "))
    return options


def test_the_reference_lists_every_command_bayesrepro_help_lists(cli_reference):
    listed = re.findall(r"^    (\S+)", help_text().split("COMMAND\n", 1)[1], re.M)
    assert [command.name for command in cli_reference.command_references()] == listed
    assert len(listed) == len(COMMANDS)


def test_each_command_reference_equals_its_help(cli_reference):
    for command in cli_reference.command_references():
        shown = help_text(command.name)
        usage = shown.split("\n\n", 1)[0].removeprefix("usage: ")
        assert words(command.usage) == words(usage), command.name
        assert words(command.description) in words(shown), command.name
        documented = {option for argument in command.arguments for option in argument.options}
        assert documented == listed_options(shown), command.name
        for argument in command.arguments:
            assert words(f"{argument.invocation} {argument.help}") in words(shown), (command.name, argument)


def test_a_new_command_joins_the_reference(cli_reference):
    parser = build_parser()
    extra = [a for a in parser._actions if a.dest == "command"][0].add_parser("rank", help="rank the systems",
                                                                              description="rank the systems")
    extra.add_argument("--top", type=int, help="how many to show (default: %(default)s)", default=3)
    rank = [c for c in cli_reference.command_references(parser) if c.name == "rank"]
    assert rank and rank[0].arguments[-1].invocation == "--top TOP"
    assert rank[0].arguments[-1].help == "how many to show (default: 3)"


def toctree_entries(page: Path) -> list[str]:
    blocks = re.findall(r"```\{toctree\}\n(.*?)```", page.read_text(), re.S)
    return [line.strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.startswith(":")]


def test_the_gallery_shows_every_committed_notebook():
    committed = sorted(path.stem for path in (ROOT / "notebooks").glob("*.ipynb"))
    shown = sorted(entry.removeprefix("notebooks/") for entry in toctree_entries(DOCS / "gallery" / "index.md"))
    assert shown == committed
    assert (DOCS / "gallery" / "notebooks").resolve() == (ROOT / "notebooks").resolve()


def test_the_docs_build_never_executes_a_notebook():
    conf = (DOCS / "conf.py").read_text()
    assert re.search(r'^nb_execution_mode = "off"$', conf, re.M)
    assert "sphinx -W" in (DOCS / "build.sh").read_text()


def test_the_user_guide_lists_every_page_it_holds():
    entries = toctree_entries(DOCS / "guide" / "index.md")
    assert entries[-1] == "*"   # every page of docs/guide/ not named before, those written later too
    pages = {page.stem for page in (DOCS / "guide").glob("*.md")} - {"index"}
    assert set(entries[:-1]) <= pages, "the guide names a page that does not exist"
    assert pages - set(entries[:-1]), "one page must be left to the glob, or Sphinx warns that it matched nothing"
    for page in (DOCS / "guide").glob("*.md"):
        assert page.read_text().startswith("# "), f"{page.name} needs a top-level title"


def test_the_readme_is_a_landing_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    assert f"```bash\n{INSTALL_AND_DEMO}\n```" in text and f"```bash\n{INSTALL_AND_TEST}\n```" in text
    mapped = set(re.findall(r"`bayesrepro (\w+)`", text)) | set(re.findall(r", `(\w+)`", text))
    commands = [a for a in build_parser()._actions if a.dest == "command"][0].choices
    assert set(commands) <= mapped, f"the README's map lacks {set(commands) - mapped}"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        assert (ROOT / target).exists(), f"the README links to {target}, which does not exist"


# Facts of the README before it became a landing page, each with the page it moved to: the numbers a reader
# acts on, one or more per section of the old README.
FACTS = {
    "getting_started.md": ["Python 3.11 or newer", "takes about four minutes on two cores",
                           "source .venv/bin/activate"],
    "guide/data.md": ["`kreutzer_marking_full`, `kreutzer_marking_partial`, `sofa_mlp_grid`",
                      "`NA`, `null`, `None` or `nan` are text like any other",
                      "integer beyond 2^53", "x != 'a' or isna(x)", "(1|learning_rate/src_length_class)",
                      "Scores must lie within ±10¹⁰⁰"],
    "guide/safety.md": ["| 141 | the reader of the output went away", "`BAYESREPRO_DEBUG=1` shows the traceback",
                        "| `--draws` | phi, compare, report, plan | 100 – 100,000 per chain",
                        "the `--vary` grid ≤ 10,000 designs", "tests/test_hostile_corpus.py",
                        "a grouping factor that a fixed term already fixes"],
    "guide/harness_logs.md": ["at most 512 MiB", "`model_arg_seed`", "`--replications`", ".ci/harness-drift",
                              "`value_to_float()`"],
    "guide/python.md": ["`br.simulate_harness_logs`", "`logging.basicConfig(level=logging.INFO)`",
                        "`fit.d_study({\"seed\": [1, 3, 10]})`"],
    "guide/planning.md": ["within 0.010 of", "`--assume COMPONENT=VARIANCE,...`", "\"power_closed_form\"",
                          "(Miller 2024)"],
    "guide/random_slopes.md": ["0.5*chi2(1) + 0.5*chi2(2)", "−886.0 (SE 24.7)", "20.3 times",
                               "`check.nobs.vs.nRE`", "3.0–5.5 %"],
    "guide/reliability.md": ["fewer than 5 levels", "`score ~ 1 + (1|item:seed) + (1|system)`"],
    "guide/large_data.md": ["512 MB in pandas", "3.4 s for the whole", "5.5e-12 relative"],
    "guide/crowd_designs.md": ["Gao & Owen 2017", "in 18 s and 476 MB", "Yu & Meng 2011"],
    "guide/computation.md": ["0.43 s against `lmer`'s 10.9 s", "56.4 s (14.4 s CPU, 466 MB)", "5.1–5.6× faster",
                             "within 7e-5 relative", "5.2× in wall", "`NUMBA_CACHE_DIR`"],
    "guide/bayesian.md": ["from 0.76 to 0.46", "86.7 %", "within 2.9 % of brms's 90 % width", "89–93 %"],
    "guide/significance.md": ["| system effect, 3 seeds per system | 6 | 3,000 | 9.7 ± 0.5",
                              "48.3 % against the χ²'s 54.8 %", "fewer than 50 levels", "Crainiceanu & Ruppert 2004"],
    "guide/testing.md": ["Target: 30 minutes", "BAYESREPRO_CI_DEPS=lower bash .ci/run", "| `plan_calibration` |",
                         "python studies/record.py review NAME PATH"],
    "gallery/index.md": ["build_*.py"],
    "guide/engines_disagree.md": ["`learning_rate_length`", "`./models/NAME.toml`"],
    "guide/binary_scores.md": ["`--family gaussian`", "`--link probit`"],
    "guide/instruments.md": ["10 rows per coefficient", "`krippendorff_alpha`"],
}


@pytest.mark.parametrize("page", sorted(FACTS))
def test_the_readmes_facts_live_on_their_pages(page):
    text = words((DOCS / page).read_text())
    for fact in FACTS[page]:
        assert words(fact) in text, f"{page} lost: {fact}"
