"""counter=None: the user's Settings.tokenizer when they set one, else ragbudget's estimate."""

from __future__ import annotations

import llama_index.core
import pytest
import tiktoken
from li_parts import BudgetEvents, module_docstring, scored
from llama_index.core import Settings
from llama_index.core.schema import MetadataMode
from llama_index.postprocessor.ragbudget import TokenBudgetPostprocessor
from ragbudget import get_counter


@pytest.fixture
def no_global_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from LlamaIndex's unset global tokenizer; the test's changes are undone after."""
    monkeypatch.setattr(llama_index.core, "global_tokenizer", None)


@pytest.mark.usefixtures("no_global_tokenizer")
def test_unset_uses_the_estimate_and_creates_nothing() -> None:
    counter = TokenBudgetPostprocessor().token_counter()
    assert counter.name == "estimate"
    assert not counter.exact
    assert llama_index.core.global_tokenizer is None  # Settings.tokenizer was not read


@pytest.mark.usefixtures("no_global_tokenizer")
def test_llama_index_lazy_default_is_not_taken_for_a_user_choice() -> None:
    _ = Settings.tokenizer  # what the splitter and prompt helper do: creates the default
    assert llama_index.core.global_tokenizer is not None
    assert TokenBudgetPostprocessor().token_counter().name == "estimate"


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
