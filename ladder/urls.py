from django.urls import path, re_path

import ladder.dashboard.views as dashboard
from ladder import metrics
from ladder.gateway import connections, health, reports, resolve, schema

app_name = "ladder"
API_CONNECTION = "api/v1/connections/<str:connection_id>"
PAGE_CONNECTION = "connections/<str:connection_id>"

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("v1/models", resolve.models_list, name="models"),
    path("api/v1/openapi.json", schema.openapi_schema, name="openapi"),
    path("api/v1/pools/resolve", resolve.pools_resolve, name="pools-resolve"),
    path("api/v1/usage", reports.usage_report, name="usage"),
    path("api/v1/escalations", resolve.escalations_list, name="escalations"),
    path("api/v1/connections", connections.connections_list, name="connections"),
    path(API_CONNECTION, connections.connection_detail, name="connection"),
    path(f"{API_CONNECTION}/observations", reports.connection_observations, name="connection-observations"),
    path(f"{API_CONNECTION}/credential", connections.connection_credential, name="connection-credential"),
    path(f"{API_CONNECTION}/failures", reports.connection_failures, name="connection-failures"),
    re_path(r"^api/(?P<rest>.*)$", schema.not_found, name="api-not-found"),
    # The htmx dashboard (ladder.dashboard.views).
    path("", dashboard.overview, name="overview"),
    path("login/", dashboard.DashboardLoginView.as_view(), name="login"),
    path("logout/", dashboard.DashboardLogoutView.as_view(), name="logout"),
    path("pool/", dashboard.pool_preview, name="pool_preview"),
    path("escalations/", dashboard.escalations, name="escalations_page"),
    path(f"{PAGE_CONNECTION}/", dashboard.connection_detail, name="connection_page"),
    path(f"{PAGE_CONNECTION}/refresh", dashboard.connection_refresh_now, name="connection_refresh"),
    path(f"{PAGE_CONNECTION}/reserve", dashboard.connection_reserve, name="connection_reserve"),
    path(f"{PAGE_CONNECTION}/cli-file", dashboard.connection_credential, name="connection_cli_file"),
    path("alerts/", dashboard.alerts, name="alerts"),
    path("alerts/channels/<int:channel_id>/test", dashboard.alert_channel_test, name="alert_channel_test"),
    path("alerts/rules/<int:rule_id>/", dashboard.alert_rule_edit, name="alert_rule_edit"),
    path("catalog/", dashboard.catalog, name="catalog"),
    path("catalog/new", dashboard.catalog_entry_new, name="catalog_new"),
    path("catalog/<int:entry_id>/", dashboard.catalog_entry_edit, name="catalog_entry"),
]
