from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "apps.workspaces"
    label = "workspaces"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from apps.workspaces.models import Agent, ApiKey
        from apps.workspaces.services import api_key_cache_forget, api_key_cache_forget_for_agent

        # Cache coherence, not domain flow: any save of a key or an Agent (the admin
        # included) must reach authentication at once.
        post_save.connect(api_key_cache_forget, sender=ApiKey, dispatch_uid="apikey-cache-save")
        post_delete.connect(api_key_cache_forget, sender=ApiKey, dispatch_uid="apikey-cache-del")
        post_save.connect(
            api_key_cache_forget_for_agent, sender=Agent, dispatch_uid="agent-cache-save"
        )
        post_delete.connect(
            api_key_cache_forget_for_agent, sender=Agent, dispatch_uid="agent-cache-del"
        )
