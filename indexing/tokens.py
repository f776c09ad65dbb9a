"""Token counting for context budgets, with a real multilingual tokenizer that works offline.

The tokenizer is XLM-R's SentencePiece model (250k pieces, 100 languages), prepared with the
default embedder; its counts for English and Chinese are close to those of the chat models'
own tokenizers, unlike counting characters or words.
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from indexing.embedders import get_embedder


@lru_cache(maxsize=16384)
def count_tokens(text: str) -> int:
    """Tokens in `text`. Remembered: an agent's context repeats the same lines turn after turn,
    and counting one costs about as much as a database round trip."""
    if not text:
        return 0
    e5 = get_embedder("e5", settings.MNEMOSYNE_MODEL_DIR)
    return e5.tokenizer.count(text)  # type: ignore[attr-defined]
