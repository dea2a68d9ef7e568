"""The command-line reference, generated from ``bayesrepro.cli.build_parser()``: it cannot drift from ``--help``.

``command_references`` reads every subcommand the parser registers (``COMMANDS`` of ``bayesrepro.cli``) and each of
its arguments as ``--help`` shows them; the Sphinx directive ``bayesrepro-cli`` renders them as one section per
command. ``tests/test_docs_site.py`` compares both with ``bayesrepro COMMAND --help``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

USAGE_WIDTH = 100   # columns of the usage lines shown (argparse wraps them to the terminal otherwise)


@dataclass(frozen=True)
class Argument:
    """One argument as ``--help`` lists it."""

    invocation: str   # "--formula F", "-h, --help", "DATA"
    options: tuple    # the option strings ("-h", "--help"); empty for a positional argument
    help: str         # its help text, %(default)s and the like expanded


@dataclass(frozen=True)
class CommandReference:
    """One subcommand: its name, description, usage line and arguments, in the order ``--help`` gives them."""

    name: str
    description: str
    usage: str
    arguments: tuple


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    return parser.formatter_class(prog=parser.prog, width=USAGE_WIDTH)


def command_parsers(parser: argparse.ArgumentParser) -> dict:
    """Every subcommand's parser, by name, in the order they were registered."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def arguments_of(parser: argparse.ArgumentParser) -> tuple:
    """The arguments ``parser --help`` lists, positional ones first as argparse lists them."""
    formatter = _formatter(parser)
    shown = [a for a in parser._actions if a.help is not argparse.SUPPRESS]
    ordered = [a for a in shown if not a.option_strings] + [a for a in shown if a.option_strings]
    return tuple(Argument(invocation=formatter._format_action_invocation(action),
                          options=tuple(action.option_strings),
                          help=" ".join(formatter._expand_help(action).split()) if action.help else "")
                 for action in ordered)


def command_references(parser: argparse.ArgumentParser | None = None) -> list:
    """A ``CommandReference`` of every subcommand of ``bayesrepro`` (of ``build_parser()`` by default)."""
    if parser is None:
        from bayesrepro.cli import build_parser

        parser = build_parser()
    references = []
    for name, sub in command_parsers(parser).items():
        formatter = _formatter(sub)
        formatter.add_usage(sub.usage, sub._actions, sub._mutually_exclusive_groups, prefix="")
        references.append(CommandReference(name=name, description=" ".join((sub.description or "").split()),
                                           usage=formatter.format_help().strip(), arguments=arguments_of(sub)))
    return references


def setup(app):
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class CommandLineReference(SphinxDirective):
        """``.. bayesrepro-cli::``: one section per subcommand, with its usage and every argument."""

        def run(self):
            from bayesrepro.cli import build_parser

            parser = build_parser()
            body = [nodes.paragraph(text=" ".join(parser.description.split())),
                    nodes.paragraph(text=" ".join((parser.epilog or "").split()))]
            for command in command_references(parser):
                section_id = nodes.make_id(f"command {command.name}")
                name = nodes.fully_normalize_name(f"bayesrepro {command.name}")
                section = nodes.section(ids=[section_id], names=[name])
                section += nodes.title(text=f"bayesrepro {command.name}")
                section += nodes.paragraph(text=command.description)
                section += nodes.literal_block(text=command.usage)
                entries = nodes.definition_list()
                for argument in command.arguments:
                    item = nodes.definition_list_item()
                    item += nodes.term("", "", nodes.literal(text=argument.invocation))
                    item += nodes.definition("", nodes.paragraph(text=argument.help))
                    entries += item
                section += entries
                self.state.document.note_implicit_target(section, section)
                body.append(section)
            return body

    app.add_directive("bayesrepro-cli", CommandLineReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
