from django import forms

from apps.workspaces.scopes import ALL_SCOPES, CONTRACT_SCOPES


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(max_length=120, strip=True)
    scopes = forms.MultipleChoiceField(
        choices=[(scope, f"{scope} — {text}") for scope, text in ALL_SCOPES.items()],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one permission."},
    )

    @staticmethod
    def default_scopes() -> list[str]:
        return [s for s in CONTRACT_SCOPES if s.endswith(":read")]
