"""django.contrib.admin, with ladder.security.admin_site.LadderAdminSite as its default site.

A module of its own: INSTALLED_APPS imports it while apps load, before the admin site's forms can be.
"""

from django.contrib.admin.apps import AdminConfig


class LadderAdminConfig(AdminConfig):
    default_site = "ladder.security.admin_site.LadderAdminSite"
