"""The /v1/knowledge operations (contract 4.2) and the search extension. Thin: parse input,
call a service or selector, render with the plain output functions."""

import html
import re

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.parsers import MultiPartParser

from apps.api.pagination import PAGE_PARAMETERS, list_operation
from apps.api.views import json_response
from apps.common.errors import BadRequest
from apps.common.keyset import page_request
from apps.knowledge import embeddings, search, selectors, services
from apps.knowledge.events import KnowledgeSearched, SearchPassage, announce_knowledge_searched
from apps.knowledge.serializers import (
    KnowledgeDocumentListOut,
    KnowledgeDocumentOut,
    KnowledgeDocumentUpdateIn,
    KnowledgeFileCreateIn,
    KnowledgeIndexingOut,
    KnowledgeScheduleIn,
    KnowledgeSearchIn,
    KnowledgeSearchResultOut,
    KnowledgeUrlCreateIn,
    document_out,
    indexing_out,
    search_out,
)
from apps.knowledge.uploads import limit_uploads
from apps.workspaces.viewsets import AgentViewSet

READ, WRITE = "knowledge:read", "knowledge:write"
ID_PARAMETER = OpenApiParameter(
    "id", OpenApiTypes.STR, OpenApiParameter.PATH, description="The document's id."
)


def _validated(serializer_class, data) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class KnowledgeViewSet(AgentViewSet):
    openapi_tags = ["Knowledge"]
    required_scopes = {
        "list": READ,
        "retrieve": READ,
        "content": READ,
        "indexing": READ,
        "search": READ,
        "create_file": WRITE,
        "create_url": WRITE,
        "partial_update": WRITE,
        "destroy": WRITE,
        "refresh": WRITE,
        "schedule": WRITE,
    }
    error_statuses = {
        "create_file": (409, 413, 415),
        "create_url": (409,),
        "retrieve": (404,),
        "partial_update": (404,),
        "destroy": (404,),
        "content": (404, 409),
        "indexing": (404,),
        "refresh": (404, 409),
        "schedule": (404,),
    }
    extension_actions = ("search", "indexing")

    @list_operation(
        summary="List knowledge documents",
        description="The Agent's documents, newest first.",
        parameters=PAGE_PARAMETERS,
        responses={200: KnowledgeDocumentListOut},
    )
    def list(self, request, agent_id: str | None = None):
        page = selectors.document_list(agent=self.agent, page=page_request(request.query_params))
        return json_response(page.envelope(document_out))

    @extend_schema(
        summary="Upload a file",
        description="Accepted formats: PDF, Word, Excel, PowerPoint, text, Markdown, HTML, CSV, "
        "JSON, recognised from the file's bytes. At most 10 MB. Extraction and indexing are "
        "queued; poll the document until its status is no longer `processing`.",
        request={"multipart/form-data": KnowledgeFileCreateIn},
        responses={201: KnowledgeDocumentOut},
    )
    def create_file(self, request, agent_id: str | None = None):
        limit_uploads(request._request)
        upload = request.FILES.get("file")
        if upload is None:
            raise BadRequest("file: a file is required (multipart field `file`).")
        name = request.data.get("name")
        if name is not None and not isinstance(name, str):
            raise BadRequest("name: must be a string.")
        document = services.document_create_from_upload(agent=self.agent, upload=upload, name=name)
        return json_response(document_out(document), status=201)

    @extend_schema(
        summary="Add a public URL",
        description="A bare host name becomes an HTTPS URL. Only public http(s) addresses are "
        "accepted. `refresh_interval_hours` defaults to 24.",
        request=KnowledgeUrlCreateIn,
        responses={201: KnowledgeDocumentOut},
    )
    def create_url(self, request, agent_id: str | None = None):
        data = _validated(KnowledgeUrlCreateIn, request.data)
        document = services.document_create_from_url(agent=self.agent, **data)
        return json_response(document_out(document), status=201)

    @extend_schema(
        summary="Get a knowledge document",
        description="With its current ingestion and refresh status.",
        parameters=[ID_PARAMETER],
        responses={200: KnowledgeDocumentOut},
    )
    def retrieve(self, request, id: str, agent_id: str | None = None):
        return json_response(document_out(selectors.document_get(agent=self.agent, document_id=id)))

    @extend_schema(
        summary="Rename, enable or disable a document",
        parameters=[ID_PARAMETER],
        request=KnowledgeDocumentUpdateIn,
        responses={200: KnowledgeDocumentOut},
    )
    def partial_update(self, request, id: str, agent_id: str | None = None):
        data = _validated(KnowledgeDocumentUpdateIn, request.data)
        document = services.document_update(agent=self.agent, document_id=id, **data)
        return json_response(document_out(document))

    @extend_schema(
        summary="Delete a document",
        description="The document, its file, extracted content and search vectors are deleted.",
        parameters=[ID_PARAMETER],
        responses={204: OpenApiResponse(description="Deleted.")},
    )
    def destroy(self, request, id: str, agent_id: str | None = None):
        services.document_delete(agent=self.agent, document_id=id)
        return HttpResponse(status=204)

    @extend_schema(
        summary="Get a document's extracted markdown",
        description="The markdown currently indexed; 409 before any content is indexed.",
        parameters=[ID_PARAMETER],
        responses={
            (200, "text/markdown"): OpenApiResponse(
                response=OpenApiTypes.STR, description="The extracted markdown."
            )
        },
    )
    def content(self, request, id: str, agent_id: str | None = None):
        version = selectors.document_content(agent=self.agent, document_id=id)
        return HttpResponse(version.markdown, content_type="text/markdown; charset=utf-8")

    @extend_schema(
        summary="Get a document's indexing progress",
        description="Extension. How many of the current version's passages are embedded "
        "(searchable by meaning; keyword search finds every passage once the document is "
        "ready), with which model, when embedding last progressed, and whether it is waiting, "
        "running, retrying after a failure, or done. Poll it after an upload or a refresh.",
        parameters=[ID_PARAMETER],
        responses={200: KnowledgeIndexingOut},
    )
    def indexing(self, request, id: str, agent_id: str | None = None):
        document = selectors.document_get(agent=self.agent, document_id=id)
        return json_response(indexing_out(document, model=embeddings.model_name()))

    @extend_schema(
        summary="Refresh a URL document",
        description="Fetches the URL again. Until the new content is indexed, content and "
        "search serve the previous version. 409 for file documents and for documents whose "
        "first ingestion is still processing.",
        parameters=[ID_PARAMETER],
        request=None,
        responses={202: KnowledgeDocumentOut},
    )
    def refresh(self, request, id: str, agent_id: str | None = None):
        document = services.document_refresh_request(agent=self.agent, document_id=id)
        return json_response(document_out(document), status=202)

    @extend_schema(
        summary="Set a URL document's refresh schedule",
        description="0 disables scheduled refreshes. File documents have no schedule (400).",
        parameters=[ID_PARAMETER],
        request=KnowledgeScheduleIn,
        responses={200: KnowledgeDocumentOut},
    )
    def schedule(self, request, id: str, agent_id: str | None = None):
        data = _validated(KnowledgeScheduleIn, request.data)
        document = services.document_schedule(agent=self.agent, document_id=id, **data)
        return json_response(document_out(document))

    @extend_schema(
        summary="Search the Agent's knowledge",
        description="Ranked passages of the Agent's enabled, ready documents, as the Agent "
        "finds them. `mode`: `hybrid` (default) fuses keyword and semantic results by "
        "reciprocal rank; `keyword` alone (BM25: any query word may match, passages with more "
        'and rarer ones first, stemmed in each passage\'s language; "quoted phrases" are '
        "required and `-word` excludes); `semantic` alone (by meaning, over the chunks embedded "
        "so far, each scored by its best window). Each hit names its document and heading path "
        "and carries its full `text` and a snippet with the matched words in `<mark>`. `score` "
        "is a calibrated relevance in [0, 1]; hits under `min_score` (default: the calibrated "
        "threshold) are left out, so an unanswerable question returns an empty list.",
        request=KnowledgeSearchIn,
        responses={200: KnowledgeSearchResultOut},
    )
    def search(self, request, agent_id: str | None = None):
        data = _validated(KnowledgeSearchIn, request.data)
        run_id = data.get("run_id") or request.headers.get("X-Run-Id")
        started_at = timezone.now()
        hits = search.search_chunks(
            agent=self.agent,
            query=data["query"],
            limit=data["limit"],
            mode=data["mode"],
            min_score=data["min_score"],
        )
        if run_id:
            announce_knowledge_searched(
                KnowledgeSearched(
                    agent=self.agent,
                    run_id=run_id,
                    query=data["query"],
                    mode=data["mode"],
                    passages=[
                        SearchPassage(
                            document_id=hit.document_id,
                            document_name=hit.document_name,
                            passage=_MARKS.sub("", html.unescape(hit.snippet)),
                            score=hit.score,
                        )
                        for hit in hits
                    ],
                    started_at=started_at,
                    ended_at=timezone.now(),
                )
            )
        return json_response(search_out(query=data["query"], hits=hits, explain=data["explain"]))


_MARKS = re.compile(r"</?mark>")


class KnowledgeFileViewSet(KnowledgeViewSet):
    """POST /knowledge/files alone: multipart only, anything else is 415."""

    parser_classes = [MultiPartParser]
