"""Pairs of opposite words (likes / hates, passed / failed, 涨 / 跌, 赞成 / 反对): one on each
side of a pair of statements is a flip of meaning without a negation.

The lists: `opposites_en.txt` (the direct antonyms of WordNet 3.0's verbs, adjectives and
adverbs, single words, under WordNet's licence in `WORDNET_LICENSE.txt`, and everyday opposites
it lacks) and `opposites_zh.txt` (common Chinese opposites, written for the project), beside the
few written into this module first. English words are compared by a rough root (loves, loved
and loving are one word); a Chinese word also by the words inside it (涨价 / 降价, 很暖 / 很冷).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

from facts.statements import _stem

_HERE = Path(__file__).parent
FILES = (_HERE / "opposites_en.txt", _HERE / "opposites_zh.txt")

_EN = """like hate|love hate|like dislike|enjoy hate|love dislike|open closed|open close
|open shut|left right|agree disagree|approve reject|accept refuse|accept reject|accept decline
|win lose|won lost|beat lost|increase decrease|increased decreased|raise lower|raised lowered
|true false|early late|earlier later|before after|always never|married single|present absent
|pass fail|passed failed|succeed fail|succeeded failed|success failure|allow forbid
|allowed forbidden|on off|support oppose|enabled disabled|enable disable|public private
|cheap expensive|short long|hot cold|warm cold|easy hard|easy difficult|synchronous asynchronous
|works broken|working broken|introvert extrovert|junior senior|valid invalid|online offline
|friendly hostile|crowded empty|full empty|green red|alive dead|near far|close far
|ahead behind|up down|positive negative|older younger|taller shorter|faster slower|more less
|higher lower|bigger smaller|larger smaller|heavier lighter|best worst|better worse|first last
|inside outside|legal illegal|possible impossible|safe unsafe|healthy sick|rich poor|old new
|light dark|wet dry|like hates|loves hates|likes dislikes|likes hates|arrived left"""
_ZH = """喜欢 讨厌|爱 讨厌|同意 反对|支持 反对|批准 拒绝|接受 拒绝|通过 否决
|赢 输|增加 减少|开门 关门
|开着 关着|开 关|打开 关闭|左撇子 右撇子|左手 右手|早 晚|有空 没空|上班 休假|真 假|已婚 未婚
|单身 已婚|单身 结婚|允许 禁止|成功 失败|暖 冷|热 冷|便宜 贵|短 长|多 少|公开 私有
|前 后|简单 难|同步 异步|好 坏|内向 外向|初级 高级|有效 无效|在线 离线|提高 降低|友好 凶
|上坡 下坡|近 远|提前 落后|阳性 阴性|大 小|高 矮|快 慢|胖 瘦|新 旧|对 错
|安全 危险|健康 生病|合法 违法|首 末|最早 最晚"""

# Past forms a light stemmer does not bring back to their verb.
_IRREGULAR = dict(
    pair.split()
    for pair in """won win|lost lose|sold sell|bought buy|left leave|gave give|took take
    |rose rise|fell fall|began begin|went go|came come|got get|kept keep|sent send|lent lend
    |borrowed borrow|found find|hid hide|held hold|led lead|met meet|paid pay|spent spend
    |stood stand|sat sit|slept sleep|woke wake|wrote write|broke break|drove drive|flew fly
    |forgot forget|grew grow|knew know|made make|ran run|sang sing|swam swim|taught teach
    |thought think|threw throw|wore wear|brought bring|caught catch|felt feel|heard hear
    |shut shut|hung hang|froze freeze|chose choose|built build|dealt deal|fought fight
    |forgave forgive|bent bend|shrank shrink|sank sink|struck strike|tore tear""".replace(
        "\n", ""
    ).split("|")
)


def root(word: str) -> str:
    """A rough root of an English word, so that loves / loved / loving, hates / hated and
    stops / stopped meet (after `facts.statements._stem`, which statements' words went
    through already)."""
    word = _IRREGULAR.get(word, word)
    word = _stem(word)
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def _pairs(text: str, sep: str) -> Iterable[tuple[str, str]]:
    for line in text.replace("\n", "").split(sep) if sep == "|" else text.splitlines():
        parts = line.split("#")[0].split()
        if len(parts) == 2 and parts[0] != parts[1]:
            yield parts[0], parts[1]


def _latin(word: str) -> bool:
    return word.isascii()


@cache
def table() -> dict[str, frozenset[str]]:
    """Each word (English: its root) and the words opposite to it."""
    found: dict[str, set[str]] = {}
    sources = [_pairs(_EN, "|"), _pairs(_ZH, "|")]
    sources += [_pairs(f.read_text(encoding="utf-8"), "\n") for f in FILES if f.is_file()]
    for source in sources:
        for x, y in source:
            if _latin(x) != _latin(y):
                continue
            kx, ky = (root(x), root(y)) if _latin(x) else (x, y)
            if kx != ky:
                found.setdefault(kx, set()).add(ky)
                found.setdefault(ky, set()).add(kx)
    return {k: frozenset(v) for k, v in found.items()}


# Characters that leave the other one of a two-character word its meaning (很暖, 开着, 涨了).
_LIGHT = frozenset("很太挺蛮超更较最真好了着过的得")


def _keys(word: str) -> set[str]:
    """The keys a word is looked up by: an English word's root; a Chinese word, the words of
    two to four characters inside it and, in a word of two characters of which one is light
    (很, 了, 着), the other."""
    if word.isascii():
        return {root(word)}
    keys = {word}
    n = len(word)
    for size in range(2, min(4, n - 1) + 1):
        keys.update(word[i : i + size] for i in range(n - size + 1))
    if n == 2 and word[1] in _LIGHT:
        keys.add(word[0])  # 开着 / 关着, 涨了 / 跌了; not 开心 / 关心
    elif n == 2 and word[0] in _LIGHT:
        keys.add(word[1])  # 很暖 / 很冷
    return keys


def opposite(only_a: Iterable[str], only_b: Iterable[str]) -> bool:
    """Whether a word that only one side has is opposite to a word that only the other has."""
    opposites = table()
    keys_b: set[str] = set()
    for word in only_b:
        keys_b |= _keys(word)
    for word in only_a:
        for key in _keys(word):
            if key in opposites and not opposites[key].isdisjoint(keys_b):
                return True
    return False
