"""Model arguments as flat text columns, one per argument."""

from __future__ import annotations

import json


def flatten_model_args(args) -> dict[str, str]:
    """``{"pretrained": "gpt2", "dtype": "float16"}`` or lm-eval's ``"pretrained=gpt2,dtype=float16"`` as text values.

    Nested arguments are joined with ``_`` (``{"peft": {"r": 8}}`` gives
    ``peft_r``); values that are not text are written as JSON (``true``,
    ``0.5``); arguments set to null are left out.
    """
    if not args:
        return {}
    if isinstance(args, str):
        pairs = (part.split("=", 1) for part in args.split(",") if part.strip())
        return {key.strip(): value.strip() for key, value in (p if len(p) == 2 else (p[0], "") for p in pairs)}
    if not isinstance(args, dict):
        return {"model_args": json.dumps(args)}
    flat: dict[str, str] = {}
    for key, value in args.items():
        if isinstance(value, dict):
            flat.update({f"{key}_{inner}": text for inner, text in flatten_model_args(value).items()})
        elif value is not None:
            flat[str(key)] = value if isinstance(value, str) else json.dumps(value)
    return flat
