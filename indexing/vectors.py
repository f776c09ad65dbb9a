"""Which embedding model answers recall, and how the deployment switches models without a gap.

The configured embedder (MNEMOSYNE_EMBEDDER) is registered as a `VectorModel`: serving when it is
the first, filling when another model serves. While one fills, workers embed every active fact
with it (and new facts with both models), recall keeps asking the serving model, and once no
active fact lacks a vector of the filling model it takes over; the old model's vectors and index
are deleted a little later, when no process can still be asking it.

Each model has its own partial HNSW index over its rows, cast to its dimension, so vectors of two
models are never compared. A model name known with another dimension is refused with a message
that says what to do.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from indexing.embedders import Embedder, EmbedderError, get_embedder
from indexing.models import VectorModel, VectorState

logger = logging.getLogger(__name__)

# How long a process trusts what it read of the registry; a retired model's vectors are kept
# well past that, so no process is left asking a model whose vectors are gone.
SERVING_CACHE_S = 10.0
RETIRED_GRACE = timedelta(minutes=2)
# HNSW options: m = 16, ef_construction = 64 (in mnemosyne_vector_index_create, tenants 0006).


class VectorModelMismatch(EmbedderError):
    """The configured embedder contradicts what is recorded of its model."""


@dataclass(frozen=True)
class Space:
    """A model's vectors: its name and dimension, and how to build its embedder."""

    name: str
    dimension: int
    spec: str


def index_name(model: str) -> str:
    """The name of a model's HNSW index (model names may hold any character)."""
    return "factvector_hnsw_" + hashlib.sha1(model.encode()).hexdigest()[:12]  # noqa: S324


def not_model(name: str) -> Q:
    """Facts whose newest vector is not of model `name` (or who have none). Written as two
    ranges, not `<>`, so that the index on embedding_model finds them without a scan."""
    return Q(embedding_model__lt=name) | Q(embedding_model__gt=name)


def _create_index(space: Space) -> None:
    # The runtime role owns no table: the owner's function builds the index (not CONCURRENTLY,
    # which a function cannot do; the model is new, so the index holds nothing yet).
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [index_name(space.name)])
        if cursor.fetchone():
            return
        cursor.execute(
            "SELECT mnemosyne_vector_index_create(%s, %s, %s)",
            [index_name(space.name), space.name, int(space.dimension)],
        )


def _drop_index(name: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT mnemosyne_vector_index_drop(%s)", [index_name(name)])


# -- the registry -----------------------------------------------------------------------------

_lock = threading.Lock()
_serving: tuple[float, Space | None] | None = None
_registered: set[tuple[str, int]] = set()


def vector_models_changed() -> None:
    """Forget what this process read of the registry (after a switch, in tests)."""
    global _serving
    with _lock:
        _serving = None
        _registered.clear()


def vector_model_register(embedder: Embedder, spec: str) -> VectorModel:
    """Record the configured model: serving when it is the first, filling when another serves.
    Creates its HNSW index. Raises VectorModelMismatch for a known name with another dimension.
    """
    with transaction.atomic():
        # One registration at a time, so two processes starting together agree on who serves.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('vector-models'))")
        known = VectorModel.objects.filter(name=embedder.name).first()
        if known is not None and known.dimension != embedder.dimension:
            raise VectorModelMismatch(
                f"embedding model {embedder.name!r} is recorded with {known.dimension} "
                f"dimensions, but MNEMOSYNE_EMBEDDER={spec!r} gives {embedder.dimension}: vectors "
                "of different dimensions cannot be compared. Give the new model its own name "
                "(its own model folder) so that facts are re-embedded with it."
            )
        if known is None or known.state == VectorState.RETIRED:
            serving = VectorModel.objects.filter(state=VectorState.SERVING).first()
            state = VectorState.FILLING if serving is not None else VectorState.SERVING
            if state == VectorState.FILLING:
                # A newer configuration replaces a switch that had not finished.
                VectorModel.objects.filter(state=VectorState.FILLING).exclude(
                    name=embedder.name
                ).update(state=VectorState.RETIRED, retired_at=timezone.now())
            known, _ = VectorModel.objects.update_or_create(
                name=embedder.name,
                defaults={
                    "dimension": embedder.dimension,
                    "spec": spec,
                    "state": state,
                    "serving_since": timezone.now() if state == VectorState.SERVING else None,
                    "retired_at": None,
                },
            )
            logger.info("embedding model %s registered, %s", known.name, known.state)
        elif known.spec != spec:
            VectorModel.objects.filter(pk=known.pk).update(spec=spec)
    _create_index(Space(known.name, known.dimension, spec))
    vector_models_changed()
    return known


def _configured(copy: int = 0) -> Embedder:
    """The configured embedder (MNEMOSYNE_EMBEDDER), not registered as a vector model."""
    return get_embedder(settings.MNEMOSYNE_EMBEDDER, settings.MNEMOSYNE_MODEL_DIR, copy=copy)


def configured_embedder(copy: int = 0) -> Embedder:
    """The configured embedder, registered (once per process) as a vector model; `copy`: that
    embedding stream's own (`indexing.embedders.base.resolve_streams`)."""
    embedder = _configured(copy)
    key = (embedder.name, embedder.dimension)
    if key not in _registered:
        vector_model_register(embedder, settings.MNEMOSYNE_EMBEDDER)
        with _lock:
            _registered.add(key)
    return embedder


def vector_is_configured(model: str) -> bool:
    """Whether `model` is the configured embedder's (so no switch to another is under way
    when it also serves); False when the configured embedder cannot be built."""
    try:
        return _configured().name == model
    except EmbedderError:
        return False


def serving_space() -> Space | None:
    """The model whose vectors answer recall (None before any fact was ever embedded)."""
    global _serving
    with _lock:
        if _serving is not None and time.monotonic() - _serving[0] < SERVING_CACHE_S:
            return _serving[1]
    row = VectorModel.objects.filter(state=VectorState.SERVING).first()
    space = Space(row.name, row.dimension, row.spec) if row else None
    if space is not None:
        # "None yet" is not kept: the first model may register a moment later (stored facts
        # ask this before any is embedded), and recall must see it at once.
        with _lock:
            _serving = (time.monotonic(), space)
    return space


def embedder_for(space: Space, copy: int = 0) -> Embedder:
    """The embedder of a recorded model (`copy`: that embedding stream's own); a clear error
    when it cannot be built any more or no longer gives what was recorded."""
    configured = _configured(copy)
    if configured.name == space.name:
        embedder = configured
    elif not space.spec:
        raise EmbedderError(
            f"embedding model {space.name!r} serves recall, but how to build it was not "
            "recorded: configure it again (MNEMOSYNE_EMBEDDER) until the switch is done"
        )
    else:
        embedder = get_embedder(space.spec, settings.MNEMOSYNE_MODEL_DIR, copy=copy)
    if embedder.name != space.name or embedder.dimension != space.dimension:
        raise VectorModelMismatch(
            f"MNEMOSYNE_EMBEDDER={space.spec!r} now gives {embedder.name!r} "
            f"({embedder.dimension} dimensions), but the recorded model is {space.name!r} "
            f"({space.dimension} dimensions)"
        )
    return embedder


def embedding_targets(copy: int = 0) -> list[tuple[Space, Embedder]]:
    """The models a new vector is made for: the configured one and, while another still serves,
    that one too (so a fact stored during a switch is found before the switch is done); `copy`:
    the embedding stream's own copies."""
    configured = configured_embedder(copy)
    targets = [(Space(configured.name, configured.dimension, ""), configured)]
    serving = serving_space()
    if serving is not None and serving.name != configured.name:
        try:
            targets.append((serving, embedder_for(serving, copy)))
        except EmbedderError as error:
            logger.warning("vectors of the serving model %s not made: %s", serving.name, error)
    return targets


# -- switching --------------------------------------------------------------------------------


def vector_switch_finish() -> str | None:
    """When the filling model has a vector for every active fact, it takes over. Returns its
    name when it did."""
    from tenants import cross_tenant

    filling = VectorModel.objects.filter(state=VectorState.FILLING).first()
    if filling is None:
        return None
    with transaction.atomic():
        if cross_tenant.tenants_unembedded(model=filling.name):
            return None
        now = timezone.now()
        VectorModel.objects.filter(state=VectorState.SERVING).update(
            state=VectorState.RETIRED, retired_at=now
        )
        VectorModel.objects.filter(pk=filling.pk).update(
            state=VectorState.SERVING, serving_since=now
        )
    vector_models_changed()
    logger.info("embedding model %s now serves recall", filling.name)
    return filling.name


def vector_models_cleanup(*, batch: int = 5000) -> int:
    """Delete the vectors and index of models retired long enough ago. Returns rows deleted."""
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    deleted = 0
    cutoff = timezone.now() - RETIRED_GRACE
    for model in VectorModel.objects.filter(state=VectorState.RETIRED, retired_at__lte=cutoff):
        for tenant_id in Tenant.objects.order_by("pk").values_list("pk", flat=True):
            while True:
                with tenant_scope(tenant_id), connection.cursor() as cursor:
                    cursor.execute(
                        "DELETE FROM facts_factvector WHERE id IN (SELECT id FROM "
                        "facts_factvector WHERE tenant_id = %s AND model = %s LIMIT %s)",
                        [tenant_id, model.name, batch],
                    )
                    count = cursor.rowcount
                deleted += count
                if count < batch:
                    break
        _drop_index(model.name)
        model.delete()
        logger.info("embedding model %s retired: %s vectors deleted", model.name, deleted)
    return deleted


def embedding_target_model() -> str | None:
    """The model new vectors are made with (the filling one during a switch), or None before
    any model was registered: the model a fact must have a vector of to be off the backlog."""
    rows = {m.state: m.name for m in VectorModel.objects.exclude(state=VectorState.RETIRED)}
    return rows.get(VectorState.FILLING) or rows.get(VectorState.SERVING)
