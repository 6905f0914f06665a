"""`lab new method|dataset|metric NAME [--package DIR]`: a new entry of the lab's own package and
a test that passes as written (tiny data, shape and range checks; templates: cli/scaffold.py).

The default package is `plugins/` in the project folder, loaded through `[tool.lab_assets] plugins`
in the project's pyproject.toml or `LAB_PLUGINS=plugins`
(its `__init__.py` imports every module in it, so adding an entry is adding a file); a package
of the lab's own distribution is loaded through the `lab_assets.plugins` entry point it prints.
"""

from __future__ import annotations

import argparse
import json
import sys

KINDS = ("method", "dataset", "metric")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("new", help="write a new method, dataset or metric (and its test) into the lab's package")
    p.add_argument("kind", choices=KINDS)
    p.add_argument("name", help="its name in sweep files (lower case, digits, _)")
    p.add_argument(
        "--package", metavar="DIR", help="the package folder to write into (default: plugins/ in the project folder)"
    )
    p.set_defaults(fn=run)


def run(args: argparse.Namespace) -> int:
    from lab_assets.cli.scaffold import write
    from lab_assets.core.settings import lab_plugins, project_dir, resolve_path

    package = resolve_path(args.package or "plugins").resolve()
    written = write(args.kind, args.name, package)
    for path in written:
        print(f"wrote {path}")
    root = package.parent
    print(f"test it:  python -m pytest {package / f'test_{args.name}.py'}")
    if package.name not in lab_plugins():
        modules = ",".join([*lab_plugins(), package.name])
        if root == project_dir():  # the project's own configuration: named once for every shell and worker
            print(f"load it:  {root / 'pyproject.toml'}: [tool.lab_assets] plugins = {json.dumps(modules.split(','))}")
            print(f"   or, in this shell:  export LAB_PLUGINS={modules}")
        else:
            print(f"load it:  export LAB_PLUGINS={modules}   (from {root}, or with {root} on PYTHONPATH)")
        print("   or, in the pyproject.toml of the lab's own distribution (then `pip install -e .`):")
        print(f'          [project.entry-points."lab_assets.plugins"]\n          {package.name} = "{package.name}"')
    print(f"then:     lab list {args.kind}s")
    if (
        package.joinpath("__init__.py") not in written
        and "importlib.import_module" not in package.joinpath("__init__.py").read_text()
    ):
        print(
            f"note: {package / '__init__.py'} exists and does not import its modules: "
            f"import {package.name}.{args.name} "
            f"there, or name {package.name}.{args.name} in [tool.lab_assets] plugins or LAB_PLUGINS",
            file=sys.stderr,
        )
    return 0
