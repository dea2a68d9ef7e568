"""The `bayesrepro` command line: one subcommand per module in this package.

Exit statuses (the table is in the user guide, "Exit statuses, bad input and
safety"): 0 success; 1 an internal error (a bug: one line, the traceback with
BAYESREPRO_DEBUG=1); 2 bad input or options, nothing computed; 3 the analysis
ran but a fit or the sampler did not converge; 4 the computation crashed inside
a compiled library (a segmentation fault, an abort) or was killed for want of
memory, one line naming the signal, no partial output (``contained.py``); 130
interrupted (Ctrl-C), nothing written; 141 output closed by its reader.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import os
import re
import sys

from ..errors import COMMAND_LINE, EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, BayesreproError, first_line
from .contained import DEBUG_VARIABLE, run_contained

# modules of this package, each registering its subcommand (import_logs registers `import`)
COMMANDS = ("vca", "effects", "glrt", "demo", "phi", "compare", "rank", "check", "report", "bootstrap", "permutation",
            "budget", "agreement", "circularity", "baselines", "import_logs", "plan")
COMMAND_NAMES = {"import_logs": "import"}   # the subcommand a module registers, where it is not the module's name
EXIT_INTERNAL = 1
# The collector's thresholds in a command's process (Python's default: 700, 10, 10). A command creates some 10⁶
# long-lived objects as it imports pandas, SciPy or numba, and a young generation collected every 700 allocations
# traverses them again at every collection until they reach the oldest: 0.05-0.15 s of CPU a model command
# (measured, kreutzer_marking_partial and a 40,000-row binary crowd). Collected every 50,000 allocations, the
# cyclic garbage a command leaves meanwhile stays a few megabytes.
COLLECTION_THRESHOLDS = (50_000, 20, 10)


class Parser(argparse.ArgumentParser):
    """argparse with its errors as one line `bayesrepro: error: ...` and exit status 2."""

    def error(self, message: str):
        # "argument --draws: --draws must be ...": the option is named once
        message = re.sub(r"^argument (\S+): (?=\1 )", "", message)
        command = self.prog.removeprefix("bayesrepro").strip()
        where = f"{command}: " if command else ""
        see = f"bayesrepro {command} --help" if command else "bayesrepro --help"
        raise BayesreproError(f"{where}{message}; see {see}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser, with every subcommand, or with ``command`` alone where it names one.

    A command line that names its command needs no other command's module:
    importing and registering them all would cost every command 20-30 ms of
    start-up, and the command's own help and errors are the same either way.
    """
    parser = Parser(
        prog="bayesrepro",
        description="Inferential reproducibility for ML evaluations: LMMs, GLRTs, variance components, reliability.",
        epilog="Exit status: 0 success, 1 internal error, 2 bad input, 3 did not converge, 4 crashed in a compiled "
               "library or killed for want of memory, 130 interrupted, 141 output closed by its reader.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    modules = [name for name in COMMANDS if COMMAND_NAMES.get(name, name) == command] or COMMANDS
    for name in modules:
        importlib.import_module(f".{name}", __name__).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    import warnings

    from ..progress import lines_on_stderr
    from ..runtime import numerical_work, one_line_warning

    command_line = COMMAND_LINE.set(True)   # errors name the options (--object), not the Python arguments
    try:
        arguments = sys.argv[1:] if argv is None else argv
        refuse_nul_bytes(arguments)
        args, unknown = build_parser(arguments[0] if arguments else None).parse_known_args(argv)
        if unknown:
            raise BayesreproError(f"{args.command}: unrecognized arguments: {' '.join(unknown)}; "
                                  f"see bayesrepro {args.command} --help")
        with numerical_work(), warnings.catch_warnings(), lines_on_stderr():
            warnings.showwarning = one_line_warning
            return int(args.func(args) or 0)
    except BayesreproError as error:
        print(f"bayesrepro: error: {error}", file=sys.stderr)
        return error.exit_status
    except KeyboardInterrupt:
        print("bayesrepro: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader stopped reading (bayesrepro ... | head): nothing more to say, and the interpreter's own flush
        # of stdout at exit must not fail again
        with contextlib.suppress(OSError, ValueError):   # ValueError: a stdout without a file descriptor
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except SystemExit:   # argparse's --help
        raise
    except BaseException as exc:  # a bug (or a native library's panic, a BaseException): one line, the traceback on request
        if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
            raise
        print(f"bayesrepro: error: internal error ({type(exc).__name__}: {first_line(exc)}); "
              f"rerun with {DEBUG_VARIABLE}=1 to see the traceback, and please report it", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        COMMAND_LINE.reset(command_line)


def refuse_nul_bytes(argv: list[str]) -> None:
    """No command line from a shell holds a NUL byte, but one built in Python may: no file or column name can."""
    for position, argument in enumerate(argv):
        if "\x00" in argument:
            option = argv[position - 1] if position and argv[position - 1].startswith("--") else None
            where = f"the value of {option}" if option else f"argument {position + 1}"
            raise BayesreproError(f"{where} holds a NUL byte ({argument!r}); no file, column or option name can")


def console_main() -> int:
    """``main`` as the ``bayesrepro`` script and ``python -m bayesrepro`` run it: the process ends when it returns.

    The command runs in a child process (``contained.run_contained``), so that
    a crash inside a compiled library ends it with one line and exit status 4
    instead of a bare signal.

    At exit the interpreter collects garbage while it tears the modules down,
    walking every object still alive: 0.1 s of every command once pandas is
    loaded, an eighth of a small model command. Those objects live until the
    operating system reclaims the process anyway, so they are moved out of the
    collector's sight first (``gc.freeze``); exit handlers and the flushing of
    output still run as usual, except after a Ctrl-C (exit status 130), where
    the process ends as soon as its output is flushed (see ``_main_frozen``).
    While the command runs, the collector runs less often
    (``COLLECTION_THRESHOLDS``), and every BLAS library loads with one thread
    (``runtime.blas_single_threaded_from_start``).
    """
    return run_contained(_main_frozen)


def _main_frozen() -> int:
    from ..runtime import blas_single_threaded_from_start

    blas_single_threaded_from_start()   # before anything loads a BLAS
    gc.set_threshold(*COLLECTION_THRESHOLDS)
    status = main()
    if status == EXIT_INTERRUPTED:
        # A run stopped mid-computation may leave native threads winding down (a sampler's aborted chains), and
        # the interpreter's tear-down can free what they still use: a crash after "interrupted" (1 run in 50 in
        # tests/test_output_safety.py's Ctrl-C under load). Nothing is left to write or close, so end here.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):   # a reader gone meanwhile (a closed pipe) has nothing to be told
                stream.flush()
        os._exit(status)
    gc.freeze()
    return status
