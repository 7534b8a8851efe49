"""Routes of this app under /v1, served in both forms by apps.api.urls."""

routes: list = []
agent_only_routes: list = []
