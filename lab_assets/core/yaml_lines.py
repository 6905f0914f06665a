"""Where a field of a YAML file is written: the line of `data.swissroll.n_samples` in a sweep
file, so a CI annotation points at it in the pull request's diff."""

from __future__ import annotations

import yaml


def field_line(text: str, field: str) -> int | None:
    """The 1-based line of the deepest mapping key along the dotted `field` that the file has
    (`methods.umap.n_neighbors` → the `n_neighbors:` line, or `umap:` when the parameter is not
    written there: a default that cannot work); None when not even the first key is in the file
    or it is not YAML."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        return mark.line + 1 if mark is not None else None
    line = None
    for part in field.split("."):
        if not isinstance(node, yaml.MappingNode):
            break
        found = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
        if found is None:
            break
        line, node = found[0].start_mark.line + 1, found[1]
    return line
