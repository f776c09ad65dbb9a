"""The default entity extractor: Chinese via jieba part-of-speech tags, English via case rules.

Plugged in with MNEMOSYNE_ENTITY_EXTRACTOR = "facts.extract.extract_entities". It is deliberately
gazetteer-free and cheap (it runs on every stored fact and every query), so it favours precision on
the common shapes of chat and notes over recall on everything:

- Chinese: jieba proper-noun tags (nr* person, ns place, nt organisation, nz other), plus the
  familiar forms jieba misses or splits: 老王 / 小李 (prefix + surname) and 王总 / 张经理
  (surname + title) are people. 《书名》 and “名称” followed by 项目/公司/... are names too.
- English: capitalised words and runs of them ("New York", "Bank of America", "Acme Corp"),
  quoted names ('Northstar', “Northstar”), "Speaker: text" speakers, possessives ("Alice's"), and
  titles ("Dr. Smith"). Sentence-initial function words, pronouns, weekdays and months are not
  names. The type is "person" only with a clue (speaker, possessive, title), "organization" /
  "place" only with a designator word (Corp, University / Street, Lake), otherwise "other".

Entities come back deduplicated by normalised name in first-seen order; the first is the subject.

The rules of each language are in `facts.extract.chinese` and `facts.extract.english`; this
module joins them (and keeps EXTRACTOR_VERSION, which `facts.entities` reads from the module
that defines the extractor).
"""

from __future__ import annotations

from facts.entities import EMPTY_DICTIONARY, Dictionary, FoundEntity, entity_normalize
from facts.entity_types import Mention, settle_types
from facts.extract.candidates import _MAX_NAME_CHARS, OTHER, _Candidate
from facts.extract.chinese import _SURNAMES, _chinese_candidates
from facts.extract.english import _english_candidates
from facts.models import EntityRole

# Bumped whenever the rules change what they find: beat's sweep then re-links every fact.
EXTRACTOR_VERSION = "4"


def extract_entities(text: str, dictionary: Dictionary = EMPTY_DICTIONARY) -> list[FoundEntity]:
    """The entities `text` names, first-seen order, deduplicated; the first is the subject.

    The tenant's user `dictionary` comes first: its terms are names of their given type, and
    the rules find nothing else where one of them stands. Never raises on odd input:
    non-strings and empty text give [].
    """
    if not isinstance(text, str) or not text.strip():
        return []
    terms = dictionary.matches(text) if dictionary else []
    taken = [(m.start, m.end) for m in terms]
    guessed = [
        c
        for c in _english_candidates(text) + _chinese_candidates(text, taken)
        if not any(c.start < e and s < c.start + len(c.name) for s, e in taken)
    ]
    forced = [_Candidate(m.start, m.name, m.type) for m in terms]
    candidates = sorted(forced + guessed, key=lambda c: c.start)  # stable: the term wins

    candidates = [c for c in candidates if entity_normalize(c.name) and len(c.name.strip())
                  <= _MAX_NAME_CHARS]  # fmt: skip
    mentions = [Mention(c.start, c.name.strip(), c.type, c.sure) for c in candidates]
    kinds = settle_types(text, mentions, surnames=_SURNAMES)
    ordered: dict[str, _Candidate] = {}
    for candidate, kind in zip(candidates, kinds, strict=True):
        name = candidate.name.strip()
        key = entity_normalize(name)
        seen = ordered.get(key)
        if seen is None:
            ordered[key] = _Candidate(candidate.start, name, kind, candidate.sure)
        elif (candidate.sure and not seen.sure) or (seen.type == OTHER and kind != OTHER):
            # A later, clearer mention ("Dr. Alice", "Alice Corp") settles the type.
            seen.type, seen.sure = kind, candidate.sure
    return [
        FoundEntity(
            name=c.name,
            type=c.type,
            role=str(EntityRole.SUBJECT if index == 0 else EntityRole.CONTEXT),
        )
        for index, c in enumerate(ordered.values())
    ]
