"""fairseq's own test modules, from the source distribution of the installed fairseq.

The sdist is fetched once from the package index (PyPI's simple API, hash checked) into
``$XDG_CACHE_HOME/veco_plugin`` (default ``~/.cache/veco_plugin``) and its ``tests/``
extracted next to it. It ships ``tests/test_*.py`` but not the ``tests/utils.py`` some of
them import: those modules fail to collect, with and without the plugin alike.
"""

import hashlib
import importlib.metadata
import json
import os
import tarfile
import urllib.request
from typing import Optional

DISTRIBUTION = "fairseq-fixed"
INDEX = "https://pypi.org/simple"


def _cache() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(root, "veco_plugin")


def _sdist_link(version: str) -> Optional[dict]:
    request = urllib.request.Request(
        f"{INDEX}/{DISTRIBUTION}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    name = f"{DISTRIBUTION.replace('-', '_')}-{version}.tar.gz"
    return next((f for f in files if f["filename"] == name), None)


def fairseq_tests() -> str:
    """The directory holding the installed fairseq version's ``tests/`` (fetched and
    extracted on first use); raises ``OSError`` when the index cannot be reached."""
    version = importlib.metadata.version(DISTRIBUTION)
    root = os.path.join(_cache(), f"{DISTRIBUTION}-{version}")
    if os.path.isdir(os.path.join(root, "tests")):
        return root
    link = _sdist_link(version)
    if link is None:
        raise OSError(f"{INDEX}/{DISTRIBUTION}/ has no sdist of {version}")
    with urllib.request.urlopen(link["url"], timeout=300) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != link["hashes"]["sha256"]:
        raise OSError(f"{link['filename']}: sha256 does not match the index")
    os.makedirs(_cache(), exist_ok=True)
    archive = os.path.join(_cache(), link["filename"])
    with open(archive, "wb") as f:
        f.write(data)
    part = f"{root}.part"
    with tarfile.open(archive) as tar:
        top = tar.getmembers()[0].name.split("/")[0]
        members = [m for m in tar.getmembers() if m.name.startswith(f"{top}/tests/")]
        for member in members:
            member.name = member.name[len(top) + 1 :]
        tar.extractall(part, members=members, filter="data")
    os.replace(part, root)
    os.remove(archive)
    return root
