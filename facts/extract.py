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
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from facts import gazetteers
from facts.entities import EMPTY_DICTIONARY, Dictionary, FoundEntity, entity_normalize
from facts.entity_types import Mention, settle_types
from facts.models import EntityRole, EntityType

# Bumped whenever the rules change what they find: beat's sweep then re-links every fact.
EXTRACTOR_VERSION = "3"

PERSON = str(EntityType.PERSON)
PLACE = str(EntityType.PLACE)
ORGANIZATION = str(EntityType.ORGANIZATION)
OTHER = str(EntityType.OTHER)
PRODUCT = str(EntityType.PRODUCT)

# -- Chinese ---------------------------------------------------------------------------------

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_RUN = re.compile(f"[{_HAN}]+")

# jieba's tags for proper nouns. nrfg is a person-name variant; nrt (transliterated) is not safe.
_TAG_TYPES = {
    "nr": PERSON,
    "nrfg": PERSON,
    "nrt": OTHER,  # transliterations: as often countries and companies (阿里巴巴) as people
    "ns": PLACE,
    "nt": ORGANIZATION,
    "nz": OTHER,
}

# Frequent words that jieba's dictionary tags as proper nouns although in everyday text they are
# ordinary words ("东西" is "thing", "普通" is "ordinary"). Found by reading the dictionary's most
# frequent nr/ns/nt/nz/nrt entries and running conversational sentences through the tagger.
_HAN_NOT_NAMES = frozenset(
    """
    东西 城市 爱国 平原 外国 普通 和平 论文 家族 精华 百科 共和 光华 二人 令人 登基 崇拜 崇高
    多谢 保姆 胡说 高高的 庄稼人 祥和 连成 大王 二世 二中 四纵 夸特 新手机 白天 黄金 金色 文明
    明白 安全 平安 高兴 方便 江湖 东方 西方 南方 北方 中方 美方 外地 本地 当地 各地 内地 世界
    国家 全国 全球 地球 海外 国内 国外 老大 小子 小伙子 老人家 老太太 华人 中华 乡下 万一 成本
    喝咖啡
    """.split()
)

# Household company and app names that jieba's dictionary tags wrongly (华为 as a person, 微软
# as an adjective) or does not know (谷歌, 微信 come out as two loose characters, which the
# surname rule would then call a person). Not a gazetteer: only names the tagger gets wrong.
_HAN_FIXED_TYPES = {
    **dict.fromkeys(
        "华为 腾讯 百度 京东 微软 谷歌 美团 滴滴 阿里巴巴 阿里 苹果公司".split(), ORGANIZATION
    ),
    **dict.fromkeys(
        "淘宝 微信 支付宝 抖音 飞书 钉钉 企业微信 腾讯会议 腾讯云 阿里云 华为云 百度网盘 "
        "小红书".split(),
        PRODUCT,
    ),
}
_HAN_FIXED = re.compile("|".join(sorted(_HAN_FIXED_TYPES, key=len, reverse=True)))

# The commonest single-character surnames (and a few compound ones) for 老王 / 小李 / 王总.
_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏"
    "魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付傅方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚"
    "邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳"
    "甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解"
    "牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边"
    "卞姬师仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝"
) | frozenset({"欧阳", "司马", "诸葛", "上官", "东方", "慕容", "令狐", "皇甫", "夏侯", "尉迟"})

# 老X / 小X where X happens to be a surname but the word is an ordinary one ("小时" hour,
# "小于" less than, "老师" teacher).
_PREFIX_NOT_NAMES = frozenset(
    """
    老师 老公 老成 老路 老农 老房 老汤 老家 老乡 小时 小于 小康 小米 小白 小车 小路 小农 小商
    小麦 小费 小包 小单 小和 小曲 小牛 小巫 小童 小方 小项 小区 小姐 小说 小吃 小心 小孩 小组
    """.split()
)

# Titles that make "surname + title" a way of naming a person (王总, 张经理, 李老师).
_TITLES = frozenset(
    """
    总 董 工 哥 姐 叔 姨 婶 爷 总监 总裁 经理 老师 医生 大夫 教授 博士 律师 主任 局长 处长 科长
    部长 院长 校长 书记 主席 先生 女士 小姐 太太 阿姨 师傅 老板 同学 警官 队长 组长 秘书 会计
    护士 老总 董事长 主管 厂长 所长 市长 县长 镇长 村长 班长 导演 编辑 记者 教练 总经理 副总
    """.split()
)

# A quoted Chinese name is only taken when a category word follows it: “北极星”项目. Bare
# quotes are as often emphasis or reported speech (他说“好的”).
_CN_QUOTE = re.compile(
    r"[“「『]([^”」』\s，。！？、；：,.!?;:]{1,20})[”」』]"
    r"(项目|计划|产品|系统|平台|品牌|应用|软件|App|APP|公司|集团|团队|小组|工作室|基金会)?"
)
_CN_BOOK = re.compile(r"《([^》\n]{1,30})》")
# 在携程实习, 在字节跳动上班: where someone works is named between 在 and the verb (the name
# is typed as anything else: 在北京工作 is a place).
_CN_WORKPLACE = re.compile(
    r"(?:在|去|到)([\u4e00-\u9fffA-Za-z]{2,8}?)(?:上班|工作|实习|任职|打工|当实习生)"
)
_NOT_IN_WORKPLACE = re.compile("[的了这那我你他她们个家里边面也都还在去到和跟]")
_NOT_WORKPLACES = frozenset(
    "公司 单位 学校 医院 银行 工厂 外地 本地 国外 国内 总部 老家 那儿 这儿".split()
)
_CN_QUOTE_ORG = frozenset({"公司", "集团", "团队", "小组", "工作室", "基金会"})
# “名称” right after these words is a name being given: 产品叫“云帆”, 代号“灯塔”.
_CN_NAMING = ("叫", "名为", "称为", "代号", "名叫", "取名")

_NUMERAL_TAGS = frozenset({"m", "mq", "q"})
# Dictionary tags of single-character surnames that are not mainly something else (张 is mostly
# a measure word, 高 an adjective, 于 a preposition), so a loose character after them can start
# an unknown full name.
_SURNAME_TAGS = frozenset({"nr", "nrfg", "zg", "ng", "j"})
# Tags a loose character of a given name carries; verbs, particles, prepositions never qualify.
_GIVEN_NAME_TAGS = frozenset(
    {"nr", "nrfg", "ng", "n", "a", "ag", "zg", "j", "nz", "b", "tg", "x", "z", "ns"}
)
_NOT_GIVEN_NAME = frozenset("家们人等里上下中前后外内年月日天点分号个次事话总大多少好新老小")
_COMMON_VERBS = frozenset("说是有在要去来给和对把被让到用做看想会能叫问从跟")
_NOT_GIVEN_TAGS = frozenset({"p", "u", "uj", "ul", "c", "y", "m", "q", "r", "d"})
# What follows a sentence's subject: a verb, an adverb, a preposition or a time word.
_PREDICATE_TAGS = frozenset({"v", "vn", "d", "p", "t", "ad", "vd"})


@cache
def _pos_tokenizer() -> Any:
    """jieba's part-of-speech tokenizer, loaded on first use and then shared by the process.

    Importing jieba.posseg reads the whole dictionary (~0.7 s), so it happens here rather than at
    import time: processes that never see Chinese text never pay for it.
    """
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba.posseg.dt


@dataclass(slots=True)
class _Candidate:
    start: int
    name: str
    type: str
    sure: bool = True  # False: the type is a guess that facts.entity_types settles


def _is_surname_title(word: str) -> bool:
    """王总, 李老师, 欧阳经理: a surname directly followed by a title."""
    for size in (1, 2):
        if len(word) > size and word[:size] in _SURNAMES and word[size:] in _TITLES:
            return True
    return False


def _is_prefixed_surname(word: str) -> bool:
    """老王, 小李: the familiar prefix + surname form."""
    return (
        len(word) == 2
        and word[0] in "老小"
        and word[1] in _SURNAMES
        and word not in _PREFIX_NOT_NAMES
    )


def _han_names(pairs: list[tuple[str, str]], offset: int) -> list[_Candidate]:
    """Names among one Han run's (word, tag) tokens; `offset` is where the run starts."""
    found: list[_Candidate] = []
    starts = []
    for word, _ in pairs:
        starts.append(offset)
        offset += len(word)
    n = len(pairs)
    i = 0
    while i < n:
        word, flag = pairs[i]
        start = starts[i]
        nxt = pairs[i + 1][0] if i + 1 < n else ""
        after_numeral = i > 0 and pairs[i - 1][1] in _NUMERAL_TAGS
        # 老 / 小 + surname, split by jieba: 老/刘, 小/李.
        if word in ("老", "小") and len(nxt) == 1 and nxt in _SURNAMES:
            found.append(_Candidate(start, word + nxt, PERSON))
            i += 2
            continue
        if (
            i == 0
            and len(word) == 1
            and word in _SURNAMES
            and flag not in _SURNAME_TAGS
            and nxt
            and len(nxt) == 1
            and nxt not in _NOT_GIVEN_NAME
            and nxt not in _COMMON_VERBS
            and pairs[i + 1][1] not in _NOT_GIVEN_TAGS
            and i + 2 < n
            and pairs[i + 2][1] in _PREDICATE_TAGS
        ):
            # 许/晴/下个月, 谢/娜/在: at the start of a sentence, a surname and one loose
            # character before the predicate are a name the dictionary does not know.
            found.append(_Candidate(start, word + nxt, PERSON))
            i += 2
            continue
        if word in _SURNAMES and not after_numeral:
            # 张/经理, 王/总: surname + title (unless a numeral makes 张 "sheet": 一张经理的名片).
            if nxt in _TITLES:
                found.append(_Candidate(start, word + nxt, PERSON))
                i += 2
                continue
            if len(word) == 1 and flag in _SURNAME_TAGS:
                # 林/小雨: surname + a given name the dictionary knows.
                if len(nxt) == 2 and pairs[i + 1][1] in ("nr", "nrfg", "nz"):
                    found.append(_Candidate(start, word + nxt, PERSON))
                    i += 2
                    continue
                # 陈/思/远, 赵/磊: surname + one or two loose characters that are not
                # function words; jieba leaves unknown names as single characters.
                j = i + 1
                while (
                    j < n
                    and j - i <= 2
                    and len(pairs[j][0]) == 1
                    and pairs[j][1] in _GIVEN_NAME_TAGS
                    and pairs[j][0] not in _NOT_GIVEN_NAME
                    and pairs[j][0] not in _COMMON_VERBS
                ):
                    j += 1
                if j > i + 1:
                    name = "".join(w for w, _ in pairs[i:j])
                    found.append(_Candidate(start, name, PERSON))
                    i = j
                    continue
        i += 1
        if _is_prefixed_surname(word) or _is_surname_title(word):
            found.append(_Candidate(start, word, PERSON))
            continue
        kind = _TAG_TYPES.get(flag)
        if kind is not None and len(word) >= 2 and word not in _HAN_NOT_NAMES:
            if nxt in _ORG_TAILS:
                # 招商局/集团, 海南/航空, 京东/物流: the name and its designator are one name.
                found.append(_Candidate(start, word + nxt, ORGANIZATION))
                i += 1
                continue
            found.append(_Candidate(start, word, kind, sure=False))
        elif (
            len(word) >= 2
            and flag not in _NOT_PLACE_TAGS
            and word not in _HAN_NOT_NAMES
            and gazetteers.places().get(word, 0) >= _KNOWN_CITY
        ):
            # 合肥, 大连: cities the dictionary tags as common words (n, d).
            found.append(_Candidate(start, word, PLACE, sure=False))
    return found


# What joins a name before it into an organisation's name (招商局集团, 海南航空).
_ORG_TAILS = frozenset(
    "集团 公司 银行 航空 物流 科技 汽车 证券 保险 电器 控股 股份 传媒 地产 医药 食品".split()
)
# A word the dictionary does not know as a name is a place when it is a city of this many
# people (GeoNames' Chinese names), unless jieba reads it as a verb or a function word.
_KNOWN_CITY = 300_000
_NOT_PLACE_TAGS = frozenset({"v", "vn", "vd", "p", "c", "u", "uj", "ul", "r", "m", "q", "y"})


def _han_pieces(start: int, end: int, taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of text[start:end] outside the user dictionary's matches."""
    pieces = []
    for s, e in sorted(taken):
        if e <= start or s >= end:
            continue
        if s > start:
            pieces.append((start, s))
        start = max(start, e)
    if start < end:
        pieces.append((start, end))
    return pieces


def _chinese_candidates(text: str, taken: list[tuple[int, int]]) -> list[_Candidate]:
    """`taken`: spans the user dictionary named already; jieba segments around them, so a
    dictionary term is one word and never the tail of a name the rules guess."""
    found: list[_Candidate] = []
    tokenizer = None
    for run in _HAN_RUN.finditer(text):
        for start, end in _han_pieces(run.start(), run.end(), taken):
            if tokenizer is None:
                tokenizer = _pos_tokenizer()
            # HMM=False: jieba's part-of-speech HMM costs ~10x the rest (about 3 ms per 100
            # characters) and still splits 小/李 and 老/刘; the rules below join the name
            # shapes that matter from the dictionary-only tokens instead.
            pairs = [(p.word, p.flag) for p in tokenizer.cut(text[start:end], HMM=False)]
            fixed = [(m.start(), m.end(), m.group()) for m in _HAN_FIXED.finditer(text, start, end)]
            found.extend(_Candidate(at, name, _HAN_FIXED_TYPES[name]) for at, _, name in fixed)
            found.extend(
                c
                for c in _han_names(pairs, start)
                if not any(c.start < e and s < c.start + len(c.name) for s, e, _ in fixed)
            )
    for match in _CN_WORKPLACE.finditer(text):
        name = match.group(1)
        if name not in _NOT_WORKPLACES and not _NOT_IN_WORKPLACE.search(name):
            found.append(_Candidate(match.start(1), name, ORGANIZATION, sure=False))
    for match in _CN_BOOK.finditer(text):
        name = match.group(1).strip()
        if name:
            found.append(_Candidate(match.start(1), name, OTHER))
    for match in _CN_QUOTE.finditer(text):
        category = match.group(2)
        named = text[max(0, match.start() - 2) : match.start()].endswith(_CN_NAMING)
        if (category or named) and _HAN_RUN.search(match.group(1)):
            kind = ORGANIZATION if category and category in _CN_QUOTE_ORG else OTHER
            found.append(_Candidate(match.start(1), match.group(1), kind))
    return found


# -- English ---------------------------------------------------------------------------------

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
        run = [word]
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
                if not _SPACES.fullmatch(
                    text, words[k].end, words[k + 1].start if k + 1 < n else 0
                ):
                    break
                k += 1
            if (
                k > j
                and k < n
                and _is_capitalised(words[k].text)
                and not _not_a_name(words[k].text)
            ):
                run.extend(words[j : k + 1])
                j = k + 1
                continue
            break
        i = max(j, i + 1)

        # Leading words that are not names ("The", "Yesterday") come off the run.
        while run and (_not_a_name(run[0].text) or run[0].text in _CONNECTORS):
            run.pop(0)
            initial = False
        if not run:
            continue
        titled = run[0].text.lower() in _TITLE_WORDS and len(run) > 1
        if len(run) == 1:
            only = run[0]
            key = only.text.lower()
            if len(only.text) < 2 or _not_a_name(only.text) or key in _DESIGNATORS:
                continue
            if key in _WEAK_WORDS or (initial and key in _LABELS):
                continue
            if key in _TITLE_WORDS:
                continue
            if initial and word is only and not only.possessive:
                # At a sentence start a capital is no evidence: drop words the text also uses
                # in lower case, and adverb/-ing shapes.
                if key in lower_words or (len(key) >= 6 and key.endswith(_COMMON_ENDINGS)):
                    continue
                if _common_word(key) and not gazetteers.known_name(key):
                    continue  # "Budget for ...", "Saved the map ...": a word, not a name
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


# Longer "names" are runs of capitalised text (headings, shouting, garbage), not names.
_MAX_NAME_WORDS = 8
_MAX_NAME_CHARS = 80


# -- Both ------------------------------------------------------------------------------------


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
