"""An agent loop on sessiontree: every turn appended as it happens, a branch, the context printed.

    python clients/python/agent_loop.py --sessions-dir /tmp/sessions

`python` is one that has the sessiontree package: a virtual environment it was installed into
(`python3 -m venv ~/.venvs/sessiontree && ~/.venvs/sessiontree/bin/pip install .`, then
`~/.venvs/sessiontree/bin/python`), the checkout's `.venv/bin/python` after `make setup`, or the
environment `pipx install .` made (`$(pipx environment --value PIPX_LOCAL_VENVS)/sessiontree/bin/python`).

The "model" here is a stand-in that answers by rule, so the example runs anywhere; a real agent
would send `context.messages` to its model where `reply()` is called. The daemon comes from
`SESSIONTREE_COMMAND` (words) if set, else this Python's `-m sessiontree serve`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import time
from pathlib import Path
from typing import Any

try:
    from sessiontree import protocol as p
    from sessiontree.client import SyncSessionTreeClient, server_command
except ModuleNotFoundError as missing:  # run by a Python without the package: say which to use
    raise SystemExit(
        f"{missing}: run this with a Python that has sessiontree installed (see the top of {__file__})"
    ) from None


def now_ms() -> int:
    return int(time.time() * 1000)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": now_ms()}}


def reply(messages: list[Any]) -> dict[str, Any]:
    """The stand-in model: it answers the last user message, knowing how long the context is."""
    last = messages[-1]["content"]
    text = f"({len(messages)} messages in context) You asked: {last}"
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "example",
        "provider": "example",
        "model": "rule-based",
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
        "stopReason": "stop",
        "timestamp": now_ms(),
    }
    return {"type": "message", "message": message}


def turn(client: SyncSessionTreeClient, session_id: str, prompt: str) -> str:
    """One turn: append the prompt, ask the model with the context, append its answer."""
    client.append(p.AppendParams(session_id, entry=user(prompt)))
    context = client.context(p.ContextParams(session_id))
    return client.append(p.AppendParams(session_id, entry=reply(context.messages))).id


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content", message.get("summary", ""))
    if isinstance(content, list):
        return " ".join(block.get("text", "") for block in content if isinstance(block, dict))
    return str(content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions-dir", type=Path, required=True)
    parser.add_argument("--cwd", default=os.getcwd(), help="the project the session belongs to")
    args = parser.parse_args(argv)
    command = shlex.split(os.environ.get("SESSIONTREE_COMMAND", "")) or server_command()
    command += ["--sessions-dir", str(args.sessions_dir)]

    with SyncSessionTreeClient(command) as client:
        created = client.create(p.CreateParams(cwd=args.cwd))
        sid = created.session_id
        first_answer = turn(client, sid, "What does this project do?")
        turn(client, sid, "Rewrite it in Rust.")
        # Second thoughts: go back to after the first answer, leaving a summary of the abandoned
        # branch (it stays in the file; the model sees only the summary), and ask something else.
        client.branch(p.BranchParams(sid, first_answer, summary="The user considered a Rust rewrite and dropped it."))
        turn(client, sid, "Add tests instead.")
        client.label(p.LabelParams(sid, first_answer, label="overview"))

        print(f"session {sid}")
        print(f"file    {created.path}")
        for message in client.context(p.ContextParams(sid)).messages:
            print(f"{message['role']}: {text_of(message)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
