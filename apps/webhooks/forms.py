from django import forms

from apps.webhooks.models import EVENT_TYPES


class WebhookConfigForm(forms.Form):
    url = forms.CharField(required=False, max_length=2048, label="Endpoint URL")
    events = forms.MultipleChoiceField(
        required=False,
        choices=[(event, event) for event in EVENT_TYPES],
        widget=forms.CheckboxSelectMultiple,
    )
    enabled = forms.BooleanField(required=False)
