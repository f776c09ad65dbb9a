"""Input errors read in the caller's language: every message any surface raises has its Chinese,
and the API, the pages and the agents' tools each answer in theirs."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from django.utils import translation

from tenants.errors import InvalidInput

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "agentspec",
    "tenants",
    "indexing",
    "facts",
    "retrieval",
    "operations",
    "agenttools",
    "surfaces",
    "memoryadmin",
    "hermes_provider",
    "mcp_server",
)


def _raised_messages() -> list[tuple[str, str]]:
    """(where, message) for every InvalidInput(field, "...") in the code; an f-string's values
    become V0, V1, ... as a caller would see them."""
    found = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and len(node.args) >= 2):
                    continue
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name != "InvalidInput":
                    continue
                message = node.args[1]
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if isinstance(message, ast.Constant) and isinstance(message.value, str):
                    found.append((where, message.value))
                elif isinstance(message, ast.JoinedStr):
                    text, values = "", 0
                    for part in message.values:
                        if isinstance(part, ast.Constant):
                            text += part.value
                        else:
                            text += f"V{values}"
                            values += 1
                    found.append((where, text))
    return found


def test_the_code_raises_many_messages_and_the_scan_sees_them() -> None:
    messages = _raised_messages()
    assert len(messages) > 100
    assert any(text == "must not be empty" for _, text in messages)
    assert any(text == "is longer than V0 characters" for _, text in messages)


@pytest.mark.parametrize(("where", "message"), _raised_messages())
def test_every_input_error_has_its_chinese(where: str, message: str) -> None:
    with translation.override("zh-hans"):
        chinese = InvalidInput("field", message).message
    assert chinese != message, f"{where}: no Chinese for {message!r}"
    for value in (word for word in message.split() if word.startswith("V") and word[1:2].isdigit()):
        assert value.strip(".,;:()") in chinese, f"{where}: {chinese!r} lost {value}"


def test_english_stays_as_written_and_values_come_back_in_chinese() -> None:
    with translation.override("en"):
        assert InvalidInput("tags", "at most 20 tags").message == "at most 20 tags"
    with translation.override("zh-hans"):
        error = InvalidInput("content", "is longer than 16,384 characters")
        assert error.message == "超过 16,384 个字符"
        assert str(error) == "content: 超过 16,384 个字符"
        last = InvalidInput(
            "role", "ann is the last admin of acme and cannot be removed: make another "
            "member an admin first"
        )  # fmt: skip
        assert (
            last.message == "ann 是 acme 的最后一位管理员，不能被移除：请先将另一位成员设为管理员"
        )


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_a_bad_field_in_the_callers_language(world) -> None:
    from tests.api_fixtures import bearer

    client = bearer(world.tokens["write"])
    body = {"content": "x" * 20_000}
    english = client.post("/api/v1/facts", body, format="json").json()
    chinese = client.post("/api/v1/facts", body, format="json", HTTP_ACCEPT_LANGUAGE="zh-CN")
    assert chinese.status_code == 400
    assert english["field"] == chinese.json()["field"] == "content"
    assert "characters" in english["message"]
    assert "个字符" in json.dumps(chinese.json(), ensure_ascii=False)
