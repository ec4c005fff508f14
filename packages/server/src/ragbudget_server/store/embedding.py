"""Embeddings for the document store: an offline hashing embedding, Chroma's by name, and a
local sentence-transformers model folder.

`HashingEmbedding` turns text into a fixed-size vector of hashed word features (identifier-aware
unigrams and bigrams, sublinear term frequency, L2-normalised). It needs no model and no network,
is deterministic across processes and machines, and is good at what code search mostly asks:
"where is this name, these words". It is registered with Chroma under `ragbudget_hashing`, so a
collection built with it remembers it and a later `get_collection` rebuilds it from the config.

A folder path instead of a name (`"./models/all-MiniLM-L6-v2"`) is a sentence-transformers model
on disk, run by Chroma's `sentence_transformer` embedding function with normalised vectors; it
needs `pip install sentence-transformers` (which brings torch) and downloads nothing. The
collection records the folder's absolute path and rebuilds the model from it when reopened.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

try:
    import numpy as np
    from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
    from chromadb.utils.embedding_functions import (
        known_embedding_functions,
        register_embedding_function,
    )
except ImportError as exc:  # pragma: no cover - only in a broken install
    msg = f"the document store is missing a dependency ({exc}): pip install ragbudget-server"
    raise ImportError(msg) from exc

from ragbudget_server.store.errors import StoreError
from ragbudget_server.store.hashing import embed_text

__all__ = [
    "EMBEDDING_ALIASES",
    "HashingEmbedding",
    "describe_embedding",
    "embedding_label",
    "embedding_model",
    "make_embedding",
    "same_embedding",
]


@register_embedding_function
class HashingEmbedding(EmbeddingFunction[Documents]):
    """A deterministic, offline bag-of-words embedding for lexical retrieval.

    Setup: nothing to download (`pip install ragbudget-server`).

    Key init args:
        dim: vector size (64-8192, default 1024). Larger means fewer hash collisions.

    Use:
        >>> emb = HashingEmbedding()
        >>> [vector] = emb(["json.loads decodes a JSON document"])
        >>> len(vector)
        1024
    """

    def __init__(self, dim: int = 1024) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 64 <= dim <= 8192:
            msg = f"dim must be an int between 64 and 8192, got {dim!r}"
            raise ValueError(msg)
        self.dim = dim

    def __call__(self, input: Documents) -> Embeddings:
        return [self._embed_one(text) for text in input]

    def _embed_one(self, text: str) -> np.ndarray[Any, np.dtype[np.float32]]:
        return embed_text(text, self.dim)

    @staticmethod
    def name() -> str:
        return "ragbudget_hashing"

    def get_config(self) -> dict[str, Any]:
        return {"dim": self.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashingEmbedding:
        return HashingEmbedding(dim=int(config.get("dim", 1024)))

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        dim = config.get("dim", 1024)
        if isinstance(dim, bool) or not isinstance(dim, int) or not 64 <= dim <= 8192:
            msg = f"hashing embedding config: dim must be an int between 64 and 8192, got {dim!r}"
            raise ValueError(msg)

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]


EMBEDDING_ALIASES: dict[str, str] = {
    "hashing": HashingEmbedding.name(),
    "minilm": "onnx_mini_lm_l6_v2",
}
"""User-facing names and the Chroma registry names they stand for."""

_SAME = ({"onnx_mini_lm_l6_v2", "default"},)  # Chroma's default is the same MiniLM model


def embedding_label(chroma_name: str) -> str:
    """The user-facing name for a Chroma embedding name ('ragbudget_hashing' -> 'hashing')."""
    for label, name in EMBEDDING_ALIASES.items():
        if name == chroma_name or any({name, chroma_name} <= group for group in _SAME):
            return label
    return chroma_name


def describe_embedding(ef: Any) -> str:
    """How `stats()` names an embedding function: its label, and the model folder or name it
    was configured with ('sentence_transformer /opt/models/minilm')."""
    get_config = getattr(ef, "get_config", None)
    model = embedding_model(get_config()) if callable(get_config) else None
    label = embedding_label(ef.name())
    return f"{label} {model}" if model is not None else label


def same_embedding(a: str, b: str) -> bool:
    """True when two Chroma embedding names denote the same embedding."""
    return a == b or any({a, b} <= group for group in _SAME)


def embedding_model(config: object) -> str | None:
    """The model an embedding's config names (a local folder, a hub name), if it names one."""
    model = config.get("model_name") if isinstance(config, dict) else None
    return model if isinstance(model, str) else None


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "~", "/")) or os.sep in name or "/" in name or Path(name).is_dir()


_MODEL_MARKERS = ("modules.json", "config_sentence_transformers.json", "config.json")
"""Files one of which a sentence-transformers (or plain Hugging Face) model folder holds."""


def _local_model(name: str) -> EmbeddingFunction[Documents]:
    """Chroma's sentence-transformers embedding over the model folder `name` (StoreError naming
    the `embedding` argument when it is no such folder or the package is missing)."""
    folder = Path(name).expanduser().resolve()
    if not folder.is_dir():
        msg = (
            f"embedding {name!r} is neither an embedding name nor a model folder: "
            f"{folder} does not exist"
        )
        raise StoreError(msg)
    if not any((folder / marker).is_file() for marker in _MODEL_MARKERS):
        msg = (
            f"embedding {name!r}: {folder} holds no sentence-transformers model "
            f"(none of {', '.join(_MODEL_MARKERS)}); give the folder a model was saved to"
        )
        raise StoreError(msg)
    if importlib.util.find_spec("sentence_transformers") is None:
        msg = (
            f"embedding {name!r} is a local model folder, run by sentence-transformers: "
            "pip install sentence-transformers (it brings torch; the CPU build is enough)"
        )
        raise StoreError(msg)
    config = {
        "model_name": str(folder),
        "device": "cpu",
        "normalize_embeddings": True,
        "kwargs": {},
    }
    return _build(name, known_embedding_functions["sentence_transformer"], config)


def _build(name: str, cls: Any, config: dict[str, Any] | None) -> EmbeddingFunction[Documents]:
    try:
        ef: EmbeddingFunction[Documents] = (
            cls() if config is None else cls.build_from_config(config)
        )
    except Exception as exc:  # a provider's own client is missing, or its key, etc.
        msg = f"embedding {name!r} could not be set up: {exc}"
        raise StoreError(msg) from exc
    return ef


def make_embedding(name: str, config: dict[str, Any] | None = None) -> EmbeddingFunction[Documents]:
    """The embedding function for a user-facing or Chroma name, or a local model folder;
    StoreError when unknown. `config` (a collection's recorded one) rebuilds it as it was."""
    if not isinstance(name, str) or not name.strip():
        msg = (
            "embedding must be a non-empty name such as 'hashing' or 'minilm', or a model "
            f"folder, got {name!r}"
        )
        raise StoreError(msg)
    chroma_name = EMBEDDING_ALIASES.get(name.strip(), name.strip())
    cls = known_embedding_functions.get(chroma_name)
    if cls is None and _looks_like_path(name.strip()):
        return _local_model(name.strip())
    if cls is None:
        known = sorted({*EMBEDDING_ALIASES, *known_embedding_functions})
        msg = (
            f"unknown embedding {name!r}; known: {', '.join(known)}; or give a local "
            "sentence-transformers model folder"
        )
        raise StoreError(msg)
    return _build(name, cls, config)
