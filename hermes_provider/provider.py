"""MnemosyneProvider: Hermes Agent's MemoryProvider, backed by Mnemosyne.

What Hermes calls, and what happens:
- `is_available`: is the profile configured (database URL and API key)? No network.
- `initialize`: configures Django in this process, checks the database and binds the provider
  to the API key's tenant. An unknown or revoked key: a clear warning, and the provider stays
  unavailable for the session. An unreachable database: a warning; turns are kept locally and
  the provider binds as soon as the database answers.
- `system_prompt_block`: the tenant's most important facts (level 2), within their share of the
  token budget, and how to use the tools.
- `prefetch`: the memories relevant to the user's message (level 3); on the first turn of a
  resumed session, first its last turns (level 1).
- `sync_turn`, `on_memory_write`, `on_delegation`, `on_session_end`: kept in the durable local
  buffer (outbox.py) at once, written by a writer thread; never lost, never written twice.
- `handle_tool_call`: `fact_store` and `fact_feedback` (tools.py).

Database work runs on two long-lived daemon threads with their own connections: a reader
(prefetch, tools, the system prompt) and the writer (the buffer, and Mnemosyne's background
tasks when no broker is configured).
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from agent.memory_provider import MemoryProvider

from hermes_provider import config as provider_config
from hermes_provider import runtime, tools
from hermes_provider.outbox import Entry, Outbox

logger = logging.getLogger("hermes_provider")

PREFETCH_TIMEOUT_S = 7.0  # Hermes gives up on a prefetch after 8 s
TOOL_TIMEOUT_S = 60.0
SHUTDOWN_FLUSH_S = 10.0
REVERIFY_S = 60.0  # a revoked key stops working within this long
RETRY_MAX_S = 30.0
MAX_CONTENT_CHARS = 16_384  # what one memory holds (the server counts characters)
HERMES_MEMORY_TAG = "hermes-memory"
_CUT = " […]"


def _fit(text: str) -> str:
    """Text cut to what one memory holds."""
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    return text[: MAX_CONTENT_CHARS - len(_CUT)].rstrip() + _CUT


def _text_of(content: Any) -> str:
    """The text of a message's content (a string, or a list of typed parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _key_prefix(token: str) -> str:
    # mnm_<prefix>_<secret>: the prefix is public and names the key without the database.
    parts = token.strip().split("_", 2)
    return parts[1] if len(parts) == 3 else ""


class MnemosyneProvider(MemoryProvider):
    """Hermes memory provider backed by Mnemosyne (one tenant per API key)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self._section = config  # None: read the profile's config.yaml
        self._config: provider_config.ProviderConfig | None = None
        self._binding: tools.Binding | None = None
        self._verified_at = 0.0
        self._state = "off"  # off | refused | offline | ready
        self._reason = ""
        self._session_id = ""
        self._restore_session = ""  # hot restore (level 1) for this session on the next prefetch
        self._context = "primary"
        self._user_speaker = "user"
        self._prompt_fact_ids: list[int] = []
        self._prompt_tokens = 0
        self._warn: Callable[[str], None] | None = None
        self._last_warning = ""
        self._outbox: Outbox | None = None
        self._reader: runtime.Worker | None = None
        self._writer: threading.Thread | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        # wait_idle asks for a drain (a number); the writer reports the last it completed.
        self._drains = threading.Condition()
        self._drain_asked = self._drain_done = 0
        self._lock = threading.RLock()

    # -- identity and configuration ------------------------------------------------------------

    @property
    def name(self) -> str:
        return provider_config.NAME

    def _load_config(self, hermes_home: str | Path) -> provider_config.ProviderConfig:
        if self._section is not None:
            return provider_config.parse_section(self._section, hermes_home)
        return provider_config.load_config(hermes_home)

    def is_available(self) -> bool:
        from hermes_constants import get_hermes_home

        return self._load_config(get_hermes_home()).complete

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [
            {
                "key": "database_url",
                "description": "PostgreSQL URL of the Mnemosyne database",
                "required": True,
                "secret": True,
                "env_var": provider_config.DATABASE_URL_ENV,
            },
            {
                "key": "api_key",
                "description": "API key of the team's tenant (Mnemosyne admin, API keys)",
                "required": True,
                "secret": True,
                "env_var": provider_config.API_KEY_ENV,
            },
            {"key": "scope", "description": "Scope this profile writes to and reads (e.g. "
             "project:beta); empty: the whole tenant", "default": ""},
            {"key": "auto_extract", "description": "Store candidate facts found in the "
             "conversation at the end of a session", "default": "false",
             "choices": ["true", "false"]},
            {"key": "budget", "description": "Tokens of memory per turn", "default": "1300"},
            {"key": "min_trust", "description": "Leave out facts trusted less than this",
             "default": "0.3"},
            {"key": "half_life_days", "description": "Temporal decay half-life (0: off)",
             "default": "0"},
        ]  # fmt: skip

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        changes = {
            f"plugins.{provider_config.NAME}.{key}": value
            for key, value in values.items()
            if value is not None and value != ""
        }
        provider_config.update_config(provider_config.hermes_config_path(hermes_home), changes)

    def backup_paths(self) -> list[str]:
        return []  # everything local (the buffer) lives under HERMES_HOME

    # -- lifecycle ----------------------------------------------------------------------------

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        from hermes_constants import get_hermes_home

        hermes_home = Path(kwargs.get("hermes_home") or get_hermes_home())
        self._warn = kwargs.get("warning_callback")
        self._context = kwargs.get("agent_context") or "primary"
        self._user_speaker = (kwargs.get("user_name") or "user").strip()[:100] or "user"
        self._session_id = session_id or ""
        self._restore_session = self._session_id
        cfg = self._config = self._load_config(hermes_home)
        for problem in cfg.problems:
            self._warning(f"Mnemosyne: {problem}")
        if not cfg.complete:
            missing = "database_url" if not cfg.database_url else "api_key"
            self._off(f"plugins.{self.name}.{missing} is not set in {hermes_home}/config.yaml")
            return
        try:
            runtime.ensure_django(
                database_url=cfg.database_url,
                model_dir=cfg.model_dir,
                embedder=cfg.embedder,
                broker_url=cfg.broker_url,
            )
        except runtime.NotReady as problem:
            self._off(str(problem))
            return
        self._outbox = Outbox(hermes_home / self.name / "outbox.sqlite3")
        self._reader = runtime.Worker("mnemosyne-read")
        try:
            self._reader.run(self._bind, timeout=TOOL_TIMEOUT_S)
        except runtime.database_errors() as error:
            self._offline(error)
        except FutureTimeout:
            self._offline(TimeoutError("the database did not answer in time"))
        self._writer = threading.Thread(
            target=self._write_loop, name="mnemosyne-write", daemon=True
        )
        self._writer.start()
        if self._state == "ready":
            # Load the embedder now, so the first turn does not wait for it.
            self._reader.submit(self._warm_up)

    def _off(self, reason: str) -> None:
        self._state, self._reason = "off", reason
        self._warning(f"Mnemosyne memory is off: {reason}")

    def _offline(self, error: BaseException) -> None:
        self._state = "offline"
        self._reason = f"the Mnemosyne database is unreachable ({_one_line(error)})"
        self._warning(
            f"Mnemosyne: {self._reason}; this session's turns are kept in "
            f"{self._outbox.path if self._outbox else 'the local buffer'} and stored when it "
            "returns"
        )

    def _bind(self) -> None:
        """Verify the API key and bind to its tenant (runs on a database thread)."""
        from django.db import ProgrammingError

        from tenants.actors import Actor
        from tenants.services import apikey_verify

        assert self._config is not None  # noqa: S101 - initialize sets it first
        try:
            key = apikey_verify(token=self._config.api_key)
        except ProgrammingError:
            self._refuse("the database has no Mnemosyne tables (run `mnemosyne migrate`)")
            return
        if key is None:
            self._refuse(
                "the API key in plugins.mnemosyne.api_key is unknown or revoked; create a new "
                "one in Mnemosyne's admin (API keys) and run `mnemosyne hermes install` again"
            )
            return
        tenant = copy.copy(key.tenant)
        # The profile's overrides, seen by recall and context assembly; never saved.
        tenant.settings = {**tenant.settings, **self._config.overrides}
        with self._lock:
            self._binding = tools.Binding(
                tenant=tenant,
                actor=Actor.api_key(key),
                key_prefix=key.prefix,
                can_read="read" in key.scopes,
                can_write="write" in key.scopes,
                scope=self._config.scope,
                session_id=self._session_id,
            )
            self._verified_at = time.monotonic()
            was_offline = self._state == "offline"
            self._state, self._reason = "ready", ""
        if was_offline:
            self._warning("Mnemosyne: the database is back; memory is on again")
        logger.info("mnemosyne: bound to tenant %s with key %s", tenant.pk, key.prefix)

    def _refuse(self, reason: str) -> None:
        with self._lock:
            self._binding = None
            self._state, self._reason = "refused", reason
        self._warning(f"Mnemosyne memory is off: {reason}")

    def _current(self) -> tools.Binding | None:
        """The binding, re-verified now and then so that a revoked key stops working."""
        if self._state == "offline":
            self._bind()
        if self._binding is not None and time.monotonic() - self._verified_at > REVERIFY_S:
            self._bind()
        return self._binding if self._state == "ready" else None

    def _warm_up(self) -> None:
        from django.conf import settings

        from retrieval.embedders import get_embedder
        from retrieval.tokens import count_tokens

        try:
            get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR)
            count_tokens("warm up")
        except Exception:  # noqa: BLE001 - recall works without vectors; /healthz says why
            logger.warning("mnemosyne: the embedder did not load", exc_info=True)

    def _warning(self, message: str) -> None:
        logger.warning(message)
        # The user sees each change of state once, not every retry that finds the same.
        if self._warn is not None and message != self._last_warning:
            self._last_warning = message
            try:
                self._warn(message)
            except Exception:  # noqa: BLE001 - a UI callback must not break memory
                logger.debug("warning callback failed", exc_info=True)

    def shutdown(self) -> None:
        """Write what is buffered (for a bounded time), then stop the threads."""
        if self._writer is not None and self._writer.is_alive():
            self._wake.set()
            flush = self._config.flush_seconds if self._config else SHUTDOWN_FLUSH_S
            if not self.wait_idle(flush) and self._outbox is not None:
                left = self._outbox.count(key_prefix=self._prefix())
                if left:
                    self._warning(
                        f"Mnemosyne: {left} memories are kept in {self._outbox.path}; they "
                        "are stored the next time this profile starts with the database up"
                    )
            self._stopping.set()
            self._wake.set()
            self._writer.join(5)
        if self._reader is not None:
            self._reader.stop()
        if self._outbox is not None:
            self._outbox.close()
        self._writer = self._reader = self._outbox = None

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything buffered so far is written (and, without a broker, the
        background tasks it caused have run). True when it is."""
        if self._writer is None:
            return self._drained()
        deadline = time.monotonic() + timeout
        with self._drains:
            self._drain_asked += 1
            asked = self._drain_asked
            self._wake.set()
            finished = self._drains.wait_for(
                lambda: self._drain_done >= asked, timeout=max(0.0, deadline - time.monotonic())
            )
        return finished and self._drained()

    def _drained(self) -> bool:
        return self._outbox is None or self._outbox.count(key_prefix=self._prefix()) == 0

    def _prefix(self) -> str:
        return _key_prefix(self._config.api_key) if self._config else ""

    # -- session ------------------------------------------------------------------------------

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            self._session_id = new_session_id or self._session_id
            # A resumed session (not a new one) gets its last turns back on its first turn.
            self._restore_session = "" if reset else self._session_id
            if self._binding is not None:
                self._binding = replace(self._binding, session_id=self._session_id)

    # -- levels 2 and 3 -----------------------------------------------------------------------

    def _budget(self) -> int:
        binding = self._binding
        return int(binding.tenant.setting("token_budget")) if binding else 1300

    def system_prompt_block(self) -> str:
        header = "# Mnemosyne memory\n"
        if self._state in ("off", "refused"):
            return ""
        if self._state == "offline" or self._reader is None:
            return header + (
                "Temporarily unreachable: conversation turns are kept and stored when it "
                "returns; fact_store answers with an error until then."
            )
        try:
            return self._reader.run(self._system_prompt, timeout=PREFETCH_TIMEOUT_S)
        except (FutureTimeout, *runtime.database_errors()) as error:
            logger.warning("mnemosyne: system prompt without memories: %s", _one_line(error))
            return header + "Active; its important facts could not be read just now."

    def _system_prompt(self) -> str:
        from facts.selectors import fact_count
        from retrieval.context import IMPORTANT_SHARE, context_cached

        binding = self._current()
        if binding is None:
            return ""
        lines = [
            "# Mnemosyne memory",
            f"Long-term memory of team {binding.tenant.name}"
            + (f" (scope {binding.scope})" if binding.scope else "")
            + f": {fact_count(tenant=binding.tenant)} memories, shared by its profiles. "
            "Relevant ones appear with each message. Use fact_store to search, probe entities, "
            "reason across them or add facts the team would expect you to remember; "
            "fact_feedback to rate a fact after using it.",
        ]
        if binding.can_read:
            share = max(50, int(self._budget() * IMPORTANT_SHARE))
            block = context_cached(
                tenant=binding.tenant, scope=binding.scope, important=True, budget=share
            )
            self._prompt_fact_ids = block.fact_ids
            self._prompt_tokens = block.tokens
            if block.text:
                lines.append(block.text)
        return "\n".join(lines)

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if self._state not in ("ready", "offline") or self._reader is None:
            return ""
        if not isinstance(query, str) or not query.strip():
            return ""
        restore = self._restore_session
        try:
            text = self._reader.run(lambda: self._recall(query, restore), PREFETCH_TIMEOUT_S)
        except (FutureTimeout, *runtime.database_errors()) as error:
            logger.warning("mnemosyne: no recall for this turn: %s", _one_line(error))
            return ""
        if restore and text is not None:
            with self._lock:
                if self._restore_session == restore:
                    self._restore_session = ""
        return text or ""

    def _recall(self, query: str, restore: str) -> str | None:
        from retrieval.context import context_cached

        binding = self._current()
        if binding is None or not binding.can_read:
            return None
        budget = max(50, self._budget() - self._prompt_tokens)
        block = context_cached(
            tenant=binding.tenant,
            query=query,
            scope=binding.scope,
            session_id=restore or None,
            hot_restore=bool(restore),
            important=False,  # level 2 is in the system prompt already
            budget=budget,
            exclude=self._prompt_fact_ids,
        )
        return block.text

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        # Hermes calls this after a turn with that turn's message: recall it in the background
        # so that asking again (a retry, a follow-up with the same words) is a cache hit.
        if self._state == "ready" and self._reader is not None and query and query.strip():
            self._reader.submit(lambda: self._recall(query, ""))

    # -- tools --------------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(schema) for schema in tools.TOOL_SCHEMAS]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if self._state in ("off", "refused") or self._reader is None:
            return tools.error(f"Mnemosyne memory is off: {self._reason}")
        try:
            return self._reader.run(lambda: self._tool(tool_name, args), TOOL_TIMEOUT_S)
        except FutureTimeout:
            return tools.error("Mnemosyne did not answer in time; try again")
        except runtime.database_errors() as error:
            return self._offline_tool_answer(tool_name, args, error)
        except Exception as error:  # noqa: BLE001 - a tool call must answer, never raise
            logger.exception("mnemosyne: %s failed", tool_name)
            return tools.error(f"{tool_name} failed: {type(error).__name__}: {_one_line(error)}")

    def _tool(self, tool_name: str, args: dict[str, Any]) -> str:
        binding = self._current()
        if binding is None:
            if self._state == "offline":
                from django.db import OperationalError

                raise OperationalError(self._reason)
            return tools.error(f"Mnemosyne memory is off: {self._reason}")
        answer = tools.call(binding, tool_name, args)
        if tool_name == "fact_store" and isinstance(args, dict) and args.get("action") == "add":
            self._wake.set()  # its vector is made by the writer's background tasks
        return answer

    def _offline_tool_answer(self, tool_name: str, args: Any, error: BaseException) -> str:
        if self._state == "ready":
            self._offline(error)
        if (
            tool_name == "fact_store"
            and isinstance(args, dict)
            and args.get("action") == "add"
            and isinstance(args.get("content"), str)
            and args["content"].strip()
            and self._context == "primary"
        ):
            # The fact is not lost: it waits in the buffer like a turn.
            self._keep("fact", {
                "content": _fit(args["content"].strip()),
                "category": args.get("category"),
                "tags": args.get("tags"),
                "scope": args.get("scope") if args.get("scope") else self._default_scope(),
            })  # fmt: skip
            return json.dumps({
                "fact_id": None,
                "status": "queued",
                "note": "the memory database is unreachable; the fact is kept and stored when "
                "it returns",
            })  # fmt: skip
        return tools.error(
            f"the Mnemosyne database is unreachable right now ({_one_line(error)}); "
            "try again shortly"
        )

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
        user, assistant = _text_of(user_content).strip(), _text_of(assistant_content).strip()
        if not user and not assistant:
            return
        self._keep("turn", {
            "session_id": session_id or self._session_id,
            "scope": self._default_scope(),
            "said": [[self._user_speaker, _fit(user)], ["assistant", _fit(assistant)]],
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
            "said": [["subagent", _fit(f"Delegated task: {task}\nResult: {result}")]],
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
            "content": _fit((content or "").strip()),
            "old_text": old_text,
            "scope": self._default_scope(),
        }
        if action in ("add", "replace") and payload["content"] or action == "remove" and old_text:
            self._keep("memory", payload)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        from facts.candidates import candidate_facts

        if not self._writes_allowed() or not self._config or not self._config.auto_extract:
            return
        said = [_text_of(m.get("content")) for m in messages or [] if m.get("role") == "user"]
        for candidate in candidate_facts(said):
            self._keep("fact", {
                "content": _fit(candidate.content),
                "category": candidate.category,
                "tags": ["auto-extracted"],
                "scope": self._default_scope(),
                "metadata": {"source": "auto-extract", "rule": candidate.rule,
                             "session_id": self._session_id},
            })  # fmt: skip

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        """What the compression summary should keep: statements of preference, habit and
        decision in the messages, and the facts stored with fact_store among them."""
        from facts.candidates import candidate_facts

        said = [_text_of(m.get("content")) for m in messages or [] if m.get("role") == "user"]
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
        from django.db import connection

        pause = 0.0
        while not self._stopping.is_set():
            self._wake.wait(timeout=pause or 5.0)
            self._wake.clear()
            if self._stopping.is_set():
                break
            with self._drains:
                asked = self._drain_asked
            try:
                runtime.fresh_connection()
                self._drain()
                pause = 0.0
                with self._drains:
                    self._drain_done = max(self._drain_done, asked)
                    self._drains.notify_all()
            except runtime.database_errors() as error:
                if self._state == "ready":
                    self._offline(error)
                pause = min(RETRY_MAX_S, max(1.0, pause * 2))
                connection.close()
            except Exception:  # noqa: BLE001 - the writer must outlive any one bad entry
                logger.exception("mnemosyne: the writer failed; retrying")
                pause = min(RETRY_MAX_S, max(1.0, pause * 2))
        connection.close()

    def _drain(self) -> None:
        assert self._outbox is not None  # noqa: S101 - the writer runs only with a buffer
        binding = self._current()
        if binding is None:
            return
        prefix = binding.key_prefix
        while entries := self._outbox.pending(key_prefix=prefix):
            for entry in entries:
                if self._stopping.is_set():
                    return
                self._write(binding, entry)
            binding = self._current() or binding
        if runtime.local_tasks():
            while runtime.run_local_tasks():
                pass

    def _write(self, binding: tools.Binding, entry: Entry) -> None:
        from tenants.errors import InvalidInput

        assert self._outbox is not None  # noqa: S101
        if not binding.can_write:
            self._outbox.reject(entry.id, "the API key is read-only")
            return
        try:
            {"turn": self._write_turn, "fact": self._write_fact, "memory": self._write_memory}[
                entry.op
            ](binding, entry)
        except InvalidInput as problem:
            logger.warning("mnemosyne: buffered %s refused: %s", entry.op, problem)
            self._outbox.reject(entry.id, str(problem))
            return
        except runtime.database_errors() as error:
            self._outbox.failed(entry.id, _one_line(error))
            raise
        self._outbox.done(entry.id)

    def _write_turn(self, binding: tools.Binding, entry: Entry) -> None:
        from facts.services import fact_add

        payload = entry.payload
        at = datetime.fromisoformat(payload["at"])
        for index, (speaker, text) in enumerate(payload["said"]):
            if not text:
                continue
            fact_add(
                tenant=binding.tenant,
                actor=binding.actor,
                content=text,
                kind="turn",
                session_id=payload["session_id"] or "hermes",
                speaker=speaker,
                scope=payload.get("scope"),
                metadata=payload.get("metadata"),
                created_at=at,
                idempotency_key=f"{entry.key}:{index}",
            )

    def _write_fact(self, binding: tools.Binding, entry: Entry) -> None:
        from facts.services import fact_add

        payload = entry.payload
        fact_add(
            tenant=binding.tenant,
            actor=binding.actor,
            content=payload["content"],
            category=payload.get("category"),
            tags=payload.get("tags"),
            scope=payload.get("scope"),
            metadata=payload.get("metadata"),
            idempotency_key=entry.key,
        )

    def _write_memory(self, binding: tools.Binding, entry: Entry) -> None:
        """Mirror a write of Hermes' built-in memory tool: add, replace or remove an entry."""
        from facts.services import fact_add, fact_remove
        from retrieval.search import recall_search

        payload = entry.payload
        if payload["action"] in ("replace", "remove") and payload["old_text"]:
            # Hermes names the old entry by a piece of its text: find the mirrored facts that
            # contain it.
            hits = recall_search(
                tenant=binding.tenant, query=payload["old_text"], k=20, kind="fact", min_trust=0
            ).hits
            for hit in hits:
                fact = hit.fact
                if HERMES_MEMORY_TAG in fact.tags and payload["old_text"] in fact.content:
                    fact_remove(tenant=binding.tenant, fact_id=fact.pk, actor=binding.actor)
        if payload["action"] in ("add", "replace") and payload["content"]:
            fact_add(
                tenant=binding.tenant,
                actor=binding.actor,
                content=payload["content"],
                category="user_pref" if payload["target"] == "user" else "general",
                tags=[HERMES_MEMORY_TAG, str(payload["target"] or "memory")],
                scope=payload.get("scope"),
                metadata={"source": "hermes-memory", "target": payload["target"]},
                idempotency_key=entry.key,
            )


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def register(ctx: Any) -> None:
    """Hermes' plugin entry point."""
    ctx.register_memory_provider(MnemosyneProvider())
