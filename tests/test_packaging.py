"""Packaging metadata tells the truth: one version per package, plugins pinned to a compatible
core, every third-party import declared in the extra that needs it, index pages with absolute
links, LlamaHub metadata where LlamaIndex expects it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions, requires, version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {
    "ragbudget": (ROOT / "packages/core", "ragbudget"),
    "ragbudget-guard": (ROOT / "packages/guard", "ragbudget_guard"),
    "ragbudget-server": (ROOT / "packages/server", "ragbudget_server"),
    "langchain-ragbudget": (ROOT / "packages/langchain_plugin", "langchain_ragbudget"),
    "llama-index-postprocessor-ragbudget": (
        ROOT / "packages/llamaindex_plugin",
        "llama_index.postprocessor.ragbudget",
    ),
    "llama-index-tools-ragbudget": (
        ROOT / "packages/llamaindex_tools_plugin",
        "llama_index.tools.ragbudget",
    ),
}
# Which extra of the core a module needs.
CORE_EXTRAS = {
    "middleware/": "fastmcp",
    "chunking.py": "split",
    "counters.py": "all",
    "bpe.py": "bpe",
}
# Which extra of the application a module needs.
SERVER_EXTRAS = {
    "store/convert/pdf.py": "documents",
    "store/convert/office.py": "documents",
}
# Which extra of the LangChain plugin a module needs.
LANGCHAIN_EXTRAS = {"agents.py": "agents"}
OWN = {"ragbudget", "ragbudget_guard", "ragbudget_server", "langchain_ragbudget", "llama_index"}
# Modules whose code ships in one distribution and is installed through another, the one we
# declare: fastmcp is the full server, fastmcp-slim the code it installs.
META = {"fastmcp-slim": "fastmcp"}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return match.group(0).lower().replace("_", "-").replace(".", "-")


def _declared(dist: str, extra: str | None) -> set[str]:
    """The distributions `dist` needs with `extra`, following self-referencing extras and the
    extras of the core that the application asks for (`ragbudget[split,fastmcp]`)."""
    names: set[str] = set()
    extras = {extra} if extra else set()
    changed = True
    while changed:
        changed = False
        for req in requires(dist) or []:
            marker = re.search(r"extra == ['\"]([^'\"]+)['\"]", req)
            if marker and marker.group(1) not in extras:
                continue
            name = _name(req)
            inner = re.match(r"[A-Za-z0-9._-]+\[([^\]]+)\]", req)
            if name == "ragbudget" and dist != "ragbudget" and inner:
                for sub in inner.group(1).split(","):
                    names |= _declared("ragbudget", sub.strip())
            if name == dist and inner:
                for sub in inner.group(1).split(","):
                    if sub.strip() not in extras:
                        extras.add(sub.strip())
                        changed = True
            names.add(name)
    return names


def _third_party_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m not in OWN}


@pytest.mark.parametrize("dist", list(PACKAGES))
def test_every_import_is_declared_in_the_extra_that_needs_it(dist: str) -> None:
    folder, module = PACKAGES[dist]
    src = folder / "src" / module.replace(".", "/")
    providers = packages_distributions()
    for path in sorted(src.rglob("*.py")):
        relative = path.relative_to(src).as_posix()
        extra = None
        if dist == "ragbudget":
            extra = next((e for p, e in CORE_EXTRAS.items() if relative.startswith(p)), None)
        if dist == "ragbudget-server":
            extra = SERVER_EXTRAS.get(relative)
        if dist == "langchain-ragbudget":
            extra = LANGCHAIN_EXTRAS.get(relative)
        declared = _declared(dist, extra)
        for imported in _third_party_imports(path):
            dists = {META.get(_name(d), _name(d)) for d in providers.get(imported, [])}
            assert dists, f"{relative} imports {imported}, which no installed package provides"
            assert dists & declared, (
                f"{dist}: {relative} imports {imported} ({', '.join(sorted(dists))}), "
                f"not declared in {'the ' + extra + ' extra' if extra else 'its dependencies'}"
            )


@pytest.mark.parametrize("dist", list(PACKAGES))
def test_one_version_source(dist: str) -> None:
    folder, module = PACKAGES[dist]
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    mod = __import__(module, fromlist=["__version__"])
    assert version(dist) == mod.__version__


@pytest.mark.parametrize(
    ("dist", "sibling"),
    [
        ("ragbudget-guard", "ragbudget"),
        ("ragbudget-server", "ragbudget"),
        ("ragbudget-server", "ragbudget-guard"),
        ("ragbudget", "ragbudget-guard"),  # the `guard` extra
        ("langchain-ragbudget", "ragbudget"),
        ("llama-index-postprocessor-ragbudget", "ragbudget"),
        ("llama-index-tools-ragbudget", "ragbudget"),
    ],
)
def test_siblings_pin_each_others_minor_series(dist: str, sibling: str) -> None:
    """Released together: each sibling a package needs is pinned to its own minor series."""
    module = PACKAGES[sibling][1]
    own = __import__(module, fromlist=["__version__"]).__version__
    # the core's sibling is an extra (`guard`); the others' extras repeat no pin
    extras = dist == "ragbudget"
    pins = [r for r in requires(dist) or [] if _name(r) == sibling and (extras or "extra" not in r)]
    assert pins  # e.g. the core, and its `bpe` extra where bpe-openai has wheels
    major, minor = own.split(".")[:2]
    for pin in pins:
        assert f">={major}.{minor}" in pin and f"<{major}.{int(minor) + 1}" in pin, pin


@pytest.mark.parametrize("dist", list(PACKAGES))
def test_package_readme_is_an_index_page_with_absolute_links(dist: str) -> None:
    folder, _ = PACKAGES[dist]
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) > 20, f"{dist}'s README is its page on the index"
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links
    relative = [link for link in links if not link.startswith("https://")]
    assert not relative, f"{dist}'s README has links that break on an index: {relative}"


@pytest.mark.parametrize(
    ("folder", "import_path"),
    [
        ("llamaindex_plugin", "llama_index.postprocessor.ragbudget"),
        ("llamaindex_tools_plugin", "llama_index.tools.ragbudget"),
    ],
)
def test_llamahub_metadata(folder: str, import_path: str) -> None:
    project = tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text())
    hub = project["tool"]["llamahub"]
    assert hub["import_path"] == import_path
    module = __import__(hub["import_path"], fromlist=["__all__"])
    assert set(hub["class_authors"]) <= set(module.__all__)


def test_the_core_needs_pydantic_alone_and_ships_no_command() -> None:
    """The library installs with pydantic only; the `ragbudget` command is the application's,
    `ragbudget-guard` the guard's (one distribution per script: two writing the same one
    would overwrite each other)."""
    core = tomllib.loads((ROOT / "packages/core/pyproject.toml").read_text())["project"]
    assert [_name(r) for r in core["dependencies"]] == ["pydantic"]
    assert "scripts" not in core
    server = tomllib.loads((ROOT / "packages/server/pyproject.toml").read_text())["project"]
    assert server["scripts"] == {"ragbudget": "ragbudget_server.cli:main"}
    guard = tomllib.loads((ROOT / "packages/guard/pyproject.toml").read_text())["project"]
    assert guard["scripts"] == {"ragbudget-guard": "ragbudget_guard.command:main"}


def test_the_guard_installs_without_the_store() -> None:
    """`pip install ragbudget-guard` (or `'ragbudget[guard]'`): the middleware and its
    command, no document store (`tests/guard/test_guard_install.py` installs the wheels)."""
    guard = tomllib.loads((ROOT / "packages/guard/pyproject.toml").read_text())["project"]
    assert sorted(_name(r) for r in guard["dependencies"]) == ["ragbudget", "typer"]
    assert guard["dependencies"][0].startswith("ragbudget[fastmcp]")
    assert "chromadb" not in _declared("ragbudget-guard", None)
    core = tomllib.loads((ROOT / "packages/core/pyproject.toml").read_text())["project"]
    assert core["optional-dependencies"]["guard"] == ["ragbudget-guard>=0.1,<0.2"]


def test_document_readers_are_an_extra_of_the_server() -> None:
    """PDF and Office readers come with `ragbudget-server[documents]` (and with `[all]`); the
    server itself installs without them."""
    server = tomllib.loads((ROOT / "packages/server/pyproject.toml").read_text())["project"]
    readers = {"pypdf", "python-docx", "python-pptx", "openpyxl"}
    assert {_name(r) for r in server["optional-dependencies"]["documents"]} == readers
    assert not readers & {_name(r) for r in server["dependencies"]}
    assert "documents" in server["optional-dependencies"]["all"][0]


def test_uv_pip_install_from_a_checkout_gives_copies() -> None:
    """README's `uv pip install ./packages/core ./packages/guard ./packages/server` installs the packages, not
    links into the checkout: the workspace sources would make uv install the core editable, so
    uv's pip interface ignores them (`uv sync` keeps them). `.ci/dist-check` runs the command
    in a fresh venv and reads site-packages (it needs the package index; this test does not)."""
    command = "uv pip install ./packages/core ./packages/guard ./packages/server"
    uv = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["uv"]
    assert uv["pip"]["no-sources"] is True
    assert uv["sources"]["ragbudget"] == {"workspace": True}, "the dev workspace stays editable"
    assert command in (ROOT / "README.md").read_text(encoding="utf-8")
    assert command in (ROOT / "docs/index.md").read_text(encoding="utf-8")
    check = (ROOT / ".ci/dist-check").read_text(encoding="utf-8")
    assert f"{command.removeprefix('uv pip install ')})" in check
    assert '"editable"' in check
