"""Forms of the scores pages. They only gather what was typed: every rule (configs, targets,
ranges) is the services' (apps.scores.services), as the API applies it."""

from datetime import UTC, datetime, timedelta

from django import forms

from apps.scores.models import (
    CATEGORY_MAX_LENGTH,
    NAME_MAX_LENGTH,
    DataType,
    ScoreConfig,
    Source,
    TargetType,
)


class ScoreFilterForm(forms.Form):
    name = forms.CharField(required=False, max_length=NAME_MAX_LENGTH)
    value = forms.CharField(required=False, max_length=100)
    source = forms.ChoiceField(required=False, choices=[("", "Any source"), *Source.choices])
    data_type = forms.ChoiceField(required=False, choices=[("", "Any type"), *DataType.choices])
    run_id = forms.CharField(required=False, max_length=64)
    conversation_id = forms.CharField(required=False, max_length=64)
    message_id = forms.CharField(required=False, max_length=64)
    created_after = forms.DateField(required=False, label="From")
    created_before = forms.DateField(required=False, label="To")

    def clean(self):
        data = super().clean() or {}
        for name in ("created_after", "created_before"):
            day = data.get(name)
            if day:
                moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
                data[name] = moment + timedelta(days=1) if name == "created_before" else moment
        if data.get("value") and not data.get("name"):
            raise forms.ValidationError("Filter a value with a score name.")
        return data


class ScoreAddForm(forms.Form):
    """A score from the console: a name (one of the Agent's configs, or any), and its value —
    a number, a category or yes/no, as the config says; a comment."""

    target_type = forms.ChoiceField(choices=TargetType.choices)
    target_id = forms.CharField(max_length=64)
    name = forms.CharField(max_length=NAME_MAX_LENGTH)
    value = forms.CharField(max_length=CATEGORY_MAX_LENGTH)
    comment = forms.CharField(required=False, max_length=2000, widget=forms.Textarea)

    def __init__(self, *args, configs: list[ScoreConfig] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.configs = {config.name: config for config in configs or [] if not config.archived}

    def as_item(self) -> dict:
        """The score as the API would receive it: its value typed by its config (or by its
        look when the name is free-form: true/false, a number, else a category)."""
        data = self.cleaned_data
        name, raw = data["name"].strip(), data["value"].strip()
        config = self.configs.get(name)
        kind = config.data_type if config else None
        value: float | str | bool = raw
        lowered = raw.lower()
        if kind == DataType.BOOLEAN or (kind is None and lowered in ("true", "false", "yes", "no")):
            if lowered in ("true", "false", "yes", "no"):
                value = lowered in ("true", "yes")
        elif _is_number(raw) and kind in (None, DataType.NUMERIC):
            value = float(raw)
        # Anything else stays text: a category, or a value the service refuses, naming the
        # config's rule.
        return {
            _target_field(data["target_type"]): data["target_id"],
            "name": name,
            "value": value,
            "comment": data.get("comment") or None,
        }


def _is_number(text: str) -> bool:
    try:
        number = float(text)
    except ValueError:
        return False
    return number == number and abs(number) != float("inf")


def _target_field(target_type: str) -> str:
    return {
        TargetType.RUN: "run_id",
        TargetType.RUN_STEP: "step_id",
        TargetType.CONVERSATION: "conversation_id",
        TargetType.MESSAGE: "message_id",
    }[TargetType(target_type)]


class ScoreConfigForm(forms.Form):
    name = forms.CharField(max_length=NAME_MAX_LENGTH)
    data_type = forms.ChoiceField(choices=DataType.choices)
    min_value = forms.FloatField(required=False, label="Minimum")
    max_value = forms.FloatField(required=False, label="Maximum")
    categories = forms.CharField(
        required=False, help_text="Comma-separated, for a categorical score."
    )
    description = forms.CharField(required=False, max_length=500)

    def as_data(self) -> dict:
        data = self.cleaned_data
        out: dict = {"name": data["name"], "data_type": data["data_type"]}
        if data.get("description"):
            out["description"] = data["description"]
        if data["data_type"] == DataType.NUMERIC:
            for name in ("min_value", "max_value"):
                if data.get(name) is not None:
                    out[name] = data[name]
        if data.get("categories"):
            out["categories"] = [c.strip() for c in data["categories"].split(",") if c.strip()]
        return out
