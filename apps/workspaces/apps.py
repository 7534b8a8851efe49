from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "apps.workspaces"
    label = "workspaces"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from apps.api.credentials import credential_kind_register
        from apps.workspaces.browser_tokens import is_browser_token
        from apps.workspaces.credentials import api_key_credential, browser_token_credential
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

        # The platform (apps.api) knows no credential kind: keys and browser tokens register
        # here. A value no kind recognises is tried as an API key, whose parser names the fault.
        credential_kind_register("api_key", recognizes=None, verify=api_key_credential)
        credential_kind_register(
            "browser_token", recognizes=is_browser_token, verify=browser_token_credential
        )
