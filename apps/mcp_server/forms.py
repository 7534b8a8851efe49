"""The consent form: the toolkit's hidden OAuth fields, plus the Agent and the permissions the
member picks."""

from django import forms
from oauth2_provider.forms import AllowForm

from apps.mcp_server.oauth import GRANTABLE_SCOPES


class ConsentForm(AllowForm):
    agent_id = forms.CharField(required=False)
    granted_scopes = forms.MultipleChoiceField(
        required=False, choices=[(name, name) for name in GRANTABLE_SCOPES]
    )

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("allow"):
            if not cleaned.get("agent_id"):
                self.add_error("agent_id", "Choose the Agent this application may use.")
            if not cleaned.get("granted_scopes"):
                self.add_error("granted_scopes", "Choose at least one permission.")
        return cleaned
