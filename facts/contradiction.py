"""Whether two statements contradict each other, say the same, or are merely compatible.

`pair_judge` asks the judgement (`facts.judgement`: cues read from both texts and the cosine
of their vectors, weighed by a model fitted on bench/data/judgement_tune.jsonl) and turns its
probabilities into a verdict with a reason. A duplicate needs, besides the judgement's word,
vectors at least `duplicate_threshold` close (the tenant's setting): a join folds the second
statement into the first, so it is the one answer that must be sure. The same text up to case,
width, spacing and punctuation is a duplicate without asking. Pure functions: no database, no
model download; numpy only.
"""

from __future__ import annotations

from facts.contradiction_rules import COMPATIBLE, CONTRADICT, DUPLICATE, Verdict
from facts.judgement import Model, model, pair_cues
from facts.statements import Statement, fold, statement

__all__ = [
    "COMPATIBLE", "CONTRADICT", "DUPLICATE", "Statement", "Verdict", "fold", "pair_judge",
    "statement",
]  # fmt: skip

# A contradiction this sure is plain enough to act on without a person (automatic supersede,
# where the tenant chose it).
CLEAR = 0.9


def pair_judge(
    a: str, b: str, *, similarity: float | None = None, duplicate_threshold: float = 0.95,
    judge: Model | None = None,
) -> Verdict:  # fmt: skip
    """Contradict, duplicate or compatible, with the reason and how sure. `similarity`: the
    cosine of the two texts' vectors, when known.

    A contradiction when the judgement finds the two more likely to disagree than not. A
    duplicate only when nothing in the two differs (no flip, no other value, number, time or
    frequency, no other thing in the same place, no change, no other subject), the judgement
    finds them the same (`Model.duplicate_min`) and the vectors are at least
    `duplicate_threshold` close: a duplicate is joined into the stored fact, so a pair that
    disagrees is never one. `judge`: another model than the one shipped (the benchmark's
    folds)."""
    if fold(a) == fold(b):
        return Verdict(DUPLICATE, "same text", 1.0)
    judge = judge or model()
    cues = pair_cues(a, b, similarity, duplicate_threshold)
    p_contradict, p_duplicate, p_compatible = judge.probabilities(cues.vector)[0].tolist()
    if cues.plain:
        # Nothing to weigh: the same words turned round, with another number or with one
        # word's opposite, or another favourite.
        sure = max(p_contradict, CLEAR if cues.plain in ("order", "number", "date") else 0.5)
        return Verdict(CONTRADICT, cues.plain, round(sure, 3), clear=sure >= CLEAR)
    if p_contradict >= 0.5:
        reason = cues.kinds[0] if cues.kinds else "meaning"
        return Verdict(CONTRADICT, reason, round(p_contradict, 3), clear=p_contradict >= CLEAR)
    same = p_duplicate / ((p_duplicate + p_compatible) or 1.0)
    if (
        not cues.differs
        and same >= judge.duplicate_min
        and similarity is not None
        and similarity >= duplicate_threshold
    ):
        return Verdict(DUPLICATE, "similar", round(same, 3))
    return Verdict(COMPATIBLE, "", round(1 - p_contradict, 3))
