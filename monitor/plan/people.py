"""People named in a plan: owners, task owners and approvers, with the keys that prove their acts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Person(BaseModel):
    """A named, reachable person; the e-mail is how sign-in and approvals recognise them.

    ``keys`` are the person's Ed25519 public keys in OpenSSH form (``ssh-ed25519 AAAA... comment``,
    the line of an ``id_ed25519.pub``): a command-line approval signed with the matching private
    key (``--key``) is recorded as proven; one without is recorded as ``unauthenticated`` and
    never counts (``medmon.monitor.governance.identity``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    email: str
    keys: tuple[str, ...] = Field(default_factory=tuple)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        if "@" not in value:
            raise ValueError(f"expected an e-mail address, got {value!r}")
        return value

    @field_validator("keys")
    @classmethod
    def _keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        from cryptography.hazmat.primitives.serialization import load_ssh_public_key

        for i, line in enumerate(value):
            try:
                key = load_ssh_public_key(line.strip().encode("ascii"))
            except (ValueError, UnicodeError):
                raise ValueError(f"keys[{i}]: not an OpenSSH public key line ('ssh-ed25519 AAAA...')") from None
            if not isinstance(key, Ed25519PublicKey):
                raise ValueError(f"keys[{i}]: only Ed25519 keys are accepted (ssh-keygen -t ed25519)")
        return tuple(line.strip() for line in value)
