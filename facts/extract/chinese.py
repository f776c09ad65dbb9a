"""The Chinese rules: jieba's proper-noun tags (nr* person, ns place, nt organisation, nz
other), plus the familiar forms jieba misses or splits: 老王 / 小李 (prefix + surname) and 王总 /
张经理 (surname + title) are people. 《书名》 and “名称” followed by 项目/公司/... are names too."""

from __future__ import annotations

import logging
import re
from functools import cache
from typing import Any

from facts import gazetteers
from facts.extract.candidates import (
    _HAN_RUN,
    ORGANIZATION,
    OTHER,
    PERSON,
    PLACE,
    PRODUCT,
    _Candidate,
)

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


def _person_at(pairs: list[tuple[str, str]], i: int) -> int:
    """Where a person's name in a shape jieba splits starts at token i: the index after its
    last token, or i when none does."""
    n = len(pairs)
    word, flag = pairs[i]
    nxt = pairs[i + 1][0] if i + 1 < n else ""
    after_numeral = i > 0 and pairs[i - 1][1] in _NUMERAL_TAGS
    # 老 / 小 + surname, split by jieba: 老/刘, 小/李.
    if word in ("老", "小") and len(nxt) == 1 and nxt in _SURNAMES:
        return i + 2
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
        return i + 2
    if word in _SURNAMES and not after_numeral:
        # 张/经理, 王/总: surname + title (unless a numeral makes 张 "sheet": 一张经理的名片).
        if nxt in _TITLES:
            return i + 2
        if len(word) == 1 and flag in _SURNAME_TAGS:
            # 林/小雨: surname + a given name the dictionary knows.
            if len(nxt) == 2 and pairs[i + 1][1] in ("nr", "nrfg", "nz"):
                return i + 2
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
                return j
    return i


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
        end = _person_at(pairs, i)
        if end > i:
            found.append(_Candidate(start, "".join(w for w, _ in pairs[i:end]), PERSON))
            i = end
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
