"""The type of a name the extractor found: person, place, organization, product or other.

Names are found by `facts.extract`; this module decides what they are, from evidence that does
not depend on having seen the name before:

- the shape of the name: designator words (Acme Labs, 招商银行), capitals or digits inside a
  word (iPhone 15, PyTorch, 1Password), a model word (Pro, Max, 手机);
- the words around it: "works at" / 在…上班 (an organisation), "in" / "moved to" / 去…出差 (a
  place), "using" / "installed" / 用 (a product), "X said" / "ask X" / "my sister X" / X说 (a
  person), and the word after it (X's office, X 1.29, X app, X announced);
- name lists that ship inside registry packages (`facts.gazetteers`): the world's cities,
  countries and states, people's given names, listed companies;
- jieba's part-of-speech tag, for Chinese, as one signal among these.

Each piece of evidence is a feature (`mention_features`); a multinomial logistic model weighs
them into a score per type (`entity_types_model.json` beside this module, fitted by
`python -m bench.entity_types_fit` on the tuning sets of bench/data only, its penalty chosen by
cross-validation within them). Names given as a list ("Lena, Matteo, Sofia", "昆明和贵阳") then
see each other's probabilities: a second model reads them as evidence too. See docs/entities.md.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from facts import gazetteers
from facts.models import EntityType

PERSON = str(EntityType.PERSON)
PLACE = str(EntityType.PLACE)
ORGANIZATION = str(EntityType.ORGANIZATION)
PRODUCT = str(EntityType.PRODUCT)
OTHER = str(EntityType.OTHER)
TYPES = (PERSON, PLACE, ORGANIZATION, PRODUCT, OTHER)

MODEL_PATH = Path(__file__).with_name("entity_types_model.json")


@dataclass(slots=True)
class Mention:
    """A name found at text[start:start+len(name)]; `base` the finder's type, `sure` when the
    finder had decisive evidence (a title, a speaker label, a designator, the dictionary)."""

    start: int
    name: str
    base: str
    sure: bool = False


Features = dict[str, float]

# -- English --------------------------------------------------------------------------------

_WORDS = re.compile(r"[A-Za-z\u00c0-\u024f0-9]+(?:['’.-][A-Za-z0-9]+)*|'s|’s")

# Words just before the name (the nearest first), read as what the name is. The number is the
# cue's strength within its group; the fitted model weighs each group for each type.
_LEFT_EN: dict[str, tuple[str, float]] = {
    **dict.fromkeys("near around across outside towards toward".split(), (PLACE, 2.0)),
    **dict.fromkeys("in via inside".split(), (PLACE, 1.5)),
    **dict.fromkeys("to".split(), (PLACE, 1.2)),
    # "from" and "at" name places and organisations alike; the place list tells places apart.
    **dict.fromkeys("from at".split(), (ORGANIZATION, 0.7)),
    **dict.fromkeys(
        "use uses used using install installed installing download downloaded deploy deployed "
        "upgrade upgraded bumped migrate migrated switch switched replace replaced evaluate "
        "evaluating adopt adopted try trying tried enable enabled configure configured "
        "open opened launch reinstalled uninstalled updated update bought ordered "
        "my his her our their your".split(), (PRODUCT, 1.6)),
    **dict.fromkeys("on".split(), (PRODUCT, 0.6)),
    **dict.fromkeys(
        "project projects codename initiative book novel film movie show series album song "
        "podcast event".split(), (OTHER, 2.0)),
    # Books, films and shows are read, watched and listened to; pets are named after "cat".
    **dict.fromkeys(
        "watched watching rewatched rewatching binged read reads reading reread finished cat dog "
        "puppy "
        "kitten pet hamster parrot rabbit horse".split(), (OTHER, 1.0)),
    **dict.fromkeys(
        "with ask asked tell told text texted call called ping pinged thanks thank met meet "
        "meeting dear hi hey cc remind reminded emailed email wrote by".split(),
        (PERSON, 1.0)),
    **dict.fromkeys(
        "customer client vendor supplier partner partners competitor joined joins join "
        "employer sponsor sponsored rival startup firm company".split(),
        (ORGANIZATION, 2.0)),
}  # fmt: skip
# People named by who they are to the writer: "my sister Ana", "our manager Raj".
_KIN_EN = frozenset(
    """
    friend friends colleague colleagues coworker co-worker boss manager sister brother wife
    husband mom mum dad son daughter neighbor neighbour roommate flatmate teammate cousin uncle
    aunt girlfriend boyfriend fiancé fiancée landlord landlady dentist tutor intern nephew niece
    grandma grandpa grandmother grandfather mother father mentor therapist coach lead student
    teacher professor doctor nurse recruiter ceo cto founder designer engineer
    """.split()
)
# What family call each other, before a name: Aunt Mae, Grandpa Joe.
_KIN_TITLES_EN = frozenset(
    "aunt auntie aunty uncle grandma grandpa granny gran nana grandmother grandfather cousin "
    "sister brother mother father mom mum dad".split()
)
# Two words before the name ("works at", "moved to").
_LEFT2_EN: dict[str, tuple[str, float]] = {
    **dict.fromkeys(
        "moved to|move to|moving to|flight to|flying to|fly to|flew to|trip to|drive to|"
        "driving to|going to|lives in|live in|living in|born in|based in|"
        "office in|grew up in|stay in|stayed in|landed in|land in|arrived in|visit to|"
        "travelling to|traveling to|holiday in|vacation in|weekend in|road trip|"
        "train to|bus to|hiking in|downtown in".split("|"), (PLACE, 2.5)),
    **dict.fromkeys(
        "works at|work at|working at|worked at|job at|intern at|interning at|interned at|"
        "works for|work for|working for|worked for|employed by|offer from|contract with|"
        "partnership with|deal with|audit by|funded by|acquired by|invest in|invested in|"
        "shares of|ceo of|cto of|founder of|head of|team at|engineer at|manager at|"
        "account with|membership at|subscribed to|call with|interview at|interview with|"
        "applied to|quit at|left for|started at|hired by|invoice from|order from|"
        "refund from|support at|recruiter from|people from|folks at|someone from|"
        "heard from|back from|fan of|fans of|member of|donated to|shopping at|"
        "ordered from|bought from|rep at|rep from|contact at|contacts at".split("|"),
        (ORGANIZATION, 3.0)),
    # Projects are worked on: "started work on Beacon".
    **dict.fromkeys("work on|working on|worked on|progress on|kicked off".split("|"), (OTHER, 2.0)),
    **dict.fromkeys(
        "runs on|run on|running on|built on|built with|written in|hosted on|"
        "migrated to|switched to|replaced with|stored in|deployed on|synced with|"
        "logged into|log into|signed into|charts for|upgrade to|upgraded to|"
        "playlist on|app on|alerts to|the new|a new|bought a|ordered a|got a|"
        "installed the|using the|update to|plugin for|extension for|ported to".split("|"),
        (PRODUCT, 2.0)),
}  # fmt: skip
# The word right after the name.
_RIGHT_EN: dict[str, tuple[str, float]] = {
    **dict.fromkeys(
        "said says say told tells thinks thought asked asks wants wanted wrote writes "
        "called calls replied agreed recommended recommends suggested reported presented "
        "proposed confirmed noted raised promised sent texted to".split(), (PERSON, 0.6)),
    **dict.fromkeys("is was will would can could has had and".split(), (PERSON, 0.3)),
    **dict.fromkeys(
        "prefers likes loves hates wants needs reads drinks eats works lives says thinks knows "
        "plays teaches owns leads manages speaks writes studies visits goes feels hopes "
        "believes remembers forgets prefer like love hate".split(), (PERSON, 0.8)),
    **dict.fromkeys(
        "met went took got made came left ran saw gave found bought brought kept lost won spent "
        "felt knew began flew drove ate sat stood paid sold built led taught caught".split(),
        (PERSON, 0.6)),
    **dict.fromkeys("'s ’s".split(), (PERSON, 0.8)),
    **dict.fromkeys(
        "app apps version versions cluster clusters server servers client sdk api plugin "
        "extension playlist account subscription license licences licence licenses update "
        "build builds release releases image images instance instances tokens token "
        "dashboard dashboards board boards repo repos jobs job logs tasks consumers queries "
        "query store crashed crashes crashing keeps kept froze freezes lags firmware "
        "integration workspace notebook settings battery screen charger model pro max mini "
        "plus ultra".split(), (PRODUCT, 1.5)),
    **dict.fromkeys(
        "office offices team teams headquarters hq staff employees shares stock ceo cto "
        "board customers inc announced acquired acquires hired hires hiring raised laid "
        "launched launches layoffs invoiced refunded support recruiter recruiters "
        "engineers unveiled unveils recalled campus employees fans".split(), (ORGANIZATION, 1.0)),
    **dict.fromkeys("region city area airport station suburbs downtown".split(), (PLACE, 1.5)),
    **dict.fromkeys(
        "cafe café restaurant bar pub hotel shop store bakery gym clinic agency studio"
        .split(), (ORGANIZATION, 1.5)),
    **dict.fromkeys(
        "project initiative workstream programme program campaign festival marathon "
        "conference summit rollout launch migration hackathon retreat podcast novel "
        "trilogy film movie series season episode album soundtrack sequel".split(), (OTHER, 2.0)),
}  # fmt: skip
# The last word of a name that says it is a company (designators the finder misses).
_ORG_WORDS_EN = frozenset(
    """
    energy foods logistics insurance networks robotics analytics therapeutics bio health
    financial finance software games records pictures electric telecom express rail bakery
    coffee kitchen hotel hotels museum gallery fc united partners digital capital ai
    """.split()
)
# The last word of an event's name, the first of a project's: Berlin Marathon, Project Falcon.
_EVENT_WORDS_EN = frozenset(
    "marathon summit festival conference expo cup open games week awards fair con hackathon "
    "tour championship olympics".split()
)
_PROJECT_WORDS_EN = frozenset("project operation programme program initiative".split())
# A word inside a name that says it is a model of a thing: Galaxy Tab, AirPods Pro.
_PRODUCT_WORDS_EN = frozenset(
    "pro max mini plus air ultra lite watch pad phone tab cloud os edition se studio desktop "
    "mobile app buds".split()
)
# Words whose presence makes a text technical: its unknown names lean to products.
_TECH_WORDS = frozenset(
    """
    api apis server servers deploy deployed deploys deployment build builds cluster clusters
    database databases db queue queues cache latency bug bugs repo repository release releases
    version commit merge pipeline pipelines config configuration docker container containers
    node nodes backend frontend script scripts logs logging metrics alerts timeout timeouts
    upstream ms sdk runtime kernel firmware install installed migration migrated schema
    endpoint endpoints token tokens code ci cd staging production prod tests test suite
    """.split()
)
_ACRONYM = re.compile(r"^[A-Z]{2,5}$")
_MIXED_CASE = re.compile(r"^[a-z]+[A-Z]|^[A-Z][a-z]+[A-Z]")
_DOT_PRODUCT = re.compile(r"\.(js|io|net|py|ai)$", re.IGNORECASE)
_QUOTES_BEFORE = "\"'“‘«「『"


def _left_words(text: str, start: int, count: int = 3) -> list[str]:
    words = _WORDS.findall(text[max(0, start - 60) : start])
    if re.search(r"[.!?;:\n。！？；：]\s*$", text[max(0, start - 3) : start]):
        return []  # the name starts a sentence or follows a label: nothing before it counts
    return [w.lower() for w in words[-count:]][::-1]


def _right_word(text: str, end: int) -> str:
    tail = text[end : end + 30]
    if tail.startswith(("'s", "’s")):
        return "'s"
    match = _WORDS.search(tail)
    if match is None or tail[: match.start()].strip(" \t\"'”’)»"):  # after a closing quote too
        return ""
    return match.group().lower()


def _english_features(text: str, mention: Mention, f: Features) -> None:
    name = mention.name
    words = name.split()
    end = mention.start + len(name)
    left = _left_words(text, mention.start)
    # The place list holds every city of 15,000 people: a place word before a name it does
    # not know ("in Figma", "to Kadıköy") is its own feature.
    population = gazetteers.places().get(name.casefold(), 0)
    unknown = "" if population else "?"
    if not left:
        f["en_initial"] = 1.0
    else:
        if left[0] == "the":
            f["en_the"] = 1.0  # "the Google campus", "the Roxy": people go without "the"
        if left[0] in _LEFT_EN:
            kind, weight = _LEFT_EN[left[0]]
            f[f"en_left:{kind}{unknown if kind == PLACE else ''}"] = weight
        if left[0] in _KIN_EN:
            f["en_left:kin"] = 1.0
        if len(left) > 1 and f"{left[1]} {left[0]}" in _LEFT2_EN:
            kind, weight = _LEFT2_EN[f"{left[1]} {left[0]}"]
            f[f"en_left2:{kind}{unknown if kind == PLACE else ''}"] = weight
    if text[max(0, mention.start - 1) : mention.start] in tuple(_QUOTES_BEFORE):
        f["en_quoted"] = 1.0
    right = _right_word(text, end)
    if right in _RIGHT_EN:
        kind, weight = _RIGHT_EN[right]
        f[f"en_right:{kind}"] = weight
    elif len(right) > 3 and right.endswith("ed"):
        f["en_right_ed"] = 1.0  # "Dmitry cooked": someone did something
    if re.match(r"\s*v?\d", text[end : end + 6]) and not words[-1][:1].isdigit():
        f["en_version"] = 1.0  # Kubernetes 1.29, Python 3.8, iPhone 15
    if re.match(r"\s*,\s*[A-Z]", text[end : end + 4]) and population:
        f["en_place_comma"] = 1.0  # Portland, Oregon
    # The shape of the name itself.
    if any(_MIXED_CASE.match(w) for w in words):
        f["en_mixed_case"] = 1.0  # iPhone, macOS, PyTorch
    if any(c.isdigit() for c in name):
        f["en_digit"] = 1.0  # 1Password, Pixel 8
    if _DOT_PRODUCT.search(name):
        f["en_dot"] = 1.0
    if "&" in name:
        f["en_amp"] = 1.0  # Johnson & Johnson, AT&T, Marks & Spencer
    if name.lower().endswith(".com"):
        f["en_com"] = 1.0
    if len(words) == 1 and _ACRONYM.match(name):
        f["en_acronym"] = 1.0
    first_word = words[0].casefold()
    if len(words) > 1:
        f["en_words"] = min(3, len(words)) - 1.0
        if first_word in _KIN_TITLES_EN:
            f["en_kin_title"] = 1.0  # Aunt Mae, Grandpa Joe
        if words[-1].casefold() in _ORG_WORDS_EN:
            f["en_org_word"] = 1.0
        if any(w.casefold() in _PRODUCT_WORDS_EN for w in words[1:]):
            f["en_product_word"] = 1.0
        if words[-1].casefold() in _EVENT_WORDS_EN or first_word in _PROJECT_WORDS_EN:
            f["en_event_word"] = 1.0
    # The lists.
    given = gazetteers.given_names()
    first = words[0].casefold()
    if first in given:
        f["en_given_full" if len(words) > 1 else "en_given"] = 1.0
    if population:
        strength = 1.0 + math.log10(max(population, 10_000) / 10_000)
        if len(words) == 1 and first in given:
            # Sofia, Austin, David: a place and a given name both; the words around decide.
            f["en_place_given"] = min(1.5, strength)
        else:
            f["en_place"] = min(3.0, strength)
    if name.casefold() in gazetteers.companies():
        f["en_company"] = 1.0
    if len(words) == 2 and (
        words[-1].casefold() in gazetteers.family_names()
        or words[0].casefold() in gazetteers.family_names()  # Zhou Lei: family name first
    ):
        f["en_family"] = 1.0


# -- Chinese --------------------------------------------------------------------------------

_ORG_SUFFIXES_ZH = (
    "公司", "集团", "大学", "学院", "学校", "小学", "中学", "银行", "医院", "研究院", "研究所",
    "委员会", "协会", "基金会", "局", "部", "厅", "署", "航空", "汽车", "科技", "保险",
    "证券", "物流", "传媒", "国际", "博物馆", "科技馆", "图书馆", "电视台", "出版社",
    "事务所", "工作室", "俱乐部", "中心", "动力", "电气", "电子", "通信", "网络", "软件",
    "股份", "控股", "实业", "医疗", "药业", "食品", "能源", "地产", "时代", "实验室", "律所",
    "资本", "影业", "书店", "超市", "餐厅", "咖啡", "幼儿园", "联盟", "法院", "政府",
    "研究会", "游戏", "健身", "教育", "文化", "基金", "快递", "外卖", "酒店", "商城",
)  # fmt: skip
_PLACE_SUFFIXES_ZH = (
    "市", "省", "县", "区", "镇", "乡", "村", "路", "街", "巷", "道", "湾", "湖", "江", "河",
    "海", "山", "岛", "桥", "站", "机场", "公园", "广场", "古城", "景区", "大桥", "港",
    "州", "峡", "岭", "峰", "寺", "园", "城", "铁路", "大道", "高原", "盆地", "半岛", "小区",
    "胡同", "社区", "新区", "开发区",
)  # fmt: skip
_PRODUCT_SUFFIXES_ZH = ("手机", "手表", "手环", "系统", "App", "APP", "云", "支付", "地图",
                        "网盘", "会议", "音乐", "浏览器", "芯片", "大模型", "输入法", "耳机",
                        "电脑", "平板", "相机", "笔记", "助手", "文档", "视频", "阅读",
                        "Pro", "Max", "Plus", "Ultra", "Mini")  # fmt: skip
# What comes right before the name (the first that matches counts).
_LEFT_ZH: tuple[tuple[str, str, float], ...] = (
    ("住在", PLACE, 2.5), ("去", PLACE, 2.0), ("到", PLACE, 1.5), ("飞", PLACE, 2.0),
    ("回", PLACE, 1.5), ("来自", PLACE, 1.0), ("位于", PLACE, 2.5), ("老家是", PLACE, 2.0),
    ("搬到", PLACE, 2.5), ("定居", PLACE, 2.5), ("路过", PLACE, 2.0),
    ("在", PLACE, 0.8), ("从", PLACE, 0.8), ("用", PRODUCT, 2.0), ("使用", PRODUCT, 2.5),
    ("装了", PRODUCT, 2.5), ("下载了", PRODUCT, 2.5), ("用的是", PRODUCT, 2.5),
    ("升级", PRODUCT, 1.5), ("迁到", PRODUCT, 1.5), ("迁移到", PRODUCT, 1.5),
    ("换成", PRODUCT, 1.5), ("基于", PRODUCT, 2.0), ("接入", PRODUCT, 2.0),
    ("买了", PRODUCT, 2.0), ("打开", PRODUCT, 2.0), ("登录", PRODUCT, 2.0),
    ("卸载", PRODUCT, 2.5), ("刷", PRODUCT, 1.5), ("新款", PRODUCT, 2.0),
    ("的", PRODUCT, 1.1), ("台", PRODUCT, 1.5), ("辆", PRODUCT, 1.5), ("部", PRODUCT, 1.0),
    ("款", PRODUCT, 1.5), ("转给", PERSON, 1.5), ("给", PERSON, 1.0),
    ("客户", ORGANIZATION, 2.0), ("供应商", ORGANIZATION, 2.0),
    ("合作方", ORGANIZATION, 2.0), ("收购", ORGANIZATION, 2.0), ("投资了", ORGANIZATION, 2.0),
    ("加入", ORGANIZATION, 2.0), ("入职", ORGANIZATION, 2.5), ("跳槽到", ORGANIZATION, 2.5),
    ("辞职去", ORGANIZATION, 2.5), ("面试", ORGANIZATION, 2.0), ("签约", ORGANIZATION, 2.0),
    ("同事", PERSON, 1.5), ("朋友", PERSON, 1.5), ("老婆", PERSON, 2.0), ("老公", PERSON, 2.0),
    ("妈妈", PERSON, 1.5), ("爸爸", PERSON, 1.5), ("室友", PERSON, 2.0), ("领导", PERSON, 1.5),
    ("和", PERSON, 0.5), ("跟", PERSON, 0.8), ("请", PERSON, 1.0),
    ("问", PERSON, 1.0), ("告诉", PERSON, 1.5), ("让", PERSON, 0.8), ("叫", PERSON, 0.5),
    ("项目", OTHER, 2.0), ("活动", OTHER, 1.0),
)  # fmt: skip
# What comes right after it (the first that matches counts).
_RIGHT_ZH: tuple[tuple[str, str, float], ...] = (
    ("上班", ORGANIZATION, 3.0), ("工作", ORGANIZATION, 2.0), ("实习", ORGANIZATION, 3.0),
    ("任职", ORGANIZATION, 3.0),
    ("读", ORGANIZATION, 1.5), ("宣布", ORGANIZATION, 2.0), ("发布", ORGANIZATION, 1.5),
    ("推出", ORGANIZATION, 2.0), ("的股价", ORGANIZATION, 3.0), ("的销量", ORGANIZATION, 2.0),
    ("董事长", ORGANIZATION, 3.0), ("创始人", ORGANIZATION, 3.0), ("的员工", ORGANIZATION, 2.0),
    ("的面试", ORGANIZATION, 2.0), ("的offer", ORGANIZATION, 3.0), ("的审计", ORGANIZATION, 2.0),
    ("裁员", ORGANIZATION, 3.0), ("融资", ORGANIZATION, 2.5), ("上市", ORGANIZATION, 2.0),
    ("招聘", ORGANIZATION, 2.5), ("总裁", ORGANIZATION, 2.5), ("CEO", ORGANIZATION, 2.5),
    ("的门店", ORGANIZATION, 2.5), ("门店", ORGANIZATION, 2.0), ("的产品", ORGANIZATION, 2.0),
    ("的新品", ORGANIZATION, 2.0), ("的老板", ORGANIZATION, 1.5), ("旗下", ORGANIZATION, 2.5),
    ("出差", PLACE, 2.0), ("旅游", PLACE, 2.5), ("旅行", PLACE, 2.5), ("玩", PLACE, 1.0),
    ("开会", PLACE, 1.0), ("的酒店", PLACE, 2.0), ("的民宿", PLACE, 2.0), ("机房", PLACE, 2.0),
    ("数据中心", PLACE, 2.0), ("区域", PLACE, 2.0), ("分公司", PLACE, 2.0), ("总部", PLACE, 1.0),
    ("的天气", PLACE, 2.0), ("人", PLACE, 1.0), ("的房价", PLACE, 2.5), ("定居", PLACE, 2.0),
    ("说", PERSON, 2.0), ("表示", PERSON, 1.5),
    ("认为", PERSON, 1.5), ("觉得", PERSON, 1.5), ("告诉", PERSON, 1.5), ("问", PERSON, 1.0),
    ("负责", PERSON, 1.5), ("汇报", PERSON, 2.0), ("提出", PERSON, 1.5), ("建议", PERSON, 1.0),
    ("推荐", PERSON, 1.0), ("请假", PERSON, 2.5), ("休假", PERSON, 2.5), ("结婚", PERSON, 2.5),
    ("生病", PERSON, 2.5), ("怀孕", PERSON, 3.0), ("辞职", PERSON, 2.5), ("出席", PERSON, 1.5),
    ("生日", PERSON, 2.0), ("的生日", PERSON, 2.0), ("喜欢", PERSON, 1.5), ("想", PERSON, 1.0),
    ("的销售", ORGANIZATION, 2.0), ("的客服", ORGANIZATION, 2.0), ("的合同", ORGANIZATION, 1.5),
    ("的工单", ORGANIZATION, 1.5), ("的人", ORGANIZATION, 1.0), ("签", ORGANIZATION, 1.5),
    ("上", PRODUCT, 1.0), ("里", PRODUCT, 0.5), ("群", PRODUCT, 1.5), ("版本", PRODUCT, 2.0),
    ("的版本", PRODUCT, 2.0), ("升级", PRODUCT, 1.0), ("崩了", PRODUCT, 2.5),
    ("打卡", PRODUCT, 2.0), ("闪退", PRODUCT, 3.0), ("卡顿", PRODUCT, 2.5), ("会员", PRODUCT, 1.5),
    ("集群", PRODUCT, 2.5), ("数据库", PRODUCT, 2.0), ("的证书", PRODUCT, 1.0),
    ("上的", PRODUCT, 1.5), ("的授权", PRODUCT, 2.0), ("的账单", PRODUCT, 1.0),
    ("项目", OTHER, 2.0), ("计划", OTHER, 1.5), ("大会", OTHER, 2.0), ("活动", OTHER, 1.5),
)  # fmt: skip

_TECH_WORDS_ZH = (
    "部署", "服务器", "集群", "数据库", "脚本", "日志", "版本", "配置", "镜像", "接口", "代码",
    "监控", "告警", "升级", "迁移", "发版", "编译", "构建", "前端", "后端", "节点", "延迟",
    "流水线", "内存", "进程", "缓存", "限流", "证书", "bug", "网关", "打包", "测试环境",
)  # fmt: skip
# Titles after a name: 钟南山院士, 李老师 (when the finder did not join them).
_TITLES_AFTER_ZH = ("院士", "教授", "老师", "医生", "经理", "总监", "校长", "主任", "先生",
                    "女士", "同学", "师傅", "律师", "博士", "导演", "教练")  # fmt: skip


def is_technical(text: str) -> bool:
    """Text about software and machines: its unknown names lean to products."""
    if any(word in text for word in _TECH_WORDS_ZH):
        return True
    return bool({w.lower() for w in _WORDS.findall(text)} & _TECH_WORDS)


def _chinese_context(text: str, mention: Mention, f: Features) -> None:
    """The Chinese words around a name (a Chinese one, or a Latin one in Chinese text)."""
    name = mention.name
    before = text[max(0, mention.start - 4) : mention.start]
    after = text[mention.start + len(name) : mention.start + len(name) + 5]
    for cue, kind, weight in _LEFT_ZH:
        if before.endswith(cue):
            f[f"zh_left:{kind}"] = weight
            break
    for cue, kind, weight in _RIGHT_ZH:
        if after.startswith(cue):
            f[f"zh_right:{kind}"] = weight
            break
    if after.startswith(_TITLES_AFTER_ZH):
        f["zh_title_after"] = 1.0
    if before.endswith("在") and after.startswith(("做", "干")):
        f["zh_works_in"] = 1.0  # 在字节跳动做产品
    if before.endswith(("《", "“", "「")):
        f["zh_quoted"] = 1.0


def _chinese_features(text: str, mention: Mention, f: Features, surname: bool) -> None:
    name = mention.name
    _chinese_context(text, mention, f)
    if len(name) == 2 and (name[0] == name[1] or name[0] in "阿小"):
        f["zh_familiar"] = 1.0  # 娜娜, 阿琳, 小雅: how friends are named
    if name.endswith(_ORG_SUFFIXES_ZH) and len(name) > 2:
        f["zh_org_suffix"] = 1.0
    elif name.endswith(_PLACE_SUFFIXES_ZH) and len(name) > 1:
        f["zh_place_suffix"] = 1.0
    if name.endswith(_PRODUCT_SUFFIXES_ZH) and len(name) > 2:
        f["zh_product_suffix"] = 1.0
    population = gazetteers.places().get(name, 0)
    if population:
        # 桂林, 沈阳 start with a surname; a city of a million people is the likelier reading.
        f["zh_place"] = min(3.5, 1.0 + math.log10(max(population, 10_000) / 10_000))
    if surname and 2 <= len(name) <= 3:
        f["zh_surname"] = 1.0
    if len(name) >= 4:
        f["zh_long"] = 1.0


def _starts_with_surname(name: str, surnames: frozenset[str]) -> bool:
    return name[:1] in surnames or name[:2] in surnames


# -- Both -----------------------------------------------------------------------------------

_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


def mention_features(
    text: str, mention: Mention, *, surnames: frozenset[str], technical: bool = False
) -> Features:
    """The evidence about `mention` in `text`, as named features. `surnames`: Chinese
    surnames (a Han name that starts with none is rarely a person, whatever jieba's tag says);
    `technical`: the text is about software and machines (`is_technical`)."""
    f: Features = {}
    if _HAN.search(mention.name):
        f["zh"] = 1.0
        surname = _starts_with_surname(mention.name, surnames)
        if mention.base == PERSON and not surname:
            f["zh_base_weak_person"] = 1.0  # 乌龙茶, 凤凰, 比亚迪 are tagged nr
        else:
            f[f"zh_base:{mention.base}"] = 1.0
        _chinese_features(text, mention, f, surname)
        if technical:
            f["zh_technical"] = 1.0
    else:
        f["en"] = 1.0
        f[f"en_base:{mention.base}"] = 1.0
        _english_features(text, mention, f)
        if _HAN.search(text[max(0, mention.start - 1) : mention.start + len(mention.name) + 1]):
            f["latin_in_zh"] = 1.0
            _chinese_context(text, mention, f)
        if technical:
            f["en_technical"] = 1.0
    return f


def _joined(text: str, first: Mention, second: Mention) -> bool:
    """`first` and `second` are named together as a list: "A, B", "A and B", "A、B", "A和B"."""
    gap = text[first.start + len(first.name) : second.start]
    return bool(re.fullmatch(r"\s*(?:,|、|/|&|and|or|和|及|以及|或)\s*", gap))


def list_neighbours(text: str, mentions: list[Mention], index: int) -> list[int]:
    """The mentions next to mentions[index] that are named with it as a list."""
    found = []
    for other in (index - 1, index + 1):
        if 0 <= other < len(mentions):
            pair = sorted((mentions[index], mentions[other]), key=lambda m: m.start)
            if _joined(text, pair[0], pair[1]):
                found.append(other)
    return found


@cache
def model() -> dict[str, Any]:
    """The fitted weights: {"own": {"bias": [..], "weights": {feature: [..]}}, "final": ...},
    one number per type of TYPES."""
    fitted: dict[str, Any] = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    return fitted


def probabilities(features: Features, stage: dict[str, Any]) -> list[float]:
    """The softmax of one stage's scores for `features`, in the order of TYPES."""
    scores = list(stage["bias"])
    weights = stage["weights"]
    for name, value in features.items():
        row = weights.get(name)
        if row is not None:
            for k in range(len(scores)):
                scores[k] += value * row[k]
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def list_features(neighbour_probabilities: list[list[float]]) -> Features:
    """What the names listed beside a name say of it: their summed probabilities per type."""
    f: Features = defaultdict(float)
    for probs in neighbour_probabilities:
        for kind, p in zip(TYPES, probs, strict=True):
            f[f"list:{kind}"] += p
    return dict(f)


# The features of a Han name with no evidence but jieba's person tag, which no surname backs.
_DOUBTFUL_ONLY = frozenset({"zh", "zh_base_weak_person", "zh_technical"})


def settle_types(text: str, mentions: list[Mention], *, surnames: frozenset[str]) -> list[str]:
    """The type of each mention (in text order). A sure mention keeps the finder's type; the
    others get the likeliest type by the fitted model, names in one list ("Lena, Matteo,
    Sofia", "昆明和贵阳") reading each other's probabilities as evidence."""
    if all(m.sure for m in mentions):
        return [m.base for m in mentions]
    fitted = model()
    technical = is_technical(text)
    own_features = [
        {} if m.sure else mention_features(text, m, surnames=surnames, technical=technical)
        for m in mentions
    ]
    own = [
        [1.0 if kind == m.base else 0.0 for kind in TYPES]
        if m.sure
        else probabilities(features, fitted["own"])
        for m, features in zip(mentions, own_features, strict=True)
    ]
    settled = []
    for index, mention in enumerate(mentions):
        if mention.sure:
            settled.append(mention.base)
            continue
        neighbours = list_neighbours(text, mentions, index)
        if not neighbours and own_features[index].keys() <= _DOUBTFUL_ONLY:
            # A Chinese word whose only evidence is jieba's doubtful person tag (乌龙茶).
            settled.append(OTHER)
            continue
        probs = own[index]
        if neighbours:
            features = own_features[index] | list_features([own[i] for i in neighbours])
            probs = probabilities(features, fitted["final"])
        settled.append(TYPES[max(range(len(TYPES)), key=probs.__getitem__)])
    return settled
