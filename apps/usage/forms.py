from django import forms

from apps.common.errors import BadRequest
from apps.usage.services import credit_limit_parse


class CreditLimitForm(forms.Form):
    monthly_credit_limit = forms.CharField(required=False, max_length=40)

    def clean_monthly_credit_limit(self):
        try:
            return credit_limit_parse(self.cleaned_data["monthly_credit_limit"])
        except BadRequest as exc:
            raise forms.ValidationError(
                exc.message.removeprefix("monthly_credit_limit: ")
            ) from None
