"""Bundles: the one file format for archives, exports and backups.

A bundle is three files sharing a stem, in one folder:
- `<stem>.dat`: the records, each a zlib-compressed JSON object, appended one after another;
- `<stem>.idx`: JSON Lines, one entry per record: its number, type, id, offset and length in
  the data file, the CRC32 of its compressed bytes and a little metadata (scope, status);
- `<stem>.manifest.json`: format and version, tenant, scope, embedding model, counts per record
  type, the size and SHA-256 of the other two files, and `checksum`: the SHA-256 of every other
  field of the manifest (its canonical JSON), so no field of it can change unnoticed.

Files are written under temporary names, fsynced, and renamed; the manifest goes last, so a
bundle without a manifest is one that was never finished, and readers ignore it. Reading
checks the manifest (its fields' types and its checksum), then every record's position and
CRC32 (naming the first bad record), then the files' SHA-256: a damaged bundle is refused before
anything is read from it. Version 1 manifests (written before the manifest had its checksum)
are read still, without one; a version 1 manifest that carries a checksum is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

FORMAT = "mnemosyne-bundle"
VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: no manifest checksum
RECORD_TYPES = ("fact", "entity", "fact_entity", "feedback", "event", "vector")
_SUFFIXES = (".dat", ".idx", ".manifest.json")


class BundleError(Exception):
    """A bundle that cannot be trusted; `record` names the first bad record when one is."""

    def __init__(self, message: str, record: str | None = None) -> None:
        super().__init__(message if record is None else f"{record}: {message}")
        self.record = record


@dataclass(frozen=True)
class BundleRecord:
    type: str
    id: int | str
    body: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)
    number: int = -1  # its place in the bundle, when read from one

    @property
    def label(self) -> str:
        return _record_label(self.number, self.type, self.id)


@dataclass(frozen=True)
class Manifest:
    tenant: str
    scope: str
    model: str
    purpose: str  # "archive" | "export"
    counts: dict[str, int]
    created_at: str
    files: dict[str, dict[str, Any]]
    extra: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        fields = self.fields()
        return fields | {"checksum": manifest_checksum(fields)}

    def fields(self) -> dict[str, Any]:
        """Every field but the checksum, which covers them all."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "tenant": self.tenant,
            "scope": self.scope,
            "model": self.model,
            "purpose": self.purpose,
            "counts": self.counts,
            "created_at": self.created_at,
            "files": self.files,
            "extra": self.extra,
        }


def manifest_checksum(fields: dict[str, Any]) -> str:
    """The SHA-256 of a manifest's fields (all but `checksum`), as canonical JSON."""
    canonical = json.dumps(fields, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def bundle_paths(stem: Path) -> tuple[Path, Path, Path]:
    """The data, index and manifest files of the bundle at `stem` (a path without suffix)."""
    return (
        stem.with_name(stem.name + ".dat"),
        stem.with_name(stem.name + ".idx"),
        stem.with_name(stem.name + ".manifest.json"),
    )


def bundle_stem(path: Path | str) -> Path:
    """The stem of a bundle given as its stem or as any of its three files."""
    path = Path(path)
    for suffix in _SUFFIXES:
        if path.name.endswith(suffix):
            return path.with_name(path.name[: -len(suffix)])
    return path


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _json(text: str | bytes) -> Any:
    """Strict JSON: NaN and Infinity, which Python's parser takes and PostgreSQL's refuses,
    are refused."""
    return json.loads(text, parse_constant=_refuse_constant)


def _record_label(number: int, kind: str, ident: Any) -> str:
    return f"record {number} ({kind} {ident})"


def _write_records(
    records: Iterable[BundleRecord], data: BinaryIO, index: BinaryIO
) -> tuple[dict[str, int], int, str, str]:
    """Each record compressed into `data` and its index line into `index`, both then synced to
    disk: the count of each record type, the data's size and the two files' SHA-256."""
    counts = dict.fromkeys(RECORD_TYPES, 0)
    data_hash, index_hash = hashlib.sha256(), hashlib.sha256()
    offset = 0
    for number, record in enumerate(records):
        if record.type not in counts:
            raise ValueError(f"unknown record type {record.type!r}")
        blob = zlib.compress(
            json.dumps(record.body, ensure_ascii=False, separators=(",", ":")).encode(), 6
        )
        entry = {
            "n": number, "type": record.type, "id": record.id, "offset": offset,
            "length": len(blob), "crc32": zlib.crc32(blob), "meta": record.meta,
        }  # fmt: skip
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode()
        data.write(blob)
        index.write(line)
        data_hash.update(blob)
        index_hash.update(line)
        offset += len(blob)
        counts[record.type] += 1
    for handle in (data, index):
        handle.flush()
        os.fsync(handle.fileno())
    return counts, offset, data_hash.hexdigest(), index_hash.hexdigest()


def bundle_write(
    *,
    stem: Path,
    records: Iterable[BundleRecord],
    tenant: str,
    scope: str = "",
    model: str = "",
    purpose: str = "export",
    extra: dict[str, Any] | None = None,
) -> Manifest:
    """Write a bundle atomically (temporary names, fsync, rename; the manifest last)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    data_path, index_path, manifest_path = bundle_paths(stem)
    temporary = [p.with_name(p.name + f".tmp{os.getpid()}") for p in (data_path, index_path)]
    try:
        with temporary[0].open("wb") as data, temporary[1].open("wb") as index:
            counts, offset, data_sha256, index_sha256 = _write_records(records, data, index)
        manifest = Manifest(
            tenant=tenant,
            scope=scope,
            model=model,
            purpose=purpose,
            counts={k: v for k, v in counts.items() if v},
            created_at=datetime.now(UTC).isoformat(),
            files={
                "data": {"name": data_path.name, "size": offset, "sha256": data_sha256},
                "index": {
                    "name": index_path.name,
                    "size": temporary[1].stat().st_size,
                    "sha256": index_sha256,
                },
            },
            extra=extra or {},
        )
        manifest_tmp = manifest_path.with_name(manifest_path.name + f".tmp{os.getpid()}")
        with manifest_tmp.open("w", encoding="utf-8") as manifest_file:
            json.dump(manifest.as_json(), manifest_file, ensure_ascii=False, indent=1)
            manifest_file.flush()
            os.fsync(manifest_file.fileno())
        os.replace(temporary[0], data_path)
        os.replace(temporary[1], index_path)
        os.replace(manifest_tmp, manifest_path)  # the commit point
        _fsync_dir(stem.parent)
    finally:
        for leftover in temporary:
            leftover.unlink(missing_ok=True)
    return manifest


def bundle_remove(stem: Path) -> None:
    """Delete a bundle: the manifest first, so a half-removed bundle is never read."""
    data_path, index_path, manifest_path = bundle_paths(stem)
    for path in (manifest_path, index_path, data_path):
        path.unlink(missing_ok=True)
    if stem.parent.exists():
        _fsync_dir(stem.parent)


# -- reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _IndexEntry:
    number: int
    type: str
    id: Any
    offset: int
    length: int
    crc32: int
    meta: dict[str, Any]

    @property
    def label(self) -> str:
        return _record_label(self.number, self.type, self.id)


def _typed(raw: dict[str, Any], name: str, kind: type, *, default: Any = None) -> Any:
    """The manifest's field `name`, of type `kind` (missing: `default`, when there is one)."""
    value = raw.get(name, default)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise BundleError(f"its field {name!r} is missing or not {kind.__name__}", "manifest")
    return value


def _file_entry(raw: dict[str, Any], name: str) -> dict[str, Any]:
    files = _typed(raw, "files", dict)
    entry = files.get(name)
    if not isinstance(entry, dict):
        raise BundleError(f"its field 'files.{name}' is missing or not dict", "manifest")
    checked = {key: _typed(entry, key, kind) for key, kind in (("name", str), ("size", int),
                                                                ("sha256", str))}  # fmt: skip
    return checked


def _read_manifest(path: Path) -> Manifest:
    try:
        raw = _json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"no manifest at {path}", "manifest") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise BundleError(f"the manifest is not JSON ({error})", "manifest") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise BundleError(f"not a {FORMAT} manifest", "manifest")
    version = raw.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
        raise BundleError(
            f"format version {version!r}; this Mnemosyne reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}",
            "manifest",
        )
    if version >= 2 or "checksum" in raw:
        fields = {k: v for k, v in raw.items() if k != "checksum"}
        if version < 2 or raw.get("checksum") != manifest_checksum(fields):
            raise BundleError("its fields do not match its checksum", "manifest")
    counts = _typed(raw, "counts", dict)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        raise BundleError("its field 'counts' holds a count that is not a number", "manifest")
    return Manifest(
        tenant=_typed(raw, "tenant", str),
        scope=_typed(raw, "scope", str, default=""),
        model=_typed(raw, "model", str, default=""),
        purpose=_typed(raw, "purpose", str, default="export"),
        counts=counts,
        created_at=_typed(raw, "created_at", str, default=""),
        files={name: _file_entry(raw, name) for name in ("data", "index")},
        extra=_typed(raw, "extra", dict, default={}),
    )


def _read_index(path: Path, manifest: Manifest) -> list[_IndexEntry]:
    expected = manifest.files["index"]
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise BundleError(f"no index file at {path}", "index") from None
    entries: list[_IndexEntry] = []
    for number, line in enumerate(blob.splitlines()):
        try:
            raw = _json(line)
            entry = _IndexEntry(
                number=int(raw["n"]), type=str(raw["type"]), id=raw["id"],
                offset=int(raw["offset"]), length=int(raw["length"]), crc32=int(raw["crc32"]),
                meta=raw.get("meta") or {},
            )  # fmt: skip
        except (UnicodeDecodeError, ValueError, KeyError, TypeError):
            raise BundleError("its index entry is damaged", f"record {number}") from None
        if (
            entry.number != number
            or entry.type not in RECORD_TYPES
            or not isinstance(entry.id, int | str)
            or isinstance(entry.id, bool)
            or not isinstance(entry.meta, dict)
        ):
            raise BundleError("its index entry is damaged", f"record {number}")
        entries.append(entry)
    if len(blob) != expected["size"] or hashlib.sha256(blob).hexdigest() != expected["sha256"]:
        raise BundleError("the index file does not match the manifest's size and checksum", "index")
    counts = dict.fromkeys(RECORD_TYPES, 0)
    for entry in entries:
        counts[entry.type] += 1
    if {k: v for k, v in counts.items() if v} != {k: v for k, v in manifest.counts.items() if v}:
        raise BundleError("the index's record counts differ from the manifest's", "manifest")
    return entries


@dataclass
class BundleReader:
    """A bundle verified in full on open; `records()` then reads it again, record by record."""

    stem: Path
    manifest: Manifest
    entries: list[_IndexEntry]

    def records(self, types: Iterable[str] | None = None) -> Iterator[BundleRecord]:
        wanted = set(types) if types is not None else None
        data_path = bundle_paths(self.stem)[0]
        with data_path.open("rb") as data:
            for entry in self.entries:
                if wanted is not None and entry.type not in wanted:
                    continue
                data.seek(entry.offset)
                blob = data.read(entry.length)
                if len(blob) != entry.length or zlib.crc32(blob) != entry.crc32:
                    raise BundleError("changed since it was verified", entry.label)
                body = json.loads(zlib.decompress(blob))
                yield BundleRecord(
                    type=entry.type, id=entry.id, body=body, meta=entry.meta, number=entry.number
                )

    def ids(self, type: str) -> list[Any]:
        return [entry.id for entry in self.entries if entry.type == type]


def bundle_index_ids(path: Path | str, type: str) -> list[Any]:
    """The ids of a bundle's records of `type`, read from its manifest and index alone (checked
    against the manifest; the data file is not read). BundleError when either is damaged."""
    stem = bundle_stem(path)
    _, index_path, manifest_path = bundle_paths(stem)
    entries = _read_index(index_path, _read_manifest(manifest_path))
    return [entry.id for entry in entries if entry.type == type]


def bundle_open(
    path: Path | str, *, check: Callable[[BundleRecord], None] | None = None
) -> BundleReader:
    """Open and verify a bundle; raise BundleError naming the first bad record. `check` is
    called with every record as it is verified (it raises BundleError to refuse one)."""
    stem = bundle_stem(path)
    data_path, index_path, manifest_path = bundle_paths(stem)
    manifest = _read_manifest(manifest_path)
    entries = _read_index(index_path, manifest)
    try:
        size = data_path.stat().st_size
    except FileNotFoundError:
        raise BundleError(f"no data file at {data_path}", "data") from None
    digest = hashlib.sha256()
    with data_path.open("rb") as data:
        position = 0
        for entry in entries:
            if entry.offset != position or entry.offset + entry.length > size:
                raise BundleError(
                    f"expected at bytes {entry.offset}-{entry.offset + entry.length} of a "
                    f"data file of {size} bytes (truncated?)",
                    entry.label,
                )
            blob = data.read(entry.length)
            if zlib.crc32(blob) != entry.crc32:
                raise BundleError("its bytes fail their CRC32 checksum", entry.label)
            try:
                body = _json(zlib.decompress(blob))
            except (zlib.error, UnicodeDecodeError, ValueError):
                raise BundleError("its bytes do not decompress to JSON", entry.label) from None
            if check is not None:
                check(BundleRecord(entry.type, entry.id, body, entry.meta, entry.number))
            digest.update(blob)
            position += entry.length
    expected = manifest.files["data"]
    if size != expected["size"] or digest.hexdigest() != expected["sha256"]:
        raise BundleError("the data file does not match the manifest's size and checksum", "data")
    return BundleReader(stem=stem, manifest=manifest, entries=entries)
