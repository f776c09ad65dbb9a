"""What the Hermes tests share: a profile on disk, a provider loaded the way Hermes loads it, and
a small OpenAI-compatible chat server that plays the model."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers import free_port


def write_profile(home: Path, api_key: str, url: str, **settings: Any) -> Path:
    """A Hermes profile connected to the server at `url` with `mnemosyne hermes install`'s code
    path (which asks the server who the key is)."""
    from hermes_provider.installer import install

    home.mkdir(parents=True, exist_ok=True)
    said: list[str] = []
    install(
        hermes_home=home,
        url=url,
        api_key=api_key,
        scope=settings.pop("scope", None),
        say=said.append,
    )
    # The test server loads its models on its first requests, on a busy machine: the default
    # prefetch timeout (2 s) is for a warm server. The outage tests set their own.
    settings.setdefault("prefetch_timeout", 30)
    if settings:
        from hermes_provider.config import update_config

        update_config(
            home / "config.yaml", {f"plugins.mnemosyne.{k}": v for k, v in settings.items()}
        )
    return home


def load_provider(home: Path, monkeypatch: Any) -> Any:
    """The provider as Hermes' own loader finds it in the profile's plugins folder."""
    from plugins.memory import load_memory_provider

    monkeypatch.setenv("HERMES_HOME", str(home))
    provider = load_memory_provider("mnemosyne")
    assert provider is not None, "Hermes' loader did not find the installed plugin"
    return provider


def manager_for(home: Path, monkeypatch: Any, session_id: str = "session-1", **kwargs: Any):
    """A MemoryManager driving the installed provider, initialized as AIAgent does."""
    from agent.memory_manager import MemoryManager

    provider = load_provider(home, monkeypatch)
    assert provider.is_available()
    manager = MemoryManager()
    manager.add_provider(provider)
    manager.initialize_all(
        session_id=session_id,
        platform="cli",
        hermes_home=str(home),
        agent_context="primary",
        **kwargs,
    )
    return manager, provider


def tool(manager: Any, name: str, **args: Any) -> dict[str, Any]:
    answer = manager.handle_tool_call(name, args)
    assert isinstance(answer, str)
    return json.loads(answer)


# -- the model ----------------------------------------------------------------------------------

Reply = dict[str, Any]  # {"content": str} or {"tool_call": {"name": ..., "arguments": {...}}}


class ChatServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script and
    keeps every request it got. `script(messages)` returns the reply to a request."""

    def __init__(self, script: Callable[[list[dict[str, Any]]], Reply]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.port = free_port()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                reply = server.script(body.get("messages", []))
                if body.get("stream"):
                    self._stream(body, reply)
                else:
                    self._json(body, reply)

            def _message(self, reply: Reply) -> dict[str, Any]:
                if "tool_call" in reply:
                    call = reply["tool_call"]
                    return {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{len(server.requests)}",
                                "type": "function",
                                "function": {
                                    "name": call["name"],
                                    "arguments": json.dumps(call["arguments"]),
                                },
                            }
                        ],
                    }
                return {"role": "assistant", "content": reply["content"]}

            def _json(self, body: dict[str, Any], reply: Reply) -> None:
                message = self._message(reply)
                payload = {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "model": body.get("model", "stub-model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if "tool_call" in reply else "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                message = self._message(reply)
                delta: dict[str, Any] = {"role": "assistant"}
                if message.get("tool_calls"):
                    delta["tool_calls"] = [{"index": 0, **message["tool_calls"][0]}]
                else:
                    delta["content"] = message["content"]
                chunks = [
                    {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {
                        "choices": [
                            {
                                "index": 0,
                                "delta": {},
                                "finish_reason": "tool_calls" if "tool_call" in reply else "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                ]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for chunk in chunks:
                    chunk.update(id="chatcmpl-stub", object="chat.completion.chunk",
                                 model=body.get("model", "stub-model"))  # fmt: skip
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def user_messages(self) -> list[str]:
        """The last user message of every request, as the model received it."""
        found = []
        for request in self.requests:
            users = [m for m in request.get("messages", []) if m.get("role") == "user"]
            if users:
                content = users[-1].get("content")
                found.append(content if isinstance(content, str) else json.dumps(content))
        return found


MEMORY_CONTEXT = re.compile(r"<memory-context>(.*?)</memory-context>", re.S)


def memory_context(text: str) -> str:
    """What a request carried inside <memory-context> (empty when nothing)."""
    return "\n".join(MEMORY_CONTEXT.findall(text))


def remembering_model(messages: list[dict[str, Any]]) -> Reply:
    """A model that stores what it is asked to remember with fact_store, then says so, and
    otherwise answers with what its memory context told it."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return {"content": "Noted; I will remember that."}
    text = last.get("content") if isinstance(last.get("content"), str) else ""
    said = text.split("<memory-context>")[0].strip()
    if said.lower().startswith("please remember that "):
        fact = said[len("please remember that ") :].rstrip(".")
        fact = fact[:1].upper() + fact[1:] + "."
        return {
            "tool_call": {"name": "fact_store", "arguments": {"action": "add", "content": fact}}
        }
    context = memory_context(text)
    return {"content": f"You said: {said[:80]}" + (" (I recall something)" if context else "")}
