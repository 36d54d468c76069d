"""Work for the Celery worker, sent by task name: ``ladder.tasks`` imports the services, and a service
never imports it back (DESIGN §4: nothing imports in a circle).

- ``task_send`` hands one task to the broker now. ``send_task`` ignores ``CELERY_TASK_ALWAYS_EAGER``;
  under that setting the registered task runs here instead, as ``apply_async`` would run it.
- ``enqueue_once`` is "SET NX, then send when the transaction commits": a Redis key per piece of work
  holds the task id of the message that owns it, so that a second caller (or a copy of a message)
  sends nothing while the key lives.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from celery import current_app
from django.db import transaction

from ladder.selectors.hotstate import redis_client
from ladder.services.hotstate import tolerated

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Let each key go only while it still names this owner.
_RELEASE_SCRIPT = """
for _, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
"""


def task_send(
    name: str, *, args: Sequence[Any], task_id: str | None = None, countdown_s: float = 0.0
) -> bool:
    """Hand the task ``name`` to the broker now. Never raises: False (logged) when the broker refuses
    it; the caller's sweep or next request queues the work again."""
    app = current_app
    try:
        if app.conf.task_always_eager:
            if name not in app.tasks:
                app.loader.import_default_modules()  # the tasks modules, as a worker imports them
            app.tasks[name].apply(args=tuple(args), task_id=task_id)
        else:
            app.send_task(name, args=list(args), task_id=task_id, countdown=countdown_s or None, retry=False)
    except Exception as exc:  # the broker is down: never fail the caller
        logger.warning("task %s%r not queued: %s", name, tuple(args), exc)
        return False
    return True


def enqueue_once(
    name: str,
    keys: Mapping[str, T],
    *,
    ttl_s: float,
    batch: bool = False,
    countdown_s: float = 0.0,
    send_without_redis: bool = False,
) -> list[T]:
    """Send the task ``name`` for the items whose key this call takes (``keys``: each item's Redis
    key → the item), when the current transaction commits (at once outside one). Returns the items
    taken.

    A key is taken by ``SET key <task id> NX`` for ``ttl_s``. ``batch``: one message for all the
    items taken (args ``[items]``); else one message per item (args ``[item]``). A message that the
    broker refuses lets its keys go, so that the next caller or a sweep can send it again. Redis
    unavailable: nobody can tell who owns what; ``send_without_redis`` sends every item anyway (at
    least once), else nothing is sent (logged)."""
    if not keys:
        return []
    groups = [list(keys)] if batch else [[key] for key in keys]
    owners: dict[str, str] = {}
    for group in groups:
        owners |= dict.fromkeys(group, str(uuid.uuid4()))
    taken = _take(owners, ttl_s=ttl_s)
    if taken is None and not send_without_redis:
        logger.warning("%s for %d items not queued: Redis unavailable", name, len(owners))
        return []
    queued: list[T] = []
    for group in groups:
        mine = [key for key in group if taken is None or key in taken]
        if not mine:
            continue
        items = [keys[key] for key in mine]
        owner = owners[mine[0]]
        transaction.on_commit(partial(_send, name, [items] if batch else items, owner, countdown_s, mine))
        queued.extend(items)
    return queued


def _take(owners: Mapping[str, str], *, ttl_s: float) -> set[str] | None:
    """SET NX every key to its owner, in one round trip: the keys taken; None without Redis."""
    with tolerated():
        pipe = redis_client().pipeline(transaction=False)
        for key, owner in owners.items():
            pipe.set(key, owner, nx=True, px=max(1, int(ttl_s * 1000)))
        return {key for key, answer in zip(owners, pipe.execute(), strict=True) if answer}
    return None


def _send(name: str, args: list[Any], owner: str, countdown_s: float, keys: list[str]) -> None:
    if not task_send(name, args=args, task_id=owner, countdown_s=countdown_s):
        keys_release(keys, owner=owner)


def keys_release(keys: Sequence[str], *, owner: str) -> None:
    """Let these keys go, each only while it still holds ``owner``. Redis unavailable: they lapse."""
    with tolerated():
        redis_client().eval(_RELEASE_SCRIPT, len(keys), *keys, owner)
