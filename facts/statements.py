"""What the judgement needs of one statement: its content words in order, its numbers, times and
dates, whether it is negated, says "also", "only" or "instead", names things, and which of its
words are verbs. Chinese through jieba (with its part-of-speech tags), English through light
stemming. Common Chinese near-synonyms are read as one word first (航班 / 飞机, 能够 / 能,
妈妈 / 母亲, 之前 / 前), so a rewording in one place is no other value. Pure functions: no
database, no model.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

CONTRADICT, DUPLICATE, COMPATIBLE = "contradict", "duplicate", "compatible"

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_RUN = re.compile(f"[{_HAN}]+")
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)

# -- English -------------------------------------------------------------------------------------

_EN_NEGATION = frozenset(
    "not no never none nobody nothing neither nor cannot cant dont doesnt didnt isnt arent wasnt "
    "werent wont wouldnt shouldnt couldnt hasnt havent hadnt without".split()
)
_EN_NEGATED = {"hate": "like", "dislike": "like", "disagree": "agree", "refuse": "accept",
               "unavailable": "available", "unable": "able"}  # fmt: skip
_EN_STOP = frozenset(
    """a an the and or but of to in on at for with by from as is are was were be been being am
    do does did has have had will would shall should can could may might must so very just
    also too than then there here this that these those it its i you he she we they me him her
    us them my your his our their what which who whom whose when where why how all any some
    each every into onto about after before again s t d ll re ve m o clock
    currently now still already""".split()
)
_EN_ADDITIVE = frozenset({"too", "also", "additionally", "besides"})
_EN_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "twelfth": 12, "fifteenth": 15, "twentieth": 20,
    "single": 1, "a couple": 2, "dozen": 12, "half": 0.5,
}  # fmt: skip
_EN_WEEKDAYS = {
    d: f"weekday:{i}"
    for i, names in enumerate(
        ["monday mon", "tuesday tue tues", "wednesday wed", "thursday thu thurs",
         "friday fri", "saturday sat", "sunday sun"]
    )
    for d in names.split()
}  # fmt: skip
_EN_MONTHS = {
    m: f"month:{i}"
    for i, names in enumerate(
        ["january jan", "february feb", "march mar", "april apr", "may", "june jun",
         "july jul", "august aug", "september sep sept", "october oct", "november nov",
         "december dec"], 1
    )
    for m in names.split()
}  # fmt: skip
# Words whose swap is a rewording, not another value: verbs of being, having, liking, doing.
_EN_VERBISH = frozenset(
    """live living lived reside base work employ employed job like enjoy love fond prefer
    rather want own owns have get got take took go goes went come came use using used make
    made start started join joined finish finished attend leave left arrive land depart
    happen take place hold fit seat accommodate host run running stay keep drink eat read
    commute travel drive driving ride buy bought bring able free available schedule
    scheduled plan planned set due valid last lasts spend speak speaks speaking person
    people folk kid kids child children someone thing""".split()
)
_EN_ANTONYMS = [
    ("like", "hate"), ("love", "hate"), ("like", "dislike"), ("enjoy", "hate"),
    ("open", "closed"), ("open", "close"), ("left", "right"), ("agree", "disagree"),
    ("approve", "reject"), ("accept", "refuse"), ("accept", "reject"), ("win", "lose"),
    ("increase", "decrease"), ("true", "false"), ("early", "late"), ("before", "after"),
    ("always", "never"), ("alone", "with"), ("married", "single"), ("present", "absent"),
    ("pass", "fail"), ("allow", "forbid"), ("allowed", "forbidden"), ("on", "off"),
    ("work", "vacation"), ("working", "vacation"), ("support", "oppose"),
]  # fmt: skip

# -- Chinese -------------------------------------------------------------------------------------

# Verbs that take many values at once: another object is more, not other (去过巴黎 / 去过东京,
# "speaks French" / "speaks German"). Other verbs keep one value at a time (lives in, works at).
# Liking, having, booking or doing often are many-valued too (喜欢吃火锅 / 喜欢吃寿司,
# 有一辆摩托车 / 有一辆电动车, 经常去游泳 / 经常去打羽毛球), and so is what someone can do
# (会弹古筝 / 会拉小提琴): unless one of the two says it is the only one, or the favourite, or a
# change (_ZH_EXCLUSIVE, _ZH_REPLACING).
_ZH_MANY_VALUED = frozenset(
    """去过 读过 看过 吃过 玩过 学过 用过 到过 养 养了 教 学 在学 过敏 喜欢 爱 热爱 爱吃 爱喝
    爱看 爱听 爱玩 擅长 感兴趣 有 订 预订 买 购买 经常 偶尔 有时 有时候""".split()
)
# 最喜欢, 更喜欢, 只爱吃: one value, the favourite or the only one.
_ZH_EXCLUSIVE = frozenset("最 更 只 仅 仅仅 只是".split())
# 改成, 换成, 改到: a value that replaces the one before (孟凡早餐改喝豆浆了).
_ZH_REPLACING = frozenset("改 换 改成 换成 改为 换为 变成 改到 换到 改用 换用".split())
# 会 before a verb is what someone can do (会说, 会弹, 会做); not before these (会去北京 is a
# plan, 会在会上演示 an event).
_ZH_NOT_ABILITY = frozenset("去 来 到 回 在 是 有 让 给 把 被 和 跟 对 向 从".split())
# One-character verbs that jieba may join to their object (喝牛奶, 打篮球, 坐地铁).
_ZH_VERB_HEADS = frozenset("喝吃坐骑开打弹拉玩看听用学养穿戴买做读写唱画踢")
# Verbs that 只 may be joined to, as one word: 只有, 只用, 只吃.
_ZH_ONLY_VERBS = _ZH_VERB_HEADS | {"有"}
# A part of the day next to a time is no other thing: 下午三点 / 晚上八点 differ by the time.
_ZH_DAY_PARTS = frozenset("早上 上午 中午 下午 晚上 傍晚 凌晨 清晨 半夜 白天".split())
_EN_MANY_VALUED_WORDS = (
    "visited visit been allergic speaks speak teaches teach studies study learning learn"
)

_ZH_NEGATION = frozenset(
    "不 没 没有 未 无 别 非 不再 从不 从来不 并不 并非 不是 不会 不能 不用 甭".split()
)
_ZH_NOT_NEGATION = frozenset(
    "不错 不过 不同 不久 不少 不断 不仅 不如 不管 不但 不然 不得不 不足 没错 无论 非常 "
    "别人 别的".split()
)
# Words that say "not X": 讨厌 is 不喜欢, so 讨厌 / 不喜欢 agree and 讨厌 / 喜欢 disagree.
_ZH_NEGATED = {"讨厌": "喜欢", "反对": "同意", "拒绝": "同意"}
_ZH_STOP = frozenset(
    """的 了 是 在 和 与 及 着 或 就 都 而 把 被 让 给 对 从 到 向 于 之 其 这 那 我 你 他 她 它
    我们 你们 他们 她们 这个 那个 很 太 更 最 已经 曾经 过 现在 目前 每天 天天 一个 个 吗 呢 吧
    啊 呀 哦 会 要 能 可以 得 地 为 由 所 用 啦 嘛 位 名 每个 每 一 里 上 定 在""".split()
)
_ZH_ADDITIVE = frozenset("也 还 另外 此外 同时 另".split())
_ZH_ANTONYMS = [
    ("喜欢", "讨厌"), ("爱", "讨厌"), ("同意", "反对"), ("支持", "反对"), ("批准", "拒绝"),
    ("接受", "拒绝"), ("赢", "输"), ("增加", "减少"), ("开门", "关门"), ("左撇子", "右撇子"),
    ("左手", "右手"), ("早", "晚"), ("有空", "没空"), ("上班", "休假"), ("真", "假"),
    ("已婚", "未婚"), ("单身", "已婚"), ("通过", "否决"), ("允许", "禁止"),
]  # fmt: skip
# Near-synonyms read as one word before any comparison, so that 航班 / 飞机 or 母亲 / 妈妈 in
# one place is a rewording, not another value. The first table replaces within the text (it
# also reaches compounds: 骑单车, 生日派对, 开完会以后); the second replaces whole words, for
# those that are also part of unrelated words (老公司, 他的士气, 加班机会).
_ZH_SYNONYM_TEXT = {
    "航班": "飞机", "单车": "自行车", "脚踏车": "自行车", "派对": "聚会", "西红柿": "番茄",
    "马铃薯": "土豆", "计算机": "电脑", "薪水": "工资", "薪资": "工资", "之前": "前",
    "以后": "后", "之后": "后", "能够": "能", "宾馆": "酒店", "旅馆": "酒店", "饭馆": "餐馆",
    "餐厅": "餐馆", "立刻": "马上", "立即": "马上", "常常": "经常", "时常": "经常",
    "早餐": "早饭", "午餐": "午饭", "中饭": "午饭", "晚餐": "晚饭", "妈妈": "母亲",
    "爸爸": "父亲", "小孩子": "孩子", "小孩": "孩子", "电子邮件": "邮件", "卫生间": "洗手间",
    "公交车": "公交", "公共汽车": "公交", "巴士": "公交", "早晨": "早上", "夜里": "晚上",
    "喜爱": "喜欢", "上司": "领导", "上级": "领导", "房屋": "房子", "影片": "电影",
    "书籍": "书", "居住": "住", "抵达": "到达", "告知": "告诉",
}  # fmt: skip
_ZH_SYNONYM_WORDS = {
    "老公": "丈夫", "老婆": "妻子", "太太": "妻子", "媳妇": "妻子", "的士": "出租车",
    "班机": "飞机", "客机": "飞机", "爸": "父亲", "妈": "母亲", "常": "经常", "教师": "老师",
    "大夫": "医生", "荤": "肉", "吃荤": "吃肉", "开心": "高兴",
}  # fmt: skip
_ZH_SYNONYM_PATTERN = re.compile("|".join(sorted(_ZH_SYNONYM_TEXT, key=len, reverse=True)))
_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "九": 9}  # fmt: skip
_ZH_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_ZH_NUMERAL = re.compile("[零〇一二两三四五六七八九十百千万]+")
_ZH_WEEKDAY = re.compile("(?:周|星期|礼拜)([一二三四五六日天])")
_ZH_WEEKDAYS = {c: f"weekday:{i}" for i, c in enumerate("一二三四五六日")} | {"天": "weekday:6"}
# Verbs and words of being whose swap is a rewording (工作 / 上班, 住 / 居住).
_ZH_VERBISH_TAGS = frozenset({"v", "vd", "vi", "vg", "d", "ad", "p", "c", "u", "uj", "ul", "y"})

_ZH_NUMBER_TAGS = frozenset({"m", "mq", "t", "q"})
_ZH_DATE_UNITS = frozenset("年月日号点")
# A number stands on its own: the digits in a name (agent1, gpt4, h100, ipv6) are not one.
_NUMBER = re.compile(r"(?<![^\W_])\d+(?:[.,:]\d+)*")
_LATIN_WORD = re.compile(r"[^\W\d_]+\d\w*(?:\.\d+)*|[^\W\d_]+(?:['’][^\W\d_]+)?")


def _zh_number(text: str) -> float | None:
    if not text or any(c not in _ZH_DIGITS and c not in _ZH_UNITS for c in text):
        return None
    if not any(c in _ZH_UNITS for c in text):
        # 二〇二七: digit by digit
        return float("".join(str(_ZH_DIGITS[c]) for c in text))
    if len(text) >= 3 and text[-1] in _ZH_DIGITS and _ZH_UNITS.get(text[-2], 0) >= 100:
        # 一万五, 三千二, 两百五: the last digit counts in the next unit down
        head = _zh_number(text[:-1])
        return None if head is None else head + _ZH_DIGITS[text[-1]] * _ZH_UNITS[text[-2]] / 10
    total, section, digit = 0, 0, 0
    for char in text:
        if char in _ZH_DIGITS:
            digit = _ZH_DIGITS[char]
        else:
            unit = _ZH_UNITS[char]
            if unit == 10000:
                total += (section + digit) * unit
                section = 0
            else:
                section += (digit or 1) * unit
            digit = 0
    return float(total + section + digit)


@dataclass(frozen=True)
class Statement:
    """What the rules need of one text."""

    words: frozenset[str]  # content words, lightly normalised
    sequence: tuple[str, ...]  # the same, in order (a value swap keeps the frame in place)
    values: frozenset[str]  # numbers, times, weekdays, months
    value_order: tuple[str, ...]  # the same, in the order the text gives them
    negated: bool
    additive: bool
    capitals: frozenset[str]  # names: words written with a capital, and words with digits in
    verbish: frozenset[str]  # content words that are verbs, adverbs or words of being
    text: str  # case, width, spacing and punctuation folded
    exclusive: bool = False  # the only value, the favourite or a change (只, 最, 改成)
    possessed: frozenset[str] = frozenset()  # Chinese words right after 的 (叶青的车: 车)
    ability: bool = False  # what someone can do (会 before a verb: 会弹古筝)


def _stem(word: str) -> str:
    word = word.strip("'’")
    if word.endswith(("'s", "’s")):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2] if not word.endswith("ied") else word[:-3] + "y"
    return word


@cache
def _zh_tagger() -> Any:
    from facts.extract.chinese import _pos_tokenizer

    return _pos_tokenizer()


def fold(text: str) -> str:
    """Case, width, spacing and punctuation folded: the 'same normalised text' key."""
    return _PUNCT.sub("", unicodedata.normalize("NFKC", text).casefold())


# The statements of the texts judged last: a text is judged against several others in a row.
TEXTS_KEPT = 4096


@dataclass
class _Reading:
    """What `statement` gathers from a text: the Chinese runs first, then the rest."""

    words: set[str] = field(default_factory=set)
    sequence: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)  # in order: 'from 1 to 2' is not 'from 2 to 1'
    capitals: set[str] = field(default_factory=set)
    verbish: set[str] = field(default_factory=set)
    possessed: set[str] = field(default_factory=set)
    negations: int = 0
    additive: bool = False
    exclusive: bool = False
    ability: bool = False


def _read_chinese(normalized: str, reading: _Reading) -> None:
    """The Chinese runs: weekdays, then jieba tokens with their tags."""
    for run in _HAN_RUN.finditer(normalized):
        chunk = run.group()
        # 3只猫: 只 after a digit counts cats, it does not say "only".
        counted = run.start() > 0 and normalized[run.start() - 1].isdigit()
        for match in _ZH_WEEKDAY.finditer(chunk):
            reading.values.append(_ZH_WEEKDAYS[match.group(1)])
        chunk = _ZH_WEEKDAY.sub(" ", chunk)
        chunk = _ZH_SYNONYM_PATTERN.sub(lambda m: _ZH_SYNONYM_TEXT[m.group()], chunk)
        for piece in chunk.split():
            tokens = list(_zh_tagger().cut(piece, HMM=False))
            _read_chinese_tokens(tokens, counted, reading)


def _read_chinese_tokens(tokens: list[Any], counted: bool, reading: _Reading) -> None:
    """One piece of a Chinese run, as jieba's (word, tag) tokens; `counted`: the run follows a
    digit (3只猫: 只 counts cats, it does not say "only")."""
    after_de = False
    for index, token in enumerate(tokens):
        word, flag = _ZH_SYNONYM_WORDS.get(token.word, token.word), token.flag
        if word == "会" and index + 1 < len(tokens):
            following = tokens[index + 1]
            if following.flag.startswith(("v", "n")) and (following.word not in _ZH_NOT_ABILITY):
                reading.ability = True
        if counted and index == 0 and word == "只":
            continue
        if len(word) == 2 and word[0] in "只仅" and word[1] in _ZH_ONLY_VERBS:
            reading.exclusive, word = True, word[1:]  # 只有, 只用, 只吃: the only one
        if word in _ZH_EXCLUSIVE or word in _ZH_REPLACING:
            reading.exclusive = True
            continue
        if word in _ZH_NOT_NEGATION:
            reading.words.add(word)
            reading.sequence.append(word)
            continue
        if word in _ZH_NEGATED:
            reading.negations += 1
            word = _ZH_NEGATED[word]
        if word in _ZH_NEGATION or (
            len(word) <= 3 and word[0] in "不没" and word not in _ZH_NOT_NEGATION
        ):
            reading.negations += 1
            rest = word[1:] if word not in _ZH_NEGATION else ""
            if rest.startswith("有"):
                rest = rest[1:]
            rest = _ZH_SYNONYM_WORDS.get(rest, rest)
            if rest:
                reading.words.add(rest)
                reading.sequence.append(rest)
            continue
        if word in _ZH_ADDITIVE:
            reading.additive = True
            continue
        head = _ZH_NUMERAL.match(word)
        if head is not None and (head.end() == len(word) or flag in _ZH_NUMBER_TAGS):
            number = _zh_number(head.group())
            if number is not None:
                unit = word[head.end() : head.end() + 1]
                reading.values.append(f"{number:g}{unit if unit in _ZH_DATE_UNITS else ''}")
                continue
        if flag in ("m", "q", "mq") and len(word) == 1:
            continue  # a unit on its own: 元, 个
        if word in _ZH_STOP or not word.strip():
            after_de = word == "的"
            continue
        reading.words.add(word)
        reading.sequence.append(word)
        if after_de:
            reading.possessed.add(word)
        if flag in _ZH_VERBISH_TAGS:
            reading.verbish.add(word)


def _read_latin(normalized: str, reading: _Reading) -> None:
    """Everything outside the Chinese runs: numbers, then words."""
    latin = _HAN_RUN.sub(" ", normalized)
    for match in _NUMBER.finditer(latin):
        reading.values.append(match.group().replace(",", ""))
    latin = _NUMBER.sub(" ", latin)
    for raw in _LATIN_WORD.findall(latin):
        lower = raw.lower().replace("’", "'")
        if any(char.isdigit() for char in raw):  # a name with digits: a word as it stands
            reading.words.add(lower)
            reading.sequence.append(lower)
            reading.capitals.add(lower)
            continue
        if lower == "o'clock":
            continue
        bare = lower.replace("'", "")
        if bare in _EN_NEGATION or lower.endswith("n't"):
            reading.negations += 1
            continue
        if lower in _EN_ADDITIVE:
            reading.additive = True
            continue
        if lower in _EN_NUMBERS:
            reading.values.append(f"{_EN_NUMBERS[lower]:g}")
            continue
        if lower in _EN_WEEKDAYS:
            reading.values.append(_EN_WEEKDAYS[lower])
            continue
        if lower in _EN_MONTHS and (raw[0].isupper() or lower != "may"):
            reading.values.append(_EN_MONTHS[lower])
            continue
        if lower in ("am", "pm") or lower in _EN_STOP:
            continue
        word = _stem(lower)
        if word in _EN_NEGATED:
            reading.negations += 1
            word = _EN_NEGATED[word]
        reading.words.add(word)
        reading.sequence.append(word)
        if raw[0].isupper():
            reading.capitals.add(word)
        if word in _EN_VERBISH or lower in _EN_VERBISH:
            reading.verbish.add(word)


@lru_cache(maxsize=TEXTS_KEPT)
def statement(text: str) -> Statement:
    normalized = unicodedata.normalize("NFKC", text)
    reading = _Reading()
    _read_chinese(normalized, reading)
    _read_latin(normalized, reading)
    return Statement(
        words=frozenset(reading.words),
        sequence=tuple(reading.sequence),
        values=frozenset(reading.values),
        value_order=tuple(reading.values),
        negated=reading.negations % 2 == 1,
        additive=reading.additive,
        capitals=frozenset(reading.capitals),
        verbish=frozenset(reading.verbish),
        text=fold(text),
        exclusive=reading.exclusive,
        ability=reading.ability,
        possessed=frozenset(reading.possessed),
    )
