"""counter=None: the user's Settings.tokenizer when they set one, else exact where bpe-openai is
installed (the plugin brings it where it has wheels), else ragbudget's estimate."""

from __future__ import annotations

import llama_index.core
import pytest
import tiktoken
from li_parts import BudgetEvents, module_docstring, scored
from llama_index.core import Settings
from llama_index.core.schema import MetadataMode
from llama_index.postprocessor.ragbudget import TokenBudgetPostprocessor
from ragbudget import get_counter
from ragbudget.exact import default_spec


@pytest.fixture
def no_global_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from LlamaIndex's unset global tokenizer; the test's changes are undone after."""
    monkeypatch.setattr(llama_index.core, "global_tokenizer", None)


@pytest.mark.usefixtures("no_global_tokenizer")
def test_unset_counts_exactly_where_it_can_and_creates_nothing() -> None:
    # As the server does: exact (bpe-openai, which the plugin brings where it has wheels),
    # else the estimate.
    counter = TokenBudgetPostprocessor().token_counter()
    assert counter.name == default_spec() == "exact"
    assert counter.exact
    assert llama_index.core.global_tokenizer is None  # Settings.tokenizer was not read


@pytest.mark.usefixtures("no_global_tokenizer")
def test_llama_index_lazy_default_is_not_taken_for_a_user_choice() -> None:
    _ = Settings.tokenizer  # what the splitter and prompt helper do: creates the default
    assert llama_index.core.global_tokenizer is not None
    assert TokenBudgetPostprocessor().token_counter().name == default_spec()


@pytest.mark.usefixtures("no_global_tokenizer")
def test_a_tokenizer_the_user_set_is_used(budget_events: BudgetEvents) -> None:
    o200k = tiktoken.get_encoding("o200k_base")
    Settings.tokenizer = o200k.encode
    nodes = [scored(module_docstring(name), 0.5, name, topic=name) for name in ("json", "sched")]
    pp = TokenBudgetPostprocessor(max_tokens=10**6)
    assert pp.token_counter().name == "llama_index:Settings.tokenizer"
    assert pp.token_counter().exact
    out = pp.postprocess_nodes(nodes)
    for src, new in zip(nodes, out, strict=True):
        seen = src.node.get_content(metadata_mode=MetadataMode.LLM)
        assert new.node.metadata["ragbudget"]["tokens"] == len(o200k.encode(seen))
    (event,) = budget_events.events
    assert event.info.counter == "llama_index:Settings.tokenizer"

    # An explicit counter wins over Settings.
    assert TokenBudgetPostprocessor(counter="chars:4").token_counter().name == "chars:4"

    # Resolved per call: a later change of Settings.tokenizer takes effect.
    Settings.tokenizer = lambda text: text.split()
    words = nodes[0].node.get_content(metadata_mode=MetadataMode.LLM).split()
    assert pp.postprocess_nodes(nodes[:1])[0].node.metadata["ragbudget"]["tokens"] == len(words)


@pytest.mark.usefixtures("no_global_tokenizer")
def test_user_set_tokenizer_with_the_defaults_encoding_still_counts_as_set() -> None:
    # Same encoding as LlamaIndex's default, set by the user in a different form.
    Settings.tokenizer = tiktoken.get_encoding("cl100k_base").encode
    counter = TokenBudgetPostprocessor().token_counter()
    assert counter.name == "llama_index:Settings.tokenizer"
    text = module_docstring("json")
    assert counter.count(text) == get_counter("tiktoken:cl100k_base").count(text)


@pytest.mark.usefixtures("no_global_tokenizer")
@pytest.mark.parametrize("budget", [200, 500, 1500])
def test_max_tokens_is_a_hard_limit_by_default(budget: int) -> None:
    # The default counter is exact: the nodes' LLM-visible content stays within max_tokens by
    # both o200k and cl100k (the estimate once gave 503 o200k tokens at 500).
    names = ("argparse", "json", "statistics", "sched", "difflib", "pickle", "heapq")
    nodes = [scored(module_docstring(n), 1 - i / 10, n, topic=n) for i, n in enumerate(names)]
    out = TokenBudgetPostprocessor(max_tokens=budget).postprocess_nodes(nodes)
    assert out
    for name in ("o200k_base", "cl100k_base"):
        encoding = tiktoken.get_encoding(name)
        seen = [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in out]
        assert sum(len(encoding.encode(text)) for text in seen) <= budget, name
