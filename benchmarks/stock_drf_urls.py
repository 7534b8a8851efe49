"""The stock DRF build DESIGN.md measured: ModelViewSet, ModelSerializer, CursorPagination."""

from django.urls import path
from rest_framework import pagination, serializers, viewsets

from apps.activity.models import Run


class RunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        # The contract's fields: `row` is the surrogate key, and `conversation` and `user` are
        # composite (agent, id) links whose ids are already `conversation_id` and `user_id` (as
        # related fields they rendered an Agent object: a 500, and a query per row).
        exclude = ["row", "agent", "conversation", "user"]


class RunCursorPagination(pagination.CursorPagination):
    ordering = ("-created_at", "-id")
    # DRF's own knob for the page-of-100 case (`?page_size=100`), capped like our `limit`.
    page_size_query_param = "page_size"
    max_page_size = 100


class RunViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = RunSerializer
    pagination_class = RunCursorPagination

    def get_queryset(self):
        return Run.objects.filter(agent_id="agt_bench")


urlpatterns = [path("v1/runs", RunViewSet.as_view({"get": "list"}))]
