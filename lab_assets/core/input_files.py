"""Input files (sweeps, studies): YAML parsed safely and validated by pydantic, every problem
reported as one line naming the file and the field."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pydantic


class InputError(ValueError):
    """A file or value a person wrote that cannot be used; the message names where and why."""

    what = "input"


PLAIN_NAME = re.compile(r"[\w@=,.-]+")


def field_name(part) -> str:
    """A field or key as error lines show it: as written when plain, JSON-quoted otherwise (an
    empty key, one with spaces or a colon), so every line reads `<file>: <field>: <problem>`."""
    text = str(part)
    return text if PLAIN_NAME.fullmatch(text) else json.dumps(text)


def pydantic_lines(where: str, err: pydantic.ValidationError, allowed_params: list[str] | None) -> list[str]:
    lines = []
    for e in err.errors():
        loc = ".".join([where] * bool(where) + [field_name(p) for p in e["loc"]])
        if e["type"] == "extra_forbidden":
            hint = f"; allowed: {', '.join(allowed_params)}" if allowed_params is not None else ""
            lines.append(f"{loc}: unknown field{hint}")
        elif e["type"] == "missing":
            lines.append(f"{loc}: required field is missing")
        elif e["type"] == "value_error":  # our own validators already quote the value
            lines.append(f"{loc}: {e['msg'].removeprefix('Value error, ')}")
        else:
            lines.append(f"{loc}: {e['msg']} (got {e['input']!r})")
    return lines


def yaml_model(text: str, source: str, model: type[pydantic.BaseModel], error: type[InputError] = InputError):
    """A YAML file's text validated against `model`; `error` lists every problem with its line
    or field (shared by sweep and study files)."""
    # Imported on use: `settings` (LabHomeError) is imported by `lab`'s hand-over to the warm
    # service, which parses nothing (pydantic + yaml: ~35 ms).
    import pydantic
    import yaml

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())  # one line (a ReaderError spans several)
        raise error(f"{source}: not valid YAML{where}: {problem}") from None
    if not isinstance(raw, dict):
        required = ", ".join(n for n, f in model.model_fields.items() if f.is_required())
        raise error(f"{source}: expected a mapping with {required} (got {type(raw).__name__})")
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError as e:
        lines = pydantic_lines("", e, sorted(model.model_fields))
        raise error(f"{source}: " + f"\n{source}: ".join(lines)) from None
