"""The ladder's hook for the LiteLLM proxy (docs/LITELLM.md, "The proxy").

Keep this file next to the proxy's config.yaml, which names it in ``litellm_settings``::

    callbacks: ladder_hook.proxy_handler_instance

The proxy's virtualenv needs ``ladder_client`` (``pip install --no-deps`` of the ladder's repo,
plus httpx, msgspec, stamina and httpx-aiohttp); the hook reads ``LADDER_URL``, ``LADDER_TOKEN``
and, optionally, ``LADDER_RESOLVE_CACHE_S`` from the proxy's environment.
"""

from ladder_client.litellm_proxy import proxy_handler_instance

__all__ = ["proxy_handler_instance"]
