"""MnemosyneProvider: Hermes Agent's MemoryProvider, backed by a Mnemosyne server.

The provider reaches Mnemosyne only through its HTTP API (`/api/v1/agent/`), with the tenant's
API key: the profile holds the server's URL and the key, no database credential and no model.
The server embeds, recalls and enforces the tenant. No Django runs in the Hermes process.

What Hermes calls, and what happens:
- `is_available`: is the profile configured (URL and API key)? No network.
- `initialize`: asks the server who the key is (`whoami`). An unknown or revoked key: a clear
  warning, and memory stays off for the session. A server that does not answer: a warning;
  turns are kept locally and sent when it answers.
- `system_prompt_block`: the tenant's most important facts (level 2), from the server.
- `prefetch`: the memories relevant to the user's message (level 3); on the first turn of a
  resumed session, first its last turns (level 1). One request, with a short timeout
  (`prefetch_timeout`): a slow or absent server costs a turn its memories, never the turn.
- `sync_turn`, `on_memory_write`, `on_delegation`, `on_session_end`: kept in the durable local
  buffer (outbox.py) at once, sent in order, in batches, by a writer thread; each with its own
  idempotency key, so nothing is lost and nothing is stored twice.
- `handle_tool_call`: `fact_store` and `fact_feedback`, answered by the server.
"""

from __future__ import annotations

import copy
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.memory_provider import MemoryProvider

from agentspec import hermes as schemas
from hermes_provider import config as provider_config
from hermes_provider.client import AgentClient, KeyRefused, Rejected, Unreachable
from hermes_provider.outbox import Outbox
from hermes_provider.text import fit, key_prefix
from hermes_provider.writes import BufferedWrites

logger = logging.getLogger("hermes_provider")

SHUTDOWN_FLUSH_S = 10.0
PROMPT_TIMEOUT_S = 5.0
REVOKED = (
    "the API key in plugins.mnemosyne.api_key is unknown or revoked; create a new one in "
    "Mnemosyne's admin (API keys) and run `mnemosyne hermes install` again"
)
OLD_INSTALL = (
    "this profile was connected by an earlier Mnemosyne, which reached its database directly "
    "(plugins.mnemosyne.database_url); this one talks to the server. Connect it again with "
    "`mnemosyne hermes install --url http://HOST:8000 --api-key KEY`, which also removes the "
    "database URL from config.yaml"
)


def _error(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


class _Background:
    """One daemon thread for work no turn waits for (warming the server's cache). Daemon, so a
    server that hangs never keeps Hermes from exiting."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[Callable[[], Any] | None] = queue.Queue(maxsize=8)
        self._thread = threading.Thread(target=self._loop, name="mnemosyne-prefetch", daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], Any]) -> None:
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            pass  # a cache warm-up more or less changes nothing

    def stop(self) -> None:
        try:
            self._jobs.put_nowait(None)
        except queue.Full:
            pass

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except Exception:  # noqa: BLE001 - best effort
                logger.debug("mnemosyne: background prefetch failed", exc_info=True)


class MnemosyneProvider(BufferedWrites, MemoryProvider):
    """Hermes memory provider backed by Mnemosyne (one tenant per API key)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self._section = config  # None: read the profile's config.yaml
        self._config: provider_config.ProviderConfig | None = None
        self._client: AgentClient | None = None
        self._whoami: dict[str, Any] | None = None
        self._state = "off"  # off | refused | offline | ready
        self._reason = ""
        self._session_id = ""
        self._restore_session = ""  # hot restore (level 1) for this session on the next prefetch
        self._context = "primary"
        self._user_speaker = "user"
        self._prompt_fact_ids: list[int] = []
        self._prompt_tokens = 0
        self._prefetch_failing = False
        self._warn: Callable[[str], None] | None = None
        self._last_warning = ""
        self._outbox: Outbox | None = None
        self._background: _Background | None = None
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

        config = self._load_config(get_hermes_home())
        # A profile of an earlier install is "available" so that initialize can say what to do.
        return config.complete or bool(config.api_key and config.legacy_database_url)

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [
            {
                "key": "url",
                "description": "URL of the Mnemosyne server (e.g. http://127.0.0.1:8000)",
                "required": True,
                "env_var": provider_config.URL_ENV,
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
            {"key": "read_scopes", "description": "Scopes this profile reads together, "
             "comma-separated (e.g. user:alice, team:infra); empty: its scope", "default": ""},
            {"key": "auto_extract", "description": "Store candidate facts found in the "
             "conversation at the end of a session", "default": "false",
             "choices": ["true", "false"]},
            {"key": "prefetch_timeout", "description": "Seconds a turn waits for its memories",
             "default": "2"},
            {"key": "ca_file", "description": "CA file of a server with a private TLS "
             "certificate", "default": ""},
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
        if cfg.legacy_database_url:
            self._off(OLD_INSTALL)
            return
        if not cfg.complete:
            missing = "url" if not cfg.url else "api_key"
            self._off(f"plugins.{self.name}.{missing} is not set in {hermes_home}/config.yaml")
            return
        try:
            self._client = AgentClient(
                cfg.url, cfg.api_key, ca_file=cfg.ca_file, timeout=cfg.tool_timeout
            )
        except OSError as error:  # an unreadable ca_file
            self._off(f"plugins.{self.name}.ca_file: {error}")
            return
        self._outbox = Outbox(hermes_home / self.name / "outbox.sqlite3")
        self._background = _Background()
        self._bind(timeout=max(cfg.prefetch_timeout, 5.0))
        self._writer = threading.Thread(
            target=self._write_loop, name="mnemosyne-write", daemon=True
        )
        self._writer.start()

    def _off(self, reason: str) -> None:
        self._state, self._reason = "off", reason
        self._warning(f"Mnemosyne memory is off: {reason}")

    def _offline(self, error: BaseException) -> None:
        with self._lock:
            if self._state in ("off", "refused"):
                return
            self._state = "offline"
            self._reason = f"Mnemosyne is unreachable ({error})"
        self._warning(
            f"Mnemosyne: {self._reason}; this session's turns are kept in "
            f"{self._outbox.path if self._outbox else 'the local buffer'} and stored when it "
            "answers"
        )

    def _refuse(self, reason: str = REVOKED) -> None:
        with self._lock:
            self._state, self._reason = "refused", reason
        self._warning(f"Mnemosyne memory is off: {reason}")

    def _answered(self) -> None:
        """The server answered: memory is on (again)."""
        with self._lock:
            was_offline = self._state == "offline"
            if self._state in ("offline", "ready"):
                self._state, self._reason = "ready", ""
        if was_offline:
            self._warning("Mnemosyne: the server answers again; memory is on again")

    def _bind(self, timeout: float) -> None:
        """Ask the server who the API key is."""
        assert self._client is not None  # noqa: S101 - initialize makes it first
        try:
            who = self._client.call("GET", "whoami", timeout=timeout)
        except KeyRefused:
            self._refuse()
            return
        except Rejected as refusal:
            self._refuse(f"the server refused the API key: {refusal.message}")
            return
        except Unreachable as error:
            if self._state == "off":
                self._state = "ready"  # so that _offline reports the change
            self._offline(error)
            return
        self._whoami = who
        if self._state == "off":
            self._state = "ready"
        self._answered()
        logger.info(
            "mnemosyne: bound to tenant %s with key %s",
            who.get("tenant", {}).get("slug"),
            who.get("key", {}).get("prefix"),
        )

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
        """Send what is buffered (for a bounded time), then stop the threads."""
        if self._writer is not None and self._writer.is_alive():
            self._wake.set()
            flush = self._config.flush_seconds if self._config else SHUTDOWN_FLUSH_S
            if not self.wait_idle(flush) and self._outbox is not None:
                left = self._outbox.count(key_prefix=self._prefix())
                if left:
                    self._warning(
                        f"Mnemosyne: {left} memories are kept in {self._outbox.path}; they "
                        "are stored the next time this profile starts with the server up"
                    )
            self._stopping.set()
            self._wake.set()
            self._writer.join(5)
        if self._background is not None:
            self._background.stop()
        if self._outbox is not None:
            self._outbox.close()
        if self._client is not None:
            self._client.close()
        self._writer = self._background = self._outbox = self._client = None

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything buffered so far is sent. True when it is."""
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
        return key_prefix(self._config.api_key) if self._config else ""

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

    # -- requests -----------------------------------------------------------------------------

    def _profile(self, session_id: str = "") -> dict[str, Any]:
        """What every request says about the profile: its scope, session and overrides."""
        assert self._config is not None  # noqa: S101
        body: dict[str, Any] = {"scope": self._config.scope, "session_id": session_id}
        if self._config.read_scopes:
            body["read_scopes"] = list(self._config.read_scopes)
        if self._config.overrides:
            body["settings"] = dict(self._config.overrides)
        return body

    def _request(self, path: str, body: dict[str, Any], timeout: float) -> Any:
        """One request; the provider's state follows what happened."""
        if self._client is None:
            raise Unreachable("the provider is not connected")
        try:
            answer = self._client.call("POST", path, body, timeout=timeout)
        except KeyRefused:
            self._refuse()
            raise
        self._answered()
        return answer

    # -- levels 2 and 3 -----------------------------------------------------------------------

    def system_prompt_block(self) -> str:
        header = "# Mnemosyne memory\n"
        if self._state in ("off", "refused") or self._config is None:
            return ""
        try:
            # Once per session, before the first turn: it may wait a little longer than a turn.
            timeout = max(self._config.prefetch_timeout, PROMPT_TIMEOUT_S)
            answer = self._request("prompt", self._profile(self._session_id), timeout)
        except Unreachable as error:
            self._offline(error)
            return header + (
                "Temporarily unreachable: conversation turns are kept and stored when it "
                "returns; fact_store answers with an error until then."
            )
        except (KeyRefused, Rejected) as error:
            logger.warning("mnemosyne: system prompt without memories: %s", error)
            return ""
        self._prompt_fact_ids = list(answer.get("fact_ids") or [])
        self._prompt_tokens = int(answer.get("tokens") or 0)
        return str(answer.get("text") or "")

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        if self._state not in ("ready", "offline") or self._config is None:
            return ""
        if not isinstance(query, str) or not query.strip():
            return ""
        restore = self._restore_session
        try:
            text = self._recall(query, restore, self._config.prefetch_timeout)
        except (Unreachable, Rejected) as error:
            if not self._prefetch_failing:
                # Said once; quiet until the server answers again.
                self._prefetch_failing = True
                logger.warning(
                    "mnemosyne: turns go on without recall until the server answers: %s", error
                )
            return ""
        except KeyRefused:
            return ""
        if self._prefetch_failing:
            self._prefetch_failing = False
            logger.warning("mnemosyne: recall is back")
        if restore:
            with self._lock:
                if self._restore_session == restore:
                    self._restore_session = ""
        return text

    def _recall(self, query: str, restore: str, timeout: float) -> str:
        body = self._profile(restore or self._session_id) | {
            "query": query[:4000],
            "hot_restore": bool(restore),
            "exclude": self._prompt_fact_ids[:500],
            "prompt_tokens": self._prompt_tokens,
        }
        return str(self._request("prefetch", body, timeout).get("text") or "")

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        # Hermes calls this after a turn with that turn's message: recall it in the background
        # so that asking again (a retry, a follow-up with the same words) is a cache hit.
        if self._state == "ready" and self._background is not None and query and query.strip():
            timeout = self._config.tool_timeout if self._config else 15.0
            self._background.submit(lambda: self._recall(query, "", timeout))

    # -- tools --------------------------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(schema) for schema in schemas.TOOL_SCHEMAS]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if self._state in ("off", "refused") or self._config is None:
            return _error(f"Mnemosyne memory is off: {self._reason}")
        if tool_name not in schemas.TOOL_NAMES:
            return _error(
                f"unknown tool {tool_name!r}; this provider has "
                f"{', '.join(sorted(schemas.TOOL_NAMES))}"
            )
        if not isinstance(args, dict):
            return _error("arguments must be a JSON object")
        body = self._profile(self._session_id) | {"arguments": args}
        try:
            answer = self._request(f"tools/{tool_name}", body, self._config.tool_timeout)
        except Rejected as refusal:
            return _error(refusal.message)
        except KeyRefused:
            return _error(f"Mnemosyne memory is off: {self._reason}")
        except Unreachable as error:
            return self._offline_tool_answer(tool_name, args, error)
        return json.dumps(answer, ensure_ascii=False)

    def _offline_tool_answer(self, tool_name: str, args: dict[str, Any], error: Unreachable) -> str:
        self._offline(error)
        if (
            tool_name == "fact_store"
            and args.get("action") == "add"
            and isinstance(args.get("content"), str)
            and args["content"].strip()
            and self._context == "primary"
        ):
            # The fact is not lost: it waits in the buffer like a turn.
            self._keep("fact", {
                "content": fit(args["content"].strip()),
                "category": args.get("category"),
                "tags": args.get("tags"),
                "scope": args.get("scope") if args.get("scope") else self._default_scope(),
            })  # fmt: skip
            return json.dumps({
                "fact_id": None,
                "status": "queued",
                "note": "the memory server is unreachable; the fact is kept and stored when "
                "it answers",
            })  # fmt: skip
        return _error(f"Mnemosyne is unreachable right now ({error}); try again shortly")


def register(ctx: Any) -> None:
    """Hermes' plugin entry point."""
    ctx.register_memory_provider(MnemosyneProvider())
