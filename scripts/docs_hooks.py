"""MkDocs hooks (mkdocs.yml `hooks:`), run at build time, offline.

- The API reference: one page per tag of the operations in tests/data/openapi.json (the schema
  that tests/test_openapi_schema.py keeps equal to the live one), and a page of its schemas,
  added to the nav under "API". The API is described once, in the code; these pages only
  render it (each operation with its parameters, request body, responses and examples).
- README.md's links: every relative link must name a file of the repository, and a link into
  docs/ with an anchor must find that anchor in the built page (the strict build fails).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.docs")

SCHEMA = Path("tests/data/openapi.json")
API_DIR = "api"
API_NAV_TITLE = "API"
METHODS = ("get", "post", "put", "patch", "delete")
# The tags in the order a reader meets them; a tag not named here follows, by name.
TAG_ORDER = (
    "facts",
    "recall",
    "entities",
    "conflicts",
    "retention",
    "bundles",
    "audit",
    "tenants",
    "members",
    "api keys",
    "agent",
)
TAG_TITLES = {"api keys": "API keys", "audit": "Audit log", "agent": "Agent endpoints"}
KEY_TENANT_PREFIX = "/api/v1/tenants/{tenant}"


@dataclass
class Operation:
    method: str
    path: str
    spec: dict[str, Any]
    # The same operation at /api/v1/..., for an API key's own tenant.
    twin: str | None = None


@dataclass
class Api:
    schema: dict[str, Any]
    tags: dict[str, list[Operation]] = field(default_factory=dict)

    def ordered_tags(self) -> list[str]:
        known = [tag for tag in TAG_ORDER if tag in self.tags]
        return known + sorted(tag for tag in self.tags if tag not in TAG_ORDER)


def _slug(tag: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", tag.lower()).strip("-")


def _title(tag: str) -> str:
    return TAG_TITLES.get(tag, tag[:1].upper() + tag[1:])


def _without(spec: dict[str, Any], *keys: str) -> dict[str, Any]:
    trimmed = {k: v for k, v in spec.items() if k not in keys}
    trimmed["parameters"] = [p for p in spec.get("parameters", []) if p.get("name") != "tenant"]
    return trimmed


def load_api(path: Path) -> Api:
    """The schema's operations by tag; an operation answering both under /api/v1/tenants/{tenant}/
    and, for a key's own tenant, under /api/v1/ is listed once, with its twin path."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    paths: dict[str, dict[str, Any]] = schema["paths"]
    api = Api(schema=schema)
    twins: set[tuple[str, str]] = set()
    for route, item in paths.items():
        if not route.startswith(KEY_TENANT_PREFIX):
            continue
        short = "/api/v1" + route[len(KEY_TENANT_PREFIX) :]
        for method in METHODS:
            own, other = item.get(method), paths.get(short, {}).get(method)
            if own and other and _without(own, "operationId") == _without(other, "operationId"):
                twins.add((method, short))
    for route, item in paths.items():
        for method in METHODS:
            spec = item.get(method)
            if spec is None or (method, route) in twins:
                continue
            twin = None
            if route.startswith(KEY_TENANT_PREFIX):
                short = "/api/v1" + route[len(KEY_TENANT_PREFIX) :]
                twin = short if (method, short) in twins else None
            operation = Operation(method=method, path=route, spec=spec, twin=twin)
            for tag in spec.get("tags", ["other"]):
                api.tags.setdefault(tag, []).append(operation)
    return api


# -- rendering ------------------------------------------------------------------------------


def _cell(text: object) -> str:
    """Text for one line (a table cell, a heading): a list's items on lines of their own."""
    lead, *items = re.split(r"(?:^|\n)\s*[*-] ", str(text).strip())
    lines = [lead] + [f"• {item}" for item in items]
    return "<br>".join(" ".join(line.split()).replace("|", "\\|") for line in lines if line.strip())


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _schema_link(name: str, here: str) -> str:
    target = "" if here == "schemas.md" else "schemas.md"
    return f"[{name}]({target}#schema-{name})"


def type_of(spec: dict[str, Any], here: str) -> str:
    """A schema's type in a few words, each named schema a link to its entry."""
    if "$ref" in spec:
        return _schema_link(_ref_name(spec["$ref"]), here)
    for combiner, word in (("allOf", " and "), ("oneOf", " or "), ("anyOf", " or ")):
        if combiner in spec:
            text = word.join(type_of(part, here) for part in spec[combiner])
            return text + (" or null" if spec.get("nullable") else "")
    kind = spec.get("type", "any")
    if kind == "array":
        text = f"array of {type_of(spec.get('items', {}), here)}"
    elif kind == "object" and isinstance(spec.get("additionalProperties"), dict):
        values = spec["additionalProperties"]
        text = f"object of {type_of(values, here)}" if values else "object"
    else:
        text = kind
    if spec.get("format"):
        text += f" ({spec['format']})"
    return text + (" or null" if spec.get("nullable") else "")


def _constraints(spec: dict[str, Any]) -> str:
    notes = []
    if "enum" in spec:
        notes.append("one of " + ", ".join(f"`{json.dumps(v)}`" for v in spec["enum"]))
    for key, word in (
        ("minLength", "at least {} character(s)"),
        ("maxLength", "at most {} character(s)"),
        ("minimum", "from {}"),
        ("maximum", "to {}"),
        ("minItems", "at least {} item(s)"),
        ("maxItems", "at most {} item(s)"),
        ("pattern", "matching `{}`"),
    ):
        if key in spec:
            notes.append(word.format(spec[key]))
    if "default" in spec:
        notes.append(f"default `{json.dumps(spec['default'], ensure_ascii=False)}`")
    if spec.get("readOnly"):
        notes.append("read-only")
    return "; ".join(notes)


def _resolve(api: Api, spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in spec:
        spec = api.schema["components"]["schemas"][_ref_name(spec["$ref"])]
    return spec


def fields_table(api: Api, spec: dict[str, Any], here: str) -> list[str]:
    """The properties of an object schema as a table (empty for anything else)."""
    spec = _resolve(api, spec)
    properties = spec.get("properties")
    if not properties:
        return []
    required = set(spec.get("required", []))
    rows = ["| field | type | required | description |", "|---|---|---|---|"]
    for name, prop in properties.items():
        about = "; ".join(p for p in (prop.get("description", ""), _constraints(prop)) if p)
        yes = "yes" if name in required else ""
        rows.append(f"| `{name}` | {_cell(type_of(prop, here))} | {yes} | {_cell(about)} |")
    return rows


def _examples(media: dict[str, Any]) -> list[tuple[str, Any]]:
    if "examples" in media:
        return [
            (ex.get("summary", name), ex.get("value")) for name, ex in media["examples"].items()
        ]
    if "example" in media:
        return [("example", media["example"])]
    return []


def _example_block(title: str, content_type: str, value: Any) -> list[str]:
    if isinstance(value, str):
        body, lang = value.rstrip("\n"), "text"
    else:
        body, lang = json.dumps(value, indent=2, ensure_ascii=False), "json"
    label = f"Example ({_cell(title)}, `{content_type}`)"
    return [f'??? example "{label}"', "", f"    ```{lang}", *_indent(body), "    ```", ""]


def _indent(text: str) -> list[str]:
    return [("    " + line) if line else "" for line in text.split("\n")]


def _parameters(spec: dict[str, Any], here: str) -> list[str]:
    params = spec.get("parameters", [])
    if not params:
        return []
    rows = ["**Parameters**", "", "| name | in | type | required | description |"]
    rows.append("|---|---|---|---|---|")
    for p in params:
        schema = p.get("schema", {})
        about = "; ".join(x for x in (p.get("description", ""), _constraints(schema)) if x)
        yes = "yes" if p.get("required") else ""
        kind = _cell(type_of(schema, here))
        rows.append(f"| `{p['name']}` | {p['in']} | {kind} | {yes} | {_cell(about)} |")
    return [*rows, ""]


def _request_body(api: Api, spec: dict[str, Any], here: str) -> list[str]:
    body = spec.get("requestBody")
    if not body:
        return []
    lines = ["**Request body**" + (" (required)" if body.get("required") else ""), ""]
    for content_type, media in body.get("content", {}).items():
        schema = media.get("schema", {})
        lines += [f"`{content_type}`: {type_of(schema, here)}", ""]
        table = fields_table(api, schema, here)
        lines += [*table, ""] if table else []
        for title, value in _examples(media):
            lines += _example_block(title, content_type, value)
    return lines


def _responses(spec: dict[str, Any], here: str) -> list[str]:
    lines = ["**Responses**", "", "| status | meaning | body |", "|---|---|---|"]
    shown: list[str] = []
    for status, response in spec.get("responses", {}).items():
        bodies = [
            f"`{ct}`: {type_of(media.get('schema', {}), here)}"
            for ct, media in response.get("content", {}).items()
        ]
        meaning = response.get("description", "")
        lines.append(f"| {status} | {_cell(meaning)} | {_cell('; '.join(bodies))} |")
        if status.startswith("2"):
            for content_type, media in response.get("content", {}).items():
                for title, value in _examples(media):
                    shown += _example_block(f"{status}, {title}", content_type, value)
    return [*lines, "", *shown]


def _security(api: Api, spec: dict[str, Any]) -> list[str]:
    schemes = api.schema.get("components", {}).get("securitySchemes", {})
    names = [name for requirement in spec.get("security", []) for name in requirement]
    words = {"apiKey": "an API key", "cookieAuth": "a signed-in session"}
    known = [words.get(n, f"`{n}`") for n in dict.fromkeys(names) if n in schemes]
    if not names:
        return []
    if not known:
        return ["**Authentication:** none.", ""]
    return ["**Authentication:** " + " or ".join(known) + ".", ""]


def operation_markdown(api: Api, op: Operation, here: str) -> list[str]:
    spec = op.spec
    anchor = spec.get("operationId", f"{op.method}-{_slug(op.path)}")
    title = _cell(spec.get("summary") or f"{op.method.upper()} {op.path}")
    lines = [f"## {title} {{#{anchor}}}", "", f"`{op.method.upper()} {op.path}`", ""]
    if op.twin:
        lines += [f"Also at `{op.twin}`, for an API key's own tenant.", ""]
    if spec.get("description"):
        lines += [spec["description"], ""]
    lines += _security(api, spec)
    lines += _parameters(spec, here)
    lines += _request_body(api, spec, here)
    lines += _responses(spec, here)
    return lines


def tag_page(api: Api, tag: str) -> str:
    here = f"{_slug(tag)}.md"
    ops = api.tags[tag]
    lines = [
        f"# {_title(tag)}",
        "",
        f"The {len(ops)} operations tagged *{tag}* in the API's OpenAPI schema, rendered from it "
        "when the site is built (see the [overview](index.md) for keys, errors and limits).",
        "",
    ]
    for op in ops:
        lines += operation_markdown(api, op, here)
    return "\n".join(lines) + "\n"


def schemas_page(api: Api) -> str:
    schemas = api.schema.get("components", {}).get("schemas", {})
    lines = [
        "# Schemas",
        "",
        "The request and response bodies of the [API](index.md), from its OpenAPI schema.",
        "",
    ]
    for name in sorted(schemas):
        spec = schemas[name]
        lines += [f"## {name} {{#schema-{name}}}", ""]
        if spec.get("description"):
            lines += [_cell(spec["description"]), ""]
        table = fields_table(api, spec, "schemas.md")
        if table:
            lines += [*table, ""]
        else:
            about = _constraints(spec)
            lines += [f"{type_of(spec, 'schemas.md')}" + (f": {about}" if about else ""), ""]
    return "\n".join(lines) + "\n"


def api_pages(api: Api) -> dict[str, str]:
    """Markdown of each generated page, by its path under docs/."""
    pages = {f"{API_DIR}/{_slug(tag)}.md": tag_page(api, tag) for tag in api.ordered_tags()}
    pages[f"{API_DIR}/schemas.md"] = schemas_page(api)
    return pages


# -- MkDocs hooks ---------------------------------------------------------------------------

_state: dict[str, Any] = {"anchors": {}}


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    # Material's search cuts Chinese text into words with jieba (one of our dependencies) when it
    # is installed; its messages on loading the dictionary are not the build's.
    try:
        import jieba

        jieba.setLogLevel(logging.WARNING)
    except ImportError:
        pass
    api = load_api(_root(config) / SCHEMA)
    _state["api"] = api
    entries = [{_title(tag): f"{API_DIR}/{_slug(tag)}.md"} for tag in api.ordered_tags()]
    entries.append({"Schemas": f"{API_DIR}/schemas.md"})
    for item in config.nav or []:
        if isinstance(item, dict) and API_NAV_TITLE in item:
            item[API_NAV_TITLE] = list(item[API_NAV_TITLE]) + entries
            break
    else:
        log.warning("mkdocs.yml: no nav section %r for the API reference", API_NAV_TITLE)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, content in api_pages(_state["api"]).items():
        files.append(File.generated(config, path, content=content))
    return files


_ID = re.compile(r"""\bid=["']([^"']+)["']""")


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    _state["anchors"][page.file.src_uri] = set(_ID.findall(html))
    return html


_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def readme_problems(root: Path, anchors: dict[str, set[str]]) -> list[str]:
    """Every relative link of README.md that names no file, or an anchor its page lacks."""
    problems = []
    text = (root / "README.md").read_text(encoding="utf-8")
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path, _, anchor = target.partition("#")
        if not (root / path).exists():
            problems.append(f"README.md links to '{target}': there is no {path}")
            continue
        if anchor and path.startswith("docs/"):
            page = path[len("docs/") :]
            if anchor not in anchors.get(page, set()):
                problems.append(f"README.md links to '{target}': {path} has no anchor #{anchor}")
    return problems


def on_post_build(config: MkDocsConfig) -> None:
    for problem in readme_problems(_root(config), _state["anchors"]):
        log.warning(problem)
