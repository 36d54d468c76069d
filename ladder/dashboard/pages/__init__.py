"""The dashboard's view models, one module per page (``links`` holds the URLs every page builds).

Views only render what is built here. The overview and the pool preview call ``snapshot_load`` and
``resolve`` exactly as the API does, so the dashboard and the gateway never disagree. The words they
use are in ``ladder.dashboard.wording``, the connection page's chart in ``ladder.dashboard.chart``.
"""
