"""session/list with other agents' folders present: the cost beside pi's sessions.

Lists a root of generated pi sessions (default 2,000) in process, without agent folders and then
with a Claude Code and a Codex folder of sessions in the test line format (tests/support/line_agent.py),
read by its translator; or, with `--real`, the real agents' files (tests/fixtures) read by the real
translators: Claude Code's fixture project copied into folders of its own until there are about
`--agents` sessions, and Codex's fixture folder (its three threads and names file). The summaries of agent sessions are cached by their files' size and time, so
a warm listing reads only pi's files again. Prints the medians and the ratio.

    .venv/bin/python tests/benchmarks/agents_list_bench.py [--pi 2000] [--agents 100] [--reps 7] [--real]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sessiontree import protocol as p
from sessiontree.agents import registry
from sessiontree.paths import encode_cwd
from sessiontree.service import ServiceConfig, SessionService
from support.line_agent import LineTranslator, session_lines


def pi_sessions(root: Path, count: int) -> None:
    for number in range(count):
        cwd = f"/home/user/project{number % 20}"
        directory = root / encode_cwd(cwd)
        directory.mkdir(parents=True, exist_ok=True)
        session_id = f"0000{number:04d}-0000-7000-8000-000000000000"
        lines = [{"type": "session", "version": 3, "id": session_id, "timestamp": "2026-12-01T10:00:00.000Z", "cwd": cwd}]
        parent = None
        for turn in range(12):
            role = "user" if turn % 2 == 0 else "assistant"
            content = f"turn {turn} of session {number} " * 8
            entry_id = f"{number:04x}{turn:04x}"
            message = {"role": role, "content": content, "timestamp": 1764583200000 + turn * 60000}
            lines.append({"type": "message", "id": entry_id, "parentId": parent,
                          "timestamp": "2026-12-01T10:00:00.000Z", "message": message})
            parent = entry_id
        path = directory / f"2026-12-01T10-00-00-000Z_{session_id}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def agent_sessions(folder: Path, count: int) -> None:
    for number in range(count):
        turns = [(f"e{turn}", f"e{turn - 1}" if turn else None, "user" if turn % 2 == 0 else "assistant",
                  f"agent turn {turn} " * 8) for turn in range(12)]
        path = folder / f"proj{number % 5}" / f"s{number}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(session_lines(f"s{number}", f"/home/user/project{number % 20}", *turns))


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def real_agent_sessions(folders: dict[str, Path], count: int) -> None:
    """Copies of the real fixture files: Claude Code's project as often as it takes for `count`."""
    project = FIXTURES / "claude-code" / "projects" / "-home-user-project"
    per_copy = len(list(project.rglob("*.jsonl")))
    for number in range(max(1, count // per_copy)):
        shutil.copytree(project, folders["claude-code"] / f"-home-user-project{number}")
    shutil.copytree(FIXTURES / "codex", folders["codex"].parent)


def list_ms(service: SessionService) -> float:
    start = time.perf_counter()
    service.list(p.ListParams())
    return (time.perf_counter() - start) * 1000


def medians_ms(first: SessionService, second: SessionService, reps: int) -> tuple[float, float]:
    """Both listed in turn, so that the load of a shared machine falls on both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(reps):
        times[0].append(list_ms(first))
        times[1].append(list_ms(second))
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pi", type=int, default=2000)
    parser.add_argument("--agents", type=int, default=100, help="sessions in each agent's folder")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--real", action="store_true", help="the real fixture files and translators")
    args = parser.parse_args()
    if not args.real:
        registry.TRANSLATORS.update({"claude-code": LineTranslator("claude-code"), "codex": LineTranslator("codex")})
    with tempfile.TemporaryDirectory() as temporary:
        base = Path(temporary)
        pi_sessions(base / "sessions", args.pi)
        folders = {"claude-code": base / "claude" / "projects", "codex": base / "codex" / "sessions"}
        if args.real:
            real_agent_sessions(folders, args.agents)
        else:
            for folder in folders.values():
                agent_sessions(folder, args.agents)
        alone = SessionService(ServiceConfig(base / "sessions"))
        beside = SessionService(ServiceConfig(base / "sessions", agents=folders))  # type: ignore[arg-type]
        list_ms(alone)  # the page cache warm for both
        cold = list_ms(beside)
        without, with_agents = medians_ms(alone, beside, args.reps)
        print(f"{args.pi} pi sessions: list {without:.1f} ms")
        listed = sum(s.agent != "pi" for s in beside.list(p.ListParams()).sessions)
        print(f"+ {listed} agent sessions ({'real fixtures' if args.real else 'line format'}): "
              f"first list {cold:.1f} ms, then {with_agents:.1f} ms")
        print(f"ratio (warm) {with_agents / without:.2f}")


if __name__ == "__main__":
    main()
