"""What both clients share, without I/O: their options, the resolution cache, the retry policy, and
how an answer or a transport failure becomes a result or a ``LadderError``. ``LadderClient`` and
``AsyncLadderClient`` add only the sending (a thread's, or an event loop's)."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from typing import Any, Protocol, TypedDict, TypeVar

import httpx
import stamina

from ladder_client.calls import Call, resolution_key
from ladder_client.errors import DROPPED, NOT_SENT, LadderError, error_from_response, transport_failure
from ladder_client.types import Candidate, Resolution

T = TypeVar("T")
C = TypeVar("C", bound="ClientCore")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_RETRIES = 2
DEFAULT_RETRY_BACKOFF_S = 0.05
CACHE_MAX_ENTRIES = 1024


class Options(TypedDict, total=False):
    """What both clients take besides the ladder's URL and token (see ``LadderClient``)."""

    timeout_s: float
    retries: int
    cache_ttl_s: float
    retry_backoff_s: float
    clock: Callable[[], float]


class Attempts(Protocol):
    """stamina's retry context: attempts for a ``for`` (a thread) or an ``async for`` (a loop)."""

    def __iter__(self) -> Iterator[stamina.Attempt]: ...

    def __aiter__(self) -> AsyncIterator[stamina.Attempt]: ...


class LastKept(OrderedDict[K, V]):
    """The entries of the last ``limit`` keys put (``keep``), oldest first."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def keep(self, key: K, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


class ResolutionCache:
    """Resolutions by (model, candidates) for ``ttl_s`` seconds; LRU-bounded; thread-safe."""

    def __init__(
        self, ttl_s: float, *, clock: Callable[[], float], max_entries: int = CACHE_MAX_ENTRIES
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._entries: LastKept[Hashable, tuple[float, Resolution]] = LastKept(max_entries)
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def get(self, key: Hashable) -> Resolution | None:
        if not self.enabled:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires_at, resolution = entry
            if self._clock() >= expires_at:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return resolution

    def put(self, key: Hashable, resolution: Resolution) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._entries.keep(key, (self._clock() + self.ttl_s, resolution))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def resendable(exc: BaseException, call: Call[Any]) -> bool:
    """Whether a failed send of ``call`` is sent again: one that never reached the ladder, whatever
    the call; for idempotent calls only, one whose connection dropped before the answer. A timeout
    is not: the ladder may still be working on it, and the caller's time is spent. An HTTP answer,
    even a 5xx, never is: the ladder answered, and the caller decides."""
    return isinstance(exc, NOT_SENT) or (call.idempotent and isinstance(exc, DROPPED))


class ClientCore:
    """The options and rules of both clients.

    Timeouts: ``timeout_s`` bounds each request (connect, read, write). Retries: only what
    ``resendable`` allows, at most ``retries`` times, after ``retry_backoff_s`` × 2^n (stamina's
    policy, without jitter). ``cache_ttl_s`` > 0 keeps each resolution that long (per model and
    candidates) for gateways that resolve on every request; a reported failure empties the cache,
    since it changes what the ladder would answer."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retries: int = DEFAULT_RETRIES,
        cache_ttl_s: float = 0.0,
        retry_backoff_s: float = DEFAULT_RETRY_BACKOFF_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, got {retries}")
        if cache_ttl_s < 0:
            raise ValueError(f"cache_ttl_s must be 0 (off) or more, got {cache_ttl_s}")
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.retry_backoff_s = retry_backoff_s
        self.cache = ResolutionCache(cache_ttl_s, clock=clock)
        self.options = Options(
            timeout_s=timeout_s,
            retries=retries,
            cache_ttl_s=cache_ttl_s,
            retry_backoff_s=retry_backoff_s,
            clock=clock,
        )
        self.http_options: dict[str, Any] = {
            "base_url": self.base_url,
            "timeout": httpx.Timeout(timeout_s),
            "headers": {
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": "ladder-client/0.1",
            },
        }
        self._token = token

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"  # never the token

    def twin(self, kind: type[C]) -> C:
        """A client of ``kind`` (``AsyncLadderClient``, say) to the same ladder, with the same token
        and options."""
        return kind(self.base_url, self._token, **self.options)

    def cached_resolution(self, model: str, candidates: Sequence[Candidate] | None) -> Resolution | None:
        """The cached answer for (model, candidates), without any I/O; None when there is none."""
        return self.cache.get(resolution_key(model, candidates))

    def _attempts(self, call: Call[Any]) -> Attempts:
        return stamina.retry_context(
            on=lambda exc: resendable(exc, call),
            attempts=self.retries + 1,
            timeout=None,
            wait_initial=self.retry_backoff_s,
            wait_max=math.inf,
            wait_jitter=0.0,
        )

    def _failure(self, exc: httpx.TransportError, call: Call[Any], attempts: int) -> LadderError:
        return transport_failure(exc, call.request, base_url=self.base_url, attempts=attempts)

    def _answer(self, response: httpx.Response, call: Call[T], attempts: int) -> T:
        """The decoded answer to ``call``, or the LadderError its response stands for."""
        if response.status_code >= 400:
            raise error_from_response(response, attempts=attempts)
        try:
            document = response.json()
        except ValueError:
            raise LadderError(
                f"the ladder answered {call.request} with something other than JSON",
                code="unexpected_response",
                status=response.status_code,
                attempts=attempts,
            ) from None
        answer = call.decode(document)
        if call.clears_cache:
            self.cache.clear()
        elif call.cache_key is not None and isinstance(answer, Resolution):
            self.cache.put(call.cache_key, answer)
        return answer
