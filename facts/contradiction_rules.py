"""The rules that decided alone before the judgement was learned (`facts.judgement` now takes
their verdict as one cue among others). Two statements are about the same thing when they share
most of their content words; they disagree when, on top of that:

- one is negated and the other is not ("Carol is vegetarian" / "Carol is not vegetarian",
  李娜吃素 / 李娜不吃素), or one says the opposite word (likes / hates, 同意 / 反对);
- they give different numbers, times or dates for the same thing (64 GB / 128 GB, Friday /
  Thursday, 三月三日 / 四月十二日);
- they give a different value in the same frame: the same words around one or two that differ,
  and those are names or things rather than a rewording ("Bob lives in Berlin" / "Bob lives in
  Munich", 老王住在上海 / 老王住在北京).

An addition ("Anna is free on Friday too", 也, 还) is not a disagreement, nor another value of
what someone may have many of (去过巴黎 / 去过东京), unless one says it is the only one, the
favourite or a change (只, 最, 改成). Without a disagreement, the same text or a vector at least
`duplicate_threshold` close is a duplicate. Tuned on bench/data/conflicts_tune.jsonl.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from difflib import SequenceMatcher

from facts.statements import (
    _EN_ANTONYMS,
    _EN_MANY_VALUED_WORDS,
    _HAN_RUN,
    _ZH_ANTONYMS,
    _ZH_DAY_PARTS,
    _ZH_MANY_VALUED,
    _ZH_VERB_HEADS,
    Statement,
    _stem,
    fold,
    statement,
)

CONTRADICT, DUPLICATE, COMPATIBLE = "contradict", "duplicate", "compatible"


@dataclass(frozen=True)
class Verdict:
    label: str  # contradict | duplicate | compatible
    reason: str  # negation, opposite, number, date, value; same text, similar; ""
    score: float  # how sure, 0..1
    # A disagreement plain enough to act on without a person (automatic supersede).
    clear: bool = False


_ANTONYMS = {
    **{a: b for a, b in _EN_ANTONYMS},
    **{b: a for a, b in _EN_ANTONYMS},
    **{a: b for a, b in _ZH_ANTONYMS},
    **{b: a for a, b in _ZH_ANTONYMS},
}
_ANTONYM_PAIRS = {frozenset(p) for p in _EN_ANTONYMS + _ZH_ANTONYMS}
_MANY_VALUED = _ZH_MANY_VALUED | {_stem(w) for w in _EN_MANY_VALUED_WORDS.split()}

# Tuned on bench/data/conflicts_tune.jsonl (see bench/data/README.md).
SAME_SUBJECT = 0.5  # share of the shorter statement's words the other also has
VALUE_FRAME = 2  # words at least that the two share around a swapped value
MAX_SWAP = 2  # words at most on each side that differ in a value swap
NEGATION_JACCARD = 0.4  # words shared by a statement and its negation, of all their words
# A vector close enough is a duplicate only when the words say so too: close vectors alone
# also join compatible statements about one subject (王磊在阿里巴巴工作 / 王磊在风控部门 are
# 0.96 apart in e5), and a join loses the second statement.
DUPLICATE_JACCARD = 0.3


def _opposites(a: Statement, b: Statement) -> bool:
    only_a, only_b = a.words - b.words, b.words - a.words
    return any(frozenset((x, y)) in _ANTONYM_PAIRS for x in only_a for y in only_b)


def _dates(values: frozenset[str]) -> bool:
    return any(
        v.startswith(("weekday:", "month:")) or v.endswith(("月", "日", "号", "点")) for v in values
    )


def _names_differ(a: Statement, b: Statement) -> bool:
    """Each names someone or something the other does not (Alice / Bob prefers coffee, agent1 /
    agent2 wrote it): about another subject, so never one fact, however close the vectors."""
    return bool(a.capitals - b.words) and bool(b.capitals - a.words)


def _adds_detail(extra_a: Set[str], extra_b: Set[str]) -> bool:
    """One says all the other says and more (陈静有弟弟 / 陈静的弟弟在成都): not a duplicate."""
    return bool(extra_a) != bool(extra_b)


def _swap(sa: Statement, sb: Statement) -> tuple[list[str], list[str]] | None:
    """The words that differ when everything else stands in the same order: one slot of at
    most MAX_SWAP words on each side, inside a frame of at least VALUE_FRAME shared words."""
    seq_a, seq_b = _refine(sa.sequence, sb.sequence), _refine(sb.sequence, sa.sequence)
    matcher = SequenceMatcher(a=seq_a, b=seq_b, autojunk=False)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    same = sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal")
    if len(changes) != 1 or same < VALUE_FRAME:
        return None
    tag, i1, i2, j1, j2 = changes[0]
    if tag != "replace" or i2 - i1 > MAX_SWAP or j2 - j1 > MAX_SWAP:
        return None
    if i1 == 0 and j1 == 0:
        return None  # another subject saying the same (Alice / Bob prefers coffee)
    swapped_a, swapped_b = list(seq_a[i1:i2]), list(seq_b[j1:j2])
    if len(swapped_a) == len(swapped_b) and all(
        _same_root(x, y) for x, y in zip(swapped_a, swapped_b, strict=True)
    ):
        return None  # another form of the same word (allergic / allergy)
    return swapped_a, swapped_b


def _two_things(sa: Statement, sb: Statement, swap: tuple[list[str], list[str]]) -> bool:
    """A slot of two words on each side where both differ is one value only when they name it
    together (杭州西湖区 / 宁波鄞州区). Not when a verb differs with it, another event (在杭州出生
    / 在北京上大学), nor when what has the value differs (叶青的车是白色的 / 叶青的包是黑色的)."""
    swapped_a, swapped_b = swap
    if len(swapped_a) < 2 and len(swapped_b) < 2:
        return False
    if set(swapped_a) & sa.verbish or set(swapped_b) & sb.verbish:
        return True
    return swapped_a[0] in sa.possessed and swapped_b[0] in sb.possessed


def _other_thing(sa: Statement, sb: Statement, swap: tuple[list[str], list[str]] | None) -> bool:
    """The slot that differs holds a thing on each side, not a verb or a word of being."""
    return swap is not None and bool(set(swap[0]) - sa.verbish) and bool(set(swap[1]) - sb.verbish)


def _same_root(a: str, b: str) -> bool:
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= 5 and common >= 0.7 * min(len(a), len(b))


def _refine(sequence: tuple[str, ...], other: tuple[str, ...]) -> tuple[str, ...]:
    """Chinese words split where the other statement has their first part as a word of its
    own: 喝咖啡 against 喝 / 绿茶 becomes 喝 / 咖啡, so the two line up word for word; else
    where it has their last part (足球比赛 against 网球 / 比赛 becomes 足球 / 比赛); and a verb
    with its object taken as one word splits when the other has one with the same verb (喝牛奶
    against 喝咖啡 becomes 喝 / 牛奶)."""
    known = set(other)
    mine = set(sequence)
    heads = {w[0] for w in other if len(w) >= 2 and w[0] in _ZH_VERB_HEADS and w not in mine}
    refined: list[str] = []
    for word in sequence:
        if len(word) >= 2 and _HAN_RUN.fullmatch(word) and word not in known:
            if word[0] in heads and word[0] not in known:
                refined += [word[0], word[1:]]
                continue
            cut = next((k for k in range(len(word) - 1, 0, -1) if word[:k] in known), 0)
            cut = cut or next((k for k in range(1, len(word)) if word[k:] in known), 0)
            if cut:
                refined += [word[:cut], word[cut:]]
                continue
        refined.append(word)
    return tuple(refined)


def rules_judge(
    a: str, b: str, *, similarity: float | None = None, duplicate_threshold: float = 0.95
) -> Verdict:
    """The rules' verdict: contradict, duplicate or compatible, with the reason and how sure.
    The judgement (`facts.judgement`) takes it as one of its cues.

    One function on purpose: the rules are tried in order, each reading the measures of the
    pair computed at the top; split, every part would take them all as arguments."""
    if fold(a) == fold(b):
        return Verdict(DUPLICATE, "same text", 1.0)
    sa, sb = statement(a), statement(b)
    shared = sa.words & sb.words
    smaller = min(len(sa.words), len(sb.words)) or 1
    overlap = len(shared) / smaller
    jaccard = len(shared) / (len(sa.words | sb.words) or 1)
    only_a, only_b = sa.words - sb.words, sb.words - sa.words
    additive = sa.additive or sb.additive
    values_differ = bool(sa.values and sb.values and sa.values != sb.values)
    # The same frame around another thing (去过巴黎 / 去过东京, 喜欢科幻片 / 不喜欢恐怖片).
    any_swap = _swap(sa, sb)
    swap = any_swap if not additive else None
    other_thing = _other_thing(sa, sb, swap)
    if shared and overlap >= SAME_SUBJECT:
        # A negation of another thing is no disagreement.
        if sa.negated != sb.negated and jaccard >= NEGATION_JACCARD and not other_thing:
            sure = round(0.5 + jaccard / 2, 3)
            return Verdict(CONTRADICT, "negation", sure, clear=jaccard >= 0.6)
        if sa.negated == sb.negated and not values_differ and _opposites(sa, sb):
            return Verdict(CONTRADICT, "opposite", round(0.5 + jaccard / 2, 3), clear=True)
        if (
            values_differ
            and not additive
            and not (only_a - sa.verbish - _ZH_DAY_PARTS)
            and not (only_b - sb.verbish - _ZH_DAY_PARTS)
        ):
            reason = "date" if _dates(sa.values | sb.values) else "number"
            return Verdict(CONTRADICT, reason, round(0.5 + overlap / 2, 3), clear=True)
        # Two values under a negation never clash (不吃辣 / 不吃香菜), nor two under a verb
        # that takes many (去过巴黎 / 去过东京).
        frame = set(_refine(sa.sequence, sb.sequence)) & set(_refine(sb.sequence, sa.sequence))
        many = bool(frame & _MANY_VALUED) or (sa.ability and sb.ability)
        one_value = (
            sa.negated == sb.negated
            and not sa.negated
            and (not many or sa.exclusive or sb.exclusive)
        )
        if (
            one_value
            and other_thing
            and swap is not None
            and not values_differ
            and len(swap[0]) == len(swap[1])
            and not _two_things(sa, sb, swap)
        ):
            return Verdict(
                CONTRADICT, "value", round(0.4 + jaccard / 2, 3),
                clear=len(swap[0]) == 1,
            )  # fmt: skip
    # Another thing in the same frame is something else, however close the vectors (去过巴黎 /
    # 去过东京 are 0.96 apart in e5): not a duplicate to join; nor is it when one says it is
    # more (爱吃芒果 / 也爱吃榴莲).
    if (
        similarity is not None
        and similarity >= duplicate_threshold
        and not _other_thing(sa, sb, any_swap)
        and not values_differ
        and not (sa.values and sb.values and sa.value_order != sb.value_order)
        and not _names_differ(sa, sb)
        and sa.negated == sb.negated
        and jaccard >= DUPLICATE_JACCARD
        and (
            similarity >= (1 + duplicate_threshold) / 2
            or not _adds_detail(only_a - sa.verbish, only_b - sb.verbish)
        )
    ):
        return Verdict(DUPLICATE, "similar", round(similarity, 3))
    return Verdict(COMPATIBLE, "", round(jaccard, 3))
