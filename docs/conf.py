"""Sphinx configuration of the documentation site: Markdown pages (MyST), the notebook gallery rendered from the
notebooks' committed outputs (myst-nb, never executed here), the command-line reference generated from the argparse
parser (``_ext/cli_reference.py``) and the API reference of every name in ``bayesrepro.__all__``, checked by
numpydoc."""

import importlib
import inspect
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "bayesrepro"
author = "bayesrepro authors"
extensions = ["myst_nb", "sphinx.ext.autodoc", "numpydoc", "cli_reference"]
exclude_patterns = ["_build", "_ext", "**/.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]   # the notebooks' own headings start at whatever level their authors chose
html_theme = "pydata_sphinx_theme"
html_title = "bayesrepro"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}

# the gallery shows the notebooks as committed, executed by their build_*.py scripts; the docs build never runs them
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3            # [text](page.md#a-section) links are checked like any other reference

autodoc_typehints = "none"          # the numpydoc sections give each type
numpydoc_show_class_members = False  # classes list their members through autodoc's :members:
# A public name, method or parameter without documentation is a warning (and -W makes it an error). Left
# out: ES01, SA01 and EX01 (an extended summary, See Also and Examples are welcome, not required) and SS05
# (summaries here are often noun phrases: "The data as a DataFrame.").
numpydoc_validation_checks = {"all", "ES01", "SA01", "EX01", "SS05"}
numpydoc_validation_exclude = {r"\._[^.]*$"}   # private names


def api_entries(module) -> list[str]:
    """The autodoc directives that document every name in ``module.__all__``, in its order.

    A class is documented with all its public members, those without a
    docstring too, so that numpydoc's validation reports them.

    Parameters
    ----------
    module : module
        The package whose ``__all__`` lists its public names.

    Returns
    -------
    list of str
        The lines of reStructuredText; empty when ``__all__`` is empty or missing.
    """
    lines = []
    for name in getattr(module, "__all__", ()):
        target = f"{module.__name__}.{name}"
        value = getattr(module, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            lines.append(f".. autoexception:: {target}")
        elif inspect.isclass(value):
            lines += [f".. autoclass:: {target}", "   :members:", "   :undoc-members:"]
        elif callable(value):
            lines.append(f".. autofunction:: {target}")
        else:
            lines.append(f".. autodata:: {target}")
        lines.append("")
    return lines


def setup(app):
    # imported here so that api_entries can be tested where Sphinx is not installed
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class PublicApi(SphinxDirective):
        """``.. public-api:: package`` documents every name in the package's ``__all__``."""

        required_arguments = 1

        def run(self):
            module = importlib.import_module(self.arguments[0])
            lines = api_entries(module)
            if not lines:
                return [nodes.paragraph(text=f"{module.__name__} exports no public names yet.")]
            container = nodes.container()
            self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset,
                                    container)
            return container.children

    app.add_directive("public-api", PublicApi)
