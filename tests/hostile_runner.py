"""The child process of ``test_hostile_corpus``: one command line, its output captured at the descriptor level.

Kept apart from the test module so that a child imports nothing but this and the package.
"""

import os
import sys

from bayesrepro.cli import build_parser

build_parser()   # imported once into the server that forks the children: the modules every command line needs


def run_case(argv, cwd, out_path, err_path):
    """Run ``bayesrepro argv`` in ``cwd`` with stdout and stderr in files (native libraries' output included)."""
    out, err = os.open(out_path, os.O_WRONLY | os.O_CREAT), os.open(err_path, os.O_WRONLY | os.O_CREAT)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    os.chdir(cwd)
    from bayesrepro.cli import main

    status = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def sleep_forever():
    import time

    time.sleep(3600)
