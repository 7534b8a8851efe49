"""The stock DRF build DESIGN.md measured: ModelViewSet, ModelSerializer, CursorPagination."""

from django.urls import path
from rest_framework import pagination, serializers, viewsets

from apps.activity.models import Run


class RunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        exclude = ["agent"]


class RunCursorPagination(pagination.CursorPagination):
    ordering = ("-created_at", "-id")


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = RunSerializer
    pagination_class = RunCursorPagination

    def get_queryset(self):
        return Run.objects.filter(agent_id="agt_bench")


urlpatterns = [path("v1/runs", RunViewSet.as_view({"get": "list"}))]
