"""Whether two statements contradict each other, say the same, or are merely compatible: cues
that carry over from one kind of change to another, weighed by a small learned model.

The cues (`pair_cues`) are read from both texts (`facts.statements`) and, when known, the
cosine of their vectors (e5, as stored facts are embedded):

- a flip of meaning: a negation on one side only, a pair of opposite words (likes / hates,
  开 / 关), a comparison turned round ("green tea over coffee" / "coffee over green tea",
  小杰比小乐高 / 小乐比小杰高). Two flips cancel out ("isn't open" / "is closed");
- another value in the same place: numbers, times, dates, how often ("every day" / "never",
  每天 / 从不), or one or two words that differ inside the same frame (lives in Berlin /
  Munich), and whether the frame takes many values at once (visited, 去过, 喜欢);
- a word of change or exclusion on one side only (moved, quit, no longer, instead, only,
  已经不, 改成, 只), and an addition (also, too, 也, 还);
- how much the two share: word overlap, the words only one side has, the cosine, and the
  verdict of the earlier rules (`facts.contradiction_rules`).

The model (`facts/judgement_model.json`, fitted by `python -m bench.judgement_fit` on
bench/data/judgement_tune.jsonl) has two stages, each a logistic regression: whether the two
disagree (from the cues of disagreement only), then, for a pair that does not, whether the two
say the same. Pure functions, numpy only; its cost per pair is in docs/judgement.md.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from facts.contradiction_rules import (
    CONTRADICT,
    DUPLICATE,
    _dates,
    _names_differ,
    _same_root,
    rules_judge,
)
from facts.opposites import opposite as opposite_words
from facts.statements import TEXTS_KEPT, Statement, _stem, fold, statement

MODEL_PATH = Path(__file__).with_name("judgement_model.json")
LABELS = ("contradict", "duplicate", "compatible")
# Tuned on the tuning set: P(duplicate | no disagreement) a duplicate needs.
DUPLICATE_MIN = 0.7
# Without a cosine (a pair judged on its words alone), the vectors are taken as this close:
# the middle of what e5 gives two statements about one subject.
COSINE_UNKNOWN = 0.9

# -- markers read from the raw text --------------------------------------------------------------

# How often: the words of a frequency, English and Chinese.
_EN_FREQUENCY = re.compile(
    r"\b(always|usually|normally|often|frequently|sometimes|occasionally|rarely|seldom|never"
    r"|hardly ever|almost never|daily|nightly|hourly|weekly|monthly|yearly|annually|constantly"
    r"|regularly|every(?:\s+\w+)?|each\s+\w+|once|twice|three times|\w+ a (?:day|week|month))\b"
)
_ZH_FREQUENCY = re.compile(
    "每天|天天|每晚|每周|每个周末|每月|每年|每小时|每次|总是|一直|老是|经常|常常|平时|平常|通常|一般"
    "|有时|偶尔|很少|几乎不|从不|从来不|从没|从来没|一周|一天|一个月|一年|[一两三四五六七八九十\\d]+次"
)
_NEVER = re.compile(
    r"\b(never|hardly ever|almost never|rarely|seldom)\b|从不|从来不|从没|从来没|很少|几乎不|再也不"
)
# A change of state, or a value that replaces another.
_EN_CHANGE = re.compile(
    r"\b(moved|move|moving|relocated|quit|left|no longer|anymore|any more|stopped|switched"
    r"|sold|broke up|graduated|retired|resigned|stepped down|transferred|migrated|upgraded"
    r"|cancell?ed|closed down|gave up|got rid|passed away|divorced|became|replaced|instead"
    r"|pushed|slipped|changed|back from)\b"
)
_ZH_CHANGE = re.compile(
    "搬到|搬去|搬家|离职|辞职|辞去|戒|不再|已经不|再也不|改|换成|换到|卖了|分手|离婚|毕业|退休|去世|调到"
    "|迁到|升级|关门|退了|取消|放弃|不当|回来了|推迟|推到|提前到|变成"
)
_EN_EXCLUSIVE = re.compile(
    r"\b(only|just|solely|exclusively|sole|favou?rite|go-to|main|instead|rather than)\b"
)
_ZH_EXCLUSIVE = re.compile("只|仅|最|唯一|而不是|除了")
_EN_ADDITIVE = re.compile(r"\b(also|too|as well|another|additionally|besides|plus|more)\b")
_ZH_ADDITIVE = re.compile("也|还|另外|此外|另一|又")
# A comparison or a direction: what stands first matters.
_EN_ORDER = re.compile(
    r"\b(over|than|rather|prefer|prefers|preferred|before|after|beat|beats|outranks?|above"
    r"|below|first|then|ranks?)\b"
)
_ZH_ORDER = re.compile(
    "胜过|比|而不是|不如|多过|多于|宁可|先|再|然后|前面|后面|优先|其次|向|给|把|选"
)
_HAN_CHAR = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
_SYMMETRIC = re.compile(r"\b(and|or|plus|is|are|was|were)\b|[和与及、跟,，是]")


def _has(pattern: re.Pattern[str], text: str) -> bool:
    return pattern.search(text) is not None


@dataclass(frozen=True)
class Markers:
    """What one text says besides its content words."""

    frequency: frozenset[str]
    never: bool
    change: bool
    exclusive: bool
    additive: bool
    order: bool
    symmetric: bool  # A and B, A is B: the same in either order


@lru_cache(maxsize=TEXTS_KEPT)
def markers(text: str) -> Markers:
    low = text.lower().replace("’", "'")
    frequency = {m.group().strip() for m in _EN_FREQUENCY.finditer(low)}
    frequency |= {m.group() for m in _ZH_FREQUENCY.finditer(low)}
    return Markers(
        frequency=frozenset(frequency),
        never=_has(_NEVER, low),
        change=_has(_EN_CHANGE, low) or _has(_ZH_CHANGE, low),
        exclusive=_has(_EN_EXCLUSIVE, low) or _has(_ZH_EXCLUSIVE, low),
        additive=_has(_EN_ADDITIVE, low) or _has(_ZH_ADDITIVE, low),
        order=_has(_EN_ORDER, low) or _has(_ZH_ORDER, low),
        symmetric=_has(_SYMMETRIC, low),
    )


# -- cues ----------------------------------------------------------------------------------------


# Tokens for aligning two statements: Chinese character by character (a name jieba does not
# know is still one span), other text word by word, without articles and copulas.
_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[^\W_]+(?:['’.][^\W_]+)*")
_EN_LIGHT = frozenset("a an the is are was were be been am 's of 的 了 是 在".split())
_EN_MANY = frozenset(
    """visited visit been like likes liked love loves enjoy enjoys speak speaks spoke know knows
    has have had own owns play plays played collect collects read reads teach teaches learn
    learning learned met meet allergic tried beat beats borrowed sent uses use""".split()
)
_ZH_MANY = re.compile(
    "去过|到过|吃过|看过|学过|玩过|用过|喜欢|爱|会|有|养|学|过敏|擅长|借|寄|送|赢|买|订|经常|常|偶尔|有时"
)
SLOT_MOST = 3  # tokens at most on each side of a slot (Chinese: characters, twice as many)


@lru_cache(maxsize=TEXTS_KEPT)
def _tokens(text: str) -> tuple[str, ...]:
    words = (
        t.lower().removesuffix("'s").removesuffix("’s")
        for t in _TOKEN.findall(unicodedata.normalize("NFKC", text))
    )
    return tuple(w for w in words if w not in _EN_LIGHT)


@dataclass(frozen=True)
class Alignment:
    turned_round: bool  # the same tokens in another order
    slot: bool  # one span that differs, inside a frame the two share
    many: bool  # and the frame is a verb that takes many values at once (visited, 去过)
    subject: bool = False  # the span that differs is the first: another subject
    narrow: bool = False  # the slot is one word on each side


def _thing(span: tuple[str, ...], st: Statement) -> bool:
    """Whether a span that differs names a thing rather than a verb or a word of being (在腾讯
    工作 / 在腾讯上班 is a rewording)."""
    text = "".join(span)
    things = st.words - st.verbish
    if _HAN_CHAR.search(text):
        return any(text in w or w in text for w in things)
    return any(_stem(t) in things or t in things for t in span)


_EN_HAVE = frozenset("has have had owns own got gets do does did".split())


def _verbs(span: tuple[str, ...], st: Statement) -> set[str]:
    """The verbs (and words of being) of a statement inside a span of its tokens."""
    text = "".join(span)
    if _HAN_CHAR.search(text):
        return {w for w in st.verbish if w in text}
    return {_stem(t) for t in span if _stem(t) in st.verbish or t in st.verbish or t in _EN_HAVE}


def _align(a: str, b: str, han: bool, *, any_span: bool = False) -> Alignment:
    """How the two line up. `any_span`: a span that differs counts as another value even when
    it reads as a verb, if it is one word (the favourite or the only one: 最爱吃火锅 / 最爱吃
    烧烤)."""
    ta, tb = _tokens(a), _tokens(b)
    if Counter(ta) == Counter(tb):
        return Alignment(turned_round=ta != tb and len(ta) >= 2, slot=False, many=False)
    matcher = SequenceMatcher(a=ta, b=tb, autojunk=False)
    ops = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    frame = [t for op in matcher.get_opcodes() if op[0] == "equal" for t in ta[op[1] : op[2]]]
    most = SLOT_MOST * (2 if han else 1)
    if len(ops) != 1 or ops[0][0] != "replace" or len(frame) < 2:
        return Alignment(False, False, False)
    _, i1, i2, j1, j2 = ops[0]
    if i1 == 0 and j1 == 0:
        # Another subject saying the same (Alice / Bob prefers black coffee).
        return Alignment(False, False, False, subject=True)
    if i2 - i1 > most or j2 - j1 > most:
        return Alignment(False, False, False)
    # One word for another (Chinese: two characters), the rest the same.
    narrow = max(i2 - i1, j2 - j1) <= (2 if han else 1)
    if _verbs(ta[i1:i2], statement(a)) - _verbs(tb[j1:j2], statement(b)) and _verbs(
        tb[j1:j2], statement(b)
    ) - _verbs(ta[i1:i2], statement(a)):
        # Each span has a verb of its own: another relation, not another value in one frame
        # (prefers black coffee / has two cats, 喜欢喝咖啡 / 会弹吉他).
        return Alignment(False, False, False)
    things = _thing(ta[i1:i2], statement(a)) and _thing(tb[j1:j2], statement(b))
    if not things and not (any_span and narrow):
        return Alignment(False, False, False)
    if any(_same_root(x, y) for x in ta[i1:i2] for y in tb[j1:j2]):
        return Alignment(False, False, False)  # another form of one word (allergic / allergy)
    many = bool(set(frame) & _EN_MANY) or _has(_ZH_MANY, "".join(frame))
    return Alignment(turned_round=False, slot=True, many=many, narrow=narrow)


def _one_word_swapped(a: str, b: str, han: bool) -> bool:
    """Whether the two are the same tokens but one word (Chinese: two characters) on each side,
    and those two are opposites (loves / loathes the night shift, 咖啡涨价了 / 咖啡降价了)."""
    ta, tb = _tokens(a), _tokens(b)
    ops = [op for op in SequenceMatcher(a=ta, b=tb, autojunk=False).get_opcodes()
           if op[0] != "equal"]  # fmt: skip
    if len(ops) != 1 or ops[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = ops[0]
    most = 2 if han else 1
    if i2 - i1 > most or j2 - j1 > most:
        return False
    if han:
        return opposite_words({"".join(ta[i1:i2])}, {"".join(tb[j1:j2])})
    return opposite_words({_stem(t) for t in ta[i1:i2]}, {_stem(t) for t in tb[j1:j2]})


def _when(values: frozenset[str]) -> bool:
    """Whether the values name a time: a date, weekday or month, or a year."""
    return _dates(values) or any(re.fullmatch(r"(19|20)\d\d", v) for v in values)


def _many_verb(text: str) -> bool:
    """Whether the statement's verb takes many values at once (visited, met, 去过)."""
    return bool(set(_tokens(text)) & _EN_MANY) or any(
        _ZH_MANY.fullmatch(w) for w in statement(text).words
    )


CUES: tuple[str, ...] = (
    "cosine", "cosine_han", "han", "cosine_high", "jaccard", "overlap", "bigrams",
    "extra_one_side", "extra_both", "flip_odd", "flip_even", "negation_both", "another_value",
    "another_value_many", "values_one_side", "change_one_side", "additive",
    "joined_round", "flip_other_thing", "things_both", "slot_any", "names_differ",
    "rules_contradict", "rules_duplicate",
)  # fmt: skip


def _bigrams(text: str) -> set[str]:
    folded = fold(text)
    return {folded[i : i + 2] for i in range(len(folded) - 1)}


@dataclass(frozen=True)
class Cues:
    """The cues of a pair (`vector`, in the order of `CUES`) and which kind of disagreement
    each side of it shows, for the reason a verdict gives."""

    vector: np.ndarray
    kinds: tuple[str, ...]
    # Anything that says the two are not the same: a flip, another value, number, time or
    # frequency, another thing in the same place, a change, another subject. Never a
    # duplicate then.
    differs: bool
    # A disagreement that needs no weighing: the same words with a comparison turned round
    # ("green tea over coffee" / "coffee over green tea"), another favourite or only value in
    # the same sentence, or the same words with another number, time or date ("starts at
    # 9:30" / "starts at 10:00"; not in a frame that takes many: visited in 2019 / in 2021).
    # Its kind, else "".
    plain: str = ""


def pair_cues(a: str, b: str, similarity: float | None, duplicate_threshold: float) -> Cues:
    """The cues of the pair (a, b) for the model, and the kinds of disagreement they show.

    One function on purpose: the vector is written out in the order of CUES from the measures
    computed above it; split, each part would take most of them as arguments."""
    sa, sb = statement(a), statement(b)
    ma, mb = markers(a), markers(b)
    cosine = COSINE_UNKNOWN if similarity is None else float(similarity)
    han = (len(_HAN_CHAR.findall(a)) + len(_HAN_CHAR.findall(b))) / (len(a) + len(b) or 1)
    shared, union = sa.words & sb.words, sa.words | sb.words
    only_a, only_b = len(sa.words - sb.words), len(sb.words - sa.words)
    ga, gb = _bigrams(a), _bigrams(b)
    # Flips of meaning: a negation (or "never", "hardly ever") on one side, opposite words, a
    # comparison turned round. Two of them cancel out.
    negation = sa.negated != sb.negated or (ma.never != mb.never and not (sa.negated or sb.negated))
    opposite = opposite_words(sa.words - sb.words, sb.words - sa.words)
    # The favourite or the only one is one value, whatever the verb (最爱看足球 / 最爱看网球).
    only = ma.exclusive or mb.exclusive or sa.exclusive or sb.exclusive
    # Both say which one is the favourite or the only one: one word for another is another value.
    favourite = ma.exclusive and mb.exclusive and sa.exclusive and sb.exclusive
    aligned = _align(a, b, han > 0.3, any_span=favourite)
    round_ = aligned.turned_round
    # A and B / B and A says the same; any other order turned round does not.
    # (nor does "A is B" / "B is A").
    joined = round_ and (ma.symmetric or mb.symmetric) and not (ma.order or mb.order)
    turned = round_ and not joined
    flips = int(negation) + int(opposite) + int(turned)
    values_differ = bool(sa.values and sb.values and sa.values != sb.values)
    reordered = bool(sa.values) and sa.values == sb.values and sa.value_order != sb.value_order
    frequency = bool(ma.frequency and mb.frequency and ma.frequency != mb.frequency)
    slot, slot_many = aligned.slot, aligned.many and not only
    added = ma.additive != mb.additive or sa.additive != sb.additive
    # An addition is more, not other (free on Thursday / free on Friday too); nor is another
    # value of what one may have many of (visited Paris / visited Rome).
    another = not added and (values_differ or reordered or frequency or (slot and not slot_many))
    change = ma.change != mb.change or ma.exclusive != mb.exclusive or sa.exclusive != sb.exclusive
    rules = rules_judge(a, b, similarity=similarity, duplicate_threshold=duplicate_threshold)
    kinds = tuple(
        name
        for name, present in (
            ("order", turned), ("negation", negation), ("opposite", opposite),
            ("date", values_differ and _dates(sa.values | sb.values)),
            ("number", values_differ or reordered), ("frequency", frequency),
            ("value", slot and not slot_many), ("change", change),
        )
        if present
    )  # fmt: skip
    vector = (
        cosine, cosine * han, han, float(cosine >= duplicate_threshold),
        len(shared) / (len(union) or 1), len(shared) / (min(len(sa.words), len(sb.words)) or 1),
        len(ga & gb) / (len(ga | gb) or 1),
        float((only_a == 0) != (only_b == 0)), min(only_a, only_b) / (len(union) or 1),
        float(flips % 2), float(flips > 0 and flips % 2 == 0),
        float(sa.negated and sb.negated),
        float(another),
        float(slot and slot_many), float(bool(sa.values) != bool(sb.values)), float(change),
        float(added), float(joined), float(flips % 2 == 1 and only_a > 0 and only_b > 0),
        float(bool(sa.words - sb.words - sa.verbish) and bool(sb.words - sa.words - sb.verbish)),
        float(slot), float(_names_differ(sa, sb)),
        float(rules.label == CONTRADICT), float(rules.label == DUPLICATE),
    )  # fmt: skip
    differs = bool(
        flips % 2 or values_differ or reordered or frequency or slot or change or aligned.subject
        or _names_differ(sa, sb)
    )  # fmt: skip
    plain = ""
    if turned and ma.order and mb.order and sa.negated == sb.negated:
        plain = "order"
    elif favourite and aligned.slot and aligned.narrow and not added and sa.negated == sb.negated:
        plain = "value"
    elif opposite and sa.negated == sb.negated and _one_word_swapped(a, b, han > 0.3):
        plain = "opposite"  # the same words but one, and that one its opposite
    elif (
        values_differ and sa.words == sb.words and not added and sa.negated == sb.negated
        and not frequency
        and not (_when(sa.values | sb.values) and _many_verb(a))
    ):  # fmt: skip
        # The same words with another number, time or date: one value replaced.
        plain = "date" if _dates(sa.values | sb.values) else "number"
    return Cues(np.asarray(vector, dtype=np.float64), kinds, differs, plain)


# -- the model -----------------------------------------------------------------------------------

# The first stage (do the two disagree?) reads only cues of disagreement and of what stands
# together: how close the vectors are and how many words the two share say little about it,
# and a model that learned them learned how the tuning set's pairs were written.
DISAGREE_CUES = tuple(
    c
    for c in CUES
    if c not in ("cosine", "cosine_han", "han", "cosine_high", "jaccard", "overlap", "bigrams",
                 "extra_one_side")
)  # fmt: skip


@dataclass(frozen=True)
class Stage:
    """A logistic regression (multinomial) over some of the cues, standardised."""

    labels: tuple[str, ...]
    cues: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray  # (labels, cues)
    bias: np.ndarray  # (labels,)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Each row's probability of each label; `x` holds all the cues (`CUES`)."""
        columns = [CUES.index(c) for c in self.cues]
        z = (np.atleast_2d(x)[:, columns] - self.mean) / self.scale
        logits = z @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        return np.asarray(e / e.sum(axis=1, keepdims=True))

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels), "cues": list(self.cues),
            "mean": self.mean.round(6).tolist(), "scale": self.scale.round(6).tolist(),
            "weights": self.weights.round(6).tolist(), "bias": self.bias.round(6).tolist(),
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Stage:
        unknown = set(data["cues"]) - set(CUES)
        if unknown:
            raise ValueError(f"the judgement model reads unknown cues {sorted(unknown)}")
        return cls(
            labels=tuple(data["labels"]), cues=tuple(data["cues"]),
            **{k: np.asarray(data[k], dtype=np.float64)
               for k in ("mean", "scale", "weights", "bias")},
        )  # fmt: skip


@dataclass(frozen=True)
class Model:
    """Two stages: whether the two disagree (`disagree`: contradict / other), then, for those
    that do not, whether they say the same (`same`: duplicate / compatible)."""

    disagree: Stage
    same: Stage
    duplicate_min: float  # P(duplicate | no disagreement) a duplicate needs

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Rows of (contradict, duplicate, compatible)."""
        p_contradict = self.disagree.probabilities(x)[:, 0]
        p_same = self.same.probabilities(x)[:, 0]
        rest = 1 - p_contradict
        return np.stack([p_contradict, rest * p_same, rest * (1 - p_same)], axis=1)

    def to_json(self) -> dict[str, Any]:
        return {"disagree": self.disagree.to_json(), "same": self.same.to_json(),
                "duplicate_min": self.duplicate_min}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Model:
        disagree, same = Stage.from_json(data["disagree"]), Stage.from_json(data["same"])
        if disagree.labels[0] != CONTRADICT or same.labels[0] != DUPLICATE:
            raise ValueError("the judgement model's stages are not contradict / duplicate first")
        return cls(disagree, same, float(data["duplicate_min"]))


@cache
def model() -> Model:
    return Model.from_json(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
