"""A misbehaving MCP server over stdio for the guard's failure tests (standard library only).

`python fake_server.py [MODE]`: MODE `ok` answers; `garbage-at-start` writes a line that is not
JSON-RPC before anything else. Its tools: `echo` (text), `die` (the process exits without an
answer), `hang` (never answers), `garbage` (answers with a line that is not JSON-RPC), `env`
(the value of the variable named by `name`), `pid` (its process id).
"""

from __future__ import annotations

import json
import os
import sys
import time

TOOLS = [
    {"name": name, "description": f"{name} tool", "inputSchema": {"type": "object"}}
    for name in ("echo", "die", "hang", "garbage", "env", "pid")
]


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
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "0.0.1"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
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
