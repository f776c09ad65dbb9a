"""Candidate facts in what a person said: rules, in English and Chinese, no model.

A conversation is full of statements worth keeping ("I prefer tabs", "我们决定用 PostgreSQL")
among many that are not. These rules pick the sentences that state a preference, a habit, an
identity or a decision, and say which category each belongs to. They favour precision: a missed
fact can still be stored with `fact_store`, a wrong one pollutes every later recall. Questions
are never facts ("Do I like tea?", "我喜欢什么？").

Plain Python (categories are facts.models.Category's values), so that it lives here: the Hermes
provider uses it in the Hermes process, which loads no Django, and the server's end-of-session
extraction uses the same rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MIN_CHARS_LATIN, MIN_CHARS_HAN, MAX_CHARS = 10, 5, 300

# Latin punctuation ends a sentence only before a space ("Python 3.11" is one sentence).
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_QUESTION = re.compile(
    r"[?？]\s*$|^\s*(?:do|does|did|is|are|was|were|can|could|would|should|will|what|which|who|"
    r"why|how|when|where)\b|[吗呢]\s*[。.!！]?\s*$|什么|怎么|哪|为什么|多少|是否|是不是",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Candidate:
    content: str
    category: str
    rule: str  # which rule matched, for the audit trail's metadata


def _rules(*pairs: tuple[str, str]) -> list[tuple[str, re.Pattern[str]]]:
    return [(name, re.compile(pattern, re.IGNORECASE)) for name, pattern in pairs]


_PREFERENCE = _rules(
    ("en-preference", r"\bI\s+(?:really\s+|do\s+not\s+|don't\s+|strongly\s+)?"
     r"(?:prefer|like|love|hate|dislike|enjoy|use)\b"),
    ("en-favourite", r"\bmy\s+(?:favou?rite|preferred|default|usual|go-to)\s+\w+(?:\s+\w+)?\s+"
     r"(?:is|are)\b"),
    ("en-habit", r"\bI\s+(?:always|never|usually|often|rarely|normally)\b"),
    ("en-identity", r"\b(?:my name is|call me|I live in|I(?:'m| am) based in"
     r"|I work (?:at|for|as|on)"
     r"|I(?:'m| am) (?:allergic|vegetarian|vegan|left-handed|colou?r-?blind))\b"),
    ("zh-preference", r"我(?:很|非常|比较|最|特别|真的|不太|不|也)?"
     r"(?:喜欢|爱吃|爱喝|偏好|习惯|讨厌|不喜欢|常用|爱用)"),
    ("zh-habit", r"我(?:一般|通常|总是|经常|平时|从不|从来不|每天|每周)"),
    ("zh-identity", r"我(?:叫|姓|住在|在.{1,12}(?:工作|上班)|对.{1,10}过敏"
     r"|是.{1,12}(?:工程师|经理|设计师|老师|学生|负责人))|叫我|我的.{1,10}是"),
)  # fmt: skip
_DECISION = _rules(
    ("en-decision", r"\bwe\s+(?:have\s+|'ve\s+)?(?:decided|agreed|chose|settled on|will use|"
     r"are going with|standardi[sz]ed on)\b"),
    ("en-project", r"\b(?:the|our|this)\s+(?:project|team|repo|repository|service|app|product|"
     r"codebase)\s+(?:uses|needs|requires|runs on|depends on|ships|targets|is written in)\b"),
    ("en-deadline", r"\b(?:deadline|due date|release date|launch)\s+(?:is|was moved to)\b"),
    ("zh-decision", r"我们(?:已经)?(?:决定|约定|商定|同意|选择|选了|采用|定了|统一用)"),
    ("zh-project", r"(?:项目|团队|这个项目|我们的项目|仓库|服务)"
     r"(?:使用|用的是|需要|依赖|采用|要求|基于)"),
    ("zh-deadline", r"(?:截止(?:日期|时间)?|上线(?:时间|日期)?|发布(?:时间|日期)?)"
     r"(?:是|定在|改到)"),
)  # fmt: skip
_REMEMBER = _rules(
    ("en-remember", r"^\s*(?:please\s+)?(?:remember|note|keep in mind)\s+(?:that\s+)?\S"),
    ("zh-remember", r"^\s*(?:请)?(?:记住|记一下|注意)"),
)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _worth_keeping(sentence: str) -> bool:
    minimum = MIN_CHARS_HAN if _HAN.search(sentence) else MIN_CHARS_LATIN
    return minimum <= len(sentence) <= MAX_CHARS and not _QUESTION.search(sentence)


def _classify(sentence: str) -> tuple[str, str] | None:
    for rules, category in (
        (_DECISION, "project"),
        (_PREFERENCE, "user_pref"),
        (_REMEMBER, "general"),
    ):
        for name, pattern in rules:
            if pattern.search(sentence):
                return str(category), name
    return None


def candidate_facts(texts: Iterable[str]) -> list[Candidate]:
    """The sentences of `texts` that state a preference, habit, identity or decision, once each,
    in the order they were said."""
    found: dict[str, Candidate] = {}
    for text in texts:
        if not isinstance(text, str):
            continue
        for sentence in _sentences(text):
            if not _worth_keeping(sentence):
                continue
            match = _classify(sentence)
            key = " ".join(sentence.casefold().split())
            if match is not None and key not in found:
                found[key] = Candidate(content=sentence, category=match[0], rule=match[1])
    return list(found.values())
