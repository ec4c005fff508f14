"""One store, several processes: a running server sees what other processes write, and two
ingests of one embedded store never interleave."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ragbudget_server.store import DocumentStore, SearchResponse
from ragbudget_server.store.hybrid import index_for
from ragbudget_server.store.lock import LOCK_NAME, writer_lock

fastmcp = pytest.importorskip("fastmcp")

pytestmark = pytest.mark.process

RAGBUDGET = Path(sys.executable).with_name("ragbudget")
ZOO = 'def zebra_handler():\n    """zebra quokka pangolin handler"""\n    return 42\n'
SEA = 'def walrus_handler():\n    """walrus narwhal octopus handler"""\n    return 7\n'


def _env() -> dict[str, str]:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "PYTHONUNBUFFERED": "1"}
    for name in ("RAGBUDGET_DB", "RAGBUDGET_SERVER", "RAGBUDGET_COLLECTION"):
        env.pop(name, None)
    return env


def _ingest(where: dict[str, Any], *paths: Path, prune: bool = False) -> None:
    """An ingest by this process (not the server's): opened, written and closed."""
    with DocumentStore(**where) as store:
        report = store.ingest(list(paths), prune=prune)
    assert not report.errors, report.errors


async def _search(client: Any, query: str) -> SearchResponse:
    # format=json: the text block is the whole response, texts included (the structured
    # content leaves them out: one copy)
    args = {"query": query, "max_tokens": 2000, "format": "json"}
    result = await client.call_tool("search", args)
    return SearchResponse.model_validate_json(result.content[-1].text)


@pytest.mark.parametrize("backend", ["embedded", pytest.param("server", marks=pytest.mark.server)])
async def test_a_running_server_answers_from_what_another_process_wrote(
    backend: str, tmp_path: Path, stdlib: Path, request: pytest.FixtureRequest
) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(stdlib / "json" / "decoder.py", docs / "decoder.py")
    if backend == "server":
        url, collection = request.getfixturevalue("chroma_server"), f"live-{os.getpid()}"
        where: dict[str, Any] = {"server": url, "path": None, "collection": collection}
        serve = ["--server", url, "--collection", collection]
    else:
        where = {"path": tmp_path / "db"}
        serve = ["--db", str(tmp_path / "db")]
    _ingest(where, docs)
    transport = StdioTransport(
        command=str(RAGBUDGET),
        args=["serve", *serve, "--hybrid"],
        env=_env(),
        keep_alive=False,
        log_file=tmp_path / "serve.log",
    )
    zoo = docs / "zoo.py"
    async with Client(transport) as client:
        before = await _search(client, "zebra quokka pangolin")
        assert all("zebra" not in r.text for r in before.results)

        zoo.write_text(ZOO)  # another process (this one) adds a file
        tokyo = docs / "tokyo.txt"  # ... and one only the lexical index finds
        tokyo.write_text("東京都庁の開庁時間は午前八時半から午後五時十五分までです。\n")
        _ingest(where, docs)
        added = await _search(client, "zebra quokka pangolin")
        assert added.results[0].source == zoo.as_posix() and "zebra" in added.results[0].text
        cjk = await _search(client, "東京都庁は何時に開きますか")
        assert cjk.results[0].source == tokyo.as_posix()
        tokyo.unlink()

        zoo.write_text(SEA)  # ... changes it
        _ingest(where, docs)
        changed = await _search(client, "walrus narwhal octopus")
        assert changed.results[0].source == zoo.as_posix() and "walrus" in changed.results[0].text
        stale = await _search(client, "zebra quokka pangolin")
        assert all("zebra" not in r.text for r in stale.results)

        zoo.unlink()  # ... and prunes it
        _ingest(where, docs, prune=True)
        for query in ("walrus narwhal octopus", "zebra quokka pangolin"):
            gone = await _search(client, query)
            assert gone.results and all(r.source != zoo.as_posix() for r in gone.results)
        stats = await client.call_tool("stats", {})
        assert json.loads(stats.content[0].text)["store"]["documents"] == 1


Snapshot = Callable[[DocumentStore], dict[str, tuple[Any, ...]]]


def test_two_concurrent_ingests_end_as_one_clean_ingest(
    tmp_path: Path, stdlib: Path, snapshot: Snapshot
) -> None:
    corpus = [stdlib / "json", stdlib / "email"]
    clean = tmp_path / "clean"
    with DocumentStore(path=clean) as store:
        store.ingest(corpus)
        expected = snapshot(store)
    db = tmp_path / "db"
    args = [str(RAGBUDGET), "ingest", *map(str, corpus), "--db", str(db)]
    procs = [
        subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), text=True
        )
        for _ in range(2)
    ]
    outputs = [proc.communicate(timeout=150) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    with DocumentStore(path=db) as store:
        got = snapshot(store)
        assert index_for(store._backend).ids() == got.keys()  # the lexical index too
    assert got.keys() == expected.keys()
    assert got == expected


def test_a_second_ingest_waits_for_the_first(tmp_path: Path, corpus: Path) -> None:
    db = tmp_path / "db"
    with DocumentStore(path=db) as store:
        store.ingest([corpus / "tool.py"])
    args = [str(RAGBUDGET), "ingest", str(corpus), "--db", str(db)]
    with writer_lock(db):
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), text=True
        )
        assert proc.stderr is not None
        line = proc.stderr.readline()  # blocks until the ingest says it waits
        assert f"another ingest (pid {os.getpid()}) is writing the store at {db}" in line
        assert "waiting for it to finish" in line and proc.poll() is None
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    with DocumentStore(path=db) as store:
        assert store.stats().documents == 5


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path, corpus: Path) -> None:
    db = tmp_path / "db"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pathlib import Path\nfrom ragbudget_server.store.lock import writer_lock\n"
         f"with writer_lock(Path({str(db)!r})):\n    print('locked', flush=True)\n    time.sleep(600)\n"],
        stdout=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (db / LOCK_NAME).exists()
    with DocumentStore(path=db) as store:
        report = store.ingest([corpus])
    assert report.files_ingested == 5 and not report.errors
