"""No import circles between the package's modules.

A module A imports B when any of its import statements names B: at module
level, inside a function (a lazy import) or under ``TYPE_CHECKING``. Every
strongly connected component of that graph with more than one module is a
circle; the test lists each with the imports that close it. ``from pkg import
name`` is an edge to the submodule ``pkg.name`` where there is one, else to
``pkg`` itself (its ``__init__``).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = "bayesrepro"
ROOT = Path(__file__).resolve().parents[1]


def package_modules(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package's ``__init__``)."""
    modules = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _known(name: str, modules) -> str | None:
    """``name`` or its nearest enclosing module of the package (``a.b.c`` where only ``a.b`` is a module)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, modules) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its text."""
    path, is_package = modules[name]
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {_known(alias.name, modules) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in modules else _known(source, modules))
    return found - {None, name}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = package_modules(root)
    return {name: imports_of(name, modules) for name in modules}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            successor = next(successors, None)
            if successor is not None:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                elif successor in on_stack:
                    low[node] = min(low[node], index[successor])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _described(component: list[str], graph) -> str:
    edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
    return f"{', '.join(component)} ({'; '.join(edges)})"


def test_no_module_of_the_package_imports_one_that_imports_it_back():
    graph = import_graph()
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300   # the whole package was read
    found = circles(graph)
    assert not found, "import circles: " + " | ".join(_described(c, graph) for c in found)


@pytest.mark.parametrize("files, expected", [
    # a lazy import inside a function closes a circle as much as a module-level one
    ({"a.py": "from . import b\n", "b.py": "def f():\n    from .a import x\n"}, [["a", "b"]]),
    # three modules in a ring, one TYPE_CHECKING import among them; a fourth outside it
    ({"a.py": "from .b import y\n",
      "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import z\n",
      "c.py": "import bayesrepro.a\n", "d.py": "from . import a\n"}, [["a", "b", "c"]]),
    # 'from pkg import name' of a subpackage's name is an edge to the subpackage's __init__, not a circle by itself
    ({"a.py": "from .sub import thing\n", "sub/__init__.py": "thing = 1\n"}, []),
])
def test_the_graph_finds_circles_through_lazy_and_type_checking_imports(tmp_path, files, expected):
    for name, text in files.items():
        path = tmp_path / PACKAGE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / PACKAGE / "__init__.py").write_text("")
    found = circles(import_graph(tmp_path))
    assert found == [[f"{PACKAGE}.{m}" for m in component] for component in expected]
