"""Text analysis for full-text search: the same for stored text and for queries.

PostgreSQL has no Chinese parser, so text is split here: runs of Han characters are segmented by
jieba (search mode, which also emits the shorter words inside long ones), everything else into
lower-cased words. The result, joined by spaces, goes through `to_tsvector('simple', ...)`.
"""

from __future__ import annotations

import logging
import re
import unicodedata

import jieba

jieba.setLogLevel(logging.WARNING)

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(rf"[{_HAN}]+|[^\W_{_HAN}]+(?:['’][^\W_{_HAN}]+)*")
_HAN_RUN = re.compile(rf"[{_HAN}]+")


def analyze(text: str) -> str:
    """Space-separated search tokens of `text`."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    tokens: list[str] = []
    for match in _RUNS.finditer(normalized):
        run = match.group()
        if _HAN_RUN.fullmatch(run):
            tokens.extend(t for t in jieba.cut_for_search(run) if t.strip())
        else:
            tokens.append(run)
    return " ".join(tokens)
