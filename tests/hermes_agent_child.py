"""A Hermes Agent process, as a user would run one: `run_agent.AIAgent` with the profile in
HERMES_HOME, talking to the chat server at BASE_URL. Django is not configured here, and the
provider must not need it: it talks to Mnemosyne's server over HTTP.

Reads one JSON command per line on stdin and answers one JSON line on stdout:
  {"say": "text"}  one conversation turn  -> {"reply": "..."}
  {"exit": true}   end the session the way the CLI does at exit -> {"bye": true}
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    assert "DJANGO_SETTINGS_MODULE" not in os.environ  # noqa: S101 - the point of this process
    from run_agent import AIAgent

    agent = AIAgent(
        base_url=os.environ["BASE_URL"],
        api_key="sk-stub",
        model="stub-model",
        quiet_mode=True,
        skip_context_files=True,
        enabled_toolsets=["memory"],
        session_id=os.environ["SESSION_ID"],
        platform="cli",
    )
    history: list[dict] = []
    for line in sys.stdin:
        command = json.loads(line)
        if command.get("exit"):
            agent.shutdown_memory_provider(history)
            answer: dict = {
                "bye": True,
                "django_env": os.environ.get("DJANGO_SETTINGS_MODULE"),
                # What the Mnemosyne provider loaded into Hermes' process.
                "loaded": sorted(
                    name
                    for name in sys.modules
                    if name.split(".")[0] in ("django", "onnxruntime", "psycopg", "facts")
                ),
            }
        else:
            result = agent.run_conversation(command["say"], conversation_history=history)
            history = result.get("messages") or history
            answer = {"reply": result.get("final_response")}
        print(json.dumps(answer), flush=True)
        if command.get("exit"):
            return


if __name__ == "__main__":
    main()
