"""Every dependency has a lower bound, .ci/constraints-lower.txt installs exactly that bound, and every package of
the source tree is installed."""

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def test_the_lower_constraints_pin_every_dependency_at_its_lower_bound():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    requirements = [Requirement(r) for r in project["dependencies"] + extras["test"] + extras["spark"] + extras["docs"]]
    pins = {}
    for line in (ROOT / ".ci" / "constraints-lower.txt").read_text().splitlines():
        name, version = line.split("==")
        pins[canonicalize_name(name)] = Version(version)
    for requirement in requirements:
        lower = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==")]
        assert lower, f"{requirement} has no lower bound"
        assert pins.get(canonicalize_name(requirement.name)) == lower[0], \
            f"{requirement}: .ci/constraints-lower.txt pins {pins.get(canonicalize_name(requirement.name))}"
    assert set(pins) == {canonicalize_name(r.name) for r in requirements}


def test_every_package_of_the_source_tree_is_installed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "bayesrepro").rglob("__init__.py")}
    assert found - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
