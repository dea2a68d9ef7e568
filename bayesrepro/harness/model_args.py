"""Model arguments as flat text columns, one per argument."""

from __future__ import annotations

import json

from ..errors import BayesreproError


def flatten_model_args(args: str | dict | None, where: str) -> dict[str, str]:
    """``{"pretrained": "gpt2", "dtype": "float16"}`` or lm-eval's ``"pretrained=gpt2,dtype=float16"`` as text values.

    Nested arguments are joined with ``_`` (``{"peft": {"r": 8}}`` gives
    ``peft_r``); values that are not text are written as JSON (``true``,
    ``0.5``); arguments set to null are left out. Two arguments that would
    give one name (``a=1,a=2``; ``peft_r`` beside ``peft.r``) are refused:
    one of their values would be lost. ``where`` names the field in messages.
    """
    if not args:
        return {}
    if isinstance(args, str):
        pairs = (part.split("=", 1) for part in args.split(",") if part.strip())
        return _unique(((key.strip(), value.strip()) for key, value in (p if len(p) == 2 else (p[0], "") for p in pairs)),
                       where)
    return _unique(_flat_pairs(args), where)


def _flat_pairs(args: dict):
    # a stack, not recursion: arguments may nest deeper than Python's recursion limit
    stack = [("", iter(args.items()))]
    while stack:
        prefix, items = stack[-1]
        entry = next(items, None)
        if entry is None:
            stack.pop()
            continue
        key, value = prefix + str(entry[0]), entry[1]
        if isinstance(value, dict):
            stack.append((key + "_", iter(value.items())))
        elif value is not None:
            yield key, value if isinstance(value, str) else _json_value(value, key)


def _json_value(value, key: str) -> str:
    try:
        return json.dumps(value)
    except RecursionError:
        raise BayesreproError(f"model argument '{key[:80]}' nests lists deeper than Python can write; "
                              "flatten it in the log's model_args") from None


def _unique(pairs, where: str) -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in pairs:
        if not key:
            raise BayesreproError(f"{where} holds an argument without a name; the log is damaged: rerun or re-copy it")
        if key in flat:
            raise BayesreproError(f"{where} gives the argument '{key}' twice (or as a nested argument of that name); "
                                  "one of its values would be lost: rerun or re-copy the log")
        flat[key] = value
    return flat
