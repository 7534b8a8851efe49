from datetime import UTC, datetime, time, timedelta

from django import forms
from django.utils import timezone

from apps.workspaces.scopes import ALL_SCOPES, CONTRACT_SCOPES

# The console's expiry choices: a lifetime in days, or a date chosen by the person.
EXPIRY_CHOICES = [
    ("never", "Never"),
    ("7", "In 7 days"),
    ("30", "In 30 days"),
    ("90", "In 90 days"),
    ("date", "On a date"),
]


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
        # A key "expiring on" a date works through that whole day (UTC).
        expires_at = datetime.combine(day + timedelta(days=1), time.min, tzinfo=UTC)
        if expires_at <= now:
            self.add_error("expires_on", "Choose today or a later date.")
            return None
        return expires_at
