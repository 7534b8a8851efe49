from datetime import UTC, datetime, time, timedelta

from django import forms
from django.utils import timezone

from apps.api.scopes import ALL_SCOPES, CONTRACT_SCOPES
from apps.workspaces.models import Agent, Effort, Membership

# The furthest expiry date the console accepts; past it, choose Never.
MAX_EXPIRY_DAYS = 36500

# The console's expiry choices: a lifetime in days, or a date chosen by the person.
EXPIRY_CHOICES = [
    ("never", "Never"),
    ("7", "In 7 days"),
    ("30", "In 30 days"),
    ("90", "In 90 days"),
    ("date", "On a date"),
]


class ServiceErrorForm(forms.Form):
    """A form whose service names the field of its errors (`name: give the key a name ...`)."""

    def add_service_error(self, message: str) -> None:
        """Put a service's `field: message` on its field, anything else on the form."""
        field, _, text = message.partition(": ")
        if text and field in self.fields:
            self.add_error(field, text)
        else:
            self.add_error(None, message)


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(max_length=120, strip=True)
    scopes = forms.MultipleChoiceField(
        choices=[(scope, f"{scope} — {text}") for scope, text in ALL_SCOPES.items()],
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one permission."},
    )
    expires = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="never", required=False)
    expires_on = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    @staticmethod
    def default_scopes() -> list[str]:
        return [s for s in CONTRACT_SCOPES if s.endswith(":read")]

    def clean(self) -> dict:
        data = super().clean() or {}
        data["expires_at"] = self._expires_at(data.get("expires") or "never", data)
        return data

    def _expires_at(self, choice: str, data: dict) -> datetime | None:
        now = timezone.now()
        if choice == "never":
            return None
        if choice != "date":
            return now + timedelta(days=int(choice))
        day = data.get("expires_on")
        if day is None:
            self.add_error("expires_on", "Choose the date the key stops working.")
            return None
        if day > (now + timedelta(days=MAX_EXPIRY_DAYS)).date():
            # (The day after 9999-12-31 does not exist: it was a 500.)
            self.add_error("expires_on", "Choose a date within the next 100 years, or Never.")
            return None
        # A key "expiring on" a date works through that whole day (UTC).
        expires_at = datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)
        if expires_at <= now:
            self.add_error("expires_on", "Choose today or a later date.")
            return None
        return expires_at


class AgentConfigForm(ServiceErrorForm):
    """The console's Agent configuration form. It only collects; the rules (and their error
    messages) are apps.workspaces.configuration's, the same the API applies."""

    name = forms.CharField(max_length=120)
    description = forms.CharField(required=False, max_length=1000, widget=forms.Textarea)
    instructions = forms.CharField(required=False, strip=False, widget=forms.Textarea)
    model_id = forms.CharField(required=False, max_length=128)
    effort = forms.ChoiceField(
        required=False,
        choices=[("", "Model default"), *((e, e.capitalize()) for e in Effort.values)],
    )
    knowledge_search_enabled = forms.BooleanField(required=False)
    allowed_origins = forms.CharField(required=False, widget=forms.Textarea)

    @classmethod
    def for_agent(cls, agent: Agent) -> "AgentConfigForm":
        return cls(
            initial={
                "name": agent.name,
                "description": agent.description,
                "instructions": agent.instructions,
                "model_id": agent.model_id or "",
                "effort": agent.effort or "",
                "knowledge_search_enabled": agent.knowledge_search_enabled,
                "allowed_origins": "\n".join(agent.allowed_origins),
            }
        )

    def configuration(self) -> dict:
        """The cleaned form as configuration fields: empty model/effort mean the default."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "description": data["description"],
            "instructions": data["instructions"].replace("\r\n", "\n"),
            "model_id": data["model_id"].strip() or None,
            "effort": data["effort"] or None,
            "knowledge_search_enabled": data["knowledge_search_enabled"],
            "allowed_origins": [
                line.strip() for line in data["allowed_origins"].splitlines() if line.strip()
            ],
        }


class InvitationCreateForm(ServiceErrorForm):
    """Invite by link, and by e-mail when an address is given (the service checks it)."""

    email = forms.CharField(required=False, max_length=254, strip=True)
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class AccountCreateForm(ServiceErrorForm):
    """A new account to accept an invitation with; the service validates the password."""

    name = forms.CharField(max_length=150, strip=True)
    email = forms.CharField(required=False, max_length=254, strip=True)
    password = forms.CharField(strip=False, widget=forms.PasswordInput)
    password_again = forms.CharField(strip=False, widget=forms.PasswordInput)

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("password") and data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data
