"""People named in a plan: owners, task owners and approvers."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator


class Person(BaseModel):
    """A named, reachable person; the e-mail is how sign-in and approvals recognise them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    email: str

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        if "@" not in value:
            raise ValueError(f"expected an e-mail address, got {value!r}")
        return value
