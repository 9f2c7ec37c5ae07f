"""Reading our JSON outputs as a strict parser (JavaScript's JSON.parse, jq) does: a bare
`NaN` / `Infinity` token is an error, not a number."""

from __future__ import annotations

import json
from typing import Any


def _refuse(token: str) -> Any:
    raise ValueError(f"bare {token} in JSON output (json_numbers.json_number writes it as text)")


def strict_json(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse)
