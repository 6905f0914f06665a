"""From the UI to the code: each asset's code reference (Dagster's `dagster/code_references`
metadata: the file and line of its function) and each cell's links to its method's and dataset's
own source files (a plugin's too).

A link goes to the repository's web page at the checked-out commit when the file sits in a git
checkout whose remote is on GitHub or GitLab (the hosts Dagster's `link_code_references_to_git`
knows); anywhere else (no git, no remote, the image) it is the local file's path."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import dagster as dg

from lab_assets.core import canonical
from lab_assets.core.registry import Entry

PACKAGE = Path(__file__).resolve().parents[1]
_SCP_LIKE = re.compile(r"^[\w.-]+@(?P<host>[\w.-]+):(?P<path>.+)$")  # git@github.com:owner/repo.git


@dataclass(frozen=True)
class Repository:
    top: Path  # the checkout's top folder
    url: str  # its web page, https://host/owner/name
    commit: str
    platform: str  # "github" or "gitlab"
    tracked: frozenset[str]  # the files git tracks, relative to `top` ("pkg/mod.py")

    @property
    def mapping(self) -> dg.AnchorBasedFilePathMapping:
        return dg.AnchorBasedFilePathMapping(local_file_anchor=self.top, file_anchor_path_in_repository="")

    def url_of(self, file: Path) -> str:
        """The file's page at the commit (the address form of `link_code_references_to_git`)."""
        tree = "-/tree" if self.platform == "gitlab" else "tree"
        return f"{self.url}/{tree}/{self.commit}/{self.mapping.convert_to_source_control_path(file)}"


def web_url(remote: str) -> tuple[str, str] | None:
    """(https://host/owner/name, platform) of a git remote's address (https, ssh or scp-like);
    None for a host other than GitHub's or GitLab's, or a local path. Credentials in the
    address are dropped: the link is shown to everyone who opens the UI."""
    scp = _SCP_LIKE.match(remote)
    if scp:
        host, path = scp["host"], scp["path"]
    else:
        match = re.match(r"^(?:https?|ssh|git)://(?:[^@/]*@)?(?P<host>[^/:]+)(?::\d+)?/(?P<path>.+)$", remote)
        if match is None:
            return None
        host, path = match["host"], match["path"]
    platform = next((p for p in ("github", "gitlab") if p in host), None)
    if platform is None:
        return None
    return f"https://{host}/{path.removesuffix('/').removesuffix('.git')}", platform


def repository(folder: Path) -> Repository | None:
    """The git checkout holding `folder` (found without git: the nearest folder with a `.git`),
    when it has a remote on GitHub or GitLab; None otherwise."""
    folder = folder.resolve()
    top = next((p for p in (folder, *folder.parents) if (p / ".git").exists()), None)
    return None if top is None else read_checkout(top)


@cache
def read_checkout(top: Path) -> Repository | None:
    """Its commit, remote (`origin` first) and tracked files: three git calls, once per checkout
    and process (the definitions load them, so every run process does)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=top, capture_output=True, text=True, check=True, timeout=10).stdout

    try:
        listed = git("config", "--get-regexp", r"^remote\..*\.url$").splitlines()
        remotes = dict(line.split(maxsplit=1) for line in listed)
        commit = git("rev-parse", "HEAD").strip()
    except (OSError, subprocess.SubprocessError, ValueError):  # no remote, no commit, not git's
        return None
    found = web_url((remotes.get("remote.origin.url") or next(iter(remotes.values()))).strip())
    if found is None:
        return None
    return Repository(top, found[0], commit, found[1], frozenset(git("ls-files", "-z").split("\0")))


def with_code_references(assets: list) -> list:
    """Each asset definition with the file and line of its function (Dagster's
    `with_source_code_references`), as a link to the repository when it has a remote."""
    referenced = dg.with_source_code_references(assets)
    repo = repository(PACKAGE)
    if repo is None:
        return list(referenced)
    return list(
        dg.link_code_references_to_git(
            referenced, git_url=repo.url, git_branch=repo.commit, platform=repo.platform, file_path_mapping=repo.mapping
        )
    )


def link(file: Path) -> str | None:
    """The web page of a file tracked in a checkout with a remote; None for any other (a plugin
    installed into a virtual environment inside a checkout is not the checkout's)."""
    repo = repository(file.parent)
    if repo is None or file.relative_to(repo.top).as_posix() not in repo.tracked:
        return None
    return repo.url_of(file)


def module_references(module_file: str) -> dict[str, dg.CodeReferencesMetadataValue]:
    """The `dagster/code_references` metadata of a module's assets that Dagster cannot reference
    itself: observable source assets, which `with_source_code_references` passes by (and their
    metadata is set only where they are declared)."""
    file = Path(module_file).resolve()
    url = link(file)
    reference = dg.LocalFileCodeReference(file_path=str(file)) if url is None else dg.UrlCodeReference(url=url)
    return {"dagster/code_references": dg.CodeReferencesMetadataValue(code_references=[reference])}


def source_file(entry: Entry) -> Path | None:
    """The entry's own source file: its function's module, or the class an `estimator:` names."""
    found = canonical.module_file(entry.own_module)
    return None if found is None else Path(found[0]).resolve()


def source_links(**entries: Entry) -> dict[str, Any]:
    """{`<name>_source`: a link to each entry's own source file} for a materialization's metadata."""
    links = {}
    for name, entry in entries.items():
        file = source_file(entry)
        if file is None:  # not a Python source (a compiled extension): nothing to open
            continue
        url = link(file)
        links[f"{name}_source"] = dg.MetadataValue.path(str(file)) if url is None else dg.MetadataValue.url(url)
    return links
