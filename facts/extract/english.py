"""The English rules: capitalised words and runs of them ("New York", "Bank of America", "Acme
Corp"), quoted names ('Northstar', “Northstar”), "Speaker: text" speakers, possessives
("Alice's"), and titles ("Dr. Smith"). Sentence-initial function words, pronouns, weekdays and
months are not names. The type is "person" only with a clue (speaker, possessive, title),
"organization" / "place" only with a designator word (Corp, University / Street, Lake),
otherwise "other"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from facts import gazetteers
from facts.extract.candidates import (
    _HAN_RUN,
    _MAX_NAME_WORDS,
    ORGANIZATION,
    OTHER,
    PERSON,
    PLACE,
    _Candidate,
)

_L = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f"
# A word: letters/digits joined by - ' ’ &, optionally ending in an apostrophe ("James'").
_WORD = re.compile(f"[{_L}0-9]+(?:[-'’&][{_L}0-9]+)*['’]?")
_SPACES = re.compile(r"[ \t\u00a0]{1,3}")
_AMPERSAND = re.compile(r"[ \t]*&[ \t]*")
_TITLE_GAP = re.compile(r"\.?[ \t\u00a0]{1,3}")
_COMMA_GAP = re.compile(r",[ \t]{1,3}")
_COMMA_SPACES = re.compile(r",[ \t]+")
# Text between two words that ends a sentence (or a line, or a "Speaker:" prefix).
_SENTENCE_BREAK = re.compile(r"[.!?:;\n\r。！？；：…]")

# "Speaker: text" at the start of a line, optionally after a [timestamp] or 10:32.
_SPEAKER = re.compile(
    r"^[ \t]*(?:\[[^\]\n]{0,40}\][ \t]*|\d{1,2}:\d{2}(?::\d{2})?[ \t]*(?:[AaPp][Mm])?[ \t]+)?"
    rf"([A-Z][{_L}'’.\-]*(?:[ \t][A-Z][{_L}'’.\-]*){{0,2}})[ \t]*[:：]",
    re.MULTILINE,
)
# 'Northstar', "Northstar", “Northstar”, ‘Northstar’: a quote opens only after a non-word
# character, so the apostrophe in "Alice's" never starts one.
_QUOTED = re.compile(
    r"(?<![\w'’])(?:'([^'\n]{1,40})'|\"([^\"\n]{1,40})\"|“([^”\n]{1,40})”|‘([^’\n]{1,40})’)(?![\w])"
)
_QUOTE_PUNCT = re.compile(r"[.!?,;:()\[\]{}]")

_STOP_WORDS = frozenset(
    """
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves one ones
    this that these those who whom whose what which where when why how whatever whoever whenever
    wherever however a an the some any all each every no none both either neither another other
    others such many much more most few fewer several own same
    and but or nor so yet for because if unless although though while whilst since as after before
    until till once then than also therefore thus hence meanwhile besides anyway anyways otherwise
    instead still already again ever never always often sometimes usually rarely seldom
    in on at to from by with without within about above below of off into onto over under during
    through throughout between among amongst against per via like unlike near around across along
    behind beside beyond despite except inside outside toward towards upon
    yesterday today tomorrow tonight now later soon recently lately currently earlier
    maybe perhaps actually really just only even very too quite rather almost here there
    not well last next first second third finally lastly overall basically honestly
    yes no yeah yep yup nope ok okay oh ah aha hi hello hey thanks thank please sorry wow lol
    great good nice cool sure wait welcome congrats congratulations bye goodbye dear hmm hmmm
    um uh alright fine awesome amazing wonderful right wrong true false cheers anyhow
    is are was were be been being am do does did done doing have has had having can could will
    would shall should might must let lets went gone got get gets go goes going make made take
    took see saw seen look looks looked love loved want wanted need needed think thought know
    knew remember tell told said say says check try tried use used using call called ask asked
    buy bought start started finished finish feel felt hope hoped keep kept give gave put find
    found come came bring brought show showed send sent read wrote write watch watched play
    played enjoy enjoyed spent spend visited visit learned learn met meet
    everyone everybody everything someone somebody something anyone anybody anything nobody
    nothing nowhere somewhere anywhere everywhere people thing things stuff
    time day days week weeks month months year years morning afternoon evening night weekend
    other another whole half full
    """.split()
)
# Words that begin names ("New York", "Great Wall", "First Bank") but are not names alone.
_WEAK_WORDS = frozenset(
    """
    new old big small little great good first last north south east west central upper lower
    united national royal grand saint st general
    """.split()
)
_WEEKDAYS_MONTHS = frozenset(
    """
    monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri
    sat sun january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)
# Capitalised words that are not names by themselves (chat and document boilerplate).
_ACRONYMS_NOT_NAMES = frozenset(
    """
    ok tv am pm id fyi asap lol btw ps faq diy omg tbd eta aka vs pdf url usb ceo cto cfo coo vp
    hr pr qa ai api ui ux rsvp imo imho tldr np idk thx pls ty gg eod eow wip nb re
    crm erp kpi okr roi sla saas b2b b2c mvp poc
    """.split()
)
# "Note: ...", "User: ..." look like speakers but are labels or chat roles.
_LABELS = frozenset(
    """
    note notes update updates summary todo to-do task tasks question answer q a re fyi ps tldr
    user assistant system human ai bot tool model agent warning error info debug example step
    time date location address phone email name goal goals reason result problem solution tip
    important reminder deadline owner tags tag subject from to cc bcc title description details
    context topic agenda action decision fact memory preference project status priority category
    type source link url edit edited fix bug feature issue remark remarks comment comments
    conclusion background plan result results input output response request query prompt
    """.split()
)
# Joining words allowed inside a name: "Bank of America", "Ludwig van Beethoven".
_CONNECTORS = frozenset({"of", "the", "de", "da", "del", "della", "di", "du", "la", "le", "van"})
_CONNECTORS = _CONNECTORS | frozenset({"von", "der", "den", "dos", "das", "y", "bin"})
_TITLE_WORDS = frozenset(
    {"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "sir", "madam", "dame", "lord"}
)
_ORG_SUFFIXES = frozenset(
    """
    inc corp corporation co company ltd llc llp plc gmbh ag sa group holdings university college
    institute school academy bank foundation association society agency ministry department
    labs lab laboratory laboratories technologies systems solutions partners ventures capital
    studios studio media press hospital clinic church club committee council union league
    airlines airways motors pharmaceuticals pharma industries enterprises consulting
    """.split()
)
_ORG_PREFIXES = frozenset(
    {"university", "bank", "ministry", "department", "institute", "college", "school", "church"}
)
_PLACE_SUFFIXES = frozenset(
    """
    city county street st avenue ave road rd boulevard blvd lane river lake mountain mountains
    park island islands bay beach valley province district village town square bridge airport
    station hills coast sea ocean desert canyon falls harbor harbour peninsula
    """.split()
)
_PLACE_PREFIXES = frozenset({"lake", "mount", "mt", "cape", "fort", "port", "city"})
_DESIGNATORS = _ORG_SUFFIXES | _PLACE_SUFFIXES | _ORG_PREFIXES | _PLACE_PREFIXES
_CONTRACTIONS = frozenset({"m", "re", "ve", "ll", "d", "t"})
# Sentence-initial words with these endings are adverbs or -ing forms ("Actually", "Going"),
# not names; checked only at the start of a sentence, where capitals carry no signal.
_COMMON_ENDINGS = ("ally", "ntly", "tely", "ously", "ully", "ssly", "ing")


@dataclass(slots=True)
class _Word:
    start: int
    end: int  # end of the word itself, without a possessive 's
    text: str  # without a possessive 's
    possessive: bool
    contraction: bool


def _split_word(match: re.Match[str]) -> _Word:
    raw = match.group()
    start = match.start()
    if raw[-1] in "'’":  # James' (possessive of a name ending in s)
        text = raw[:-1]
        return _Word(start, start + len(text), text, text[-1:] in "sS", False)
    for quote in "'’":
        head, sep, tail = raw.rpartition(quote)
        if sep and head:
            if tail.lower() == "s":
                return _Word(start, start + len(head), head, True, False)
            if tail.lower() in _CONTRACTIONS:
                return _Word(start, match.end(), raw, False, True)
    return _Word(start, match.end(), raw, False, False)


def _common_word(key: str) -> bool:
    """An everyday English word (Faker's list of about 1,000) or a past-tense shape."""
    return key in gazetteers.common_words() or (len(key) >= 5 and key.endswith("ed"))


def _is_capitalised(word: str) -> bool:
    first = word[0]
    if first.isupper():
        return True
    # iPhone, eBay, macOS: a lower-case start with capitals inside is a brand-style name.
    return first.islower() and any(c.isupper() for c in word[1:])


def _is_acronym(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


def _not_a_name(word: str) -> bool:
    """Words that never stand for an entity on their own, wherever they appear."""
    key = word.lower()
    return (
        key in _STOP_WORDS
        or key in _WEEKDAYS_MONTHS
        or (_is_acronym(word) and key in _ACRONYMS_NOT_NAMES)
    )


def _entity_type(words: list[str], person_clue: bool) -> str:
    first = words[0].lower().rstrip(".")
    last = words[-1].lower().rstrip(".")
    if len(words) > 1 and (last in _ORG_SUFFIXES or first in _ORG_PREFIXES):
        return ORGANIZATION
    if len(words) > 1 and (last in _PLACE_SUFFIXES or first in _PLACE_PREFIXES):
        return PLACE
    return PERSON if person_clue else OTHER


def _case_is_informative(words: list[_Word]) -> bool:
    """False for SHOUTED text, where every word is capitalised and capitals mean nothing."""
    letters = [c for w in words for c in w.text if c.isalpha() and c.isascii()]
    if len(words) < 3 or len(letters) < 10:
        return True
    upper = sum(1 for c in letters if c.isupper())
    return upper / len(letters) <= 0.5


def _grow_run(text: str, words: list[_Word], i: int) -> tuple[list[_Word], int]:
    """The run of capitalised words that starts at words[i] ("New York", "Bank of America",
    "Dr. Smith"), and the index of the first word after it."""
    n = len(words)
    run = [words[i]]
    j = i + 1
    while j < n and not run[-1].possessive and len(run) < _MAX_NAME_WORDS:
        gap_start = run[-1].end
        nxt = words[j]
        gap_pattern = _TITLE_GAP if run[-1].text.lower() in _TITLE_WORDS else _SPACES
        joined: re.Match[str] | bool | None
        joined = gap_pattern.fullmatch(text, gap_start, nxt.start) or _AMPERSAND.fullmatch(
            text, gap_start, nxt.start
        )
        if not joined and _COMMA_GAP.fullmatch(text, gap_start, nxt.start):
            # "Acme, Inc."
            joined = nxt.text.lower() in {"inc", "ltd", "llc", "llp", "plc", "gmbh"}
        if not joined or nxt.contraction:
            break
        if _is_capitalised(nxt.text) and not _not_a_name(nxt.text):
            run.append(nxt)
            j += 1
            continue
        # Up to two connectors, then a capitalised word: "Bank of the West".
        k = j
        while k < n and k - j < 2 and words[k].text in _CONNECTORS:
            if not _SPACES.fullmatch(text, words[k].end, words[k + 1].start if k + 1 < n else 0):
                break
            k += 1
        if k > j and k < n and _is_capitalised(words[k].text) and not _not_a_name(words[k].text):
            run.extend(words[j : k + 1])
            j = k + 1
            continue
        break
    return run, j


def _lone_word_is_name(only: _Word, first: _Word, initial: bool, lower_words: set[str]) -> bool:
    """Whether a run of one word (`only`) is a name; `first` is the word the run started at
    (before leading non-names came off), `initial` whether the run starts a sentence."""
    key = only.text.lower()
    if len(only.text) < 2 or _not_a_name(only.text) or key in _DESIGNATORS:
        return False
    if key in _WEAK_WORDS or (initial and key in _LABELS):
        return False
    if key in _TITLE_WORDS:
        return False
    if initial and first is only and not only.possessive:
        # At a sentence start a capital is no evidence: drop words the text also uses
        # in lower case, and adverb/-ing shapes.
        if key in lower_words or (len(key) >= 6 and key.endswith(_COMMON_ENDINGS)):
            return False
        if _common_word(key) and not gazetteers.known_name(key):
            return False  # "Budget for ...", "Saved the map ...": a word, not a name
    return True


def _english_candidates(text: str) -> list[_Candidate]:
    words = [_split_word(m) for m in _WORD.finditer(text)]
    if not words:
        return []
    found: list[_Candidate] = []
    found.extend(_quoted_candidates(text))
    if not _case_is_informative(words):
        return found
    speakers = _speaker_candidates(text)
    found.extend(speakers)
    speaker_starts = {c.start for c in speakers}
    lower_words = {w.text for w in words if w.text.islower()}

    i = 0
    n = len(words)
    while i < n:
        word = words[i]
        if word.contraction or not _is_capitalised(word.text):
            i += 1
            continue
        previous_end = words[i - 1].end if i else 0
        initial = i == 0 or bool(_SENTENCE_BREAK.search(text, previous_end, word.start))
        # Grow a run of capitalised words: "New York", "Bank of America", "Dr. Smith".
        run, j = _grow_run(text, words, i)
        i = max(j, i + 1)

        # Leading words that are not names ("The", "Yesterday") come off the run.
        while run and (_not_a_name(run[0].text) or run[0].text in _CONNECTORS):
            run.pop(0)
            initial = False
        if not run:
            continue
        titled = run[0].text.lower() in _TITLE_WORDS and len(run) > 1
        if len(run) == 1 and not _lone_word_is_name(run[0], word, initial, lower_words):
            continue
        person_clue = titled or run[-1].possessive or run[0].start in speaker_starts
        # "Acme, Inc." is named "Acme Inc": the comma would defeat matching other mentions.
        name = _COMMA_SPACES.sub(" ", text[run[0].start : run[-1].end])
        kind = _entity_type([w.text for w in run], person_clue)
        if kind == PERSON and run[-1].text.lower() in _WEEKDAYS_MONTHS:
            continue
        sure = titled or run[0].start in speaker_starts or kind in (ORGANIZATION, PLACE)
        found.append(_Candidate(run[0].start, name, kind, sure=sure))
    return found


def _speaker_candidates(text: str) -> list[_Candidate]:
    found: list[_Candidate] = []
    for match in _SPEAKER.finditer(text):
        name = match.group(1).rstrip(".")
        parts = name.split()
        first = parts[0].lower()
        if first in _LABELS or any(_not_a_name(p) for p in parts) or len(name) < 2:
            continue
        found.append(_Candidate(match.start(1), name, PERSON))
    return found


def _quoted_candidates(text: str) -> list[_Candidate]:
    found: list[_Candidate] = []
    for match in _QUOTED.finditer(text):
        group = next(g for g in range(1, 5) if match.group(g) is not None)
        inner = match.group(group)
        name = inner.strip()
        # Chinese quotes are handled (with a stricter rule) on the Chinese side.
        if not name or _HAN_RUN.search(name) or _QUOTE_PUNCT.search(name):
            continue
        parts = name.split()
        if len(parts) > 4 or not parts[0][:1].isupper():
            continue
        if all(_not_a_name(p) or p in _CONNECTORS for p in parts):
            continue
        at = match.start(group) + (len(inner) - len(inner.lstrip()))
        found.append(_Candidate(at, name, OTHER, sure=False))
    return found
