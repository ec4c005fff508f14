"""Each package's public names import and match its __all__."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "ragbudget",
        "ragbudget.estimate",
        "ragbudget.middleware",
        "ragbudget.pages",
        "ragbudget_guard",
        "ragbudget_guard.logs",
        "ragbudget_server.store",
        "ragbudget_server.mcp",
        "langchain_ragbudget",
        "langchain_ragbudget.agents",
        "llama_index.postprocessor.ragbudget",
        "llama_index.tools.ragbudget",
    ],
)
def test_all_names_exist(module: str) -> None:
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", [])
    for name in names:
        assert hasattr(mod, name), f"{module}.__all__ names {name}, which is missing"
    assert len(names) == len(set(names))


PINNED = {
    "ragbudget": [
        "BudgetResult", "CUT_MARKER", "CallableCounter", "CharsCounter", "Chunk", "CounterSpec",
        "CutChunk", "EstimateCounter", "Fitted", "HFCounter", "Order", "Oversize",
        "PartsCounter", "RagbudgetError", "RenderChunk", "Strategy", "TextChunk",
        "TextTruncation", "TiktokenCounter", "TokenCounter", "TruncationInfo", "WalledCounter", "Walls", "chunk_text",
        "count_many", "cut_text", "cut_to_tokens", "fit", "get_counter", "largest_prefix",
        "least_budget", "rank_chunks", "stated_count", "truncate_head", "truncate_tail",
        "use_bundled_tiktoken_files", "with_marker",
    ],
    "ragbudget_guard": [
        "Backend", "build_guard", "http_backend", "make_budget", "register", "stdio_backend",
    ],
    "ragbudget_guard.logs": [
        "BoundedFormatter", "LOG_LEVELS", "MAX_LOG_CHARS", "clipped", "configure_logging",
    ],
    "ragbudget_server.store": [
        "DEFAULT_PATH", "DocumentStore", "FileProblem", "HashingEmbedding", "IngestReport",
        "ReadResponse", "SearchResponse", "SearchResult", "StoreError", "StoreStats",
    ],
    "ragbudget_server.mcp": [
        "BearerTokenVerifier", "BudgetExceededError", "DEFAULT_MAX_TOKENS_CEILING",
        "ServerSettings", "ServerStats", "create_server", "open_store",
    ],
    "ragbudget.estimate": [
        "DATA_FILE", "DATA_VERSION", "DEFAULT_TARGET", "TARGETS", "clear_caches", "estimate_tokens",
    ],
    "ragbudget.middleware": [
        "ContinuationNameTaken", "DEFAULT_MAX_TOKENS_CEILING", "MIN_MAX_TOKENS", "MIN_WALL_SIZE",
        "TokenBudgetMiddleware", "Walls",
    ],
    "ragbudget.pages": [
        "BudgetSize", "Cut", "Page", "PageCache", "Remainder", "Segment", "UNIT_NAMES",
        "budget_tokens", "dumps", "first_notice", "first_page", "first_page_with_notice",
        "join_pages", "next_page_with_notice", "page_notice", "parse_json", "read_size", "trim",
    ],
    "langchain_ragbudget": [
        "SCORE_KEYS", "TRUNCATION_EVENT", "TokenBudgetCompressor", "TokenBudgetRetriever",
        "TruncationInfo",
    ],
    "langchain_ragbudget.agents": [
        "DEFAULT_CONTINUATION_TOOL", "MIN_MAX_TOKENS", "ToolResultBudgetMiddleware",
        "ToolResultBudgetState", "merge_handles",
    ],
    "llama_index.postprocessor.ragbudget": ["TokenBudgetEvent", "TokenBudgetPostprocessor"],
    "llama_index.tools.ragbudget": [
        "BudgetedTool", "CONTEXT_PARAM", "ContinuationTool", "DEFAULT_CONTINUATION_TOOL",
        "MIN_MAX_TOKENS", "ToolBudget", "ToolBudgetEvent", "budget_tools",
    ],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(PINNED))
def test_all_is_pinned(module: str) -> None:
    """A public name added or removed is a decision: this list changes with it."""
    assert sorted(importlib.import_module(module).__all__) == sorted(PINNED[module])


def test_errors_share_one_base() -> None:
    from ragbudget import RagbudgetError
    from ragbudget_server.mcp import BudgetExceededError
    from ragbudget_server.store import StoreError

    for error in (StoreError, BudgetExceededError):
        assert issubclass(error, RagbudgetError)
        assert issubclass(error, ValueError)  # what callers relied on before the base existed


def test_core_api_contract() -> None:
    import ragbudget

    for name in ("Chunk", "TokenCounter", "get_counter", "fit", "TruncationInfo", "BudgetResult",
                 "truncate_head", "truncate_tail"):  # fmt: skip
        assert name in ragbudget.__all__


def test_the_middleware_is_a_fastmcp_middleware() -> None:
    from fastmcp.server.middleware import Middleware
    from ragbudget.middleware import TokenBudgetMiddleware

    assert issubclass(TokenBudgetMiddleware, Middleware)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


HEAVY = ("chromadb", "fastmcp", "typer", "tiktoken", "tokenizers", "semantic_text_splitter")


def _blocking(*packages: str) -> str:
    """The start of a `_python` program in which importing any of `packages` fails."""
    return (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {packages!r}:\n"
        "            raise ImportError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Block())\n"
    )


@pytest.mark.process
def test_the_core_and_fit_load_nothing_heavy() -> None:
    """`import ragbudget` and a `fit()` with the default counter load none of the application's
    or the extras' packages (the estimate is the standard library's)."""
    done = _python(
        "import sys, ragbudget\n"
        "r = ragbudget.fit([{'id': 'a', 'text': 'hello world ' * 50}], max_tokens=20)\n"
        "assert r.info.truncated\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.process
def test_the_middleware_without_fastmcp_names_its_install_line() -> None:
    """Without fastmcp, `import ragbudget.middleware` is one ImportError naming the extra."""
    done = _python(
        _blocking("fastmcp") + "import ragbudget\n"
        "try:\n"
        "    import ragbudget.middleware\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'ragbudget[fastmcp]'" in done.stdout


@pytest.mark.process
def test_the_pages_import_without_fastmcp() -> None:
    """`ragbudget.pages` (the cutting and paging both middlewares use) needs no fastmcp: it
    imports and cuts with fastmcp blocked, and loads nothing heavy."""
    done = _python(
        _blocking("fastmcp", "mcp", "mcp_types") + "from ragbudget import get_counter\n"
        "from ragbudget.pages import first_page\n"
        "shown, rest = first_page('line\\n' * 5000, 50, get_counter())\n"
        "assert rest.left > 0\n"
        "assert 'ragbudget.middleware' not in sys.modules\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.process
def test_the_guard_loads_no_store() -> None:
    """`ragbudget-guard` (a package of its own) builds its server with neither the document
    store nor Chroma loaded: `pip install ragbudget-guard` does not need them."""
    done = _python(
        "import sys\n"
        "from ragbudget_guard import build_guard, make_budget, stdio_backend\n"
        "from ragbudget_guard.command import app\n"
        "build_guard(stdio_backend(['true']), make_budget(client='codex'))\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'chromadb', 'ragbudget_server'}))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """Each import in `path`: its line, the module, and the names taken from it (none for
    `import x`)."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@pytest.mark.parametrize(
    "folder",
    [
        "packages/guard/src",
        "packages/server/src",
        "packages/langchain_plugin/src",
        "packages/llamaindex_plugin/src",
        "packages/llamaindex_tools_plugin/src",
    ],
)
def test_outside_the_core_only_public_core_names_are_imported(folder: str) -> None:
    """The guard, the server and the plugins depend on the core's public names: no private module
    (`ragbudget._x`, `ragbudget.x._y`) and no private name (`from ragbudget import _x`)."""
    sources = sorted((ROOT / folder).rglob("*.py"))
    assert sources
    private: list[str] = []
    for path in sources:
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != "ragbudget":
                continue
            bad = [p for p in parts if _private(p)] + [n for n in names if _private(n)]
            if bad:
                private.append(f"{path.relative_to(ROOT)}:{line}: {module} {bad}")
    assert private == [], "private core names imported outside the core:\n" + "\n".join(private)


@pytest.mark.parametrize(
    ("folder", "package"),
    [("packages/guard/src/ragbudget_guard", "ragbudget_guard"),
     ("packages/server/src/ragbudget_server", "ragbudget_server"),
     ("packages/langchain_plugin/src/langchain_ragbudget", "langchain_ragbudget"),
     ("packages/llamaindex_plugin/src/llama_index", "llama_index.postprocessor.ragbudget")],
)  # fmt: skip
def test_no_module_borrows_another_modules_private_name(folder: str, package: str) -> None:
    """Within the guard, the server and the plugins, a module takes no private name (`_x`) from another:
    what two modules share is public in one of them (a private module, `_options`, is the
    package's own and may be imported)."""
    private: list[str] = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for line, module, names in _imports(path):
            own = module == package or module.startswith(package + ".")
            if own and (bad := [n for n in names if _private(n)]):
                private.append(f"{path.relative_to(ROOT)}:{line}: {module} {bad}")
    assert private == [], "private names borrowed across modules:\n" + "\n".join(private)


def _module_graph(src: Path, package: str) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere but under TYPE_CHECKING: at load
    time or inside a function, both run."""
    graph: dict[str, set[str]] = {}
    for path in src.rglob("*.py"):
        parts = path.relative_to(src.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                    found.add(sub.module)
                elif isinstance(sub, ast.Import):
                    found.update(alias.name for alias in sub.names)
        graph[name] = {m for m in found if m.split(".")[0] == package and m != name}
    return graph


@pytest.mark.parametrize(
    ("folder", "package"),
    [("packages/core/src/ragbudget", "ragbudget"),
     ("packages/guard/src/ragbudget_guard", "ragbudget_guard"),
     ("packages/server/src/ragbudget_server", "ragbudget_server")],
)  # fmt: skip
def test_no_import_circle_at_run_time(folder: str, package: str) -> None:
    """No module imports one that imports it back, through any path, at load time or in a
    function (counters and presets once did, inside functions)."""
    graph = _module_graph(Path(__file__).resolve().parents[1] / folder, package)
    modules = set(graph)

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [m for m in graph[start] if m in modules]
        while todo:
            here = todo.pop()
            if here not in seen:
                seen.add(here)
                todo += [m for m in graph.get(here, ()) if m in modules]
        return seen

    # A package's __init__ importing its own submodules is how a facade works, not a circle.
    circles = sorted(
        (a, b)
        for a in modules
        for b in reach(a)
        if a in reach(b) and not b.startswith(a + ".") and not a.startswith(b + ".")
    )
    assert not circles, circles
