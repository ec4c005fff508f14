"""Opening stores: embeddings, collections, paths and servers, and the errors for each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from chromadb.utils.embedding_functions import known_embedding_functions
from ragbudget_server.store import DocumentStore, HashingEmbedding, StoreError
from ragbudget_server.store.hashing import features

MakeStore = Callable[..., DocumentStore]


def test_hashing_embedding_is_deterministic_normalised_and_registered() -> None:
    emb = HashingEmbedding()
    a, b = emb(["json.loads decodes JSON", "json.loads decodes JSON"])
    assert np.array_equal(a, b) and a.shape == (1024,)
    assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5
    [empty] = emb([""])
    assert float(np.linalg.norm(empty)) == pytest.approx(1.0)
    assert known_embedding_functions["ragbudget_hashing"] is HashingEmbedding
    rebuilt = HashingEmbedding.build_from_config(HashingEmbedding(dim=256).get_config())
    assert rebuilt.dim == 256 and rebuilt(["x"])[0].shape == (256,)
    with pytest.raises(ValueError, match="dim must be an int between 64 and 8192"):
        HashingEmbedding(dim=3)


def test_features_split_identifiers_and_stem() -> None:
    f = features("JSONDecodeError raised while decoding; raw_decode decodes")
    assert {"json", "decod", "error", "rais", "raw", "=jsondecodeerror", "=raw_decode"} <= set(f)
    assert f["decod"] == 4  # JSONDecodeError, decoding, raw_decode, decodes
    assert "json decod" in f and "while" not in f


def test_similar_texts_score_higher() -> None:
    emb = HashingEmbedding()
    query, near, far = emb(
        ["decode a JSON document", "def decode(self, s): parse the JSON document", "socket send"]
    )
    assert float(query @ near) > float(query @ far) + 0.2


def test_collection_remembers_its_embedding(make_store: MakeStore, corpus: Path) -> None:
    built = make_store(collection="remember-me")
    built.ingest([corpus / "scanner.py"])
    config = built.collection.configuration_json["embedding_function"]
    assert config == {"type": "known", "name": "ragbudget_hashing", "config": {"dim": 1024}}
    other = make_store(collection="remember-me", embedding=None)  # adopts the collection's
    assert other.stats().embedding == "hashing"
    assert len(other.search("scanner").results) > 0
    with pytest.raises(StoreError, match="was built with embedding 'hashing', not 'minilm'"):
        make_store(collection="remember-me", embedding="minilm")


def test_minilm_offline_is_a_clear_error_and_writes_nothing(tmp_path: Path, corpus: Path) -> None:
    store = DocumentStore(path=tmp_path / "db", embedding="minilm")
    with pytest.raises(StoreError, match=r"embedding 'minilm' failed: .*embedding='hashing'"):
        store.ingest([corpus])
    assert not (tmp_path / "db").exists()


def test_unknown_embedding_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"unknown embedding 'nonsense'; known: .*hashing.*minilm"):
        DocumentStore(path=tmp_path / "db", embedding="nonsense")


def test_read_only_use_of_a_missing_collection(tmp_path: Path) -> None:
    store = DocumentStore(path=tmp_path / "db")
    for call in (lambda: store.search("x"), lambda: store.read("a.py"), store.stats):
        with pytest.raises(
            StoreError, match=r"^no ragbudget store at .*/db: run 'ragbudget ingest"
        ):
            call()
    assert not (tmp_path / "db").exists()  # a search creates no database


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"collection": "x"}, "collection must be 3-512 characters"),
        ({"collection": "bad name!"}, "collection must be 3-512 characters"),
        ({"path": "db", "server": "http://localhost:8000"}, "either path or server, not both"),
        ({"path": None}, "give a path"),
        ({"path": None, "server": "ftp://host"}, "server must be a URL"),
        ({"path": None, "server": "http://host:99999"}, "invalid port"),
        ({"counter": "nope"}, "unknown counter spec"),
    ],
)
def test_bad_store_arguments(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        DocumentStore(**kwargs)  # type: ignore[arg-type]


def test_unreachable_server(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(
        StoreError, match=f"cannot reach the Chroma server at http://127.0.0.1:{port}"
    ):
        DocumentStore(server=f"http://127.0.0.1:{port}", path=None)


def test_a_file_as_database_path(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="is a file, not a database folder"):
        DocumentStore(path=tmp_path / "file").search("x")


def test_counter_is_remembered(tmp_path: Path, corpus: Path) -> None:
    first = DocumentStore(path=tmp_path / "db", counter="tiktoken:cl100k_base")
    first.ingest([corpus / "tool.py"])
    again = DocumentStore(path=tmp_path / "db")
    assert again.counter.name == "tiktoken:cl100k_base"
    assert again.stats().counter == "tiktoken:cl100k_base"
