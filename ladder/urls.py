from django.urls import path

from ladder import views

app_name = "ladder"

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
]
