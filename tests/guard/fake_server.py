"""A misbehaving MCP server over stdio for the guard's failure tests (standard library only).

`python fake_server.py [MODE]`: MODE `ok` answers; `garbage-at-start` writes a line that is not
JSON-RPC before anything else; `latin1-tools` answers `tools/list` in Latin-1 (a description
with `é`), not UTF-8. Its tools: `echo` (text), `die` (the process exits without an
answer), `hang` (never answers), `garbage` (answers with a line that is not JSON-RPC), `env`
(the value of the variable named by `name`), `pid` (its process id), `capabilities` (what the
client said it supports at initialize, as JSON), `grow` (adds a tool `grown-N`, then says the
tool list changed), `wait` (answers nothing, but keeps reading: a cancellation arrives),
`rpc-error` (a JSON-RPC error of `size` CJK characters), `not-utf8` (an answer that is not
UTF-8).

With `FAKE_RECORD=<file>` in its environment it appends every `notifications/cancelled` it gets
to that file, one JSON line each.
"""

from __future__ import annotations

import json
import os
import sys
import time

NAMES = [
    "echo",
    "die",
    "hang",
    "garbage",
    "env",
    "pid",
    "capabilities",
    "grow",
    "wait",
    "rpc-error",
    "not-utf8",
]
TOOLS = [
    {"name": name, "description": f"{name} tool", "inputSchema": {"type": "object"}}
    for name in NAMES
]
CLIENT: dict[str, object] = {}
"""The client's `initialize` params."""


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(request_id: object, value: str) -> None:
    result = {"content": [{"type": "text", "text": value}], "isError": False}
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def call(request_id: object, name: str, arguments: dict[str, str]) -> None:
    if name == "die":
        os._exit(3)
    elif name == "hang":
        time.sleep(3600)
    elif name == "garbage":
        sys.stdout.write("this is not JSON-RPC: Traceback (most recent call last)\n")
        sys.stdout.flush()
    elif name == "env":
        text(request_id, os.environ.get(arguments.get("name", ""), "(unset)"))
    elif name == "pid":
        text(request_id, str(os.getpid()))
    elif name == "capabilities":
        text(request_id, json.dumps(CLIENT.get("capabilities", {}), sort_keys=True))
    elif name == "grow":
        grown = f"grown-{len(TOOLS)}"
        TOOLS.append({"name": grown, "description": "grown", "inputSchema": {"type": "object"}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text(request_id, grown)
    elif name == "wait":
        pass  # the answer never comes; the client cancels
    elif name == "rpc-error":  # a JSON-RPC error whose message is `size` CJK characters
        message = "漢字かな交じり文" * (int(arguments.get("size", "1000")) // 8)
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": message}})
    elif name == "not-utf8":  # an answer that is not UTF-8
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [
            {"type": "text", "text": "@@@"}], "isError": False}})  # fmt: skip
        sys.stdout.buffer.write(body.encode().replace(b"@@@", b"caf\xe9 \xff\xfe") + b"\n")
        sys.stdout.flush()
    else:
        text(request_id, arguments.get("text", ""))


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
    if mode == "garbage-at-start":
        sys.stdout.write("Welcome to my server! (a banner on stdout)\n")
        sys.stdout.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:  # a notification
            record = os.environ.get("FAKE_RECORD")
            if record and method == "notifications/cancelled":
                with open(record, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(message.get("params")) + "\n")
            continue
        if method == "initialize":
            CLIENT.update(message["params"])
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "fake", "version": "0.0.1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list" and mode == "latin1-tools":
            tools = [{**TOOLS[0], "description": "café"}]
            body = {"jsonrpc": "2.0", "id": request_id, "result": {"tools": tools}}
            sys.stdout.buffer.write(json.dumps(body, ensure_ascii=False).encode("latin-1") + b"\n")
            sys.stdout.flush()
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            params = message["params"]
            call(request_id, params["name"], params.get("arguments") or {})
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
