"""What the provider keeps for the server: the turns, the built-in memory's writes, delegations
and session ends go into the durable local buffer (outbox.py) at once, and a writer thread
sends them in order, in batches, each with its own idempotency key, so nothing is lost and
nothing is stored twice. A mixin of `MnemosyneProvider`, which holds the state it uses (the
buffer, the configuration, the connection's state)."""

from __future__ import annotations

import json
import logging
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentspec.candidates import candidate_facts
from hermes_provider.client import KeyRefused, Rejected, Unreachable
from hermes_provider.outbox import Entry
from hermes_provider.text import fit, text_of

if TYPE_CHECKING:
    from hermes_provider.config import ProviderConfig
    from hermes_provider.outbox import Outbox

logger = logging.getLogger("hermes_provider")

RETRY_MAX_S = 30.0
BATCH = 50  # buffered writes per request, at most
BATCH_BYTES = 512 * 1024  # and at most this much JSON (the server's limit is 1 MB)


class BufferedWrites:
    """Hermes' write hooks and the writer thread that empties the buffer."""

    _outbox: Outbox | None
    _config: ProviderConfig | None
    _context: str
    _state: str
    _session_id: str
    _user_speaker: str
    _wake: threading.Event
    _stopping: threading.Event
    _drains: threading.Condition
    _drain_asked: int
    _drain_done: int

    # The connection's side, `MnemosyneProvider`'s.
    def _prefix(self) -> str:
        raise NotImplementedError

    def _profile(self, session_id: str = "") -> dict[str, Any]:
        raise NotImplementedError

    def _request(self, path: str, body: dict[str, Any], timeout: float) -> Any:
        raise NotImplementedError

    def _bind(self, timeout: float) -> None:
        raise NotImplementedError

    def _offline(self, error: BaseException) -> None:
        raise NotImplementedError

    # -- writes through the buffer ------------------------------------------------------------

    def _default_scope(self) -> str:
        return self._config.scope if self._config else ""

    def _keep(self, op: str, payload: dict[str, Any]) -> None:
        if self._outbox is None:
            return
        self._outbox.put(op, payload, key_prefix=self._prefix())
        self._wake.set()

    def _writes_allowed(self) -> bool:
        # Subagents, cron jobs and flushes have their own context; their prompts are not the
        # team's conversation.
        return (
            self._outbox is not None
            and self._context == "primary"
            and self._state in ("ready", "offline")
        )

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        if not self._writes_allowed():
            return
        user, assistant = text_of(user_content).strip(), text_of(assistant_content).strip()
        if not user and not assistant:
            return
        self._keep("turn", {
            "session_id": session_id or self._session_id,
            "scope": self._default_scope(),
            "said": [[self._user_speaker, fit(user)], ["assistant", fit(assistant)]],
            "at": datetime.now().astimezone().isoformat(),
        })  # fmt: skip

    def on_delegation(
        self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any
    ) -> None:
        if not self._writes_allowed() or not (task or result):
            return
        self._keep("turn", {
            "session_id": self._session_id,
            "scope": self._default_scope(),
            "said": [["subagent", fit(f"Delegated task: {task}\nResult: {result}")]],
            "at": datetime.now().astimezone().isoformat(),
            "metadata": {"child_session_id": child_session_id},
        })  # fmt: skip

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        if not self._writes_allowed():
            return
        old_text = str((metadata or {}).get("old_text") or "").strip()
        payload = {
            "action": action,
            "target": target,
            "content": fit((content or "").strip()),
            "old_text": old_text,
            "scope": self._default_scope(),
        }
        if action in ("add", "replace") and payload["content"] or action == "remove" and old_text:
            self._keep("memory", payload)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        if not self._writes_allowed() or not self._config or not self._config.auto_extract:
            return
        said = [text_of(m.get("content")) for m in messages or [] if m.get("role") == "user"]
        said = [fit(text) for text in said if text.strip()]
        if said:
            # The server finds the candidate facts (agentspec.candidates) and stores them.
            self._keep("session_end", {"said": said, "session_id": self._session_id})

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """What the compression summary should keep: statements of preference, habit and
        decision in the messages, and the facts stored with fact_store among them."""
        said = [text_of(m.get("content")) for m in messages or [] if m.get("role") == "user"]
        keep = [c.content for c in candidate_facts(said)]
        for message in messages or []:
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {} if isinstance(call, dict) else {}
                if function.get("name") != "fact_store":
                    continue
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except (TypeError, ValueError):
                    continue
                if isinstance(arguments, dict) and arguments.get("action") == "add":
                    if isinstance(arguments.get("content"), str):
                        keep.append(arguments["content"].strip())
        keep = list(dict.fromkeys(k for k in keep if k))
        if not keep:
            return ""
        return "Facts worth keeping (also in long-term memory):\n" + "\n".join(
            f"- {line}" for line in keep
        )

    # -- the writer ---------------------------------------------------------------------------

    def _write_loop(self) -> None:
        pause = 0.0
        while not self._stopping.is_set():
            self._wake.wait(timeout=pause or 5.0)
            self._wake.clear()
            if self._stopping.is_set():
                break
            with self._drains:
                asked = self._drain_asked
            try:
                if self._state == "offline":
                    self._bind(timeout=self._config.tool_timeout if self._config else 15.0)
                if self._state == "ready":
                    self._drain()
                if self._state == "offline":
                    pause = min(RETRY_MAX_S, max(1.0, pause * 2))
                    continue
                pause = 0.0
                with self._drains:
                    self._drain_done = max(self._drain_done, asked)
                    self._drains.notify_all()
            except Unreachable as error:
                self._offline(error)
                pause = min(RETRY_MAX_S, max(1.0, pause * 2))
            except KeyRefused:
                pause = RETRY_MAX_S
            except Exception:  # noqa: BLE001 - the writer must outlive any one bad entry
                logger.exception("mnemosyne: the writer failed; retrying")
                pause = min(RETRY_MAX_S, max(1.0, pause * 2))

    def _drain(self) -> None:
        """Send the buffer in order, a batch at a time; an entry leaves it only once the server
        has stored it (or refused it for good)."""
        assert self._outbox is not None and self._config is not None  # noqa: S101
        prefix = self._prefix()
        while entries := self._outbox.pending(key_prefix=prefix, limit=BATCH):
            if self._stopping.is_set():
                return
            self._send(entries)

    def _send(self, entries: list[Entry]) -> None:
        assert self._outbox is not None and self._config is not None  # noqa: S101
        body = self._profile(self._session_id) | {
            "writes": [{"key": e.key, "op": e.op, "payload": e.payload} for e in entries]
        }
        if len(entries) > 1 and len(json.dumps(body)) > BATCH_BYTES:
            self._split(entries)  # the server takes bodies up to 1 MB
            return
        try:
            answer = self._request("writes", body, self._config.tool_timeout)
        except Rejected as refusal:
            if refusal.status in (400, 413) and len(entries) > 1:
                # One entry the server cannot take must not hold back the others.
                self._split(entries)
                return
            # It never will be stored (a read-only key, an entry too large or malformed): kept
            # in the file for inspection, out of the way of what comes after.
            for entry in entries:
                self._outbox.reject(entry.id, refusal.message)
            logger.warning("mnemosyne: %d buffered writes refused: %s", len(entries), refusal)
            return
        except Unreachable as error:
            self._outbox.failed(entries[0].id, str(error))
            raise
        by_key = {row.get("key"): row for row in answer.get("results") or []}
        for entry in entries:
            row = by_key.get(entry.key) or {}
            if row.get("status") == "stored":
                self._outbox.done(entry.id)
            elif row.get("status") == "rejected":
                logger.warning("mnemosyne: buffered %s refused: %s", entry.op, row.get("error"))
                self._outbox.reject(entry.id, str(row.get("error") or "refused"))

    def _split(self, entries: list[Entry]) -> None:
        """Send the entries in two batches, in order."""
        half = len(entries) // 2
        self._send(entries[:half])
        self._send(entries[half:])
