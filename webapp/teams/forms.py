from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User

from webapp.textfields import TextField


class SignUpForm(UserCreationForm[User]):
    email = forms.EmailField(required=False)

    class Meta:
        model = User
        fields = ("username", "email")


class TeamForm(forms.Form):
    name = TextField(max_length=100)


class MemberForm(forms.Form):
    username = TextField(max_length=150)
    role = forms.ChoiceField(choices=[("member", "Member"), ("owner", "Owner")])


class TokenForm(forms.Form):
    name = TextField(max_length=100,
                     help_text="A name to tell the token by later: the machine or script "
                               "that uses it, such as ci.")
