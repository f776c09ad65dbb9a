"""One file for HTTP: a bundle's three files (records, index, manifest) as a tar, and back.

The API and the web admin send an export as one download (`bundle_tar_stream`) and take an
import as one upload (`bundle_from_tar`); `facts.transfer` writes and reads the bundle itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tenants.errors import InvalidInput

TAR_MEMBERS = {".dat", ".idx", ".manifest.json"}


def bundle_tar_stream(stem: Path, *, cleanup: Path | None = None) -> Iterator[bytes]:
    """The bundle at `stem` as an uncompressed tar, in chunks (its records are compressed
    already); `cleanup` (a temporary folder) is removed once the last chunk went out."""
    import shutil
    import tarfile

    from facts.bundles import bundle_paths

    try:
        for path in bundle_paths(stem):
            info = tarfile.TarInfo(f"bundle{path.name[len(stem.name) :]}")
            info.size = path.stat().st_size
            info.mtime = int(path.stat().st_mtime)
            yield info.tobuf(format=tarfile.PAX_FORMAT)
            with path.open("rb") as handle:
                while chunk := handle.read(1 << 20):
                    yield chunk
            padding = -path.stat().st_size % 512
            if padding:
                yield b"\0" * padding
        yield b"\0" * 1024
    finally:
        if cleanup is not None:
            shutil.rmtree(cleanup, ignore_errors=True)


def bundle_from_tar(upload: Any, folder: Path) -> Path:
    """Unpack an uploaded tar holding one bundle into `folder`; only the three bundle files,
    nothing else, no paths. Returns the bundle's stem."""
    import tarfile

    stem = folder / "bundle"
    found = set()
    try:
        with tarfile.open(fileobj=upload, mode="r|*") as tar:
            for member in tar:
                suffix = member.name[len("bundle") :] if member.name.startswith("bundle") else ""
                if not member.isfile() or suffix not in TAR_MEMBERS or suffix in found:
                    raise InvalidInput("bundle", f"unexpected member {member.name!r} in the tar")
                source = tar.extractfile(member)
                assert source is not None  # noqa: S101 - a regular file has content
                with (folder / f"bundle{suffix}").open("wb") as target:
                    while chunk := source.read(1 << 20):
                        target.write(chunk)
                found.add(suffix)
    except tarfile.TarError as error:
        raise InvalidInput("bundle", f"not a tar of a bundle ({error})") from None
    if found != TAR_MEMBERS:
        missing = ", ".join(sorted(f"bundle{s}" for s in TAR_MEMBERS - found))
        raise InvalidInput("bundle", f"the tar lacks {missing}")
    return stem
