"""Text analysis for full-text search: the same for stored text and for queries.

PostgreSQL has no Chinese parser, so text is split here: runs of Han characters are segmented by
jieba (search mode, which also emits the shorter words inside long ones) and indexed with the
`simple` configuration; everything else goes through the `english` configuration, which stems
words and drops stop words. A fact's search vector is the concatenation of both.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass

import jieba

jieba.setLogLevel(logging.WARNING)

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_RUN = re.compile(rf"[{_HAN}]+")
# Chinese function words that match nearly everything and say nothing.
_HAN_STOP = frozenset(
    "的 了 是 在 和 与 也 就 都 而 及 着 或 一个 没有 我们 你们 他们 她们 它们 这个 那个 "
    "什么 怎么 哪里 哪个 为什么 吗 呢 吧 啊 呀 哦 把 被 让 给 对 从 到 向 于 之 其 这 那 "
    "我 你 他 她 它 谁 哪 有 会 要 能 可以 可能 还 又 很 太 更 最 已经 曾经 过".split()
)


# A text's search vector (and a query's lexemes) in SQL, of two parameters: `analyze(text)`'s
# `latin` and `han`. Stored facts and queries must spell their lexemes the same way, so every
# statement that makes one uses this.
SEARCH_VECTOR_SQL = (
    "to_tsvector('english'::regconfig, %s::text) || to_tsvector('simple'::regconfig, %s::text)"
)


@dataclass(frozen=True)
class Analyzed:
    latin: str  # for to_tsvector('english', ...)
    han: str  # space-separated jieba tokens, for to_tsvector('simple', ...)


def analyze(text: str) -> Analyzed:
    normalized = unicodedata.normalize("NFKC", text).lower()
    han_tokens: list[str] = []
    for run in _HAN_RUN.findall(normalized):
        han_tokens.extend(t for t in jieba.cut_for_search(run) if t.strip() and t not in _HAN_STOP)
    latin = _HAN_RUN.sub(" ", normalized)
    return Analyzed(latin=" ".join(latin.split()), han=" ".join(han_tokens))
