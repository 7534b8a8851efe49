from django import forms

FOREVER = "forever"
CHOICES = [("30", "30 days"), ("90", "90 days"), ("365", "365 days"), (FOREVER, "Forever")]


class RetentionForm(forms.Form):
    activity = forms.ChoiceField(choices=CHOICES, label="Keep activity")

    def activity_days(self) -> int | None:
        value = self.cleaned_data["activity"]
        return None if value == FOREVER else int(value)
