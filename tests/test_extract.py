"""The default entity extractor (facts.extract): real sentences in, names and types out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from facts.entities import FoundEntity
from facts.extract import extract_entities


def found(text: str) -> dict[str, str]:
    """name -> type, in the extractor's order."""
    return {e.name: e.type for e in extract_entities(text)}


# -- Chinese ---------------------------------------------------------------------------------


def test_chinese_familiar_name_and_place():
    assert found("老王下周三去上海出差") == {"老王": "person", "上海": "place"}


@pytest.mark.parametrize(
    ("text", "person"),
    [
        ("小李和王总在北京开会", "小李"),
        ("小李和王总在北京开会", "王总"),
        ("张经理明天去开会", "张经理"),
        ("李老师今天不在", "李老师"),
        ("和老刘、小周一起去", "老刘"),
        ("和老刘、小周一起去", "小周"),
        ("帮我记一下：周五下午三点和陈总开会", "陈总"),
    ],
)
def test_chinese_prefix_and_title_forms_are_people(text: str, person: str):
    assert found(text).get(person) == "person"


@pytest.mark.parametrize(
    ("text", "person"),
    [
        ("刘德华和张学友是朋友", "刘德华"),
        ("我的同事陈思远喜欢爬山", "陈思远"),  # not in jieba's dictionary
        ("昨天跟赵磊吃饭了", "赵磊"),
        ("我女儿林小雨今年六岁", "林小雨"),
    ],
)
def test_chinese_full_names(text: str, person: str):
    assert found(text).get(person) == "person"


def test_chinese_organisations_and_places():
    assert found("我和李明在清华大学见面") == {"李明": "person", "清华大学": "organization"}
    assert found("下个月去日本旅游，先到东京再去大阪") == {
        "日本": "place",
        "东京": "place",
        "大阪": "place",
    }
    assert found("他在谷歌工作，以前在微软") == {"谷歌": "organization", "微软": "organization"}


@pytest.mark.parametrize(
    "text",
    [
        "一张经理的名片",  # 张 is "sheet" after a numeral
        "我一个小时后到",  # 小时 is "hour", not 小 + surname 时
        "我觉得这个东西很普通",  # jieba tags 东西/普通 as proper nouns
        "今天天气很好，我们去公园玩了",
        "王说他不来了",  # a bare surname and a verb are not a name
        "我昨天跟老婆吵架了",
    ],
)
def test_chinese_ordinary_sentences_name_nothing(text: str):
    assert extract_entities(text) == []


def test_chinese_book_titles_and_quoted_project_names():
    assert found("我在读《三体》，还有“北极星”项目") == {"三体": "other", "北极星": "other"}
    # Quotes alone are emphasis or speech, not a name.
    assert found("他说“好的”") == {}


# -- English ---------------------------------------------------------------------------------


def test_speaker_and_people_mentioned():
    names = found("Caroline: I went to the LGBTQ support group with Melanie")
    assert names["Caroline"] == "person"
    assert "Melanie" in names
    assert "I" not in names


def test_sentence_initial_words_weekdays_and_months_are_not_names():
    assert extract_entities("The meeting is on Monday") == []
    assert extract_entities("Yesterday we met in May.") == []
    assert found("Yesterday I met Bob.") == {"Bob": "person"}


def test_possessive_quoted_name_and_organisation():
    assert found("Alice's project 'Northstar' ships at Acme Corp") == {
        "Alice": "person",
        "Northstar": "other",
        "Acme Corp": "organization",
    }


def test_multi_word_names_titles_and_designators():
    assert found("Yesterday I met Dr. Smith at the University of Tokyo.") == {
        "Dr. Smith": "person",
        "University of Tokyo": "organization",
    }
    assert found("Actually, Bob works at Bank of America in New York City.") == {
        "Bob": "person",
        "Bank of America": "organization",
        "New York City": "place",
    }
    assert found("Johnson & Johnson bought Acme, Inc. last year") == {
        "Johnson & Johnson": "organization",
        "Acme Inc": "organization",
    }


def test_curly_and_double_quotes():
    assert "Northstar" in found("We call it “Northstar” internally")
    assert found('Melanie: I told James\' sister about the "Blue Moon" cafe.') == {
        "Melanie": "person",
        "James": "person",
        "Blue Moon": "organization",
    }
    # A quoted sentence is speech, not a name.
    assert found("she said 'we are late, sorry'") == {}


def test_labels_contractions_and_shouting_are_not_names():
    assert extract_entities("Note: buy milk") == []
    assert extract_entities("User: what's the plan?") == []
    assert found("Don't forget to call Tom's mom") == {"Tom": "person"}
    assert extract_entities("I LOVE THIS AND WE WILL GO THERE AGAIN") == []


def test_sentence_initial_word_also_used_in_lower_case_is_not_a_name():
    assert found("Running is fun and I like running with Emily") == {"Emily": "person"}


def test_mixed_chinese_and_english():
    assert found("Alice和老王在New York见面") == {
        "Alice": "person",
        "老王": "person",
        "New York": "place",
    }


# -- Both ------------------------------------------------------------------------------------


def test_first_entity_is_the_subject_and_duplicates_collapse():
    entities = extract_entities("Paris is nice. I love Paris, and Alice loves PARIS.")
    assert [(e.name, e.role) for e in entities] == [("Paris", "subject"), ("Alice", "context")]


def test_a_clearer_later_mention_settles_the_type():
    assert found("Alice called. Later Alice's brother came.") == {"Alice": "person"}


@pytest.mark.parametrize(
    "text",
    ["", "   ", "\n\t", "😀🎉", "\x00\x01\x1b[31m", "\ud800 lone surrogate", "'" * 50, "《》“”"],
)
def test_odd_input_gives_a_list(text: str):
    result = extract_entities(text)
    assert isinstance(result, list)
    assert all(e.name.strip() for e in result)


def test_very_long_text():
    text = "老王下周三去上海出差。Alice's project 'Northstar' ships at Acme Corp. " * 2000
    names = found(text)
    assert names["老王"] == "person"
    assert names["Acme Corp"] == "organization"


_pieces = st.sampled_from(
    [
        "老王",
        "小",
        "张",
        "经理",
        "上海",
        "《",
        "》",
        "“",
        "”",
        "'",
        '"',
        "’s",
        "'s",
        ": ",
        "：",
        "Dr.",
        " ",
        "\n",
        "Alice",
        "New",
        "of",
        "Corp",
        ", Inc.",
        "&",
        "I",
        "The",
        "Monday",
    ]
)
_texts = st.one_of(
    st.text(),
    st.lists(st.one_of(_pieces, st.text(max_size=3)), max_size=30).map("".join),
)


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_any_text_gives_found_entities_with_names(text: str):
    result = extract_entities(text)
    assert isinstance(result, list)
    assert all(isinstance(e, FoundEntity) and e.name.strip() for e in result)
    keys = [e.name.casefold() for e in result]
    assert len(keys) == len(set(keys))
    assert [e.role for e in result[:1]] in ([], ["subject"])
    assert all(e.role == "context" for e in result[1:])
